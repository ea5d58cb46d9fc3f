"""Each message's fate between Claude Code's agents (issue 44, items 1, 2, 7 and 8).

The real-client tests run interactive `claude` (2.1.328) in tmux, offline, against a scripted
model that plays one script per agent (tests/helpers/model_stub.py `TeamStub`, routed by the
`x-claude-code-agent-id` header only a teammate's requests carry). The fixture tests write
transcripts in the shape those runs recorded, for what a real client cannot be made to do on
demand (a huge history, a torn record).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from ackdeck.core.clients.claude_code import messages as cm
from ackdeck.core.service import message_fates as mf
from tests.helpers.cli import ackdeck
from tests.helpers.wait import eventually

REPO = Path(__file__).resolve().parent.parent
CLIENT_WAIT = 120.0  # a real client's turns on a loaded machine: only a hang reaches this


def env_for(root: Path, claude: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(root / "home"),
        "ACKDECK_HOME": str(root / "ackdeck"),
        "CLAUDE_CONFIG_DIR": str(claude),
        "PYTHONPATH": str(REPO / "src"),
    }


def messages(env: dict[str, str], *args: str) -> dict[str, Any]:
    out = ackdeck(env, "messages", "--json", *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def by_text(env: dict[str, str]) -> dict[str, dict]:
    return {m["text"]: m for m in messages(env)["messages"]}


def lead_steps(second: str | None = None):  # type: ignore[no-untyped-def]
    """The lead: load SendMessage, spawn `worker`, send it MSG-ONE; when the user types
    `again`, send `second`; anything else (a teammate's idle notice) is answered in words."""
    from tests.helpers.model_stub import Call, Say, last_user_text

    first = [
        Call("ToolSearch", {"query": "select:SendMessage", "max_results": 5}),
        Call(
            "Agent",
            {
                "description": "helper",
                "prompt": "You are worker. Wait for messages.",
                "name": "worker",
                "subagent_type": "general-purpose",
            },
        ),
        Call("SendMessage", {"to": "worker", "summary": "first", "message": "MSG-ONE"}),
    ]
    sent_second = []

    def step(i: int, body: dict) -> Any:
        if i < len(first):
            return first[i]
        if second and "again" in last_user_text(body) and not sent_second:
            sent_second.append(1)
            return Call("SendMessage", {"to": "worker", "summary": "second", "message": second})
        return Say(f"lead {i}")

    return step


# ----- the pure parts ------------------------------------------------------------------------
def _rec(kind: str, content: Any, at: str, mid: str | None = None) -> bytes:
    msg: dict = {"role": kind, "content": content}
    if mid:
        msg["id"] = mid
    return json.dumps({"type": kind, "timestamp": at, "message": msg}).encode() + b"\n"


def _carry(sender: str, text: str, at: str) -> bytes:
    body = f'<teammate-message teammate_id="{sender}" summary="s">\n{text}\n</teammate-message>'
    return _rec("user", body, at)


def test_a_message_in_a_request_without_an_answer_is_not_delivered() -> None:
    """Claude Code writes the request's user record before the model answers: in the
    transcript alone is not delivered; the answer after it is."""
    s = cm.Scanned.empty(1)
    data = _carry("team-lead", "HELLO", "2026-12-07T01:00:00.000Z")
    s = cm.feed(s, data, 0)
    (c,) = s.carried
    assert c.answered_at is None and c.sender == "team-lead" and c.text == "HELLO"
    more = _rec("assistant", [{"type": "text", "text": "ok"}], "2026-12-07T01:00:01.000Z", "m1")
    s = cm.feed(s, more, len(data))
    assert s.carried[0].answered_at == "2026-12-07T01:00:01.000Z" and s.carried[0].turn == 1
    sent = cm.Sent("t1", "worker", "s", "HELLO", "2026-12-07T00:59:59.000Z", 0, 1, "id1", True)
    gone = mf.decide(sent, [c], in_inbox=False, recipient="gone", sent_age=99)
    assert gone.fate == "lost"
    live = mf.decide(sent, [c], in_inbox=False, recipient="live", sent_age=99)
    assert live.fate == "waiting" and "running" in live.why
    assert mf.decide(sent, s.carried, in_inbox=False, recipient="gone", sent_age=9).fate == (
        "delivered"
    )


def test_a_send_whose_sender_died_mid_call_is_lost_not_sending_for_ever() -> None:
    """A SendMessage recorded without its result: sending while its session runs; once the
    session is gone and no request of the recipient has it, lost."""
    sent = cm.Sent("t1", "worker", None, "HELLO", "2026-12-07T01:00:00.000Z", 0, 1)
    alive = mf.decide(sent, [], in_inbox=None, recipient="live", sent_age=5, sender="live")
    assert alive.fate == "sending"
    dead = mf.decide(sent, [], in_inbox=None, recipient="gone", sent_age=500, sender="gone")
    assert dead.fate == "lost" and "never returned" in dead.why


def test_a_torn_last_line_is_read_again_not_skipped() -> None:
    """A record half written when looked at is left for the next look, whole."""
    line = _carry("team-lead", "HELLO", "2026-12-07T01:00:00.000Z")
    s = cm.feed(cm.Scanned.empty(1), line[:20], 0)
    assert s.offset == 0 and s.carried == []
    s = cm.feed(s, line, 0)
    assert s.offset == len(line) and len(s.carried) == 1


def test_one_text_sent_twice_is_two_messages_and_a_third_carry_is_a_duplicate() -> None:
    at = [f"2026-12-07T01:00:0{i}.000Z" for i in range(6)]
    sends = [cm.Sent(f"t{i}", "w", None, "X", at[i * 2], 0, 1, f"m{i}", True) for i in range(2)]
    carried = [
        cm.Carried("team", "team-lead", None, "X", at[1], 0, 1, at[1], 1),
        cm.Carried("team", "team-lead", None, "X", at[3], 0, 1, at[3], 2),
        cm.Carried("team", "team-lead", None, "X", at[4], 0, 1, at[4], 3),
    ]
    first, second = mf.carries_of(sends, carried, "team-lead")
    assert len(first) == 1 and len(second) == 2
    d = mf.decide(sends[1], second, in_inbox=False, recipient="live", sent_age=1)
    assert d.fate == "duplicated" and "2 completed turns" in d.why


# ----- transcripts in the shape 2.1.328 recorded ----------------------------------------------
SID = "3047c9c5-2c21-411d-a7de-20e7e71ff1db"


def _line(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def send_records(tool_id: str, to: str, text: str, msg_id: str, at: str, mid: str) -> bytes:
    """A SendMessage call and its result, as the sender's transcript holds them."""
    call = {"type": "tool_use", "id": tool_id, "name": "SendMessage",
            "input": {"to": to, "summary": text.lower(), "message": text}}  # fmt: skip
    result = {"success": True, "message": f"Message sent to {to}'s inbox", "msg_id": msg_id}
    return _line(
        {
            "type": "assistant",
            "timestamp": at,
            "message": {"id": mid, "role": "assistant", "content": [call]},
        }  # fmt: skip
    ) + _line(
        {
            "type": "user",
            "timestamp": at,
            "message": {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": tool_id,
                        "type": "tool_result",
                        "content": [{"type": "text", "text": json.dumps(result)}],
                    }
                ],
            },
        }  # fmt: skip
    )


