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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ackdeck.core.base import locations
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.timeouts import seconds_from_env
from ackdeck.core.errors import AckdeckError, CorruptState, FleetUnreachable
from ackdeck.core.service.fleet import model as fleet_model
from ackdeck.core.service.fleet.model import HostState, Published

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import redis

    from ackdeck.core.monitors.results import WakeItem
    from ackdeck.core.service.agents import Agent, Agents
    from ackdeck.core.service.fleet.settings import FleetSettings

TIMEOUT_ENV = "ACKDECK_REDIS_TIMEOUT"  # the rooms' setting: one timeout for every redis call
DEFAULT_TIMEOUT = 5.0

# KEYS: the registry, the host's hash. ARGV: host id, snapshot, ttl (s), keep (ms), this home's
# id. Returns the server time, and 1 when the snapshot it replaced came from another home less
# than a TTL ago: two homes publish under one host id, each replacing the other's rows.
# TIME before writes needs effects replication: the default from Redis 7, asked for before it.
PUBLISH = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = tonumber(ARGV[4])
local before = redis.call('HMGET', KEYS[2], 'home', 'at')
local shared = 0
if before[1] and before[1] ~= ARGV[5] and before[2]
    and now - tonumber(before[2]) < tonumber(ARGV[3]) * 1000 then
  shared = 1
