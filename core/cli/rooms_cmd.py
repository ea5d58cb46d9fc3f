"""`ackdeck room …`: push, read, ack, status, wait."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys

from core.base.byteio import write_all
from core.base.timeouts import EXIT_TIMEOUT
from core.cli._output import emit_json, text, timeout_arg
from core.errors import ColdAck, InvalidInput
from core.inbox.room_backend import open_room
from core.inbox.room_errors import not_delivered

TYPE_CHECKING = False
if TYPE_CHECKING:
    from core.inbox.room_backend import ReadView, RoomBackend

_SESSION_HELP = "reader session name (default: env ACKDECK_SESSION)"
_FOLLOW_HELP = "work on a symlinked room's target (refused by default: see README)"


def _room(args: argparse.Namespace) -> RoomBackend:
    # A path, or a redis://HOST[:PORT][/DB]/NAME URL (see README "Rooms across hosts").
    return open_room(args.room, follow_symlinks=args.follow_symlinks)


def _session(args: argparse.Namespace) -> str:
    session: str | None = args.session or os.environ.get("ACKDECK_SESSION")
    if not session:
        raise InvalidInput("no session: pass --session NAME or set ACKDECK_SESSION")
    return session


def register(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--json", action="store_true", help='print {"offset": N}')
    p.set_defaults(handler=_push)

    p = rsub.add_parser("read", help="return every complete line and record a receipt")
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("--session", default=None, help=_SESSION_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_read)

    p = rsub.add_parser("ack", help="remove exactly the lines this session read; keep the rest")
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("--session", default=None, help=_SESSION_HELP)
    p.add_argument(
        "--all",
        action="store_true",
        help="without a prior read: ack every complete line and print them",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_ack)

    p = rsub.add_parser("status", help="pending, partial, acked and per-session counters")
    p.add_argument("room", metavar="ROOM")
    p.add_argument("--follow-symlinks", action="store_true", help=_FOLLOW_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_status)

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


def _push(args: argparse.Namespace) -> int:
    # The exact bytes of the argument (argv is decoded with surrogateescape).
    offset = _room(args).push(os.fsencode(args.text))
    if args.json:
        emit_json({"offset": offset})
    return 0


def _read(args: argparse.Namespace) -> int:
    _room(args).read(_session(args), deliver=_json_lines if args.json else _raw_lines)
    return 0


def _raw_lines(result: ReadView) -> None:
    """Text mode: the raw bytes of each line, exactly as stored."""
    _deliver(result.data)


def _json_lines(result: ReadView) -> None:
    """JSON mode: lines decoded with replacement, and which of them were not valid UTF-8."""
    lines, invalid = [], []
    for i, raw in enumerate(result.lines):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            lines.append(text(raw))
            invalid.append(i)
    out: dict[str, object] = {
        "lines": lines,
        "start": result.start,
        "end": result.end,
        "epoch": result.epoch,
    }
    if invalid:
        out["invalid_utf8"] = invalid
    _deliver((json.dumps(out, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape"))


def _deliver(data: bytes) -> None:
    """Write and flush before the receipt is stored (Room.read commits after this returns);
    a failed write raises, so nothing is recorded. Bytes a pipe buffer accepted but the
    reader never read (`| head`) cannot be told apart from read ones: see README."""
    if sys.stdout is None:
        # Started with stdout closed (`>&-`): Python then has no sys.stdout at all.
        raise not_delivered("stdout", OSError(errno.EBADF, "stdout is closed"))
    try:
        sys.stdout.flush()
        # os.write on the descriptor, not sys.stdout.buffer.write: a BufferedWriter that
        # hits EPIPE after a partial write returns the partial count and raises nothing.
        write_all(sys.stdout.fileno(), data)
    except OSError as exc:
        # Point stdout at /dev/null so the interpreter's final flush cannot print a second
        # error about the same broken pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        raise not_delivered("stdout", exc) from None


def _ack(args: argparse.Namespace) -> int:
    room, session = _room(args), _session(args)
    try:
        if args.all and not args.json:
            # Text mode: the lines go to stdout first; only what was written is removed.
            result = room.ack(session, all=True, deliver=_raw_lines)
        else:
            result = room.ack(session, all=args.all)
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
        print(f"{result.mode}: {result.message}", file=sys.stderr)
    return 0


def _status(args: argparse.Namespace) -> int:
    st = _room(args).status()
    data = {
        "pending": st.pending,
        "partial_bytes": st.partial_bytes,
        "acked_total": st.acked_total,
        "preserved_total": st.preserved_total,
        "pushed_total": st.pushed_total,
        "epoch": st.epoch,
        "last_ack_at": st.last_ack_at,
        "exists": st.exists,
        "late_total": st.late_total,
        "held_open": st.held_open,
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
        if st.late_total or st.held_open:
            print(
                f"  late writers: {st.late_total} line(s) carried in from replaced files; "
                f"{st.held_open} replaced file(s) still held open by a writer"
            )
        for name, s in st.sessions.items():
            print(f"  {name}: {s.in_flight} in flight, {s.unread} unread")
    return 0


def _wait(args: argparse.Namespace) -> int:
    return 0 if _room(args).wait(_session(args), args.timeout) else EXIT_TIMEOUT
