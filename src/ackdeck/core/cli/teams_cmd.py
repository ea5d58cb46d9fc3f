"""`ackdeck team`: Claude Code agent teams' mailboxes, for their owner.

`team list` lists the teams, their members and mailboxes; `team show ROOM` shows one mailbox's
entries with the key of each; `team mark-read ROOM KEY...` marks read, after a confirmation,
entries the owner was shown (by `team show` or the dashboard). Nothing else here writes:
looking is not reading (docs/how-to/claude-teams.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ackdeck.core.cli._output import emit_json, say
from ackdeck.core.errors import InvalidInput

if TYPE_CHECKING:
    from ackdeck.core.service.claude_teams import ClaudeMailboxRoom, MailEntry


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("team", help="Claude Code agent teams: members, mailboxes, mark read")
    tsub = p.add_subparsers(dest="team_action", metavar="ACTION", required=True)
    ls = tsub.add_parser("list", help="every team's members (pane, state) and mailboxes")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=_list)
    show = tsub.add_parser("show", help="a mailbox's entries, each with its key (reads only)")
    show.add_argument("room", metavar="ROOM", help="claude-team://TEAM/AGENT")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=_show)
    mark = tsub.add_parser(
        "mark-read",
        help="mark read, for the agent, entries you were shown (asks first)",
        description=(
            "Mark read entries of a teammate's mailbox on its behalf: an explicit act of the "
            "owner, limited to the keys `team show` (or the dashboard) showed, confirmed "
            "before anything is written (--yes confirms it without asking)."
        ),
    )
    mark.add_argument("room", metavar="ROOM", help="claude-team://TEAM/AGENT")
    mark.add_argument("keys", nargs="+", metavar="KEY", help="an entry's key as shown")
    mark.add_argument("--yes", action="store_true", help="confirmed: do not ask")
    mark.add_argument("--json", action="store_true")
    mark.set_defaults(handler=_mark_read)


def _list(args: argparse.Namespace) -> int:
    from ackdeck.core.service import claude_teams

    rows = claude_teams.members()
    specs = claude_teams.mailbox_specs()
    if args.json:
        emit_json(
            {
                "teams_dir": str(claude_teams.teams_dir()),
                "members": [{k: getattr(r, k) for k in r._fields} for r in rows],
                "mailboxes": specs,
            }
        )
        return 0
    if not rows and not specs:
        say(f"no Claude Code teams under {claude_teams.teams_dir()}")
        return 0
    for r in rows:
        extra = f"  ({r.problem})" if r.problem else ""
        if r.gone:
            extra += f"  (gone: {r.gone})"
        state = "gone" if r.gone else r.state
        say(
            f"{r.team}/{r.name}  {state}  pane {r.pane or '-'}  {r.unread} unread  "
            f"{r.agent_type or ''} {r.model or ''}".rstrip()
            + extra
        )
    return 0


def _show_entries(room: ClaudeMailboxRoom, as_json: bool) -> list[MailEntry]:
    entries = room.entries()
    if as_json:
        emit_json(
            {
                "room": room.spec,
                "path": str(room.path),
                "entries": [
                    {
                        "key": e.key,
                        "index": e.index,
                        "from": e.sender,
                        "timestamp": e.timestamp,
                        "read": e.read,
                        "text": e.text,
                        "event": None
                        if e.event is None
                        else {k: getattr(e.event, k) for k in e.event._fields},
                    }
                    for e in entries
                ],
            }
        )
    return entries


def _show(args: argparse.Namespace) -> int:
    from ackdeck.core.service import claude_teams

    room = claude_teams.open_mailbox(args.room)
    entries = _show_entries(room, args.json)
    if args.json:
        return 0
    s = claude_teams.summarize(entries)
    senders = ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in s.senders.items()) or "nobody"
    say(f"{room.spec}: {s.unread} unread of {s.total}; unread/all by sender: {senders}")
    for ev in s.pending:
        say(f"  WAITING FOR AN ANSWER: {ev.text}")
    for e in entries:
        say(f"  {e.key}  {claude_teams.entry_line(e).decode()}")
    return 0


def _mark_read(args: argparse.Namespace) -> int:
    from ackdeck.core.service import claude_teams

    room = claude_teams.open_mailbox(args.room)
    # What the owner was shown is what `team show` shows now: a key it does not list (another
    # mailbox's, a typo, an entry pruned meanwhile) is refused before anything is asked.
    shown = {e.key for e in room.entries()}
    unknown = [k for k in args.keys if k not in shown]
    if unknown:
        raise InvalidInput(
            f"{room.spec}: no entry {unknown[0]!r} among those `team show` lists; nothing marked"
        )
    if not args.yes:
        if not sys.stdin.isatty():
            raise InvalidInput(
                "mark-read marks entries read on the agent's behalf: confirm with --yes "
                "(no terminal to ask); nothing marked"
            )
        answer = input(
            f"Mark {len(set(args.keys))} entr{'y' if len(set(args.keys)) == 1 else 'ies'} of "
            f"{room.spec} read on {room.agent}'s behalf? It will not be shown them as new. [y/N] "
        )
        if answer.strip().lower() not in ("y", "yes"):
            say("nothing marked")
            return 1
    marked, skipped = claude_teams.mark_read(args.room, shown, list(args.keys))
    if args.json:
        emit_json({"room": room.spec, "marked": marked, "not_marked": skipped})
    else:
        tail = f" ({len(skipped)} already read or gone)" if skipped else ""
        say(f"{room.spec}: marked {marked} read{tail}")
    return 0
