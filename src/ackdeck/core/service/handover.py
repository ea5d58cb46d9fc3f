"""Handing a stalled session's lines to another session (`ackdeck handover`, the dashboard's
`h` on an agent; docs/how-to/handover.md).

Which lines: every complete line of the source session's room that it has not acked, its
unread lines and, since an ack removes a prefix and a read that was never acked proves
nothing was done, the lines it read but did not ack (counted apart as `in_flight`). They are
taken by a read of their own (session `handover`, bound to the hand-over's id as its reader),
so lines arriving meanwhile are kept in the source room: the ack that ends the hand-over
removes exactly what that read returned (core/rooms/file/ack.py).

Exactly once, through a journal (`handovers/SESSION.json`, core/base/locations.py) written
before each step and updated after it:
  chosen   the lines (their bytes), the target room and where its end was: nothing pushed
           yet, or a push whose reply was lost;
  pushed   the lines are in the target room at `to_start`: the source room still holds them;
  acked    they left the source room; only the end is not recorded.
A re-run after a crash at any step finishes from the step recorded: a push whose reply was
lost is found in the target room (the exact bytes at a line start after the recorded end)
and not made again. So each line is in one room or both, never in neither; when the re-run
cannot tell (the target acked past the recorded end since), it pushes again and says that
the target may see those lines twice.

Fault points (core/base/faults.py) for the kill -9 tests: handover-after-journal,
handover-after-push (a push whose reply never arrived), handover-after-ack and
handover-before-done.

The decisions (which room, what a found journal means, what a search of the target room
proves) are pure functions below; the rest applies them through the rooms' own push, read,
ack and trace.
"""

from __future__ import annotations

import base64
import os
import time
from typing import TYPE_CHECKING

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.faults import pause
from ackdeck.core.base.locks import locked
from ackdeck.core.base.names import check_name
from ackdeck.core.base.statefile import load_record, store_record
from ackdeck.core.base.struct import Struct, derived
from ackdeck.core.base.text import counted
from ackdeck.core.errors import AckdeckError, ColdAck, InvalidInput

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from ackdeck.core.rooms.file.room import Room

# The session whose read takes the lines out of the source room (its receipt is bound to the
# hand-over's id): its own name, so the source session's receipt and lines arriving later are
# left alone, and `room trace` says who read them.
HANDOVER_SESSION = "handover"
# How long a hand-over waits for another one of the same session to finish.
LOCK_WAIT_S = 30.0

STEPS = {
    "chosen": "the lines were chosen; their push was not recorded",
    "pushed": "the lines were pushed to the target; not yet acked in the source room",
    "acked": "the lines were pushed and acked; only the end was not recorded",
}


class Journal(Struct, kw_only=True):
    """`handovers/SESSION.json`: one hand-over of SESSION's lines in progress."""

    id: str  # the reader the hand-over's read in the source room is bound to
    source: str
    target: str
    from_room: str
    to_room: str
    state: str  # chosen | pushed | acked (STEPS)
    at: float
    epoch: int  # the source room's epoch at the read
    start: int  # the lines' logical range in the source room
    end: int
    lines: int
    in_flight: int  # of them, lines the source session had read but not acked
    sha256: str
    # The lines' bytes, base64: a record holds text, and the lines are any bytes.
    block: str
    to_epoch: int  # the target room's epoch and end before the push: it lands after that
    to_since: int
    to_start: int | None = None  # where the push landed, once known

    def data(self) -> bytes:
        return base64.b64decode(self.block)


class Handover(Struct):
    """What a hand-over did (CLI `--json`, the dashboard's notice)."""

    source: str
    target: str
    from_room: str
    to_room: str
    moved: int  # lines now in the target room that left the source room
    in_flight: int  # of them, lines the source session had read but not acked
    both: int  # lines now in both rooms: a step could not finish (see notes)
    # An unfinished hand-over of the source session was found and finished first: the step
    # it had reached (chosen, pushed, acked), else None.
    resumed: str | None
    notes: list[str]

    @derived
    def summary(self) -> str:
        moved = (
            f"handed over {counted(self.moved, 'line')} from {self.source} ({self.from_room}) "
            f"to {self.target} ({self.to_room})"
        )
        if self.in_flight:
            moved += f", {self.in_flight} of them read but not acked by {self.source}"
        if self.both:
            moved += f"; {counted(self.both, 'line')} in both rooms (see the notes)"
        return moved