end
redis.call('HSET', KEYS[2], 'payload', ARGV[2], 'at', now, 'ttl', ARGV[3], 'home', ARGV[5])
redis.call('PEXPIRE', KEYS[2], keep)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - keep)
redis.call('PEXPIRE', KEYS[1], keep)
return {now, shared}
"""

# Cross-host wakes (core/monitors/forwarding.py). KEYS: the target host's stream, then one mark
# per item. ARGV: the keep time (ms), then each item's JSON. An item whose mark is already set
# was forwarded before (a retry after a lost reply): it is not appended again.
FORWARD = """
local keep = tonumber(ARGV[1])
local added = 0
for i = 2, #KEYS do
  if redis.call('SET', KEYS[i], '1', 'NX', 'PX', keep) then
    redis.call('XADD', KEYS[1], '*', 'item', ARGV[i])
    added = added + 1
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], keep) end
return added
"""
INCOMING_BATCH = 500  # stream entries imported per round trip


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
        self._forward: Any = None
        self.commands = 0  # commands sent (the bench's figure); a script counts as one
        # The last publish replaced another home's snapshot under this host id (shared_id_note).
        self.shared = False
        # The hosts the last read left out, one line each ("HOST: why"): their snapshot was
        # not one this version can show (fleet_model.read_host).
        self.dropped: list[str] = []

    def _redis(self) -> redis.Redis:
        if self._client is None:
            from ackdeck.core.rooms.redis.room import client_for

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

    def publish(self, payload: str, home_id: str) -> float:
        """Store this host's snapshot, published from the home `home_id` names; returns the
        server time it was stamped with (s), and sets `shared`."""
        s = self.settings

        def call(r: redis.Redis) -> Any:
            if self._publish is None:
                self._publish = r.register_script(PUBLISH)
            keys = [locations.fleet_hosts_key(s.fleet), locations.fleet_host_key(s.fleet, s.host)]
            args = [s.host, payload, s.ttl, int(s.keep * 1000), home_id]
            return self._publish(keys=keys, args=args)

        self.commands += 1
        now, shared = self._call("publish", call)
        self.shared = bool(shared)
        return int(now) / 1000

    def shared_id_note(self) -> str:
        """What to tell the owner when `shared`."""
        s = self.settings
        return (
            f"host id {s.host} is published to fleet {s.url} by another home too (another "
            "user's or another ACKDECK_HOME on a machine of the same name): each replaces "
            "the other's rows; give each home its own --host-id or ACKDECK_HOST_ID"
        )

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
            pubs, dropped = [], []
            for h, f in zip(hosts, got, strict=True):
                if not f:
                    continue  # expired between the two round trips
                pub, why = fleet_model.read_host(h, f)
                if pub is not None:
                    pubs.append(pub)
                else:
                    dropped.append(f"{h}: {why}")
            self.dropped = dropped
            return sec + usec / 1e6, pubs

        return self._call("read", call)

    def send_wakes(self, host: str, items: list[WakeItem]) -> int:
        """Append `items` to `host`'s incoming wakes, each once ever (its mark); returns how
        many were new. FleetUnreachable when the script's reply did not come back: it may have
        run, and sending the same items again is safe."""
        from ackdeck.core.monitors.forwarding import item_key

        s = self.settings
        if not items:
            return 0

        def call(r: redis.Redis) -> Any:
            if self._forward is None:
                self._forward = r.register_script(FORWARD)
            keys = [locations.fleet_wakes_key(s.fleet, host)]
            keys += [locations.fleet_wake_sent_key(s.fleet, host, item_key(it)) for it in items]
            args = [int(s.keep * 1000), *(it.dumps() for it in items)]
            return self._forward(keys=keys, args=args)

        self.commands += 1
        return int(self._call("forward wakes", call))

    def incoming_wakes(self) -> list[tuple[str, bytes]]:
        """This host's incoming wakes, oldest first: (stream id, the item's JSON)."""
        key = locations.fleet_wakes_key(self.settings.fleet, self.settings.host)

        def call(r: redis.Redis) -> list[tuple[str, bytes]]:
            out: list[tuple[str, bytes]] = []
            start = "-"
            while True:
                got: Any = r.xrange(key, start, "+", count=INCOMING_BATCH)
                self.commands += 1
                out += [(sid.decode(), f.get(b"item", b"")) for sid, f in got]
                if len(got) < INCOMING_BATCH:
                    return out
                start = "(" + got[-1][0].decode()

        return self._call("read incoming wakes", call)

    def wakes_taken(self, origin: str, host: str, session: str, name: str) -> int | None:
        """The newest batch `host` confirmed importing into its record `name` of `session`
        from host id `origin` (this host's, or the one it had when it sent the batch; None:
        none confirmed)."""
        s = self.settings
        key = locations.fleet_wakes_taken_key(s.fleet, origin)
        self.commands += 1
        got = self._call(
            "read confirmed wakes", partial(_hget, key=key, field=_taken_field(host, session, name))
        )
        try:
            return None if got is None else int(got)
        except ValueError:
            return None  # not written by ackdeck: as if nothing was confirmed

    def settle_wakes(self, confirm: list[tuple[str, str, str, int]], ids: list[str]) -> None:
        """Confirm what this host's records hold ((run's host, session, record, newest batch)
        each) and remove the imported entries `ids` from its incoming wakes, in one
        transaction: a confirmation is never missing once its entries are gone."""
        s = self.settings
        stream = locations.fleet_wakes_key(s.fleet, s.host)
        keep = int(s.keep * 1000)

        def call(r: redis.Redis) -> Any:
            pipe = r.pipeline(transaction=True)
            for origin, session, name, batch in confirm:
                key = locations.fleet_wakes_taken_key(s.fleet, origin)
                pipe.hset(key, _taken_field(s.host, session, name), batch)
                pipe.pexpire(key, keep)
            if ids:
                pipe.xdel(stream, *ids)
            return pipe.execute()

        if confirm or ids:
            self.commands += 1
            self._call("confirm imported wakes", call)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _hget(r: redis.Redis, *, key: str, field: str) -> Any:
    return r.hget(key, field)


def _taken_field(host: str, session: str, name: str) -> str:
    """A record on `host` in the confirmations: `/` is in no name, so the three stay apart."""
    return f"{host}/{session}/{name}"


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


class Exchanged(Struct):
    """What one exchange of cross-host wakes did."""

    forwarded: int  # lines and notices sent to other hosts' sessions
    imported: int  # items taken in for this host's sessions
    unreadable: int  # incoming entries this version cannot read (deleted, not imported)
    # One line per session whose wakes this host's own state kept from going or coming in
    # (they wait in its record, or in the fleet, for the next exchange).
    held: list[str]


def exchange_wakes(
    link: FleetLink, home: Path, *, clock: Callable[[], float] = time.time
) -> Exchanged:
    """Forward this host's records for other hosts' sessions, then import what other hosts
    forwarded to this host's sessions and delete it from the fleet (FleetUnreachable when the
    fleet did not answer: what was not forwarded stays in its record, what was not deleted is
    skipped by the next import). Never on a turn's path: the publishers call it."""
    from ackdeck.core.base import faults
    from ackdeck.core.monitors import forwarding

    me = link.settings.host
    sent = 0
    held: list[str] = []
    for session in forwarding.outgoing(home):
        try:
            sent += forwarding.forward(
                home, session, me, link.send_wakes, link.wakes_taken, clock=clock
            )
        except FleetUnreachable:
            raise
        except (AckdeckError, OSError) as exc:
            # This host's own state (a lock that cannot be opened, a full disk): the record
            # waits, and every other session's still goes.
            held.append(f"wakes of session {session} not forwarded: {_why(exc)}")
    entries = [(sid, _wake_item(raw)) for sid, raw in link.incoming_wakes()]
    items = [it for _, it in entries if it is not None]
    took, confirm, failed = forwarding.import_items(home, items, clock=clock)
    held += [
        f"wakes for session {session} ({name}) not imported: {why}; they wait in the fleet"
        for (session, name), why in sorted(failed.items())
    ]
    # A kill here (tests/test_fleet_wakes.py) leaves the entries in the stream, imported and
    # not confirmed: the next import skips them by the records' batches, then confirms.
    faults.pause("fleet-imported")
    # Deleted: what was imported (or skipped as imported before) and what no version can
    # read; a record this host could not write keeps its entries for the next import.
    done = [sid for sid, it in entries if it is None or (it.session, it.record_name) not in failed]
    link.settle_wakes(confirm, done)
    return Exchanged(sent, took, len(entries) - len(items), held)


