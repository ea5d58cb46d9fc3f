"""`ackdeck claim | done | extend | release`: a queue room's tasks (docs/how-to/work-queue.md).

A refused token (superseded by a later claim, or its line finished) is one line on stderr and
exit 4, so a script can tell "drop this work, it is someone else's now" from other errors."""

from __future__ import annotations

import argparse
import errno
from typing import TYPE_CHECKING

from ackdeck.core.base.text import display
from ackdeck.core.cli import SESSION_HELP, session_of
from ackdeck.core.cli._output import emit_json, json_text, say
from ackdeck.core.service.deck import Deck

if TYPE_CHECKING:
    from ackdeck.core.service.queue import Claimed

_LEASE_HELP = "the lease in seconds or with a unit (90s, 10m, 1h); default 10m, at most 2h"


def _lease(text: str) -> float:
    from ackdeck.core.errors import InvalidInput
    from ackdeck.core.service.policy import parse_duration

    value = parse_duration(text)
    if value is None:
        raise InvalidInput(f"invalid lease {text!r}: a duration above 0 (90s, 10m, 1h)")
    return value


def _room(p: argparse.ArgumentParser) -> None:
    p.add_argument("room", metavar="ROOM", help="path of a queue room (`room policy --queue on`)")
    p.add_argument(
        "--follow-symlinks", action="store_true", help="work on a symlinked room's target"
    )
    p.add_argument("--json", action="store_true")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "claim",
        help="take the oldest unclaimed line of a queue room under a lease; print it and its token",
    )
    _room(p)
    p.add_argument("--session", default=None, help=f"the claiming session ({SESSION_HELP})")
    p.add_argument("--lease", type=_lease, default=None, help=_LEASE_HELP)
    p.set_defaults(handler=_claim)

    _refused = "; refused (exit 4) if the token was superseded"
    p = sub.add_parser(
        "done", help="finish the claimed line: it leaves the queue (exactly once)" + _refused
    )
    _token(p, "done")
    p.add_argument(
        "--next",
        action="store_true",
        help="then claim the next line for --session (one round trip on a redis room)",
    )
    p.add_argument(
        "--session", default=None, help=f"with --next: the claiming session ({SESSION_HELP})"
    )
    p.add_argument("--lease", type=_lease, default=None, help=f"with --next: {_LEASE_HELP}")
    p = sub.add_parser("extend", help="renew the claim's lease" + _refused)
    _token(p, "extend")
    p.add_argument("--lease", type=_lease, default=None, help=_LEASE_HELP)
    p = sub.add_parser("release", help="give the line back: claimable again at once" + _refused)
    _token(p, "release")
    p.add_argument(
        "--dead",
        action="store_true",
        help="the owner's act: move the line to the dead-letter room instead (no agent can "
        "finish it; its holder is refused)",
    )


def _token(p: argparse.ArgumentParser, op: str) -> None:
    _room(p)
    p.add_argument("token", metavar="TOKEN", help="the token the claim printed")
    p.set_defaults(handler=_update, op=op)


def _deck(args: argparse.Namespace, *, session: bool) -> Deck:
    name = session_of(args.session) if session else None
    return Deck(args.home, name, [args.room], follow_symlinks=args.follow_symlinks, door="cli")


def _claim(args: argparse.Namespace) -> int:
    deck = _deck(args, session=True)

    def deliver(got: Claimed) -> None:
        # Called before the claim is committed: if the claimant cannot be given it, it is
        # rolled back (a claim written to a full disk counted as a delivery and, past
        # max_deliveries, sent a line nobody saw to the dead-letter room).
        _hand(json_text(got.to_json()) + "\n" if args.json else _claim_text(got))

    got = deck.claim(deck.rooms[0], lease=args.lease, deliver=deliver)
    if got.claimed:
        return 0
    if args.json:
        emit_json(got.to_json())
    else:
        say(f"{deck.label(deck.rooms[0])}: {got.message}")
    return 0


def _claim_text(got: Claimed) -> str:
    from ackdeck.core.base.text import safe

    assert got.line is not None
    return (
        safe(
            f"token {got.token} (delivery {got.deliveries}, lease {got.lease_seconds:g} s)\n",
            keep="\t\n",
        )
        # The task itself: escaped for a terminal as every line for people, never cut.
        + safe(display(got.line).rstrip("\n"), keep="\t\n", limit=None)
        + safe(f"\nnext: {got.next}\n", keep="\t\n")
    )


def _hand(text: str) -> None:
    """Write a claim to stdout whole, or raise NotDelivered (one line; nothing claimed)."""
    import sys

    from ackdeck.core.base.byteio import write_all
    from ackdeck.core.cli import ClosedStream
    from ackdeck.core.cli._output import _quiet_stdout
    from ackdeck.core.errors import NotDelivered

    try:
        if sys.stdout is None or isinstance(sys.stdout, ClosedStream):
            raise OSError(errno.EBADF, "stdout is closed")
        sys.stdout.flush()
        write_all(sys.stdout.fileno(), text.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        _quiet_stdout()
        why = "broken pipe" if isinstance(exc, BrokenPipeError) else (exc.strerror or str(exc))
        raise NotDelivered(
            f"could not write the claim to stdout ({why}); nothing was claimed: claim again"
        ) from None


def _update(args: argparse.Namespace) -> int:
    if getattr(args, "next", False):
        return _done_next(args)
    deck = _deck(args, session=False)
    if getattr(args, "dead", False):
        got = deck.dead_letter(deck.rooms[0], args.token)
    else:
        got = deck.task(deck.rooms[0], args.token, args.op, lease=getattr(args, "lease", None))
    if args.json:
        emit_json(got.to_json())
    else:
        say(f"{deck.label(deck.rooms[0])}: {got.message}; next: {got.next}")
    return 0


def _done_next(args: argparse.Namespace) -> int:
    deck = _deck(args, session=True)
    done = deck.done_next(deck.rooms[0], args.token, lease=args.lease)
    got = done.claimed_next
    assert got is not None
    if args.json:
        emit_json(done.to_json())
        return 0
    say(f"{deck.label(deck.rooms[0])}: {done.message}")
    if got.claimed:
        assert got.line is not None
        say(f"token {got.token} (delivery {got.deliveries}, lease {got.lease_seconds:g} s)")
        say(display(got.line).rstrip("\n"))
        say(f"next: {got.next}")
    else:
        say(f"{deck.label(deck.rooms[0])}: {got.message}")
    return 0
