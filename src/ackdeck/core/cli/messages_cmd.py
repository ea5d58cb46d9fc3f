"""`ackdeck messages`: every message Claude Code's agents sent each other and its fate
(delivered, waiting, lost, duplicated), from both transcripts; `ackdeck messages redeliver
ID`: push a lost one again into its recipient's inbox, once (docs/how-to/claude-teams.md)."""

from __future__ import annotations

import argparse

from ackdeck.core.base.text import safe
from ackdeck.core.cli._output import emit_json, say


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "messages",
        help="Claude Code's messages between agents: each one's fate, lost and duplicated first",
        description="Every SendMessage a Claude Code transcript shows (the lead's and each "
        "teammate's), found in the recipient's transcript: delivered (a turn that had it "
        "completed: when, which turn), waiting (in the inbox, or its turn is running), lost "
        "(consumed, no turn with it completed), duplicated (N completed turns). Reads only "
        "Claude Code's files; keeps what it read in its home so the next look reads only "
        "what was appended.",
    )
    p.add_argument("--team", metavar="TEAM", help="only this team's (session-ID8)")
    p.add_argument("--session", metavar="S", help="only this sender session's (id or prefix)")
    p.add_argument("--evidence", metavar="ID", help="show both transcript lines of one message")
    p.add_argument("--json", action="store_true", help="the messages as JSON")
    p.set_defaults(handler=_list)
    msub = p.add_subparsers(dest="messages_action", metavar="ACTION", required=False)
    red = msub.add_parser(
        "redeliver",
        help="push a lost message again into its recipient's inbox, once",
        description="Under Claude Code's mailbox lock, appends the message's text to its "
        "recipient's inbox in Claude Code's shape, from 'ackdeck' with the summary "
        "'re-delivery of ID', and journals it: a re-run finds it already re-delivered and "
        "pushes nothing. The recipient's team if its session runs, else the one running team "
        "with a member of that name (or --team). Only a lost message (else exit 3).",
    )
    red.add_argument("id", metavar="ID", help="the message's id (or its first characters)")
    red.add_argument("--team", metavar="TEAM", help="the team whose member gets it")
    red.add_argument("--json", action="store_true", help="the result as JSON")
    red.set_defaults(handler=_redeliver)


def _list(args: argparse.Namespace) -> int:
    from ackdeck.core.service.claude_messages import evidence, find, list_messages

    found = list_messages(team=args.team, session=args.session)
    if args.evidence:
        m = find(found, args.evidence)
        if args.json:
            emit_json({"id": m.id, "evidence": [[w, line] for w, line in evidence(m)]})
            return 0
        for where, line in evidence(m):
            say(safe(where))
            say(f"  {safe(line)}")
        return 0
    if args.json:
        emit_json(found.to_json())
        return 0
    if not found.messages:
        say("no messages in Claude Code's transcripts ($CLAUDE_CONFIG_DIR/projects)")
        return 0
    say(", ".join(f"{n} {f}" for f, n in found.counts.items() if n))
    for m in found.messages:
        when = f" at {m.delivered_at} (turn {m.turn})" if m.delivered_at else ""
        say(
            f"{m.fate.upper():<10} {m.id[:8]}  {safe(m.team)} {safe(m.sender)} -> "
            f"{safe(m.to)}{when}: {safe(m.summary or m.text[:60])}"
        )
        say(f"{'':<10} {safe(m.why)}")
        if m.redelivery is not None:
            r = m.redelivery
            say(f"{'':<10} re-delivered to {safe(r.to)} in {safe(r.team)}: {r.fate}")
    return 0


def _redeliver(args: argparse.Namespace) -> int:
    from ackdeck.core.service.claude_messages import redeliver

    done = redeliver(args.id, team=args.team)
    if args.json:
        emit_json(done.to_json())
    else:
        say(safe(done.message))
    return 0 if done.done else 3
