"""`ackdeck room …`: push, read, ack, status, wait."""

from __future__ import annotations

import errno
import os
import sys

from ackdeck.core.base.byteio import write_all
from ackdeck.core.base.names import check_name
from ackdeck.core.base.struct import encoded
from ackdeck.core.base.text import age_text, counted
from ackdeck.core.cli import SESSION_HELP, ClosedStream, session_of
from ackdeck.core.cli._output import (
    JsonParts,
    emit_json,
    emit_text,
    for_terminal,
    json_text,
    report,
    say,
    stdout_fd,
    timeout_arg,
)
from ackdeck.core.errors import AckdeckError, InvalidInput
from ackdeck.core.service import rooms
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.rooms import not_delivered

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ackdeck.core.service.roomref import RoomRef

_SESSION_HELP = f"reader session ({SESSION_HELP})"
_FOLLOW_HELP = (
    "work on a symlinked room's target (refused by default: a link could point the ack at any file)"
)


def _deck(args: argparse.Namespace, *, session: bool = True) -> tuple[Deck, RoomRef]:
    """The service for this command and its room: a path, or a redis://HOST[:PORT][/DB]/NAME
    URL (docs/how-to/redis-rooms.md). The session follows the one rule (session_of)."""
    name = session_of(getattr(args, "session", None)) if session else None
    deck = Deck(args.home, name, [args.room], follow_symlinks=args.follow_symlinks, door="cli")
    return deck, deck.rooms[0]


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
    p.set_defaults(handler=_read)

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
    p.set_defaults(handler=_ack)

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
    p.set_defaults(handler=_status)

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
        type=_size,
        default=None,
        help=f"{prefix}at most this many bytes of lines (512K, 4M; default {PAGE_BYTES >> 20}M); "
        "a longer line comes alone and whole, and what is left is counted as waiting",
    )


def _size(value: str) -> int:
    """argparse `type=` for a size: bytes, or with a K, M or G suffix (powers of 1024)."""
    from ackdeck.core.service.rooms import check_page

    text = value.strip().upper().removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit():
        raise InvalidInput(f"--max-bytes {value!r}: give bytes, or a size like 512K or 4M")
    return check_page(int(digits) * scale)


def _note(note: str | None) -> None:
    """The missing-room note, one line on stderr (text mode; JSON carries it as `note`)."""
    if note is not None:
        say(note, file=sys.stderr, flush=True)


def _estimate() -> str | None:
    """Why a CLI read or ack is an estimate, when it is run inside Claude Code (from the
    agent's shell): its Bash tool may cut what the model is shown, and the CLI cannot name its
    call in the transcript. None elsewhere (the service's words: no transcript known)."""
    return rooms.CLI_IN_CLAUDE if os.environ.get("CLAUDE_CODE_SESSION_ID") else None


def _shell_ack_proof(
    deck: Deck, room: RoomRef
) -> tuple[str | None, rooms.Shown | None, str | None]:
    """(reader, shown, why an estimate) of a `room ack` (not --all) run in Claude Code's Bash
    tool after the agent's MCP read (room_list_new): that read's receipt is bound to the
    server's reader (`mcp:READ_ID`), and the CLI may ack it for the transcript's proof of
    what the model was shown (docs/concepts/proof.md). Anything else is as before: a CLI
    read is an estimate; an MCP read with no proof is refused (reader None), saying why."""
    why = _estimate()
    if why is None:
        return None, None, None
    reader = deck.last_reader(room)
    if reader is None or not reader.startswith("mcp:"):
        return None, None, why
    # Per turn only in this case: the transcript reader is imported where it runs.
    from ackdeck.core.clients.claude_code import transcript

    where = transcript.locate(os.environ)
    if where is None:
        return None, None, rooms.SHELL_NO_TRANSCRIPT
    try:
        seen = transcript.find_seen(where, tool_use_id=None, read_id=reader[4:], from_shell=True)
    except transcript.NoProof as exc:
        return None, None, f"{exc}: the MCP read is not acked from the shell without it"
    evidence = f"Claude Code transcript {where.name}"
    return reader, rooms.Shown(transcript.shown_lines(seen.text), evidence), None


def _read(args: argparse.Namespace) -> int:
    deck, room = _deck(args)
    why = _estimate()

    def deliver(result: rooms.Lines) -> None:
        if not args.json:
            _raw_lines(result)
        else:
            _json_lines(result if why is None else result.replace(proof_note=why))

    got = deck.read(room, deliver=deliver, max_bytes=args.max_bytes)
    if not args.json:
        from ackdeck.core.cli._words import waiting_sentence

        _note(got.note)
        _note(waiting_sentence(got))  # stdout holds only the lines' bytes
    return 0


def _raw_lines(result: rooms.Lines) -> None:
    """Text mode: the raw bytes of each line, exactly as stored (escaped for a terminal)."""
    _deliver(for_terminal(result.data, stdout_fd()))


