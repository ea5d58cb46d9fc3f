"""`python -m bench dashboard [--quick]`: the dashboard over many rooms, against same-run baselines.

It builds its own cases under bench/_work/: one room, 300 rooms and 3,000 rooms of 1,000-10,000
lines (`--quick`: 1, 20 and 100 rooms of 100-1,000 lines, short windows; the suite's smoke test
uses it), and 300 rooms beside 30 monitored runs printing. The dashboard runs as a user runs it
(`ackdeck tui --config FILE` listing every room, in a pseudo-terminal at 120x35).

- idle CPU: the dashboard's whole process tree (UI and scanner) over a quiet window, in % of
  one core; baselines: Toolong on the one room, and for the runs case a plain one-table Textual
  app recounting every file each second (bench/plain_table.py). Target: at most Toolong's, and
  <= 1% at 300 and 3,000 rooms.
- table on screen: spawn until the counts of the visible rows (rooms 1-5, whose line counts
  are unique) were written to the terminal. Target: <= 1.5 s at 3,000 rooms.
- push -> Pending: another process pushes into a visible room; until its new count reaches
  the terminal. p50 / p95. Target: p95 <= 250 ms at 300 and 3,000 (ratio <= 1.5).
- key -> screen: Down moves the cursor; until the next room's name is repainted. While 10
  producers push 20 lines/s each into rooms further down. Baseline: the plain table app.
- `room status DIR/*.txt --json` against `wc -l` of the same files (the same bytes read), run
  round-robin with bytecode caches (bench/bench_status.py, `python -m bench status`, measures
  this alone, with CPU time and Python's own floor).
- memory: the tree's peak RSS; per room = growth from the middle to the largest case.

`--focus` (`--repeat=N`, default 3) measures only the two issue-22 targets that need repeats on
a shared machine: memory per room in each process (the UI's and the scanner's peak RSS, growth
from 300 to 3,000 rooms) and key -> screen at 300 and 3,000 rooms while 10 producers push; the
cases alternate, and latencies are pooled over the repeats.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_tui import REPO, WORK, PtyApp, _toolong, process_tree

SIZE = (35, 120)
PROBES = range(1, 6)  # rows whose counts are unique and visible


@dataclass
class Mode:
    cases: tuple[int, ...]
    lines: tuple[int, int]
    idle_s: float
    pushes: int
    keys: int
    runs: int
    status_repeats: int
    one_room_lines: int  # the one-room case: a static room of this many lines


FULL = Mode((1, 300, 3000), (1000, 10000), 20.0, 20, 30, 30, 3, 1_000_000)
QUICK = Mode((1, 20, 100), (100, 1000), 2.0, 4, 5, 3, 1, 20_000)


@dataclass
class Result:
    label: str
    figures: dict[str, float] = field(default_factory=dict)


def _probe_lines(i: int) -> int:
    return 5007 + 123 * i  # 5,130 .. 5,622: no other number on screen looks like these


def _build(root: Path, n: int, mode: Mode) -> list[Path]:
    rnd = random.Random(n)
    rooms = []
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        p = root / f"room-{i:04d}.txt"
        if n == 1:
            lines = mode.one_room_lines
        elif i in PROBES or i == 0:
            lines = _probe_lines(i)
        else:
            lines = rnd.randint(*mode.lines)
        p.write_bytes(
            b"".join(b"[07:00:00] [r%04d] poller: event #%07d\n" % (i, j) for j in range(lines))
        )
        rooms.append(p)
    return rooms


def _config(path: Path, rooms: list[Path], home: Path) -> Path:
    body = f'home = "{home}"\nrooms = [\n' + "".join(f'  "{r}",\n' for r in rooms) + "]\n"
    path.write_text(body)
    return path


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


def idle_cpu(app: PtyApp, seconds: float) -> float:
    """% of one core used by the app's process tree over `seconds` (its output drained)."""
    pids = process_tree(app.proc.pid)
    hz = os.sysconf("SC_CLK_TCK")
    before, t0 = _cpu_ticks(pids), time.perf_counter()
    app.drain(seconds)
    pids = process_tree(app.proc.pid)
    return 100.0 * (_cpu_ticks(pids) - before) / hz / (time.perf_counter() - t0)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def _ours(cfg: Path) -> list[str]:
    return [sys.executable, "-m", "ackdeck.core.cli", "tui", "--config", str(cfg)]


