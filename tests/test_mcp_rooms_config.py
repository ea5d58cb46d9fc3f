"""Which room a tool argument names (pure): only configured rooms are ever reachable. The MCP
server's configuration parses the rooms once; the service's `Deck.room` resolves a name."""

from __future__ import annotations

from pathlib import Path

import pytest

from ackdeck.core.errors import InvalidInput, InvalidName
from ackdeck.core.mcp.server import DoorConfig


def _paths(cfg: DoorConfig) -> list[Path]:
    return [ref.path for ref in cfg.rooms]  # type: ignore[attr-defined]  # file rooms here


def test_default_path_and_basename_resolve(tmp_path: Path) -> None:
    cfg = DoorConfig.make("agent", [tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "a.txt"])
    assert _paths(cfg) == [tmp_path / "a.txt", tmp_path / "b.txt"]  # duplicates collapse
    deck = cfg.deck()
    assert deck.room(None).path == tmp_path / "a.txt"  # type: ignore[attr-defined]
    assert deck.room("").path == tmp_path / "a.txt"  # type: ignore[attr-defined]
    assert deck.room("b.txt").path == tmp_path / "b.txt"  # type: ignore[attr-defined]
    other = str(tmp_path / "x" / ".." / "b.txt")
    assert deck.room(other).path == tmp_path / "b.txt"  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["c.txt", "../a.txt", "/etc/passwd", "a.txt/", "a.txt\0"])
def test_anything_else_is_rejected(tmp_path: Path, name: str) -> None:
    deck = DoorConfig.make("agent", [tmp_path / "a.txt"]).deck()
    with pytest.raises(InvalidInput):
        deck.room(name)


def test_ambiguous_basename_asks_for_the_full_path(tmp_path: Path) -> None:
    one, two = tmp_path / "x" / "inbox.txt", tmp_path / "y" / "inbox.txt"
    deck = DoorConfig.make("agent", [one, two]).deck()
    with pytest.raises(InvalidInput, match="ambiguous") as info:
        deck.room("inbox.txt")
    assert str(one) in str(info.value) and str(two) in str(info.value)
    assert deck.room(str(two)).path == two  # type: ignore[attr-defined]


def test_configuration_is_validated(tmp_path: Path) -> None:
    with pytest.raises(InvalidName):
        DoorConfig.make("a/b", [tmp_path / "a.txt"])
    with pytest.raises(InvalidInput, match="at least one room"):
        DoorConfig.make("agent", [])
    with pytest.raises(InvalidInput, match="directory"):
        DoorConfig.make("agent", [tmp_path])
