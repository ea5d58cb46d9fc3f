"""`ackdeck agents`: each agent session's presence (working, waiting, idle, stalled, gone)
and what waits for it."""

from __future__ import annotations

import argparse

from ackdeck.core.base.text import age_text, safe
from ackdeck.core.cli._output import emit_json, say


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agents",
        help="each agent session: working, waiting, idle, stalled or gone, and what waits for it",
        description="One row per session ackdeck's hooks, MCP server, reads, acks or nudges "
        "have seen: its state, since when and why (the evidence), its client and host, its "
        "rooms' unread lines and how long the oldest waited, its pending wakes, its last read, "
        "ack and nudge; then the members of Claude Code's agent teams, their state from the "
        "team's mailboxes. Reads state only; changes nothing.",
    )
    p.add_argument(
        "--session",
        action="append",
        default=None,
        metavar="S",
        help="only these sessions (repeatable; default: every session of the home)",
    )
    p.add_argument(
        "--no-claude-teams",
        dest="claude_teams",
        action="store_false",
        help="leave out the members of Claude Code's agent teams ($CLAUDE_CONFIG_DIR/teams or "
        "~/.claude/teams), listed after the sessions by default",
    )
    p.add_argument("--json", action="store_true", help="the rows as JSON (as agents_list)")
    p.set_defaults(handler=_agents)


def _agents(args: argparse.Namespace) -> int:
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.base.names import check_name
    from ackdeck.core.service.agents import list_agents

    sessions = None if args.session is None else [check_name(s) for s in args.session]
    listed = list_agents(resolve_home(args.home), sessions=sessions, claude_teams=args.claude_teams)
    if args.json:
        emit_json(listed.to_json())
        return 0
    if not listed.agents:
        say("no agent sessions seen yet (their hooks, MCP server, reads or acks record them)")
        return 0
    now = listed.checked_at
    say(
        f"{'SESSION':<20} {'STATE':<8} {'SINCE':>7} {'UNREAD':>6} {'OLDEST':>7} {'WAKES':>5}  "
        "EVIDENCE"
    )
    for a in listed.agents:
        since = age_text(now - a.since) if a.since is not None else "-"
        oldest = age_text(a.oldest_unread_age) if a.oldest_unread_age is not None else "-"
        say(
            f"{safe(a.session):<20} {a.state:<8} {since:>7} {a.unread:>6} {oldest:>7} "
            f"{a.pending_wakes:>5}  "
            + safe(a.evidence if a.pane is None else f"pane {a.pane}: {a.evidence}")
        )
    return 0
