"""Lost replies on a redis room: a loopback proxy (tests/helpers/redis_proxy.py) forwards every
command to a real redis-server, lets it run, and drops its reply. Afterwards the command must
say exactly what happened: a push is retried with its ID and stored once; a read's receipt
is stored once; a read that cannot tell refuses the next ack. Plus the conservation soak
through the proxy: 0 lost, 0 duplicated pushes."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ackdeck.core.rooms.redis import lua as redis_lua
from ackdeck.core.service.refs import open_room
from tests.helpers.cli import ackdeck
from tests.helpers.paths import PATHS, REPO
from tests.helpers.redis_proxy import ReplyDropper
from tests.helpers.redis_server import RedisServer, new_room_name
from tests.helpers.wait import eventually

SCRIPTS = {
    n: getattr(redis_lua, n, "") for n in ("PUSH", "COMMIT_RECEIPT", "ACK", "READ", "STATUS")
}
SHA = {n: hashlib.sha1(text.encode()).hexdigest().encode() for n, text in SCRIPTS.items()}


@pytest.fixture
def proxy(redis_server: RedisServer) -> Iterator[ReplyDropper]:
    # The scripts are loaded first (straight to the server), so the first EVALSHA through the
    # proxy runs its script instead of answering NOSCRIPT.
    direct = redis.Redis(port=redis_server.port)
    for text in SCRIPTS.values():
        if text:
            direct.script_load(text)
    direct.close()
    p = ReplyDropper(redis_server.port)
    p.start()
    yield p
    p.stop()


@pytest.fixture
def name() -> str:
    return new_room_name()


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "ACKDECK_HOME": str(home),
        "PYTHONPATH": PATHS,
        "ACKDECK_REDIS_TIMEOUT": "10",
    }


def _entries(server: RedisServer, name: str) -> list[bytes]:
    direct = redis.Redis(port=server.port)
    try:
        return [f[b"line"] for _, f in direct.xrange(f"ackdeck:room:{{{name}}}")]
    finally:
        direct.close()


def _script(which: str):  # type: ignore[no-untyped-def]
    def rule(cmd: list[bytes]) -> bool:
        return cmd[0].upper() == b"EVALSHA" and cmd[1] == SHA[which]

    return rule


def _push_command(cmd: list[bytes]) -> bool:
    # The push, however it is sent: a bare XADD (before push IDs) or the push script.
    return cmd[0].upper() == b"XADD" or (cmd[0].upper() == b"EVALSHA" and cmd[1] == SHA["PUSH"])


def test_a_push_whose_reply_was_lost_is_stored_once_and_says_pushed(
    redis_server: RedisServer, proxy: ReplyDropper, env: dict[str, str], name: str
) -> None:
    proxy.drop_next(_push_command)
    out = ackdeck(env, "room", "push", proxy.url(name), "build 4512 failed", "--json")
    assert len(proxy.dropped) == 1  # the push ran and its reply was lost
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["offset"]  # the first attempt's entry ID
    assert _entries(redis_server, name) == [b"build 4512 failed"]  # once, not twice


async def test_the_mcp_push_says_pushed_after_a_lost_reply_and_stores_once(
    redis_server: RedisServer, proxy: ReplyDropper, home: Path, name: str
) -> None:
    from mcp import Client, StdioServerParameters

    from tests.helpers.mcp import call, text_of

    url = proxy.url(name)
    args = ["-m", "ackdeck.core.cli", "--home", str(home), "mcp", "--session", "agent"]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*args, "--room", url],
        env={"PYTHONPATH": PATHS, "ACKDECK_REDIS_TIMEOUT": "10"},
        cwd=str(REPO),
    )
    async with Client(params, read_timeout_seconds=60) as client:
        proxy.drop_next(_push_command)
        pushed = await call(client, "room_push", {"room": name, "text": "by agent"})
        assert len(proxy.dropped) == 1
        assert not pushed.is_error, text_of(pushed)
        assert text_of(pushed).startswith("pushed one line")
    assert _entries(redis_server, name) == [b"by agent"]


def test_a_push_that_never_learns_its_outcome_says_unknown_and_is_still_stored_once(
    redis_server: RedisServer, proxy: ReplyDropper, env: dict[str, str], name: str
) -> None:
    proxy.drop_next(_push_command, times=1000)  # every attempt runs; every reply is lost
    out = ackdeck({**env, "ACKDECK_REDIS_TIMEOUT": "1"}, "room", "push", proxy.url(name), "done")
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1
    assert "nothing was changed" not in out.stderr
    assert "whether the line was stored is unknown" in out.stderr
    retried = len(proxy.dropped) - 1  # every retry carried the same push ID
    assert retried >= 3 and f"retried {retried} times" in out.stderr
    assert _entries(redis_server, name) == [b"done"]
    # The command it says to look with exists and finds the line (it named `room tail`).
    said = out.stderr.split("`ackdeck ", 1)[1].split("`", 1)[0].split()
    assert said == ["room", "trace", "ROOM", "--match", "TEXT"], out.stderr
    look = ackdeck(env, "room", "trace", redis_server.url(name), "--match", "done")
    assert look.returncode == 0 and "done" in look.stdout, look


def test_a_push_to_a_closed_port_says_nothing_was_changed(env: dict[str, str]) -> None:
    from tests.helpers.redis_server import free_port

    out = ackdeck(env, "room", "push", f"redis://127.0.0.1:{free_port()}/0/r", "x")
    assert out.returncode == 1 and "nothing was changed by this command" in out.stderr


def test_a_read_whose_receipt_reply_was_lost_is_recorded_once(
    redis_server: RedisServer, proxy: ReplyDropper, env: dict[str, str], name: str
) -> None:
    room = open_room(redis_server.url(name))
    room.push("a")
    room.push("b")
    proxy.drop_next(_script("COMMIT_RECEIPT"))
    out = ackdeck(env, "room", "read", proxy.url(name), "--session", "s")
    assert len(proxy.dropped) == 1
    assert out.returncode == 0, out.stderr
    assert out.stdout == "a\nb\n"
    acked = ackdeck(env, "room", "ack", proxy.url(name), "--session", "s", "--json")
    assert acked.returncode == 0, acked.stderr
    assert json.loads(acked.stdout)["acked"] == 2
    assert room.status().pending == 0
    room.close()


def test_an_ack_whose_reply_was_lost_is_answered_from_the_server_not_applied_twice(
    redis_server: RedisServer, proxy: ReplyDropper, env: dict[str, str], name: str
) -> None:
    room = open_room(redis_server.url(name))
    room.push("a")
    room.push("b")
    assert ackdeck(env, "room", "read", proxy.url(name), "--session", "s").stdout == "a\nb\n"
    room.push("late")  # arrived after the read: must survive the ack and its retry
    proxy.drop_next(_script("ACK"))
    acked = ackdeck(env, "room", "ack", proxy.url(name), "--session", "s", "--json")
    assert len(proxy.dropped) == 1
    assert acked.returncode == 0, acked.stderr
    got = json.loads(acked.stdout)
    assert (got["mode"], got["acked"], got["preserved"]) == ("prefix", 2, 1)
    assert _entries(redis_server, name) == [b"late"]
    direct = redis.Redis(port=redis_server.port)
    assert direct.xlen(f"ackdeck:room:{{{name}}}:audit") == 1  # one ack, not two
    direct.close()
    room.close()


def test_a_read_that_cannot_tell_refuses_the_next_ack(
    redis_server: RedisServer, proxy: ReplyDropper, env: dict[str, str], name: str
) -> None:
    room = open_room(redis_server.url(name))
    room.push("a")
    room.push("b")
    proxy.drop_next(_script("COMMIT_RECEIPT"), times=1000)
    out = ackdeck(
        {**env, "ACKDECK_REDIS_TIMEOUT": "1"}, "room", "read", proxy.url(name), "--session", "s"
    )
    assert len(proxy.dropped) >= 4
    assert out.stdout == "a\nb\n"  # delivered ...
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1
    assert "whether their receipt was stored is unknown" in out.stderr  # ... and said so
    assert "next ack of session 's' is refused" in out.stderr
    assert "nothing was changed" not in out.stderr
    # The receipt did land on the server; the next ack (any connection) still refuses it.
    refused = ackdeck(env, "room", "ack", redis_server.url(name), "--session", "s")
    assert refused.returncode == 3, refused.stderr
    assert "lost its reply" in refused.stderr and "nothing was removed" in refused.stderr
    assert _entries(redis_server, name) == [b"a", b"b"]
    # ... and stays refused until the session reads again; then everything works.
    again = ackdeck(env, "room", "ack", redis_server.url(name), "--session", "s")
    assert again.returncode == 3 and _entries(redis_server, name) == [b"a", b"b"]
    assert ackdeck(env, "room", "read", redis_server.url(name), "--session", "s").stdout == "a\nb\n"
    assert ackdeck(env, "room", "ack", redis_server.url(name), "--session", "s").returncode == 0
    assert _entries(redis_server, name) == []
    room.close()


def test_a_fenced_read_can_never_land_late(redis_server: RedisServer, name: str, home) -> None:
    """The doubtful read's command may still arrive after the ack refused it: it is fenced
    off by its read ID and stores nothing."""
    room = open_room(redis_server.url(name), env={"ACKDECK_HOME": str(home)})
    room.push("a")
    room.read("s")
    room._doubts().put("s", "late-read")
    with pytest.raises(Exception, match="lost its reply"):
        room.ack("s")
    direct = redis.Redis(port=redis_server.port)
    meta = f"ackdeck:room:{{{name}}}:meta"
    before = direct.hget(meta, "r:s")
    late = json.dumps({"epoch": 0, "first": "0-1", "last": "9-9", "count": 1, "added": 1,
                       "digest": "", "acked": False, "read": "late-read"})  # fmt: skip
    stored = direct.evalsha(SHA["COMMIT_RECEIPT"], 1, meta, "s", late, "late-read", "")
    assert stored == 0 and direct.hget(meta, "r:s") == before
    direct.close()
    assert room.status().pending == 1
    room.close()


# ----- the conservation soak through a reply-dropping proxy -------------------------------
PUSHER = """
import sys, os
from ackdeck.core.service.refs import open_room
from ackdeck.core.errors import RoomUnavailable
url, tag, stop, out = sys.argv[1:5]
r = open_room(url)
log = open(out, "a")
i = 0
while not os.path.exists(stop):
    i += 1
    r.push(f"{tag}-{i}")  # retries by itself after a lost reply; never raises in this soak
    log.write(f"{tag}-{i}\\n")  # acknowledged: the push returned its entry ID
    log.flush()
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
        out.write(json.dumps({"lines": [x.decode() for x in got.lines]}) + "\\n")
        out.flush()
        r.ack(session)
    except (RoomUnavailable, ColdAck):
        pass  # an ack whose reply was lost, or one refused after it: read again
    time.sleep(random.uniform(0, 0.01))
