"""Cross-host wakes (issue 34 item 3): a monitored run on one host wakes a session on another.

Hosts are homes with distinct host ids, run as separate `ackdeck` processes against one real
redis-server of the test's own (append-only, fsynced: a restart keeps what was written). The
run's host forwards with `fleet publish`, the session's host imports with it, and `wakes drain`
there delivers; every test counts what the session was handed across all its drains: each
line and each exit notice exactly once. Faults: a lost reply on the forward (a proxy that
drops it), a kill -9 between a batch's write and its send and between the import and the
stream delete (fault points), the server killed and started again with its data and without
it, the fleet unreachable while both hosts publish in loops, and a host in its own network
namespace whose link is cut.

The decisions (what a forward removes, what an import adds) are also tested pure."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ackdeck.core.monitors.forwarding import absorbed, batch_of, confirmed, item_key
from ackdeck.core.monitors.results import WakeItem, WakeLine, WakeRecord
from ackdeck.core.service.fleet.hosts import FORWARD
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.fleet import host_env, json_of
from tests.helpers.pauses import killed_at
from tests.helpers.redis_proxy import ReplyDropper
from tests.helpers.redis_server import RedisServer
from tests.helpers.wait import eventually

# ----- pure: a forward retried, an import repeated -----------------------------------------


def _record(**kw: object) -> WakeRecord:
    base: dict[str, object] = dict(
        session="s@beta",
        name="build",
        kind="match",
        lines=[],
        dropped=0,
        filter="FAIL",
        exclude=False,
        total_matches=0,
        status="running",
        created_at=1.0,
        updated_at=1.0,
        to_host="beta",
        forwarded_total=0,
    )
    return WakeRecord(**{**base, **kw})  # type: ignore[arg-type]


def _line(start: int, text: str, run: str = "r1") -> WakeLine:
    return WakeLine(run_id=run, start=start, end=start + len(text) + 1, text=text)


def test_a_batch_leaves_the_record_at_once_and_is_counted_when_confirmed() -> None:
    rec = _record(lines=[_line(0, "FAIL a")], dropped_by_run={"r1": 4}, total_matches=5)
    items, after = batch_of("alpha", rec, lambda rid: "running", 2.0)
    assert [(i.what, i.session, i.upto) for i in items] == [("line", "s", 0), ("dropped", "s", 4)]
    assert {i.batch for i in items} == {2000}  # not below the clock (ms): never reused
    assert (after.pending, after.on_the_way, after.in_flight) == (0, 1, items)
    assert after.dropped_by_run == {} and after.forwarded_dropped == {"r1": 4}
    assert after.forwarded_total == 0
    # Merged meanwhile, then the next batch: its dropped count says "6 so far".
    later = after.replace(lines=[_line(7, "FAIL b")], dropped_by_run={"r1": 2}, in_flight=None)
    items2, _ = batch_of("alpha", later, lambda rid: "running", 1.0)
    assert items2[0].batch == 2001 and (items2[1].what, items2[1].upto) == ("dropped", 6)
    done = confirmed(after, 3.0)
    assert (done.in_flight, done.on_the_way, done.forwarded_total) == (None, None, 1)
    # The mark of an item is the item itself: sent again, it is the same.
    assert item_key(items[0]) == item_key(items[0].replace(status="exited"))
    assert item_key(items[0]) != item_key(items2[0])


def test_a_batch_imported_twice_is_taken_in_once() -> None:
    line = WakeItem(origin="alpha", session="s", name="build", batch=1, run_id="r1",
                    what="line", start=0, end=7, text="FAIL a", matches=1)  # fmt: skip
    drop = WakeItem(origin="alpha", session="s", name="build", batch=1, run_id="r1",
                    what="dropped", upto=4, matches=5)  # fmt: skip
    exited = WakeItem(origin="alpha", session="s", name="build", batch=2, run_id="r1",
                      what="notice", kind="exited", status="exited", exit_code=1,
                      seq=1)  # fmt: skip
    fresh = WakeRecord(session="s", name="build@alpha", kind="match", lines=[], dropped=0,
                       filter=None, exclude=False, total_matches=0, status="running",
                       created_at=1.0, updated_at=1.0, from_host="alpha")  # fmt: skip
    once = absorbed(fresh, [line, drop, exited], 2.0)
    twice = absorbed(once, [line, drop.replace(upto=6), exited], 3.0)
    assert [x.text for x in twice.lines] == ["FAIL a"]
    assert twice.dropped_by_run == {"r1": 6}  # 4, then 2 more: the repeated 4 counts once
    assert len(twice.notices) == 1 and twice.notices[0].kind == "exited"
    assert twice.total_matches == 5


# ----- real redis-server, separate processes -----------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own (it may be killed and started again on its files)."""
    s = RedisServer(tmp_path / "redis", persist=True)
    s.start()
    try:
        yield s
    finally:
        s.stop()


