"""A redis queue room (core/rooms/redis/queue.py) through the faults of its server: replies
lost after the script ran (a loopback proxy, tests/helpers/redis_proxy.py), a kill -9 and
restart with persistence (nothing lost, nothing done twice) and without it (what is unknown
is said, and no token from before can complete anything), and a stream deleted and
recreated behind ackdeck's back (the queue starts afresh)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.rooms.redis import queue as redis_queue
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.queue import TokenRefused
from tests.helpers.cli import ackdeck
from tests.helpers.clock import Clock
from tests.helpers.paths import PATHS
from tests.helpers.redis_proxy import ReplyDropper
from tests.helpers.redis_server import RedisServer, new_room_name

SHA = {
    n: hashlib.sha1(getattr(redis_queue, n).encode()).hexdigest().encode()
    for n in ("CLAIM", "UPDATE", "NEXT")
}


def make_queue(url: str, *lines: str, max_deliveries: int | None = None) -> None:
    d = Deck(Path("/nonexistent-home"), "producer", [url])
    room = d.open(d.rooms[0])
    try:
        room.set_policy(RoomPolicy(queue=True, max_deliveries=max_deliveries))
        for line in lines:
            room.push(line)
    finally:
        room.close()


def stream(port: int, name: str) -> list[bytes]:
    direct = redis.Redis(port=port)
    try:
        return [f[b"line"] for _, f in direct.xrange(f"ackdeck:room:{{{name}}}")]
    finally:
        direct.close()


def audit_modes(port: int, name: str) -> list[bytes]:
    direct = redis.Redis(port=port)
    try:
        return [f[b"mode"] for _, f in direct.xrange(f"ackdeck:room:{{{name}}}:audit")]
    finally:
        direct.close()


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return {"ACKDECK_HOME": str(home), "PYTHONPATH": PATHS, "ACKDECK_REDIS_TIMEOUT": "10"}


# ----- lost replies -----------------------------------------------------------------------------
@pytest.fixture
def proxy(redis_server: RedisServer) -> Iterator[ReplyDropper]:
    direct = redis.Redis(port=redis_server.port)
    for n in ("CLAIM", "UPDATE", "NEXT"):
        direct.script_load(getattr(redis_queue, n))
    direct.close()
    p = ReplyDropper(redis_server.port)
    p.start()
    yield p
    p.stop()


def _script(which: str):  # type: ignore[no-untyped-def]
    def rule(cmd: list[bytes]) -> bool:
        return cmd[0].upper() == b"EVALSHA" and cmd[1] == SHA[which]

    return rule


def test_a_claim_whose_reply_was_lost_hands_out_one_line_not_two(
    redis_server: RedisServer, proxy: ReplyDropper, env: dict[str, str]
) -> None:
    name = new_room_name()
    make_queue(redis_server.url(name), "a", "b")
    proxy.drop_next(_script("CLAIM"))
    out = ackdeck(env, "claim", proxy.url(name), "--session", "s", "--json")
    assert len(proxy.dropped) == 1  # the claim ran; its reply was lost; it was sent again
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert (got["line"], got["deliveries"]) == ("a\n", 1)
    # The retry answered the first attempt's claim: b was never handed out.
    nxt = json.loads(
        ackdeck(env, "claim", redis_server.url(name), "--session", "t", "--json").stdout
    )
    assert (nxt["line"], nxt["deliveries"]) == ("b\n", 1)
    # a's task records one claim (the retry did not claim it again): its only holder, s.
    direct = redis.Redis(port=redis_server.port)
    task = json.loads(direct.hget(f"ackdeck:room:{{{name}}}:queue", f"t:{got['entry']}"))
    direct.close()
    assert [c[0] for c in task["h"]] == ["s"] and task["deliveries"] == 1


def test_a_done_whose_reply_was_lost_completes_once_and_says_done(
    redis_server: RedisServer, proxy: ReplyDropper, env: dict[str, str]
) -> None:
    name = new_room_name()
    make_queue(redis_server.url(name), "a", "b")
    got = json.loads(
        ackdeck(env, "claim", redis_server.url(name), "--session", "s", "--json").stdout
    )
    proxy.drop_next(_script("UPDATE"))
    out = ackdeck(env, "done", proxy.url(name), got["token"], "--json")
    assert len(proxy.dropped) == 1
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["mode"] == "done"  # the first attempt's answer
    assert stream(redis_server.port, name) == [b"b"]
    assert audit_modes(redis_server.port, name).count(b"done") == 1


def test_a_done_next_whose_reply_was_lost_finishes_once_and_claims_one_line(
    redis_server: RedisServer, proxy: ReplyDropper, env: dict[str, str]
) -> None:
    # The done and the next claim in one script: its retry must answer both from the first
    # attempt (the done by its done mark, the claim by its op's stored reply), never finish a
    # second time nor hand out a second line.
    name = new_room_name()
    make_queue(redis_server.url(name), "a", "b", "c")
    got = json.loads(
        ackdeck(env, "claim", redis_server.url(name), "--session", "s", "--json").stdout
    )
    proxy.drop_next(_script("NEXT"))
    out = ackdeck(env, "done", proxy.url(name), got["token"], "--next", "--session", "s", "--json")
    assert len(proxy.dropped) == 1
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout)
    assert done["mode"] == "done" and done["claimed_next"]["line"] == "b\n"
    assert done["claimed_next"]["deliveries"] == 1
    other = json.loads(
        ackdeck(env, "claim", redis_server.url(name), "--session", "t", "--json").stdout
    )
    assert other["line"] == "c\n"  # b was handed out once, to s
    assert stream(redis_server.port, name) == [b"b", b"c"]
    assert audit_modes(redis_server.port, name).count(b"done") == 1


# ----- restarts ---------------------------------------------------------------------------------
def test_a_restart_with_persistence_loses_no_task_and_completes_none_twice(
    tmp_path: Path, home: Path
) -> None:
    server = RedisServer(tmp_path / "redis", persist=True)  # AOF, fsync on every write
    server.start()
    try:
        url = server.url("tasks")
        make_queue(url, "a", "b", "c")
        clock = Clock()
        one, two = Deck(home, "one", [url], clock=clock), Deck(home, "two", [url], clock=clock)
        a = one.claim(one.rooms[0], lease=60)
        b = two.claim(two.rooms[0], lease=10)
        assert a.token is not None and b.token is not None
        assert one.task(one.rooms[0], a.token, "done").mode == "done"
        server.kill9()
        server.start()
        # Everything acknowledged before the kill is there: a's done (a retry is a no-op),
        # b's lease and token, c unclaimed.
        assert one.task(one.rooms[0], a.token, "done").mode == "noop"
        assert one.claim(one.rooms[0], lease=60).line == b"c\n"
        clock.t += 10  # b's lease ends: b is handed out again, its old holder refused
        again = one.claim(one.rooms[0], lease=60)
        assert (again.line, again.deliveries) == (b"b\n", 2)
        with pytest.raises(TokenRefused, match="superseded"):
            two.task(two.rooms[0], b.token, "done")
        assert again.token is not None
        one.task(one.rooms[0], again.token, "done")
        assert stream(server.port, "tasks") == [b"c"]
        assert audit_modes(server.port, "tasks").count(b"done") == 2
    finally:
        server.stop()


def test_a_restart_without_persistence_says_the_state_is_gone_and_completes_nothing(
    tmp_path: Path, home: Path
) -> None:
    server = RedisServer(tmp_path / "redis", persist=False)
    server.start()
    try:
        url = server.url("tasks")
        make_queue(url, "a", "b")
        d = Deck(home, "s", [url], clock=Clock())
        a = d.claim(d.rooms[0], lease=60)
        assert a.token is not None
        server.kill9()
        server.start()  # an empty server: the stream, the group, the policy, the tokens
        # The holder cannot complete, extend or release anything with a token from before,
        # and is told the state is gone and what that leaves unknown, in one line.
        for op in ("done", "extend", "release"):
            with pytest.raises(TokenRefused, match="gone from the server") as err:
                d.task(d.rooms[0], a.token, op)
            assert "unknown" in str(err.value) and "\n" not in str(err.value)
        # The room is no queue any more (its policy was lost too): claims say how to make it
        # one; nothing is handed out from a state nobody can vouch for.
        with pytest.raises(Exception, match="not a queue"):
            d.claim(d.rooms[0])
        # A new queue there issues tokens the old ones can never match.
        make_queue(url, "a2")
        b = d.claim(d.rooms[0])
        assert b.line == b"a2\n" and b.token is not None
        with pytest.raises(TokenRefused):
            d.task(d.rooms[0], a.token, "done")
        assert d.task(d.rooms[0], b.token, "done").mode == "done"
    finally:
        server.stop()


def test_a_stream_deleted_and_recreated_starts_the_queue_afresh(
    redis_server: RedisServer, home: Path
) -> None:
    name = new_room_name()
    url = redis_server.url(name)
    make_queue(url, "old")
    d = Deck(home, "s", [url], clock=Clock())
    old = d.claim(d.rooms[0])
    assert old.token is not None
    direct = redis.Redis(port=redis_server.port)
    direct.delete(f"ackdeck:room:{{{name}}}")  # the stream (and its consumer group) by hand
    direct.xadd(f"ackdeck:room:{{{name}}}", {"line": "new one"})
    direct.close()
    with pytest.raises(TokenRefused, match="started afresh"):
        d.task(d.rooms[0], old.token, "done")
    got = d.claim(d.rooms[0])
    assert (got.line, got.deliveries) == (b"new one\n", 1)
    assert stream(redis_server.port, name) == [b"new one"]


def test_agents_through_a_redis_kill_and_restart_with_persistence_complete_every_task_once(
    tmp_path: Path,
) -> None:
    """Four agent processes work a redis queue; the server is killed with -9 mid-work and
    restarted on its files (AOF, fsync on every write). Every task is done exactly once (one
    `done` audit entry per entry), none is lost, and no superseded holder completed one."""
    from tests.helpers.queues import Agents, log_of, stale_dones
    from tests.helpers.wait import eventually

    server = RedisServer(tmp_path / "redis", persist=True)
    server.start()
    tasks = [f"task-{i}" for i in range(300)]
    log = tmp_path / "agents.log"
    agents = Agents(server.url("tasks"), log, 3.0, 0.0, env={"ACKDECK_REDIS_TIMEOUT": "1"})
    try:
        make_queue(server.url("tasks"), *tasks)
        for n in ("a", "b", "c", "d"):
            agents.start(n)
        eventually(
            lambda: sum(log_of(log)["done"].values()) >= 20, what="some tasks done", timeout=120
        )
        server.kill9()
        server.start()
        waiting = len(stream(server.port, "tasks"))
        # Tasks wait after the restart (the kill came mid-work, not after it).
        assert waiting > 0, "every task was done before the kill: the test proved nothing"
        eventually(lambda: stream(server.port, "tasks") == [], what="every task", timeout=180)
        agents.stop()
    finally:
        agents.kill_all()
        direct = redis.Redis(port=server.port)
        try:
            entries = direct.xrange("ackdeck:room:{tasks}:audit")
        finally:
            direct.close()
        server.stop()
    events = log_of(log)
    done = [f[b"first"] for _, f in entries if f[b"mode"] == b"done"]
    assert len(done) == len(set(done)) == len(tasks), events  # each entry done once, all done
    assert not [f for _, f in entries if f[b"mode"] == b"dead"]
    assert all(n == 1 for n in events["done"].values()), events["done"]
    assert not stale_dones(log)
    # A done the restart cut off was sent again: made once (done), or said noop when the
    # first attempt had been made; the log names every task as done or noop.
    assert set(events["done"]) | set(events["noop"]) == set(tasks)
    print(
        f"{waiting} of {len(tasks)} tasks waited after the restart; "
        f"{sum(events['noop'].values())} dones said noop, {sum(events['refused'].values())} "
        "stale dones refused"
    )


# ----- state ackdeck never writes ---------------------------------------------------------------
def test_a_damaged_task_record_is_one_line_and_its_mend_hands_the_entry_out_again(
    redis_server: RedisServer, home: Path
) -> None:
    from ackdeck.core.errors import CorruptState

    name = new_room_name()
    url = redis_server.url(name)
    make_queue(url, "a", "b")
    clock = Clock()
    d = Deck(home, "s", [url], clock=clock)
    got = d.claim(d.rooms[0], lease=60)
    assert got.line == b"a\n" and got.token is not None
    direct = redis.Redis(port=redis_server.port)
    qh = f"ackdeck:room:{{{name}}}:queue"
    direct.hset(qh, f"t:{got.entry}", b'{"token": 1, "h": "not a list"')
    for op in ("done", "extend", "release"):
        with pytest.raises(CorruptState, match="is not what ackdeck writes") as err:
            d.task(d.rooms[0], got.token, op)
        assert "\n" not in str(err.value) and f"HDEL {qh} t:{got.entry}" in str(err.value)
    assert d.claim(d.rooms[0], lease=60).line == b"b\n"  # the rest of the queue works
    # The mend the error names: the entry is handed out again once its lease ends (before,
    # a ready entry without its task left the queue's sets and stayed pending for ever).
    direct.hdel(qh, f"t:{got.entry}")
    clock.t += 61
    again = d.claim(d.rooms[0], lease=60)
    assert (again.entry, again.line, again.deliveries) == (got.entry, b"a\n", 1)
    assert again.token is not None
    assert d.task(d.rooms[0], again.token, "done").mode == "done"
    assert stream(redis_server.port, name) == [b"b"]
    direct.close()


def test_members_of_the_lease_and_ready_sets_that_are_no_entry_are_dropped_not_fatal(
    redis_server: RedisServer, home: Path
) -> None:
    name = new_room_name()
    url = redis_server.url(name)
    make_queue(url, "a")
    d = Deck(home, "s", [url], clock=Clock())
    d.claim(d.rooms[0], lease=60)  # the queue's keys exist
    direct = redis.Redis(port=redis_server.port)
    direct.zadd(f"ackdeck:room:{{{name}}}:leases", {"junk": 0})
    direct.zadd(f"ackdeck:room:{{{name}}}:ready", {"garbage": 0})
    got = d.claim(d.rooms[0], lease=60)
    assert got.claimed is False and got.message.startswith("no unclaimed line waits")
    assert direct.zcard(f"ackdeck:room:{{{name}}}:ready") == 0
    direct.close()


def test_a_damaged_next_token_refuses_the_claim_before_it_takes_a_line(
    redis_server: RedisServer, home: Path
) -> None:
    from ackdeck.core.errors import CorruptState

    name = new_room_name()
    url = redis_server.url(name)
    make_queue(url, "a", "b")
    d = Deck(home, "s", [url], clock=Clock())
    first = d.claim(d.rooms[0], lease=60)
    assert first.line == b"a\n" and first.token is not None
    direct = redis.Redis(port=redis_server.port)
    qh = f"ackdeck:room:{{{name}}}:queue"
    direct.hset(qh, "next", "not a number")
    with pytest.raises(CorruptState, match="next token") as err:
        d.claim(d.rooms[0], lease=60)
    assert "\n" not in str(err.value)
    # Nothing was taken: b was not handed to the group (before, XREADGROUP ran, then the
    # token failed, and b stayed pending with no task for ever).
    assert direct.xpending(f"ackdeck:room:{{{name}}}", "ackdeck-queue")["pending"] == 1
    direct.hset(qh, "next", 100)  # the mend the error names
    got = d.claim(d.rooms[0], lease=60)
    assert got.line == b"b\n" and got.token is not None and got.token.startswith("101-")
    direct.close()


def test_a_done_mark_an_older_ackdeck_wrote_still_makes_a_repeated_done_a_noop(
    redis_server: RedisServer, home: Path
) -> None:
    # Until this version a done mark held the entry alone; one written just before an upgrade
    # still answers a done sent again with its token (within the marks' 600 s).
    name = new_room_name()
    url = redis_server.url(name)
    make_queue(url, "a")
    d = Deck(home, "s", [url], clock=Clock())
    got = d.claim(d.rooms[0], lease=60)
    assert got.token is not None and got.entry is not None
    assert d.task(d.rooms[0], got.token, "done").mode == "done"
    number = got.token.split("-")[0]
    direct = redis.Redis(port=redis_server.port)
    direct.set(f"ackdeck:room:{{{name}}}:qdone:{number}", got.entry, ex=600)
    direct.close()
    assert d.task(d.rooms[0], got.token, "done").mode == "noop"