# ----- pure decisions -----------------------------------------------------------------------
def choose_room(session: str, rooms: Sequence[str], wanted: str | None, flag: str) -> str:
    """The room of `session` the hand-over uses: `wanted` (its path, as given or absolute, or
    a basename only one of its rooms has), else its only room. One line naming its rooms
    otherwise."""
    listed = ", ".join(rooms) if rooms else "none known"
    if wanted is not None:
        full = os.path.abspath(os.path.expanduser(wanted)) if "://" not in wanted else wanted
        named = [r for r in rooms if r in (wanted, full)] or [
            r for r in rooms if os.path.basename(r) == wanted
        ]
        if len(named) == 1:
            return named[0]
        raise InvalidInput(
            f"{flag} {wanted} is not one room of session {session} (its rooms: {listed})"
        )
    if len(rooms) == 1:
        return rooms[0]
    if not rooms:
        raise InvalidInput(
            f"session {session} has no room ackdeck knows of (its hooks or MCP server name "
            f"them); nothing to hand over"
        )
    raise InvalidInput(
        f"session {session} has {len(rooms)} rooms: {listed}; choose one with {flag}"
    )


def _check_rooms(
    source: str, target: str, src_spec: str, dst_spec: str, target_rooms: Sequence[str]
) -> None:
    """Refuse, before anything is read or pushed, what would make the hand-over move lines
    nowhere or stop half-way: one file under two names (a symlinked directory, a hard
    link), a source room the final ack would refuse (hard-linked), a target that is a
    directory, or a target room that does not exist for a session that has rooms (a typo
    would create a room nobody reads; a fresh session's inbox may not exist yet)."""
    if src_spec == dst_spec:
        raise InvalidInput(f"{source} and {target} share the room {src_spec}: nothing to move")
    if "://" in src_spec or "://" in dst_spec:
        return  # refused as a room that is not a file (_open)
    if os.path.isdir(dst_spec):
        raise InvalidInput(f"--to-room {dst_spec} is a directory, not a room")
    try:
        same = os.path.samefile(src_spec, dst_spec)
    except OSError:
        same = False  # one of them does not exist (yet): not the same file
    if same:
        raise InvalidInput(
            f"{source} and {target} share the room {src_spec} (as {dst_spec}): nothing to move"
        )
    links = _other_names(src_spec)
    if links > 1:
        raise InvalidInput(
            f"{src_spec} has {links} hard links: its lines could not be acked after the push; "
            "remove the other links first"
        )
    if target_rooms and dst_spec not in target_rooms and not os.path.exists(dst_spec):
        raise InvalidInput(
            f"--to-room {dst_spec} does not exist and is not a room of {target} (its rooms: "
            f"{', '.join(target_rooms)})"
        )


def _other_names(spec: str) -> int:
    """The names the room file at `spec` has, not counting ackdeck's own link in its sidecar
    (an ack killed before its rename, a hand-over's own included, leaves one; the re-run that
    finishes that hand-over must not be refused for it)."""
    from pathlib import Path

    from ackdeck.core.base.locations import sidecar
    from ackdeck.core.rooms.file.prev_inodes import own_links

    try:
        st = os.stat(spec)
    except OSError:
        return 1
    return st.st_nlink - own_links(sidecar(Path(os.path.realpath(spec))), st)


def target_room(rooms: Sequence[str], wanted: str | None) -> str | None:
    """The target's room the owner named with --to-room: one of its rooms (by path or
    basename, as for choose_room), else the room as given (any room: the owner gives the
    work to the session through it). None when not named."""
    if wanted is None:
        return None
    if "://" in wanted:
        return wanted
    full = os.path.abspath(os.path.expanduser(wanted))
    named = [r for r in rooms if r in (wanted, full)] or [
        r for r in rooms if os.path.basename(r) == wanted
    ]
    return named[0] if len(named) == 1 else full


def push_decision(found: int | None, certain: bool) -> str:
    """After a crash between recording the lines and recording their push: "landed" (the
    push is in the target room: never again), "push" (it is certainly not there), or
    "unsure" (the target room no longer reaches back to where it would be: push again, and
    say the target may see the lines twice rather than risk them being nowhere)."""
    if found is not None:
        return "landed"
    return "push" if certain else "unsure"


def within(start: int, end: int, cutoff: int) -> int | None:
    """How many bytes of a page read at logical [start, end) a hand-over takes, so that no
    line that arrived after its first look (the room then ended at `cutoff`) moves: the whole
    page when it ends by then, else the bytes before `cutoff` (None: none of them)."""
    if end <= cutoff:
        return end - start
    return cutoff - start if cutoff > start else None


