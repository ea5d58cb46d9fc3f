"""`python -m bench ages`: what ages, the read log and metrics cost, against baselines measured
in the same run.

- status with ages of a 1,000,000-line room (its first-seen marks from a million pushes, three
  sessions' receipts) vs the same status with the age lookups switched off (the status of
  before issue 24: counts only).
- a read with its read-log entry and first-seen mark vs the same read with both switched off.
  Target <= 1.1x.
- a metrics scrape of 100 rooms (prometheus text) vs `room status` of the same 100 rooms.

The baselines switch off ackdeck's own functions for the measurement only (nothing of the
standard library is patched). Medians of several runs; the machine is shared and noisy.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ackdeck.core.rooms.file import ages, readlog, seen_marks
from ackdeck.core.rooms.file.room import Room

LINE = b"[2026-07-08T12:00:00Z] [ops] alice: deploy finished, 3 services healthy, p99 41ms ok\n"


def _median(fn: Callable[[], float], reps: int) -> float:
    return statistics.median(fn() for _ in range(reps))


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


@contextlib.contextmanager
def _without_ages() -> Iterator[None]:
    """The status and read of before: no marks looked up or written, no read log."""
    saved = (ages.file_ages, ages.observe, readlog.live_entries, readlog.append)
    ages.file_ages = lambda *_a, **_k: (None, None, {name: None for name in _a[3]})  # type: ignore[assignment]
    ages.observe = lambda *_a, **_k: None  # type: ignore[assignment]
    readlog.live_entries = lambda *_a, **_k: []  # type: ignore[assignment]
    readlog.append = lambda *_a, **_k: True  # type: ignore[assignment]
    try:
        yield
    finally:
        ages.file_ages, ages.observe, readlog.live_entries, readlog.append = saved


def _million_line_room(d: Path) -> Room:
    path = d / "flood.txt"
    n = 1_000_000
    with open(path, "wb") as f:
        block = LINE * 1000
        for _ in range(n // 1000):
            f.write(block)
    room = Room(path)
    room.read("early")  # sidecar, ledger, a receipt of everything
    room.ack("early")
    with open(path, "ab") as f:
        for _ in range(n // 1000):
            f.write(LINE * 1000)
    # The marks a million pushes would have written, one per line.
    journey = room.sidecar / "journey"
    t0 = time.time() - n / 1000
    with open(journey / seen_marks.NAME, "wb") as f:
        f.write(
            b"".join(
                seen_marks.record((n + i + 1) * len(LINE), t0 + i / 1000, seen_marks.PUSHED)
                for i in range(n)
            )
        )
    room.read("agent")
    with open(path, "ab") as f:
        f.write(LINE * 10)
    room.read("owner")
    return room


def _status_ratio(d: Path) -> tuple[float, float]:
    room = _million_line_room(d)
    room.status()  # warm the page cache and the marks' tail
    with_ages = _median(lambda: _timed(room.status), 7)
    with _without_ages():
        without = _median(lambda: _timed(room.status), 7)
    return with_ages, without


def _read_ratio(d: Path) -> tuple[float, float]:
    path = d / "small.txt"
    room = Room(path)
    for i in range(10):
        room.push(f"line {i}")

    def reads(k: int) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            room.read("agent")
        return (time.perf_counter() - t0) / k

    reads(50)
    # Interleaved, so writeback from earlier steps (or other helpers) weighs on both alike.
    logged, bare = [], []
    for _ in range(9):
        logged.append(reads(100))
        with _without_ages():
            bare.append(reads(100))
    return statistics.median(logged), statistics.median(bare)


def _scrape_ratio(d: Path) -> tuple[float, float]:
    from ackdeck.core.service import metrics
    from ackdeck.core.service import rooms as service

    specs = []
    for i in range(100):
        r = Room(d / f"room{i:03d}.txt")
        for j in range(20):
            r.push(f"line {j}")
        r.read("agent")
        specs.append(str(r.path))
    metrics.exposition(specs, None)  # imports prometheus_client once, outside the timing

    def status_all() -> None:
        opened = [Room(s) for s in specs]
        service.status([(r, r.path.name) for r in opened])

    scrape = _median(lambda: _timed(lambda: metrics.exposition(specs, None)), 5)
    status = _median(lambda: _timed(status_all), 5)
    return scrape, status


def main() -> None:
    base = Path(tempfile.gettempdir())
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        d = Path(tmp)
        (d / "a").mkdir()
        (d / "b").mkdir()
        (d / "c").mkdir()
        r_with, r_without = _read_ratio(d / "b")  # first: before the big room's writeback
        s_with, s_without = _status_ratio(d / "a")
        m_scrape, m_status = _scrape_ratio(d / "c")
    rows = [
        ("status, 1,000,000 lines: ages vs none", s_with, s_without, "-"),
        ("read: read log + mark vs none", r_with, r_without, "<= 1.10"),
        ("metrics scrape vs room status, 100 rooms", m_scrape, m_status, "-"),
    ]
    print(f"{'measure':<44} {'ms':>9} {'baseline ms':>12} {'ratio':>7} {'target':>8}")
    for name, a, b, target in rows:
        print(f"{name:<44} {a * 1000:>9.3f} {b * 1000:>12.3f} {a / b:>7.2f} {target:>8}")


if __name__ == "__main__":
    main()
