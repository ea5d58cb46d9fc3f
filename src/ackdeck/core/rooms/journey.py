"""A line's journey through a file room: when it was pushed (or first seen), every read that
handed it out, and the ack that removed it. Put together from what the room keeps anyway: the
room file, the first-seen marks, the read log and the audit of acks. Reads only; no lock is
needed (each of those files is appended whole or replaced by rename).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from ackdeck.core.base import locations
from ackdeck.core.base.byteio import data_extents, pread_chunks
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.struct import Internal, Sparse, Struct, derived
from ackdeck.core.base.text import age_text, counted
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.file import readlog, seen_marks
from ackdeck.core.rooms.results import age

# How many lines a text match traces at most (newest last); the rest are counted.
MATCH_LIMIT = 20


class Hop(Struct):
    """One read that handed the line out."""

    session: str
    reader: str | None
    door: str
    at: float


class ClaimHop(Struct):
    """One claim of a queue room's line (core/rooms/queue.py) and how its lease ended."""

    session: str
    at: float
    token: int
    until: float  # when the lease ended or ends (a release: when it was given back)
    # holding, ended (ran out, not claimed again yet), expired (ran out, claimed again),
    # released, done, dead
    end: str


def claim_hops(raw: list[tuple[str, float, int, float, str]], now: float) -> list[ClaimHop]:
    """The claims of one line, oldest first, as (session, at, token, until, recorded end:
    released, done, dead or "" while none), each with how its lease ended."""
    out = []
    for i, (session, at, token, until, ended) in enumerate(raw):
        if ended:
            end = ended
        elif i + 1 < len(raw):
            end = "expired"  # a later claim: the lease had run out
        else:
            end = "ended" if until <= now else "holding"
        out.append(ClaimHop(session, at, token, until, end))
    return out


