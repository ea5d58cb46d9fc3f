"""Conservation soak on a redis room: producers on their own connections (separate processes),
reading/acking sessions killed with kill -9 at random, and (second test) the server itself
killed with kill -9 and restarted on its append-only file (`appendfsync always`).

Producers record a line only after its push returned (an acknowledged push). Ackers log every
read, with entry IDs, before they ack. At the end every acknowledged push must have been
delivered by some read: lost = 0. Duplicates (a line delivered twice to one session) happen only
when an acker died between its read and its ack; a push whose reply the dying server never
sent is retried and may add the line twice. Both are reported, not failed.

`make test` runs a few seconds of each; `make soak` (ACKDECK_SOAK=long, `-m soak`) runs
ACKDECK_SOAK_SECONDS (default 60).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from ackdeck.core.service.refs import open_room
from tests.helpers.paths import PATHS, REPO
from tests.helpers.redis_server import RedisServer, new_room_name
from tests.helpers.wait import eventually

PUSHER = """
import sys, time, os
from ackdeck.core.service.refs import open_room
from ackdeck.core.errors import RoomUnavailable
url, tag, stop, out = sys.argv[1:5]
r = open_room(url)
log = open(out, "a")
i = 0
while not os.path.exists(stop):
    i += 1
    while True:
        try:
            r.push(f"{tag}-{i}")
            break
        except RoomUnavailable:  # the server is down: retry the same line (maybe a duplicate)
            if os.path.exists(stop):
                sys.exit(0)
            time.sleep(0.05)
    log.write(f"{tag}-{i}\\n")  # acknowledged: the push returned its entry ID
    log.flush()
    time.sleep(0.002)
"""

ACKER = """
import sys, time, os, json, random
from ackdeck.core.service.refs import open_room
from ackdeck.core.errors import ColdAck, RoomUnavailable
url, session, stop, log = sys.argv[1:5]
r = open_room(url)
out = open(log, "a")
while not os.path.exists(stop):
    try:
        got = r.read(session)
        if got.lines:
            out.write(json.dumps({"start": got.start, "end": got.end, "epoch": got.epoch,
                                  "lines": [x.decode("latin-1") for x in got.lines]}) + "\\n")
            out.flush()  # in the page cache before the ack: a kill -9 cannot lose it
        res = r.ack(session)
        out.write(json.dumps({"ack": res.mode, "acked": res.acked}) + "\\n")
        out.flush()
    except (RoomUnavailable, ColdAck):
        time.sleep(0.05)  # server down, or the receipt was lost with it: read again
    time.sleep(random.uniform(0, 0.02))
