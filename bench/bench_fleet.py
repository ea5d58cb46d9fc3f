"""`python -m bench fleet`: 10 hosts x 30 agents publishing to one redis-server (issue 34).

Each host is a home with 30 agent sessions (presence logs of reads and acks). Measured:

- Redis commands per publish and per second per host at the default cadence (a publish every
  TTL/3 = 10 s), counted by the server (INFO commandstats), and the snapshot's size; and per
  publisher tick, which adds the wake exchange (cross-host wakes) to the publish, with no
  wake on its way (the common case);
- a publish (this host's rows computed from disk, then the script) vs computing the same rows
  alone (`ackdeck agents`' work): what the fleet adds to a refresh;
- a listing of all 10 hosts' rows (publish, then read every host) vs the local listing alone;
- all 10 hosts publishing at once from 10 processes: the server's CPU per publish;
- the dashboard's idle CPU (its process tree, % of a core, over 10 s) on one host's home with
  the 10-host fleet (300 agents in its Agents panel) vs the same dashboard without a fleet.

Medians of several runs; the machine is shared and noisy.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HOSTS = 10
AGENTS = 30


def _median(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _home(root: Path, host: int) -> Path:
    from ackdeck.core.presence import log

    home = root / f"host{host:02d}"
    now = time.time()
    for a in range(AGENTS):
        s = f"agent-{host:02d}-{a:02d}"
        for k in range(5):
            log.record(home, s, "read", at=now - 600 + k * 60, room="r", lines=2, waited=3.0)
            log.record(home, s, "ack", at=now - 590 + k * 60, room="r", lines=2)
    return home


def _commands(url_port: int) -> int:
    import redis

    r = redis.Redis(port=url_port)
    try:
        stats = r.info("commandstats")
        return sum(
            int(v["calls"]) for k, v in stats.items() if k not in ("cmdstat_info", "cmdstat_hello")
        )
    finally:
        r.close()


def _server_cpu(port: int) -> float:
    import redis

    r = redis.Redis(port=port)
    try:
        cpu = r.info("cpu")
        return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])
    finally:
        r.close()


def _publisher(
    port: int, home: str, host: str, rounds: int, out: mp.Queue, ready: mp.Event
) -> None:
    from ackdeck.core.service.fleet.hosts import FleetLink, publish_home
    from ackdeck.core.service.fleet.settings import resolve_fleet

    settings = resolve_fleet(f"redis://127.0.0.1:{port}/0/bench", host, env={}, config={})
    assert settings is not None
    link = FleetLink(settings)
    publish_home(link, Path(home))  # connected, script loaded
    out.put("ready")
    ready.wait()
    t0 = time.perf_counter()
    for _ in range(rounds):
        publish_home(link, Path(home))
    out.put(time.perf_counter() - t0)
    link.close()


IDLE_S = 10.0


def _dashboard_idle(root: Path, home: Path, fleet: str | None) -> float:
    """The dashboard's idle CPU (% of one core) once its Agents panel shows an agent."""
    from bench.bench_dashboard import idle_cpu
    from bench.bench_tui import PtyApp

    cfg = root / ("fleet.toml" if fleet else "alone.toml")
    body = f'home = "{home}"\n'
    if fleet:
        body += f'fleet = "{fleet}"\nhost_id = "host00"\n'
    cfg.write_text(body)
    import sys

    app = PtyApp([sys.executable, "-m", "ackdeck.core.cli", "tui", "--config", str(cfg)])
    try:
        if app.read_until(b"agent-00-00", 120) is None:
            raise RuntimeError("the dashboard never showed its agents")
        app.drain(3.0)  # its first listings and scans settle
        return idle_cpu(app, IDLE_S)
    finally:
        app.stop()


