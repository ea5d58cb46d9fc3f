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

- worst append -> row at 1,000 rooms, in tries (issue 43): 10 tries; in each the dashboard's
  cursor goes to a random room (the palette's "Show room"), then 60 lines are pushed, each into
  a random room whose row is on screen (not the highlighted one, whose count is the lines
  panel's), 0.2-0.6 s apart, each timed until that room's new count reaches the terminal. A try
  lasts ~30 s, so the safety net's sweep over every room falls inside. Printed per try: the
  worst and the median, pass when the worst is <= 0.5 s; then the tries passed, the median
  and the worst of every push, and the load average before and after. `--tries` runs only
  this part (`--quick`: 100 rooms, 2 tries of 5 pushes).

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

from bench import load_average, load_line
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
class Tries:
    rooms: int
    tries: int
    pushes: int  # per try
    gap: tuple[float, float] = (0.2, 0.6)  # seconds between pushes (uniform)
    limit: float = 0.5  # a try passes when its worst push is at most this long


FULL_TRIES = Tries(1000, 10, 60)
QUICK_TRIES = Tries(100, 2, 5)
NEAR = 6  # the pushes go into the rows just above the highlighted one (all on screen)


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


def _tries_lines(i: int) -> int:
    """Lines of room `i` in the tries: any two rooms within 20 rows of each other (a screen
    of them) differ by at least 50, so a room's new count is never a neighbour's, even after
    50 pushes into one room."""
    return 1000 + (i % 20) * 100 + (i // 20) % 50


def _build_tries(root: Path, n: int) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    rooms = []
    for i in range(n):
        p = root / f"room-{i:04d}.txt"
        line = b"[07:00:00] [r%04d] poller: event #%%07d\n" % i
        p.write_bytes(b"".join(line % j for j in range(_tries_lines(i))))
        rooms.append(p)
    return rooms


def _go_to(app: PtyApp, room: int, highlighted: int) -> bool:
    """Highlight room `room` as an owner would: to the top (g), then the palette's "Show
    room"; True once the lines panel shows its lines. From the top the table scrolls down to
    it, so it is the bottom row on screen and the NEAR rooms above it are on screen too."""
    mark = len(app.buf)
    app.send(b"g")
    if highlighted != 0:  # (already at the top: nothing is drawn again)
        app.read_until(b"[r0000]", 10.0, mark)
    app.drain(0.3)
    app.send(b"\x10")  # ctrl+p
    app.read_until(b"Search", 10.0, len(app.buf))
    app.drain(0.3)
    app.send(f"Show room room-{room:04d}.txt".encode())
    app.drain(1.0)  # the palette's search runs as the text is typed
    mark = len(app.buf)
    app.send(b"\r")
    return app.read_until(f"[r{room:04d}]".encode(), 10.0, mark) is not None


def push_tries(base: Path, spec: Tries, seed: int = 43) -> list[list[float]]:
    """The pushes' latencies (s) of each try; a push never seen within 10 s counts as inf."""
    rnd = random.Random(seed)
    rooms = _build_tries(base / f"tries-{spec.rooms}", spec.rooms)
    home = base / f"home-tries-{spec.rooms}"
    home.mkdir(exist_ok=True)
    counts = [_tries_lines(i) for i in range(spec.rooms)]
    app = PtyApp(_ours(_config(base / f"dash-tries-{spec.rooms}.toml", rooms, home)))
    out: list[list[float]] = []
    highlighted = 0  # the first room is highlighted at start
    try:
        app.read_until(b"[r0000]", 120)
        app.read_until(f"{counts[1]:,}".encode(), 120)  # the first count is on screen
        app.drain(5.0)  # the first count and its follow-ups settle
        from ackdeck.core.rooms.file.room import Room

        for _ in range(spec.tries):
            started = time.perf_counter()
            at = rnd.randrange(NEAR + 1, spec.rooms)
            if not _go_to(app, at, highlighted):
                raise RuntimeError(f"the palette did not highlight room {at}")
            highlighted = at
            app.drain(1.0)
            lat: list[float] = []
            for n in range(spec.pushes):
                i = rnd.randrange(at - NEAR, at)
                counts[i] += 1
                mark = len(app.buf)
                room = Room(rooms[i])
                t0 = time.perf_counter()
                room.push(f"probe push {n}")
                t1 = app.read_until(f"{counts[i]:,}".encode(), 10.0, mark)
                room.close()
                lat.append(float("inf") if t1 is None else t1 - t0)
                app.drain(rnd.uniform(*spec.gap))
            out.append(lat)
            print(f"  try {len(out)}: around room {at}, worst {max(lat) * 1000:.0f} ms, "
                  f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
    finally:
        app.stop()
    return out


def report_tries(spec: Tries, tries: list[list[float]], before: str, after: str) -> None:
    print(f"worst append -> row at {spec.rooms:,} rooms: {len(tries)} tries of {spec.pushes} "
          "pushes, each into a random room on screen; pass: worst <= "
          f"{spec.limit:g} s")  # fmt: skip
    head = ("try", "worst (ms)", "median (ms)", "result")
    rows = [
        (str(k), f"{max(lat) * 1000:.0f}", f"{statistics.median(lat) * 1000:.0f}",
         "pass" if max(lat) <= spec.limit else "FAIL")
        for k, lat in enumerate(tries, 1)
    ]  # fmt: skip
    every = [x for lat in tries for x in lat]
    passed = sum(max(lat) <= spec.limit for lat in tries)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    mid, p95, worst = statistics.median(every), _pct(every, 0.95), max(every)
    print(f"passed {passed} of {len(tries)}; every push: median {mid * 1000:.0f} ms, "
          f"p95 {p95 * 1000:.0f} ms, worst {worst * 1000:.0f} ms")  # fmt: skip
    print(before)
    print(after)


def tries_only(spec: Tries) -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-dash-", dir=WORK) as tmp:
        before = load_line("before")
        peak = load_average()[0]
        tries = push_tries(Path(tmp), spec)
        after = load_line("after", max(peak, load_average()[0]))
        report_tries(spec, tries, before, after)


def run(mode: Mode) -> list[Result]:
    WORK.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-dash-", dir=WORK) as tmp:
        base = Path(tmp)
        spec = QUICK_TRIES if mode is QUICK else FULL_TRIES
        before = load_line("before")
        tries = push_tries(base, spec)
        # Printed first: the main table is the last thing printed (the quick test reads it).
        report_tries(spec, tries, before, load_line("after"))
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
    if "--tries" in argv:
        tries_only(QUICK_TRIES if "--quick" in argv else FULL_TRIES)
        return
    run(QUICK if "--quick" in argv else FULL)


if __name__ == "__main__":
    main(sys.argv[1:])
