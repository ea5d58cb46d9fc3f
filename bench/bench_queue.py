"""`python -m bench queue`: a file work-queue room against baselines measured in the same run.

- claim+done of one task on a queue room (core/rooms/file/queue.py: both under the room's
  exclusive lock, a SQLite commit each, the finished line leaving through the ack) against a
  bare `flock` + append of a done record to a file, without and with an fsync of the record
  (what a hand-rolled queue does at best: it keeps no lease, no token, no delivery count).
- claim latency with 10,000 lines claimed and not done: the claims at the start against the
  claims once 10,000 leases are held (the expired-lease lookup goes through an index on the
  lease's end, the next line is at the frontier: it must not grow).
- on a redis room (core/rooms/redis/queue.py, a real redis-server without persistence, so no
  fsync in any timing): claim+done (two scripts) against a bare XREADGROUP + XACK (+ XDEL)
  through the same client (target <= 1.5x), in alternating rounds, with two floors measured
  alongside: the bare commands inside two minimal scripts (XREADGROUP; XACK + XDEL), and two
  scripts that make exactly the writes a claim and a done with their guarantees need (the
  lease, the fencing token, the op's reply, the audit entry) with no decision around them;
  and the claim latency with 10,000 entries claimed, as above.

Medians of the timed operations, in a temp directory; the machine is shared and noisy.
"""

from __future__ import annotations

import fcntl
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ackdeck.core.rooms.file.queue import FileQueue
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.policy import RoomPolicy

LINE = b"fix tests/test_parser.py::test_unicode_escapes (flaky on CI since #4121)\n"


def _queue(path: Path, lines: int) -> FileQueue:
    path.write_bytes(LINE * lines)
    room = Room(path)
    room.set_policy(RoomPolicy(queue=True))
    return FileQueue(room)


def claim_done(d: Path, n: int, backlog: int) -> list[float]:
    q = _queue(d / "q.txt", n + backlog)
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        got = q.claim("bench", 600)
        assert got.token is not None
        q.update(got.token, "done")
        out.append(time.perf_counter() - t0)
    return out


def flock_append(d: Path, n: int, *, fsync: bool) -> list[float]:
    lock, log = d / "lock", d / "done.log"
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        lfd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lfd, fcntl.LOCK_EX)
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, f"done {i * len(LINE)}\n".encode())
                if fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        finally:
            os.close(lfd)
        out.append(time.perf_counter() - t0)
    return out


def claim_latency(d: Path, held: int) -> tuple[float, float, float, float]:
    """Median wall and CPU time of the first 100 claims and of the 100 after `held`. The CPU
    time leaves out the waits for fsync, which on a shared disk hide any growth."""
    q = _queue(d / "big.txt", held + 200)
    wall, cpu = [], []
    for _ in range(held + 100):
        t0, c0 = time.perf_counter(), time.process_time()
        assert q.claim("bench", 600).claimed
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    m = statistics.median
    return m(wall[:100]), m(wall[-100:]), m(cpu[:100]), m(cpu[-100:])


# ----- redis -------------------------------------------------------------------------------------
def _redis_queue(url: str, lines: int) -> object:
    from ackdeck.core.rooms.redis.queue import RedisQueue
    from ackdeck.core.service.refs import open_room

    room = open_room(url)
    room.set_policy(RoomPolicy(queue=True))
    client = room._redis()  # type: ignore[attr-defined]
    pipe = client.pipeline(transaction=False)
    for _ in range(lines):
        pipe.xadd(room.key, {b"line": LINE.rstrip(b"\n")})  # type: ignore[attr-defined]
    pipe.execute()
    return RedisQueue(room)  # type: ignore[arg-type]


# The floors: the same client, the same number of keys and arguments as RedisQueue sends.
# Only XREADGROUP, then XACK + XDEL, each in a script: what a script costs over the bare
# commands.
_FLOOR_CLAIM = """
local r = redis.call('XREADGROUP', 'GROUP', 'bare', ARGV[1], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
local e = r[1][2][1]
return {e[1], e[2][1], e[2][2]}
"""
_FLOOR_DONE = """
redis.call('XACK', KEYS[1], 'bare', ARGV[1])
return redis.call('XDEL', KEYS[1], ARGV[1])
"""
# Every write a claim and a done keep their guarantees with (a lease's end, a fencing number
# and its task, the op's reply for a retry; the ack, the removal, the task forgotten, the
# done mark, the audit entry), with no reads and no decisions: below this no correct pair of
# scripts goes.
_WRITES_CLAIM = """
local r = redis.call('XREADGROUP', 'GROUP', 'bare', ARGV[1], 'COUNT', 1, 'STREAMS', KEYS[1], '>')
local e = r[1][2][1]
local token = redis.call('HINCRBY', KEYS[4], 'next', 1)
redis.call('HSET', KEYS[4], 't:' .. e[1], ARGV[2], 'k:' .. token, e[1])
redis.call('ZADD', KEYS[5], ARGV[3], e[1])
redis.call('SET', KEYS[7], e[1], 'EX', 600)
return {e[1] .. ' ' .. token, e[2][1], e[2][2]}
"""
_WRITES_DONE = """
local id = ARGV[1]
redis.call('XACK', KEYS[1], 'bare', id)
redis.call('XDEL', KEYS[1], id)
redis.call('HDEL', KEYS[4], 't:' .. id, 'k:' .. ARGV[2])
redis.call('ZREM', KEYS[5], id)
redis.call('SET', KEYS[8], id, 'EX', 600)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', '10000', '*', 'at', ARGV[3], 'session', ARGV[5],
  'mode', 'done', 'first', id, 'last', id, 'acked', 1, 'claims', ARGV[4])
return 'done ' .. id
"""