def _why(exc: AckdeckError | OSError) -> str:
    from ackdeck.core.base.text import os_error_line

    return os_error_line(exc) if isinstance(exc, OSError) else str(exc)


class WakeOwner(Struct):
    """Whom a run's wakes go to: `session` as the run keeps it (`NAME@HOST` for a session on
    another host), that `host` (None: this one), and a line to say (None: nothing to say)."""

    session: str
    host: str | None
    note: str | None = None


def wake_owner(home: Path, session: str, settings: FleetSettings | None, this: str) -> WakeOwner:
    """Resolve a run's `--session`: `NAME@HOST` names a session on HOST (this host: the local
    session NAME); a bare NAME with a fleet and no presence here is the session of the one
    host whose published agents hold it. A session of this host whose own name holds an `@`
    (it has presence here) stays that session. Without a fleet, another host's session is an
    error: nothing would ever deliver its wakes."""
    from ackdeck.core.base.names import check_name
    from ackdeck.core.errors import InvalidInput

    check_name(session)
    if locations.presence_log(home, session).exists():
        return WakeOwner(session, None)
    name, at, host = session.rpartition("@")
    if at and name and not host:
        raise InvalidInput(
            f"--session {session!r} ends with '@': name the session's host after it "
            "(NAME@HOST), or leave the '@' out for a session of this host"
        )
    if at and name:
        if host == this:
            return WakeOwner(check_name(name), None)
        if settings is None:
            raise InvalidInput(
                f"session {session!r} is on host {host!r}, not this host ({this!r}): waking "
                "a session on another host needs a fleet (--fleet URL, ACKDECK_FLEET or fleet "
                "in the config)"
            )
        from ackdeck.core.service.fleet.settings import host_id

        host_id(host, f"--session {session}")
        try:
            server_now, pubs = _read_once(settings)
        except FleetUnreachable:
            return WakeOwner(session, host)  # forwarded once the fleet answers
        found = next((p for p in pubs if p.host == host), None)
        if found is None:  # a typo would otherwise wait silently
            return WakeOwner(
                session,
                host,
                f"host {host!r} is not on fleet {settings.url} (yet): the wakes wait here "
                "until it publishes",
            )
        return WakeOwner(session, host, _gone_note(found, server_now, settings))
    if settings is None:
        return WakeOwner(session, None)
    try:
        server_now, pubs = _read_once(settings)
    except FleetUnreachable as exc:
        return WakeOwner(session, None, f"{exc}; session {session!r} taken as this host's")
    homes = [
        p
        for p in sorted(pubs, key=lambda p: p.host)
        if p.host != this and any(a.get("session") == session for a in p.rows.get("agents", []))
    ]
    live = [p for p in homes if fleet_model.live(p, server_now)]
    if len(homes) > 1 and len(live) == 1:
        homes = live  # the one live home of a name a gone host also had
    if len(homes) > 1:
        names = ", ".join(p.host for p in homes)
        raise InvalidInput(
            f"session {session!r} is on hosts {names}: name one, --session {session}@HOST"
        )
    if homes:
        found = homes[0]
        note = _gone_note(found, server_now, settings)
        return WakeOwner(f"{session}@{found.host}", found.host, note)
    return WakeOwner(session, None)


def _gone_note(pub: Published, server_now: float, settings: FleetSettings) -> str | None:
    """What to say of a run for a session of `pub`'s host: nothing while it is live; gone, its
    wakes wait on this host until it publishes again (a run would otherwise seem heard)."""
    from ackdeck.core.base.text import age_text

    if fleet_model.live(pub, server_now):
        return None
    age = age_text(max(0.0, server_now - pub.at))
    return (
        f"host {pub.host!r} is gone from fleet {settings.url} (last published {age} ago): "
        "the wakes wait here until it publishes again"
    )


def _read_once(settings: FleetSettings) -> tuple[float, list[Published]]:
    link = FleetLink(settings)
    try:
        return link.read()
    finally:
        link.close()


