"""Notices: how fast a pushed line reaches an idle agent over the MCP channel, and what one
notice check costs on a flooded room.

Latency: `ackdeck mcp` runs as a real subprocess behind the SDK's stdio client; lines are
pushed one at a time (spaced beyond the coalescing window) and the time from the push to the
`notifications/claude/channel` notice is recorded. Baseline, same run: `Room.wait` (a blocking
watchfiles wait in this process, the fastest way an agent's own poll could learn of a line).

Check cost: `Noticer.due()` (status, a tail `pread` for the preview, wake records, the state
file) on a 1,000,000-line room against `Room.status()` alone, the counting it cannot avoid.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service.noticer import Noticer

SAMPLES = 20
REPO = Path(__file__).resolve().parent.parent


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


async def _channel_latencies(tmp: Path) -> list[float]:
    from mcp import Client, StdioServerParameters
    from mcp.client.extension import ClientExtension, NotificationBinding
    from pydantic import BaseModel, ConfigDict

    class Params(BaseModel):
        model_config = ConfigDict(extra="allow")
        content: str
        meta: dict[str, str]

    got: list[float] = []
    event = anyio.Event()

    async def on_notice(_p: Params) -> None:
        got.append(time.perf_counter())
        event.set()

    class Listener(ClientExtension):
        identifier = "dev.ackdeck/bench-listener"

        def notifications(self) -> list[NotificationBinding[Any]]:
            return [
                NotificationBinding(
                    method="notifications/claude/channel", params_type=Params, handler=on_notice
                )
            ]

    room = tmp / "inbox.txt"
    room.touch()
    home = tmp / "home"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "ackdeck.core.cli",
            "--home",
            str(home),
            "mcp",
            "--session",
            "agent",
            "--room",
            str(room),
        ],
        env={"PYTHONPATH": f"{REPO / 'src'}:{REPO}"},
        cwd=str(REPO),
    )
    out: list[float] = []
    async with Client(params, mode="legacy", extensions=[Listener()], read_timeout_seconds=60):
        await anyio.sleep(1.5)  # the server is up and watching
        r = Room(room)
        for i in range(SAMPLES):
            event = anyio.Event()
            t0 = time.perf_counter()
            r.push(f"line {i}")
            with anyio.fail_after(60):
                await event.wait()
            out.append(got[-1] - t0)
            await anyio.sleep(0.8)  # beyond the 500 ms window: measure latency, not spacing
    return out


def _wait_latencies(tmp: Path) -> list[float]:
    room = tmp / "waited.txt"
    room.touch()
    r = Room(room)
    out: list[float] = []
    for i in range(SAMPLES):
        started = threading.Event()
        done: list[float] = []

        def waiter(started: threading.Event, done: list[float]) -> None:
            started.set()
            Room(room).wait("agent", timeout=60)
            done.append(time.perf_counter())

        t = threading.Thread(target=waiter, args=(started, done))
        t.start()
        started.wait()
        time.sleep(0.3)  # let the watcher start before pushing
        t0 = time.perf_counter()
        r.push(f"line {i}")
        t.join()
        out.append(done[0] - t0)
        Room(room).read("agent")
    return out


def _check_cost(tmp: Path) -> tuple[float, float]:
    room = tmp / "flood.txt"
    with open(room, "wb") as f:
        f.write(b"".join(b"[ts] [flood] poller: line %d\n" % i for i in range(1_000_000)))
    home = tmp / "home2"
    home.mkdir()
    noticer = Noticer(home, "agent", [room], "channel")
    status_t: list[float] = []
    due_t: list[float] = []
    for _ in range(5):
        t0 = time.perf_counter()
        Room(room).status()
        status_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        noticer.due()
        due_t.append(time.perf_counter() - t0)
    return statistics.median(due_t), statistics.median(status_t)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        chan = anyio.run(_channel_latencies, tmp)
        wait = _wait_latencies(tmp)
        due, status = _check_cost(tmp)
    print("| notices | ackdeck | baseline (same run) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    # The issue asks for a notice within 1 s of the push: max shows the worst sample too.
    for label, p in (("p50", 0.5), ("p95", 0.95), ("max", 1.0)):
        a, b = _pct(chan, p) * 1000, _pct(wait, p) * 1000
        print(
            f"| push -> channel notice, {label} | {a:.0f} ms | {b:.0f} ms `Room.wait` | "
            f"{a / b:.2f} |"
        )
    print(
        f"| notice check, 1,000,000-line room | {due * 1000:.0f} ms | "
        f"{status * 1000:.0f} ms `Room.status` | {due / status:.2f} |"
    )


if __name__ == "__main__":
    main()