def redis_claim_done(url: str, n: int, rounds: int) -> dict[str, float]:
    """Median claim+done through RedisQueue, bare XREADGROUP + XACK + XDEL (a done removes
    the entry), bare XREADGROUP + XACK, and the two floors (above), through the same client,
    `rounds` alternating rounds of n each; and a worker's loop of `done --next` (done, then
    the next claim, in one script)."""
    import os

    from ackdeck.core.base.locations import redis_room_key

    q: Any = _redis_queue(url, 2 * n * rounds + 1)
    client = q.room._redis()
    bare_key = redis_room_key("bare-" + url.rsplit("/", 1)[1])
    client.xgroup_create(bare_key, "bare", id="0", mkstream=True)
    pipe = client.pipeline(transaction=False)
    for _ in range(4 * n * rounds):
        pipe.xadd(bare_key, {b"line": LINE.rstrip(b"\n")})
    pipe.execute()
    sha = {k: client.script_load(v) for k, v in
           (("fc", _FLOOR_CLAIM), ("fd", _FLOOR_DONE), ("wc", _WRITES_CLAIM),
            ("wd", _WRITES_DONE))}  # fmt: skip
    keys = [*q._sent_keys, b"", q._dead_key]  # the op key's place filled per call below

    def floor(claim: str, done: str) -> None:
        op = os.urandom(16).hex()
        ks = [*keys[:7], f"{bare_key}:op:{op}".encode(), q._dead_key]
        now = time.time()
        got = client.execute_command(
            "EVALSHA", sha[claim], len(ks), bare_key, *ks[1:], "bench", "{}", repr(now + 600),
            op, q._dead_name, "0",
        )  # fmt: skip
        entry, _, token = got[0].partition(b" ")
        ks[7] = f"{bare_key}:done:{op}".encode()
        client.execute_command(
            "EVALSHA", sha[done], len(ks), bare_key, *ks[1:], entry, token or b"0", repr(now),
            "[]", "bench", op, repr(600.0), q._dead_name,
        )  # fmt: skip

    names = ("ours", "bare", "bare_ack", "loop", "floor", "writes")
    out: dict[str, list[float]] = {k: [] for k in names}
    ours, bare, bare_ack, loop = out["ours"], out["bare"], out["bare_ack"], out["loop"]
    held = q.claim("bench-loop", 600)  # the worker loop's first claim, before the timing
    for _ in range(rounds):
        for _ in range(n):  # a worker's loop: `done --next`, one script per task
            t0 = time.perf_counter()
            _, held = q.done_next(held.token, "bench-loop", 600)
            loop.append(time.perf_counter() - t0)
        for _ in range(n):
            t0 = time.perf_counter()
            got = q.claim("bench", 600)
            q.update(got.token, "done")
            ours.append(time.perf_counter() - t0)
        for _ in range(n):
            t0 = time.perf_counter()
            r = client.xreadgroup("bare", "bench", {bare_key: ">"}, count=1)
            entry_id = r[0][1][0][0]
            client.xack(bare_key, "bare", entry_id)
            client.xdel(bare_key, entry_id)
            bare.append(time.perf_counter() - t0)
        for _ in range(n):  # the brief's baseline: the entry stays in the stream
            t0 = time.perf_counter()
            r = client.xreadgroup("bare", "bench", {bare_key: ">"}, count=1)
            client.xack(bare_key, "bare", r[0][1][0][0])
            bare_ack.append(time.perf_counter() - t0)
        for name, (c, d) in (("floor", ("fc", "fd")), ("writes", ("wc", "wd"))):
            for _ in range(n):
                t0 = time.perf_counter()
                floor(c, d)
                out[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in out.items()}


