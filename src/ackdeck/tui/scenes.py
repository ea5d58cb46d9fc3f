"""Deterministic dashboard scenes for snapshot tests and `make screenshots`.

Every scene is built with real service calls (rooms read/acked through a `Deck`, processes
started through `core.service.procs.start`) on a fixed clock, with file times pinned, so the
screen shows the same thing on every machine. Nothing here imports Textual.

File modification times cannot be pinned (the room ledger treats a changed mtime as a rewrite
by someone else), so a scene is built around `now`, a clock value frozen when the scene is
built: appends happen "just now" and acks at fixed offsets before it, which renders the same
ages on every run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ackdeck.core.service.deck import Deck

STAMP = "2027-01-15T07:5{m}:{s:02d}Z"


def _stamp(i: int) -> str:
    return STAMP.format(m=5 + (i // 60) % 5, s=i % 60)


def _deck(path: Path, session: str, at: float) -> Deck:
    """The scene's deck for `session`: its home beside the rooms (base/home for base/rooms,
    where the reads' presence goes), the owner's through the dashboard's door."""
    door = "dashboard" if session == "owner" else "api"
    home = path.parent.parent / "home"
    return Deck(home, session=session, rooms=[path], clock=lambda: at, door=door)


def _read(path: Path, session: str, at: float) -> None:
    """`session` reads every line of the room at `path`, at time `at` (a receipt)."""
    deck = _deck(path, session, at)
    deck.read(deck.room())


def _ack(path: Path, session: str, at: float) -> None:
    """`session` acks what it read of the room at `path`, at time `at`."""
    deck = _deck(path, session, at)
    acked = deck.ack(deck.room())
    if acked.refusal is not None:
        raise acked.refusal


def _append(path: Path, lines: list[str]) -> None:
    with path.open("ab") as f:
        f.write(b"".join(line.encode() + b"\n" for line in lines))


ALERTS = [
    "pager: disk 91% on db-3",
    "pager: p95 latency 840ms on checkout",
    "grafana: error rate 2.1% (api)",
    "pager: disk 93% on db-3",
    "sentry: TypeError in cart.total (x14)",
    "pager: pod checkout-7f9c restarted",
]
CI = [
    "ci: build #4812 started (main)",
    "ci: build #4812 passed in 6m12s",
    "ci: deploy staging started",
    "ci: deploy staging ok",
    "ci: build #4813 started (fix/cart-total)",
    "ci: build #4813 FAILED: test_cart_total",
]
CHAT = [
    "dana: can you look at the cart bug?",
    "lee: on it after the deploy",
    "dana: thanks!",
]


@dataclass
class Scene:
    rooms: list[Path]
    home: Path | None
    # Arrival samples (room path, [(age seconds, lines arrived so far), ...]) for the sparkline.
    rates: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    now: float = 0.0

    def clock(self) -> float:
        return self.now