"""

LINE = re.compile(r"^push\d-\d+$")


def _soak(
    tmp_path: Path,
    server: RedisServer,
    seconds: float,
    kill_every: float,
    server_kills: int = 0,
) -> dict[str, int]:
    url = server.url(new_room_name())
    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": PATHS, "ACKDECK_REDIS_TIMEOUT": "10"}
    rng = random.Random(1234)
    tags = ["push1", "push2", "push3"]
    producers = [
        subprocess.Popen(
            [sys.executable, "-c", PUSHER, url, tag, str(stop), str(tmp_path / f"pushed-{tag}")],
            env=env,
            cwd=REPO,
        )
        for tag in tags
    ]
    sessions = ["ackA", "ackB", "ackC"]

    def start_acker(s: str) -> subprocess.Popen[bytes]:
        log = str(tmp_path / f"log-{s}.jsonl")
        return subprocess.Popen(
            [sys.executable, "-c", ACKER, url, s, str(stop), log],
            env=env,
            cwd=REPO,
            stderr=subprocess.PIPE,
        )

    ackers = {s: start_acker(s) for s in sessions}
    # The clock starts once every producer pushed (interpreters start slowly on a busy box).
    eventually(
        lambda: all(
            (tmp_path / f"pushed-{tag}").exists() and (tmp_path / f"pushed-{tag}").stat().st_size
            for tag in tags
        ),
        what="every producer to push",
    )
    kills = restarts = 0
    started = time.monotonic()
    deadline = started + seconds
    server_kill_at = [started + seconds * (i + 1) / (server_kills + 1) for i in range(server_kills)]
    try:
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.5, 1.5) * kill_every)
            if server_kill_at and time.monotonic() >= server_kill_at[0]:
                server_kill_at.pop(0)
                server.kill9()
                time.sleep(0.3)  # down for a while: producers and ackers see it unreachable
                server.start()
                restarts += 1
            victim = rng.choice(sessions)
            proc = ackers[victim]
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
            elif proc.returncode != 0:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"acker {victim} crashed by itself: {err}")
            ackers[victim] = start_acker(victim)
    finally:
        stop.write_text("")
        for p in producers:
            p.wait(timeout=60)
        for s, p in ackers.items():
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if p.returncode not in (0, -signal.SIGKILL):
                err = p.stderr.read().decode() if p.stderr else ""
                raise AssertionError(f"acker {s} failed: {err}")

    room = open_room(url)
    final = room.read("final")
    room.ack("final")
    assert room.status().pending == 0
    room.close()

    acknowledged: set[str] = set()
    for tag in tags:
        acknowledged.update((tmp_path / f"pushed-{tag}").read_text().split())
    # Per session: the sessions share one room, so two sessions reading the same line before
    # either acked it is the shared-room contract, not a redelivery.
    deliveries: dict[tuple[str, str], int] = defaultdict(int)
    torn: list[str] = []
    acked_by_results = 0
    reads = [("final", [x.decode("latin-1") for x in final.lines])]
    for s in sessions:
        for raw in (tmp_path / f"log-{s}.jsonl").read_text().splitlines():
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError:
                continue  # the last record of a killed acker may be cut short; never a read
            if "ack" in rec:
                acked_by_results += rec["acked"]
            else:
                reads.append((s, rec["lines"]))
    for session, lines in reads:
        for line in lines:
            if not LINE.match(line):
                torn.append(line)
            deliveries[(session, line)] += 1
    delivered_lines = {line for _, line in deliveries}
    lost = acknowledged - delivered_lines
    stats = {
        "seconds": int(seconds),
        "pushed": len(acknowledged),
        "delivered": len(delivered_lines & acknowledged),
        "acked": acked_by_results + len(final.lines),
        "lost": len(lost),
        "duplicates": sum(n - 1 for n in deliveries.values()),
        "torn": len(torn),
        "acker_kills": kills,
        "server_kills": restarts,
    }
    print("\nredis soak: " + " ".join(f"{k}={v}" for k, v in stats.items()))
    assert not lost, f"lost {len(lost)} acknowledged push(es), e.g. {sorted(lost)[:5]}"
    assert not torn, f"torn lines: {torn[:5]}"
    return stats


@pytest.fixture
def own_server(tmp_path: Path) -> object:
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def test_redis_soak_short(tmp_path: Path, redis_server: RedisServer) -> None:
    stats = _soak(tmp_path, redis_server, seconds=4.0, kill_every=0.4)
    assert stats["pushed"] > 100 and stats["acker_kills"] >= 3


def test_redis_soak_server_killed_and_restarted(tmp_path: Path, own_server: RedisServer) -> None:
    stats = _soak(tmp_path, own_server, seconds=6.0, kill_every=0.5, server_kills=1)
    assert stats["server_kills"] == 1 and stats["pushed"] > 100


@pytest.mark.soak
def test_redis_soak_long(tmp_path: Path, own_server: RedisServer) -> None:
    if os.environ.get("ACKDECK_SOAK") != "long":
        pytest.skip("long soak: run `make soak` (ACKDECK_SOAK=long)")
    seconds = float(os.environ.get("ACKDECK_SOAK_SECONDS", "60"))
    _soak(tmp_path, own_server, seconds=seconds, kill_every=0.5, server_kills=3)
