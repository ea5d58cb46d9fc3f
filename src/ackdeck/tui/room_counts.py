"""The scanner's memory: what changed since the last look, counted as little as possible.

A dashboard left open beside thousands of rooms must cost nothing while nothing happens and
work in proportion to what changed. `RoomCounter` lives as long as the scanner (its process,
or the app when counting in-process) and keeps, per room:
- its `LineCounts` (core/rooms/line_counts.py): a status reads only the bytes appended since;
- a fingerprint of the files a status depends on (the room, its ledger, its receipts
  directory: inode, size, mtime, ctime), so a sweep over every room (the safety net for events
  a watcher missed) recounts only rooms whose files changed;
- what the row it last reported said (`_signature`: its numbers, marks and label, as one
  tuple, not the row and its status object), so a reply carries only rows that changed.

A fingerprint taken within `RACY_S` of its files' last change is not trusted (two writes in
one clock tick leave the same stamps; the fix git uses for its index): that room is counted
again on the next sweep. Rooms named by a watcher event are always counted.

No Textual here: the scanner process imports this.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackdeck.core.errors import AckdeckError
from ackdeck.core.service.refs import parse_room
from ackdeck.core.service.rooms import LineCounts
from ackdeck.core.service.scan import run_info, wake_records

from .state import RoomRow, home_state, room_labels, scan_room

# Stamps this close to the moment they were read may hide a second write in the same tick.
RACY_S = 2.0
# A long first count is sent in parts this often, so rows appear as they are counted.
PART_S = 0.1

# A fingerprint: the stamps of a room's files packed into one bytes object (a tuple of tuples
# of ints cost about 300 bytes per room), with the newest ctime, which decides whether it is
# trusted.
Fingerprint = tuple[bytes, int]
_STAMP = struct.Struct("<B5Q")  # present, device, inode, size, mtime and ctime (ns)
_ABSENT = _STAMP.pack(0, 0, 0, 0, 0, 0)


@dataclass(frozen=True)
class ScanRequest:
    """One look, sent to the scanner. `keys`: rooms known to have changed (always counted);
    `sweep`: also check every other room's fingerprint; `home_too`: processes and wakes."""

    home: Path | None
    rooms: list[Path | str] | None  # None: the same rooms as the previous request
    now: float
    keys: frozenset[str] = frozenset()
    sweep: bool = True
    home_too: bool = True
    first: str | None = None  # counted first (the selected room)
    run_dirs: frozenset[str] = frozenset()  # runs whose state changed (read again)
    wakes_too: bool = False  # wake records changed


@dataclass(frozen=True)
class ScanDelta:
    """What changed, in one reply or in parts. `rows`: rooms whose row changed (every room on
    the first look); `runs`/`wakes`/`errors`: None when the home was not looked at."""

    taken_at: float
    rows: list[RoomRow] = field(default_factory=list)
    runs: list[Any] | None = None
    wakes: list[Any] | None = None
    errors: list[str] | None = None
    final: bool = True
    recounted: int = 0  # rooms whose status was taken (the bench and tests read it)
    # CPU seconds the look took in the process that counted (thread time: the counting
    # itself, never the wait for a core on a busy machine); the dashboard spaces its looks
    # by it (app.py, on_files_changed). Set on the final part.
    cpu: float = 0.0


