"""`ackdeck demo`: the dashboard on a live, temporary world.

- a temporary home and three rooms fed by simulated pollers at different rates (separate
  processes: one appends like a shell poller without locking, two push through core);
- a simulated agent (another process) that reads and acks through core, sometimes slowly, so
  lines arrive between its read and its ack and are preserved; it also drains its wakes, and
  every other time reads the process output first, so those matches are superseded (it was
  shown them) instead of delivered;
- two monitored processes started through `core.service.procs.start`: `build` ends with DONE,
  `tests` prints a FAIL and exits 1; their monitors wake the agent's session. An operator
  process starts each again a few seconds after it ends, for as long as the demo is open.

`ACKDECK_DEMO_PACE` (default 1.0) scales every pause (the tests run the world faster).

Everything it started is stopped and the temporary directory removed when the dashboard exits.
The poller and agent entry points run as `python -m ackdeck.tui.demo poll|agent …`; this
module imports Textual only inside `run_demo`, so those processes stay light.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ackdeck.core.base.ranges import parse_in_range
from ackdeck.core.errors import AckdeckError
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.rooms import poller_line

REPO = Path(__file__).resolve().parent.parent
AGENT = "agent"

# Monitored processes: (name, script, monitor). Each run takes a few seconds; the operator
# starts a name again once its last run ended.
PROCESSES = [
    (
        "build",
        "for i in 1 2 3 4 5 6; do echo compiling module $i/6; sleep {step}; done;"
        " echo linking; sleep {step}; echo DONE",
        "DONE",
    ),
    (
        "tests",
        "echo collected 48 items; for i in $(seq 1 12); do echo test_$i ok; sleep {step};"
        " done; echo 'FAIL test_cart_total: 19.99 != 20.00'; sleep {step};"
        " echo '47 passed, 1 failed'; exit 1",
        "FAIL",
    ),
]


def pace() -> float:
    """How much slower than written the demo's scenes run ($ACKDECK_DEMO_PACE, 0.01-100)."""
    raw = os.environ.get("ACKDECK_DEMO_PACE") or "1.0"
    return parse_in_range(raw, "ACKDECK_DEMO_PACE", 0.01, 100)


def nap(lo: float, hi: float) -> None:
    time.sleep(random.uniform(lo, hi) * pace())


# (room, lines per second, sender, how it writes)
POLLERS = [
    ("alerts.txt", 8.0, "pager", "raw"),
    ("ci.txt", 1.0, "ci", "push"),
    ("chat.txt", 0.3, "dana", "push"),
]
MESSAGES = {
    "pager": [
        "disk 91% on db-3",
        "p95 latency 840ms on checkout",
        "pod checkout-7f9c restarted",
        "error rate 2.1% (api)",
    ],
    "ci": ["build #4813 started", "build #4813 passed", "deploy staging ok", "lint warnings: 3"],
    "dana": ["can you look at the cart bug?", "thanks!", "standup in 5"],
}


def _orphaned(parent: int) -> bool:
    # The demo stops its helpers on exit; if the demo itself was killed (SIGKILL, a closed
    # terminal), the helpers notice they were re-parented and stop on their own.
    return os.getppid() != parent


