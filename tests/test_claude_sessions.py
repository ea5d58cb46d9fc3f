"""Claude Code sessions are agents without any setup (issue 44, item 3): each record of its
registry (`$CLAUDE_CONFIG_DIR/sessions/PID.json`) is a row of `ackdeck agents`, live only while
its pid runs AND is the process that wrote it (`procStart`).

The records are written in the shape Claude Code 2.1.328 writes (observed offline: see
core/clients/claude_code/sessions.py), for real processes of this test, so liveness is judged
against the real process table; the last test runs a real interactive `claude` in tmux.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.helpers.cli import ackdeck
from tests.helpers.paths import REPO
from tests.helpers.wait import eventually


def proc_start(pid: int) -> str:
    """The process's start time as Claude Code records it: field 22 of /proc/PID/stat (read
    here on its own, not through ackdeck's reader)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[19]


@pytest.fixture
def claude_dir(tmp_path: Path) -> Path:
    d = tmp_path / "claude"
    (d / "sessions").mkdir(parents=True)
    return d


@pytest.fixture
def env(tmp_path: Path, claude_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "ACKDECK_HOME": str(tmp_path / "ackdeck"),
        "CLAUDE_CONFIG_DIR": str(claude_dir),
        "PYTHONPATH": str(REPO / "src"),
    }


