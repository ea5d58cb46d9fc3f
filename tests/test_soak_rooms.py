"""Multi-process soak: producers (push and raw `>>`), reading/acking sessions, random kill -9.

Every producer writes unique lines `TAG-N`. Every acker logs what each read returned (with its
logical offset) *before* it acks, so a line that disappeared without appearing in any read was
lost. The supervisor SIGKILLs ackers at random and restarts them under the same session name.
At the end it prints pushed / delivered / acked / lost / duplicates / torn; lost and torn must
be 0. A duplicate (the same line at two logical offsets) is a redelivery, allowed by the design
only after a crash inside a sweep; it is reported, not failed.

`make test` runs a few seconds of it; `make soak` (ACKDECK_SOAK=long, `-m soak`) runs
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

from ackdeck.core.rooms.file.room import Room
from tests.helpers.paths import PATHS, REPO

PUSHER = """
import sys, time, os
from ackdeck.core.rooms.file.room import Room
room, tag, stop, out = sys.argv[1:5]
r = Room(room)
i = 0
while not os.path.exists(stop):
    i += 1
    r.push(f"{tag}-{i}")
    time.sleep(0.002)
open(out, "w").write(str(i))
"""

RAW_APPENDER = """
import sys, time, os
room, tag, stop, out = sys.argv[1:5]
i = 0
while not os.path.exists(stop):
    i += 1
    fd = os.open(room, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)  # reopened per line
    os.write(fd, f"{tag}-{i}\\n".encode())
    os.close(fd)
    time.sleep(0.002)
open(out, "w").write(str(i))
"""

SH_APPENDER = (
    'i=0; while [ ! -e "$3" ]; do i=$((i+1)); printf "$2-%d\\n" $i >> "$1"; sleep 0.005; done;'
    ' echo $i > "$4"'
)

ACKER = """
import sys, time, os, json, random
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.errors import ColdAck
room, session, stop, log = sys.argv[1:5]
r = Room(room)
out = open(log, "a")
while not os.path.exists(stop):
    got = r.read(session)
    if got.lines:
        out.write(json.dumps({"start": got.start, "epoch": got.epoch,
                              "lines": [x.decode("latin-1") for x in got.lines]}) + "\\n")
        out.flush()  # in the page cache before the ack: a kill -9 cannot lose it
    res = r.ack(session)
    out.write(json.dumps({"ack": res.mode, "acked": res.acked}) + "\\n")
    out.flush()
    time.sleep(random.uniform(0, 0.02))
"""

LINE = re.compile(r"^(push\d|raw\d|sh\d)-(\d+)$")


def _soak(tmp_path: Path, seconds: float, kill_every: float) -> dict[str, int]:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"")
    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": PATHS}
    rng = random.Random(1234)

    producers: list[tuple[str, subprocess.Popen[bytes]]] = []
    for tag, kind in (("push1", "push"), ("push2", "push"), ("raw1", "raw"), ("sh1", "sh")):
        out = str(tmp_path / f"count-{tag}")
        if kind == "sh":
            argv = ["sh", "-c", SH_APPENDER, "sh", str(room), tag, str(stop), out]
        else:
            code = PUSHER if kind == "push" else RAW_APPENDER
            argv = [sys.executable, "-c", code, str(room), tag, str(stop), out]
        producers.append((tag, subprocess.Popen(argv, env=env, cwd=REPO)))

    sessions = ["ackA", "ackB", "ackC"]

    def start_acker(s: str) -> subprocess.Popen[bytes]:
        log = str(tmp_path / f"log-{s}.jsonl")
        return subprocess.Popen(
            [sys.executable, "-c", ACKER, str(room), s, str(stop), log],
            env=env,
            cwd=REPO,
            stderr=subprocess.PIPE,
        )

    ackers = {s: start_acker(s) for s in sessions}
    kills = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.5, 1.5) * kill_every)
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
        for _, p in producers:
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

    # Final drain: the next read sweeps any old inode that late `>>` bytes went into.
    final = Room(room).read("final")
    Room(room).ack("final")

    pushed = {tag: int((tmp_path / f"count-{tag}").read_text()) for tag, _ in producers}
    positions: dict[str, set[int]] = defaultdict(set)
    torn: list[str] = []
    acked_by_results = 0
    reads = [{"start": final.start, "lines": [x.decode("latin-1") for x in final.lines]}]
    for s in sessions:
        for raw in (tmp_path / f"log-{s}.jsonl").read_text().splitlines():
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError:
                continue  # the last record of a killed acker may be cut short; never a read
            if "ack" in rec:
                acked_by_results += rec["acked"]
            else:
                reads.append(rec)
    for rec in reads:
        offset = rec["start"]
        for line in rec["lines"]:
            if not LINE.match(line):
                torn.append(line)
            positions[line].add(offset)
            offset += len(line.encode("latin-1")) + 1
    expected = {f"{tag}-{i}" for tag, n in pushed.items() for i in range(1, n + 1)}
    delivered = set(positions) & expected
    lost = expected - set(positions)
    dups = sum(len(v) - 1 for k, v in positions.items() if k in expected)
    unknown = set(positions) - expected - set(torn)
    stats = {
        "seconds": int(seconds),
        "pushed": len(expected),
        "delivered": len(delivered),
        "acked": acked_by_results + len(final.lines),
        "lost": len(lost),
        "duplicates": dups,
        "torn": len(torn) + len(unknown),
        "acker_kills": kills,
    }
    print("\nsoak: " + " ".join(f"{k}={v}" for k, v in stats.items()))
    assert not lost, f"lost {len(lost)} line(s), e.g. {sorted(lost)[:5]}"
    assert not torn and not unknown, f"torn lines: {torn[:5]} {sorted(unknown)[:5]}"
    assert Path(room).read_bytes() == b""
    return stats


def test_soak_short(tmp_path: Path) -> None:
    stats = _soak(tmp_path, seconds=4.0, kill_every=0.4)
    assert stats["pushed"] > 100 and stats["acker_kills"] >= 3


@pytest.mark.soak
def test_soak_long(tmp_path: Path) -> None:
    seconds = float(os.environ.get("ACKDECK_SOAK_SECONDS", "60"))
    if os.environ.get("ACKDECK_SOAK") != "long":
        pytest.skip("long soak: run `make soak` (ACKDECK_SOAK=long)")
    stats = _soak(tmp_path, seconds=seconds, kill_every=0.3)
    assert stats["acker_kills"] >= seconds
