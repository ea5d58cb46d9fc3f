"""What the dashboard shows, gathered from core without Textual.

`scan()` runs in a worker thread and returns an immutable `Snapshot`; the widgets only render
snapshots. Formatting helpers and the arrival-rate tracker are pure functions of their inputs
(the clock is always passed in), so snapshot tests are deterministic.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackdeck.core.base.home import resolve_home
from ackdeck.core.errors import AckdeckError
from ackdeck.core.inbox.room_backend import open_room
from ackdeck.core.inbox.room_url import is_url
from ackdeck.core.inbox.rooms import Room, RoomStatus
from ackdeck.core.service.derive import age, is_overdue

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
    redis room's NAME (its host and port too when two share a name), never its password."""
    from ackdeck.core.inbox.room_url import parse_redis_url

    shown = {str(p): parse_redis_url(p, {}) for p in paths if isinstance(p, str)}
    names = [shown[p].name if isinstance(p, str) else p.name for p in paths]
    out: dict[str, str] = {}
    for p in paths:
        if isinstance(p, str):
            a = shown[p]
            out[p] = a.name if names.count(a.name) == 1 else f"{a.where}/{a.name}"
            continue
        label = p.name if names.count(p.name) == 1 else f"{p.parent.name}/{p.name}"
        out[str(p)] = display_name(label)
    return out


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def consistent_status(path: Path, tries: int = 5) -> RoomStatus:
    """`Room.status()` from one moment: pending and acked totals taken around the same ack.

    An ack renames a new file over the room. A status that opened the file before that rename
    and read the ledger after it counts the acked lines twice (once pending, once acked), and
    the arrivals sparkline jumps. The file's identity is compared before and after: if an ack
    landed in between, read again (a few times; a room acked non-stop gets the last reading).
    """
    room = Room(path)
    for _ in range(tries - 1):
        before = _inode(path)
        st = room.status()
        if _inode(path) == before:
            return st
    return room.status()


def scan_room(path: Path | str, label: str) -> RoomRow:
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
        st = consistent_status(path)
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


def scan(home: Path | None, rooms: Sequence[Path | str], *, clock: Clock) -> Snapshot:
    """One consistent-enough look at every room, process and wake record."""
    labels = room_labels(rooms)
    rows = [scan_room(p, labels[str(p)]) for p in rooms]
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
    return Snapshot(clock(), rows, runs, wakes, errors)


def _skipped(what: str, paths: Sequence[Path]) -> list[str]:
    """One header note per kind: damaged files are skipped and kept, the rest is shown."""
    if not paths:
        return []
    names = ", ".join(f"{p.parent.name}/{p.name}" for p in paths[:3])
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return [f"skipped {len(paths)} damaged {what} file(s), kept on disk: {names}{more}"]


def scan_at(home: Path | None, rooms: Sequence[Path | str], now: float) -> Snapshot:
    """`scan` with the time passed in, so it can run in a scanner process (picklable args)."""
    return scan(home, rooms, clock=lambda: now)


# ----- arrival rates ----------------------------------------------------------------------------
class RateTracker:
    """Arrival counts per room over time, for the sparkline. Fed from snapshots (UI thread)."""

    def __init__(self, *, bucket_seconds: float = 5.0, buckets: int = 12) -> None:
        self.bucket_seconds = bucket_seconds
        self.buckets = buckets
        self._samples: dict[str, deque[tuple[float, int]]] = {}

    def observe(self, key: str, t: float, arrived: int) -> None:
        samples = self._samples.setdefault(key, deque(maxlen=4096))
        samples.append((t, arrived))
        horizon = t - self.bucket_seconds * (self.buckets + 1)
        while len(samples) > 2 and samples[1][0] < horizon:
            samples.popleft()

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


def ago(t: float | None, now: float) -> str:
    if t is None:
        return "-"
    d = max(0.0, now - t)
    if d < 10:
        return "just now"
    if d < 60:
        return f"{int(d)}s ago"
    if d < 3600:
        return f"{int(d // 60)}m ago"
    if d < 86400:
        return f"{int(d // 3600)}h ago"
    return f"{int(d // 86400)}d ago"


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