class Journey(Struct):
    offset: int | str  # the line's start (a byte offset, or a redis entry ID)
    present: bool  # still in the room
    text: bytes | None  # the line (None once acked: the room keeps no copy)
    pushed_at: float | None  # when it was pushed, or first seen (see `pushed`)
    pushed: bool  # pushed_at is the push itself (False: the first look; a lower bound)

    @derived
    def age(self) -> float | None:
        """Seconds since pushed_at, as of the trace's clock."""
        return age(self.pushed_at, self.now)

    reads: list[Hop]

    @derived
    def deliveries(self) -> int:
        """Reads that handed it out (while present: without an ack since)."""
        return len(self.reads)

    acked_at: float | None = None
    acked_by: str | None = None
    dead_at: float | None = None  # moved to the dead-letter room (core/rooms/file/deadletter.py)
    dead_room: str | None = None
    # "handed over from S to T" when a hand-over moved the line (core/service/handover.py):
    # in the room it left and in the room it was pushed to.
    handover: Sparse[str | None] = None
    # The record that proved the acked line was shown to the reader's model (issue 41):
    # "Claude Code transcript SESSION.jsonl"; None for an estimate (or an older entry).
    proof: Sparse[str | None] = None
    # A queue room's line: each claim and how its lease ended (the service's trace adds them).
    claims: Sparse[list[ClaimHop] | None] = None
    now: Internal[float | None] = None  # the clock of the trace that shows it (its ages)

    @derived
    def summary(self) -> str:
        said = self._verdict()
        return said if self.handover is None else f"{said}; {self.handover}"

    def _verdict(self) -> str:
        if self.claims:  # a queue room's line: its last claim says where it is
            claim = self.claims[-1]
            if claim.end == "done":
                return f"done by {claim.session} (claimed {counted(len(self.claims), 'time')})"
            if claim.end == "holding":
                left = claim.until - (self.now if self.now is not None else claim.until)
                return f"claimed by {claim.session}; the lease ends in {age_text(left)}"
            if claim.end in ("ended", "released"):
                how = "released by" if claim.end == "released" else "lease ended for"
                return f"claimable again ({how} {claim.session})"
            if claim.end == "dead" and self.dead_room is not None:
                return (
                    f"moved to the dead-letter room {self.dead_room} after "
                    f"{counted(len(self.claims), 'claim')} without a done (last by "
                    f"{claim.session})"
                )
        elif self.claims is not None and not self.reads:
            return "never claimed through the queue"  # a task list's task (it has no reads)
        if self.dead_at is not None:
            return (
                f"moved to the dead-letter room {self.dead_room} after {len(self.reads)} "
                f"delivery(ies) without an ack"
            )
        if self.acked_at is not None:
            after = age(self.pushed_at, self.acked_at)
            when = f" {age_text(after)} after its push" if after is not None else ""
            return f"acked by {self.acked_by}{when}"
        if not self.reads:
            return f"unread for {age_text(self.age)}"
        last = self.reads[-1]
        return (
            f"read {counted(len(self.reads), 'time')}, last by {last.session} via {last.door} "
            f"{age_text(age(last.at, self.now))} ago; not acked"
        )

    def report(self) -> list[str]:
        """The journey as lines of text (the CLI prints them, the dashboard shows them)."""
        gone = "(no longer in the room)"
        shown = None if self.text is None else self.text.decode("utf-8", errors="replace")
        out = [f"offset {self.offset}: {shown if shown is not None else gone}"]
        if self.pushed_at is not None:
            what = "pushed" if self.pushed else "first seen"
            out.append(f"  {what:<10} {_when(self.pushed_at)}")
        for hop in self.reads:
            via = hop.door if hop.reader is None else f"{hop.door} ({hop.reader})"
            out.append(f"  {'read':<10} {_when(hop.at)} by {hop.session} via {via}")
        for c in self.claims or []:
            out.append(f"  {'claimed':<10} {_when(c.at)} by {c.session} (token {c.token})")
            if c.end == "expired":
                out.append(f"  {'expired':<10} {_when(c.until)} (claimed again after)")
            elif c.end == "ended":
                out.append(f"  {'expired':<10} {_when(c.until)} (claimable again)")
            elif c.end == "holding":
                out.append(f"  {'holding':<10} lease ends {_when(c.until)}")
            elif c.end == "released":
                out.append(f"  {'released':<10} {_when(c.until)} by {c.session}")
            elif c.end == "done":
                out.append(f"  {'done':<10} by {c.session}")
        if self.acked_at is not None and self.claims:
            out.append(f"  {'left':<10} {_when(self.acked_at)} the room (done by {self.acked_by})")
        elif self.acked_at is not None:
            # How the ack knew the line was delivered (issue 41): the record that showed it to
            # the reader's model, or an estimate (what was handed over), marked as such.
            shown = (
                ", an estimate (no client record proved it shown)"
                if self.proof is None
                else f", shown to its model per its {self.proof}"
            )
            out.append(f"  {'acked':<10} {_when(self.acked_at)} by {self.acked_by}{shown}")
        if self.dead_at is not None:
            out.append(f"  {'dead':<10} {_when(self.dead_at)} moved to {self.dead_room}")
        if self.handover is not None:
            out.append(f"  {'handover':<10} {self.handover}")
        out.append(f"  => {self.summary}")
        return out


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


# Bytes of one audit line kept at most while reading (an entry is a few hundred bytes; a
# longer line is damage, of which only the end could hold an entry glued on).
_AUDIT_LINE = 1 << 16