def carry_records(sender: str, text: str, at: str, answer: str | None) -> bytes:
    body = (
        f'<teammate-message teammate_id="{sender}" summary="{text.lower()}">\n{text}\n'
        "</teammate-message>"
    )
    out = _line({"type": "user", "timestamp": at, "message": {"role": "user", "content": body}})
    out += _line({"type": "api-request", "timestamp": at})
    if answer is not None:
        out += _line(
            {
                "type": "assistant",
                "timestamp": answer,
                "message": {
                    "id": f"msg_{answer}",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "ok"}],
                },
            }  # fmt: skip
        )
    return out


def write_team_session(claude: Path, sid: str = SID, *, pid: int = 999_999) -> Path:
    """A lead that sent MSG-A (answered) and MSG-B (carried, never answered) to `worker`,
    its process (pid) gone: MSG-A delivered, MSG-B lost."""
    project = claude / "projects" / "-w-proj"
    sub = project / sid / "subagents"
    sub.mkdir(parents=True)
    (project / f"{sid}.jsonl").write_bytes(
        send_records("t1", "worker", "MSG-A", "id-a", "2026-12-07T05:00:00.000Z", "m1")
        + send_records("t2", "worker", "MSG-B", "id-b", "2026-12-07T05:00:10.000Z", "m2")
    )
    (sub / "agent-aworker-0f.jsonl").write_bytes(
        carry_records("team-lead", "MSG-A", "2026-12-07T05:00:01.000Z", "2026-12-07T05:00:02.000Z")
        + carry_records("team-lead", "MSG-B", "2026-12-07T05:00:11.000Z", None)
    )
    (sub / "agent-aworker-0f.meta.json").write_text(
        json.dumps({"name": "worker", "teamName": f"session-{sid[:8]}"})
    )
    team = claude / "teams" / f"session-{sid[:8]}"
    (team / "inboxes").mkdir(parents=True)
    members = [{"name": "team-lead"}, {"name": "worker"}]
    (team / "config.json").write_text(
        json.dumps(
            {
                "name": team.name,
                "leadSessionId": sid,
                "members": members,
                "leadProcess": {"pid": pid, "procStart": "1"},
            }
        )  # fmt: skip
    )
    (team / "inboxes" / "worker.json").write_text("[]")
    return project / f"{sid}.jsonl"


def test_the_mcp_tool_gives_the_same_json_as_the_cli(tmp_path: Path) -> None:
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    claude = tmp_path / "claude"
    write_team_session(claude)
    env = env_for(tmp_path, claude)
    cli = messages(env)
    assert [(m["text"], m["fate"]) for m in cli["messages"]] == [
        ("MSG-B", "lost"),
        ("MSG-A", "delivered"),
    ]
    room = tmp_path / "inbox.txt"
    room.touch()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ackdeck.core.cli", "mcp", "--session", "agent", "--room", str(room)],
        env={k: env[k] for k in ("PYTHONPATH", "HOME", "ACKDECK_HOME", "CLAUDE_CONFIG_DIR")},
    )

    async def call() -> dict:
        async with Client(params, read_timeout_seconds=60) as client:
            got = await client.call_tool("messages_list", {})
            return dict(got.structured_content or {})

    mcp = anyio.run(call)
    assert mcp["messages"] == cli["messages"] and mcp["counts"] == cli["counts"]