"""


def _soak(tmp_path: Path, server: RedisServer, proxy: ReplyDropper, seconds: float) -> dict:
    name = new_room_name()
    url = proxy.url(name)
    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": PATHS, "ACKDECK_REDIS_TIMEOUT": "10",
           "ACKDECK_HOME": str(tmp_path / "home")}  # fmt: skip
    tags = ["push1", "push2"]
    sessions = ["ackA", "ackB"]
    procs = [
        subprocess.Popen([sys.executable, "-c", PUSHER, url, t, str(stop), str(tmp_path / t)],
                         env=env, cwd=REPO, stderr=subprocess.PIPE)
        for t in tags
    ] + [
        subprocess.Popen([sys.executable, "-c", ACKER, url, s, str(stop), str(tmp_path / s)],
                         env=env, cwd=REPO, stderr=subprocess.PIPE)
        for s in sessions
    ]  # fmt: skip
    # The clock starts once every producer pushed (interpreters start slowly on a busy box).
    eventually(
        lambda: all((tmp_path / t).exists() and (tmp_path / t).stat().st_size for t in tags),
        what="every producer to push",
    )
    rng = random.Random(21)
    proxy.drop_every(rng.randint(5, 9))  # about one reply in seven never arrives
    time.sleep(seconds)
    stop.write_text("")
    for p in procs:
        p.wait(timeout=120)
        err = p.stderr.read().decode() if p.stderr else ""
        assert p.returncode == 0, err
    proxy.drop_every(0)
    room = open_room(server.url(name))
    final = room.read("final")
    status = room.status()
    room.close()
    acknowledged: list[str] = []
    for t in tags:
        acknowledged.extend((tmp_path / t).read_text().split())
    delivered = {x.decode() for x in final.lines}
    for s in sessions:
        for raw in (tmp_path / s).read_text().splitlines():
            delivered.update(json.loads(raw)["lines"])
    stats = {
        "seconds": seconds,
        "pushed": len(acknowledged),
        "stored": status.pushed_total,  # entries ever added to the stream
        "lost": len(set(acknowledged) - delivered),
        "duplicated_pushes": status.pushed_total - len(acknowledged),
        "replies_dropped": len(proxy.dropped),
    }
    print("\nredis lost-reply soak: " + " ".join(f"{k}={v}" for k, v in stats.items()))
    assert stats["lost"] == 0 and stats["duplicated_pushes"] == 0, stats
    return stats


def test_lost_reply_soak_short(
    tmp_path: Path, redis_server: RedisServer, proxy: ReplyDropper
) -> None:
    stats = _soak(tmp_path, redis_server, proxy, 4.0)
    assert stats["pushed"] > 50 and stats["replies_dropped"] > 20


@pytest.mark.soak
def test_lost_reply_soak_long(
    tmp_path: Path, redis_server: RedisServer, proxy: ReplyDropper
) -> None:
    if os.environ.get("ACKDECK_SOAK") != "long":
        pytest.skip("long soak: run `make soak` (ACKDECK_SOAK=long)")
    _soak(tmp_path, redis_server, proxy, float(os.environ.get("ACKDECK_SOAK_SECONDS", "60")))
