"""`python -m bench agents [--quick]`: `ackdeck agents` over 300 sessions, against `room
status` of the same sessions' rooms (issue 32: <= 2x).

Each session has its own room of 1,000 lines (`--quick`: 30 sessions of 100 lines) that it
has partly read, and a presence log of a working day's events: a start, then turns (a prompt,
reads, acks, a stop) until the log holds EVENTS events. Both commands run as processes,
round-robin so a busy machine slows each alike; the median wall and CPU time of each are
printed with the ratio. `ackdeck agents` reads every presence log, opens every room once for
its status and looks for each session's wakes: the ratio is what the presence costs on top
of the rooms' status.

It then measures the dashboard's idle CPU over the same 300 rooms, once with the home holding
the 300 sessions' presence (the Agents panel lists them, and refreshes them while idle) and
once with an empty home (no agents), alternating (issue 32: the idle CPU stays within its
figures with 300 agents). `--quick` skips it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench.bench_status import _env, _run, _table
from bench.bench_tui import REPO, WORK

FULL = {"sessions": 300, "lines": 1000, "repeats": 7, "idle_rounds": 2}
QUICK = {"sessions": 30, "lines": 100, "repeats": 3, "idle_rounds": 0}
IDLE_S = 15.0  # seconds of each idle measurement
EVENTS = 200  # per session: about a day of turns
TARGET = 2.0


def _build(base: Path, sessions: int, lines: int) -> tuple[Path, list[Path]]:
    sys.path.insert(0, str(REPO / "src"))
    from ackdeck.core.presence import log
    from ackdeck.core.service.deck import Deck

    home = base / "home"
    rooms = []
    t0 = 1_800_000_000.0
    for i in range(sessions):
        session = f"agent-{i:03d}"
        room = base / "rooms" / f"{session}.txt"
        room.parent.mkdir(parents=True, exist_ok=True)
        room.write_bytes(b"".join(b"[t] [ci] build %06d finished\n" % n for n in range(lines)))
        rooms.append(room)
        deck = Deck(home, session, [room], clock=lambda: t0)
        deck.read(deck.room(), max_bytes=lines * 10)  # part read: unread and in-flight lines
        log.record(home, session, "start", at=t0, detail="startup", rooms=[str(room)])
        n = 1
        t = t0
        while n < EVENTS:
            for kind in ("prompt", "read", "ack", "stop"):
                t += 7
                extra = {"room": str(room), "lines": 3, "waited": 4.0} if kind == "read" else {}
                log.record(home, session, kind, at=t, **extra)
                n += 1
    return home, rooms


def run(mode: dict[str, int]) -> dict[str, tuple[float, float]]:
    WORK.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agents-", dir=WORK) as tmp:
        base = Path(tmp)
        home, rooms = _build(base, mode["sessions"], mode["lines"])
        env = _env(base)
        env["ACKDECK_HOME"] = str(home)
        py = sys.executable
        argvs = {
            "agents --json": [py, "-m", "ackdeck.core.cli", "agents", "--json"],
            "room status --json": [
                py,
                "-m",
                "ackdeck.core.cli",
                "room",
                "status",
                *map(str, rooms),
                "--json",
            ],  # fmt: skip
        }
        for argv in argvs.values():
            _run(argv, env)  # warm-up: bytecode and page caches
        got: dict[str, list[tuple[float, float]]] = {name: [] for name in argvs}
        for _ in range(mode["repeats"]):
            for name, argv in argvs.items():
                got[name].append(_run(argv, env))
        figures = {
            name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
            for name, runs in got.items()
        }
        _report(figures, mode)
        if mode["idle_rounds"]:
            _report_idle(_dashboard_idle(base, home, rooms, mode["idle_rounds"]))
    return figures


def _dashboard_idle(
    base: Path, home: Path, rooms: list[Path], rounds: int
) -> dict[str, list[float]]:
    """The dashboard's idle CPU (% of a core) over `rooms`, with and without the agents."""
    from bench.bench_dashboard import _config, _ours, idle_cpu
    from bench.bench_tui import PtyApp

    empty = base / "empty-home"
    empty.mkdir()
    cases = {
        f"{len(rooms)} rooms + {len(rooms)} agents": home,
        f"{len(rooms)} rooms, no agents": empty,
    }
    got: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, case_home in cases.items():
            cfg = _config(base / "dash.toml", rooms, case_home)
            app = PtyApp(_ours(cfg))
            try:
                # the rooms are named after their sessions: the first row of either panel
                if app.read_until(b"agent-000", 120) is None:
                    raise RuntimeError(f"the dashboard never settled ({name})")
                app.drain(5.0)  # the first counts, listings and their follow-ups settle
                got[name].append(idle_cpu(app, IDLE_S))
            finally:
                app.stop()
    return got


def _report_idle(got: dict[str, list[float]]) -> None:
    print()
    print(f"dashboard idle CPU, median of {len(next(iter(got.values())))} x {IDLE_S:g} s")
    figures = {name: statistics.median(v) for name, v in got.items()}
    base = list(figures.values())[-1]
    rows = [(name, f"{cpu:.2f}", f"{cpu / base:.2f}" if base else "nan")
            for name, cpu in figures.items()]  # fmt: skip
    _table(("case", "% of a core", "x no agents"), rows)


def _report(figures: dict[str, tuple[float, float]], mode: dict[str, int]) -> None:
    print(
        f"{mode['sessions']} sessions, {EVENTS} presence events and a room of "
        f"{mode['lines']:,} lines each; median of {mode['repeats']} round-robin runs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    s_wall, s_cpu = figures["room status --json"]
    rows = []
    for name, (wall, cpu) in figures.items():
        x_cpu = cpu / s_cpu if s_cpu else float("nan")
        rows.append((name, f"{wall * 1000:.1f}", f"{wall / s_wall:.2f}", f"{cpu * 1000:.1f}",
                     f"{x_cpu:.2f}"))  # fmt: skip
    _table(("command", "wall (ms)", "x status", "CPU (ms)", "x status"), rows)
    wall_x = figures["agents --json"][0] / s_wall
    verdict = "within" if wall_x <= TARGET else "OVER"
    print(f"agents x room status: {wall_x:.2f} ({verdict} the {TARGET:g}x target)")


def main(argv: list[str] | None = None) -> None:
    run(QUICK if argv and "--quick" in argv else FULL)


if __name__ == "__main__":
    main(sys.argv[1:])