def _stamp(path: str) -> tuple[bytes, int]:
    """The packed stamp of `path` and its ctime (ns); a missing file has its own stamp."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return _ABSENT, 0
    ctime = st.st_ctime_ns
    # Times before 1970 (negative) are kept apart from absent by the `present` byte; the
    # unsigned fields take them modulo 2**64, which still tells two stamps apart.
    mask = (1 << 64) - 1
    packed = _STAMP.pack(1, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns & mask, ctime & mask)
    return packed, ctime


class RoomCounter:
    def __init__(self, *, wall: Callable[[], float] = time.time) -> None:
        self._wall = wall
        self._counts: dict[str, LineCounts] = {}
        self._seen: dict[str, bytes] = {}  # trusted fingerprints only (their stamps)
        # What each room's last reported row said (`_signature`): the rows themselves went
        # to the dashboard; keeping them here too cost a status object per room.
        self._said: dict[str, tuple[Any, ...]] = {}
        self._files: dict[str, tuple[str, ...]] = {}  # () for a room without files
        self._labels: tuple[tuple[str, ...], dict[str, str]] = ((), {})
        self._runs: dict[str, Any] | None = None  # the latest run of each process name

    def _labels_for(self, rooms: Sequence[Path | str]) -> dict[str, str]:
        """Key -> label in the rooms' order (computed again only for another room list)."""
        keys = tuple(str(r) for r in rooms)
        if keys != self._labels[0]:
            self._labels = (keys, room_labels(rooms))
        return self._labels[1]

    def _fingerprint(self, key: str) -> Fingerprint | None:
        """The stamps of the files a file room's status reads; None for a followed (redis)
        room or a spec that names no room (always counted: its error row says why)."""
        files = self._files.get(key)
        if files is None:
            try:
                found = parse_room(key).watch_dirs()  # (directory, sidecar, receipts)
            except AckdeckError:
                found = []
            if len(found) < 3:  # no ledger or receipts (redis, a Claude Code mailbox)
                self._files[key] = ()
                return None
            side = str(found[1])
            files = self._files[key] = (key, side + "/ledger", str(found[2]))
        if not files:
            return None
        stamps = [_stamp(f) for f in files]
        return b"".join(s for s, _ in stamps), max(c for _, c in stamps)

    def _trusted(self, fp: Fingerprint, wall: float) -> bool:
        return fp[1] < (wall - RACY_S) * 1e9

    def scan(self, req: ScanRequest, emit: Callable[[ScanDelta], None]) -> None:
        """Count what `req` asks for and `emit` the changed rows (in parts if slow)."""
        cpu = time.thread_time()
        relabel: set[str] = set()
        if req.rooms is not None:
            before = self._labels[1]
            labels = self._labels_for(req.rooms)
            if labels is not before:
                # Another room list (a room directory gained or lost a file) may rename
                # rooms that did not change: two files of one name are told apart by their
                # directory only while both are there. Those rooms are counted again (only
                # their appended bytes), and the new label makes their rows differ.
                relabel = {k for k, said in self._said.items() if labels.get(k, said[0]) != said[0]}
        labels = self._labels[1]
        if req.sweep or req.rooms is not None or relabel or len(self._said) < len(labels):
            order = list(labels)
            if req.first in labels:
                order.remove(req.first)
                order.insert(0, req.first)
            keep = set(order)
            for gone in [k for k in self._said if k not in keep]:
                for memo in (self._said, self._seen, self._counts, self._files):
                    memo.pop(gone, None)
        else:
            # Only what a watcher named (a push into one of 3,000 rooms): the look costs what
            # changed, not a pass over every room.
            order = [k for k in req.keys if k in labels]
        wall = self._wall()
        changed: list[RoomRow] = []
        recounted = 0
        part_at = time.monotonic() + PART_S
        for key in order:
            fp = None
            if key in req.keys or key in relabel or key not in self._said:
                fp = self._fingerprint(key)
            elif not req.sweep:
                continue
            else:
                fp = self._fingerprint(key)
                if fp is not None and self._seen.get(key) == fp[0]:
                    continue  # its files are as they were when last counted
            counts = self._counts.setdefault(key, LineCounts()) if fp is not None else None
            row = scan_room(key if fp is None else Path(key), labels[key], counts)
            recounted += 1
            if fp is not None and self._trusted(fp, wall):
                self._seen[key] = fp[0]
            else:
                self._seen.pop(key, None)
            said = _signature(row)
            if self._said.get(key) != said:
                self._said[key] = said
                changed.append(row)
            if changed and time.monotonic() >= part_at:
                emit(ScanDelta(req.now, changed, final=False, recounted=recounted))
                changed, recounted = [], 0
                part_at = time.monotonic() + PART_S
        runs, wakes, errors = self._home(req)
        used = time.thread_time() - cpu
        emit(ScanDelta(req.now, changed, runs, wakes, errors, True, recounted, used))

    def _home(
        self, req: ScanRequest
    ) -> tuple[list[Any] | None, list[Any] | None, list[str] | None]:
        """The process and wake tables: all of the home (`home_too`, which also marks runs
        whose supervisor died as lost), or only the runs and wakes that changed: 30 runs
        printing rewrite their monitor state every second, and each look at one costs one
        small read, not a walk of the home."""
        if req.home is None:
            return ([], [], []) if req.home_too else (None, None, None)
        if req.home_too or self._runs is None:
            every, records, problems = home_state(req.home)
            self._runs = {r.name: r for r in every}
            return every, records, problems
        if not req.run_dirs and not req.wakes_too:
            return None, None, None
        errors: list[str] = []
        for rdir in sorted(req.run_dirs):
            name, run_id = Path(rdir).parts[-2:]
            info = run_info(req.home, name, run_id)
            if info is None:
                continue  # gone or half made: the next full look settles it
            known = self._runs.get(name)
            if known is None or (known.started_at, known.run_id) <= (info.started_at, run_id):
                self._runs[name] = info
        runs = sorted(self._runs.values(), key=lambda i: i.name)
        wakes: list[Any] | None = None
        if req.wakes_too:
            wakes, errors = wake_records(req.home)
        return runs, wakes, None if not errors else errors


# Not part of a row's signature: the moment the status was taken (the table's ages are
# computed from the look's clock, so a recount that found nothing new changes no cell) and the
# room's path (its key already says it).
_UNSAID = frozenset({"checked_at", "path"})


def _signature(row: RoomRow) -> tuple[Any, ...]:
    """Everything `row` shows, as one flat tuple (label first): two rows with equal signatures
    show the same. Kept per room instead of the row (a status object and its path each)."""
    st = row.status
    if st is None:
        return (row.label, row.error, row.mtime)
    said: list[Any] = [row.label, row.error, row.mtime]
    for name, value in vars(st).items():
        if name == "sessions":
            value = tuple((n, *vars(s).values()) for n, s in value.items())
        elif name in _UNSAID:
            continue
        said.append(value)
    return tuple(said)


def scan_at(counter: RoomCounter, req: ScanRequest, emit: Callable[[ScanDelta], None]) -> None:
    """One look in this process (the dashboard's fallback when the scanner process is gone)."""
    counter.scan(req, emit)
