"""Presence inside a real agent loop (issue 32): Claude Code (`claude -p`) with ackdeck's hooks
installed (SessionStart, UserPromptSubmit, Stop, Notification, SessionEnd) and ackdeck as its
MCP server, driven offline by a scripted model (tests/helpers/model_stub.py).

- A turn shows `working`: looked at while the model is being asked for its next step (the
  stub's `before`), from the events the real hooks and server recorded.
- Its end shows `idle`: the session's own events up to the Stop hook's decide `idle`; then
  `claude -p` exits and its SessionEnd hook (or the server's disconnect) makes it `gone`.
- A killed client (kill -9 mid-turn: no Stop, no SessionEnd) is `gone` within GONE_BOUND_S:
  its MCP server sees its stdin close and records the disconnect as it exits.

The events `claude -p` never emits (permission prompts, idle prompts) are tested with the
hooks' own stdin JSON in tests/test_presence_doors.py.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from ackdeck.core.presence import history
from ackdeck.core.presence.model import decide, fold
from ackdeck.core.service.agents import list_agents
from tests.helpers import agent_clients as clients
from tests.helpers.agent_clients import Setup
from tests.helpers.model_stub import Call, ModelStub, Say
from tests.helpers.wait import eventually

PROMPT = "Handle the notifications waiting in your ackdeck inbox, then stop."
# How soon a client killed with kill -9 is `gone` (the docs state it): its server's stdin
# closes at once and the server exits within a few seconds; the bound leaves room for two
# busy cores.
GONE_BOUND_S = 30.0
LOADING = Call("ToolSearch", {"query": "select:mcp__ackdeck__room_list_new,mcp__ackdeck__room_ack"})


def state_of(s: Setup) -> tuple[str, str]:
    row = list_agents(s.home).find(s.session)
    assert row is not None, "the session has no presence"
    return row.state, row.evidence


def test_a_turn_is_working_its_end_idle_and_the_exit_gone(tmp_path: Path) -> None:
    clients.need_client("claude")
    s = Setup(tmp_path).make()
    s.room.write_text("[ops] bot: deploy done\n")
    seen: dict[str, tuple[str, str]] = {}

    def mid_turn() -> None:  # the model is being asked for its next step: the turn goes on
        seen["mid"] = state_of(s)

    read = Call("mcp__ackdeck__room_list_new", {})
    ack = Call("mcp__ackdeck__room_ack", {}, before=mid_turn)
    with ModelStub([LOADING, read, ack, Say("done")]) as stub:
        run = clients.claude(s, stub.url, PROMPT)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    assert stub.errors == []
    state, evidence = seen["mid"]
    assert state == "working", evidence
    events = history.events(s.home, s.session)
    kinds = [e["ev"] for e in events]
    # The real client's sequence: its session starts, the prompt, the MCP server's
    # connection and client, the model's read and ack, the Stop hook, the end.
    for kind in ("start", "prompt", "connect", "client", "read", "ack", "stop"):
        assert kind in kinds, kinds
    assert kinds.index("prompt") < kinds.index("read") < kinds.index("ack") < kinds.index("stop")
    client = next(e for e in events if e["ev"] == "client")
    assert client["client"] == "claude-code", client
    # Right after the Stop hook (before the exit), the session was idle.
    upto = kinds.index("stop") + 1
    facts = fold(s.session, events[:upto])
    at_stop = decide(facts, events[upto - 1]["t"] + 0.1)
    assert at_stop.state == "idle" and "Stop hook" in at_stop.evidence
    # `claude -p` exited: its SessionEnd hook and its server's disconnect say gone.
    assert "end" in kinds or "disconnect" in kinds, kinds
    state, evidence = state_of(s)
    assert state == "gone", evidence


def test_the_async_session_end_hook_still_records_the_end_after_claude_p_exits(
    tmp_path: Path,
) -> None:
    """Issue 43: SessionEnd is installed `"async": true` (Claude Code does not wait for it), and
    `claude -p` exits right after starting it: the hook must still run to its end and record
    the session's end (Claude Code starts async hooks detached from itself)."""
    clients.need_client("claude")
    s = Setup(tmp_path).make()
    with ModelStub([Say("done")]) as stub:
        run = clients.claude(s, stub.url, "Say done.")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    settings = json.loads((s.workdir / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"]["SessionEnd"]
    assert group["hooks"][0]["async"] is True
    eventually(
        lambda: "end" in [e["ev"] for e in history.events(s.home, s.session)],
        timeout=GONE_BOUND_S,
        what="the SessionEnd hook's `end` event",
        every=0.05,
    )


def test_a_client_killed_mid_turn_is_gone_within_the_bound(tmp_path: Path) -> None:
    clients.need_client("claude")
    s = Setup(tmp_path).make()
    s.room.write_text("[ops] bot: deploy done\n")
    killed: dict[str, float] = {}

    def kill_the_client() -> None:
        """Mid-turn: the client that started our MCP server (its parent) is killed -9."""
        facts = history.load(s.home, s.session)
        (key,) = facts.servers
        server = int(key.rsplit(":", 1)[1])
        with open(f"/proc/{server}/stat") as f:
            parent = int(f.read().rsplit(")", 1)[1].split()[1])
        assert state_of(s)[0] == "working"
        killed["server"], killed["client"] = server, parent
        os.kill(parent, signal.SIGKILL)
        killed["at"] = time.monotonic()

    read = Call("mcp__ackdeck__room_list_new", {})
    with ModelStub([LOADING, read, Say("never sent", before=kill_the_client)]) as stub:
        run = clients.claude(s, stub.url, PROMPT)
        assert run.returncode == -signal.SIGKILL, (run.stdout[-2000:], run.stderr[-2000:])
    assert stub.errors == []
    try:
        state = eventually(
            lambda: (st := state_of(s))[0] == "gone" and st,
            timeout=killed["at"] + GONE_BOUND_S - time.monotonic(),
            what=f"the state gone within {GONE_BOUND_S}s of the kill",
            every=0.1,
        )
        took = time.monotonic() - killed["at"]
        print(f"gone {took:.2f}s after kill -9: {state[1]}")
        kinds = [e["ev"] for e in history.events(s.home, s.session)]
        assert "stop" not in kinds and "end" not in kinds  # no hook saw it end
    finally:
        try:
            os.kill(killed["server"], signal.SIGKILL)  # ours, if it outlived its client
        except ProcessLookupError:
            pass
