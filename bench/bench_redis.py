"""`python -m bench redis`: a redis room against bare stream commands, same client, same run.

- push: `RedisRoom.push` vs a bare `XADD key * line DATA` on the room's own client.
  Target >= 0.7 of the bare throughput.
- read: `RedisRoom.read` (one script: epoch check + XRANGE, then the receipt stored) of a
  10,000-entry room vs a bare `XRANGE - +` of it. Reported.
- ack: acking a read of N entries (one script of five commands: XINFO STREAM, HMGET of the
  counters and receipt, XTRIM MINID, XADD of the audit entry, HSET) vs a bare `XTRIM MAXLEN 0`
  of the same N entries. Target <= 1.5x the time. Next to it, the floor of any exact ack
  script: XINFO STREAM + XTRIM in one EVALSHA, same N entries.
- 8 producers: 8 processes pushing at once, each with its own connection; total lines/s next
  to 8 processes doing bare XADDs.

The server runs on loopback without an append-only file (no fsync in any timing; with
`appendfsync always` both sides are dominated by the same fsync). Medians of several rounds.
"""

from __future__ import annotations

import multiprocessing as mp
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LINE = "[2026-07-08T12:00:00Z] [ops] alice: deploy finished, 3 services healthy, p99 41ms ok"


def _median(fn: Callable[[], float], reps: int) -> float:
    return statistics.median(fn() for _ in range(reps))


def _room(url: str) -> Any:
    from ackdeck.core.service.refs import open_room

    return open_room(url)


def bench_push(url: str, n: int, reps: int) -> tuple[float, float]:
    room = _room(url)
    client = room._redis()

    def ours() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            room.push(LINE)
        return n / (time.perf_counter() - t0)

    def bare() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            client.xadd(room.key, {b"line": LINE.encode()})
        return n / (time.perf_counter() - t0)

    rates_ours, rates_bare = [], []
    for _ in range(reps):  # alternate in short rounds: drift on the shared machine hits both
        rates_bare.append(bare())
        rates_ours.append(ours())
        client.delete(room.key)
    room.close()
    return statistics.median(rates_ours), statistics.median(rates_bare)


def _fill(client: Any, key: str, n: int) -> None:
    pipe = client.pipeline(transaction=False)
    for _ in range(n):
        pipe.xadd(key, {b"line": LINE.encode()})
    pipe.execute()


def bench_read(url: str, n: int, reps: int) -> tuple[float, float]:
    room = _room(url)
    client = room._redis()
    _fill(client, room.key, n)

    def ours() -> float:
        t0 = time.perf_counter()
        got = room.read("bench")
        assert len(got.lines) == n
        return n / (time.perf_counter() - t0)

    def bare() -> float:
        t0 = time.perf_counter()
        got = client.xrange(room.key)
        assert len(got) == n
        return n / (time.perf_counter() - t0)

    a = [bare() if i % 2 else ours() for i in range(2 * reps)]
    room.close()
    return statistics.median(a[0::2]), statistics.median(a[1::2])


# The least a script that acks exactly must do: one XINFO STREAM (entries-added and length,
# without which a trim or recreation by someone else cannot be told from new entries) and the
# trim itself, in one EVALSHA. It bounds from below what any exact ack script can cost.
FLOOR_SCRIPT = """
redis.call('XINFO', 'STREAM', KEYS[1])
return redis.call('XTRIM', KEYS[1], 'MAXLEN', '=', 0)
"""


def _server_us(client: Any, command: str) -> float:
    """Microseconds the server spent in `command` since the last CONFIG RESETSTAT."""
    stats = client.info("commandstats").get(f"cmdstat_{command}", {})
    return float(stats.get("usec", 0))


def bench_ack(url: str, n: int, reps: int) -> dict[str, float]:
    """Medians: seconds per ack of an n-entry read, per bare XTRIM of n entries and per floor
    script (XINFO STREAM + XTRIM in one EVALSHA) of n entries; and the server's own time
    (INFO commandstats, outside the timings) per ack and per bare XTRIM, in microseconds:
    steadier than wall time on a shared machine."""
    room = _room(url)
    client = room._redis()
    floor = client.register_script(FLOOR_SCRIPT)
    t: dict[str, list[float]] = {k: [] for k in ("ours", "bare", "floor", "ours_us", "bare_us")}
    for _ in range(reps):
        _fill(client, room.key, n)
        room.read("bench")
        t0 = time.perf_counter()
        res = room.ack("bench")
        t["ours"].append(time.perf_counter() - t0)
        assert res.acked == n, res
        _fill(client, room.key, n)
        t0 = time.perf_counter()
        client.xtrim(room.key, maxlen=0, approximate=False)
        t["bare"].append(time.perf_counter() - t0)
        _fill(client, room.key, n)
        t0 = time.perf_counter()
        assert floor(keys=[room.key]) == n
        t["floor"].append(time.perf_counter() - t0)
        # Server time in untimed rounds of their own: a RESETSTAT round trip just before a
        # timed command warms the server up and shortened the bare XTRIM most.
        _fill(client, room.key, n)
        room.read("bench")
        client.config_resetstat()
        room.ack("bench")
        t["ours_us"].append(_server_us(client, "evalsha"))
        _fill(client, room.key, n)
        client.config_resetstat()
        client.xtrim(room.key, maxlen=0, approximate=False)
        t["bare_us"].append(_server_us(client, "xtrim"))
    room.close()
    return {k: statistics.median(v) for k, v in t.items()}