def table_on_screen(app: PtyApp, timeout: float = 120) -> float | None:
    t = None
    for i in PROBES:
        t = app.read_until(f"{_probe_lines(i):,}".encode(), timeout)
        if t is None:
            return None
    return None if t is None else t - app.started


def push_latency(app: PtyApp, room: Path, start_count: int, pushes: int) -> list[float]:
    from ackdeck.core.rooms.file.room import Room

    r = Room(room)
    out = []
    for n in range(pushes):
        want = f"{start_count + n + 1:,}".encode()
        mark = len(app.buf)
        t0 = time.perf_counter()
        r.push(f"probe push {n}")
        t1 = app.read_until(want, 10.0, mark)
        if t1 is not None:
            out.append(t1 - t0)
        app.drain(0.3)
    r.close()
    return out


def key_latency(app: PtyApp, names: list[str], presses: int) -> list[float]:
    out = []
    for i in range(1, presses + 1):
        want = names[i].encode()
        mark = len(app.buf)
        t0 = time.perf_counter()
        app.send(b"\x1b[B")  # Down
        t1 = app.read_until(want, 10.0, mark)
        if t1 is not None:
            out.append(t1 - t0)
        app.drain(0.15)
    return out


def keys_while_pushing(app: PtyApp, rooms: list[Path], presses: int) -> list[float]:
    """Key latencies while 10 producers push 20 lines/s each into the last 10 rooms."""
    producers = Producers(rooms[-10:])
    try:
        app.drain(2.0)
        return key_latency(app, [r.name for r in rooms], presses)
    finally:
        producers.stop()


class Producers:
    """10 threads, each pushing 20 lines/s into its own room (other processes' writes)."""

    def __init__(self, rooms: list[Path], rate: float = 20.0) -> None:
        code = (
            "import sys, time, threading\n"
            "from ackdeck.core.rooms.file.room import Room\n"
            "def run(p):\n"
            "    r = Room(p); n = 0\n"
            "    while True:\n"
            f"        r.push('producer line %d' % n); n += 1; time.sleep({1 / rate})\n"
            "for p in sys.argv[1:]:\n"
            "    threading.Thread(target=run, args=(p,), daemon=True).start()\n"
            "time.sleep(1e6)\n"
        )
        self.proc = subprocess.Popen([sys.executable, "-c", code, *map(str, rooms)], cwd=REPO)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _status_vs_wc(rooms: list[Path], repeats: int, work: Path) -> tuple[float, float]:
    """Median wall seconds of `room status --json` and of `wc -l` over `rooms`, run
    round-robin (bench/bench_status.py, which also prints the CPU time and Python's floor)."""
    from bench.bench_status import measure

    got = measure(rooms, repeats, work)
    return got["room status --json"][0], got["wc -l"][0]


def _start_runs(home: Path, n: int) -> None:
    env = dict(os.environ, ACKDECK_HOME=str(home))
    for i in range(n):
        subprocess.run(
            [sys.executable, "-m", "ackdeck.core.cli", "run", f"printer{i:02d}", "--monitor",
             "ERROR", "--", "sh", "-c", "while :; do echo tick; sleep 0.2; done"],
            check=True, env=env, cwd=REPO, stdout=subprocess.DEVNULL,
        )  # fmt: skip


