"""The fleet (issue 34): homes with distinct host ids publish to one real redis-server and every
listing shows every host's rows. Hosts are separate processes (the CLI, a `fleet publish
--every` loop); a host is killed with -9, the server is killed and started again empty.

The decisions (liveness, clocks) are also tested pure, in fleet_model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ackdeck.core.errors import FleetUnreachable, InvalidInput, InvalidName
from ackdeck.core.presence import log
from ackdeck.core.service.fleet import model as fleet_model
from ackdeck.core.service.fleet.hosts import FleetLink, fleet_listing, publish_home
from ackdeck.core.service.fleet.model import Published
from ackdeck.core.service.fleet.settings import parse_fleet_url, resolve_fleet
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.fleet import host_env, json_of
from tests.helpers.redis_server import RedisServer
from tests.helpers.wait import eventually

HOME_ID = "0123456789abcdef0123456789abcdef"  # a home's id on the fleet (fleet-home-id)

# ----- pure: settings ----------------------------------------------------------------------


def test_the_fleet_comes_from_the_flag_then_the_environment_then_the_config() -> None:
    env = {"ACKDECK_FLEET": "redis://envhost/0/envfleet", "ACKDECK_HOST_ID": "env-host"}
    config = {"fleet": "redis://cfghost:7000/cfg", "host_id": "cfg-host"}
    s = resolve_fleet("redis://flaghost:6390/2/flagfleet", "flag-host", env=env, config=config)
    assert s is not None
    assert (s.address.host, s.address.port, s.address.db, s.fleet, s.host) == (
        "flaghost", 6390, 2, "flagfleet", "flag-host"
    )  # fmt: skip
    s = resolve_fleet(env=env, config=config)
    assert s is not None and (s.address.host, s.fleet, s.host) == (
        "envhost",
        "envfleet",
        "env-host",
    )
    s = resolve_fleet(env={}, config=config)
    assert s is not None and (s.address.port, s.fleet, s.host) == (7000, "cfg", "cfg-host")
    assert resolve_fleet(env={}, config={}) is None
    # No path: database 0, fleet `default`; no host id: the host name.
    s = resolve_fleet("redis://h", env={}, config={})
    assert s is not None and (s.address.db, s.fleet, s.host) == (0, "default", os.uname().nodename)
    assert s.ttl == 30.0 and s.every == 10.0


def test_a_bad_host_id_or_fleet_url_is_one_line_naming_it() -> None:
    with pytest.raises(InvalidName, match="ACKDECK_HOST_ID: invalid host id name '../x'"):
        resolve_fleet("redis://h", env={"ACKDECK_HOST_ID": "../x"}, config={})
    with pytest.raises(InvalidName, match="--host-id"):
        resolve_fleet("redis://h", "a/b", env={}, config={})
    # `NAME@HOST` ends at its last `@`: a host id holding one could never be named there
    # (`s@be@ta` would be the session `s@be` of host `ta`).
    with pytest.raises(InvalidName, match="ACKDECK_HOST_ID: invalid host id 'be@ta': no '@'"):
        resolve_fleet("redis://h", env={"ACKDECK_HOST_ID": "be@ta"}, config={})
    with pytest.raises(InvalidInput, match="invalid fleet URL") as exc:
        parse_fleet_url("http://user:secret@h/x", env={})
    assert "secret" not in str(exc.value)
    with pytest.raises(InvalidInput, match="ACKDECK_FLEET_TTL"):
        resolve_fleet("redis://h", env={"ACKDECK_FLEET_TTL": "0"}, config={})


# ----- pure: liveness and clocks ------------------------------------------------------------


def _pub(at: float, clock: float, ttl: float = 30.0) -> Published:
    agent = {"session": "a", "state": "idle", "since": clock - 100, "oldest_unread_age": 50.0}
    return Published("far", at, clock, ttl, {"agents": [agent], "runs": [], "wakes": []})


def test_a_host_whose_clock_is_minutes_off_shows_the_true_ages() -> None:
    # The server stamped the publish at 1000 (its time); the host's clock said 1600 then (ten
    # minutes fast); this reader's clock says 400 while the server says 1005 (ten minutes slow).
    server_now, local_now = 1005.0, 400.0
    (row,) = fleet_model.host_rows(_pub(1000.0, 1600.0), "agents", server_now, local_now)
    # `since` was 100 s before the publish, which was 5 s ago: 105 s ago in the reader's clock.
    assert local_now - row["since"] == pytest.approx(105.0)
    assert row["oldest_unread_age"] == pytest.approx(55.0)  # 50 s at publish, 5 s since
    assert row["host"] == "far" and row["state"] == "idle"
    assert fleet_model.live(_pub(1000.0, 1600.0), server_now)


def test_a_host_past_its_ttl_shows_its_agents_gone_not_frozen() -> None:
    pub = _pub(1000.0, 1000.0, ttl=30.0)
    assert fleet_model.live(pub, 1029.9)
    assert not fleet_model.live(pub, 1030.0)
    (row,) = fleet_model.host_rows(pub, "agents", 1040.0, 1040.0)
    assert row["state"] == "gone" and row["since"] == pytest.approx(1000.0)
    assert "host far stopped publishing" in row["evidence"]
    assert row["oldest_unread_age"] == 50.0  # as last known: no growth claimed for a dead host
    state = fleet_model.host_state(pub, 1040.0)
    assert (state.live, state.age, state.agents) == (False, 40.0, 1)


def test_a_snapshot_another_version_wrote_is_left_out() -> None:
    good = {b"payload": fleet_model.snapshot("h", 5.0, {}).encode(), b"at": b"1000", b"ttl": b"3"}
    assert fleet_model.decode("h", good) is not None
    assert fleet_model.decode("h", {**good, b"payload": b'{"v": 2, "clock": 1}'}) is None
    assert fleet_model.decode("h", {**good, b"payload": b"{not json"}) is None
    assert fleet_model.decode("h", {b"at": b"1"}) is None


# ----- real redis-server, separate processes -----------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own (it is killed and restarted), without persistence: a
    restart loses everything, so what comes back was republished."""
    s = RedisServer(tmp_path / "redis", persist=False)
    s.start()
    try:
        yield s
    finally:
        s.stop()


