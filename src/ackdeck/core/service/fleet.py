"""The fleet (docs/how-to/fleet.md): every host publishes its agents' presence, its runs and its
wake records to one Redis, and every listing shows every host's rows.

A publish is one script (`PUBLISH`): the server stamps it with its own TIME, stores the host's
snapshot in the host's hash, expires that hash after the keep time and scores the host in the
registry. A snapshot replaces the previous one whole, so a publish sent twice (a lost reply,
a retry) is the same publish, and one that never arrived is made good by the next. A reader
takes TIME and the registry, then every host's hash; fleet_model decides what is live and maps
each host's times into the reader's clock.

A host that cannot reach the fleet keeps working on its own state (nothing here is on the path
of a push, read, ack or drain) and says so; the next publish after Redis returns (a restart
that lost everything included) puts its rows back.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ackdeck.core.base import locations
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.timeouts import seconds_from_env
from ackdeck.core.errors import AckdeckError, FleetUnreachable
from ackdeck.core.service import fleet_model
from ackdeck.core.service.fleet_model import HostState, Published

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import redis

    from ackdeck.core.service.agents import Agent, Agents
    from ackdeck.core.service.fleet_settings import FleetSettings

TIMEOUT_ENV = "ACKDECK_REDIS_TIMEOUT"  # the rooms' setting: one timeout for every redis call
DEFAULT_TIMEOUT = 5.0

# KEYS: the registry, the host's hash. ARGV: host id, snapshot, ttl (s), keep (ms).
# TIME before writes needs effects replication: the default from Redis 7, asked for before it.
PUBLISH = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = tonumber(ARGV[4])
redis.call('HSET', KEYS[2], 'payload', ARGV[2], 'at', now, 'ttl', ARGV[3])
redis.call('PEXPIRE', KEYS[2], keep)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - keep)
redis.call('PEXPIRE', KEYS[1], keep)
return now
"""


class FleetLink:
    """A connection to the fleet's Redis. Cheap to construct; connects on first use; every
    client failure is one FleetUnreachable line naming the server (never the password)."""

    def __init__(self, settings: FleetSettings, *, env: Mapping[str, str] | None = None) -> None:
        import os

        self.settings = settings
        self.timeout = seconds_from_env(
            os.environ if env is None else env, TIMEOUT_ENV, DEFAULT_TIMEOUT, 0.001, 3600
        )
        self._client: redis.Redis | None = None
        self._publish: Any = None
        self.commands = 0  # commands sent (the bench's figure); a script counts as one

    def _redis(self) -> redis.Redis:
        if self._client is None:
            from ackdeck.core.inbox.redis_room import client_for

            self._client = client_for(self.settings.address, self.timeout)
        return self._client

    def _call(self, what: str, call: Callable[[redis.Redis], Any]) -> Any:
        import redis

        where = f"fleet {self.settings.url}"
        try:
            return call(self._redis())
        except redis.AuthenticationError:
            raise FleetUnreachable(f"{where}: {what} failed: authentication refused") from None
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            if self.settings.address.password:
                reason = reason.replace(self.settings.address.password, "***")
            raise FleetUnreachable(f"{where}: unreachable ({what}: {reason})") from None

    def publish(self, payload: str) -> float:
        """Store this host's snapshot; returns the server time it was stamped with (s)."""
        s = self.settings

        def call(r: redis.Redis) -> Any:
            if self._publish is None:
                self._publish = r.register_script(PUBLISH)
            keys = [locations.fleet_hosts_key(s.fleet), locations.fleet_host_key(s.fleet, s.host)]
            return self._publish(keys=keys, args=[s.host, payload, s.ttl, int(s.keep * 1000)])

        self.commands += 1
        return int(self._call("publish", call)) / 1000

    def read(self) -> tuple[float, list[Published]]:
        """The server's time now and every host the registry holds, decoded (a host whose hash
        expired or cannot be read is left out)."""
        fleet = self.settings.fleet

        def call(r: redis.Redis) -> tuple[float, list[Published]]:
            pipe = r.pipeline(transaction=False)
            pipe.time()
            pipe.zrange(locations.fleet_hosts_key(fleet), 0, -1)
            (sec, usec), names = pipe.execute()
            hosts = [h for h in (n.decode("utf-8", "replace") for n in names) if _is_name(h)]
            pipe = r.pipeline(transaction=False)
            for h in hosts:
                pipe.hgetall(locations.fleet_host_key(fleet, h))
            got = pipe.execute() if hosts else []
            self.commands += 2 + len(hosts)
            pubs = [fleet_model.decode(h, f) for h, f in zip(hosts, got, strict=True) if f]
            return sec + usec / 1e6, [p for p in pubs if p is not None]

        return self._call("read", call)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _is_name(host: str) -> bool:
    """A registry entry that is no host id was not written by ackdeck: left out."""
    from ackdeck.core.base.names import check_name
    from ackdeck.core.errors import InvalidName

    try:
        check_name(host, "host id")
    except InvalidName:
        return False
    return True


