"""Issue 42: text for people is bounded. A string of 50 MB in one of ackdeck's own files (a
wake record's line, a run's status, a room named in the presence log: a hand edit, a bug, a
restored backup) went whole into `wakes list`, `ps` and `agents` (50 MB of table). Each line
of text for people is now cut at `text.LINE_CHARS` characters with a marker saying how much
more there was, in the one place text is made safe for a person (core/base/text.py `safe`),
so every door (CLI text, dashboard cells, notices) is bounded alike. `--json` keeps the exact
value (docs/concepts/decisions.md). Lines handed over as work are never cut: a read on a
terminal, a claimed task.

Real files where ackdeck keeps them, real `ackdeck` processes."""

from __future__ import annotations

import json
import os
import pty
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.base.text import LINE_CHARS, safe
from ackdeck.core.cli._output import for_terminal
from tests.helpers.cli import ackdeck
from tests.helpers.runs import wait_status

HUGE = 50_000_000  # characters


def test_safe_cuts_each_line_over_the_limit_with_a_marker_and_keeps_the_rest() -> None:
    long = "x" * (LINE_CHARS + 10)
    cut = safe(long)
    assert cut.endswith(" …[74 more characters not shown]") and len(cut) <= LINE_CHARS
    assert cut.startswith("x" * (LINE_CHARS - 74)) and safe(cut) == cut  # never cut twice
    # Several lines ackdeck composed: each is cut alone, the short ones stay whole.
    got = safe(f"head\n{long}\ntail", keep="\t\n").split("\n")
    assert got == ["head", cut, "tail"]
    # The limit counts the producer's characters; its escapes are still shown escaped.
    assert safe("\x1b" * (LINE_CHARS + 1)).startswith("\\x1b" * 3)
    assert len(safe("\x1b" * (LINE_CHARS + 1))) < 5 * LINE_CHARS
    assert safe(long, limit=None) == long  # a line a program reads whole


def _cut(text: str) -> None:
    assert len(text) < 5 * LINE_CHARS * 4, len(text)
    assert "more characters not shown]" in text


@pytest.fixture
def run_p(phome: Path, cli_env: dict[str, str]) -> Path:
    out = ackdeck(cli_env, "run", "p", "--session", "s", "--monitor", "ERR", "--", "echo", "ERR")
    assert out.returncode == 0, out.stderr
    wait_status(phome, "p")
    return phome


def test_a_50_mb_line_in_a_wake_record_is_cut_in_wakes_list_and_exact_in_json(
    run_p: Path, cli_env: dict[str, str]
) -> None:
    record = locations.wake_record(run_p, "s", "p")
    doc = json.loads(record.read_text())
    doc["lines"][0]["text"] = "ERR " + "x" * HUGE
    record.write_text(json.dumps(doc))
    out = ackdeck(cli_env, "wakes", "list", "--session", "s")
    assert out.returncode == 0, out.stderr
    _cut(out.stdout)
    out = ackdeck(cli_env, "wakes", "list", "--session", "s", "--json")
    assert json.loads(out.stdout)["wakes"][0]["lines"][0] == "ERR " + "x" * HUGE


def test_a_50_mb_status_in_a_runs_meta_is_cut_in_ps_and_exact_in_json(
    run_p: Path, cli_env: dict[str, str]
) -> None:
    meta = next((run_p / "procs" / "p").glob("*/meta.json"))
    doc = json.loads(meta.read_text())
    meta.write_text(json.dumps({**doc, "status": "S" * HUGE}))
    out = ackdeck(cli_env, "ps")
    assert out.returncode == 0, out.stderr
    _cut(out.stdout)
    out = ackdeck(cli_env, "ps", "--json")
    assert json.loads(out.stdout)["processes"][0]["status"] == "S" * HUGE


def test_a_huge_room_name_in_the_presence_log_is_cut_in_agents_and_exact_in_json(
    tmp_path: Path, home: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    room.write_text("x\n")
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "a1").returncode == 0
    log = next((home / "agents").glob("a1*"))
    name = "/tmp/" + "R" * 500_000  # the presence log keeps records under 1 MiB
    with open(log, "a") as f:
        f.write(json.dumps({"t": 9e9, "ev": "read", "room": name, "lines": 1}) + "\n")
    out = ackdeck(cli_env, "agents")
    assert out.returncode == 0, out.stderr
    _cut(out.stdout)
    out = ackdeck(cli_env, "agents", "--json")
    assert name in out.stdout


def test_a_long_line_read_on_a_terminal_is_never_cut() -> None:
    master, slave = pty.openpty()
    try:
        line = b"y" * (LINE_CHARS * 3) + b"\n"
        assert for_terminal(line, slave) == line
    finally:
        os.close(master)
        os.close(slave)


async def test_the_dashboard_shows_a_huge_hostile_run_status_escaped_and_cut(
    run_p: Path, cli_env: dict[str, str]
) -> None:
    """A run's status reaches the Processes panel as a styled Text, not a string: its escapes
    went to the terminal raw, and at 50 MB the dashboard did not settle in a minute (every
    width measured it whole)."""
    from ackdeck.tui.app import make_app
    from ackdeck.tui.testing import fixed_clock, quiet_config, screen_text, settle
    from tests.test_text_for_people import ESCAPED, HOSTILE, obeyed

    meta = next((run_p / "procs" / "p").glob("*/meta.json"))
    doc = json.loads(meta.read_text())
    meta.write_text(json.dumps({**doc, "status": HOSTILE + "S" * HUGE}))
    app = make_app(quiet_config([], home=run_p), clock=fixed_clock)
    async with app.run_test(size=(200, 36)) as pilot:
        await settle(pilot)
        await pilot.press("2")  # the Processes panel
        await settle(pilot)
        text = screen_text(app)
        assert obeyed(text) == [] and ESCAPED[:12] in text, text
