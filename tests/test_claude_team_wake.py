"""A monitor wakes an idle teammate through real Claude Code (2.1.328, offline, in tmux; issue
44 item 5): the lead spawns an in-process teammate, the teammate answers and goes idle, then
`ackdeck run --session claude-team://TEAM/worker --monitor ERR` matches. Claude Code's own idle
loop hands the wake to the teammate: its model's next request carries it as a
`<teammate-message teammate_id="ackdeck">`, once, and the entry leaves the mailbox."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.helpers.cli import ackdeck_json
from tests.helpers.paths import PATHS
from tests.helpers.wait import eventually

WAIT = 120.0  # a real client on two shared cores: only a hang reaches this


def _blocks(body: dict) -> list[str]:
    """Every text block of a request, in order (what the model read)."""
    out = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [b.get("text", "") for b in content if b.get("type") == "text"]
    return out


def test_a_monitor_match_wakes_an_idle_in_process_teammate_once(tmp_path: Path) -> None:
    from tests.helpers.claude_tmux import claude_in_tmux
    from tests.helpers.model_stub import LEAD, Call, Say, TeamStub

    spawn = {
        "description": "worker",
        "prompt": "wait for wakes",
        "name": "worker",
        "subagent_type": "general-purpose",
    }
    scripts = {
        LEAD: [Call("Agent", spawn), Say("lead idle")],
        "worker": [Say("ready"), Say("got the wake")],
    }
    with TeamStub(scripts) as stub, claude_in_tmux(tmp_path, stub.url, "start a worker") as cc:
        configs = eventually(
            lambda: list((cc.claude / "teams").glob("session-*/config.json")),
            timeout=WAIT,
            what="the team Claude Code made",
        )
        team = configs[0].parent.name
        # The teammate answered and went idle: its idle notice reached the lead, whose model
        # was asked again (its third turn).
        eventually(
            lambda: stub.played.get(LEAD, 0) >= 3 and stub.played.get("worker", 0) == 1,
            timeout=WAIT,
            what="the teammate idle",
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")},
            "ACKDECK_HOME": str(tmp_path / "ackdeck"),
            "CLAUDE_CONFIG_DIR": str(cc.claude),
            "PYTHONPATH": PATHS,
        }
        spec = f"claude-team://{team}/worker"
        ackdeck_json(
            env, "run", "job", "--session", spec, "--monitor", "ERR", "--cooldown-ms", "50",
            "--", "sh", "-c", "echo ok; echo ERR boom",
        )  # fmt: skip
        eventually(
            lambda: stub.played.get("worker", 0) >= 2, timeout=WAIT, what="the teammate woken"
        )
        woken = stub.turns_of("worker")[1]
        wakes = [b for b in _blocks(woken) if 'teammate_id="ackdeck"' in b]
        assert len(wakes) == 1, _blocks(woken)
        (wake,) = wakes
        assert wake.startswith('<teammate-message teammate_id="ackdeck"')
        assert "\n  ERR boom\n" in wake and "\n  ok\n" not in wake  # the matched line only
        assert 'summary="ackdeck wake: job: 1 matched line' in wake
        # Delivered, so Claude Code removed it; nothing waits in ackdeck either.
        inbox = cc.claude / "teams" / team / "inboxes" / "worker.json"
        eventually(
            lambda: json.loads(inbox.read_bytes()) == [], timeout=WAIT, what="the entry removed"
        )
        listed = ackdeck_json(env, "wakes", "list", "--session", f"claude-team.{team}.worker")
        assert listed["pending"] == 0
        # Its model answered, and no later request carried the wake as a new message.
        eventually(lambda: "got the wake" in cc.screen(), timeout=WAIT, what="its answer shown")
        later = [t for t in stub.turns_of("worker")[2:] if _blocks(t)[-1:] == [wake]]
        assert later == []
        assert stub.errors == []
