"""`python -m bench queue`: a file work-queue room against baselines measured in the same run.

- claim+done of one task on a queue room (core/rooms/file/queue.py: both under the room's
  exclusive lock, a SQLite commit each, the finished line leaving through the ack) against a
  bare `flock` + append of a done record to a file, without and with an fsync of the record
  (what a hand-rolled queue does at best: it keeps no lease, no token, no delivery count).
- claim latency with 10,000 lines claimed and not done: the claims at the start against the
  claims once 10,000 leases are held (the expired-lease lookup goes through an index on the
  lease's end, the next line is at the frontier: it must not grow).

Medians of the timed operations, in a temp directory; the machine is shared and noisy.
"""

from __future__ import annotations

import fcntl
import os
import statistics
import tempfile
import time
from pathlib import Path

from ackdeck.core.rooms.file.queue import FileQueue
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.policy import RoomPolicy

LINE = b"fix tests/test_parser.py::test_unicode_escapes (flaky on CI since #4121)\n"


def _queue(path: Path, lines: int) -> FileQueue:
    path.write_bytes(LINE * lines)
    room = Room(path)
    room.set_policy(RoomPolicy(queue=True))
    return FileQueue(room)


def claim_done(d: Path, n: int, backlog: int) -> list[float]:
    q = _queue(d / "q.txt", n + backlog)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        got = q.claim("bench", 600)
        assert got.token is not None
        q.update(got.token, "done")
        out.append(time.perf_counter() - t0)
    return out


def flock_append(d: Path, n: int, *, fsync: bool) -> list[float]:
    lock, log = d / "lock", d / "done.log"
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        lfd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lfd, fcntl.LOCK_EX)
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, f"done {i * len(LINE)}\n".encode())
                if fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        finally:
            os.close(lfd)
        out.append(time.perf_counter() - t0)
    return out


def claim_latency(d: Path, held: int) -> tuple[float, float, float, float]:
    """Median wall and CPU time of the first 100 claims and of the 100 after `held`. The CPU
    time leaves out the waits for fsync, which on a shared disk hide any growth."""
    q = _queue(d / "big.txt", held + 200)
    wall, cpu = [], []
    for _ in range(held + 100):
        t0, c0 = time.perf_counter(), time.process_time()
        assert q.claim("bench", 600).claimed
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    m = statistics.median
    return m(wall[:100]), m(wall[-100:]), m(cpu[:100]), m(cpu[-100:])


def main(flags: list[str] | None = None) -> None:
    quick = "--quick" in (flags or [])
    n = 50 if quick else 300
    held = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-queue-") as tmp:
        d = Path(tmp)
        rows = []
        for backlog in (0, 1_000):
            sub = d / f"q{backlog}"
            sub.mkdir()
            ours = statistics.median(claim_done(sub, n, backlog))
            rows.append((f"claim+done, {backlog:,} lines waiting behind", ours))
        bare = statistics.median(flock_append(d, n, fsync=False))
        synced = statistics.median(flock_append(d, n, fsync=True))
        print(f"{'operation':<44}{'median':>11}{'x bare':>9}{'x fsync':>9}")
        for name, t in rows:
            print(f"{name:<44}{t * 1e3:>9.2f}ms{t / bare:>9.1f}{t / synced:>9.1f}")
        print(f"{'baseline: flock + append a done record':<44}{bare * 1e3:>9.3f}ms")
        print(f"{'baseline: flock + append + fsync':<44}{synced * 1e3:>9.3f}ms")
        first, last, first_cpu, last_cpu = claim_latency(d, held)
        print()
        print(f"{'claim latency':<44}{'median':>11}{'CPU':>11}")
        print(
            f"{'first 100 claims (nothing held)':<44}{first * 1e3:>9.2f}ms{first_cpu * 1e3:>9.2f}ms"
        )
        print(
            f"{f'100 claims with {held:,} lines held':<44}{last * 1e3:>9.2f}ms"
            f"{last_cpu * 1e3:>9.2f}ms"
        )
        print(f"{'ratio (must stay near 1)':<44}{last / first:>11.2f}{last_cpu / first_cpu:>11.2f}")
