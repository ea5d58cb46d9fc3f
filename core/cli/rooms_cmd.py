"""`ackdeck room …`: push, read, ack, status, wait."""

from __future__ import annotations

import argparse
import sys

from ..errors import ColdAck
from ..rooms import Room
from ._output import emit_json, text


def register(sub: argparse._SubParsersAction) -> None:
    room = sub.add_parser("room", help="read, ack, push and watch a room (notification file)")
    rsub = room.add_subparsers(dest="room_command", metavar="ACTION", required=True)

    p = rsub.add_parser("push", help="append one line under the shared lock")
    p.add_argument("room", metavar="ROOM", help="path of the notification file")
    p.add_argument("text", metavar="TEXT", help="the line (no newline, no NUL)")
    p.add_argument("--json", action="store_true", help='print {"offset": N}')
    p.set_defaults(handler=_push)

    p = rsub.add_parser("read", help="return every complete line and record a receipt")
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--session", required=True, help="reader session name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_read)

    p = rsub.add_parser("ack", help="remove exactly the lines this session read; keep the rest")
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--session", required=True)
    p.add_argument(
        "--all",
        action="store_true",
        help="without a prior read: ack every complete line and print them",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_ack)

    p = rsub.add_parser("status", help="pending, partial, acked and per-session counters")
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_status)

    p = rsub.add_parser(
        "wait", help="block until the session has unread lines (exit 0) or timeout (1)"
    )
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--session", required=True)
    p.add_argument("--timeout", type=float, default=None, help="seconds (default: forever)")
    p.set_defaults(handler=_wait)


def _push(args: argparse.Namespace) -> int:
    offset = Room(args.room).push(args.text)
    if args.json:
        emit_json({"offset": offset})
    return 0


def _read(args: argparse.Namespace) -> int:
    result = Room(args.room).read(args.session)
    if args.json:
        emit_json(
            {
                "lines": [text(x) for x in result.lines],
                "start": result.start,
                "end": result.end,
                "epoch": result.epoch,
            }
        )
    else:
        for line in result.lines:
            sys.stdout.write(text(line) + "\n")
    return 0


def _ack(args: argparse.Namespace) -> int:
    try:
        result = Room(args.room).ack(args.session, all=args.all)
    except ColdAck as exc:
        if args.json:
            emit_json({"mode": "refused", "acked": 0, "preserved": 0, "message": str(exc)})
        raise
    if args.json:
        out: dict[str, object] = {
            "mode": result.mode,
            "acked": result.acked,
            "preserved": result.preserved,
            "message": result.message,
        }
        if result.lines is not None:
            out["lines"] = [text(x) for x in result.lines]
        emit_json(out)
    else:
        if result.lines is not None:
            for line in result.lines:
                sys.stdout.write(text(line) + "\n")
        print(f"{result.mode}: {result.message}", file=sys.stderr)
    return 0


def _status(args: argparse.Namespace) -> int:
    st = Room(args.room).status()
    data = {
        "pending": st.pending,
        "partial_bytes": st.partial_bytes,
        "acked_total": st.acked_total,
        "preserved_total": st.preserved_total,
        "pushed_total": st.pushed_total,
        "epoch": st.epoch,
        "last_ack_at": st.last_ack_at,
        "exists": st.exists,
        "sessions": {
            k: {"in_flight": v.in_flight, "unread": v.unread} for k, v in st.sessions.items()
        },
    }
    if args.json:
        emit_json(data)
    else:
        print(
            f"{st.path}: {st.pending} pending, {st.partial_bytes} partial byte(s), "
            f"{st.acked_total} acked, {st.preserved_total} preserved, epoch {st.epoch}"
        )
        for name, s in st.sessions.items():
            print(f"  {name}: {s.in_flight} in flight, {s.unread} unread")
    return 0


def _wait(args: argparse.Namespace) -> int:
    return 0 if Room(args.room).wait(args.session, args.timeout) else 1
