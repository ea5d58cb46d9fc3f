"""`ackdeck inspect ROOM | --session S | --run ID`: the state on disk, explained to a person.

Never on the per-turn path: a person runs it during an incident. It reads and explains; it
changes nothing (core/service/inspection.py)."""

from __future__ import annotations

import argparse

from ackdeck.core.cli._output import emit_json, say
from ackdeck.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inspect",
        help="explain the state ackdeck keeps for a room, a session or a run",
        description=(
            "Explain a room's state (which ledger slot is current and why, each session's "
            "receipt, old inodes still held, the policy, the audit's last entries), a "
            "session's wakes, notices and alerts, or a run's meta, monitors and what each "
            "session was shown. Reads only; a damaged file is named with what is wrong with "
            "it and the rest is still explained (exit 0). Exit 1 when the target has no state."
        ),
    )
    p.add_argument("room", nargs="?", metavar="ROOM", help="a file room's path")
    p.add_argument("--session", metavar="S", help="a session's wakes, notices and alerts")
    p.add_argument("--run", metavar="ID", help="a run's meta, monitors and shown state")
    p.add_argument("--json", action="store_true", help="the report as one JSON object")
    p.set_defaults(handler=_inspect)


def _inspect(args: argparse.Namespace) -> int:
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.service import inspection

    given = [x for x in (args.room, args.session, args.run) if x is not None]
    if len(given) != 1:
        raise UsageError("inspect: name one of ROOM, --session S or --run ID (see --help)")
    if args.room is not None:
        doc = inspection.inspect_room(args.room)
    elif args.session is not None:
        doc = inspection.inspect_session(resolve_home(args.home), args.session)
    else:
        doc = inspection.inspect_run(resolve_home(args.home), args.run)
    if args.json:
        emit_json(doc)
    else:
        say(inspection.render(doc).rstrip("\n"))
    return 0
