"""Which room a tool argument names (pure): only configured rooms are ever reachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackdeck.core.agents.mcp_server import DoorConfig, resolve_room
from ackdeck.core.errors import InvalidInput, InvalidName


def test_default_path_and_basename_resolve(tmp_path: Path) -> None:
    cfg = DoorConfig.make("agent", [tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "a.txt"])
    assert cfg.rooms == (tmp_path / "a.txt", tmp_path / "b.txt")  # duplicates collapse
    assert resolve_room(cfg.rooms, None) == tmp_path / "a.txt"
    assert resolve_room(cfg.rooms, "") == tmp_path / "a.txt"
    assert resolve_room(cfg.rooms, "b.txt") == tmp_path / "b.txt"
    assert resolve_room(cfg.rooms, str(tmp_path / "x" / ".." / "b.txt")) == tmp_path / "b.txt"


@pytest.mark.parametrize("name", ["c.txt", "../a.txt", "/etc/passwd", "a.txt/", "a.txt\0"])
def test_anything_else_is_rejected(tmp_path: Path, name: str) -> None:
    rooms = DoorConfig.make("agent", [tmp_path / "a.txt"]).rooms
    with pytest.raises(InvalidInput):
        resolve_room(rooms, name)


def test_ambiguous_basename_asks_for_the_full_path(tmp_path: Path) -> None:
    one, two = tmp_path / "x" / "inbox.txt", tmp_path / "y" / "inbox.txt"
    rooms = DoorConfig.make("agent", [one, two]).rooms
    with pytest.raises(InvalidInput, match="ambiguous") as info:
        resolve_room(rooms, "inbox.txt")
    assert str(one) in str(info.value) and str(two) in str(info.value)
    assert resolve_room(rooms, str(two)) == two


def test_configuration_is_validated(tmp_path: Path) -> None:
    with pytest.raises(InvalidName):
        DoorConfig.make("a/b", [tmp_path / "a.txt"])
    with pytest.raises(InvalidInput, match="at least one room"):
        DoorConfig.make("agent", [])
    with pytest.raises(InvalidInput, match="directory"):
        DoorConfig.make("agent", [tmp_path])