# ----- real Claude Code, offline, in tmux ----------------------------------------------------
def test_a_real_team_exchanges_messages_all_delivered_with_both_transcripts(
    tmp_path: Path,
) -> None:
    """The lead sends MSG-ONE; the teammate answers it and sends REPLY-ONE back: both are
    delivered, each with the sender's SendMessage line and the recipient's request line."""
    from tests.helpers.claude_tmux import claude_in_tmux
    from tests.helpers.model_stub import Call, Say, TeamStub

    worker = [
        Say("ready"),
        Call("ToolSearch", {"query": "select:SendMessage", "max_results": 5}),
        Call("SendMessage", {"to": "team-lead", "summary": "reply", "message": "REPLY-ONE"}),
    ]
    with (
        TeamStub({"team-lead": lead_steps(), "worker": worker}) as stub,
        claude_in_tmux(tmp_path, stub.url, "start the team") as cc,
    ):
        env = env_for(tmp_path, cc.claude)

        def both_delivered() -> dict | None:
            rows = by_text(env)
            done = [rows.get(t, {}).get("fate") for t in ("MSG-ONE", "REPLY-ONE")]
            return rows if done == ["delivered", "delivered"] else None

        rows = eventually(both_delivered, timeout=CLIENT_WAIT, what="both messages delivered")
        one, reply = rows["MSG-ONE"], rows["REPLY-ONE"]
        assert (one["sender"], one["to"], reply["sender"], reply["to"]) == (
            "team-lead", "worker", "worker", "team-lead",
        )  # fmt: skip
        assert one["turns"] == 1 and one["turn"] >= 1 and one["delivered_at"] >= one["sent_at"]
        assert "/subagents/agent-aworker-" in one["carried"][0]["path"]
        assert reply["carried"][0]["path"].endswith(f"{reply['session']}.jsonl")
        out = ackdeck(env, "messages", "--evidence", one["id"][:8])
        assert out.returncode == 0, out.stderr
        # Every turn was routed by the teammate header, and the system prompt agreed.
        assert stub.unsure == [] and len(stub.turns_of("worker")) >= 2
        assert '"name":"SendMessage"' in out.stdout  # the sender's line
        assert 'summary=\\"first\\">\\nMSG-ONE\\n</teammate-message>' in out.stdout
        assert stub.errors == []


def test_a_message_whose_turn_never_completes_is_lost_after_kill_9_and_redelivered_once(
    tmp_path: Path,
) -> None:
    """MSG-TWO is taken from the worker's inbox and sent to the model, which never answers;
    the session is killed with -9. Before: waiting (its turn runs). After: lost, the team
    folder and registry left behind and the recipient gone. `messages redeliver` pushes it
    into the worker's inbox of a new session, where it reaches the model; a re-run pushes
    nothing."""
    from tests.helpers.claude_tmux import claude_again, claude_in_tmux, type_line
    from tests.helpers.model_stub import Say, TeamStub, last_user_text

    def hold(agent: str, body: dict) -> bool:
        return agent == "worker" and "MSG-TWO" in last_user_text(body)

    scripts = {"team-lead": lead_steps("MSG-TWO"), "worker": [Say("ready"), Say("got it")]}
    with (
        TeamStub(scripts, hold=hold) as stub,
        claude_in_tmux(tmp_path, stub.url, "start the team") as cc,
    ):
        env = env_for(tmp_path, cc.claude)
        eventually(
            lambda: by_text(env).get("MSG-ONE", {}).get("fate") == "delivered",
            timeout=CLIENT_WAIT,
            what="MSG-ONE delivered",
        )
        type_line(cc, "again")
        eventually(lambda: stub.held, timeout=CLIENT_WAIT, what="the request carrying MSG-TWO")
        # The request went out; its user record reaches the transcript moments later.
        two = eventually(
            lambda: (m := by_text(env).get("MSG-TWO")) and m["carried"] and m,
            timeout=CLIENT_WAIT,
            what="MSG-TWO in the worker's transcript",
        )
        assert two["fate"] == "waiting" and "running" in two["why"], two
        inbox = cc.claude / "teams" / two["team"] / "inboxes" / "worker.json"
        assert two["id"] not in inbox.read_text()  # consumed before the request went out
        [record] = (cc.claude / "sessions").glob("*.json")
        os.kill(int(record.stem), signal.SIGKILL)
        lost = eventually(
            lambda: (m := by_text(env)["MSG-TWO"])["fate"] == "lost" and m,
            timeout=CLIENT_WAIT,
            what="MSG-TWO lost once the session was killed",
        )
        assert lost["recipient"] == "gone" and lost["carried"][0]["answered_at"] is None
        assert record.exists() and (cc.claude / "teams" / two["team"]).is_dir()  # stale
        out = ackdeck(env, "agents", "--json")
        (session,) = [a for a in json.loads(out.stdout)["agents"] if a["origin"] == "claude-code"]
        assert session["state"] == "gone"  # its registry record is left behind, not live
        assert by_text(env)["MSG-ONE"]["fate"] == "delivered"
        out = ackdeck(env, "messages", "redeliver", two["id"])
        assert out.returncode != 0 and "no running team" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1

        # A new session with a teammate of that name: the re-delivery goes to it.
        second = {
            "team-lead": _spawn_only(),
            "worker": [Say("ready again"), Say("got MSG-TWO")],
        }
        with (
            TeamStub(second, ids="again") as stub2,
            claude_again(cc, stub2.url, "start again") as cc2,
        ):
            new_team = eventually(
                lambda: _live_team_with_worker(cc2.claude, two["team"]),
                timeout=CLIENT_WAIT,
                what="the new session's team with its worker",
            )
            out = ackdeck(env, "messages", "redeliver", two["id"][:8], "--json")
            assert out.returncode == 0, out.stderr
            done = json.loads(out.stdout)
            assert done["team"] == new_team and not done["already"]

            def redelivered() -> dict | None:
                m = by_text(env)["MSG-TWO"]
                r = m["redelivery"]
                return m if r is not None and r["fate"] == "delivered" else None

            m = eventually(redelivered, timeout=CLIENT_WAIT, what="the re-delivery answered")
            assert m["fate"] == "lost" and m["redelivery"]["team"] == new_team
            shown = ackdeck(env, "messages", "--evidence", two["id"]).stdout
            assert f"re-delivered to worker in {new_team}" in shown
            assert f'teammate_id=\\"ackdeck\\" summary=\\"re-delivery of {two["id"]}' in shown
            got = [
                last_user_text(b)
                for b in stub2.turns_of("worker")
                if "MSG-TWO" in last_user_text(b)
            ]
            assert got and f'summary="re-delivery of {two["id"]}"' in got[0]
            again = ackdeck(env, "messages", "redeliver", two["id"], "--json")
            assert again.returncode == 0 and json.loads(again.stdout)["already"] is True
            inbox2 = cc2.claude / "teams" / new_team / "inboxes" / "worker.json"
            assert inbox2.read_text().count("re-delivery of") <= 1
            assert stub2.errors == []
        assert stub.errors == []