# ----- this host's snapshot ----------------------------------------------------------------
def local_rows(
    home: Path,
    *,
    have: Mapping[str, list[dict[str, Any]]] | None = None,
    clock: Callable[[], float] = time.time,
) -> dict[str, list[dict[str, Any]]]:
    """What this host publishes: every agent session, each process's newest run and every live
    one, every wake record (unfiltered: a reader filters). `have`: kinds a listing already
    computed."""
    from ackdeck.core.service.agents import list_agents
    from ackdeck.core.service.procs import list_runs
    from ackdeck.core.service.wakes import list_wakes

    out = dict(have or {})
    if "agents" not in out:
        out["agents"] = list_agents(home, clock=clock).to_json()["agents"]
    if "runs" not in out:
        out["runs"] = list_runs(home, latest_only=True).to_json()["processes"]
    if "wakes" not in out:
        out["wakes"] = list_wakes(home).to_json()["wakes"]
    return out


def publish_home(
    link: FleetLink,
    home: Path,
    *,
    have: Mapping[str, list[dict[str, Any]]] | None = None,
    clock: Callable[[], float] = time.time,
) -> dict[str, list[dict[str, Any]]]:
    """Publish this host's snapshot; returns its rows (FleetUnreachable when it could not)."""
    rows = local_rows(home, have=have, clock=clock)
    link.publish(fleet_model.snapshot(link.settings.host, clock(), rows))
    return rows