def _stop_runs(home: Path, n: int) -> None:
    env = dict(os.environ, ACKDECK_HOME=str(home))
    for i in range(n):
        subprocess.run(
            [sys.executable, "-m", "ackdeck.core.cli", "kill", f"printer{i:02d}"],
            env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip


def _case(base: Path, n: int, mode: Mode, *, runs: int = 0) -> Result:
    label = f"{n:,} room{'s' if n != 1 else ''}" + (f" + {runs} runs" if runs else "")
    res = Result(label)
    rooms = _build(base / f"rooms-{n}", n, mode)
    home = base / f"home-{n}-{runs}"
    home.mkdir(exist_ok=True)
    if runs:
        _start_runs(home, runs)
    cfg = _config(base / f"dash-{n}-{runs}.toml", rooms, home)
    try:
        app = PtyApp(_ours(cfg))
        if n > max(PROBES):
            t = table_on_screen(app)
            res.figures["table on screen (s)"] = float("nan") if t is None else t
        else:
            app.read_until(b"poller: event", 60)
        app.drain(5.0)  # the first count and its follow-ups settle
        res.figures["idle CPU (% of a core)"] = idle_cpu(app, mode.idle_s)
        if n > max(PROBES) and not runs:
            lat = push_latency(app, rooms[2], _probe_lines(2), mode.pushes)
            res.figures["push -> Pending p50 (ms)"] = _pct(lat, 0.5) * 1000
            res.figures["push -> Pending p95 (ms)"] = _pct(lat, 0.95) * 1000
            keys = keys_while_pushing(app, rooms, mode.keys)
            res.figures["key -> screen p50 (ms)"] = _pct(keys, 0.5) * 1000
            res.figures["key -> screen p95 (ms)"] = _pct(keys, 0.95) * 1000
        tree, _main = app.stop()
        res.figures["peak memory (MiB)"] = tree / 1024
        if n > max(PROBES) and not runs:
            ours, wc = _status_vs_wc(rooms, mode.status_repeats, base)
            res.figures["room status (ms)"] = ours * 1000
            res.figures["wc -l (ms)"] = wc * 1000
    finally:
        if runs:
            _stop_runs(home, runs)
    return res


def _baseline_table(rooms: list[Path], mode: Mode, keys: bool) -> dict[str, float]:
    app = PtyApp([sys.executable, "-m", "bench.plain_table", *map(str, rooms)])
    app.read_until(rooms[min(len(rooms) - 1, 3)].name.encode(), 120)
    app.drain(3.0)
    out = {"idle CPU (% of a core)": idle_cpu(app, mode.idle_s)}
    if keys:
        lat = keys_while_pushing(app, rooms, mode.keys)
        out["key -> screen p50 (ms)"] = _pct(lat, 0.5) * 1000
        out["key -> screen p95 (ms)"] = _pct(lat, 0.95) * 1000
    app.stop()
    return out


def _toolong_idle(room: Path, mode: Mode) -> float | None:
    tl = _toolong()
    if tl is None:
        return None
    app = PtyApp([str(tl), str(room)])
    app.read_until(b"poller: event", 60)
    app.drain(5.0)
    cpu = idle_cpu(app, mode.idle_s)
    app.stop()
    return cpu


def run(mode: Mode) -> list[Result]:
    WORK.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-dash-", dir=WORK) as tmp:
        base = Path(tmp)
        for n in mode.cases:
            results.append(_case(base, n, mode))
        mid = mode.cases[1]
        results.append(_case(base, mid, mode, runs=mode.runs))
        one = base / f"rooms-{mode.cases[0]}" / "room-0000.txt"
        tl = _toolong_idle(one, mode)
        mid_rooms = sorted((base / f"rooms-{mid}").glob("*.txt"))
        plain = _baseline_table(mid_rooms, mode, keys=True)
        _report(results, tl, plain, mode)
    shutil.rmtree(base, ignore_errors=True)
    return results


def _report(results: list[Result], tl: float | None, plain: dict[str, float], mode: Mode) -> None:
    nan = float("nan")
    one, mid, big, runs = results
    cpu = "idle CPU (% of a core)"

    def ratio(a: float, b: float | None) -> str:
        return "-" if b is None or b != b or b == 0 else f"{a / b:.2f}"

    rows: list[tuple[str, str, str, str, str]] = []

    def row(case: str, what: str, ours: float, base_name: str, base: float | None) -> None:
        shown = "-" if base is None or base != base else f"{base:.1f}"
        rows.append((case, what, f"{ours:.1f}", f"{base_name} {shown}", ratio(ours, base)))

    row(one.label, cpu, one.figures[cpu], "Toolong", tl)
    for r in (mid, big):
        row(r.label, cpu, r.figures[cpu], "floor", 0.0)
    row(runs.label, cpu, runs.figures[cpu], "plain table", plain.get(cpu))
    for r in (mid, big):
        row(r.label, "table on screen (s)", r.figures.get("table on screen (s)", nan), "", None)
    for r in (mid, big):
        for q in ("p50", "p95"):
            k = f"push -> Pending {q} (ms)"
            row(r.label, k, r.figures.get(k, nan), "", None)
    rows.append(
        (
            f"{big.label} / {mid.label}",
            "push -> Pending p95 ratio",
            ratio(big.figures["push -> Pending p95 (ms)"], mid.figures["push -> Pending p95 (ms)"]),
            "target <= 1.5",
            "",
        )
    )
    for r in (mid, big):
        for q in ("p50", "p95"):
            k = f"key -> screen {q} (ms)"
            row(r.label, k, r.figures.get(k, nan), f"plain table ({mid.label})", plain.get(k))
    for r in (mid, big):
        row(r.label, "room status --json (ms)", r.figures["room status (ms)"], "wc -l",
            r.figures["wc -l (ms)"])  # fmt: skip
    for r in results:
        row(r.label, "peak memory (MiB)", r.figures["peak memory (MiB)"], "", None)
    n_mid, n_big = (int(r.label.split()[0].replace(",", "")) for r in (mid, big))
    per_room = (
        (big.figures["peak memory (MiB)"] - mid.figures["peak memory (MiB)"])
        * 1024
        / (n_big - n_mid)
    )
    rows.append((f"{mid.label} -> {big.label}", "memory per room (KiB)", f"{per_room:.1f}",
                 "target <= 10", ""))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    head = ("case", "measure", "ackdeck", "baseline", "ratio")
    widths = [max(w, len(h)) for w, h in zip(widths, head, strict=True)]
    print(f"{SIZE[1]}x{SIZE[0]} pty, {'quick' if mode is QUICK else 'full'} mode")
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def _focus_case(base: Path, n: int, mode: Mode) -> tuple[dict[str, int], list[float]]:
    """One start of the dashboard over `n` rooms: the key latencies while 10 producers push,
    then each process's peak RSS (KiB): the UI's and the rest of its tree (the scanner)."""
    rooms = sorted((base / f"rooms-{n}").glob("*.txt")) or _build(base / f"rooms-{n}", n, mode)
    home = base / f"home-{n}"
    home.mkdir(exist_ok=True)
    app = PtyApp(_ours(_config(base / f"dash-{n}.toml", rooms, home)))
    table_on_screen(app)
    app.drain(5.0)
    keys = keys_while_pushing(app, rooms, mode.keys)
    tree, ui = app.stop()
    return {"ui": ui, "scanner": tree - ui, "tree": tree}, keys


def focus(repeat: int) -> None:
    mode = FULL
    WORK.mkdir(parents=True, exist_ok=True)
    mid, big = mode.cases[1], mode.cases[2]
    mem: dict[int, list[dict[str, int]]] = {mid: [], big: []}
    lat: dict[int, list[float]] = {mid: [], big: []}
    with tempfile.TemporaryDirectory(prefix="bench-dash-", dir=WORK) as tmp:
        base = Path(tmp)
        for i in range(repeat):
            for n in (mid, big) if i % 2 == 0 else (big, mid):
                peak, keys = _focus_case(base, n, mode)
                mem[n].append(peak)
                lat[n] += keys
                print(f"  run {i + 1}, {n:,} rooms: peak KiB {peak}, key p50/p95 "
                      f"{_pct(keys, 0.5) * 1000:.1f} / {_pct(keys, 0.95) * 1000:.1f} ms",
                      flush=True)  # fmt: skip
    print(f"{SIZE[1]}x{SIZE[0]} pty, focus mode, {repeat} runs per case (medians of peaks)")
    for part in ("ui", "scanner", "tree"):
        a, b = (statistics.median(m[part] for m in mem[n]) for n in (mid, big))
        print(f"  {part:8} peak {a / 1024:6.1f} / {b / 1024:6.1f} MiB ({mid:,} / {big:,} rooms), "
              f"per room {(b - a) / (big - mid):.2f} KiB")  # fmt: skip
    for n in (mid, big):
        print(f"  key -> screen at {n:,} rooms: p50 {_pct(lat[n], 0.5) * 1000:.1f} ms, "
              f"p95 {_pct(lat[n], 0.95) * 1000:.1f} ms ({len(lat[n])} presses)")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    argv = argv or []
    if "--focus" in argv:
        repeat = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--repeat=")), 3)
        focus(repeat)
        return
    run(QUICK if "--quick" in argv else FULL)


if __name__ == "__main__":
    main(sys.argv[1:])
