"""`python -m bench status [--quick]`: `room status` over many rooms, against `wc -l`, and a
metrics scrape of the same rooms against `room status`.

It builds the dashboard bench's rooms (bench/bench_dashboard.py `_build`: 300, 3,000 and 10,000
rooms of 1,000-10,000 lines of ~40 bytes; `--quick`: 20 and 100 rooms of 100-1,000 lines) under
bench/_work/ and runs, round-robin so a busy machine slows each alike, the median of each:

- `ackdeck room status DIR/*.txt --json` (what an owner runs over every room);
- `ackdeck metrics --no-runs --config FILE` over the same rooms (one scrape: what `metrics
  --serve` computes per request; the rooms in a config file, as a server over thousands of
  rooms is given them: argparse takes time quadratic in repeated `--room` options); a second
  table gives its ratio to `room status` (issue 30: <= 1.5x);
- `wc -l` of the same files (the same bytes read): issue 22's target is <= 2x;
- `python -c pass` in the same venv: Python's start-up, which no command avoids;
- the floor of a Python count: a `python -c` that opens each file, reads it whole and counts
  its newlines with `bytes.count` (what any status in Python costs at least, with nothing of
  ackdeck's: no lock, ledger, receipts or ages).

Wall time is printed with the CPU time the process used (user + system, from the kernel's
accounting of the child), which other load on the machine distorts far less. Bytecode caches go
to a temporary PYTHONPYCACHEPREFIX, as in bench/bench_startup.py: an installed ackdeck, not a
recompile of every module per run.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.bench_dashboard import FULL, QUICK, Mode, _build
from bench.bench_tui import REPO, WORK

REPEATS = {id(FULL): 9, id(QUICK): 3}
CASES = {id(FULL): (300, 3000, 10000), id(QUICK): (20, 100)}
STATUS, SCRAPE = "room status --json", "metrics scrape"

# The floor: read each file whole and count its newlines, nothing else.
COUNT = """import os, sys
n = 0
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    n += os.pread(fd, os.fstat(fd).st_size, 0).count(b"\\n")
    os.close(fd)
print(n)
"""


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `argv` to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=REPO)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(rooms: list[Path], repeats: int, work: Path) -> dict[str, tuple[float, float]]:
    """{name: (median wall s, median CPU s)} of the status, `wc -l`, `python -c pass` and the
    Python count floor over `rooms`, run round-robin `repeats` times after one warm-up round
    (bytecode caches, page cache)."""
    env = _env(work)
    paths = [str(r) for r in rooms]
    py = sys.executable
    config = work / "metrics.toml"
    config.write_text("rooms = [\n" + "".join(f'  "{p}",\n' for p in paths) + "]\n")
    argvs = {
        STATUS: [py, "-m", "ackdeck.core.cli", "room", "status", *paths, "--json"],
        SCRAPE: [py, "-m", "ackdeck.core.cli", "metrics", "--no-runs", "--config", str(config)],
        "wc -l": ["wc", "-l", *paths],
        "python -c pass": [py, "-c", "pass"],
        "python count floor": [py, "-c", COUNT, *paths],
    }
    for argv in argvs.values():
        _run(argv, env)
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in argvs}
    for _ in range(repeats):
        for name, argv in argvs.items():
            got[name].append(_run(argv, env))
    return {
        name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for name, runs in got.items()
    }


def run(mode: Mode) -> dict[int, dict[str, tuple[float, float]]]:
    WORK.mkdir(parents=True, exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="status-", dir=WORK) as tmp:
        base = Path(tmp)
        for n in CASES[id(mode)]:
            rooms = _build(base / f"rooms-{n}", n, mode)
            results[n] = measure(rooms, REPEATS[id(mode)], base)
            shutil.rmtree(base / f"rooms-{n}")
    _report(results, mode)
    return results


def _report(results: dict[int, dict[str, tuple[float, float]]], mode: Mode) -> None:
    load = os.getloadavg()[0]
    print(f"{'quick' if mode is QUICK else 'full'} mode, median of {REPEATS[id(mode)]} "
          f"round-robin runs, load average {load:.2f}")  # fmt: skip
    head = ("rooms", "command", "wall (ms)", "x wc -l", "CPU (ms)", "x wc -l", "CPU per room (us)")
    rows = []
    for n, figures in results.items():
        wc_wall, wc_cpu = figures["wc -l"]
        for name, (wall, cpu) in figures.items():
            ms, per_room = f"{cpu * 1000:.1f}", f"{cpu / n * 1e6:.0f}"
            # CPU time is accounted in scheduler ticks on some kernels: a tiny `wc` may show 0.
            x_cpu = cpu / wc_cpu if wc_cpu else float("nan")
            wall_ms, x_wall = f"{wall * 1000:.1f}", wall / wc_wall
            rows.append((f"{n:,}", name, wall_ms, f"{x_wall:.2f}", ms, f"{x_cpu:.2f}", per_room))
    _table(head, rows)
    print()
    ratio_head = (
        "rooms", "status wall (ms)", "scrape wall (ms)", "scrape x status", "CPU x status"
    )  # fmt: skip
    ratio_rows = []
    for n, figures in results.items():
        (s_wall, s_cpu), (m_wall, m_cpu) = figures[STATUS], figures[SCRAPE]
        x_cpu = m_cpu / s_cpu if s_cpu else float("nan")
        ratio_rows.append(
            (f"{n:,}", f"{s_wall * 1000:.1f}", f"{m_wall * 1000:.1f}",
             f"{m_wall / s_wall:.2f}", f"{x_cpu:.2f}")
        )  # fmt: skip
    _table(ratio_head, ratio_rows)


def _table(head: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    for r in (head, *rows):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def main(argv: list[str] | None = None) -> None:
    run(QUICK if argv and "--quick" in argv else FULL)


if __name__ == "__main__":
    main(sys.argv[1:])