class Publisher:
    """A long-lived process's publishing (`fleet publish --every`, the MCP server, the
    dashboard): `tick()` publishes when one is due. An unreachable fleet is said once per
    outage through `say`, and every due tick tries again (on a fresh connection: the server may
    have restarted); the first publish that gets through is said too."""

    def __init__(
        self,
        link: FleetLink,
        home: Path,
        *,
        every: float | None = None,
        say: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.link, self.home, self._say, self._clock = link, home, say, clock
        self.every = link.settings.every if every is None else every
        self.reachable: bool | None = None  # None: not tried yet
        self._next = 0.0

    def due(self) -> bool:
        return self._clock() >= self._next

    def tick(self, have: Mapping[str, list[dict[str, Any]]] | None = None) -> bool:
        """Publish if due (`have`: kinds of rows the caller just computed, unfiltered); True
        when a publish got through now."""
        if not self.due():
            return False
        self._next = self._clock() + self.every
        try:
            publish_home(self.link, self.home, have=have)
        except FleetUnreachable as exc:
            if self.reachable is not False and self._say is not None:
                self._say(f"{exc}; publishing again when it answers")
            self.reachable = False
            self.link.close()
            return False
        except (AckdeckError, OSError) as exc:
            # This host's own state could not be listed (a damaged file, a full disk): said,
            # and tried again at the next tick; a long-lived process must not die of it.
            if self._say is not None:
                self._say(f"not published to fleet {self.link.settings.url}: {exc}")
            return False
        if self.reachable is False and self._say is not None:
            self._say(f"fleet {self.link.settings.url} answers again: republished")
        self.reachable = True
        return True

    def run(self, stop: Callable[[float], bool]) -> None:
        """Tick until `stop(seconds)` (a threading.Event's wait) says to stop."""
        while True:
            self.tick()
            if stop(max(0.0, self._next - self._clock())):
                return


# ----- a listing over the fleet -------------------------------------------------------------
class FleetNote(Struct):
    """The `fleet` object of a listing: which fleet, as which host, whether it answered, and
    each host with its liveness and row counts."""

    url: str
    host: str  # this host's id
    reachable: bool
    note: str | None  # one line when the fleet could not be reached (this host only shown)
    hosts: list[HostState]


class FleetListing(Struct):
    rows: list[dict[str, Any]]  # this host's rows, then every other host's, each with `host`
    fleet: FleetNote


def fleet_listing(
    link: FleetLink,
    home: Path,
    kind: str,
    local: list[dict[str, Any]],
    *,
    snapshot: Mapping[str, list[dict[str, Any]]] | None = None,
    hosts: list[str] | None = None,
    keep: Callable[[dict[str, Any]], bool] | None = None,
    clock: Callable[[], float] = time.time,
) -> FleetListing:
    """This host's `local` rows of `kind` (as the command computed them, with its own filters)
    and every other host's, after publishing this host's snapshot (`snapshot`: kinds already
    computed unfiltered). `keep` filters remote rows as the command filtered its own; `hosts`
    keeps only those hosts. Unreachable: this host's rows alone, and the note says why."""
    s = link.settings
    have = dict(snapshot or {})
    try:
        rows = publish_home(link, home, have=have, clock=clock)
        server_now, pubs = link.read()
    except FleetUnreachable as exc:
        mine = HostState(s.host, True, None, True, 0, 0, 0)
        note = f"{exc}; showing this host only"
        out = [{**r, "host": s.host} for r in local]
        return FleetListing(_only(out, hosts), FleetNote(s.url, s.host, False, note, [mine]))
    local_now = clock()
    others = [p for p in pubs if p.host != s.host]
    if keep is not None:
        others = [_kept(p, kind, keep) for p in others]
    merged = fleet_model.merged(s.host, local, others, kind, server_now, local_now)
    counts = [len(rows.get(k, [])) for k in fleet_model.KINDS]
    states = [HostState(s.host, True, 0.0, True, *counts)]
    states += [fleet_model.host_state(p, server_now) for p in sorted(others, key=lambda p: p.host)]
    if hosts is not None:
        states = [h for h in states if h.host in hosts]
    return FleetListing(_only(merged, hosts), FleetNote(s.url, s.host, True, None, states))


def fleet_agents(
    link: FleetLink, listed: Agents, *, clock: Callable[[], float] = time.time
) -> tuple[Agents, FleetNote, dict[str, list[dict[str, Any]]]]:
    """The dashboard's agents: this host's `listed` and every other host's, each with its
    host id as `host`. Another host's session is named `SESSION@HOST`, the notation of a
    session on another host, so that a name two hosts share stays two rows. Also every other
    host's `runs` and `wakes` rows (as host_rows gives them; none when unreachable), from the
    same read: the dashboard's Processes and Wakes panels cost no round trip of their own.
    Reads only: the dashboard's Publisher publishes."""
    from ackdeck.core.service.agents import Agent, Agents

    s = link.settings
    local = [Agent(**{**a.__dict__, "host": s.host}) for a in listed.agents]
    try:
        server_now, pubs = link.read()
    except FleetUnreachable as exc:
        mine = HostState(s.host, True, None, True, len(local), 0, 0)
        note = f"{exc}; showing this host only"
        unreached = FleetNote(s.url, s.host, False, note, [mine])
        return Agents(listed.checked_at, local), unreached, {}
    local_now = clock()
    others = sorted((p for p in pubs if p.host != s.host), key=lambda p: p.host)
    remote = [
        a
        for p in others
        for a in map(_agent, fleet_model.host_rows(p, "agents", server_now, local_now))
        if a is not None
    ]
    states = [HostState(s.host, True, 0.0, True, len(local), 0, 0)]
    states += [fleet_model.host_state(p, server_now) for p in others]
    rows = {
        kind: [r for p in others for r in fleet_model.host_rows(p, kind, server_now, local_now)]
        for kind in ("runs", "wakes")
    }
    found = FleetNote(s.url, s.host, True, None, states)
    return Agents(listed.checked_at, local + remote), found, rows


def _agent(row: dict[str, Any]) -> Agent | None:
    """Another host's agent row as an Agent named SESSION@HOST; None when it is not one this
    version can show (whatever it holds, nothing of it is trusted to be of its type)."""
    from ackdeck.core.presence.model import STATES
    from ackdeck.core.service.agents import Agent

    session, host, state = row.get("session"), row.get("host"), row.get("state")
    if not isinstance(session, str) or not isinstance(host, str) or state not in STATES:
        return None

    def num(key: str) -> float | None:
        v = row.get(key)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    def text(key: str) -> str | None:
        v = row.get(key)
        return v if isinstance(v, str) else None

    rooms = row.get("rooms")
    return Agent(
        f"{session}@{host}",
        text("origin") or "ackdeck",
        state,
        num("since"),
        text("evidence") or "",
        text("client"),
        text("version"),
        host,
        [r for r in rooms if isinstance(r, str)] if isinstance(rooms, list) else [],
        int(num("unread") or 0),
        num("oldest_unread_age"),
        int(num("pending_wakes") or 0),
        num("last_read"),
        num("last_ack"),
        num("last_nudge"),
        int(num("nudges_unanswered") or 0),
        num("stall_after") or 0.0,
        text("stall_basis") or "",
        num("last_seen"),
    )


def _kept(pub: Published, kind: str, keep: Callable[[dict[str, Any]], bool]) -> Published:
    rows = {**pub.rows, kind: [r for r in pub.rows.get(kind, []) if keep(r)]}
    return Published(pub.host, pub.at, pub.clock, pub.ttl, rows)


def _only(rows: list[dict[str, Any]], hosts: list[str] | None) -> list[dict[str, Any]]:
    return rows if hosts is None else [r for r in rows if r.get("host") in hosts]