def handover_text(source: str, target: str) -> str:
    return f"handed over from {source} to {target}"


# ----- the journal ----------------------------------------------------------------------------
def load_journal(home: Path, session: str) -> Journal | None:
    return load_record(locations.handover_journal(home, session), Journal)


def _store(home: Path, journal: Journal) -> None:
    # fsync: the journal is what tells a re-run that a push already happened.
    store_record(locations.handover_journal(home, journal.source), journal, fsync=True)


# ----- the operation --------------------------------------------------------------------------
def hand_over(
    home: Path,
    source: str,
    target: str,
    *,
    from_room: str | None = None,
    to_room: str | None = None,
    clock: Callable[[], float] = time.time,
    door: str = "api",
) -> Handover:
    """Give `target` the lines `source` has not acked in its room (see the module), exactly
    once. An unfinished hand-over of `source` found in the journal is finished first and
    reported (`resumed`, notes)."""
    from ackdeck.core.presence import history

    check_name(source)
    check_name(target)
    known = set(history.sessions(home))
    source, target = _here(source, known), _here(target, known)
    if source == target:
        raise InvalidInput(f"cannot hand {source}'s lines over to itself: name another session")
    # The target may be a session that has not started yet, or not read yet, when the owner
    # names its room: the lines wait there for it. The source must be known (its reads say
    # which lines it has not acked).
    for s in (source, target) if to_room is None else (source,):
        if s not in known:
            hint = " (or name its room with --to-room)" if s == target else ""
            raise InvalidInput(
                f"unknown session {s}: `ackdeck agents` lists the sessions ackdeck has seen{hint}"
            )
    src_spec = choose_room(source, history.load(home, source).rooms, from_room, "--from-room")
    target_rooms = history.load(home, target).rooms if target in known else []
    dst_spec = target_room(target_rooms, to_room)
    if dst_spec is None:
        dst_spec = choose_room(target, target_rooms, None, "--to-room")
    _check_rooms(source, target, src_spec, dst_spec, target_rooms)
    os.makedirs(locations.handovers_dir(home), mode=0o700, exist_ok=True)
    # One hand-over of a session at a time (its journal), and one out of a room at a time,
    # whichever session shares it: a second would read the same lines before the first acks
    # them and give them to its own target as well. Always in this order.
    with (
        locked(locations.handover_lock(home, source), timeout=LOCK_WAIT_S),
        locked(locations.handover_room_lock(home, src_spec), timeout=LOCK_WAIT_S),
    ):
        _refuse_unfinished(home, source, src_spec)
        src, dst = _open(src_spec, clock, door, home), _open(dst_spec, clock, door, home)
        try:
            if src.policy().queue:
                # Its lines leave only by `done` (its ack is refused): the push would have
                # put every line in the target too, each then delivered twice.
                raise InvalidInput(
                    f"{src_spec} is a work queue: its lines go to one claimer at a time; "
                    "give a claimed line back with `ackdeck release ROOM TOKEN` (nothing moved)"
                )
            return _run(home, source, target, src, dst, src_spec, dst_spec, clock)
        finally:
            src.close()
            dst.close()


def _refuse_unfinished(home: Path, source: str, src_spec: str) -> None:
    """Refuse while another session's hand-over out of the same room is unfinished (killed):
    its lines are still in the room, already pushed to its target, and this one would give
    them to a second target. Its own re-run finishes it."""
    try:
        names = sorted(os.listdir(locations.handovers_dir(home)))
    except OSError:
        return
    for name in names:
        if not name.endswith(".json") or name == f"{source}.json":
            continue
        try:
            other = load_journal(home, name[: -len(".json")])
        except AckdeckError:
            continue  # not a journal, or a damaged one: its own hand-over names it
        if other is not None and other.from_room == src_spec and other.source != source:
            raise InvalidInput(
                f"an unfinished hand-over of {other.source}'s lines from {src_spec} to "
                f"{other.target} holds lines of this room; finish it first: ackdeck handover "
                f"--from {other.source} --to {other.target}"
            )


def _here(session: str, known: set[str]) -> str:
    """`NAME@HOST` as a session of this host: NAME when HOST is this host (as `ackdeck run
    --session` takes it: a fleet's listings name sessions so). Another host's session is one
    line: its rooms and reads are on that host, and so is its hand-over."""
    if session in known:
        return session
    name, at, host = session.rpartition("@")
    if not (at and name and host):
        return session
    from ackdeck.core.service.fleet.settings import this_host

    here = this_host()
    if host == here:
        return name
    raise InvalidInput(
        f"session {session} is on host {host}, not this host ({here}): run the hand-over there"
    )


