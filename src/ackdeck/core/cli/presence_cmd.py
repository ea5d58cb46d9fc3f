"""`ackdeck agents`: each agent session's presence (working, waiting, idle, stalled, gone)
and what waits for it; `ackdeck handover`: give a stalled session's lines to another."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ackdeck.core.base.text import age_text, safe
from ackdeck.core.cli._fleet import add_fleet_options, cell, fleet_of, fleet_rows, number
from ackdeck.core.cli._output import emit_json, say
from ackdeck.core.cli._words import column_width

if TYPE_CHECKING:
    from pathlib import Path

    from ackdeck.core.service.agents import Agents
    from ackdeck.core.service.fleet.settings import FleetSettings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agents",
        help="each agent session: working, waiting, idle, stalled or gone, and what waits for it",
        description="One row per session ackdeck's hooks, MCP server, reads, acks or nudges "
        "have seen: its state, since when and why (the evidence), its client and host, its "
        "rooms' unread lines and how long the oldest waited, its pending wakes, its last read, "
        "ack and nudge; then each Claude Code session in its registry (~/.claude/sessions: "
        "its status, gone once its process no longer runs) and the members of Claude Code's "
        "agent teams, their state from the team's mailboxes. Reads state only; changes "
        "nothing.",
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
        help="leave out Claude Code's own sessions and the members of its agent teams "
        "($CLAUDE_CONFIG_DIR or ~/.claude: sessions/, teams/), listed after ackdeck's sessions "
        "by default",
    )
    p.add_argument("--json", action="store_true", help="the rows as JSON (as agents_list)")
    add_fleet_options(p)
    p.set_defaults(handler=_agents)

    p = sub.add_parser(
        "handover",
        help="give the lines one agent session has not acked to another session, exactly once",
        description="Moves every line the --from session has not acked in its room (unread, "
        "and read but never acked) into the --to session's room: each line reaches it once "
        "and leaves the first room only after; lines arriving meanwhile stay. A crash at any "
        "step leaves a line in one room or both, never in neither, and running the same "
        "command again finishes it (and says what it found). The rooms are the ones "
        "`ackdeck agents` knows for each session; name one with --from-room / --to-room when "
        "a session has several. File rooms only.",
    )
    p.add_argument("--from", dest="source", required=True, metavar="S", help="the stalled session")
    p.add_argument(
        "--to", dest="target", required=True, metavar="T", help="the session to take over"
    )
    p.add_argument(
        "--from-room", default=None, metavar="PATH", help="S's room (when it has several)"
    )
    p.add_argument(
        "--to-room",
        default=None,
        metavar="PATH",
        help="T's room: one of its rooms (when it has several), or any room (T then need not "
        "have been seen yet)",
    )
    p.add_argument("--json", action="store_true", help="the result as JSON")
    p.set_defaults(handler=_handover)


def _agents(args: argparse.Namespace) -> int:
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.base.names import check_name
    from ackdeck.core.service.agents import evidence_line, list_agents

    sessions = None if args.session is None else [check_name(s) for s in args.session]
    settings = fleet_of(args)
    home = resolve_home(args.home)
    listed = list_agents(home, sessions=sessions, claude_teams=args.claude_teams)
    for line in listed.skipped:
        say(f"ackdeck: warning: {line}", file=sys.stderr)
    if settings is not None:
        return _fleet_agents(args, settings, home, listed, sessions)
    if args.json:
        emit_json(listed.to_json())
        return 0
    for problem in listed.problems:
        say(f"note: {safe(problem)}")
    if not listed.agents:
        say("no agent sessions seen yet (their hooks, MCP server, reads or acks record them)")
        return 0
    now = listed.checked_at
    names = [safe(a.session) for a in listed.agents]
    w = column_width(names)
    say(
        f"{'SESSION':<{w}} {'STATE':<8} {'SINCE':>7} {'UNREAD':>6} {'OLDEST':>7} {'WAKES':>5}  "
        "EVIDENCE"
    )
    for a, name in zip(listed.agents, names, strict=True):
        since = age_text(now - a.since) if a.since is not None else "-"
        oldest = age_text(a.oldest_unread_age) if a.oldest_unread_age is not None else "-"
        say(
            f"{name:<{w}} {a.state:<8} {since:>7} {a.unread:>6} {oldest:>7} "
            f"{a.pending_wakes:>5}  " + safe(evidence_line(a))
        )
    return 0


def _fleet_agents(
    args: argparse.Namespace,
    settings: FleetSettings,
    home: Path,
    listed: Agents,
    sessions: list[str] | None,
) -> int:
    """Every host's agents, this host's from disk: a HOST column, and `fleet` in the JSON."""
    local = listed.to_json()["agents"]
    fleet = fleet_rows(
        args,
        settings,
        home,
        "agents",
        local,
        snapshot=None if sessions is not None else {"agents": local},
        keep=None if sessions is None else (lambda r: r.get("session") in sessions),
    )
    if args.json:
        emit_json({**listed.to_json(), "agents": fleet.rows, "fleet": fleet.fleet.to_json()})
        return 0
    if not fleet.rows:
        say("no agent sessions seen yet on any host of the fleet")
        return 0
    now = listed.checked_at
    hosts = [cell(r.get("host")) for r in fleet.rows]
    names = [cell(r.get("session")) for r in fleet.rows]
    hw, w = column_width(hosts, 16), column_width(names)
    say(
        f"{'HOST':<{hw}} {'SESSION':<{w}} {'STATE':<8} {'SINCE':>7} {'UNREAD':>6} {'OLDEST':>7} "
        f"{'WAKES':>5}  EVIDENCE"
    )
    for r, host, name in zip(fleet.rows, hosts, names, strict=True):
        since, oldest = number(r.get("since")), number(r.get("oldest_unread_age"))
        say(
            f"{host:<{hw}} {name:<{w}} {cell(r.get('state')):<8} "
            f"{'-' if since is None else age_text(max(0.0, now - since)):>7} "
            f"{cell(r.get('unread')):>6} {'-' if oldest is None else age_text(oldest):>7} "
            f"{cell(r.get('pending_wakes')):>5}  {cell(r.get('evidence'))}"
        )
    return 0


def _handover(args: argparse.Namespace) -> int:
    from ackdeck.core.service.deck import Deck

    done = Deck(args.home, door="cli").handover(
        args.source, args.target, from_room=args.from_room, to_room=args.to_room
    )
    if args.json:
        emit_json(done.to_json())
        return 0
    for note in done.notes:
        say(f"note: {note}")
    say(done.summary)
    return 0