def _spawn_only() -> list:
    from tests.helpers.model_stub import Call

    return [
        Call(
            "Agent",
            {
                "description": "helper",
                "prompt": "You are worker. Wait for messages.",
                "name": "worker",
                "subagent_type": "general-purpose",
            },
        )
    ]


def _live_team_with_worker(claude: Path, old: str) -> str | None:
    for config in (claude / "teams").glob("*/config.json"):
        team = config.parent.name
        if team == old:
            continue
        doc = json.loads(config.read_text())
        if any(m.get("name") == "worker" for m in doc.get("members", [])):
            return team
    return None


@pytest.mark.parametrize("bad", ["", "zzzz"])
def test_redeliver_of_an_unknown_id_is_one_line(tmp_path: Path, bad: str) -> None:
    env = env_for(tmp_path, tmp_path / "claude")
    out = ackdeck(env, "messages", "redeliver", bad)
    assert out.returncode != 0 and "no message" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_message_put_back_in_the_inbox_after_delivery_is_duplicated_in_two_turns(
    tmp_path: Path,
) -> None:
    """One message (one send, one msg_id) that reaches the model in two completed turns, as
    when an entry is written again after Claude Code consumed it (#92244 reports up to four):
    duplicated, with both requests as evidence. The entry is the one Claude Code wrote: the
    worker is kept busy until it sits in the inbox, copied, and written back once it is gone."""
    from ackdeck.core.clients.claude_code.lock import MailboxLock
    from tests.helpers.claude_tmux import claude_in_tmux
    from tests.helpers.model_stub import Say, TeamStub

    seen: dict[str, Any] = {}

    def keep_the_entry() -> None:
        def entry() -> dict | None:
            for inbox in seen["claude"].glob("teams/*/inboxes/worker.json"):
                for doc in json.loads(inbox.read_text() or "[]"):
                    if doc.get("text") == "MSG-ONE":
                        seen["inbox"] = inbox
                        return doc
            return None

        seen["entry"] = eventually(entry, timeout=CLIENT_WAIT, what="MSG-ONE in the inbox")

    worker = [Say("ready", before=keep_the_entry), Say("got it"), Say("got it again")]
    with TeamStub({"team-lead": lead_steps(), "worker": worker}) as stub:
        seen["claude"] = tmp_path / "user" / ".claude"
        with claude_in_tmux(tmp_path, stub.url, "start the team") as cc:
            env = env_for(tmp_path, cc.claude)
            one = eventually(
                lambda: (m := by_text(env).get("MSG-ONE")) and m["fate"] == "delivered" and m,
                timeout=CLIENT_WAIT,
                what="MSG-ONE delivered once",
            )
            inbox = seen["inbox"]
            with MailboxLock(inbox):
                docs = json.loads(inbox.read_text() or "[]")
                assert all(d.get("msg_id") != one["id"] for d in docs)  # removed on delivery
                inbox.write_text(json.dumps([*docs, seen["entry"]], indent=2))
            dup = eventually(
                lambda: (m := by_text(env)["MSG-ONE"])["fate"] == "duplicated" and m,
                timeout=CLIENT_WAIT,
                what="MSG-ONE in a second completed turn",
            )
            assert (
                dup["turns"] == 2 and dup["id"] == one["id"] and "2 completed turns" in dup["why"]
            )
            turns = [c["turn"] for c in dup["carried"]]
            assert len(set(turns)) == 2 and all(c["answered_at"] for c in dup["carried"])
            counts = messages(env)["counts"]
            assert counts["duplicated"] == 1
        assert stub.errors == []


