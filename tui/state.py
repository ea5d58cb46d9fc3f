"""What the dashboard shows, gathered from core without Textual.

The scanner (`room_counts.RoomCounter`, in its own process) counts rooms with `scan_room` and
gathers runs and wakes with `home_state`; the app merges its replies into an immutable
`Snapshot`, and the widgets only render snapshots (`scan()` is the same look from scratch).
Formatting helpers and the arrival-rate tracker are pure functions of their inputs (the clock
is always passed in), so snapshot tests are deterministic.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackdeck.core.base.home import resolve_home
from ackdeck.core.base.text import age_text
from ackdeck.core.errors import AckdeckError
from ackdeck.core.inbox.room_backend import open_room
from ackdeck.core.inbox.room_url import is_url
from ackdeck.core.inbox.rooms import Room, RoomStatus
from ackdeck.core.service.derive import age, is_overdue
from ackdeck.core.service.rooms import LineCounts

from .lineindex import display_name

Clock = Callable[[], float]

SPARK = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Snapshot:
    taken_at: float
    rooms: list[RoomRow] = field(default_factory=list)
    runs: list[Any] = field(default_factory=list)  # ackdeck.core.watch.procs.RunInfo
    wakes: list[Any] = field(default_factory=list)  # ackdeck.core.watch.wakes.WakeRecord
    errors: list[str] = field(default_factory=list)


def room_labels(paths: Sequence[Path | str]) -> dict[str, str]:
    """Short, stable labels: the file name, or `parent/name` when two rooms share a name; a
    redis room's NAME (its host and port too when two share a name), never its password.
    Linear in the number of rooms (counting names once, not per room)."""
    from ackdeck.core.inbox.room_url import parse_redis_url

    shown = {p: parse_redis_url(p, {}) for p in paths if isinstance(p, str)}
    names = [shown[p].name if isinstance(p, str) else p.name for p in paths]
    seen: dict[str, int] = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    out: dict[str, str] = {}
    for p, n in zip(paths, names, strict=True):
        if isinstance(p, str):
            a = shown[p]
            out[p] = n if seen[n] == 1 else f"{a.where}/{n}"
            continue
        out[str(p)] = display_name(n if seen[n] == 1 else f"{p.parent.name}/{n}")
    return out


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def consistent_status(path: Path, tries: int = 5, counts: LineCounts | None = None) -> RoomStatus:
    """`Room.status()` from one moment: pending and acked totals taken around the same ack.

    An ack renames a new file over the room. A status that opened the file before that rename
    and read the ledger after it counts the acked lines twice (once pending, once acked), and
    the arrivals sparkline jumps. The file's identity is compared before and after: if an ack
    landed in between, read again (a few times; a room acked non-stop gets the last reading).
    `counts`: the room's kept line counts (core/inbox/line_counts.py), for a caller that asks
    again and again.
    """
    room = Room(path)
    for _ in range(tries - 1):
        before = _inode(path)
        st = room.status(counts)
        if _inode(path) == before:
            return st
    return room.status(counts)


def scan_room(path: Path | str, label: str, counts: LineCounts | None = None) -> RoomRow:
    """Counters for one room; any failure becomes an error row instead of an exception (an
    unreachable redis room is such a row until its server answers again)."""
    if is_url(path):
        try:
            room = open_room(path)
            try:
                # Both backends return the same RoomStatus (core.inbox.results).
                st = room.status()
                return RoomRow(str(path), label, st, None, None)
            finally:
                room.close()
        except AckdeckError as exc:
            return RoomRow(str(path), label, None, str(exc))
    path = Path(path)
    try:
        st = consistent_status(path, counts=counts)
        try:
            mtime: float | None = os.stat(path).st_mtime
        except FileNotFoundError:
            mtime = None
        return RoomRow(str(path), label, st, None, mtime)
    except AckdeckError as exc:
        return RoomRow(str(path), label, None, _short(str(exc), path))
    except OSError as exc:
        return RoomRow(str(path), label, None, f"cannot read {label}: {exc.strerror or exc}")


def _short(message: str, path: Path) -> str:
    # The rooms table already names the room; its directory only makes the row too wide.
    return message.replace(str(path.parent) + os.sep, "")


def run_info(home: Path, name: str, run_id: str) -> Any | None:
    """One run (a `RunInfo`), or None if it is gone or half made (a full look settles it)."""
    from ackdeck.core.watch import procs

    try:
        return procs.get_run(home, name, run_id)
    except (AckdeckError, OSError):
        return None


def wake_records(home: Path) -> tuple[list[Any], list[str]]:
    """(every wake record, errors) under `home`."""
    from ackdeck.core.watch import wakes as wakes_mod

    try:
        wakes, skipped = wakes_mod.scan_wakes(home)
    except (AckdeckError, OSError) as exc:
        return [], [f"wakes: {exc}"]
    return wakes, _skipped("wake record", skipped)


def home_state(home: Path | None) -> tuple[list[Any], list[Any], list[str]]:
    """(latest run of each process, wake records, errors) under `home`."""
    errors: list[str] = []
    runs: list[Any] = []
    wakes: list[Any] = []
    if home is not None:
        from ackdeck.core.watch import procs
        from ackdeck.core.watch import wakes as wakes_mod

        try:
            # The one write of a scan: dead supervisors become `lost` (listings never write).
            procs.reconcile(resolve_home(home))
            runs, skipped = procs.scan_runs(home, latest_only=True)
            errors.extend(_skipped("run state", skipped))
        except (AckdeckError, OSError) as exc:
            errors.append(f"processes: {exc}")
        try:
            wakes, skipped = wakes_mod.scan_wakes(home)
            errors.extend(_skipped("wake record", skipped))
        except (AckdeckError, OSError) as exc:
            errors.append(f"wakes: {exc}")
    return runs, wakes, errors


def _skipped(what: str, paths: Sequence[Path]) -> list[str]:
    """One header note per kind: damaged files are skipped and kept, the rest is shown."""
    if not paths:
        return []
    names = ", ".join(f"{p.parent.name}/{p.name}" for p in paths[:3])
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return [f"skipped {len(paths)} damaged {what} file(s), kept on disk: {names}{more}"]


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
        self._samples: dict[str, deque[tuple[float, int]]] = {}
        self._rose_at: dict[str, float] = {}  # when each room's count last went up

    def observe(self, key: str, t: float, arrived: int) -> None:
        samples = self._samples.setdefault(key, deque(maxlen=4096))
        if samples and arrived > samples[-1][1]:
            self._rose_at[key] = t
        samples.append((t, arrived))
        horizon = t - self.bucket_seconds * (self.buckets + 1)
        while len(samples) > 2 and samples[1][0] < horizon:
            samples.popleft()

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
        self._rose_at.pop(key, None)


def sparkline(values: Sequence[int]) -> str:
    top = max(values, default=0)
    if top <= 0:
        return SPARK[0] * len(values)
    return "".join(
        SPARK[min(len(SPARK) - 1, (v * (len(SPARK) - 1) + top - 1) // top)] for v in values
    )


# ----- formatting ------------------------------------------------------------------------------
def plural(n: int, word: str) -> str:
    """`word` for one, `word`+s otherwise ("1 line", "2 lines")."""
    if n == 1:
        return word
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def count_of(n: int, word: str) -> str:
    return f"{n:,} {plural(n, word)}"


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
            return f"{n * 10 if unit == 10 else n}{suffix} ago"
    return f"{int(d // 86400)}d ago"


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
    if s < 60:
        return f"{s // 10 * 10}s"
    if s < 3600:
        return f"{s // 60}m"
    return age_text(s)


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
