"""`ackdeck room read`, `room ack` and `room status`: the room commands an agent's turn runs.

Apart from core/cli/rooms_cmd.py (the `room` group's argparse registration and the commands no
turn runs: wait, trace, overdue, policy) so that a turn's read, ack or status, parsed by
core/cli/_fast.py without argparse, loads none of their bytecode (tests/test_layering.py).
Both parsers hand these handlers the same arguments.
"""

from __future__ import annotations

import errno
import os
import sys

from ackdeck.core.base.byteio import write_all
from ackdeck.core.base.struct import encoded
from ackdeck.core.base.text import counted
from ackdeck.core.cli import ClosedStream, session_of
from ackdeck.core.cli._output import (
    JsonParts,
    emit_json,
    emit_text,
    for_terminal,
    json_text,
    report,
    say,
    stdout_fd,
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


def deck_and_room(args: argparse.Namespace, *, session: bool = True) -> tuple[Deck, RoomRef]:
    """The service for this command and its room: a path, or a redis://HOST[:PORT][/DB]/NAME
    URL (docs/how-to/redis-rooms.md). The session follows the one rule (session_of)."""
    name = session_of(getattr(args, "session", None)) if session else None
    deck = Deck(args.home, name, [args.room], follow_symlinks=args.follow_symlinks, door="cli")
    return deck, deck.rooms[0]


def page_size(value: str) -> int:
    """argparse `type=` for a size: bytes, or with a K, M or G suffix (powers of 1024)."""
    from ackdeck.core.service.rooms import check_page

    text = value.strip().upper().removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit():
        raise InvalidInput(f"--max-bytes {value!r}: give bytes, or a size like 512K or 4M")
    return check_page(int(digits) * scale)


def note(note: str | None) -> None:
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


def read(args: argparse.Namespace) -> int:
    deck, room = deck_and_room(args)
    why = _estimate()

    def deliver(result: rooms.Lines) -> None:
        if not args.json:
            _raw_lines(result)
        else:
            _json_lines(result if why is None else result.replace(proof_note=why))

    got = deck.read(room, deliver=deliver, max_bytes=args.max_bytes)
    if not args.json:
        from ackdeck.core.cli._words import waiting_sentence

        note(got.note)
        note(waiting_sentence(got))  # stdout holds only the lines' bytes
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


def ack(args: argparse.Namespace) -> int:
    deck, room = deck_and_room(args)
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


def status(args: argparse.Namespace) -> int:
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
        note(row.note)
        say("\n".join(status_lines(row)))
    return 0


def duration(value: str) -> float | None:
    from ackdeck.core.service.policy import parse_duration

    return parse_duration(value)
