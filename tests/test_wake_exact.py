"""Issue 9: no missed or mislabelled wake, driven through the real doors with real processes.

Each test starts real commands under real supervisors and reads through the real CLI (a real
`| head` closing the pipe early) or the MCP door. Synchronisation is on files and states, never
on a fixed sleep.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from core import procs, wakes
from core.mcp_server import MAX_REPLY_TEXT, AgentDoor, DoorConfig
from tests.conftest import ACKDECK
from tests.test_procs_support import PY, drain_lines, wait_status

ERRORS_AT = (60_000, 70_000, 80_000, 90_000, 99_999)


def _big(phome: Path, name: str = "big", session: str = "s") -> procs.RunInfo:
    """100,000 numbered lines, ERROR on five of them near the end; waits for the exit."""
    code = (
        "import sys\n"
        f"bad = set({list(ERRORS_AT)!r})\n"
        "w = sys.stdout.write\n"
        "for i in range(100_000):\n"
        "    w(f'ERROR line {i}\\n' if i in bad else f'line {i}\\n')\n"
    )
    procs.start(
        phome, name, [PY, "-c", code], session=session,
        monitors=[procs.MonitorSpec("ERROR", cooldown_ms=0)],
    )
    return wait_status(phome, name)


def _shell(env: dict[str, str], script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60
    )


def _numbers(lines: list[str]) -> list[int]:
    return [int(x.rsplit(" ", 1)[1]) for x in lines]


# ----- 1. shown means delivered ---------------------------------------------------------------
def test_output_into_head_marks_as_shown_only_what_the_pipe_took(
    phome: Path, cli_env: dict[str, str]
) -> None:
    _big(phome)
    ack = " ".join(ACKDECK)
    out = _shell(cli_env, f"{ack} output big --session s | head -2")
    assert out.stdout.splitlines() == ["line 0", "line 1"]
    # Every ERROR line lies far beyond what the closed pipe took: none was shown, all wake.
    assert sorted(drain_lines(phome, "s")) == sorted(f"ERROR line {i}" for i in ERRORS_AT)
    # And the next read resumes right after the last line the pipe accepted, up to the end.
    res = subprocess.run(
        [*ACKDECK, "output", "big", "--session", "s", "--json"],
        env=cli_env, capture_output=True, text=True, timeout=60,
    )
    lines = json.loads(res.stdout)["lines"]
    nums = _numbers(lines)
    assert nums == list(range(nums[0], 100_000)) and 2 <= nums[0] < 100_000


def test_json_output_cut_by_head_shows_nothing(phome: Path, cli_env: dict[str, str]) -> None:
    _big(phome)
    ack = " ".join(ACKDECK)
    out = _shell(cli_env, f"{ack} output big --session s --json | head -c 100")
    assert len(out.stdout) == 100
    assert sorted(drain_lines(phome, "s")) == sorted(f"ERROR line {i}" for i in ERRORS_AT)
    # Nothing was consumed: the whole output is still there for the next read.
    res = subprocess.run(
        [*ACKDECK, "output", "big", "--session", "s", "--json"],
        env=cli_env, capture_output=True, text=True, timeout=60,
    )
    assert _numbers(json.loads(res.stdout)["lines"]) == list(range(100_000))


def test_mcp_reply_is_bounded_and_shows_only_the_lines_it_carries(phome: Path) -> None:
    _big(phome)
    door = AgentDoor(DoorConfig.make("s", [phome / "inbox"], home=str(phome)))
    first = door.process_output("big")
    got = first.data["lines"]
    assert first.data["more"] and 0 < len(got) < 100_000
    assert sum(len(x) + 1 for x in got) <= MAX_REPLY_TEXT
    assert "more line(s) waiting" in first.text
    # None of the ERROR lines fit into the first reply: all of them still wake.
    res = wakes.drain(phome, "s", settle_timeout=2.0)
    assert sorted(x.text for d in res.delivered for x in d.lines) == sorted(
        f"ERROR line {i}" for i in ERRORS_AT
    )
    # The next call continues exactly where the reply stopped.
    second = door.process_output("big")
    assert _numbers(second.data["lines"])[0] == len(got)
