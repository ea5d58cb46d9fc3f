"""`ackdeck room push`: append one line; with --wait-ack, wait for its ack.

Pollers run it for every line they deliver, so its plain form is a per-turn command twice
over. A producer's plain push to a file room (no --json, no --wait-ack, not on a terminal, a
path rather than a URL) prints nothing and only appends: it runs the file room's append
(core/service/push.py) without building the Deck, whose modules (pathlib, `re`, json and the
whole service) cost more than the push. Everything else (redis and Claude Code rooms, a
result to show, an ack to wait for, an option in the wrong company) goes through the Deck,
as every door's push does. Both parsers (core/cli/_fast.py and rooms_cmd's argparse) hand
the command to `push`.
"""

from __future__ import annotations

import os
import sys

from ackdeck.core.cli._output import on_a_terminal
from ackdeck.core.service.push import names_a_file_room, push_to_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse  # or core/cli/_fast.py's Args, which has the same attributes


def push(args: argparse.Namespace) -> int:
    if (
        args.json
        or args.wait_ack
        or args.session is not None
        or args.timeout is not None
        or not names_a_file_room(args.room)
        or on_a_terminal()  # a person: say where the line went
    ):
        return _through_the_deck(args)
    # The exact bytes of the argument (argv is decoded with surrogateescape).
    push_to_file(args.room, os.fsencode(args.text), follow_symlinks=args.follow_symlinks)
    return 0


def _through_the_deck(args: argparse.Namespace) -> int:
    from ackdeck.core.base.text import safe
    from ackdeck.core.base.timeouts import EXIT_TIMEOUT
    from ackdeck.core.cli._output import emit_json, emit_text, report, say
    from ackdeck.core.errors import AckdeckError, InvalidInput
    from ackdeck.core.service.deck import Deck
    from ackdeck.core.service.rooms import REMOVED_UNACKED

    deck = Deck(args.home, None, [args.room], follow_symlinks=args.follow_symlinks, door="cli")
    room = deck.rooms[0]
    # The exact bytes of the argument (argv is decoded with surrogateescape).
    pushed = deck.push(room, os.fsencode(args.text))
    if not args.wait_ack:
        if args.session is not None or args.timeout is not None:
            raise InvalidInput("--session and --timeout go with --wait-ack")
        done = f"pushed 1 line to {args.room}"
        if args.json:
            report(done, lambda: emit_json(pushed.to_json()))
        elif on_a_terminal():
            # A person typed it: say where the line went. A script's pipe or file stays quiet.
            from ackdeck.core.cli._words import pushed_sentence

            report(done, lambda: emit_text(safe(pushed_sentence(pushed)) + "\n"))
        return 0
    done = f"pushed 1 line to {args.room} at offset {pushed.offset}"
    try:
        got = deck.wait_ack(room, pushed, session=args.session, timeout=args.timeout)
    except (AckdeckError, OSError):
        # The push happened: say so before the error of the wait (a retry would push twice).
        say(f"ackdeck: {done}; waiting for its ack failed:", file=sys.stderr)
        raise
    if args.json:
        report(done, lambda: emit_json(got.to_json()))
    if got.timed_out:
        say(f"ackdeck: {done}; not acked within {args.timeout:g} s", file=sys.stderr)
        return EXIT_TIMEOUT
    if got.dead_room is not None:
        say(f"ackdeck: {done}; moved to the dead-letter room {got.dead_room}", file=sys.stderr)
        return 1
    if got.removed:
        say(f"ackdeck: {done}; {REMOVED_UNACKED}", file=sys.stderr)
        return 1
    if args.session is not None and got.acked_by != args.session:
        say(f"ackdeck: {done}; acked by {got.acked_by}, not {args.session}", file=sys.stderr)
        return 1
    if not args.json:
        by = got.acked_by or "an unknown session"
        when = "" if got.acked_at is None else f" at {_when(got.acked_at)}"
        report(done, lambda: say(f"offset {got.offset} acked by {by}{when}"))
    return 0


def _when(at: float) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