def audit_entries(path: Path) -> list[dict]:
    """Every entry of a room's audit log that parses (as plain JSON objects). Read in steps
    over the file's data only (a sparse file's holes are not read, core/base/byteio.py), so
    a log grown by `truncate -s` costs a trace what its data costs."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return []
    out = []

    def take(line: bytes) -> None:
        try:
            doc = parse_json(line)
        except ValueError:
            return
        if isinstance(doc, dict):
            out.append(doc)

    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []  # a FIFO or a directory in its place: no audit to show
        for start, end in data_extents(fd):
            carry = b""
            for chunk in pread_chunks(fd, start, end, size=1 << 20):
                lines = (carry + chunk).split(b"\n")
                carry = lines.pop()[-_AUDIT_LINE:]
                for line in lines:
                    take(line)
            take(carry)
    finally:
        os.close(fd)
    return out


def _line_at(fd: int, at: int, size: int) -> bytes | None:
    """The complete line starting at file offset `at`, None if none starts exactly there."""
    if at < 0 or at >= size or (at > 0 and os.pread(fd, 1, at - 1) != b"\n"):
        return None
    out = b""
    while True:
        chunk = os.pread(fd, 1 << 16, at + len(out))
        if not chunk:
            return None  # a partial last line: a write in progress, not a line yet
        nl = chunk.find(b"\n")
        if nl >= 0:
            return out + chunk[:nl]
        out += chunk


def trace_file(
    fd: int | None,
    base: int,
    epoch: int,
    sidecar: Path,
    journey_dir: Path,
    offset: int,
    unaudited: list[dict] | None = None,
) -> Journey:
    """The journey of the line that starts at logical `offset` in the room open at `fd`
    (None: the file is gone), whose first byte is logical offset `base` in `epoch`.
    `unaudited`: audit entries of interrupted acks not recovered yet (`unaudited` in
    core/rooms/file/queries.py).

    A line that left the room is acked (or dead) only if an audit entry says so: its
    absence alone proves nothing (a hand edit removes lines too)."""
    reads = readlog.load(journey_dir)
    size = os.fstat(fd).st_size if fd is not None else 0
    audit = audit_entries(locations.audit(sidecar))
    if offset >= base:
        moved = _handover_of(audit, epoch, offset)
        text = _line_at(fd, offset - base, size) if fd is not None else None
        if text is None:
            raise InvalidInput(
                f"no line starts at offset {offset}: the room holds offsets {base} to "
                f"{base + size} (use the offset `room push --json` printed)"
            )
        end = offset + len(text) + 1
        mark = seen_marks.Marks(str(journey_dir / seen_marks.NAME)).first_marks([end])[end]
        return Journey(
            offset,
            True,
            text,
            None if mark is None else mark[0],
            bool(mark and mark[1]),
            [_hop(e) for e in reads if e.covers(epoch, offset)],
            handover=moved,
        )
    # Gone from the room: acked, or moved to the dead-letter room.
    gone = None
    for doc in [*audit, *(unaudited or [])]:
        if doc.get("mode") in ("prefix", "all", "recovered", "dead") and (
            int(doc.get("start", -1)) <= offset < int(doc.get("end", -1))
        ):
            gone = doc
    if gone is None:
        raise InvalidInput(
            f"no ack or dead-letter move removed offset {offset} (the room starts at offset "
            f"{base}): it was removed behind ackdeck's back (a hand edit or a truncation), "
            "or it never started a line, or its history is gone"
        )
    ep = int(gone.get("epoch", epoch))
    moved = _handover_of(audit, ep, offset)
    hops = [_hop(e) for e in reads if e.covers(ep, offset)]
    at = float(gone["at"])
    # Lines are appended whole, so the earliest mark past its first byte dates the line
    # (while the marks still reach back that far: an ack compacts them now and then).
    marks = seen_marks.Marks(str(journey_dir / seen_marks.NAME))
    dated = marks.first_marks([offset + 1])[offset + 1]
    pushed_at, pushed = (None, False) if dated is None else dated
    if gone.get("mode") == "dead":
        dead = str(gone.get("dead"))
        return Journey(
            offset,
            False,
            None,
            pushed_at,
            pushed,
            hops,
            dead_at=at,
            dead_room=dead,
            handover=moved,
        )
    by = str(gone.get("session"))
    proof = gone.get("proof")
    return Journey(
        offset,
        False,
        None,
        pushed_at,
        pushed,
        hops,
        acked_at=at,
        acked_by=by,
        handover=moved,
        proof=proof if isinstance(proof, str) else None,
    )


def _handover_of(audit: list[dict], epoch: int, offset: int) -> str | None:
    """What the newest hand-over entry covering `offset` says of it (None: none moved it).
    Offsets only grow within an epoch and a hand-over audits the range it moved, so the
    newest covering entry is the one that moved this line."""
    found = None
    for doc in audit:
        if doc.get("mode") == "handover" and doc.get("epoch") == epoch:
            if int(doc.get("start", -1)) <= offset < int(doc.get("end", -1)):
                found = str(doc["handover"])
    return found


def find_file(fd: int, base: int, needle: bytes) -> tuple[list[int], int]:
    """Offsets of the lines in the room that contain `needle` (at most MATCH_LIMIT, the
    newest), and how many matched in all."""
    if not needle:
        raise InvalidInput("the text to match must not be empty")
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0) if size else b""
    found: list[int] = []
    start = 0
    while True:
        nl = data.find(b"\n", start)
        if nl < 0:
            break
        if needle in data[start:nl]:
            found.append(base + start)
        start = nl + 1
    return found[-MATCH_LIMIT:], len(found)


def _hop(e: readlog.ReadEntry) -> Hop:
    return Hop(e.session, e.reader, e.door, e.at)
