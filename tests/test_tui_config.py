"""Dashboard config (TOML, checked by DashConfig) and the `ackdeck tui` / `demo` command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ackdeck.core.errors import InvalidInput
from ackdeck.tui.config import DashConfig, load_config
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.paths import REPO


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "dash.toml"
    p.write_text(text)
    return p


def test_config_resolves_rooms_relative_to_the_file(tmp_path: Path) -> None:
    cfg = load_config(
        write(tmp_path, 'session = "me"\nrooms = ["inbox.txt", "/abs/alerts.txt"]\nhome = "h"\n')
    )
    assert cfg.session == "me"
    assert cfg.room_paths() == [tmp_path / "inbox.txt", Path("/abs/alerts.txt")]
    assert cfg.home == tmp_path / "h"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rooms = [", "invalid TOML"),
        ('colour = "blue"', "colour: not a setting (settings: session, home, rooms,"),
        ('session = "../etc"', "session:"),
        ("tick_seconds = -1", "tick_seconds:"),
        ('rooms = "inbox.txt"', "rooms: must be a list of paths or redis:// URLs"),
        ("rooms = [3]", "rooms.0: must be a path or a redis:// URL"),
        ('rooms = ["redis://"]', "rooms.0:"),
        ("room_dirs = [true]", "room_dirs.0: must be a path"),
        ("home = 3", "home: must be a path"),
        ('watch = "yes"', "watch: must be true or false"),
        (
            'tick_seconds = "1"',
            "tick_seconds: must be a number of seconds, 0 (off) or from 0.05 to 3600",
        ),
        ("session = 7", "session: must be a string"),
        ("theme = 1", "theme: must be a string"),
    ],
)
def test_bad_config_is_one_clear_line(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as err:
        load_config(write(tmp_path, text))
    message = str(err.value)
    assert expected in message
    assert "\n" not in message
    assert str(tmp_path / "dash.toml") in message


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="file not found"):
        load_config(tmp_path / "nope.toml")


def test_overrides_add_rooms_and_replace_session(tmp_path: Path) -> None:
    cfg = DashConfig(rooms=[tmp_path / "a.txt"], session="owner")
    out = cfg.with_overrides(rooms=[tmp_path / "b.txt", tmp_path / "a.txt"], session="boss")
    assert out.room_paths() == [tmp_path / "a.txt", tmp_path / "b.txt"]
    assert out.session == "boss"


def test_cli_bad_config_exits_with_one_line(tmp_path: Path, cli_env: dict[str, str]) -> None:
    bad = write(tmp_path, "rooms = [")
    out = ackdeck(cli_env, "tui", "--config", str(bad), input="")
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith("ackdeck: error: config ") and "invalid TOML" in out.stderr


def test_cli_bad_session_exits_with_one_line(cli_env: dict[str, str]) -> None:
    out = ackdeck(cli_env, "tui", "--session", "a/b", input="")
    assert out.returncode == 1
    assert "invalid session name" in out.stderr and out.stderr.count("\n") == 1


def test_importing_the_cli_does_not_import_textual() -> None:
    code = (
        "import sys, ackdeck.core.cli._parsers; ackdeck.core.cli._parsers.build_parser(); "
        "print('textual' in sys.modules)"
    )
    out = subprocess.run(
        [*ACKDECK[:1], "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert out.stdout.strip() == "False", out.stderr


def test_the_dashboard_starts_without_pydantic() -> None:
    # Importing pydantic and building a model cost ~60 ms of the dashboard's first paint.
    code = "import sys, ackdeck.tui.app, ackdeck.tui.cli; print('pydantic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_config_built_in_code_is_checked_too(tmp_path: Path) -> None:
    cfg = DashConfig(rooms=[str(tmp_path / "a.txt"), "redis://localhost/r"], tick_seconds=2)
    assert cfg.rooms == [tmp_path / "a.txt", "redis://localhost/r"]
    assert cfg.tick_seconds == 2.0
    with pytest.raises(ValueError, match="session: "):
        DashConfig(session="../x")
