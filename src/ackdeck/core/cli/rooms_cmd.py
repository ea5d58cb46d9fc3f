"""`ackdeck room …`: the group's argparse registration (push, read, ack, status, wait, trace,
overdue, policy), and the commands no agent's turn runs. A turn's read, ack and status are
core/cli/room_turns.py, its push core/cli/_push.py: core/cli/_fast.py runs them without this
module."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ackdeck.core.base.names import check_name
from ackdeck.core.base.text import age_text
from ackdeck.core.cli import SESSION_HELP
from ackdeck.core.cli._output import emit_json, say, timeout_arg
from ackdeck.core.cli.room_turns import ack, deck_and_room, duration, note, page_size, read, status
from ackdeck.core.service.deck import Deck

if TYPE_CHECKING:
    import argparse

_SESSION_HELP = f"reader session ({SESSION_HELP})"
_FOLLOW_HELP = (
    "work on a symlinked room's target (refused by default: a link could point the ack at any file)"
)


def register(sub: argparse._SubParsersAction) -> None:
    # Here: only argparse's path needs it named (core/cli/_fast.py names it for the rest).
    from ackdeck.core.cli._push import push

    room = sub.add_parser("room", help="read, ack, push and watch a room (notification file)")
    rsub = room.add_subparsers(dest="room_command", metavar="ACTION", required=True)

    p = rsub.add_parser("push", help="append one line under the shared lock")
    p.add_argument(
        "room",
        metavar="ROOM",
        help="path of the notification file, or redis://HOST[:PORT][/DB]/NAME",
    )
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("text", metavar="TEXT", help="the line (not empty; no newline, no NUL)")
    p.add_argument("--json", action="store_true", help='print {"room", "path", "offset", ...}')
    p.add_argument(
        "--wait-ack",
        action="store_true",
        help="block until this line was acked (exit 0, saying by whom and when); 124 on timeout",
    )
    p.add_argument(
        "--session", default=None, help="with --wait-ack: the session whose ack is awaited"
    )
    p.add_argument(
        "--timeout", type=timeout_arg, default=None, help="with --wait-ack: seconds, 0-600"
    )
    p.set_defaults(handler=push)  # core/cli/_push.py: a producer's push skips the Deck

    p = rsub.add_parser(
        "read",
        help="return the complete lines (a page at a time) and record a receipt of them",
    )
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("--session", default=None, help=_SESSION_HELP)
    _page_option(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=read)

    p = rsub.add_parser("ack", help="remove exactly the lines this session read; keep the rest")
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("--session", default=None, help=_SESSION_HELP)
    p.add_argument(
        "--all",
        action="store_true",
        help="without a prior read: ack the complete lines of a page and print them",
    )
    _page_option(p, "with --all: ")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=ack)

    p = rsub.add_parser("status", help="pending, partial, acked and per-session counters")
    p.add_argument(
        "room", metavar="ROOM", nargs="+", help="one or more rooms (the first is the default)"
    )
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument(
        "--session",
        default=None,
        help="also give this session's in_flight and unread (default: env ACKDECK_SESSION)",
    )
    _overdue_option(p, "report rooms whose oldest line waited longer (10m, 1h)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=status)

    p = rsub.add_parser(
        "overdue",
        help="exit 1 if any room has a line waiting past its threshold (for cron and CI); "
        "wakes the room's owner once per episode",
    )
    p.add_argument("room", metavar="ROOM", nargs="+")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    _overdue_option(p, "the threshold (10m, 1h)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_overdue)

    p = rsub.add_parser(
        "policy",
        help="show or set the room's overdue threshold, max deliveries and owner session",
    )
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("--overdue", metavar="DURATION", help="10m, 1h, ... or off")
    p.add_argument(
        "--max-deliveries",
        metavar="N",
        help="move a line handed out N times without an ack to NAME.dead (or off)",
    )
    p.add_argument("--owner", metavar="SESSION", help="the session woken by alerts (or off)")
    p.add_argument(
        "--queue",
        choices=("on", "off"),
        help="a work queue: each line claimed by one session (`ackdeck claim`), or off",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_policy)

    p = rsub.add_parser(
        "trace",
        help="a line's journey: pushed or first seen, each read (session, door, time), the ack",
    )
    p.add_argument("room", metavar="ROOM")
    p.add_argument(
        "offset",
        metavar="OFFSET",
        nargs="?",
        help="the line's offset (file room) or entry ID (redis room), as `push --json` prints",
    )
    p.add_argument("--match", metavar="TEXT", help="trace the lines now in the room holding TEXT")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_trace)

    p = rsub.add_parser(
        "wait",
        help="block until the session has unread lines (exit 0) or the timeout (exit 124); "
        "errors exit 1",
    )
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("--session", default=None, help=_SESSION_HELP)
    p.add_argument(
        "--timeout", type=timeout_arg, default=None, help="seconds, 0-600 (default: forever)"
    )
    p.set_defaults(handler=_wait)


def _page_option(p: argparse.ArgumentParser, prefix: str = "") -> None:
    from ackdeck.core.service.rooms import PAGE_BYTES

    p.add_argument(
        "--max-bytes",
        metavar="SIZE",
        type=page_size,
        default=None,
        help=f"{prefix}at most this many bytes of lines (512K, 4M; default {PAGE_BYTES >> 20}M); "
        "a longer line comes alone and whole, and what is left is counted as waiting",
    )


def _wait(args: argparse.Namespace) -> int:
    deck, room = deck_and_room(args)
    note(deck.absent(room))  # then wait for its first line, as for any empty room
    if deck.wait(room, args.timeout):
        return 0
    from ackdeck.core.base.timeouts import EXIT_TIMEOUT  # math: not for a turn's read

    return EXIT_TIMEOUT


def _trace(args: argparse.Namespace) -> int:
    deck, ref = deck_and_room(args, session=False)
    match = None if args.match is None else os.fsencode(args.match)
    found = deck.trace(ref, offset=args.offset, match=match)
    if args.json:
        emit_json(found.to_json())
        return 0
    if not found.lines:
        say(f"{args.room}: no line holds {args.match!r} now (acked lines keep no text)")
        return 0
    if found.matched > len(found.lines):
        say(f"{found.matched} lines match; the newest {len(found.lines)}:")
    for line in found.lines:
        say("\n".join(line.report()))
    return 0


def _overdue_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--overdue",
        metavar="DURATION",
        type=duration,
        default=None,
        help=f"{what}, over each room's own (`room policy --overdue`)",
    )


def _overdue(args: argparse.Namespace) -> int:
    from ackdeck.core.cli._words import overdue_line

    # Owner wakes go to the home (--home, ACKDECK_HOME): the wake store owners drain.
    deck = Deck(args.home, None, args.room, follow_symlinks=args.follow_symlinks, door="cli")
    found = deck.overdue(overdue=args.overdue)
    if args.json:
        emit_json(found.to_json())
    else:
        for row in found.rooms:
            state = "OVERDUE" if row.overdue else "ok"
            detail = overdue_line(row) if row.overdue_after is not None else "no threshold set"
            woke = f"; woke {row.owner}" if row.room in found.woke else ""
            say(f"{row.room}: {state}: {detail}{woke}")
    return 1 if found.overdue else 0


def _policy(args: argparse.Namespace) -> int:
    from ackdeck.core.service.policy import parse_deliveries, parse_duration

    deck, ref = deck_and_room(args, session=False)
    update: dict[str, object] = {}
    if args.overdue is not None:
        update["overdue"] = parse_duration(args.overdue)
    if args.max_deliveries is not None:
        update["max_deliveries"] = parse_deliveries(args.max_deliveries)
    if args.owner is not None:
        owner = None if args.owner.lower() in ("off", "none") else check_name(args.owner)
        update["owner"] = owner
    if args.queue is not None:
        update["queue"] = args.queue == "on"
    pol = deck.policy(ref, update)
    if args.json:
        emit_json({"room": deck.label(ref), "path": ref.display, **pol.to_json()})
        return 0
    over = age_text(pol.overdue) if pol.overdue is not None else "off"
    most = pol.max_deliveries if pol.max_deliveries is not None else "off"
    kind = "; a work queue" if pol.queue else ""
    say(
        f"{ref.display}: overdue after {over}; max deliveries {most}; "
        f"owner {pol.owner or 'none'}{kind}"
    )
    return 0
