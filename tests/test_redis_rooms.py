"""Redis rooms against a real redis-server: the file rooms' contract, across connections and
processes (every "other host" here is another process with its own connection)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ackdeck.core.errors import ColdAck, InvalidInput, RoomUnavailable
from ackdeck.core.rooms.redis.room import RedisRoom
from ackdeck.core.rooms.room_url import parse_redis_url
from ackdeck.core.service.refs import open_room
from tests.helpers.cli import ACKDECK, ackdeck, here_env
from tests.helpers.paths import PATHS, REPO
from tests.helpers.redis_server import RedisServer, new_room_name

SECRET = "s3cr3t-Pa55word"


def raw_client(server: RedisServer) -> Any:
    import redis

    return redis.Redis(port=server.port, password=server.password)


def _id(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq)


@pytest.fixture
def url(redis_server: RedisServer) -> str:
    return redis_server.url()


def room(url: str) -> RedisRoom:
    r = open_room(url)
    assert isinstance(r, RedisRoom)
    return r


# ----- the contract ------------------------------------------------------------------------
def test_append_between_read_and_ack_survives_from_another_process(url: str) -> None:
    """The seed's regression on Redis: read 2, another process appends 1, ack -> it remains."""
    r = room(url)
    r.push("one")
    r.push("two")
    got = r.read("agent")
    assert got.lines == [b"one", b"two"]
    out = ackdeck(None, "room", "push", url, "late", "--json")
    assert out.returncode == 0, out.stderr
    assert _id(json.loads(out.stdout)["offset"]) > _id(got.end)  # entry IDs only grow
    res = r.ack("agent")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 2, 1)
    again = r.read("agent")
    assert again.lines == [b"late"]
    st = r.status()
    assert (st.pending, st.acked_total, st.sessions["agent"].in_flight) == (1, 2, 1)


def test_cli_round_trip_and_cold_ack_exit_3(url: str) -> None:
    assert ackdeck(None, "room", "push", url, "hello").returncode == 0
    cold = ackdeck(None, "room", "ack", url, "--session", "a")
    assert cold.returncode == 3
    assert cold.stderr.count("\n") == 1 and "1 unread" in cold.stderr
    assert room(url).status().pending == 1  # nothing removed
    read = ackdeck(None, "room", "read", url, "--session", "a", "--json")
    data = json.loads(read.stdout)
    assert data["lines"] == ["hello"] and data["start"] == data["end"]
    ack = ackdeck(None, "room", "ack", url, "--session", "a", "--json")
    assert json.loads(ack.stdout)["mode"] == "prefix"
    second = ackdeck(None, "room", "ack", url, "--session", "a")
    assert second.returncode == 3  # the receipt became a cursor: a second ack is cold
    st = json.loads(ackdeck(None, "room", "status", url, "--json").stdout)["rooms"][0]
    assert st["pending"] == 0 and st["acked_total"] == 1 and st["sessions"]["a"]["unread"] == 0


@pytest.mark.parametrize("how", ["xtrim", "xdel", "recreate", "maxlen-push"])
def test_receipt_whose_entries_someone_else_removed_is_stale(
    redis_server: RedisServer, url: str, how: str
) -> None:
    r = room(url)
    for i in range(4):
        r.push(f"l{i}")
    got = r.read("agent")
    raw = raw_client(redis_server)
    if how == "xtrim":
        raw.xtrim(r.key, maxlen=3, approximate=False)
    elif how == "xdel":
        raw.xdel(r.key, got.end)
    elif how == "recreate":
        raw.delete(r.key)
        for i in range(4):
            raw.xadd(r.key, {"line": f"l{i}"})
    else:
        raw.xadd(r.key, {"line": "x"}, maxlen=4, approximate=False)
    before = raw.xrange(r.key)
    res = r.ack("agent")
    assert res.mode == "stale" and res.acked == 0
    assert raw.xrange(r.key) == before  # nothing removed
    again = r.read("agent")
    assert again.epoch > got.epoch
    assert r.ack("agent").mode == "prefix"
    assert raw.xlen(r.key) == 0


