"""The fleet's decisions, pure (docs/how-to/fleet.md): what a host publishes, whether a
published host is live, and its rows as this host shows them. The I/O is in fleet.py.

Clocks. Every host stamps its rows with its own clock, which may be minutes off. Its snapshot
carries that clock's reading at publish time (`clock`), and the server stamps the publish with
its own time (`at`, Redis TIME, inside the publishing script). A reader maps a remote time `t`
into the server's frame (`t + at - clock`) and from there into its own (`+ local - server`,
both read at listing time), so the ages it shows are right whatever each clock says. Liveness
uses server time only: a host is live while `server_now - at < ttl`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ackdeck.core.base.struct import Struct

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

SCHEMA = 1
KINDS = ("agents", "runs", "wakes")
# The fields of each kind's rows that are points in time (epoch seconds of the host's clock),
# and those that are ages as of the publish.
TIMES = {
    "agents": ("since", "last_read", "last_ack", "last_nudge", "last_seen"),
    "runs": ("started_at", "ended_at"),
    "wakes": (),
}
AGES = {"agents": ("oldest_unread_age",), "runs": (), "wakes": ()}


class Published(Struct):
    """One host's hash as the server holds it."""

    host: str
    at: float  # server time of its last publish (seconds)
    clock: float  # the host's own clock at that publish
    ttl: float  # the host's TTL: gone once server time passes at + ttl
    rows: dict[str, list[dict[str, Any]]]  # kind -> its rows (JSON objects)


class HostState(Struct):
    """A host of the fleet, as a listing shows it."""

    host: str
    live: bool  # published within its TTL (server time)
    age: float | None  # seconds since its last publish, server time (None: this host, unread)
    this: bool  # the host this listing ran on
    agents: int
    runs: int
    wakes: int


def snapshot(host: str, clock: float, rows: Mapping[str, list[dict[str, Any]]]) -> str:
    """What a host publishes: its rows of each kind and its clock's reading, as JSON."""
    return json.dumps(
        {"v": SCHEMA, "host": host, "clock": clock, **{k: rows.get(k, []) for k in KINDS}},
        separators=(",", ":"),
        ensure_ascii=False,
    )


def decode(host: str, fields: Mapping[bytes, bytes]) -> Published | None:
    """A host's hash (HGETALL), or None when it is not one this version can read (a newer
    schema, a damaged value): such a host is left out of the listing, never an error."""
    try:
        payload = json.loads(fields[b"payload"])
        at = int(fields[b"at"]) / 1000
        ttl = float(fields[b"ttl"])
        if not isinstance(payload, dict) or payload.get("v") != SCHEMA:
            return None
        clock = float(payload["clock"])
        rows = {k: [r for r in payload.get(k, []) if isinstance(r, dict)] for k in KINDS}
    except (KeyError, ValueError, TypeError):
        return None
    return Published(host, at, clock, ttl, rows)


def live(pub: Published, server_now: float) -> bool:
    return server_now - pub.at < pub.ttl


def host_rows(
    pub: Published, kind: str, server_now: float, local_now: float
) -> list[dict[str, Any]]:
    """A remote host's rows of `kind` in this host's clock frame, each with its `host`. An
    agent of a host that is gone is `gone` since that host's last publish: its last state would
    otherwise show frozen, as if it still held."""
    shift = (pub.at - pub.clock) + (local_now - server_now)
    elapsed = max(0.0, server_now - pub.at)
    is_live = live(pub, server_now)
    out = []
    for row in pub.rows.get(kind, []):
        r = dict(row)
        for key in TIMES[kind]:
            if isinstance(r.get(key), int | float):
                r[key] = r[key] + shift
        for key in AGES[kind]:
            if isinstance(r.get(key), int | float) and is_live:
                r[key] = r[key] + elapsed
        r["host"] = pub.host
        if kind == "agents" and not is_live:
            r["state"] = "gone"
            r["since"] = pub.at + (local_now - server_now)
            r["evidence"] = f"host {pub.host} stopped publishing to the fleet"
        out.append(r)
    return out


def host_state(pub: Published, server_now: float, *, this: bool = False) -> HostState:
    return HostState(
        pub.host,
        live(pub, server_now),
        max(0.0, server_now - pub.at),
        this,
        *(len(pub.rows.get(k, [])) for k in KINDS),
    )


def merged(
    local_host: str,
    local_rows: list[dict[str, Any]],
    remote: Iterable[Published],
    kind: str,
    server_now: float,
    local_now: float,
) -> list[dict[str, Any]]:
    """This host's rows (from disk, as fresh as they get) then every other host's, by host.
    A remote entry under this host's own id is this host's older publish: left out."""
    out = [{**r, "host": local_host} for r in local_rows]
    for pub in sorted(remote, key=lambda p: p.host):
        if pub.host != local_host:
            out += host_rows(pub, kind, server_now, local_now)
    return out