def _json_lines(result: rooms.Lines) -> None:
    """JSON mode: lines decoded with replacement, and which of them were not valid UTF-8."""
    doc = json_text(result.to_json()) + "\n"
    _deliver(doc.encode("utf-8", "surrogateescape"))


def _deliver(data: bytes) -> None:
    """Write and flush before the receipt is stored (Room.read commits after this returns);
    a failed write raises, so nothing is recorded. Bytes a pipe buffer accepted but the
    reader never read (`| head`) cannot be told apart from read ones (see
    docs/concepts/exact-acks.md)."""
    if sys.stdout is None or isinstance(sys.stdout, ClosedStream):
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


# Ack-all with --json writes these first, with the lines (the bulk a closed pipe or a full
# disk would stop), and the rest of the object once the ack is done.
_LINES_FIRST = ("room", "path", "lines")


def _ack(args: argparse.Namespace) -> int:
    deck, room = _deck(args)
    head_written: list[bool] = []
    parts = JsonParts(rooms.Acked.SHAPE)

    def json_lines_first(result: rooms.Lines) -> None:
        """`ack --all --json`: the object's first part, the lines; the counts follow once
        the ack is done."""
        head = parts.part({k: encoded(getattr(result, k)) for k in _LINES_FIRST})
        _deliver(head.encode("utf-8", "surrogateescape"))
        head_written.append(True)

    # Ack-all: the lines go to stdout first; only what was written is removed.
    deliver = (json_lines_first if args.json else _raw_lines) if args.all else None
    try:
        if args.max_bytes is not None and not args.all:
            raise InvalidInput("--max-bytes goes with --all (an ack removes what was read)")
        reader, shown, why = (None, None, _estimate()) if args.all else _shell_ack_proof(deck, room)
        result = deck.ack(
            room,
            all=args.all,
            reader=reader,
            deliver=deliver,
            max_bytes=args.max_bytes,
            shown=shown,
            estimate=why,
        )
    except (AckdeckError, OSError):
        if head_written:
            # The ack failed after its lines were written (nothing was removed): close that
            # object, so the error shape main prints next is a second, whole JSON document.
            try:
                emit_text(parts.abort())
            except OSError:
                pass  # the ack's own error follows; a pipe closed meanwhile cannot take it
        raise
    done = f"acked {counted(result.acked, 'line')} of {args.room}"
    if head_written:
        rest = {k: v for k, v in result.to_json().items() if k not in _LINES_FIRST}
        report(done, lambda: emit_text(parts.part(rest) + parts.end()))
    elif args.json:
        report(done, lambda: emit_json(result.to_json()))
    if result.refusal is not None:
        # Reported as the error it is (exit 3), after the JSON that carries its counts.
        say(
            f"ackdeck: error: {result.refusal} (ackdeck room read, then ackdeck room ack; "
            "or ackdeck room ack --all)",
            file=sys.stderr,
        )
        return result.refusal.exit_code
    if not args.json:
        from ackdeck.core.cli._words import ack_sentence

        report(done, lambda: say(ack_sentence(result), file=sys.stderr, flush=True))
    return 0


def _status(args: argparse.Namespace) -> int:
    """Python's cyclic garbage collector is paused while a status is taken and reported.

    A status builds some 30 objects per room (references, rooms, results, their JSON) that all
    live until the report is printed; the collector would walk all of them again each time a
    quarter more were made (7% of `room status` over 3,000 rooms) and find nothing: none of
    them is garbage before the report. Reference counting still frees everything else as
    usual, and the collector runs again afterwards (also when this was called in-process).
    A try/finally rather than a context manager: contextlib is a module a turn need not load
    (tests/test_layering.py)."""
    import gc

    if not gc.isenabled():
        return _status_report(args)
    gc.disable()
    try:
        return _status_report(args)
    finally:
        gc.enable()


def _status_report(args: argparse.Namespace) -> int:
    session = args.session or os.environ.get("ACKDECK_SESSION") or None
    # The session is checked as every other command does: `../x` is no session.
    deck = Deck(args.home, session, args.room, follow_symlinks=args.follow_symlinks, door="cli")
    found = deck.status(overdue=args.overdue)
    if args.json:
        emit_json(found.to_json())
        return 0
    from ackdeck.core.cli._words import status_lines

    for row in found.rooms:
        _note(row.note)
        say("\n".join(status_lines(row)))
    return 0


def _wait(args: argparse.Namespace) -> int:
    deck, room = _deck(args)
    _note(deck.absent(room))  # then wait for its first line, as for any empty room
    if deck.wait(room, args.timeout):
        return 0
    from ackdeck.core.base.timeouts import EXIT_TIMEOUT  # math: not for a turn's read

    return EXIT_TIMEOUT


def _trace(args: argparse.Namespace) -> int:
    deck, ref = _deck(args, session=False)
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
        type=_duration,
        default=None,
        help=f"{what}, over each room's own (`room policy --overdue`)",
    )


def _duration(value: str) -> float | None:
    from ackdeck.core.service.policy import parse_duration

    return parse_duration(value)


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

    deck, ref = _deck(args, session=False)
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