def test_ack_all_returns_every_entry_while_producers_push(url: str) -> None:
    r = room(url)
    stop = threading.Event()
    pushed: list[str] = []

    def produce() -> None:
        p = room(url)
        i = 0
        while not stop.is_set():
            i += 1
            p.push(f"p{i}")
            pushed.append(f"p{i}")
        p.close()

    t = threading.Thread(target=produce)
    t.start()
    taken: list[bytes] = []
    try:
        deadline = time.monotonic() + 60
        while len(taken) < 200 and time.monotonic() < deadline:
            res = r.ack("owner", all=True)
            assert res.mode == "all" and res.lines is not None and res.acked == len(res.lines)
            taken += res.lines
    finally:
        stop.set()
        t.join()
    rest = r.ack("owner", all=True).lines or []
    assert [x.decode() for x in taken + rest] == pushed  # each exactly once, in order


def test_two_sessions_share_the_room(url: str) -> None:
    """Shared-room semantics: a line acked by one session is gone for every session; the other
    session's ack removes only what is left of its own read, and reports the rest as noop."""
    a, b = room(url), room(url)
    a.push("1")
    a.push("2")
    assert a.read("A").lines == [b"1", b"2"]
    b.push("3")
    assert b.read("B").lines == [b"1", b"2", b"3"]
    st = a.status()
    assert st.sessions["A"].in_flight == 2 and st.sessions["A"].unread == 1
    assert st.sessions["B"].in_flight == 3 and st.sessions["B"].unread == 0
    res = a.ack("A")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 2, 1)
    assert a.status().sessions["B"].in_flight == 1  # only "3" is left of B's read
    a.push("4")
    res = b.ack("B")  # removes "3" only; "4" arrived after B's read
    assert (res.mode, res.acked, res.preserved) == ("prefix", 1, 1)
    assert b.read("A").lines == [b"4"]
    b.read("B")
    assert a.ack("A").acked == 1
    assert b.ack("B").mode == "noop"  # A already acked it
    assert a.status().pending == 0


def test_wait_blocks_until_another_process_pushes(url: str) -> None:
    r = room(url)
    r.push("x")
    r.read("agent")
    assert r.wait("agent", timeout=0.2) is False
    waiter = subprocess.Popen(
        [*ACKDECK, "room", "wait", url, "--session", "agent", "--timeout", "60"],
        env={**os.environ, "PYTHONPATH": PATHS},
        cwd=REPO,
    )
    time.sleep(0.3)  # not a synchronisation: the push below is what must end the wait
    assert waiter.poll() is None
    room(url).push("y")
    assert waiter.wait(timeout=60) == 0