def _host(tmp_path: Path, host: str, url: str, **extra: str) -> dict[str, str]:
    """A home with one agent session that read a room, and one monitored run that woke it."""
    home = tmp_path / host
    home.mkdir()
    env = host_env(home, host, url, **extra)
    room = home / "inbox.txt"
    assert ackdeck(env, "room", "push", str(room), "hello").returncode == 0
    assert ackdeck(env, "room", "read", str(room), "--session", f"agent-{host}").returncode == 0
    assert ackdeck(env, "room", "push", str(room), "unread").returncode == 0
    done = ackdeck(
        env, "run", f"build-{host}", "--session", f"agent-{host}", "--monitor", "FAIL",
        "--", "sh", "-c", "echo FAIL one",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    eventually(
        lambda: any(
            w["lines"] for w in json_of({**env, "ACKDECK_FLEET": ""}, "wakes", "list")["wakes"]
        ),
        what=f"{host}'s wake",
    )
    return env


def _by_host(rows: list[dict], key: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["host"], []).append(r[key])
    return out


def test_two_hosts_see_each_others_agents_runs_and_wakes(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = f"redis://127.0.0.1:{redis_server.port}/0/two-{os.urandom(4).hex()}"
    alpha = _host(tmp_path, "alpha", url)
    beta = _host(tmp_path, "beta", url)
    assert ackdeck(alpha, "fleet", "publish").returncode == 0

    seen = json_of(beta, "agents")
    assert _by_host(seen["agents"], "session") == {"beta": ["agent-beta"], "alpha": ["agent-alpha"]}
    assert seen["fleet"]["reachable"] is True and seen["fleet"]["host"] == "beta"
    assert [(h["host"], h["live"], h["this"]) for h in seen["fleet"]["hosts"]] == [
        ("beta", True, True),
        ("alpha", True, False),
    ]
    alpha_agent = next(a for a in seen["agents"] if a["host"] == "alpha")
    assert alpha_agent["last_read"] is not None and alpha_agent["state"] != "gone"

    runs = json_of(beta, "ps")["processes"]
    assert _by_host(runs, "name") == {"beta": ["build-beta"], "alpha": ["build-alpha"]}
    wakes = json_of(beta, "wakes", "list")
    assert _by_host(wakes["wakes"], "name") == {"beta": ["build-beta"], "alpha": ["build-alpha"]}
    assert {tuple(w["lines"]) for w in wakes["wakes"]} == {("FAIL one",)}

    # --host filters every listing; the human table has a HOST column.
    only = json_of(beta, "agents", "--host", "alpha")
    assert [a["session"] for a in only["agents"]] == ["agent-alpha"]
    assert json_of(alpha, "ps", "--host", "beta")["processes"][0]["name"] == "build-beta"
    table = ackdeck(beta, "agents").stdout.splitlines()
    assert table[0].split()[:3] == ["HOST", "SESSION", "STATE"]
    assert {line.split()[0] for line in table[1:]} == {"alpha", "beta"}
    said = ackdeck(alpha, "wakes", "list", "--session", "agent-beta").stdout.splitlines()
    assert said[0].startswith("beta agent-beta/build-beta: ") and "1 pending line" in said[0]
    assert said[1:] == ["  FAIL one"]
    # --host without a fleet: one line, exit 1.
    done = ackdeck({**beta, "ACKDECK_FLEET": ""}, "agents", "--host", "alpha")
    assert done.returncode == 1 and done.stderr.strip().endswith("or fleet in the config")


def test_a_host_killed_with_9_shows_gone_after_its_ttl(tmp_path: Path, server: RedisServer) -> None:
    url = f"redis://127.0.0.1:{server.port}/0/kill"
    alpha = _host(tmp_path, "alpha", url, ACKDECK_FLEET_TTL="1.5")
    beta = _host(tmp_path, "beta", url, ACKDECK_FLEET_TTL="1.5")
    loop = subprocess.Popen(
        [*ACKDECK, "fleet", "publish", "--every", "0.3"],
        env=alpha,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:

        def alpha_row() -> dict | None:
            rows = json_of(beta, "agents", "--host", "alpha")["agents"]
            return rows[0] if rows else None

        row = eventually(alpha_row, what="alpha's agent on beta")
        assert isinstance(row, dict) and row["state"] != "gone"
        hosts = json_of(beta, "fleet", "hosts")["hosts"]
        assert [(h["host"], h["live"]) for h in hosts] == [("beta", True), ("alpha", True)]
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
        killed_at = time.monotonic()
        gone = eventually(
            lambda: (r := alpha_row()) is not None and r["state"] == "gone" and r,
            what="alpha's agent gone after its TTL",
        )
        assert isinstance(gone, dict)
        assert gone["evidence"] == "host alpha stopped publishing to the fleet"
        # Not before its TTL (1.5 s of server time since its last publish, at most 0.3 s
        # before the kill): gone means expired, not "missed one publish".
        assert time.monotonic() - killed_at >= 1.5 - 0.3 - 0.05
        hosts = json_of(beta, "fleet", "hosts")["hosts"]
        assert [(h["host"], h["live"]) for h in hosts] == [("beta", True), ("alpha", False)]
        # Its runs and wakes are still listed, under its name, for the owner to see.
        assert "alpha" in {r["host"] for r in json_of(beta, "ps")["processes"]}
    finally:
        if loop.poll() is None:
            os.killpg(loop.pid, signal.SIGKILL)
            loop.wait()


def test_a_redis_restart_is_said_and_every_host_republishes(
    tmp_path: Path, server: RedisServer
) -> None:
    url = f"redis://127.0.0.1:{server.port}/0/restart"
    alpha = _host(tmp_path, "alpha", url, ACKDECK_FLEET_TTL="3", ACKDECK_REDIS_TIMEOUT="1")
    beta = _host(tmp_path, "beta", url, ACKDECK_FLEET_TTL="3", ACKDECK_REDIS_TIMEOUT="1")
    errors = tmp_path / "alpha-stderr"
    with errors.open("wb") as err:
        loop = subprocess.Popen(
            [*ACKDECK, "fleet", "publish", "--every", "0.2"],
            env=alpha,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
    try:
        hosts = lambda: [h["host"] for h in json_of(beta, "fleet", "hosts")["hosts"]]  # noqa: E731
        eventually(lambda: hosts() == ["beta", "alpha"], what="alpha on the fleet")

        server.kill9()
        # Every host keeps working on its own, says so on one line, and the JSON says it too.
        done = ackdeck(beta, "agents", "--json")
        assert done.returncode == 0
        listed = json.loads(done.stdout)
        assert listed["fleet"]["reachable"] is False
        assert "unreachable" in listed["fleet"]["note"]
        assert [(a["host"], a["session"]) for a in listed["agents"]] == [("beta", "agent-beta")]
        assert done.stderr.count("\n") == 1 and "showing this host only" in done.stderr
        room = Path(beta["ACKDECK_HOME"]) / "inbox.txt"
        assert ackdeck(beta, "room", "read", str(room), "--session", "agent-beta").returncode == 0
        eventually(
            lambda: "unreachable" in errors.read_text(), what="alpha's loop to say unreachable"
        )

        server.start()  # the same port, nothing on it: everything published was lost
        eventually(lambda: hosts() == ["beta", "alpha"], what="alpha republished after restart")
        said = errors.read_text()
        assert said.count("unreachable") == 1, said  # once per outage, not once per attempt
        assert "answers again: republished" in said
        sessions = _by_host(json_of(beta, "agents")["agents"], "session")
        assert sessions == {"beta": ["agent-beta"], "alpha": ["agent-alpha"]}
    finally:
        if loop.poll() is None:
            os.killpg(loop.pid, signal.SIGKILL)
            loop.wait()


def test_clocks_minutes_apart_agree_on_ages_and_liveness(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Two hosts in one process, each with its own clock: alpha's ten minutes fast."""
    url = f"redis://127.0.0.1:{redis_server.port}/0/skew-{os.urandom(4).hex()}"
    fast = lambda: time.time() + 600  # noqa: E731
    a_home, b_home = tmp_path / "a", tmp_path / "b"
    a_home.mkdir()
    b_home.mkdir()
    # alpha's agent read 60 s ago by alpha's own (fast) clock.
    log.record(a_home, "agent-alpha", "read", at=fast() - 60, room="r", lines=1)
    alpha = FleetLink(resolve_fleet(url, "alpha", env={}, config={}))  # type: ignore[arg-type]
    beta = FleetLink(resolve_fleet(url, "beta", env={}, config={}))  # type: ignore[arg-type]
    try:
        publish_home(alpha, a_home, clock=fast)
        listed = fleet_listing(beta, b_home, "agents", [])
        (row,) = listed.rows
        assert row["host"] == "alpha"
        assert time.time() - row["last_read"] == pytest.approx(60, abs=5)
        (mine, theirs) = listed.fleet.hosts
        assert theirs.host == "alpha" and theirs.live and theirs.age is not None
        assert theirs.age < 5  # not ten minutes in the future, nor gone
    finally:
        alpha.close()
        beta.close()


def test_two_homes_under_one_host_id_are_warned_and_one_home_is_not(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Two users of one machine (or two ACKDECK_HOMEs) publish under its host name: each
    snapshot replaces the other's. The home that replaces another's says so, in one line, on
    the publish and on a listing; a home publishing again after itself says nothing."""
    url = f"redis://127.0.0.1:{redis_server.port}/0/same-{os.urandom(4).hex()}"
    one = host_env(tmp_path / "one", "devbox", url)
    other = host_env(tmp_path / "other", "devbox", url)
    warning = "ackdeck: warning: host id devbox is published to fleet "

    first = ackdeck(one, "fleet", "publish")
    assert first.returncode == 0 and first.stderr == "", first.stderr
    again = ackdeck(one, "fleet", "publish")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert len((tmp_path / "one" / "fleet-home-id").read_text()) == 32  # made at the first

    shared = ackdeck(other, "fleet", "publish")
    assert shared.returncode == 0
    assert shared.stderr.startswith(warning) and shared.stderr.count("\n") == 1, shared.stderr
    assert "give each home its own --host-id or ACKDECK_HOST_ID" in shared.stderr
    listing = ackdeck(one, "agents", "--json")
    assert listing.returncode == 0 and listing.stderr.startswith(warning), listing.stderr
    assert json.loads(listing.stdout)["fleet"]["note"].startswith("warning: host id devbox")
    # Given its own id, the other home publishes quietly, and so does the first one after it.
    fixed = ackdeck({**other, "ACKDECK_HOST_ID": "devbox-2"}, "fleet", "publish")
    assert fixed.returncode == 0 and fixed.stderr == "", fixed.stderr
    assert ackdeck(one, "fleet", "publish").stderr == ""


def test_a_damaged_home_id_is_set_aside_and_made_anew(tmp_path: Path) -> None:
    from ackdeck.core.service.fleet.hosts import home_id

    made = home_id(tmp_path)
    assert home_id(tmp_path) == made and len(made) == 32
    (tmp_path / "fleet-home-id").write_bytes(b"\x00garbage")
    anew = home_id(tmp_path)
    assert anew != made and len(anew) == 32
    assert [p.name.split(".corrupt-")[0] for p in tmp_path.glob("*.corrupt-*")] == ["fleet-home-id"]


def test_a_publish_sent_twice_is_one_host(tmp_path: Path, redis_server: RedisServer) -> None:
    """A retry after a lost reply sends the same publish again: one host, one set of rows."""
    url = f"redis://127.0.0.1:{redis_server.port}/0/twice-{os.urandom(4).hex()}"
    log.record(tmp_path, "agent", "read", room="r", lines=1)
    link = FleetLink(resolve_fleet(url, "alpha", env={}, config={}))  # type: ignore[arg-type]
    try:
        payload = fleet_model.snapshot("alpha", time.time(), {"agents": [{"session": "agent"}]})
        link.publish(payload, HOME_ID)
        link.publish(payload, HOME_ID)
        _, pubs = link.read()
        assert [(p.host, len(p.rows["agents"])) for p in pubs] == [("alpha", 1)]
    finally:
        link.close()


def test_a_lost_publish_reply_is_said_and_the_next_publish_makes_it_good(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """The server ran the publish but its reply was lost: the publisher says the fleet was
    unreachable (it cannot know), and the next publish replaces the snapshot whole: one host,
    the newest rows, nothing listed twice."""
    from tests.helpers.redis_proxy import ReplyDropper

    proxy = ReplyDropper(redis_server.port)
    proxy.start()
    fleet = f"lost-{os.urandom(4).hex()}"
    via_proxy = FleetLink(resolve_fleet(proxy.url(fleet), "alpha", env={}, config={}))  # type: ignore[arg-type]
    direct = FleetLink(
        resolve_fleet(f"redis://127.0.0.1:{redis_server.port}/0/{fleet}", "beta", env={}, config={})  # type: ignore[arg-type]
    )
    try:
        via_proxy.publish(fleet_model.snapshot("alpha", time.time(), {}), HOME_ID)  # loaded
        first = fleet_model.snapshot("alpha", time.time(), {"agents": [{"session": "one"}]})
        proxy.drop_next(lambda cmd: cmd[0].upper() == b"EVALSHA")
        with pytest.raises(FleetUnreachable, match="unreachable"):
            via_proxy.publish(first, HOME_ID)
        assert proxy.dropped  # the server got it; only its reply was lost
        _, pubs = direct.read()
        assert [(p.host, p.rows["agents"]) for p in pubs] == [("alpha", [{"session": "one"}])]
        via_proxy.close()
        second = fleet_model.snapshot(
            "alpha", time.time(), {"agents": [{"session": "one"}, {"session": "two"}]}
        )
        via_proxy.publish(second, HOME_ID)
        _, pubs = direct.read()
        assert [(p.host, [a["session"] for a in p.rows["agents"]]) for p in pubs] == [
            ("alpha", ["one", "two"])
        ]
    finally:
        via_proxy.close()
        direct.close()
        proxy.stop()


def test_an_mcp_server_publishes_its_host_while_it_runs(
    tmp_path: Path, server: RedisServer
) -> None:
    """A host whose agent runs `ackdeck mcp` is on the fleet without a publisher of its own,
    and shows gone once the server ended and its TTL passed."""
    url = f"redis://127.0.0.1:{server.port}/0/mcp"
    a_home, b_home = tmp_path / "alpha", tmp_path / "beta"
    a_home.mkdir()
    b_home.mkdir()
    alpha = host_env(a_home, "alpha", url, ACKDECK_FLEET_TTL="1.5")
    beta = host_env(b_home, "beta", url, ACKDECK_FLEET_TTL="1.5")
    room = a_home / "inbox.txt"
    mcp = subprocess.Popen(
        [*ACKDECK, "mcp", "--session", "agent", "--room", str(room)],
        env=alpha,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def alpha_agents() -> list[dict]:
            return json_of(beta, "agents", "--host", "alpha")["agents"]

        rows = eventually(alpha_agents, what="the MCP server's host on the fleet")
        assert isinstance(rows, list) and [a["session"] for a in rows] == ["agent"]
        assert rows[0]["state"] != "gone"
        assert mcp.stdin is not None
        mcp.stdin.close()  # the client went away: the server ends, and its publishing with it
        assert mcp.wait(timeout=60) == 0
        eventually(
            lambda: [a["state"] for a in alpha_agents()] == ["gone"], what="alpha gone after"
        )
        hosts = json_of(beta, "fleet", "hosts")["hosts"]
        assert [(h["host"], h["live"]) for h in hosts] == [("beta", True), ("alpha", False)]
    finally:
        if mcp.poll() is None:
            mcp.kill()
            mcp.wait()


def test_fleet_commands_without_a_fleet_or_with_bad_input_say_one_line(tmp_path: Path) -> None:
    env = host_env(tmp_path, "alpha", "")
    for args in (("fleet", "publish"), ("fleet", "hosts")):
        done = ackdeck(env, *args)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.strip() == (
            "ackdeck: error: no fleet: give --fleet URL, set ACKDECK_FLEET or fleet in the config"
        )
    done = ackdeck(env, "fleet", "publish", "--fleet", "redis://h", "--every", "0")
    assert done.returncode == 1 and "--every must be from 0.05 to 3600" in done.stderr
    done = ackdeck(env, "ps", "--fleet", "redis://user:hunter2@h/0/a/b")
    assert done.returncode == 1 and "invalid fleet URL" in done.stderr
    assert "hunter2" not in done.stderr
    done = ackdeck({**env, "ACKDECK_HOST_ID": "no/slash"}, "wakes", "list", "--fleet", "redis://h")
    assert done.returncode == 1
    assert done.stderr.startswith("ackdeck: error: ACKDECK_HOST_ID: invalid host id name")
    # The config file's fleet is the CLI's too (a bad one named with its file).
    config = tmp_path / ".config" / "ackdeck" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("fleet = 5\n")
    done = ackdeck(env, "agents")
    assert done.returncode == 1 and done.stderr.strip().endswith("fleet: must be a string")
    # Without a fleet anywhere, the listings are as they were: no host column, no `fleet`.
    config.unlink()
    assert "fleet" not in json_of(env, "agents") and "fleet" not in json_of(env, "ps")


def test_a_publisher_says_an_outage_once_and_publishes_only_when_due(
    tmp_path: Path, server: RedisServer
) -> None:
    from ackdeck.core.service.fleet.hosts import Publisher

    url = f"redis://127.0.0.1:{server.port}/0/due"
    settings = resolve_fleet(url, "alpha", env={"ACKDECK_REDIS_TIMEOUT": "1"}, config={})
    assert settings is not None
    now = [0.0]
    said: list[str] = []
    link = FleetLink(settings, env={"ACKDECK_REDIS_TIMEOUT": "1"})
    pub = Publisher(link, tmp_path, say=said.append, clock=lambda: now[0])
    try:
        assert pub.tick() and pub.reachable is True and said == []
        assert not pub.tick()  # not due before TTL/3
        server.kill9()
        for _ in range(3):
            now[0] += pub.every
            assert not pub.tick()
        assert len(said) == 1 and "unreachable" in said[0]
        server.start()
        now[0] += pub.every
        assert pub.tick() and said[1].endswith("answers again: republished")
        _, pubs = link.read()
        assert [p.host for p in pubs] == ["alpha"]
    finally:
        link.close()