def redis_claim_latency(url: str, held: int) -> tuple[float, float, float, float]:
    """As claim_latency, on a redis queue: the client's wall time and the server's CPU time
    per claim (INFO commandstats of EVALSHA, so the client's own noise is left out)."""
    q: Any = _redis_queue(url, held + 200)
    client = q.room._redis()

    def server_usec() -> tuple[int, int]:
        got = client.info("commandstats").get("cmdstat_evalsha", {"calls": 0, "usec": 0})
        return int(got["calls"]), int(got["usec"])

    def claims(k: int) -> tuple[float, float]:
        c0, u0 = server_usec()
        wall = []
        for _ in range(k):
            t0 = time.perf_counter()
            assert q.claim("bench", 600).claimed
            wall.append(time.perf_counter() - t0)
        c1, u1 = server_usec()
        return statistics.median(wall), (u1 - u0) / max(1, c1 - c0) / 1e6

    first, first_srv = claims(100)
    for _ in range(held - 100):
        q.claim("bench", 600)
    last, last_srv = claims(100)
    return first, last, first_srv, last_srv


def redis_main(quick: bool) -> None:
    import shutil

    if shutil.which("redis-server") is None:
        print("redis: skipped (redis-server is not installed)")
        return
    from tests.helpers.redis_server import RedisServer, new_room_name

    n, rounds = (50, 3) if quick else (200, 5)
    held = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-queue-redis-") as tmp:
        server = RedisServer(Path(tmp), persist=False)
        server.start()
        try:
            got = redis_claim_done(server.url(new_room_name()), n, rounds)
            first, last, first_srv, last_srv = redis_claim_latency(
                server.url(new_room_name()), held
            )
        finally:
            server.stop()
    from bench import load_line

    ours, bare, bare_ack, loop = got["ours"], got["bare"], got["bare_ack"], got["loop"]
    print()
    ratio = ours / bare
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(f"{'redis':<44}{'median':>11}{'x bare':>9}")
    print(f"{'claim+done (2 scripts)':<44}{ours * 1e3:>9.3f}ms{ratio:>9.2f}  <= 1.5 {verdict}")
    print(f"{'baseline: XREADGROUP + XACK + XDEL':<44}{bare * 1e3:>9.3f}ms")
    for name, what in (("floor", "floor: those commands in 2 scripts"),
                       ("writes", "floor: a correct pair's writes, no logic")):  # fmt: skip
        print(f"{what:<44}{got[name] * 1e3:>9.3f}ms{got[name] / bare:>9.2f}")
    ratio = ours / bare_ack
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(f"{'claim+done against XREADGROUP + XACK':<44}{'':>11}{ratio:>9.2f}  <= 1.5 {verdict}")
    print(f"{'baseline: XREADGROUP + XACK (entry kept)':<44}{bare_ack * 1e3:>9.3f}ms")
    ratio = loop / bare_ack
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(
        f"{'worker loop: done --next (one script)':<44}{loop * 1e3:>9.3f}ms{ratio:>9.2f}"
        f"  <= 1.5 {verdict} (x XREADGROUP + XACK)"
    )
    print()
    print(f"{'redis claim latency':<44}{'median':>11}{'server':>11}")
    print(f"{'first 100 claims (nothing held)':<44}{first * 1e3:>9.2f}ms{first_srv * 1e6:>9.0f}us")
    print(
        f"{f'100 claims with {held:,} entries held':<44}{last * 1e3:>9.2f}ms"
        f"{last_srv * 1e6:>9.0f}us"
    )
    print(f"{'ratio (must stay near 1)':<44}{last / first:>11.2f}{last_srv / first_srv:>11.2f}")
    print(load_line("after the redis runs"))


def main(flags: list[str] | None = None) -> None:
    quick = "--quick" in (flags or [])
    n = 50 if quick else 300
    held = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory(prefix="ackdeck-bench-queue-") as tmp:
        d = Path(tmp)
        rows = []
        for backlog in (0, 1_000):
            sub = d / f"q{backlog}"
            sub.mkdir()
            ours = statistics.median(claim_done(sub, n, backlog))
            rows.append((f"claim+done, {backlog:,} lines waiting behind", ours))
        bare = statistics.median(flock_append(d, n, fsync=False))
        synced = statistics.median(flock_append(d, n, fsync=True))
        print(f"{'operation':<44}{'median':>11}{'x bare':>9}{'x fsync':>9}")
        for name, t in rows:
            print(f"{name:<44}{t * 1e3:>9.2f}ms{t / bare:>9.1f}{t / synced:>9.1f}")
        print(f"{'baseline: flock + append a done record':<44}{bare * 1e3:>9.3f}ms")
        print(f"{'baseline: flock + append + fsync':<44}{synced * 1e3:>9.3f}ms")
        first, last, first_cpu, last_cpu = claim_latency(d, held)
        print()
        print(f"{'claim latency':<44}{'median':>11}{'CPU':>11}")
        print(
            f"{'first 100 claims (nothing held)':<44}{first * 1e3:>9.2f}ms{first_cpu * 1e3:>9.2f}ms"
        )
        print(
            f"{f'100 claims with {held:,} lines held':<44}{last * 1e3:>9.2f}ms"
            f"{last_cpu * 1e3:>9.2f}ms"
        )
        print(f"{'ratio (must stay near 1)':<44}{last / first:>11.2f}{last_cpu / first_cpu:>11.2f}")
    redis_main(quick)