def _wake_item(raw: bytes) -> WakeItem | None:
    """An incoming entry as an item, or None when this version cannot take it in (another
    version's shape, or names no record may have)."""
    from ackdeck.core.base.names import check_name
    from ackdeck.core.errors import InvalidName, RecordError
    from ackdeck.core.monitors.results import WakeItem

    try:
        item = WakeItem.loads(raw)
        check_name(item.session)
        check_name(item.record_name, "process")
        check_name(item.run_id, "run id")
    except (RecordError, InvalidName, ValueError, UnicodeDecodeError):
        return None
    return item


def publish_home(
    link: FleetLink,
    home: Path,
    *,
    have: Mapping[str, list[dict[str, Any]]] | None = None,
    clock: Callable[[], float] = time.time,
) -> dict[str, list[dict[str, Any]]]:
    """Publish this host's snapshot; returns its rows (FleetUnreachable when it could not)."""
    rows = local_rows(home, have=have, clock=clock)
    link.publish(fleet_model.snapshot(link.settings.host, clock(), rows), home_id(home))
    return rows


def home_id(home: Path) -> str:
    """This home's id on the fleet (`fleet-home-id`, made at its first publish): what tells
    two homes publishing under one host id apart. Made whole or not at all (a link of a
    complete file), the first of two racing publishers' id kept."""
    import os
    import secrets

    from ackdeck.core.base import atomic
    from ackdeck.core.base.statefile import read_state

    path = locations.fleet_home_id(home)
    for _ in range(3):
        try:
            raw = read_state(path, 256)
        except CorruptState:
            raw = b""
        made = (raw or b"").decode("ascii", "replace").strip()
        if made.isalnum() and 16 <= len(made) <= 64:
            return made
        if raw is not None:
            # Damaged (empty, garbage, not a file): set aside, then made anew.
            os.replace(path, locations.corrupt_aside(path, time.time()))
        os.makedirs(home, mode=0o700, exist_ok=True)
        tmp = atomic.write_temp(path, [secrets.token_hex(16).encode()], mode=0o600, fsync=False)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another publisher made it first: read theirs
        finally:
            atomic.unlink_quietly(tmp)
    raise CorruptState(f"cannot make this home's fleet id at {path}")


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
        self._held: set[str] = set()  # the sessions' wakes held up at the last exchange, said
        self._shared = False  # another home's snapshot was replaced at the last publish, said
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
            # Wakes first, so the snapshot shows them forwarded (here) or imported (there).
            self._exchange()
            publish_home(self.link, self.home, have=None if have is None else _no_wakes(have))
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
        # Said when another home starts sharing this host id, not at every tick after.
        if self.link.shared and not self._shared and self._say is not None:
            self._say(f"warning: {self.link.shared_id_note()}")
        self._shared = self.link.shared
        return True

    def _exchange(self) -> None:
        """Forward and import cross-host wakes. A failure of this host's own (a damaged wake
        file, a full disk) is said and does not keep the host off the fleet: the snapshot
        is still published, and the exchange tried again at the next tick."""
        try:
            held = exchange_wakes(self.link, self.home).held
        except FleetUnreachable:
            raise
        except (AckdeckError, OSError) as exc:
            if self._say is not None:
                self._say(f"wakes not exchanged with fleet {self.link.settings.url}: {exc}")
            return
        # A session held up is said when it starts to be, not at every tick after.
        if self._say is not None:
            for line in held:
                if line not in self._held:
                    self._say(line)
        self._held = set(held)

    def run(self, stop: Callable[[float], bool]) -> None:
        """Tick until `stop(seconds)` (a threading.Event's wait) says to stop."""
        while True:
            self.tick()
            if stop(max(0.0, self._next - self._clock())):
                return


def _no_wakes(have: Mapping[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The caller's rows but its wakes, which the exchange may just have changed."""
    return {k: v for k, v in have.items() if k != "wakes"}


# ----- a listing over the fleet -------------------------------------------------------------
class FleetNote(Struct):
    """The `fleet` object of a listing: which fleet, as which host, whether it answered, and
    each host with its liveness and row counts."""

    url: str
    host: str  # this host's id
    reachable: bool
    # One line for the owner: the fleet could not be reached (this host only shown), or a
    # warning (another home publishes under this host id).
    note: str | None
    hosts: list[HostState]
    # Hosts whose rows were left out, one line each ("HOST: why"): their snapshot was not one
    # this version can show (a newer schema, NaN, nesting, a value out of its bounds).
    dropped: list[str] = []


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
    warn = f"warning: {link.shared_id_note()}" if link.shared else None
    found = FleetNote(s.url, s.host, True, warn, states, list(link.dropped))
    return FleetListing(_only(merged, hosts), found)


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
    found = FleetNote(s.url, s.host, True, None, states, list(link.dropped))
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