def build_rooms(base: Path, now: float) -> tuple[list[Path], dict[str, list[tuple[float, int]]]]:
    """Three rooms with agent and owner state: unread, in flight, acked and preserved lines."""
    d = base / "rooms"
    d.mkdir(parents=True, exist_ok=True)
    alerts, ci, chat = d / "alerts.txt", d / "ci.txt", d / "chat.txt"
    for p in (alerts, ci, chat):
        p.write_bytes(b"")

    # alerts: a busy poller; the agent read 30 lines and 6 more arrived since.
    _append(alerts, [f"[{_stamp(i)}] [alerts] {ALERTS[i % len(ALERTS)]}" for i in range(30)])
    _read(alerts, "agent", now)
    _append(alerts, [f"[{_stamp(30 + i)}] [alerts] {ALERTS[i % len(ALERTS)]}" for i in range(6)])

    # ci: the agent read 4, two arrived, the agent acked: 4 acked, 2 preserved; the owner read.
    _append(ci, [f"[{_stamp(i)}] [ci] {CI[i]}" for i in range(4)])
    _read(ci, "agent", now - 95)
    _append(ci, [f"[{_stamp(4 + i)}] [ci] {CI[4 + i]}" for i in range(2)])
    _ack(ci, "agent", now - 90)
    _read(ci, "owner", now)

    # chat: everything read and acked a while ago.
    _append(chat, [f"[{_stamp(i)}] [chat] {CHAT[i]}" for i in range(3)])
    _read(chat, "agent", now - 700)
    _ack(chat, "agent", now - 660)
    rates = {
        # Cumulative arrivals per 5 s bucket, ending at each room's real count.
        str(alerts): _series([0, 1, 3, 2, 4, 6, 9, 5, 3, 2, 1, 0], 0),
        str(ci): _series([0, 0, 1, 0, 0, 2, 0, 0, 1, 0, 0, 2], 0),
        str(chat): _series([3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0),
    }
    return [alerts, ci, chat], rates


def _series(per_bucket: list[int], start: int, bucket: float = 5.0) -> list[tuple[float, int]]:
    """Cumulative arrival samples, one per bucket, ending now."""
    out = [(bucket * len(per_bucket) + 1, start)]
    total = start
    for i, n in enumerate(per_bucket):
        total += n
        out.append((bucket * (len(per_bucket) - 1 - i) + 0.5, total))
    return out


def build_procs(home: Path, workdir: Path, now: float) -> None:
    """Two finished monitored processes (one printed DONE, one FAIL) and their wake records."""
    from ackdeck.core.service import procs, wakes

    started = lambda: now - 240  # noqa: E731
    procs.start(
        home,
        "build",
        ["sh", "-c", "echo compiling 212 files; echo linking; echo DONE"],
        session="agent",
        monitor="DONE",
        cooldown_ms=0,
        cwd=str(workdir),
        clock=started,
    )
    procs.start(
        home,
        "tests",
        [
            "sh",
            "-c",
            "echo collected 48 items; echo test_cart ok; "
            "echo FAIL test_cart_total: 19.99 != 20.00; echo 47 passed, 1 failed; exit 1",
        ],
        session="agent",
        monitor="FAIL",
        cooldown_ms=0,
        cwd=str(workdir),
        clock=started,
    )
    deadline = time.monotonic() + 30
    while True:
        runs = procs.list_runs(home, latest_only=True).runs
        names = {w.name for w in wakes.list_wakes(home, "agent").wakes if w.lines}
        if all(r.status != "running" for r in runs) and {"build", "tests"} <= names:
            return
        if time.monotonic() > deadline:
            raise TimeoutError("demo processes did not finish")
        time.sleep(0.05)


def build_flood(base: Path, lines: int = 1_000_000) -> Path:
    """A room flooded by a runaway poller."""
    d = base / "rooms"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "flood.txt"
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
    return path


def full_scene(base: Path, now: float) -> Scene:
    return _scene(base, now, build_rooms, build_procs)


def _scene(base: Path, now: float, rooms_of: Any, procs_of: Any) -> Scene:
    """Rooms under base/rooms and processes in base/home, both built at `now`."""
    rooms, rates = rooms_of(base, now)
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    procs_of(home, base, now)
    build_agents(home, rooms, now)
    return Scene(rooms, home, rates, now=now)


def build_agents(home: Path, rooms: list[Path], now: float) -> None:
    """The agents' presence beside the reads the rooms recorded: `agent` in a turn, a
    reviewer waiting on a permission prompt, a nightly job stalled after an unanswered nudge,
    and a session that ended. No MCP server is recorded (its pid would be checked). Times sit
    between the steps the table rounds to (presence keeps milliseconds), so a snapshot is
    the same at every run."""
    from ackdeck.core.service import presence

    names = [str(r) for r in rooms]
    presence.record(home, "agent", "start", at=now - 900, detail="startup", rooms=names)
    presence.record(home, "agent", "prompt", at=now - 45)
    presence.record(home, "reviewer", "start", at=now - 600, detail="startup", rooms=names[:1])
    presence.record(home, "reviewer", "prompt", at=now - 300)
    presence.record(
        home,
        "reviewer",
        "notify",
        at=now - 155,
        detail="permission_prompt: Claude needs your permission to use Bash",
    )
    presence.record(home, "nightly", "start", at=now - 7200, detail="startup", rooms=names[:1])
    presence.record(home, "nightly", "stop", at=now - 3600)
    presence.record(home, "nightly", "nudge", at=now - 615, door="tmux")
    presence.record(home, "old-run", "start", at=now - 9000, detail="startup")
    presence.record(home, "old-run", "end", at=now - 8005, detail="prompt_input_exit")


def apply_rates(app: Any, scene: Scene) -> None:
    for key, samples in scene.rates.items():
        for age, n in samples:
            app.rates.observe(key, scene.now - age, n)


# ----- the README's pictures: every panel populated ------------------------------------------
DEPLOYS = [
    "argo: checkout-7f9c rollout 40%",
    "argo: checkout-7f9c rollout 100%",
    "argo: cart-2b1e rollout paused (error budget)",
]
OWNER = [
    "dana: hold the cart rollout until the fix is in",
    "dana: after the fix, send all 3 reports",
]


def build_showcase_rooms(
    base: Path, now: float
) -> tuple[list[Path], dict[str, list[tuple[float, int]]]]:
    """The three rooms of `build_rooms` plus two more: an owner's instructions the agent has not
    read yet, and a deploy feed read by two sessions."""
    rooms, rates = build_rooms(base, now)
    d = base / "rooms"
    deploys, owner = d / "deploys.txt", d / "owner.txt"
    _append(deploys, [f"[{_stamp(i)}] [deploys] {DEPLOYS[i]}" for i in range(3)])
    _read(deploys, "agent", now - 30)
    _ack(deploys, "agent", now - 25)
    _append(deploys, [f"[{_stamp(40)}] [deploys] argo: cart-2b1e rollout resumed"])
    _read(deploys, "reviewer", now - 5)
    _append(owner, [f"[{_stamp(50 + i)}] [owner] {OWNER[i]}" for i in range(2)])
    _read(rooms[0], "owner", now)  # alerts: the owner's read, marked
    rates[str(deploys)] = _series([0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1], 0)
    rates[str(owner)] = _series([0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1], 0)
    return [rooms[0], owner, rooms[1], deploys, rooms[2]], rates


def build_showcase_procs(home: Path, workdir: Path, now: float) -> None:
    """`build_procs` plus three more finished runs with monitors and the wakes of two sessions:
    the agent read one failure of e2e itself and then drained (delivered and superseded lines);
    lint and migrate finished after that drain, so their matches are pending."""
    from ackdeck.core.service import procs, wakes

    build_procs(home, workdir, now)
    _run_all(
        home,
        workdir,
        now - 180,
        {
            "e2e": (
                [
                    "sh",
                    "-c",
                    "echo 12 specs; echo FAIL checkout.spec: timeout; "
                    "echo FAIL cart.spec: 19.99; echo 10 passed, 2 failed; exit 1",
                ],
                "FAIL",
                "agent",
            ),
        },
    )
    procs.read_output(home, "e2e", "agent", filter="checkout")
    wakes.drain(home, "agent")
    _run_all(
        home,
        workdir,
        now - 40,
        {
            "lint": (
                [
                    "sh",
                    "-c",
                    "echo checking 212 files; echo 'WARN unused import (cart.py:3)'; "
                    "echo 'WARN line too long (cart.py:88)'",
                ],
                "WARN",
                "agent",
            ),
            "migrate": (
                ["sh", "-c", "echo applying 0042; echo ERROR: lock timeout; exit 3"],
                "ERROR",
                "reviewer",
            ),
            "typecheck": (
                ["sh", "-c", "echo 'cart.py:41: error: Incompatible return value'"],
                "error",
                "agent",
            ),
            "deploy": (["sh", "-c", "echo staging: 3 pods ready; echo DONE"], "DONE", "reviewer"),
        },
    )


def _run_all(
    home: Path, workdir: Path, at: float, runs: dict[str, tuple[list[str], str, str]]
) -> None:
    """Start each (argv, monitor, session) and wait until every run ended and woke its owner."""
    from ackdeck.core.service import procs, wakes

    for name, (argv, pattern, session) in runs.items():
        procs.start(
            home,
            name,
            argv,
            session=session,
            cwd=str(workdir),
            clock=lambda: at,
            monitor=pattern,
            cooldown_ms=0,
        )
    deadline = time.monotonic() + 60
    while True:
        ended = all(r.status != "running" for r in procs.list_runs(home, latest_only=True).runs)
        woken = {(w.session, w.name) for w in wakes.list_wakes(home).wakes if w.lines}
        if ended and {(s, n) for n, (_, _, s) in runs.items()} <= woken:
            return
        if time.monotonic() > deadline:
            raise TimeoutError("showcase processes did not finish")
        time.sleep(0.05)


def showcase_scene(base: Path, now: float) -> Scene:
    return _scene(base, now, build_showcase_rooms, build_showcase_procs)
