"""Team mailboxes follow what Claude Code 2.1.328 does on disk (issue 44, item 6): a team is
`session-ID8`, belongs to a session's process (`leadProcess`), and stays behind when that
process is killed; an entry read is not unread for anyone (its agent is the mailbox's only
reader)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import ackdeck
from tests.helpers.paths import REPO

TEAM = "session-0518698d"


def proc_start(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[19]


def entry(text: str, n: int, *, read: bool = False) -> dict:
    return {
        "from": "worker",
        "text": text,
        "summary": text[:20],
        "timestamp": f"2026-12-07T03:0{n}:00.000Z",
        "color": "blue",
        "msgV": 1,
        "msg_id": f"00000000-0000-4000-8000-00000000000{n}",
        "type": "message",
        "read": read,
    }


@pytest.fixture
def lead():
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


@pytest.fixture
def claude(tmp_path: Path, lead: subprocess.Popen) -> Path:
    """A team as 2.1.328 lays it out for a session: named after it, its lead's process (a
    real one here) in config.json, an in-process teammate and one in tmux."""
    base = tmp_path / "claude" / "teams" / TEAM
    (base / "inboxes").mkdir(parents=True)
    config = {
        "name": TEAM,
        "leadAgentId": f"team-lead@{TEAM}",
        "leadSessionId": "0518698d-ba0a-4434-8411-6ae8526f9d0f",
        "leadProcess": {
            "pid": lead.pid,
            "pidSpace": "vm#pid:[1]",
            "claimedAt": 1,
            "procStart": proc_start(lead.pid),
        },
        "members": [
            {
                "agentId": f"team-lead@{TEAM}",
                "name": "team-lead",
                "agentType": "team-lead",
                "tmuxPaneId": "leader",
                "backendType": "in-process",
            },
            {
                "agentId": f"worker@{TEAM}",
                "name": "worker",
                "agentType": "general-purpose",
                "tmuxPaneId": "in-process",
                "backendType": "in-process",
            },
            {
                "agentId": f"tester@{TEAM}",
                "name": "tester",
                "agentType": "general-purpose",
                "tmuxPaneId": "%4",
                "backendType": "tmux",
            },
        ],
    }
    (base / "config.json").write_text(json.dumps(config, indent=2))
    # Two waiting, and one an older Claude Code marked read (2.1.328 removes it instead).
    inbox = [entry("one", 1), entry("two", 2), entry("old", 3, read=True)]
    (base / "inboxes" / "team-lead.json").write_text(json.dumps(inbox, indent=2))
    return tmp_path / "claude"


@pytest.fixture
def env(tmp_path: Path, claude: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "ACKDECK_HOME": str(tmp_path / "a"),
        "CLAUDE_CONFIG_DIR": str(claude),
        "PYTHONPATH": str(REPO / "src"),
    }


def test_an_entry_already_read_is_not_unread_at_room_level(env: dict[str, str]) -> None:
    """`room status` on a mailbox: 3 entries, 2 unread by its only reader, so 2 unread for
    the room and for any asker (it said 3: a session without a receipt counted every entry)."""
    spec = f"claude-team://{TEAM}/team-lead"
    for extra in ([], ["--session", "owner"]):
        out = ackdeck(env, "room", "status", spec, *extra, "--json")
        assert out.returncode == 0, out.stderr
        room = json.loads(out.stdout)["rooms"][0]
        assert room["pending"] == 2  # a read entry waits for nothing (issue 42, class 6)
        assert room["sessions"]["team-lead"]["unread"] == 2
        assert room["unread"] == 2


def test_a_killed_sessions_team_stays_behind_and_its_members_are_gone(
    env: dict[str, str], claude: Path, lead: subprocess.Popen
) -> None:
    def states() -> dict[str, str]:
        out = ackdeck(env, "agents", "--json")
        assert out.returncode == 0, out.stderr
        return {a["session"]: a["state"] for a in json.loads(out.stdout)["agents"]}

    before = states()
    assert before[f"{TEAM}/team-lead"] != "gone" and before[f"{TEAM}/worker"] != "gone"
    os.kill(lead.pid, signal.SIGKILL)
    lead.wait()
    assert (claude / "teams" / TEAM / "config.json").exists()  # left behind, stale
    after = states()
    # In-process teammates lived in the lead's process; the tmux one is a process of its own.
    assert after[f"{TEAM}/team-lead"] == "gone" and after[f"{TEAM}/worker"] == "gone"
    assert after[f"{TEAM}/tester"] != "gone"
    text = ackdeck(env, "agents").stdout
    assert f"its lead's process (pid {lead.pid}) no longer runs" in text
    team = ackdeck(env, "team", "list").stdout
    assert f"{TEAM}/worker  gone  pane in-process" in team
    assert f"{TEAM}/tester  unknown  pane %4" in team  # its own process: not judged
