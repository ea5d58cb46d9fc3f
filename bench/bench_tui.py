"""`python -m bench tui`: the dashboard against Toolong, measured in the same run.

- time to first paint of a 1,000,000-line room: from spawning the app in a pseudo-terminal to
  the first screen update that shows one of the room's lines; the baseline is Toolong (`tl`)
  opening the same file, in its own virtual environment under bench/_work/ (installed with pip
  on first use). Target: faster than Toolong.
- peak memory: the summed peak RSS (VmHWM) of the app's process tree (the dashboard counts
  rooms in a scanner subprocess), after both have had the same time to index the whole file.
- append-to-visible latency: another process appends a line to the room; the time until that
  line's text reaches the terminal. p50 / p95 over many appends, for a small room and for the
  1,000,000-line room (following its tail). Target p95 <= 100 ms.

Both apps run under the same pty size and TERM; medians of several runs.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "bench" / "_work"
TOOLONG_VENV = WORK / "toolong-venv"
LINES = 1_000_000
SIZE = (40, 120)  # rows, cols
MARKER = b"retrying webhook #"
RUNS = 3
APPENDS = 40


def _toolong() -> Path | None:
    tl = TOOLONG_VENV / "bin" / "tl"
    if tl.exists():
        return tl
    print("installing Toolong into bench/_work/toolong-venv (first run only)…", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(TOOLONG_VENV)], check=True)
        subprocess.run([str(TOOLONG_VENV / "bin" / "pip"), "install", "-q", "toolong"], check=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        print(f"cannot install Toolong ({exc}); its column is skipped")
        return None
    return tl if tl.exists() else None


def process_tree(pid: int) -> list[int]:
    """`pid` and every process below it (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    out, i = [pid], 0
    while i < len(out):
        out.extend(children.get(out[i], []))
        i += 1
    return out


class PtyApp:
    """A full-screen app on a pseudo-terminal; collects everything it writes."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        master, slave = pty.openpty()
        rows, cols = SIZE
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        full_env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
        full_env.update(env or {})
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=full_env,
            start_new_session=True,
            cwd=str(REPO),
        )
        os.close(slave)
        self.fd = master
        self.buf = bytearray()

    def read_until(self, needle: bytes, timeout: float, start: int = 0) -> float | None:
        """Seconds (perf_counter) when `needle` first appears after byte `start`, or None."""
        deadline = time.perf_counter() + timeout
        while True:
            if self.buf.find(needle, max(0, start - len(needle))) >= 0:
                return time.perf_counter()
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            r, _, _ = select.select([self.fd], [], [], min(left, 0.05))
            if r:
                try:
                    data = os.read(self.fd, 1 << 16)
                except OSError:
                    return None
                if not data:
                    return None
                self.buf += data

    def drain(self, seconds: float) -> None:
        self.read_until(b"\x00never\x00", seconds, len(self.buf))

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def peak_kib(self) -> tuple[int, int]:
        """Peak RSS (VmHWM) of the app plus every process it started (the dashboard's scanner
        process counts too), summed: an upper bound of the tree's combined peak."""
        pids = process_tree(self.proc.pid)
        total = main = 0
        for pid in pids:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        kib = int(line.split()[1])
                        total += kib
                        main = kib if pid == self.proc.pid else main
            except OSError:
                continue
        return total, main

    def stop(self) -> tuple[int, int]:
        """Terminate; returns the peak RSS in KiB of the app's process tree and of the app."""
        peak, main = self.peak_kib()
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        rss = 0
        while time.monotonic() < deadline:
            self.drain(0.05)
            pid, _status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                rss = usage.ru_maxrss
                self.proc.returncode = 0
                break
        else:
            os.killpg(self.proc.pid, signal.SIGKILL)
            _pid, _status, usage = os.wait4(self.proc.pid, 0)
            rss = usage.ru_maxrss
        os.close(self.fd)
        # VmHWM is the trustworthy figure. wait4's ru_maxrss is only a fallback: Linux carries
        # the pre-exec high-water mark of the forked parent (this bench, which holds the test
        # data) into it, so it would report the bench's memory for every app alike.
        return (peak or rss), max(main, 1)


def _make_room(path: Path, lines: int) -> None:
    with path.open("wb") as f:
        step = 100_000
        for first in range(0, lines, step):
            f.write(
                b"".join(
                    b"[07:%02d:%02d] [flood] poller: retrying webhook #%07d\n"
                    % ((i // 60) % 60, i % 60, i)
                    for i in range(first, min(lines, first + step))
                )
            )


def _ackdeck_argv(room: Path, home: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ackdeck.core.cli",
        "tui",
        "--home",
        str(home),
        "--room",
        str(room),
    ]


def _first_paint(argv: list[str]) -> tuple[float | None, int, int]:
    app = PtyApp(argv)
    t = app.read_until(MARKER, 60)
    ttfp = None if t is None else t - app.started
    app.drain(3.0)  # same settle time for both: the whole file gets indexed
    tree, main = app.stop()
    return ttfp, tree, main


def _append_latency(room: Path, home: Path, follow: bool) -> list[float]:
    app = PtyApp(_ackdeck_argv(room, home))
    if app.read_until(MARKER, 60) is None:
        app.stop()
        return []
    app.drain(1.5)
    if follow:
        app.send(b"\t")  # focus the lines panel
        app.drain(0.3)
        app.send(b"G")  # newest line, follow
        app.drain(1.0)
    out: list[float] = []
    for n in range(APPENDS):
        token = b"PROBE-%05d-END" % n
        start = len(app.buf)
        fd = os.open(room, os.O_WRONLY | os.O_APPEND)
        t0 = time.perf_counter()
        os.write(fd, b"[probe] " + token + b"\n")
        os.close(fd)
        t1 = app.read_until(token, 5.0, start)
        if t1 is not None:
            out.append(t1 - t0)
        app.drain(0.12)  # let the screen settle so appends are not coalesced
    app.stop()
    return out


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    tl = _toolong()
    with tempfile.TemporaryDirectory(prefix="bench-tui-", dir=WORK) as tmp:
        base = Path(tmp)
        big = base / "flood.txt"
        _make_room(big, LINES)
        home = base / "home"
        home.mkdir()
        size_mb = big.stat().st_size / 1e6

        ours = [_first_paint(_ackdeck_argv(big, home)) for _ in range(RUNS)]
        theirs = [_first_paint([str(tl), str(big)]) for _ in range(RUNS)] if tl else []

        def med(rows: list[tuple[float | None, int, int]], i: int) -> float:
            vals = [r[i] for r in rows if r[i] is not None]
            return statistics.median(vals) if vals else float("nan")

        print(f"1,000,000-line room ({size_mb:.0f} MB), {SIZE[1]}x{SIZE[0]} pty, median of {RUNS}")
        print(f"{'':28} {'ackdeck tui':>12} {'Toolong':>12} {'ratio':>8}")
        a_t, b_t = med(ours, 0), med(theirs, 0)
        a_m, b_m = med(ours, 1) / 1024, med(theirs, 1) / 1024
        print(
            f"{'time to first paint (ms)':28} {a_t * 1000:12.0f} {b_t * 1000:12.0f} "
            f"{a_t / b_t if b_t == b_t else float('nan'):8.2f}"
        )
        print(
            f"{'peak memory (MiB)':28} {a_m:12.0f} {b_m:12.0f} "
            f"{a_m / b_m if b_m == b_m else float('nan'):8.2f}"
        )
        # The dashboard's total is two processes: the UI and the scanner that counts rooms.
        a_u = med(ours, 2) / 1024
        print(
            f"{'  of which the UI process':28} {a_u:12.0f} {b_m:12.0f} "
            f"{a_u / b_m if b_m == b_m else float('nan'):8.2f}"
        )

        small = base / "small.txt"
        _make_room(small, 10)
        lat_small = _append_latency(small, home, follow=False)
        lat_big = _append_latency(big, home, follow=True)
        print(f"\nappend-to-visible latency, line written by another process ({APPENDS} appends)")
        print(f"{'room':28} {'p50 (ms)':>12} {'p95 (ms)':>12} {'seen':>8}")
        for label, lat in (("10 lines", lat_small), ("1,000,000 lines, following", lat_big)):
            print(
                f"{label:28} {_pct(lat, 0.5) * 1000:12.1f} {_pct(lat, 0.95) * 1000:12.1f} "
                f"{len(lat):>5}/{APPENDS}"
            )
        print("target: p95 <= 100 ms")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