def test_a_cross_session_message_is_found_in_the_other_sessions_transcript(
    tmp_path: Path,
) -> None:
    """Session B sends CROSS-ONE to session A by A's registry name (over Claude Code's Unix
    socket: no inbox file): delivered, found in A's main transcript as a
    `<cross-session-message from-name="B">`."""
    from tests.helpers.claude_tmux import claude_again, claude_in_tmux
    from tests.helpers.model_stub import Call, Say, TeamStub

    with (
        TeamStub({"team-lead": [Say("A ready")]}, ids="a") as sa,
        claude_in_tmux(tmp_path, sa.url, "be A") as a,
    ):
        env = env_for(tmp_path, a.claude)

        def a_named() -> dict | None:
            for p in (a.claude / "sessions").glob("*.json"):
                doc = json.loads(p.read_text() or "{}")
                if doc.get("name"):
                    return doc
            return None

        rec = eventually(a_named, timeout=CLIENT_WAIT, what="session A in the registry")

        def b(i: int, body: dict) -> Any:
            if i == 0:
                return Call("ToolSearch", {"query": "select:SendMessage", "max_results": 5})
            if i == 1:
                return Call("SendMessage", {"to": rec["name"], "summary": "hi", "message": "X-1"})
            return Say(f"B {i}")

        with TeamStub({"team-lead": b}, ids="b") as sb, claude_again(a, sb.url, "be B"):
            m = eventually(
                lambda: (x := by_text(env).get("X-1")) and x["fate"] == "delivered" and x,
                timeout=CLIENT_WAIT,
                what="the cross-session message delivered",
            )
            assert m["kind"] == "cross-session" and m["to"] == rec["name"]
            assert m["to_session"] == rec["sessionId"]
            assert m["carried"][0]["path"].endswith(f"{rec['sessionId']}.jsonl")
            assert sb.errors == []
        assert sa.errors == []