def poll(room: str, rate: float, sender: str, mode: str, parent: int) -> None:
    """A poller: one line per notification, until terminated or orphaned."""
    name = Path(room).stem
    deck = Deck(rooms=[room])
    n = 0
    while not _orphaned(parent):
        n += 1
        body = f"{random.choice(MESSAGES[sender])} (#{n})"
        line = poller_line(name, sender, body, time.time())
        if mode == "raw":
            # Like `printf … >> room`: open, append, close, no lock.
            fd = os.open(room, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        else:
            deck.push(deck.room(), line)
        time.sleep(random.expovariate(rate))


def agent(home: str, rooms: list[str], parent: int, session: str = AGENT) -> None:
    """An agent: read a room, 'work' for a moment (lines keep arriving), ack what it read;
    then drain its wakes, every other time after reading the process output (superseding)."""
    from ackdeck.core.service import procs

    deck = Deck(home, session, rooms)
    turn = 0
    while not _orphaned(parent):
        for room in deck.rooms:
            if _orphaned(parent):
                return
            try:
                got = deck.read(room)
                if got.lines:
                    nap(0.5, 3.0)
                    acked = deck.ack(room)
                    if acked.refusal is not None:
                        raise acked.refusal
            except AckdeckError as exc:
                print(f"demo agent: {exc}", file=sys.stderr)
            nap(1.0, 3.0)
        turn += 1
        try:
            if turn % 2 == 0:
                # Looking at the output first: matches it was shown are superseded.
                for run in procs.list_runs(home, latest_only=True).runs:
                    procs.read_output(home, run.name, session, run_id=run.run_id)
            deck.drain()
        except (AckdeckError, OSError) as exc:
            print(f"demo agent: {exc}", file=sys.stderr)


def start_process(home: str | Path, name: str, cwd: str) -> None:
    from ackdeck.core.service import procs

    script, pattern = next((sc, pat) for n, sc, pat in PROCESSES if n == name)
    procs.start(
        home,
        name,
        ["sh", "-c", script.format(step=round(0.5 * pace(), 3))],
        session=AGENT,
        monitor=pattern,
        cwd=cwd,
    )


def operator(home: str, cwd: str, parent: int) -> None:
    """Start each monitored process again a few seconds after its last run ended."""
    from ackdeck.core.service import procs

    due: dict[str, float] = {}
    while not _orphaned(parent):
        try:
            latest = {r.name: r for r in procs.list_runs(home, latest_only=True).runs}
            for name, *_ in PROCESSES:
                run = latest.get(name)
                if run is None or run.status == "running":
                    due.pop(name, None)
                    continue
                when = due.setdefault(name, time.monotonic() + random.uniform(2, 5) * pace())
                if time.monotonic() >= when:
                    due.pop(name)
                    start_process(home, name, cwd)
        except (AckdeckError, OSError) as exc:
            print(f"demo operator: {exc}", file=sys.stderr)
        nap(0.3, 0.6)


class DemoWorld:
    """The temporary home, rooms and background processes of one demo run."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home"
        self.rooms_dir = base / "rooms"
        self.rooms = [self.rooms_dir / r for r, *_ in POLLERS]
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.rooms_dir.mkdir(parents=True, exist_ok=True)
        for room in self.rooms:
            room.touch()
        env = dict(os.environ, PYTHONPATH=str(REPO))
        for (_room, rate, sender, mode), path in zip(POLLERS, self.rooms, strict=True):
            self._spawn(["poll", str(path), str(rate), sender, mode], env)
        self._spawn(["agent", str(self.home), *(str(p) for p in self.rooms[1:])], env)
        for name, *_ in PROCESSES:
            start_process(self.home, name, str(self.base))
        self._spawn(["operator", str(self.home), str(self.base)], env)

    def _spawn(self, args: list[str], env: dict[str, str]) -> None:
        self.children.append(
            subprocess.Popen(
                [sys.executable, "-m", "ackdeck.tui.demo", *args],
                env=env,
                cwd=str(REPO),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # ctrl+c in the dashboard must not kill them first
            )
        )

    def stop(self) -> None:
        """Stop pollers and the agent, then any monitored process still running."""
        from ackdeck.core.service import procs

        for child in self.children:
            if child.poll() is None:
                child.terminate()
        for child in self.children:
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        self.children.clear()
        for run in procs.list_runs(self.home, latest_only=True).runs:
            if run.status == "running":
                try:
                    procs.kill(self.home, run.name, grace=1.0)
                except AckdeckError as exc:
                    print(f"demo: {exc}", file=sys.stderr)


def run_demo(*, session: str = "owner") -> int:
    from .app import make_app
    from .config import DashConfig

    pace()  # a pace that makes no sense is one line now, not a traceback in each scene
    with tempfile.TemporaryDirectory(prefix="ackdeck-demo-") as tmp:
        world = DemoWorld(Path(tmp))
        try:
            world.start()
            config = DashConfig(
                home=world.home, rooms=[*world.rooms], session=session, title="ackdeck demo"
            )
            make_app(config).run()
        finally:
            world.stop()
    return 0


def main(argv: list[str]) -> int:
    # Terminate quietly: the demo stops its helpers with SIGTERM.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    parent = os.getppid()
    if argv[:1] == ["poll"] and len(argv) == 5:
        poll(argv[1], float(argv[2]), argv[3], argv[4], parent)
    elif argv[:1] == ["agent"] and len(argv) >= 2:
        agent(argv[1], argv[2:], parent)
    elif argv[:1] == ["operator"] and len(argv) == 3:
        operator(argv[1], argv[2], parent)
    else:
        print(
            "usage: python -m ackdeck.tui.demo poll ROOM RATE SENDER raw|push | agent HOME ROOM… |"
            " operator HOME CWD",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