def _fleet() -> str:
    return f"xw-{os.urandom(4).hex()}"


def _homes(tmp_path: Path, url: str, *hosts: str, **extra: str) -> list[dict[str, str]]:
    out = []
    for h in hosts:
        home = tmp_path / h
        home.mkdir()
        out.append(host_env(home, h, url, ACKDECK_REDIS_TIMEOUT="2", **extra))
    return out


def _alone(env: dict[str, str]) -> dict[str, str]:
    """The same host without its fleet: what it has on disk."""
    return {**env, "ACKDECK_FLEET": ""}


def _run(env: dict[str, str], session: str, script: str, name: str = "build") -> str:
    done = ackdeck(
        env, "run", name, "--session", session, "--monitor", "FAIL", "--json",
        "--", "sh", "-c", script,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["run_id"]


def _record_of(env: dict[str, str], session: str, name: str) -> dict | None:
    rows = json_of(_alone(env), "wakes", "list", "--session", session)["wakes"]
    return next((r for r in rows if r["name"] == name), None)


def _ended(env: dict[str, str], run_id: str) -> None:
    """Wait until the run ended: its exit notice is in its record (merged before the run's
    status is written), with everything else it will ever merge."""

    def done() -> bool:
        runs = json_of(_alone(env), "ps")["processes"]
        return any(r["run_id"] == run_id and r["status"] == "exited" for r in runs)

    eventually(done, what=f"run {run_id} to end")


def _publish(env: dict[str, str]) -> str:
    done = ackdeck(env, "fleet", "publish")
    assert done.returncode == 0, done.stderr
    return done.stdout


def _drain(env: dict[str, str], session: str, got: Counter[tuple[str, str]]) -> int:
    """Drain `session` on its host, adding every delivered line and notice to `got`; returns
    how many items this drain delivered."""
    res = json_of(_alone(env), "wakes", "drain", "--session", session)
    n = 0
    for d in res["delivered"]:
        for text in d["lines"]:
            got[(d["run_id"], text)] += 1
            n += 1
        if d["kind"] != "match":
            got[(d["run_id"], d["kind"])] += 1
            n += 1
    return n


def _stream(server: RedisServer, fleet: str, host: str) -> int:
    r = redis.Redis(port=server.port, password=server.password)
    try:
        return int(r.xlen(f"ackdeck:fleet:{{{fleet}}}:wakes:{host}"))
    finally:
        r.close()


SCRIPT = "echo FAIL one; echo fine; echo FAIL two"


def _delivered_once(env: dict[str, str], session: str, expected: Counter[tuple[str, str]]) -> None:
    """A drain of `session` on its host delivers exactly `expected`, each item once."""
    got: Counter[tuple[str, str]] = Counter()
    _drain(env, session, got)
    assert got == expected


def _expected(run_id: str) -> Counter[tuple[str, str]]:
    return Counter({(run_id, "FAIL one"): 1, (run_id, "FAIL two"): 1, (run_id, "exited"): 1})


def test_a_run_on_one_host_wakes_a_session_on_another_exactly_once(
    tmp_path: Path, server: RedisServer
) -> None:
    fleet = _fleet()
    alpha, beta, gamma = _homes(tmp_path, server.url(fleet), "alpha", "beta", "gamma")
    run = _run(alpha, "s@beta", SCRIPT)
    _ended(alpha, run)

    # On alpha the record waits for the fleet: no drain here delivers it.
    rec = _record_of(alpha, "s@beta", "build")
    assert rec is not None and rec["to_host"] == "beta" and rec["pending"] == 3
    assert json_of(_alone(alpha), "wakes", "drain", "--session", "s@beta")["delivered"] == []
    listed = json_of(_alone(alpha), "wakes", "list")
    assert listed["pending"] == 0 and "forward" in listed["next"]

    said = _publish(alpha)
    assert "3 forwarded" in said
    rec = _record_of(alpha, "s@beta", "build")
    assert rec is not None and (rec["pending"], rec["on_the_way"], rec["forwarded_total"]) == (
        0, 3, 0
    )  # fmt: skip
    text = ackdeck(_alone(alpha), "wakes", "list").stdout
    assert "s@beta/build: " in text and "0 forwarded to beta (3 on the way)" in text

    # beta has nothing until its publisher imports; gamma never has anything.
    got: Counter[tuple[str, str]] = Counter()
    assert _drain(beta, "s", got) == 0
    assert "3 imported" in _publish(beta)
    assert _stream(server, fleet, "beta") == 0  # imported, then deleted
    _publish(gamma)
    assert json_of(_alone(gamma), "wakes", "list")["wakes"] == []
    rec = _record_of(beta, "s", "build@alpha")
    assert rec is not None and rec["from_host"] == "alpha" and rec["pending"] == 3

    res = json_of(_alone(beta), "wakes", "drain", "--session", "s")
    (d,) = res["delivered"]
    assert (d["name"], d["host"], d["kind"], d["lines"]) == (
        "build@alpha", "alpha", "exited", ["FAIL one", "FAIL two"]
    )  # fmt: skip
    # Exactly once: a second drain, and more publishes on both sides, bring nothing.
    assert _drain(beta, "s", got) == 0
    assert "forwarded" not in _publish(alpha) and "imported" not in _publish(beta)
    assert _drain(beta, "s", got) == 0
    # beta confirmed: alpha's record counts them forwarded, and nothing is on its way.
    rec = _record_of(alpha, "s@beta", "build")
    assert rec is not None and "on_the_way" not in rec and rec["forwarded_total"] == 3
    assert "3 forwarded to beta, status" in ackdeck(_alone(alpha), "wakes", "list").stdout


def test_a_bare_session_name_goes_to_the_host_whose_agent_it_is(
    tmp_path: Path, server: RedisServer
) -> None:
    alpha, beta = _homes(tmp_path, server.url(_fleet()), "alpha", "beta")
    room = Path(beta["ACKDECK_HOME"]) / "inbox.txt"
    ackdeck(beta, "room", "push", str(room), "hello")
    assert ackdeck(beta, "room", "read", str(room), "--session", "s").returncode == 0
    _publish(beta)  # beta's agent `s` is on the fleet

    run = _run(alpha, "s", SCRIPT)
    (meta,) = [r for r in json_of(_alone(alpha), "ps")["processes"] if r["run_id"] == run]
    assert meta["session"] == "s@beta"
    # A host not on the fleet (a typo, or not started yet): said, and the wakes wait.
    done = ackdeck(alpha, "run", "other", "--session", "s@nowhere", "--monitor", "X", "--", "true")
    assert done.returncode == 0
    assert "host 'nowhere' is not on fleet" in done.stderr and "wait here" in done.stderr
    # `NAME@THIS-HOST` is this host's session NAME; a session of this host stays here.
    local = _run(alpha, "t@alpha", "echo FAIL here", name="here")
    _ended(alpha, local)
    got: Counter[tuple[str, str]] = Counter()
    assert _drain(alpha, "t", got) == 2 and got[(local, "FAIL here")] == 1

    _ended(alpha, run)
    _publish(alpha)
    _publish(beta)
    _drain(beta, "s", got)
    assert got - Counter({(local, "FAIL here"): 1, (local, "exited"): 1}) == _expected(run)


def test_a_run_for_a_session_of_a_gone_host_says_the_host_is_gone(
    tmp_path: Path, server: RedisServer
) -> None:
    """The session's host stopped publishing (past its TTL): the wakes wait for it, and the run
    says so, named or found by the session's name, rather than start as if it would hear."""
    alpha, beta = _homes(tmp_path, server.url(_fleet()), "alpha", "beta")
    beta = {**beta, "ACKDECK_FLEET_TTL": "1"}
    room = Path(beta["ACKDECK_HOME"]) / "inbox.txt"
    ackdeck(beta, "room", "push", str(room), "hello")
    assert ackdeck(beta, "room", "read", str(room), "--session", "s").returncode == 0
    _publish(beta)

    def gone() -> bool:
        hosts = json_of(alpha, "fleet", "hosts")["hosts"]
        return any(h["host"] == "beta" and not h["live"] for h in hosts)

    eventually(gone, what="beta to be gone from the fleet")
    for session in ("s", "s@beta"):
        done = ackdeck(alpha, "run", "build", "--session", session, "--monitor", "X", "--", "true")
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert "host 'beta' is gone from fleet" in done.stderr and "wait here" in done.stderr
    runs = json_of(_alone(alpha), "ps")["processes"]
    assert [r["session"] for r in runs] == ["s@beta", "s@beta"]


def test_a_run_for_another_hosts_session_says_its_wakes_are_drained_there(
    tmp_path: Path, server: RedisServer
) -> None:
    """What to do next, as `run` says it (the MCP tool too): a drain on this host never
    delivers the wakes of a session on another host, so it must not be the advice."""
    (alpha,) = _homes(tmp_path, server.url(_fleet()), "alpha")
    done = ackdeck(
        alpha, "run", "build", "--session", "s@beta", "--monitor", "FAIL", "--json",
        "--", "sleep", "30",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    started = json.loads(done.stdout)
    try:
        hint = started["next"]
        assert "session 's' on host 'beta'" in hint, hint
        assert "ackdeck wakes drain --session s)" in hint and "there" in hint, hint
    finally:
        assert ackdeck(_alone(alpha), "kill", "build", "--grace", "0.5").returncode == 0


def test_another_hosts_session_without_a_fleet_is_one_line_and_starts_nothing(
    tmp_path: Path,
) -> None:
    home = tmp_path / "alpha"
    home.mkdir()
    env = _alone(host_env(home, "alpha", ""))
    done = ackdeck(env, "run", "build", "--session", "s@beta", "--monitor", "X", "--", "true")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "session 's@beta' is on host 'beta'" in done.stderr and "needs a fleet" in done.stderr
    assert json_of(env, "ps")["processes"] == []
    assert not (home / "wakes").exists()
    cut = ackdeck(env, "run", "build", "--session", "s@", "--monitor", "X", "--", "true")
    assert cut.returncode == 1
    assert cut.stderr == (
        "ackdeck: error: --session 's@' ends with '@': name the session's host after it "
        "(NAME@HOST), or leave the '@' out for a session of this host\n"
    )


def test_a_process_name_with_an_at_is_one_line_and_starts_nothing(tmp_path: Path) -> None:
    # `build@alpha` is the name of the record the session's host keeps alpha's `build` wakes
    # in: a local run of that name wrote into it, and its wakes were delivered as alpha's.
    home = tmp_path / "beta"
    home.mkdir()
    env = _alone(host_env(home, "beta", ""))
    done = ackdeck(
        env, "run", "build@alpha", "--session", "s", "--monitor", "FAIL", "--", "echo", "FAIL"
    )
    assert done.returncode == 1
    assert done.stderr == (
        "ackdeck: error: invalid process name 'build@alpha': '@' is kept for NAME@HOST, "
        "another host's process\n"
    )
    assert json_of(env, "ps")["processes"] == []
    assert not (home / "wakes").exists()


def test_a_forward_whose_reply_was_lost_is_sent_again_and_added_once(
    tmp_path: Path, server: RedisServer
) -> None:
    direct = redis.Redis(port=server.port)
    sha = direct.script_load(FORWARD).encode()  # so the EVALSHA through the proxy runs it
    direct.close()
    assert sha == hashlib.sha1(FORWARD.encode()).hexdigest().encode()
    proxy = ReplyDropper(server.port)
    proxy.start()
    try:
        fleet = _fleet()
        (alpha,) = _homes(tmp_path, proxy.url(fleet), "alpha")
        (beta,) = _homes(tmp_path, server.url(fleet), "beta")
        run = _run(alpha, "s@beta", SCRIPT)
        _ended(alpha, run)

        proxy.drop_next(lambda cmd: cmd[0].upper() == b"EVALSHA" and cmd[1] == sha)
        done = ackdeck(alpha, "fleet", "publish")
        assert done.returncode != 0 and "unreachable" in done.stderr
        assert len(proxy.dropped) == 1
        # The script ran (3 items appended) but alpha could not know: the batch stays.
        assert _stream(server, fleet, "beta") == 3
        rec = _record_of(alpha, "s@beta", "build")
        assert rec is not None and (rec["pending"], rec["on_the_way"]) == (0, 3)

        _publish(alpha)  # sent again: every item's mark is set, nothing is appended
        assert len(proxy.dropped) == 1 and _stream(server, fleet, "beta") == 3

        _publish(beta)
        _delivered_once(beta, "s", _expected(run))
        _publish(alpha)  # confirmed by beta: done
        rec = _record_of(alpha, "s@beta", "build")
        assert rec is not None and "on_the_way" not in rec and rec["forwarded_total"] == 3
    finally:
        proxy.stop()


def _killed_at(step: str, env: dict[str, str], tmp_path: Path) -> None:
    """`fleet publish` on `env`'s host, killed with -9 at fault point `step`."""
    killed_at(env, tmp_path / f"paused-{step}", step, "fleet", "publish")


def test_a_host_killed_between_its_batch_and_the_send_sends_it_once(
    tmp_path: Path, server: RedisServer
) -> None:
    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    run = _run(alpha, "s@beta", SCRIPT)
    _ended(alpha, run)
    _killed_at("fleet-batched", alpha, tmp_path)
    assert _stream(server, fleet, "beta") == 0
    rec = _record_of(alpha, "s@beta", "build")
    assert rec is not None and (rec["pending"], rec["on_the_way"]) == (0, 3)
    _publish(alpha)  # the batch, sent now
    assert _stream(server, fleet, "beta") == 3
    _publish(beta)
    _delivered_once(beta, "s", _expected(run))


def test_a_host_killed_between_import_and_delete_imports_once(
    tmp_path: Path, server: RedisServer
) -> None:
    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    run = _run(alpha, "s@beta", SCRIPT)
    _ended(alpha, run)
    _publish(alpha)
    assert _stream(server, fleet, "beta") == 3

    _killed_at("fleet-imported", beta, tmp_path)
    # Imported (the record holds them and their batch), not deleted from the stream.
    assert _stream(server, fleet, "beta") == 3
    rec = _record_of(beta, "s", "build@alpha")
    assert rec is not None and rec["pending"] == 3

    assert "imported" not in _publish(beta)  # skipped by the record's mark, then deleted
    assert _stream(server, fleet, "beta") == 0
    _delivered_once(beta, "s", _expected(run))


def test_a_redis_restart_between_forward_and_import_loses_and_repeats_nothing(
    tmp_path: Path, server: RedisServer
) -> None:
    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    run = _run(alpha, "s@beta", SCRIPT)
    _ended(alpha, run)
    _publish(alpha)

    server.kill9()
    server.start()  # the same port and files: the stream and the marks are back
    assert "forwarded" not in _publish(alpha)
    assert _stream(server, fleet, "beta") == 3
    _publish(beta)
    # Killed again after the import: the restarted server holds no entry to import twice.
    server.kill9()
    server.start()
    assert _stream(server, fleet, "beta") == 0
    assert "imported" not in _publish(beta)
    _delivered_once(beta, "s", _expected(run))


@pytest.mark.parametrize("when", ["before the import", "after the import"])
def test_a_redis_that_restarts_empty_gets_the_batch_again_and_nothing_twice(
    tmp_path: Path, when: str
) -> None:
    """Without persistence a restart loses the stream, the marks and the confirmations: the
    run's host still holds its batch (unconfirmed) and sends it again; the session's host
    skips it if it imported it already, by its record's batch."""
    server = RedisServer(tmp_path / "redis", persist=False)
    server.start()
    try:
        fleet = _fleet()
        alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
        run = _run(alpha, "s@beta", SCRIPT)
        _ended(alpha, run)
        _publish(alpha)
        if when == "after the import":
            assert "3 imported" in _publish(beta)
        server.kill9()
        server.start()  # empty
        assert _stream(server, fleet, "beta") == 0
        _publish(alpha)  # not confirmed: sent again
        assert _stream(server, fleet, "beta") == 3
        said = _publish(beta)
        assert ("3 imported" in said) == (when == "before the import")
        _delivered_once(beta, "s", _expected(run))
        _publish(alpha)
        rec = _record_of(alpha, "s@beta", "build")
        assert rec is not None and "on_the_way" not in rec and rec["forwarded_total"] == 3
        assert _stream(server, fleet, "beta") == 0
    finally:
        server.stop()


@pytest.mark.parametrize("marks", ["none", "garbage", "a directory"])
def test_a_record_dismissed_before_the_confirmation_arrived_is_not_imported_again(
    tmp_path: Path, marks: str
) -> None:
    """The owner delivers and dismisses the imported record on the session's host; Redis then
    restarts empty, so the run's host never saw the confirmation and sends the batch again.
    The dismissed record's batch is kept apart from it: the resend is skipped, confirmed, and
    nothing reaches the session twice. A marks file damaged before the dismiss (garbage, a
    directory in its place) is set aside and written anew by it."""
    server = RedisServer(tmp_path / "redis", persist=False)
    server.start()
    try:
        fleet = _fleet()
        alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
        run = _run(alpha, "s@beta", SCRIPT)
        _ended(alpha, run)
        _publish(alpha)
        assert "3 imported" in _publish(beta)
        got: Counter[tuple[str, str]] = Counter()
        assert _drain(beta, "s", got) == 3
        kept = Path(beta["ACKDECK_HOME"]) / "wakes" / "s" / ".imported.json"
        if marks == "garbage":
            kept.write_bytes(b"\xff{not json")
        elif marks == "a directory":
            kept.mkdir()
        gone = ackdeck(_alone(beta), "wakes", "dismiss", "--session", "s", "build@alpha")
        assert gone.returncode == 0, gone.stderr
        assert kept.is_file()
        assert _record_of(beta, "s", "build@alpha") is None
        server.kill9()
        server.start()  # empty: the confirmation is lost
        _publish(alpha)  # not confirmed: sent again
        assert _stream(server, fleet, "beta") == 3
        assert "imported" not in _publish(beta)
        assert _record_of(beta, "s", "build@alpha") is None  # not made again, empty or not
        assert _drain(beta, "s", got) == 0 and got == _expected(run)
        _publish(alpha)
        rec = _record_of(alpha, "s@beta", "build")
        assert rec is not None and "on_the_way" not in rec and rec["forwarded_total"] == 3
        assert _stream(server, fleet, "beta") == 0
    finally:
        server.stop()


def test_a_batch_on_its_way_when_the_host_id_changed_is_confirmed_and_the_next_goes(
    tmp_path: Path, server: RedisServer
) -> None:
    """The run's host publishes under another id (ACKDECK_HOST_ID set or changed, an MCP
    server and a shell that disagree) while a batch sent under the old one is on its way: the
    session's host confirms it under the id it came from, which is where the new publisher
    must look, else the record waits for that confirmation forever and nothing more goes."""
    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    first = _run(alpha, "s@beta", SCRIPT)
    _ended(alpha, first)
    assert "3 forwarded" in _publish(alpha)
    assert "3 imported" in _publish(beta)
    renamed = {**alpha, "ACKDECK_HOST_ID": "alpha-2"}
    second = _run(renamed, "s@beta", "echo FAIL three")
    _ended(renamed, second)
    assert "2 forwarded" in _publish(renamed)  # alpha's batch confirmed, then the next
    assert "2 imported" in _publish(beta)
    _delivered_once(
        beta, "s", _expected(first) + Counter({(second, "FAIL three"): 1, (second, "exited"): 1})
    )
    _publish(renamed)
    rec = _record_of(alpha, "s@beta", "build")
    assert rec is not None and "on_the_way" not in rec and rec["forwarded_total"] == 5


def test_a_session_whose_wakes_cannot_be_written_holds_up_no_other_and_loses_nothing(
    tmp_path: Path, server: RedisServer
) -> None:
    """On the session's host, session `a`'s wake directory cannot be made (a file in its
    place): its entries stay in the stream, said in one line, while session `z`'s are
    imported and the host still publishes; once `a` can be written, its wakes arrive once."""
    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    to_a = _run(alpha, "a@beta", SCRIPT)
    to_z = _run(alpha, "z@beta", SCRIPT, name="other")
    _ended(alpha, to_a)
    _ended(alpha, to_z)
    assert "6 forwarded" in _publish(alpha)
    blocked = Path(beta["ACKDECK_HOME"]) / "wakes" / "a"
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a directory")

    done = ackdeck(beta, "fleet", "publish")
    assert done.returncode == 0, done.stderr
    assert "published host beta" in done.stdout and "3 imported" in done.stdout
    assert done.stderr.count("\n") == 1 and "session a" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert _stream(server, fleet, "beta") == 3  # a's entries wait in the fleet
    got: Counter[tuple[str, str]] = Counter()
    _drain(beta, "z", got)
    assert got == _expected(to_z)

    blocked.unlink()
    assert "3 imported" in _publish(beta)
    assert _stream(server, fleet, "beta") == 0
    _drain(beta, "a", got)
    _drain(beta, "z", got)
    assert got == _expected(to_z) + _expected(to_a)


def test_a_record_that_cannot_be_forwarded_holds_up_no_other(
    tmp_path: Path, server: RedisServer
) -> None:
    """On the run's host, session `a@beta`'s lock cannot be taken (a directory in its place):
    said in one line, its record waits, and `z@beta`'s record is forwarded and the snapshot
    published all the same."""
    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    to_a = _run(alpha, "a@beta", SCRIPT)
    to_z = _run(alpha, "z@beta", SCRIPT, name="other")
    _ended(alpha, to_a)
    _ended(alpha, to_z)
    lock = Path(alpha["ACKDECK_HOME"]) / "wakes" / "a@beta" / ".drain.lock"
    lock.mkdir()  # no forward took it yet

    done = ackdeck(alpha, "fleet", "publish")
    assert done.returncode == 0, done.stderr
    assert "published host alpha" in done.stdout and "3 forwarded" in done.stdout
    assert done.stderr.count("\n") == 1 and "a@beta" in done.stderr, done.stderr
    assert "3 imported" in _publish(beta)
    got: Counter[tuple[str, str]] = Counter()
    _drain(beta, "z", got)
    assert got == _expected(to_z)

    lock.rmdir()
    assert "3 forwarded" in _publish(alpha)
    assert "3 imported" in _publish(beta)
    _drain(beta, "a", got)
    assert got == _expected(to_z) + _expected(to_a)


def test_a_run_whose_supervisor_died_wakes_the_other_host_with_only_a_publisher_running(
    tmp_path: Path, server: RedisServer
) -> None:
    """A CI runner runs `fleet publish --every` and nothing else of ackdeck: a run whose
    supervisor is killed must still reach the session on the other host as monitor-lost, so
    the publisher reports lost runs as the doors do (`ps`, `wakes list` are not run here)."""
    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    done = ackdeck(
        alpha, "run", "orphan", "--session", "s@beta", "--monitor", "X", "--json",
        "--", "sleep", "300",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    started = json.loads(done.stdout)
    pid = started["pid"]
    supervisor = int(Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[1])
    try:
        os.kill(supervisor, signal.SIGKILL)
        eventually(lambda: not Path(f"/proc/{supervisor}").exists(), what="the supervisor gone")
        eventually(lambda: "1 forwarded" in _publish(alpha), what="alpha to forward the loss")
        assert "1 imported" in _publish(beta)
        res = json_of(_alone(beta), "wakes", "drain", "--session", "s")
        (d,) = res["delivered"]
        assert (d["name"], d["run_id"], d["kind"]) == (
            "orphan@alpha",
            started["run_id"],
            "monitor-lost",
        )
    finally:
        os.kill(pid, signal.SIGKILL)


def test_an_unreachable_fleet_keeps_the_record_and_forwards_when_it_returns(
    tmp_path: Path, server: RedisServer
) -> None:
    """Both hosts publish in loops (`fleet publish --every`), as MCP servers would."""
    alpha, beta = _homes(tmp_path, server.url(_fleet()), "alpha", "beta", ACKDECK_FLEET_TTL="3")
    loops = []
    errors = tmp_path / "alpha-stderr"
    with errors.open("wb") as err:
        for env in (alpha, beta):
            loops.append(
                subprocess.Popen(
                    [*ACKDECK, "fleet", "publish", "--every", "0.2"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=err if env is alpha else subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
    got: Counter[tuple[str, str]] = Counter()

    def confirmed_total(n: int) -> bool:
        rec = _record_of(alpha, "s@beta", "build")
        return rec is not None and rec["forwarded_total"] == n and "on_the_way" not in rec

    try:
        first = _run(alpha, "s@beta", SCRIPT)
        eventually(lambda: _drain(beta, "s", got) and got[(first, "exited")], what="run 1 on beta")
        eventually(lambda: confirmed_total(3), what="alpha to see beta's confirmation of run 1")

        server.kill9()
        eventually(lambda: "unreachable" in errors.read_text(), what="alpha to say unreachable")
        second = _run(alpha, "s@beta", "echo FAIL three; echo FAIL four")
        _ended(alpha, second)
        rec = _record_of(alpha, "s@beta", "build")
        # Kept while the fleet is away: pending, or made into a batch that could not go.
        assert rec is not None and rec["pending"] + rec.get("on_the_way", 0) == 3
        assert _drain(beta, "s", got) == 0

        server.start()
        eventually(
            lambda: _drain(beta, "s", got) is not None and got[(second, "exited")],
            what="run 2 on beta after the fleet returned",
        )
        want = _expected(first) + Counter(
            {(second, "FAIL three"): 1, (second, "FAIL four"): 1, (second, "exited"): 1}
        )
        assert got == want
        eventually(lambda: confirmed_total(6), what="alpha to see beta's confirmation of run 2")
    finally:
        for p in loops:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


# ----- a host in its own network namespace ---------------------------------------------------


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def netns() -> Iterator[tuple[str, str, str]]:
    """A network namespace joined to this one by a veth pair: (namespace, this side's address,
    the link on this side). Named per test, removed after it."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    tag = os.urandom(3).hex()
    ns, here, there = f"ackx-{tag}", f"vxa{tag}", f"vxb{tag}"
    net = f"10.{200 + int(tag[:2], 16) % 50}.{int(tag[2:4], 16)}"
    steps = [
        ("netns", "add", ns),
        ("link", "add", here, "type", "veth", "peer", "name", there),
        ("link", "set", there, "netns", ns),
        ("addr", "add", f"{net}.1/30", "dev", here),
        ("link", "set", here, "up"),
        ("-n", ns, "addr", "add", f"{net}.2/30", "dev", there),
        ("-n", ns, "link", "set", there, "up"),
        ("-n", ns, "link", "set", "lo", "up"),
    ]
    try:
        for step in steps:
            done = _ip(*step)
            if done.returncode != 0:
                pytest.skip(f"cannot make a network namespace: ip {' '.join(step)}: {done.stderr}")
        yield ns, f"{net}.1", here
    finally:
        _ip("netns", "del", ns)  # takes its end of the pair, and so the pair, with it
        _ip("link", "del", here)


def test_a_host_in_its_own_network_namespace_gets_its_wakes(
    tmp_path: Path, netns: tuple[str, str, str]
) -> None:
    ns, address, link = netns
    # A password: off loopback, a server without one refuses every command (protected mode).
    password = os.urandom(8).hex()
    server = RedisServer(tmp_path / "redis", bind=("127.0.0.1", address), password=password)
    server.start()
    try:
        fleet = _fleet()
        secret = {"ACKDECK_REDIS_PASSWORD": password}
        (alpha,) = _homes(tmp_path, server.url(fleet), "alpha", **secret)
        (beta,) = _homes(tmp_path, f"redis://{address}:{server.port}/0/{fleet}", "beta", **secret)

        def in_ns(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["ip", "netns", "exec", ns, *ACKDECK, *args],
                env=beta, capture_output=True, text=True, timeout=60,
            )  # fmt: skip

        run = _run(alpha, "s@beta", SCRIPT)
        _ended(alpha, run)
        _publish(alpha)

        # beta's link is cut: it says so, keeps working, and imports once the link is back.
        assert _ip("link", "set", link, "down").returncode == 0
        done = in_ns("fleet", "publish")
        assert done.returncode != 0 and "unreachable" in done.stderr
        assert "timed out" in done.stderr.lower() or "timeout" in done.stderr.lower()
        assert _stream(server, fleet, "beta") == 3
        assert _ip("link", "set", link, "up").returncode == 0
        done = eventually(
            lambda: (d := in_ns("fleet", "publish")).returncode == 0 and d,
            what="beta to reach the fleet over its veth again",
        )
        assert "3 imported" in done.stdout
        _delivered_once(beta, "s", _expected(run))
    finally:
        server.stop()


def test_the_exchange_called_in_process_forwards_imports_and_confirms_once(
    tmp_path: Path, server: RedisServer
) -> None:
    # The publishers' own call (an MCP server's thread, the dashboard), in this process: the
    # record is made by a real `ackdeck run` on alpha, forwarded, imported on beta, delivered
    # by beta's drain, and confirmed back; an exchange repeated moves nothing.
    from ackdeck.core.service.fleet.hosts import FleetLink, exchange_wakes
    from ackdeck.core.service.fleet.settings import resolve_fleet

    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    run = _run(alpha, "s@beta", SCRIPT)
    _ended(alpha, run)
    secret = {"ACKDECK_REDIS_PASSWORD": server.password} if server.password else {}

    def link(host: str) -> FleetLink:
        settings = resolve_fleet(server.url(fleet), host, env=secret, config={})
        assert settings is not None
        return FleetLink(settings)

    a_home, b_home = Path(alpha["ACKDECK_HOME"]), Path(beta["ACKDECK_HOME"])
    a_link, b_link = link("alpha"), link("beta")
    try:
        assert exchange_wakes(a_link, a_home).forwarded == 3
        assert exchange_wakes(a_link, a_home).forwarded == 0  # on its way: not counted again
        assert exchange_wakes(b_link, b_home).imported == 3
        assert exchange_wakes(b_link, b_home).imported == 0  # confirmed and deleted
        assert _stream(server, fleet, "beta") == 0
        got: Counter[tuple[str, str]] = Counter()
        assert _drain(beta, "s", got) == 3 and got == _expected(run)
        assert exchange_wakes(a_link, a_home).forwarded == 0
        rec = _record_of(alpha, "s@beta", "build")
        assert rec is not None and rec["forwarded_total"] == 3 and "on_the_way" not in rec
        assert _drain(beta, "s", got) == 0 and got == _expected(run)
    finally:
        a_link.close()
        b_link.close()


def test_a_record_made_again_after_the_clock_stepped_back_is_delivered(
    tmp_path: Path, server: RedisServer
) -> None:
    """On the run's host the record is dismissed and made again by the next run, and its clock
    has stepped back (NTP) meanwhile: the new record's first batch must still be numbered above
    what the session's host confirmed, or that host skips it as imported, confirms it, and the
    run's wakes are counted forwarded and never delivered."""
    from ackdeck.core.service.fleet.hosts import FleetLink, exchange_wakes
    from ackdeck.core.service.fleet.settings import resolve_fleet

    fleet = _fleet()
    alpha, beta = _homes(tmp_path, server.url(fleet), "alpha", "beta")
    secret = {"ACKDECK_REDIS_PASSWORD": server.password} if server.password else {}

    def link(host: str) -> FleetLink:
        settings = resolve_fleet(server.url(fleet), host, env=secret, config={})
        assert settings is not None
        return FleetLink(settings)

    a_home, b_home = Path(alpha["ACKDECK_HOME"]), Path(beta["ACKDECK_HOME"])
    a_link, b_link = link("alpha"), link("beta")
    got: Counter[tuple[str, str]] = Counter()
    try:
        first = _run(alpha, "s@beta", SCRIPT)
        _ended(alpha, first)
        assert exchange_wakes(a_link, a_home).forwarded == 3
        assert exchange_wakes(b_link, b_home).imported == 3
        _drain(beta, "s", got)
        exchange_wakes(a_link, a_home)  # confirmed
        gone = ackdeck(_alone(alpha), "wakes", "dismiss", "--session", "s@beta", "build")
        assert gone.returncode == 0, gone.stderr
        second = _run(alpha, "s@beta", "echo FAIL three")
        _ended(alpha, second)

        def stepped_back() -> float:
            return time.time() - 60

        assert exchange_wakes(a_link, a_home, clock=stepped_back).forwarded == 2
        assert exchange_wakes(b_link, b_home).imported == 2
        _drain(beta, "s", got)
        want = _expected(first) + Counter({(second, "FAIL three"): 1, (second, "exited"): 1})
        assert got == want
    finally:
        a_link.close()
        b_link.close()
