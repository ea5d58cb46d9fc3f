"""Issue 42, round 4's classes rerun on what ackdeck reads of Claude Code's files for `ackdeck
tasks`, `ackdeck agents` and the team rooms (issues 32 and 44): a team's config.json, a
teammate's .meta.json and a transcript are files anyone with the user's home can put there.
A FIFO in their place must not hang a command (it hung `tasks` and `agents` on the open), and a
session id read from a file is a name, never a path out of the project directory.

Real files in Claude Code's shapes (tests/test_claude_tasks.py writes them), real `ackdeck`
processes, a throwaway CLAUDE_CONFIG_DIR."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import ackdeck
from tests.test_claude_tasks import LIST, SID, task, transcript, write_task, write_team

# A hang is what this file pins: each command gets this long before it counts as one.
HANG = 30.0


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    d = tmp_path / "claude"
    d.mkdir()
    return d


@pytest.fixture
def env(tmp_path: Path, claude: Path) -> dict[str, str]:
    from tests.helpers.paths import PATHS

    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "ACKDECK_HOME": str(tmp_path / "a"),
        "CLAUDE_CONFIG_DIR": str(claude),
        "PYTHONPATH": PATHS,
    }


@pytest.fixture
def lead():
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    try:
        out = ackdeck(env, *args, timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`ackdeck {' '.join(args)}` hung on a FIFO")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out


def test_a_fifo_as_a_teams_config_hangs_neither_tasks_nor_agents(
    env: dict[str, str], claude: Path, lead: subprocess.Popen
) -> None:
    write_team(claude, lead.pid)
    write_task(claude, task(1, "build", owner="worker", status="in_progress"))
    config = claude / "teams" / LIST / "config.json"
    config.unlink()
    os.mkfifo(config)
    got = json.loads(run(env, "tasks", "--json").stdout)
    assert [t["id"] for lst in got["lists"] for t in lst["tasks"]] == ["1"]
    run(env, "agents")
    run(env, "agents", "--json")


@pytest.mark.parametrize("fifo", ["meta", "transcript"])
def test_a_fifo_as_a_teammates_meta_or_transcript_does_not_hang_tasks(
    env: dict[str, str], claude: Path, lead: subprocess.Popen, fifo: str
) -> None:
    write_team(claude, lead.pid)
    write_task(claude, task(1, "build", owner="worker", status="in_progress"))
    sub = claude / "projects" / "-w-proj" / SID / "subagents"
    transcript(sub.parent.parent / f"{SID}.jsonl", [])
    transcript(sub / "agent-aworker-0f.jsonl", [{"taskId": "1", "status": "in_progress"}])
    (sub / "agent-aworker-0f.meta.json").write_text(json.dumps({"teamName": LIST, "name": "w"}))
    target = sub / ("agent-aworker-0f.meta.json" if fifo == "meta" else "agent-aworker-0f.jsonl")
    target.unlink()
    os.mkfifo(target)
    got = json.loads(run(env, "tasks", "--json").stdout)
    assert [t["id"] for lst in got["lists"] for t in lst["tasks"]] == ["1"]


def test_a_session_id_from_a_teams_config_never_names_a_file_outside_the_project(
    env: dict[str, str], claude: Path, lead: subprocess.Popen
) -> None:
    """A config's leadSessionId `../../evil` made `tasks` read `CLAUDE_CONFIG_DIR/evil.jsonl`
    as the lead's transcript (here: two agents holding task 1, which nobody's own transcript
    says)."""
    write_team(claude, lead.pid)
    write_task(claude, task(1, "build", owner="tester", status="in_progress"))
    (claude / "projects" / "-w-proj").mkdir(parents=True)
    config = claude / "teams" / LIST / "config.json"
    doc = json.loads(config.read_text())
    config.write_text(json.dumps({**doc, "leadSessionId": "../../evil"}))
    transcript(claude / "evil.jsonl", [{"taskId": "1", "owner": "worker"}])
    got = json.loads(run(env, "tasks", "--json").stdout)
    row = next(t for lst in got["lists"] for t in lst["tasks"] if t["id"] == "1")
    assert row["workers"] == [] and row["flag"] is None, row