def _producer(url: str, n: int, bare: bool, start: Any, out: Any) -> None:
    room = _room(url)
    client = room._redis()
    room.push("warm-up")  # connect and load nothing lazily inside the timing
    start.wait()
    t0 = time.perf_counter()
    for _ in range(n):
        if bare:
            client.xadd(room.key, {b"line": LINE.encode()})
        else:
            room.push(LINE)
    out.put((t0, time.perf_counter()))


def bench_producers(url: str, procs: int, n: int, *, bare: bool) -> float:
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_producer, args=(url, n, bare, start, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    time.sleep(0.5)  # let every worker connect; the timing starts at the event
    start.set()
    spans = [out.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    return procs * n / (max(e for _, e in spans) - min(s for s, _ in spans))


def main() -> None:
    if shutil.which("redis-server") is None:
        print("skipped: redis-server is not installed (make bench installs it as root)")
        return
    from tests.helpers.redis_server import RedisServer, new_room_name

    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-redis-") as tmp:
        server = RedisServer(Path(tmp), persist=False)
        server.start()
        try:
            push_ours, push_bare = bench_push(server.url(new_room_name()), 500, 31)
            read_ours, read_bare = bench_read(server.url(new_room_name()), 10_000, 5)
            ack_small = bench_ack(server.url(new_room_name()), 100, 101)
            ack_big = bench_ack(server.url(new_room_name()), 10_000, 15)
            rounds = [
                (bench_producers(server.url(new_room_name()), 8, 2000, bare=bare), bare)
                for bare in (True, False, True, False, True, False)
            ]
            prod_ours = statistics.median(r for r, bare in rounds if not bare)
            prod_bare = statistics.median(r for r, bare in rounds if bare)
        finally:
            server.stop()
    rows = [
        ("benchmark", "redis room", "bare (same client, same run)", "ratio", "target"),
        (
            "push, one client",
            f"{push_ours:,.0f} lines/s",
            f"{push_bare:,.0f} lines/s XADD",
            f"{push_ours / push_bare:.2f}",
            ">= 0.7 " + ("met" if push_ours / push_bare >= 0.7 else "MISSED"),
        ),
        (
            "read, 10,000 entries",
            f"{read_ours:,.0f} lines/s",
            f"{read_bare:,.0f} lines/s XRANGE",
            f"{read_ours / read_bare:.2f}",
            "reported",
        ),
    ]
    for n, a in ((100, ack_small), (10_000, ack_big)):
        ratio = a["ours"] / a["bare"]
        rows.append(
            (
                f"ack of a {n:,}-entry read",
                f"{a['ours'] * 1000:.2f} ms",
                f"{a['bare'] * 1000:.2f} ms XTRIM MAXLEN 0",
                f"{ratio:.2f}",
                "<= 1.5 " + ("met" if ratio <= 1.5 else "MISSED"),
            )
        )
        rows.append(
            (
                f"  server time of that ack, {n:,}",
                f"{a['ours_us']:.0f} us",
                f"{a['bare_us']:.0f} us XTRIM",
                f"{a['ours_us'] / max(a['bare_us'], 1):.2f}",
                "reported (INFO commandstats)",
            )
        )
        rows.append(
            (
                f"  floor: XINFO + XTRIM script, {n:,}",
                f"{a['floor'] * 1000:.2f} ms",
                f"{a['bare'] * 1000:.2f} ms XTRIM MAXLEN 0",
                f"{a['floor'] / a['bare']:.2f}",
                f"reported (ack is {a['ours'] / a['floor']:.2f}x the floor)",
            )
        )
    rows.append(
        (
            "push, 8 producer processes",
            f"{prod_ours:,.0f} lines/s",
            f"{prod_bare:,.0f} lines/s XADD",
            f"{prod_ours / prod_bare:.2f}",
            "reported",
        )
    )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
