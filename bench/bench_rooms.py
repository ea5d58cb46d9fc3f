"""`python -m bench rooms`: rooms against baselines measured in the same run.

- ack vs the physical floor: the floor copies the same remainder into a temp file, fsyncs it,
  renames it over the room and fsyncs the directory: the least any crash-safe rewrite must do.
  Target ratio <= 1.25.
- push vs a raw unlocked append: the baseline opens the path with O_APPEND, writes one line and
  closes it (exactly what a `printf >> room` poller does per line). Target >= 0.7 of its
  throughput.
- read of a 1,000,000-line room in one page: lines/s, next to a bare read-and-split of the
  same file.
- memory of `ackdeck room read` (the default page) of that 86 MB room: the process's peak RSS
  next to a Python that only imports the CLI (a read holds a page, not the room).

Everything runs in a temp directory next to the system temp dir; medians of several runs, and
the best run of each next to them (the machine is shared and noisy).
"""

from __future__ import annotations

import fcntl
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ackdeck.core.rooms.file.room import Room

LINE = b"[2026-07-08T12:00:00Z] [ops] alice: deploy finished, 3 services healthy, p99 41ms ok\n"


def _fill(path: Path, size: int) -> None:
    n = max(1, size // len(LINE))
    with open(path, "wb") as f:
        block = LINE * 1024
        for _ in range(n // 1024):
            f.write(block)
        f.write(LINE * (n % 1024))
        f.flush()
        os.fsync(f.fileno())  # no dirty pages of the setup compete with the timed fsyncs


def _median(fn: Callable[[], float], reps: int) -> float:
    return statistics.median(fn() for _ in range(reps))


def _floor_rewrite(path: Path, drop: int) -> float:
    """Copy [drop, size) to a temp file, fsync, rename over, fsync the directory."""
    t0 = time.perf_counter()
    src = os.open(path, os.O_RDONLY)
    size = os.fstat(src).st_size
    tmp = path.with_name(path.name + ".floor-tmp")
    dst = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    offset = drop
    while offset < size:
        chunk = os.pread(src, min(4 << 20, size - offset), offset)
        os.write(dst, chunk)
        offset += len(chunk)
    os.fsync(dst)
    os.close(dst)
    os.close(src)
    os.replace(tmp, path)
    d = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(d)
    os.close(d)
    return time.perf_counter() - t0


def _prepare(path: Path, size: int, *, room: bool) -> int:
    """A room whose first half was read by a session and whose second half arrived after.

    The floor's file goes through the same writes (its stand-in for the receipt included), so
    both timed rewrites start from the same amount of recent writeback: on a virtual disk a
    32 MB write right after a burst of other writes is several times slower than after none,
    which would otherwise be charged to whichever side wrote more during its set-up.
    Returns the number of head bytes the ack (or the floor) drops."""
    _fill(path, size)
    data = path.read_bytes()
    half = data[: data.rfind(b"\n", 0, len(data) // 2) + 1]
    tail = data[len(half) :]
    path.write_bytes(half)
    if room:
        Room(path).read("bench", max_bytes=max(len(half), 1 << 20))  # the half as one page
    else:
        path.with_name(path.name + ".receipt").write_bytes(half)
    with open(path, "ab") as f:
        f.write(tail)
        f.flush()
        os.fsync(f.fileno())
    return len(half)


def _time_ack(path: Path, lines: int) -> float:
    # grace=0: the replaced inode is freed inside the timed ack, as the floor's rename frees
    # its old inode. (With the default grace the link is removed by a later operation, which
    # then pays for freeing the blocks; on this discard-mounted disk that is most of an fsync.)
    room = Room(path, grace=0.0)
    t0 = time.perf_counter()
    res = room.ack("bench")
    took = time.perf_counter() - t0
    assert res.acked == lines, res
    return took


def bench_ack(base: Path, size: int, reps: int) -> tuple[float, float, float, float]:
    d = base / f"ack-{size}"
    d.mkdir()
    floor_path, room_path = d / "floor.txt", d / "room.txt"
    floor_times, ack_times = [], []
    for rep in range(reps):
        drop = _prepare(floor_path, size, room=False)
        _prepare(room_path, size, room=True)
        lines = room_path.read_bytes()[:drop].count(b"\n")
        os.sync()  # no set-up write is flushed inside a timed rewrite
        # Alternate which goes first: the second one runs right after the first one's writes.
        if rep % 2:
            ack_times.append(_time_ack(room_path, lines))
            floor_times.append(_floor_rewrite(floor_path, drop))
        else:
            floor_times.append(_floor_rewrite(floor_path, drop))
            ack_times.append(_time_ack(room_path, lines))
    return (
        statistics.median(ack_times),
        statistics.median(floor_times),
        min(ack_times),
        min(floor_times),
    )


def bench_push(base: Path, n: int, reps: int) -> tuple[float, float, float]:
    d = base / "push"
    d.mkdir()
    raw_path = d / "raw.txt"
    room = Room(d / "room.txt")
    room.push("warm up")  # sidecar exists, as for any room in use
    line = LINE[:-1].decode()

    def raw() -> float:
        data = line.encode() + b"\n"
        t0 = time.perf_counter()
        for _ in range(n):
            fd = os.open(raw_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, data)
            os.close(fd)
        return n / (time.perf_counter() - t0)

    def pushed() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            room.push(line)
        return n / (time.perf_counter() - t0)

    lock_path = d / "lock"

    def locked_raw() -> float:
        # The least any shared-lock protocol costs: open+flock the lock file around the append.
        data = line.encode() + b"\n"
        t0 = time.perf_counter()
        for _ in range(n):
            lk = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(lk, fcntl.LOCK_SH)
            fd = os.open(raw_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, data)
            os.close(fd)
            os.close(lk)
        return n / (time.perf_counter() - t0)

    raws, pushes, lockeds = [], [], []
    for _ in range(reps):
        raws.append(raw())
        lockeds.append(locked_raw())
        pushes.append(pushed())
    return statistics.median(pushes), statistics.median(raws), statistics.median(lockeds)


def bench_read(base: Path, lines: int, reps: int) -> tuple[float, float]:
    d = base / "read"
    d.mkdir()
    path = d / "room.txt"
    _fill(path, lines * len(LINE))
    room = Room(path)

    def via_room() -> float:
        t0 = time.perf_counter()
        got = room.read("bench", max_bytes=lines * len(LINE))  # the whole room: one page
        took = time.perf_counter() - t0
        assert len(got.lines) == lines
        return lines / took

    def bare() -> float:
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            got = f.read()[:-1].split(b"\n")
        took = time.perf_counter() - t0
        assert len(got) == lines
        return lines / took

    return _median(via_room, reps), _median(bare, reps)


# Peak RSS (KiB) of a Python that runs `ackdeck ARGV` in-process (or, without ARGV, only imports
# the CLI), printed on stderr: the kernel's VmHWM of this process image (getrusage's maxrss
# would also hold the forking bench's own peak, which Linux carries across exec).
PEAK = """import sys
from ackdeck.core.cli import main
if sys.argv[1:]:
    main(sys.argv[1:])
with open("/proc/self/status") as f:
    print(next(x.split()[1] for x in f if x.startswith("VmHWM:")), file=sys.stderr)
"""


def _peak_kib(argv: list[str]) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
        env={**os.environ, "ACKDECK_SESSION": "bench-memory"},
    )
    return int(done.stderr.split()[-1])


def bench_read_memory(base: Path) -> tuple[int, int, int]:
    """(peak RSS of `room read` with the default page, of a Python that only imports the
    CLI, the room's size), in KiB, of the room bench_read filled."""
    path = base / "read" / "room.txt"
    return _peak_kib(["room", "read", str(path)]), _peak_kib([]), path.stat().st_size >> 10


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-") as tmp:
        base = Path(tmp)
        rows: list[tuple[str, str, str, str, str]] = []
        for label, size, reps in (("1 MB", 1 << 20, 21), ("64 MB", 64 << 20, 5)):
            ack, floor, ack_best, floor_best = bench_ack(base, size, reps)
            ratio = ack / floor
            rows.append(
                (
                    f"ack, {label} room (half acked)",
                    f"{ack * 1000:.2f} ms",
                    f"{floor * 1000:.2f} ms (copy+fsync+rename+dir fsync)",
                    f"{ratio:.2f}",
                    "<= 1.25 " + ("ok" if ratio <= 1.25 else "MISSED"),
                )
            )
            rows.append(
                (
                    "  best of each",
                    f"{ack_best * 1000:.2f} ms",
                    f"{floor_best * 1000:.2f} ms",
                    f"{ack_best / floor_best:.2f}",
                    f"(medians above; {reps} interleaved runs)",
                )
            )
        push, raw, locked_raw = bench_push(base, 20_000, 3)
        ratio = push / raw
        rows.append(
            (
                "push (shared lock)",
                f"{push:,.0f} lines/s",
                f"{raw:,.0f} lines/s (open O_APPEND+write+close)",
                f"{ratio:.2f}",
                ">= 0.70 " + ("ok" if ratio >= 0.7 else "MISSED"),
            )
        )
        rows.append(
            (
                "  the same, vs a bare flock",
                f"{push:,.0f} lines/s",
                f"{locked_raw:,.0f} lines/s (open+flock lock, then the raw append)",
                f"{push / locked_raw:.2f}",
                f"(bare flock itself: {locked_raw / raw:.2f} of raw)",
            )
        )
        read, bare = bench_read(base, 1_000_000, 3)
        rows.append(
            (
                "read, 1,000,000-line room",
                f"{read:,.0f} lines/s",
                f"{bare:,.0f} lines/s (read+split, no receipt)",
                f"{read / bare:.2f}",
                "(reported)",
            )
        )
        peak, floor_kib, room_kib = bench_read_memory(base)
        rows.append(
            (
                f"read memory, {room_kib >> 10} MB room, default page",
                f"{peak >> 10} MB peak RSS",
                f"{floor_kib >> 10} MB (python importing the CLI)",
                f"{peak / floor_kib:.2f}",
                "(reported; bounded by the page, not the room)",
            )
        )
    header = ("benchmark", "ackdeck", "baseline (same run)", "ratio", "target")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