def main() -> None:
    from ackdeck.core.service.agents import list_agents
    from ackdeck.core.service.fleet import model as fleet_model
    from ackdeck.core.service.fleet.hosts import (
        FleetLink,
        exchange_wakes,
        fleet_listing,
        local_rows,
        publish_home,
    )
    from ackdeck.core.service.fleet.settings import resolve_fleet
    from tests.helpers.redis_server import RedisServer

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = RedisServer(root / "redis", persist=False)
        server.start()
        try:
            homes = [_home(root, h) for h in range(HOSTS)]
            links = []
            for h in range(HOSTS):
                s = resolve_fleet(
                    f"redis://127.0.0.1:{server.port}/0/bench", f"host{h:02d}", env={}, config={}
                )
                assert s is not None
                links.append(FleetLink(s))
            for link, home in zip(links, homes, strict=True):
                publish_home(link, home)  # scripts loaded, connections open

            before = _commands(server.port)
            for link, home in zip(links, homes, strict=True):
                publish_home(link, home)
            per_publish = (_commands(server.port) - before) / HOSTS
            before = _commands(server.port)
            for link, home in zip(links, homes, strict=True):
                publish_home(link, home)
                exchange_wakes(link, home)  # as a publisher's tick does
            per_tick = (_commands(server.port) - before) / HOSTS
            size = len(fleet_model.snapshot("host00", time.time(), local_rows(homes[0])))
            every = links[0].settings.every

            local = _median(lambda: list_agents(homes[0]), 9)
            rows = _median(lambda: local_rows(homes[0]), 9)
            publish = _median(lambda: publish_home(links[0], homes[0]), 9)

            def listed() -> object:  # as `ackdeck agents --fleet` does it
                rows = list_agents(homes[0]).to_json()["agents"]
                return fleet_listing(links[0], homes[0], "agents", rows, snapshot={"agents": rows})

            listing = _median(listed, 9)
            before = _commands(server.port)
            fleet_listing(links[0], homes[0], "agents", [])
            per_listing = _commands(server.port) - before

            rounds = 20
            ctx = mp.get_context("spawn")
            q: mp.Queue = ctx.Queue()
            ready = ctx.Event()
            procs = [
                ctx.Process(
                    target=_publisher,
                    args=(server.port, str(homes[h]), f"host{h:02d}", rounds, q, ready),
                )
                for h in range(HOSTS)
            ]
            for p in procs:
                p.start()
            for _ in procs:  # spawned, imported, connected: none of it in the figure
                assert q.get(timeout=600) == "ready"
            cpu0 = _server_cpu(server.port)
            ready.set()
            spent = [q.get(timeout=600) for _ in procs]
            for p in procs:
                p.join()
            server_cpu = _server_cpu(server.port) - cpu0
            url = f"redis://127.0.0.1:{server.port}/0/bench"
            for link, home in zip(links, homes, strict=True):
                publish_home(link, home)  # every host live while the dashboards run
            idle_fleet = _dashboard_idle(root, homes[0], url)
            idle_alone = _dashboard_idle(root, homes[0], None)
            for link in links:
                link.close()
        finally:
            server.stop()

    print(f"{HOSTS} hosts x {AGENTS} agents; one snapshot {size / 1024:.1f} KiB")
    print(f"{'measure':<58} {'value':>10}")
    print(f"{'redis commands per publish (server count)':<58} {per_publish:>10.1f}")
    print(
        f"{'redis commands/s per host publishing every ' + f'{every:g} s':<58} "
        f"{per_publish / every:>10.2f}"
    )
    print(f"{'redis commands per publisher tick (publish + wake exchange)':<58} {per_tick:>10.1f}")
    print(
        f"{'redis commands/s per host, ticks every ' + f'{every:g} s':<58} "
        f"{per_tick / every:>10.2f}"
    )
    print(f"{'redis commands per listing of 10 hosts':<58} {per_listing:>10d}")
    print(f"{'local agents listing (baseline), ms':<58} {local * 1000:>10.1f}")
    print(f"{'rows a host publishes (agents, runs, wakes), ms':<58} {rows * 1000:>10.1f}")
    print(f"{'publish (rows + script), ms':<58} {publish * 1000:>10.1f}")
    print(f"{'  publish / local listing':<58} {publish / local:>10.2f}x")
    print(f"{'fleet listing, 10 hosts (publish + read), ms':<58} {listing * 1000:>10.1f}")
    print(f"{'  fleet listing / local listing':<58} {listing / local:>10.2f}x")
    total = HOSTS * rounds
    print(
        f"{'10 processes publishing at once on this machine, ms each':<58} "
        f"{statistics.median(spent) / rounds * 1000:>10.1f}"
    )
    print(f"{'  redis-server CPU per publish, us':<58} {server_cpu / total * 1e6:>10.0f}")
    print(f"{'dashboard idle CPU, 10-host fleet (300 agents), % core':<58} {idle_fleet:>10.2f}")
    print(f"{'dashboard idle CPU, no fleet (30 agents), % core':<58} {idle_alone:>10.2f}")
    print(f"{'  fleet / no fleet':<58} {idle_fleet / max(idle_alone, 0.01):>10.2f}x")