def test_metrics_count_the_messages_by_fate_as_the_cli_does(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    write_team_session(claude)
    env = env_for(tmp_path, claude)
    out = ackdeck(env, "metrics")
    assert out.returncode == 0, out.stderr
    assert 'ackdeck_claude_messages{fate="lost"} 1.0' in out.stdout
    assert 'ackdeck_claude_messages{fate="delivered"} 1.0' in out.stdout
    assert 'ackdeck_claude_messages{fate="duplicated"} 0.0' in out.stdout
    assert messages(env)["counts"]["lost"] == 1


def _proc_start(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[19]


def live_team_with_worker(claude: Path, sid: str, pid: int) -> Path:
    """A running session's team (its lead's process: `pid`) with a member `worker`."""
    team = claude / "teams" / f"session-{sid[:8]}"
    (team / "inboxes").mkdir(parents=True)
    (team / "config.json").write_text(
        json.dumps(
            {
                "name": team.name,
                "leadSessionId": sid,
                "members": [{"name": "team-lead"}, {"name": "worker"}],
                "leadProcess": {"pid": pid, "procStart": _proc_start(pid)},
            }
        )  # fmt: skip
    )
    inbox = team / "inboxes" / "worker.json"
    inbox.write_text("[]")
    return inbox


async def test_the_messages_screen_shows_lost_first_its_evidence_and_redelivers_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`M` on the Agents panel: the lost message first; enter shows both transcript lines;
    `R` then `y` pushes it into the running team's worker inbox; a second `R` pushes nothing."""
    from ackdeck.tui.app import make_app
    from ackdeck.tui.screens.messages import MessagesScreen
    from ackdeck.tui.screens.modals import ConfirmScreen, TextScreen
    from ackdeck.tui.testing import quiet_config, screen_text, settle
    from tests.helpers.wait import eventually_async

    claude = tmp_path / "claude"
    write_team_session(claude)
    inbox = live_team_with_worker(claude, "77777777-0000-4000-8000-000000000000", os.getpid())
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    home = tmp_path / "ackdeck"
    home.mkdir()
    app = make_app(quiet_config([], home=home, claude_teams=True))
    async with app.run_test(size=(160, 32)) as pilot:
        await settle(pilot)
        await pilot.press("shift+tab")  # the Agents panel, whose footer offers M
        await settle(pilot)
        await pilot.press("M")
        await settle(pilot)
        assert isinstance(app.screen, MessagesScreen)
        screen = app.screen
        await eventually_async(lambda: bool(screen.rows), what="the messages listed")
        assert [m.text for m in screen.rows.values()] == ["MSG-B", "MSG-A"]  # lost first
        assert "1 lost, 1 delivered" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TextScreen)
        shown = app.screen._body  # the whole text (the screen wraps and scrolls it)
        assert '"name":"SendMessage"' in shown and "no answer" in shown
        assert shown.count("MSG-B") >= 2  # the send's line and the request's line
        await pilot.press("escape")
        await settle(pilot)
        for _ in range(2):
            await pilot.press("R")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await settle(pilot)
            await eventually_async(
                lambda: screen.rows["id-b"].redelivery is not None, what="the re-delivery shown"
            )
        docs = json.loads(inbox.read_text())
        assert [(d["from"], d["text"], d["summary"]) for d in docs] == [
            ("ackdeck", "MSG-B", "re-delivery of id-b")
        ]
        told = [n.message for n in app._notifications]
        assert any("already re-delivered" in m for m in told)


# ----- cost: kept offsets ---------------------------------------------------------------------
def test_a_second_look_reads_only_what_was_appended(tmp_path: Path) -> None:
    """The kept offsets: a look after one record more reads that record's bytes, not the
    transcripts again; nothing new reads nothing."""
    from ackdeck.core.service.claude_messages import list_messages

    claude = tmp_path / "claude"
    lead = write_team_session(claude)
    env, home = env_for(tmp_path, claude), tmp_path / "ackdeck"
    total = sum(p.stat().st_size for p in (claude / "projects").rglob("*.jsonl"))
    first = list_messages(env, home)
    assert first.read_bytes == total
    assert list_messages(env, home).read_bytes == 0
    more = send_records("t3", "worker", "MSG-C", "id-c", "2026-12-07T05:01:00.000Z", "m3")
    with open(lead, "ab") as f:
        f.write(more)
    again = list_messages(env, home)
    assert again.read_bytes == len(more)
    assert {m.text for m in again.messages} == {"MSG-A", "MSG-B", "MSG-C"}


def test_a_transcript_rewritten_in_place_is_read_again_whole_not_from_the_kept_offset(
    tmp_path: Path,
) -> None:
    """A transcript replaced by another of the same size or longer (a restore, a copy over
    it) is not continued from the kept offset: what lies before it changed, so it is read
    whole and the old messages are forgotten."""
    from ackdeck.core.service.claude_messages import list_messages

    claude = tmp_path / "claude"
    lead = write_team_session(claude)
    env, home = env_for(tmp_path, claude), tmp_path / "ackdeck"
    assert {m.text for m in list_messages(env, home).messages} == {"MSG-A", "MSG-B"}
    data = lead.read_bytes()
    swapped = data.replace(b"MSG-A", b"MSG-X").replace(b"MSG-B", b"MSG-Y")
    with open(lead, "r+b") as f:  # same inode, same size: only the bytes differ
        f.write(
            swapped
            + send_records("t9", "worker", "MSG-Z", "id-z", "2026-12-07T06:00:00.000Z", "m9")
        )
    found = list_messages(env, home)
    assert {m.text for m in found.messages} == {"MSG-X", "MSG-Y", "MSG-Z"}
    assert found.read_bytes == lead.stat().st_size


def test_a_half_written_last_record_is_read_once_complete(tmp_path: Path) -> None:
    from ackdeck.core.service.claude_messages import list_messages

    claude = tmp_path / "claude"
    lead = write_team_session(claude)
    env, home = env_for(tmp_path, claude), tmp_path / "ackdeck"
    list_messages(env, home)
    more = send_records("t3", "worker", "MSG-C", "id-c", "2026-12-07T05:01:00.000Z", "m3")
    with open(lead, "ab") as f:
        f.write(more[:40])
    assert "MSG-C" not in {m.text for m in list_messages(env, home).messages}
    with open(lead, "ab") as f:
        f.write(more[40:])
    assert "MSG-C" in {m.text for m in list_messages(env, home).messages}


def test_a_message_whose_request_the_api_refuses_is_lost_not_delivered_while_its_session_runs(
    tmp_path: Path,
) -> None:
    """Claude Code ends a refused request with a synthetic assistant record (`API Error:
    400 …`): that is no answer. MSG-TWO is lost with the error as its reason, though the
    recipient's process still runs; MSG-ONE stays delivered."""
    from tests.helpers.claude_tmux import claude_in_tmux, type_line
    from tests.helpers.model_stub import Say, TeamStub, last_user_text

    def fail(agent: str, body: dict) -> bool:
        return agent == "worker" and "MSG-TWO" in last_user_text(body)

    scripts = {"team-lead": lead_steps("MSG-TWO"), "worker": [Say("ready"), Say("got it")]}
    with (
        TeamStub(scripts, fail=fail) as stub,
        claude_in_tmux(tmp_path, stub.url, "start the team") as cc,
    ):
        env = env_for(tmp_path, cc.claude)
        eventually(
            lambda: by_text(env).get("MSG-ONE", {}).get("fate") == "delivered",
            timeout=CLIENT_WAIT,
            what="MSG-ONE delivered",
        )
        type_line(cc, "again")
        two = eventually(
            lambda: (m := by_text(env).get("MSG-TWO")) and m["fate"] == "lost" and m,
            timeout=CLIENT_WAIT,
            what="MSG-TWO lost after its request was refused",
        )
        assert "API Error: 400" in two["why"] and two["recipient"] == "live"
        assert two["carried"] and two["carried"][0]["answered_at"] is None
        assert by_text(env)["MSG-ONE"]["fate"] == "delivered"
        assert stub.errors == []


# ----- re-delivery: never twice --------------------------------------------------------------
def _lost_and_a_live_team(tmp_path: Path) -> tuple[dict[str, str], Path]:
    claude = tmp_path / "claude"
    write_team_session(claude)
    inbox = live_team_with_worker(claude, "77777777-0000-4000-8000-000000000000", os.getpid())
    return env_for(tmp_path, claude), inbox


def test_two_owners_redelivering_at_once_push_it_once(tmp_path: Path) -> None:
    import subprocess

    from tests.helpers.cli import ACKDECK

    env, inbox = _lost_and_a_live_team(tmp_path)
    procs = [
        subprocess.Popen(
            [*ACKDECK, "messages", "redeliver", "id-b", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(4)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(r["already"] for r in results) == [False, True, True, True]
    docs = json.loads(inbox.read_text())
    assert [d["summary"] for d in docs] == ["re-delivery of id-b"]


def test_a_redelivery_killed_after_its_push_is_not_pushed_again_on_the_re_run(
    tmp_path: Path,
) -> None:
    """Killed with -9 between the push and the journal's record of it: the re-run finds the
    entry by its marker in the inbox and pushes nothing."""
    from tests.helpers.pauses import kill9, paused, wait_for_step

    env, inbox = _lost_and_a_live_team(tmp_path)
    marker = tmp_path / "paused"
    step = "redeliver-after-push"
    with paused(env, marker, [step], "messages", "redeliver", "id-b") as proc:
        wait_for_step(proc, marker, step)
        kill9(proc)
    assert [d["summary"] for d in json.loads(inbox.read_text())] == ["re-delivery of id-b"]
    out = ackdeck(env, "messages", "redeliver", "id-b", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["already"] is True
    assert [d["summary"] for d in json.loads(inbox.read_text())] == ["re-delivery of id-b"]
    row = next(m for m in messages(env)["messages"] if m["id"] == "id-b")
    assert row["redelivery"]["team"] == inbox.parent.parent.name


def test_a_damaged_journal_refuses_the_push_in_one_line(tmp_path: Path) -> None:
    env, inbox = _lost_and_a_live_team(tmp_path)
    journal = tmp_path / "ackdeck" / "claude-messages" / "redeliveries.json"
    journal.parent.mkdir(parents=True)
    journal.write_text('{"id-b": {"team"')
    out = ackdeck(env, "messages", "redeliver", "id-b")
    assert out.returncode != 0 and "journal is damaged" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert json.loads(inbox.read_text()) == []


def test_a_message_not_lost_is_not_redelivered(tmp_path: Path) -> None:
    env, inbox = _lost_and_a_live_team(tmp_path)
    out = ackdeck(env, "messages", "redeliver", "id-a")
    assert out.returncode == 3 and "it is delivered" in out.stdout
    assert json.loads(inbox.read_text()) == []


def test_a_fifo_in_place_of_the_scan_cache_is_one_line_not_a_hang(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    write_team_session(claude)
    env = env_for(tmp_path, claude)
    cache = tmp_path / "ackdeck" / "claude-messages" / "scan.json"
    cache.parent.mkdir(parents=True)
    os.mkfifo(cache)
    out = ackdeck(env, "messages")
    assert out.returncode != 0 and "is a FIFO" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_team_and_session_narrow_the_list_and_a_bad_team_name_is_one_line(
    tmp_path: Path,
) -> None:
    claude = tmp_path / "claude"
    write_team_session(claude)
    other = "88888888-0000-4000-8000-000000000000"
    project = claude / "projects" / "-w-proj"
    (project / f"{other}.jsonl").write_bytes(
        send_records("t1", "worker", "MSG-O", "id-o", "2026-12-07T05:00:00.000Z", "m1")
    )
    env = env_for(tmp_path, claude)
    assert {m["text"] for m in messages(env)["messages"]} == {"MSG-A", "MSG-B", "MSG-O"}
    assert {m["text"] for m in messages(env, "--team", "session-88888888")["messages"]} == {"MSG-O"}
    assert {m["text"] for m in messages(env, "--session", SID[:6])["messages"]} == {
        "MSG-A",
        "MSG-B",
    }
    out = ackdeck(env, "messages", "redeliver", "id-b", "--team", "../etc")
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr


def test_a_long_lost_message_is_redelivered_whole_not_as_its_shown_prefix(tmp_path: Path) -> None:
    """A row shows the first 400 characters of a message; the re-delivery pushes all of it."""
    claude = tmp_path / "claude"
    lead = write_team_session(claude)
    long = "L" * 1000 + " end"
    data = lead.read_bytes().replace(b"MSG-B", long.encode())
    lead.write_bytes(data)
    sub = next((claude / "projects").rglob("agent-aworker-0f.jsonl"))
    sub.write_bytes(sub.read_bytes().replace(b"MSG-B", long.encode()))
    inbox = live_team_with_worker(claude, "77777777-0000-4000-8000-000000000000", os.getpid())
    env = env_for(tmp_path, claude)
    row = next(m for m in messages(env)["messages"] if m["id"] == "id-b")
    assert row["fate"] == "lost" and len(row["text"]) == 400
    out = ackdeck(env, "messages", "redeliver", "id-b")
    assert out.returncode == 0, out.stderr
    (entry,) = json.loads(inbox.read_text())
    assert entry["text"] == long


# ----- a SendMessage to "*" (a broadcast) ------------------------------------------------------
def broadcast_records(tool_id: str, at: str, mid: str, *, result: bool) -> bytes:
    """A SendMessage to "*" as 2.1.328 records it (observed in
    test_a_real_broadcast_is_refused_so_only_the_per_recipient_send_is_a_message): the call,
    with the `recipient`, `recipient_kind` and `content` Claude Code adds, and (`result`) the
    refusal its validateInput returns before any inbox is written."""
    args = {"to": "*", "summary": "all", "message": "MSG-ALL", "type": "message",
            "recipient": "*", "recipient_kind": "name", "content": "MSG-ALL"}  # fmt: skip
    call = {"type": "tool_use", "id": tool_id, "name": "SendMessage", "input": args}
    out = _line(
        {
            "type": "assistant",
            "timestamp": at,
            "message": {"id": mid, "type": "message", "role": "assistant", "content": [call]},
        }  # fmt: skip
    )
    if result:
        why = 'broadcast (to: "*") is no longer supported \u2014 send a message per recipient'
        refusal = {"type": "tool_result", "content": f"<tool_use_error>{why}</tool_use_error>",
                   "is_error": True, "tool_use_id": tool_id}  # fmt: skip
        out += _line(
            {
                "type": "user",
                "timestamp": at,
                "message": {"role": "user", "content": [refusal]},
                "toolUseResult": f"Error: {why}",
            }  # fmt: skip
        )
    return out


def test_a_broadcast_refused_or_cut_off_mid_call_is_no_message_to_star(tmp_path: Path) -> None:
    """2.1.328 refuses `to: "*"` before writing any inbox, so a broadcast reaches nobody:
    refused, or its sender killed before the refusal was recorded, it is no message (not a
    cross-session message to a session named "*", lost for ever), and no "*" row is offered
    for re-delivery."""
    claude = tmp_path / "claude"
    lead = write_team_session(claude)
    with lead.open("ab") as f:
        f.write(broadcast_records("t3", "2026-12-07T05:00:20.000Z", "m3", result=True))
        f.write(broadcast_records("t4", "2026-12-07T05:00:30.000Z", "m4", result=False))
    env = env_for(tmp_path, claude)
    listed = messages(env)
    assert [(m["to"], m["text"]) for m in listed["messages"]] == [
        ("worker", "MSG-B"),
        ("worker", "MSG-A"),
    ]
    assert listed["counts"]["lost"] == 1  # MSG-B alone
    out = ackdeck(env, "messages", "redeliver", "t4")
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1
    assert "no message 't4'" in out.stderr


def test_a_real_broadcast_is_refused_so_only_the_per_recipient_send_is_a_message(
    tmp_path: Path,
) -> None:
    """Claude Code 2.1.328 refuses `to: "*"` before anything is written (its validateInput:
    'broadcast (to: "*") is no longer supported'): no inbox gets an entry, no teammate's model
    sees it. The lead then sends to the worker by name: that send is the one message."""
    from tests.helpers.claude_tmux import claude_in_tmux
    from tests.helpers.model_stub import Call, Say, TeamStub

    steps = [
        Call("ToolSearch", {"query": "select:SendMessage", "max_results": 5}),
        Call(
            "Agent",
            {
                "description": "helper",
                "prompt": "You are worker. Wait for messages.",
                "name": "worker",
                "subagent_type": "general-purpose",
            },
        ),
        Call("SendMessage", {"to": "*", "summary": "all", "message": "MSG-ALL"}),
        Call("SendMessage", {"to": "worker", "summary": "each", "message": "MSG-EACH"}),
    ]

    def lead(i: int, body: dict) -> Any:
        return steps[i] if i < len(steps) else Say(f"lead {i}")

    with (
        TeamStub({"team-lead": lead, "worker": [Say("ready"), Say("got it")]}) as stub,
        claude_in_tmux(tmp_path, stub.url, "start the team") as cc,
    ):
        env = env_for(tmp_path, cc.claude)
        each = eventually(
            lambda: (m := by_text(env).get("MSG-EACH")) and m["fate"] == "delivered" and m,
            timeout=CLIENT_WAIT,
            what="MSG-EACH delivered",
        )
        # Complete lines only: the lead may be writing its next record as this reads.
        lines = Path(each["sent"]["path"]).read_bytes().split(b"\n")[:-1]
        records = [json.loads(ln) for ln in lines]
        calls = [
            b
            for r in records
            if r.get("type") == "assistant"
            for b in r["message"]["content"]
            if b.get("type") == "tool_use" and b.get("input", {}).get("to") == "*"
        ]
        assert [c["input"]["recipient"] for c in calls] == ["*"]
        (refusal,) = [
            b
            for r in records
            if r.get("type") == "user" and isinstance(r["message"]["content"], list)
            for b in r["message"]["content"]
            if b.get("type") == "tool_result" and b.get("tool_use_id") == calls[0]["id"]
        ]
        assert refusal["is_error"] is True and "no longer supported" in refusal["content"]
        # No inbox got it: the worker's model never saw MSG-ALL, and no send is listed for it.
        worker_turns = [json.dumps(b) for b in stub.turns_of("worker")]
        assert worker_turns and not any("MSG-ALL" in t for t in worker_turns)
        listed = messages(env)
        assert [m["text"] for m in listed["messages"]] == ["MSG-EACH"]
        assert listed["counts"]["lost"] == 0
        assert stub.errors == []