def _open(spec: str, clock: Callable[[], float], door: str, home: Path) -> Room:
    from ackdeck.core.rooms.file.room import Room
    from ackdeck.core.service.refs import parse_room

    room = parse_room(spec).open(clock=clock, door=door, home=home)
    if not isinstance(room, Room):
        room.close()
        raise InvalidInput(f"handover works on file rooms; {spec} is not one")
    return room


def _run(
    home: Path,
    source: str,
    target: str,
    src: Room,
    dst: Room,
    src_spec: str,
    dst_spec: str,
    clock: Callable[[], float],
) -> Handover:
    notes: list[str] = []
    moved = in_flight = both = 0
    resumed = None
    mine: set[str] = set()  # the reader ids of this run's reads (forgotten at its end)
    found = load_journal(home, source)
    if found is not None:
        mine.add(found.id)
        resumed = found.state
        notes.append(
            f"found an unfinished hand-over of {counted(found.lines, 'line')} from "
            f"{found.source} to {found.target} ({STEPS.get(found.state, found.state)}); "
            "finished it first"
        )
        if (found.from_room, found.to_room) == (src_spec, dst_spec):
            f_src, f_dst = src, dst
        else:
            f_src, f_dst = (
                _open(found.from_room, clock, src.door, home),
                _open(found.to_room, clock, src.door, home),
            )
        try:
            gone = _finish(home, found, f_src, f_dst, notes, mine, fresh=False)
            f_src.forget(HANDOVER_SESSION, mine)
        finally:
            if f_src is not src:
                f_src.close()
                f_dst.close()
        if (found.from_room, found.to_room) == (src_spec, dst_spec):
            moved, in_flight = moved + gone, in_flight + found.in_flight
            both += found.lines - gone
    # Lines that arrive in the source room during the hand-over stay there: it moves what the
    # room held at its first look (its end then), page by page, never more.
    first = src.status()
    cutoff = (first.epoch, first.pushed_total)
    while True:
        page = _choose(home, source, target, src, dst, src_spec, dst_spec, cutoff, clock, mine)
        if page is None:
            break
        journal, more = page
        gone = _finish(home, journal, src, dst, notes, mine, fresh=True)
        moved, in_flight, both = (
            moved + gone,
            in_flight + journal.in_flight,
            both + journal.lines - gone,
        )
        if not more or gone < journal.lines:
            break
    # The hand-over's reader will not read again. Left as one, it would count every later
    # line as unread (late, in the Rooms table and alerts) by "handover", and the lines its
    # last look read past the cutoff as in flight. Its reads remove nothing: dropping their
    # receipts only makes them unusable for an ack.
    src.forget(HANDOVER_SESSION, mine)
    return Handover(source, target, src_spec, dst_spec, moved, in_flight, both, resumed, notes)


def _choose(
    home: Path,
    source: str,
    target: str,
    src: Room,
    dst: Room,
    src_spec: str,
    dst_spec: str,
    cutoff: tuple[int, int],
    clock: Callable[[], float],
    mine: set[str],
) -> tuple[Journal, bool] | None:
    """Read the next page of the source room for the hand-over and record it (step
    "chosen"); None when the room holds no complete line from before `cutoff` (its epoch and
    end at the first look). Also whether more lines waited."""
    from ackdeck.core.rooms.file import readlog
    from ackdeck.core.rooms.file.ledger import sha256

    held = src.status().counts_of(source)[0]
    rid = readlog.new_id()
    mine.add(rid)
    got = src.read(HANDOVER_SESSION, reader=rid)
    if not got.lines:
        return None
    assert isinstance(got.start, int) and isinstance(got.end, int)  # a file room
    more = got.waiting > 0
    if got.epoch == cutoff[0]:
        take = within(got.start, got.end, cutoff[1])
        if take is None:
            return None
        if take < got.end - got.start:
            # Read again, exactly the lines from before the cutoff, as another reader: the
            # room keeps the longer receipt of the same reader (it takes a shorter one for
            # an older read), and the ack must remove only these lines.
            rid = readlog.new_id()
            mine.add(rid)
            got = src.read(HANDOVER_SESSION, reader=rid, max_bytes=take)
            assert isinstance(got.start, int) and isinstance(got.end, int)
            if not got.lines or got.end > cutoff[1]:
                return None
            more = False
    start, end = got.start, got.end
    assert isinstance(start, int) and isinstance(end, int)  # a file room's offsets
    there = dst.status()
    journal = Journal(
        id=rid,
        source=source,
        target=target,
        from_room=src_spec,
        to_room=dst_spec,
        state="chosen",
        at=clock(),
        epoch=got.epoch,
        start=start,
        end=end,
        lines=len(got.lines),
        in_flight=min(held, len(got.lines)),
        sha256=sha256(got.data),
        block=base64.b64encode(got.data).decode("ascii"),
        to_epoch=there.epoch,
        to_since=there.pushed_total,
    )
    _store(home, journal)
    pause("handover-after-journal")
    return journal, more


