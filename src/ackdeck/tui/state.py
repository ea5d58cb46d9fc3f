"""What the dashboard shows, gathered from core without Textual.

The scanner (`room_counts.RoomCounter`, in its own process) counts rooms with `scan_room` and
gathers runs and wakes with `home_state`; the app merges its replies into an immutable
`Snapshot`, and the widgets only render snapshots (`scan()` is the same look from scratch).
Formatting helpers and the arrival-rate tracker are pure functions of their inputs (the clock
is always passed in), so snapshot tests are deterministic.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ackdeck.core.base.text import age_text
from ackdeck.core.errors import AckdeckError
from ackdeck.core.service.refs import parse_room
from ackdeck.core.service.roomref import label_of, name_counts
from ackdeck.core.service.rooms import LineCounts, age, is_overdue
from ackdeck.core.service.scan import scan_home
from ackdeck.core.service.scan import scan_room as scan_view

from .lineindex import display_name

if TYPE_CHECKING:
    from ackdeck.core.rooms.results import RoomStatus

Clock = Callable[[], float]

SPARK = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True, slots=True)
class RoomRow:
    key: str  # absolute path: stable identity of the row
    label: str  # what the table shows (never a temp path)
    status: RoomStatus | None
    error: str | None = None
    mtime: float | None = None

    @property
    def arrived(self) -> int:
        """Lines that ever arrived and are counted by the ledger (for the rate sparkline)."""
        if self.status is None:
            return 0
        return self.status.pending + self.status.acked_total


class RoomList(Sequence[RoomRow]):
    """The rooms' rows in the dashboard's order, listed when first read: the app makes a
    snapshot for every reply of the scanner (a push: one row), and listing three thousand
    rows each time made every reply O(rooms). Reads `rows` as it is then: only the latest
    snapshot is ever read (the palette, the tests)."""

    def __init__(self, order: Sequence[str], rows: dict[str, RoomRow]) -> None:
        self._order, self._rows = order, rows
        self._list: list[RoomRow] | None = None

    def _listed(self) -> list[RoomRow]:
        if self._list is None:
            rows = self._rows
            self._list = [rows[k] for k in self._order if k in rows]
        return self._list

    def __len__(self) -> int:
        return len(self._listed())

    def __getitem__(self, i: Any) -> Any:
        return self._listed()[i]

    def __iter__(self) -> Iterator[RoomRow]:
        return iter(self._listed())

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Snapshot:
    taken_at: float
    rooms: Sequence[RoomRow] = field(default_factory=list)
    runs: list[Any] = field(default_factory=list)  # ackdeck.core.monitors.procs.RunInfo
    wakes: list[Any] = field(default_factory=list)  # ackdeck.core.monitors.wakes.WakeRecord
    errors: list[str] = field(default_factory=list)


def room_labels(paths: Sequence[Path | str]) -> dict[str, str]:
    """The table's labels (`roomref.label_of`, narrow): the room's name, or with what tells it
    from a namesake (a file's `parent/name`, a redis room's `host:port/NAME`), never a password;
    linear in the number of rooms."""
    refs = {str(p): parse_room(p, env={}) for p in paths}
    names = name_counts(refs.values())
    return {key: display_name(label_of(r, names[r.name], narrow=True)) for key, r in refs.items()}


def scan_room(path: Path | str, label: str, counts: LineCounts | None = None) -> RoomRow:
    """Counters for one room; any failure becomes an error row instead of an exception (an
    unreachable redis room is such a row until its server answers again)."""
    try:
        ref = parse_room(path)
    except AckdeckError as exc:
        return RoomRow(str(path), label, None, str(exc))
    seen = scan_view(ref, label, counts)
    return RoomRow(str(path), label, seen.status, seen.error, seen.mtime)


def home_state(home: Path | None) -> tuple[list[Any], list[Any], list[str]]:
    """(latest run of each process, wake records, errors) under `home`; the one write of a
    scan, dead supervisors reported as lost, comes first (`core.service.scan.scan_home`)."""
    if home is None:
        return [], [], []
    found = scan_home(home)
    return found.runs, found.wakes, found.errors


def scan(home: Path | None, rooms: Sequence[Path | str], *, clock: Clock) -> Snapshot:
    """One look at every room, process and wake record, counted from scratch (the dashboard's
    scanner keeps counts between looks instead: tui/room_counts.py)."""
    labels = room_labels(rooms)
    rows = [scan_room(p, labels[str(p)]) for p in rooms]
    runs, wakes, errors = home_state(home)
    return Snapshot(clock(), rows, runs, wakes, errors)


# ----- arrival rates ----------------------------------------------------------------------------
class RateTracker:
    """Arrival counts per room over time, for the sparkline. Fed from snapshots (UI thread)."""

    def __init__(self, *, bucket_seconds: float = 5.0, buckets: int = 12) -> None:
        self.bucket_seconds = bucket_seconds
        self.buckets = buckets
        # Rooms whose count rose within the window keep their samples; every other room keeps
        # only its last one (a series of a quiet room is all zeros): at 3,000 rooms, a deque
        # per room was most of what the tracker cost.
        self._samples: dict[str, deque[tuple[float, int]]] = {}
        self._last: dict[str, tuple[float, int]] = {}
        self._rose_at: dict[str, float] = {}  # when each room's count last went up
        self.quiet = SPARK[0] * buckets  # the sparkline of a quiet room (one string for all)

    def observe(self, key: str, t: float, arrived: int) -> None:
        samples = self._samples.get(key)
        if samples is None:
            last = self._last.get(key)
            if last is None or arrived <= last[1]:
                self._last[key] = (t, arrived)
                return
            del self._last[key]
            samples = self._samples[key] = deque([last], maxlen=4096)
        if arrived > samples[-1][1]:
            self._rose_at[key] = t
        samples.append((t, arrived))
        horizon = t - self.bucket_seconds * (self.buckets + 1)
        while len(samples) > 2 and samples[1][0] < horizon:
            samples.popleft()
        if not self.rising(key, t):
            # Quiet for a whole window: its series is all zeros; only the last sample counts.
            self._last[key] = samples[-1]
            del self._samples[key], self._rose_at[key]

    def rising(self, key: str, now: float) -> bool:
        """False when `series(key, now)` is all zeros for sure (nothing arrived within the
        window), so a table need not compute it for every quiet room on every refresh."""
        t = self._rose_at.get(key)
        return t is not None and now - t < self.bucket_seconds * self.buckets

    def series(self, key: str, now: float) -> list[int]:
        """Lines that arrived in each bucket, oldest first. Drops (acks, rewrites) count as 0."""
        out = [0] * self.buckets
        samples = self._samples.get(key)
        if not samples:
            return out
        prev: tuple[float, int] | None = None
        for t, n in samples:
            if prev is not None and n > prev[1]:
                age = now - t
                slot = self.buckets - 1 - int(age // self.bucket_seconds)
                if 0 <= slot < self.buckets:
                    out[slot] += n - prev[1]
            prev = (t, n)
        return out

    def forget(self, key: str) -> None:
        self._samples.pop(key, None)
        self._last.pop(key, None)
        self._rose_at.pop(key, None)


def sparkline(values: Sequence[int]) -> str:
    top = max(values, default=0)
    if top <= 0:
        return SPARK[0] * len(values)
    return "".join(
        SPARK[min(len(SPARK) - 1, (v * (len(SPARK) - 1) + top - 1) // top)] for v in values
    )


# ----- formatting ------------------------------------------------------------------------------
# Ages step in units that make them change rarely: a table of 3,000 rooms repaints a room's
# age when its text changes, and "42s ago" changing every second is churn nobody reads.
_AGE_STEPS = ((10, 0, "just now"), (60, 10, "s"), (3600, 60, "m"), (86400, 3600, "h"))


def ago(t: float | None, now: float) -> str:
    if t is None:
        return "-"
    d = max(0.0, now - t)
    for limit, unit, suffix in _AGE_STEPS:
        if d < limit:
            if not unit:
                return suffix
            n = int(d // unit)
            return sys.intern(f"{n * 10 if unit == 10 else n}{suffix} ago")
    return sys.intern(f"{int(d // 86400)}d ago")


def age_changes_at(t: float | None, now: float) -> float:
    """When `ago(t, ·)` will next show another text (infinity: never)."""
    if t is None:
        return float("inf")
    d = max(0.0, now - t)
    for limit, unit, _suffix in _AGE_STEPS:
        if d < limit:
            step = unit or limit
            return t + (d // step + 1) * step
    return t + (d // 86400 + 1) * 86400


def wait_text(seconds: float) -> str:
    """How long the oldest line waited, as `age_text` writes it, in steps that change rarely
    (tens of seconds, then whole minutes, then `age_text`'s minutes and hours): a table of
    3,000 rooms with waiting lines would otherwise repaint every one of them every second.
    `room status` and the line trace keep the exact figure."""
    s = int(seconds)
    # Interned: thousands of rows show the same few texts (each row kept its own copy).
    if s < 60:
        return sys.intern(f"{s // 10 * 10}s")
    if s < 3600:
        return sys.intern(f"{s // 60}m")
    return sys.intern(age_text(s))


def wait_text_changes_at(at: float, now: float) -> float:
    """When `wait_text` of a wait that began at `at` next shows another text."""
    d = max(0.0, now - at)
    step = 10 if d < 60 else 60 if d < 86400 else 3600
    return at + (d // step + 1) * step


def next_change(row: RoomRow, now: float) -> float:
    """When any time-driven text of `row` (its age, its oldest line's wait, an overdue mark
    of the room or of a session) next changes; infinity when none will."""
    st = row.status
    due = age_changes_at(last_activity(row), now)
    if st is None:
        return due
    if st.oldest_pending_at is not None:
        due = min(due, wait_text_changes_at(st.oldest_pending_at, now))
    t = st.overdue_after
    if t is not None:
        # `is_overdue` is strict and `age` rounds to milliseconds: just past the threshold.
        starts = [st.oldest_pending_at]
        for s in st.sessions.values():
            starts += [s.read_at, s.oldest_unread_at]
        for at in starts:
            if at is not None and at + t + 0.001 > now:
                due = min(due, at + t + 0.001)
    return due


def last_activity(row: RoomRow) -> float | None:
    st = row.status
    times = [t for t in (row.mtime, st.last_ack_at if st else None) if t is not None]
    return max(times) if times else None


def unread_summary(st: RoomStatus | None) -> str:
    if st is None or not st.sessions:
        return "-"
    return " ".join(f"{name}:{s.unread:,}" for name, s in sorted(st.sessions.items()))


def waited(st: RoomStatus | None, now: float) -> float | None:
    """How long the room's oldest line has waited (as of the scan's clock)."""
    return None if st is None else age(st.oldest_pending_at, now)


def room_overdue(st: RoomStatus | None, now: float) -> bool:
    return st is not None and is_overdue(waited(st, now), st.overdue_after)


def session_overdue(st: RoomStatus, name: str, now: float) -> bool:
    """Its read waits for an ack, or a line for its read, past the room's threshold (the same
    rule as core.service.rooms.SessionCounts.overdue, on the scan's clock)."""
    s, t = st.sessions[name], st.overdue_after
    return is_overdue(age(s.read_at, now), t) or is_overdue(age(s.oldest_unread_at, now), t)


def in_flight_total(st: RoomStatus | None) -> int:
    if st is None:
        return 0
    return sum(s.in_flight for s in st.sessions.values())