# ----- addressing and errors ------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [
        "redis://",
        "redis://host",
        "redis://host/",
        "redis://host/a/b/c",
        "redis://host/x/name",
        "redis://host:99999/name",
        "redis://host:port/name",
        "redis://host/na me",
        "redis://host/" + "n" * 129,
        "redis://host/a%2Fb",
        "redis://host/name?db=1",
        "http://host/name",
        f"redis://u:{SECRET}@host/bad/name/x",
    ],
)
def test_bad_urls_are_one_line_errors_without_the_password(bad: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_redis_url(bad, {})
    assert "\n" not in str(err.value) and SECRET not in str(err.value)
    out = ackdeck(None, "room", "status", bad)
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and SECRET not in out.stderr
    assert "Traceback" not in out.stderr


def test_url_forms() -> None:
    a = parse_redis_url("redis://h/room", {})
    assert (a.host, a.port, a.db, a.name, a.password, a.tls) == ("h", 6379, 0, "room", None, False)
    b = parse_redis_url(f"rediss://me:{SECRET}@[::1]:7000/3/r.x_y-z", {})
    assert (b.host, b.port, b.db, b.username, b.password, b.tls) == (
        "::1",
        7000,
        3,
        "me",
        SECRET,
        True,
    )
    assert SECRET not in b.display and SECRET not in repr(b) and SECRET not in str(b)
    c = parse_redis_url("redis://h/2/r", {"ACKDECK_REDIS_PASSWORD": SECRET})
    assert c.password == SECRET and c.db == 2


def _unreachable_check(url: str, host: str) -> None:
    env = {"ACKDECK_REDIS_TIMEOUT": "1"}
    for args in (
        ("room", "push", url, "x"),
        ("room", "read", url, "--session", "s"),
        ("room", "ack", url, "--session", "s"),
        ("room", "ack", url, "--session", "s", "--all"),
        ("room", "status", url),
        ("room", "wait", url, "--session", "s", "--timeout", "30"),
    ):
        started = time.monotonic()
        out = ackdeck(here_env(**env), *args)
        took = time.monotonic() - started
        assert out.returncode == 1, (args, out.stderr)
        assert out.stderr.count("\n") == 1 and host in out.stderr and "Traceback" not in out.stderr
        assert "unreachable" in out.stderr
        assert took < 30, (args, took)  # the 1 s timeout plus interpreter start, never a hang


def test_refused_port_fails_with_one_line_naming_the_host() -> None:
    from tests.helpers.redis_server import free_port

    port = free_port()  # nothing listens there
    _unreachable_check(f"redis://127.0.0.1:{port}/r", f"127.0.0.1:{port}")


def test_server_that_never_answers_times_out() -> None:
    """A listener that accepts the TCP handshake (backlog) but never replies: a hang without
    the socket timeout."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        port = s.getsockname()[1]
        _unreachable_check(f"redis://127.0.0.1:{port}/r", f"127.0.0.1:{port}")


def test_wrong_type_at_the_room_key_is_one_line(redis_server: RedisServer) -> None:
    name = new_room_name()
    raw_client(redis_server).set(f"ackdeck:room:{{{name}}}", "not a stream")
    url = redis_server.url(name)
    for args in (("push", url, "x"), ("read", url, "--session", "s"), ("status", url)):
        out = ackdeck(None, "room", *args)
        assert out.returncode == 1 and out.stderr.count("\n") == 1
        assert "not a stream" in out.stderr, out.stderr
    assert raw_client(redis_server).get(f"ackdeck:room:{{{name}}}") == b"not a stream"


@pytest.fixture(scope="module")
def locked_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = RedisServer(tmp_path_factory.mktemp("redis-auth"), password=SECRET)
    server.start()
    yield server
    server.stop()


def test_password_is_never_printed_logged_or_stored(locked_server: RedisServer) -> None:
    name = new_room_name()
    in_url = f"redis://:{SECRET}@127.0.0.1:{locked_server.port}/{name}"
    bare = f"redis://127.0.0.1:{locked_server.port}/{name}"
    outputs = [
        ackdeck(None, "room", "push", in_url, "a", "--json"),
        ackdeck(here_env(ACKDECK_REDIS_PASSWORD=SECRET), "room", "push", bare, "b"),
        ackdeck(None, "room", "read", in_url, "--session", "s", "--json"),
        ackdeck(None, "room", "status", in_url),
        ackdeck(None, "room", "ack", in_url, "--session", "s", "--json"),
        ackdeck(None, "room", "ack", in_url, "--session", "s"),  # cold: exit 3 with a message
        ackdeck(None, "room", "ack", in_url, "--session", "s", "--all"),
    ]
    assert [o.returncode for o in outputs] == [0, 0, 0, 0, 0, 3, 0]
    for o in outputs:
        assert SECRET not in o.stdout + o.stderr
    shown = f"redis://127.0.0.1:{locked_server.port}/0/{name}"
    assert shown in ackdeck(None, "room", "status", in_url).stdout
    raw = raw_client(locked_server)
    stored = b"".join(
        [repr(raw.hgetall(f"ackdeck:room:{{{name}}}:{k}")).encode() for k in ("meta", "receipts")]
        + [repr(raw.xrange(f"ackdeck:room:{{{name}}}:audit")).encode()]
    )
    assert b"session" in stored and SECRET.encode() not in stored
    logs = b"".join(p.read_bytes() for p in locked_server.dir.iterdir() if p.is_file())
    assert SECRET.encode() not in logs


def test_wrong_or_missing_password_is_one_line(locked_server: RedisServer) -> None:
    name = new_room_name()
    for url, env in (
        (f"redis://:wrong-one@127.0.0.1:{locked_server.port}/{name}", {}),
        (f"redis://127.0.0.1:{locked_server.port}/{name}", {"ACKDECK_REDIS_PASSWORD": "nope"}),
        (f"redis://127.0.0.1:{locked_server.port}/{name}", {"ACKDECK_REDIS_PASSWORD": ""}),
    ):
        out = ackdeck(here_env(**env), "room", "push", url, "x")
        assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
        assert "authentication" in out.stderr and "wrong-one" not in out.stderr
        assert f"127.0.0.1:{locked_server.port}" in out.stderr
    assert raw_client(locked_server).exists(f"ackdeck:room:{{{name}}}") == 0


def test_password_is_not_in_reprs_or_errors(locked_server: RedisServer) -> None:
    r = open_room(f"redis://:{SECRET}@127.0.0.1:{locked_server.port}/{new_room_name()}")
    assert SECRET not in repr(r) and SECRET not in str(r.path) and SECRET not in str(r.status())
    with pytest.raises(ColdAck) as cold:
        r.ack("s")
    assert SECRET not in str(cold.value)
    r.close()
    with pytest.raises(RoomUnavailable) as err:
        open_room(f"redis://:{SECRET}@127.0.0.1:1/x").status()
    assert SECRET not in str(err.value)


def test_file_rooms_still_open_as_files(tmp_path: Path) -> None:
    from ackdeck.core.rooms.file.room import Room

    r = open_room(tmp_path / "inbox.txt")
    assert isinstance(r, Room)
    r.push("x")
    assert r.read("a").lines == [b"x"]


def test_entries_other_producers_added_are_read_and_acked(
    redis_server: RedisServer, url: str
) -> None:
    r = room(url)
    raw_client(redis_server).xadd(r.key, {"kind": "alert", "msg": "disk full"})
    assert r.read("a").lines == [b"kind=alert msg=disk full"]
    assert r.ack("a").acked == 1


def test_entry_with_a_repeated_field_is_read_whole_and_a_forgotten_script_reloaded(
    redis_server: RedisServer, url: str
) -> None:
    """A read is one MULTI/EXEC (epoch script + XRANGE): entries arrive as the server sends
    them (a repeated field name is kept, not merged), and a server that forgot the script
    (SCRIPT FLUSH, a restart) gets it again within the same read."""
    r = room(url)
    raw = raw_client(redis_server)
    raw.execute_command("XADD", r.key, "*", "tag", "a", "tag", "b")
    r.read("a")  # loads the script
    raw.script_flush()
    got = r.read("a")
    assert got.lines == [b"tag=a tag=b"]
    raw.xadd(r.key, {"line": "late"})
    res = r.ack("a")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 1, 1)


def test_module_imports_without_a_server() -> None:
    # The redis backend is imported only for URLs: a file-only command never loads redis.
    code = (
        "import sys, ackdeck.core.cli.rooms_cmd, ackdeck.core.rooms.room_backend; "
        "print('redis' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip() == "False", out.stderr


def test_receipt_is_recorded_only_once_delivered_and_bound_to_its_reader(url: str) -> None:
    r = room(url)
    r.push("a")

    def broken_pipe(_: object) -> None:
        raise BrokenPipeError("reader went away")

    with pytest.raises(BrokenPipeError):
        r.read("s", deliver=broken_pipe)
    with pytest.raises(ColdAck):
        r.ack("s")  # nothing was delivered, so nothing was recorded
    r.read("s", reader="mcp:1:x")
    with pytest.raises(ColdAck) as other:
        r.ack("s", reader="mcp:2:y")  # a restarted server never acks its predecessor's read
    assert "another reader" in str(other.value)
    assert r.ack("s", reader="mcp:1:x").acked == 1
    r.push("b")
    shown: list[bytes] = []
    res = r.ack("s", all=True, deliver=lambda got: shown.extend(got.lines))
    assert (res.mode, res.acked, shown) == ("all", 1, [b"b"])