def _finish(
    home: Path,
    journal: Journal,
    src: Room,
    dst: Room,
    notes: list[str],
    mine: set[str],
    *,
    fresh: bool,
) -> int:
    """Take `journal` from the step it records to the end; how many of its lines left the
    source room (the rest are in both rooms, and a note says why)."""
    data = journal.data()
    lines = data[:-1].split(b"\n")
    text = handover_text(journal.source, journal.target)
    if journal.state == "chosen":
        decision = "push"
        if not fresh:
            at, certain = dst.find_block(journal.to_since, journal.to_epoch, data)
            decision = push_decision(at, certain)
        if decision == "landed":
            notes.append(f"its push to {journal.to_room} had landed: not pushed again")
        else:
            if decision == "unsure":
                notes.append(
                    f"could not tell whether its push to {journal.to_room} had landed (the "
                    f"room was acked past it since): pushed again, so {journal.target} may "
                    "see these lines twice"
                )
            at = dst.push_lines(lines)
        pause("handover-after-push")
        journal = journal.replace(state="pushed", to_start=at)
        _store(home, journal)
    gone = journal.lines
    if journal.state == "pushed":
        assert journal.to_start is not None
        dst.note_handover(
            journal.to_start, journal.to_start + len(data), journal.lines, journal.sha256, text
        )
        gone = _ack_source(src, journal, notes, mine)
        pause("handover-after-ack")
        if gone:
            src.note_handover(journal.start, journal.end, journal.lines, journal.sha256, text)
        journal = journal.replace(state="acked")
        _store(home, journal)
    pause("handover-before-done")
    atomic.unlink_quietly(locations.handover_journal(home, journal.source))
    return gone


def _ack_source(src: Room, journal: Journal, notes: list[str], mine: set[str]) -> int:
    """Remove the journal's lines from the source room by the hand-over's own read; how many
    left it (all or none). Already gone (a re-run after the ack): all."""
    if _left(src, journal):
        return journal.lines
    try:
        done = src.ack(HANDOVER_SESSION, reader=journal.id)
    except ColdAck:
        done = None  # the read's receipt is gone (replaced by another hand-over's read)
    if done is not None and done.mode == "prefix":
        return journal.lines
    if _left(src, journal):
        return journal.lines
    # The receipt could not remove them. If they are still exactly the head, read exactly
    # them again and ack that; otherwise leave them: they are in both rooms.
    from ackdeck.core.rooms.file import readlog

    rid = readlog.new_id()
    mine.add(rid)
    again = src.read(HANDOVER_SESSION, reader=rid, max_bytes=len(journal.data()))
    if (again.epoch, again.start, again.data) == (journal.epoch, journal.start, journal.data()):
        redo = src.ack(HANDOVER_SESSION, reader=rid)
        if redo.mode == "prefix":
            return journal.lines
    why = done.message if done is not None else "its read's receipt was gone"
    notes.append(
        f"{counted(journal.lines, 'line')} could not be acked in {journal.from_room} ({why}): "
        f"they are in both rooms; ack them there once {journal.target} has them"
    )
    return 0


def _left(room: Room, journal: Journal) -> bool:
    """Have the journal's lines left the source room (acked, or removed behind ackdeck's
    back)? Not when the room was rewritten since (a new epoch): offsets no longer say."""
    if room.status().epoch != journal.epoch:
        return False
    # The last line: acks remove a prefix, so it is gone only when all of them are. (The
    # first one's being gone says nothing: the stalled session may have acked its own read
    # meanwhile, which removes only the head of the hand-over's lines.)
    data = journal.data()
    last = journal.start + data.rfind(b"\n", 0, len(data) - 1) + 1
    try:
        return not room.trace(last).present
    except InvalidInput:
        return True  # below the room's start, with no ack recorded: removed by hand