@pytest.fixture
def sleeper():
    """A real process standing in for a Claude Code session's (its pid and start time are
    what the registry records); killed by pid at the end."""
    proc = subprocess.Popen(["sleep", "600"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def write_record(
    claude_dir: Path,
    pid: int,
    *,
    status: str = "idle",
    start: str | None = None,
    session_id: str | None = None,
    name: str = "proj-90",
) -> str:
    """A registry record as Claude Code 2.1.328 writes it; returns its session id."""
    sid = session_id or str(uuid.uuid4())
    doc = {
        "pid": pid,
        "sessionId": sid,
        "cwd": "/w/proj",
        "startedAt": 1796613665030,
        "procStart": start if start is not None else proc_start(pid),
        "version": "2.1.328",
        "peerProtocol": 1,
        "kind": "interactive",
        "entrypoint": "cli",
        "tmux": "0:@0.%7",
        "messagingSocketPath": f"/tmp/cc-socks/{pid}.sock",
        "name": name,
        "nameSource": "derived",
        "status": status,
        "updatedAt": 1796613668638,
        "statusUpdatedAt": 1796613668638,
    }
    (claude_dir / "sessions" / f"{pid}.json").write_text(json.dumps(doc))
    return sid


def agents(env: dict[str, str]) -> dict:
    out = ackdeck(env, "agents", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def rows(env: dict[str, str]) -> dict[str, dict]:
    return {a["session"]: a for a in agents(env)["agents"]}


def test_a_registry_left_by_a_killed_session_is_gone_not_live(
    env: dict[str, str], claude_dir: Path, sleeper: subprocess.Popen
) -> None:
    sid = write_record(claude_dir, sleeper.pid, status="busy")
    short = f"session-{sid[:8]}"
    row = rows(env)[short]
    assert row["origin"] == "claude-code" and row["state"] == "working"
    assert row["pid"] == sleeper.pid and row["pane"] == "%7" and row["name"] == "proj-90"
    assert row["claude_session"] == sid and row["version"] == "2.1.328"
    text = ackdeck(env, "agents")
    assert f"'proj-90' pid {sleeper.pid} pane %7: Claude Code's registry says busy" in text.stdout
    os.kill(sleeper.pid, signal.SIGKILL)
    sleeper.wait()
    row = rows(env)[short]
    assert row["state"] == "gone"
    assert "no longer runs" in row["evidence"]
    assert (claude_dir / "sessions" / f"{sleeper.pid}.json").exists()  # looking removes nothing


def test_a_reused_pid_is_not_the_session(
    env: dict[str, str], claude_dir: Path, sleeper: subprocess.Popen
) -> None:
    """The pid runs, but another process holds it now (its start time differs from the
    record's): the session is gone."""
    real = proc_start(sleeper.pid)
    sid = write_record(claude_dir, sleeper.pid, status="busy", start=str(int(real) - 100))
    row = rows(env)[f"session-{sid[:8]}"]
    assert row["state"] == "gone"
    assert "is another process now" in row["evidence"]


def test_damaged_huge_and_nested_registry_files_are_one_line_each_never_fatal(
    env: dict[str, str], claude_dir: Path, sleeper: subprocess.Popen
) -> None:
    sessions = claude_dir / "sessions"
    sid = write_record(claude_dir, sleeper.pid, status="waiting")
    (sessions / "101.json").write_bytes(b'{"sessionId": "abc", "status": ')  # torn
    (sessions / "102.json").write_bytes(b'{"sessionId": "' + b"x" * (300 << 10) + b'"}')
    (sessions / "103.json").write_bytes(b"[" * 200_000 + b"]" * 200_000)  # Python's limit
    nested = '{"sessionId": "n", "a": ' + '{"a": ' * 100 + "1" + "}" * 100 + "}"
    (sessions / "104.json").write_text(nested)  # parses, but no registry is that deep
    (sessions / "105.json").write_bytes(b"\xff\xfe")
    os.mkfifo(sessions / "106.json")  # opening it must not wait for a writer
    (sessions / "107.json").symlink_to(sessions / f"{sleeper.pid}.json")
    (sessions / f"{sleeper.pid}.abcdef.key").write_text('{"peerToken": "t"}')  # not a session
    out = ackdeck(env, "agents")
    assert out.returncode == 0, out.stderr
    notes = [line for line in out.stdout.splitlines() if line.startswith("note: ")]
    assert [n.split(":")[1].strip().rsplit("/", 1)[-1] for n in notes] == [
        f"{n}.json" for n in range(101, 108)
    ]
    assert "Traceback" not in out.stderr
    listed = agents(env)
    assert len(listed["problems"]) == 7
    assert {a["session"] for a in listed["agents"]} == {f"session-{sid[:8]}"}
    assert listed["agents"][0]["state"] == "waiting"


def test_hooks_and_registry_disagreeing_show_both_evidences(
    env: dict[str, str], claude_dir: Path, sleeper: subprocess.Popen
) -> None:
    """ackdeck's hooks saw a turn start (working); Claude Code's registry says idle: each row
    says what the other source says."""
    sid = write_record(claude_dir, sleeper.pid, status="idle")
    hook = ackdeck(
        env,
        "hooks",
        "prompt",
        "--session",
        "lead",
        input=json.dumps({"session_id": sid, "hook_event_name": "UserPromptSubmit"}),
    )
    assert hook.returncode == 0, hook.stderr
    listed = rows(env)
    mine, theirs = listed["lead"], listed[f"session-{sid[:8]}"]
    assert mine["state"] == "working" and theirs["state"] == "idle"
    assert mine["claude_session"] == sid
    assert mine["disagrees"].startswith(f"Claude Code's registry (session-{sid[:8]}, pid ")
    assert theirs["disagrees"].startswith("ackdeck's hooks (session lead) say working")
    text = ackdeck(env, "agents").stdout
    assert "; but Claude Code's registry" in text and "; but ackdeck's hooks" in text
    # Once they agree, nothing more is said.
    write_record(claude_dir, sleeper.pid, status="busy", session_id=sid)
    listed = rows(env)
    assert listed["lead"]["disagrees"] is None
    assert listed[f"session-{sid[:8]}"]["disagrees"] is None


async def test_the_agents_panel_shows_a_session_and_its_death(
    tmp_path: Path, claude_dir: Path, sleeper: subprocess.Popen, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard's Agents panel lists the session with its pane and name, and shows it
    gone once its process died (the periodic listing: a kill -9 writes no file)."""
    from ackdeck.tui.app import make_app
    from ackdeck.tui.testing import quiet_config, screen_text, settle
    from ackdeck.tui.widgets.tables import AgentsTable

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))
    sid = write_record(claude_dir, sleeper.pid, status="busy")
    (claude_dir / "sessions" / "101.json").write_bytes(b'{"sessionId": ')  # torn: one notice
    home = tmp_path / "ackdeck"
    home.mkdir()
    app = make_app(quiet_config([], home=home, claude_teams=True))
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        table = app.main.query_one(AgentsTable)
        assert f"session-{sid[:8]}" in table._keys
        text = screen_text(app)
        assert "working" in text and f"'proj-90' pid {sleeper.pid} pane %7" in text
        told = [n.message for n in app._notifications]
        assert ["101.json: not complete JSON" in m for m in told] == [True]
        os.kill(sleeper.pid, signal.SIGKILL)
        sleeper.wait()
        app.main._list_agents()
        await settle(pilot)
        assert "1 gone" in str(table.border_title)
        # A problem already told is not told again (a notice may have expired meanwhile).
        assert sum("101.json" in n.message for n in app._notifications) <= 1


def test_a_real_claude_code_session_is_an_agent_and_gone_after_kill_9(tmp_path: Path) -> None:
    """A real interactive `claude` (2.1.328) in tmux, no ackdeck hook or server: `ackdeck
    agents` lists it from its registry with its pane and status; after kill -9 its record
    stays behind and the row says gone."""
    from tests.helpers.claude_tmux import claude_in_tmux
    from tests.helpers.model_stub import ModelStub, Say

    with (
        ModelStub([Say("hello")] * 20) as stub,
        claude_in_tmux(tmp_path, stub.url, "say hello") as cc,
    ):
        env = {
            **os.environ,
            "HOME": str(tmp_path / "home"),
            "ACKDECK_HOME": str(tmp_path / "ackdeck"),
            "CLAUDE_CONFIG_DIR": str(cc.claude),
            "PYTHONPATH": str(REPO / "src"),
        }

        def listed_live() -> dict | None:
            found = [a for a in agents(env)["agents"] if a["origin"] == "claude-code"]
            return found[0] if found and found[0]["state"] != "gone" else None

        row = eventually(listed_live, what="the session in `ackdeck agents`")
        assert row["pane"] == cc.pane_id()
        assert row["session"].startswith("session-") and row["version"]
        assert row["state"] in ("idle", "working", "waiting")
        record = cc.claude / "sessions" / f"{row['pid']}.json"
        assert json.loads(record.read_text())["sessionId"] == row["claude_session"]
        os.kill(row["pid"], signal.SIGKILL)

        def gone() -> dict | None:
            now = rows(env).get(row["session"])
            return now if now is not None and now["state"] == "gone" else None

        after = eventually(gone, what="the killed session shown as gone")
        assert "no longer runs" in after["evidence"] and record.exists()
