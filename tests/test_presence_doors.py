"""Presence through the real doors: the installed hooks given Claude Code's stdin JSON
(including the events `claude -p` never emits: permission prompts, idle prompts), the MCP
server's connect, client and disconnect, reads and acks; `ackdeck agents --json` and the MCP
tool `agents_list` show one result."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from ackdeck.core import hook_install, hooks
from ackdeck.core.presence import history
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.hooks import execs, installed_hooks
from tests.helpers.mcp import call, connect
from tests.helpers.paths import REPO


def kinds_of(home: Path, session: str = "agent") -> list[str]:
    """The kinds of the session's presence events, oldest first (its log and the marks its
    gated hooks left: the SessionEnd hook's end is a mark)."""
    return [e["ev"] for e in history.events(home, session)]


BASE = {
    "session_id": "3f1c0d6e-5b7a-4c1e-9a0b-2d4e6f8a1b3c",
    "transcript_path": "/home/me/.claude/projects/x/3f1c0d6e.jsonl",
    "cwd": str(REPO),
}
# What Claude Code writes on each hook's stdin (hook_event_name and the event's own fields).
PAYLOADS: dict[str, dict[str, Any]] = {
    "SessionStart": {"hook_event_name": "SessionStart", "source": "startup"},
    "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "prompt": "handle the inbox"},
    "Stop": {"hook_event_name": "Stop", "stop_hook_active": False},
    "Notification": {
        "hook_event_name": "Notification",
        "message": "Claude needs your permission to use Bash",
        "notification_type": "permission_prompt",
    },
    "SessionEnd": {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"},
}


def agents(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    out = ackdeck(env, "agents", "--json")
    assert out.returncode == 0, out.stderr
    return {a["session"]: a for a in json.loads(out.stdout)["agents"]}


def install(tmp_path: Path, env: dict[str, str], room: Path) -> dict[str, list[dict[str, Any]]]:
    data = installed_hooks(env, tmp_path / "proj" / ".claude" / "settings.json", room)
    commands = {}
    for event in hooks.EVENTS:
        (group,) = data["hooks"][event]
        commands[event] = group["hooks"]
    return commands


def run_hook(
    event_hooks: list[dict[str, Any]], env: dict[str, str], event: str, **extra: Any
) -> int:
    """Run an event's hooks as Claude Code does: each command through a shell, its JSON on
    stdin (an async one, which Claude Code runs in the background, here to its end too); the
    exit code of the one Claude Code waits for."""
    payload = {**BASE, **PAYLOADS[event], **extra}
    code = 0
    for hook in event_hooks:
        done = subprocess.run(
            hook["command"],
            shell=True,
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=60,
            input=json.dumps(payload),
        )
        assert done.returncode in (0, 2), done.stderr
        if hook.get("async"):
            assert done.stdout == "" and done.stderr == ""  # presence only: nothing for the agent
        else:
            code = done.returncode
    return code


def test_install_adds_the_notification_and_session_end_hooks(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    hook_install.install(
        settings, hook_install.hook_commands(ACKDECK, "agent", [tmp_path / "r.txt"])
    )
    data = json.loads(settings.read_text())
    notify = data["hooks"]["Notification"][0]["hooks"][0]["command"]
    end = data["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    assert execs(notify)[-4:] == ["hooks", "notify", "--session", "agent"]
    assert execs(end)[-4:] == ["hooks", "end", "--session", "agent"]
    # Installing again changes nothing; a user's own Notification hook is kept beside ours.
    again = hook_install.install(
        settings, hook_install.hook_commands(ACKDECK, "agent", [tmp_path / "r.txt"])
    )
    assert not again.changed
    data["hooks"]["Notification"].insert(
        0, {"hooks": [{"type": "command", "command": "notify-send hi"}]}
    )
    settings.write_text(json.dumps(data))
    hook_install.install(
        settings, hook_install.hook_commands(ACKDECK, "agent", [tmp_path / "r.txt"])
    )
    kept = json.loads(settings.read_text())["hooks"]["Notification"]
    assert [g["hooks"][0]["command"] for g in kept] == ["notify-send hi", notify]


def test_a_turn_through_the_installed_hooks_shows_each_state(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"[t1] [ops] owner: deploy\n")
    commands = install(tmp_path, cli_env, room)
    run_hook(commands["SessionStart"], cli_env, "SessionStart")
    row = agents(cli_env)["agent"]
    assert row["state"] == "idle" and "SessionStart" in row["evidence"]
    assert row["rooms"] == [str(room)] and row["unread"] == 1 and row["host"]
    run_hook(commands["UserPromptSubmit"], cli_env, "UserPromptSubmit")
    row = agents(cli_env)["agent"]
    assert row["state"] == "working" and "UserPromptSubmit" in row["evidence"]
    # A permission prompt (never emitted by `claude -p`): waiting for the owner.
    run_hook(commands["Notification"], cli_env, "Notification")
    row = agents(cli_env)["agent"]
    assert row["state"] == "waiting" and "permission_prompt" in row["evidence"]
    assert "needs your permission to use Bash" in row["evidence"]
    # Granted: the agent reads and acks its room, then its turn ends.
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "agent").returncode == 0
    row = agents(cli_env)["agent"]
    assert row["state"] == "working" and row["last_read"] is not None and row["unread"] == 0
    assert ackdeck(cli_env, "room", "ack", str(room), "--session", "agent").returncode == 0
    assert run_hook(commands["Stop"], cli_env, "Stop") == 0
    row = agents(cli_env)["agent"]
    assert row["state"] == "idle" and "Stop" in row["evidence"] and row["last_ack"] is not None
    # An idle prompt an older Claude Code sends without notification_type: waiting again.
    run_hook(
        commands["Notification"],
        cli_env,
        "Notification",
        message="Claude is waiting for your input",
        notification_type=None,
    )
    assert agents(cli_env)["agent"]["state"] == "waiting"
    run_hook(commands["SessionEnd"], cli_env, "SessionEnd")
    row = agents(cli_env)["agent"]
    assert row["state"] == "gone" and "prompt_input_exit" in row["evidence"]
    # The timeline has every event, in order.
    kinds = kinds_of(Path(cli_env["ACKDECK_HOME"]))
    assert kinds == ["start", "prompt", "notify", "read", "ack", "stop", "notify", "end"]


def test_a_read_records_how_long_its_first_line_waited(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    assert ackdeck(cli_env, "room", "push", str(room), "one").returncode == 0
    time.sleep(0.3)  # the age to measure, not a synchronisation
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "agent").returncode == 0
    home = Path(cli_env["ACKDECK_HOME"])
    (read,) = history.events(home, "agent")
    assert read["ev"] == "read" and read["lines"] == 1 and read["room"] == str(room)
    assert 0.3 <= read["waited"] < 60
    # An empty read is no evidence of anything: nothing recorded (the ack is).
    assert ackdeck(cli_env, "room", "ack", str(room), "--session", "agent").returncode == 0
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "agent").returncode == 0
    kinds = kinds_of(home)
    assert kinds == ["read", "ack"]


async def test_the_mcp_server_is_the_sessions_presence_while_connected(
    home: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\ntwo\n")
    cli_env = {**cli_env, "ACKDECK_HOME": str(home)}
    async with connect(home, [room]) as client:
        listed = await call(client, "agents_list")
        assert not listed.is_error
        by_mcp = listed.structured_content
        by_cli = json.loads(ackdeck(cli_env, "agents", "--json").stdout)
        (row,) = by_mcp["agents"]
        assert row["session"] == "agent" and row["state"] == "idle"
        assert row["client"] == "mcp" and row["rooms"] == [str(room)] and row["unread"] == 2
        # One result type: the CLI gives the same JSON (the clocks aside).
        for doc in (by_mcp, by_cli):
            doc["checked_at"] = None
            for a in doc["agents"]:
                assert a["oldest_unread_age"] is not None
                a["oldest_unread_age"] = None
        assert by_cli == by_mcp
        got = await call(client, "room_list_new")
        assert got.structured_content["count"] == 2
        row = agents(cli_env)["agent"]
        assert row["state"] == "working" and row["last_read"] is not None
    # The client left: the server recorded its disconnect as it exited.
    row = agents(cli_env)["agent"]
    assert row["state"] == "gone" and "disconnected" in row["evidence"]
    kinds = kinds_of(home)
    assert kinds == ["connect", "client", "read", "disconnect"]


def test_a_long_session_name_widens_the_column_instead_of_shifting_its_row(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """`ackdeck agents` as text: a session named like a Claude Code teammate (longer than the
    usual 20 columns) keeps every row's STATE, SINCE and UNREAD under their headings."""
    room = tmp_path / "inbox.txt"
    assert ackdeck(cli_env, "room", "push", str(room), "one").returncode == 0
    long = "session-8f0477f7-team-lead-reviewer"
    for session in ("agent", long):
        out = ackdeck(cli_env, "room", "read", str(room), "--session", session)
        assert out.returncode == 0, out.stderr
    out = ackdeck(cli_env, "agents")
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert sorted(r.split()[0] for r in rows) == sorted(["agent", long])
    state_at = header.index("STATE")
    for row in rows:
        assert row[state_at - 1] == " " and row[state_at:].split()[0] == "working", (header, row)
