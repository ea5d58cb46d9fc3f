"""Issue 42, class 4: the fleet is input from other machines, so it is hostile input. One host
(or anyone who can write to the fleet's Redis) publishing a snapshot with NaN or Infinity,
arrays nested thousands deep, a 50 MB string, or values of the wrong type took down `agents`,
`ps`, `wakes list` and `fleet hosts` (text and --json) on every host, or printed the 50 MB into
the table. Each snapshot is now checked as it is read (core/service/fleet/model.py
`read_host`): the bad host's rows are left out and named in one line, the listing goes on.

A real redis-server (the suite's), real `ackdeck` processes for two hosts."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from ackdeck.core.base import locations
from tests.helpers.cli import ackdeck
from tests.helpers.fleet import host_env
from tests.helpers.redis_server import RedisServer

BIG = 50 << 20


def _agent(**fields: object) -> dict[str, object]:
    return {"session": "agent-alpha", "state": "idle", "since": 1.8e9, "evidence": "x", **fields}


def _snapshot(clock: str = "1800000000.5", **kinds: object) -> bytes:
    rows = {"agents": [_agent()], "runs": [], "wakes": [], **kinds}
    body = ",".join(f'"{k}":{v if isinstance(v, str) else json.dumps(v)}' for k, v in rows.items())
    return f'{{"v":1,"host":"alpha","clock":{clock},{body}}}'.encode()


# Each a snapshot as a hostile or broken host publishes it (raw bytes: json.dumps would not
# write most of them).
HOSTILE: dict[str, Callable[[], bytes]] = {
    "nan-time": lambda: _snapshot(agents='[{"session":"a","state":"idle","since":NaN}]'),
    "infinity-clock": lambda: _snapshot(clock="Infinity"),
    "out-of-range-number": lambda: _snapshot(agents='[{"session":"a","since":1e400}]'),
    "time-past-any-clock": lambda: _snapshot(agents=[_agent(since=1e300)]),
    "nested": lambda: _snapshot(agents='[{"session":"a","rooms":' + "[" * 5000 + "]" * 5000 + "}]"),
    "50-MB-string": lambda: _snapshot(agents=[_agent(evidence="E" * BIG)]),
    "50-MB-name": lambda: _snapshot(runs=[{"name": "N" * BIG, "status": "running"}]),
    "wrong-types": lambda: _snapshot(agents=[_agent(since="yesterday", unread="many")], runs=5),
}


@pytest.fixture
def hosts(tmp_path: Path, redis_server: RedisServer) -> tuple[dict[str, str], redis.Redis, str]:
    """Two hosts of one fleet: beta (the one listing) with an agent of its own, and alpha, which
    published once; and a client on the fleet's Redis to write alpha's hash as anyone can."""
    fleet = f"hostile-{os.urandom(4).hex()}"
    url = f"redis://127.0.0.1:{redis_server.port}/0/{fleet}"
    envs = {}
    for host in ("alpha", "beta"):
        home = tmp_path / host
        home.mkdir()
        envs[host] = env = host_env(home, host, url)
        room = home / "inbox.txt"
        assert ackdeck(env, "room", "push", str(room), "hello").returncode == 0
        assert ackdeck(env, "room", "read", str(room), "--session", f"agent-{host}").returncode == 0
    assert ackdeck(envs["alpha"], "fleet", "publish").returncode == 0
    client = redis.Redis(port=redis_server.port, password=getattr(redis_server, "password", None))
    return envs["beta"], client, locations.fleet_host_key(fleet, "alpha")


def _strict(text: str) -> object:
    def refuse(name: str) -> object:
        raise AssertionError(f"{name} printed as JSON")

    return json.loads(text, parse_constant=refuse)


LISTINGS = [("agents",), ("ps",), ("wakes", "list"), ("fleet", "hosts")]


@pytest.mark.parametrize("how", HOSTILE)
def test_a_hostile_host_snapshot_is_named_and_left_out_of_every_listing(
    hosts: tuple[dict[str, str], redis.Redis, str], how: str
) -> None:
    beta, client, key = hosts
    client.hset(key, "payload", HOSTILE[how]())
    for args in LISTINGS:
        for json_flag in ((), ("--json",)):
            out = ackdeck(beta, *args, *json_flag, timeout=120)
            assert out.returncode == 0, (args, out.stderr[-2000:])
            assert "Traceback" not in out.stderr, out.stderr[-2000:]
            assert len(out.stdout) < 64 << 10 and len(out.stderr) < 4 << 10  # nothing of the 50 MB
            warned = [line for line in out.stderr.splitlines() if "fleet host alpha" in line]
            assert len(warned) == 1 and "left out" in warned[0], out.stderr
            if json_flag:
                got = _strict(out.stdout)
                if args == ("agents",):
                    assert {a["host"] for a in got["agents"]} == {"beta"}  # type: ignore[index]
                    assert got["fleet"]["dropped"][0].startswith("alpha: ")  # type: ignore[index]
            elif args == ("agents",):
                assert "agent-beta" in out.stdout and "agent-alpha" not in out.stdout


def test_a_good_snapshot_after_a_hostile_one_is_shown_again(
    hosts: tuple[dict[str, str], redis.Redis, str],
) -> None:
    beta, client, key = hosts
    client.hset(key, "payload", HOSTILE["nan-time"]())
    assert "agent-alpha" not in ackdeck(beta, "agents").stdout
    client.hset(key, "payload", _snapshot())
    out = ackdeck(beta, "agents")
    assert out.returncode == 0 and "agent-alpha" in out.stdout and not out.stderr, out.stderr


def test_the_dashboards_fleet_read_leaves_a_hostile_host_out(
    hosts: tuple[dict[str, str], redis.Redis, str],
) -> None:
    """The dashboard reads the fleet in its own process (fleet_agents), not through a listing."""
    from ackdeck.core.service.agents import list_agents
    from ackdeck.core.service.fleet.hosts import FleetLink, fleet_agents
    from ackdeck.core.service.fleet.rows import remote_runs
    from ackdeck.core.service.fleet.settings import resolve_fleet

    beta, client, key = hosts
    settings = resolve_fleet(env=beta, config={})
    assert settings is not None
    for how in HOSTILE:
        client.hset(key, "payload", HOSTILE[how]())
        link = FleetLink(settings, env=beta)
        try:
            agents, note, rows = fleet_agents(link, list_agents(Path(beta["ACKDECK_HOME"])))
        finally:
            link.close()
        assert [a.session for a in agents.agents] == ["agent-beta"], how
        assert note.reachable and [d.split(":")[0] for d in note.dropped] == ["alpha"], how
        assert remote_runs(rows["runs"], {}) == []
