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
    from typing import Any, TypeGuard

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


# Bounds of what another host may publish: a snapshot is input from another machine (or from
# anyone who can write to the fleet's Redis), so it is checked as it is read. No name, word,
# path or evidence ackdeck writes comes near MAX_TEXT characters; no row holds a list near
# MAX_ITEMS; times are epoch seconds and ages seconds, within TIME_BOUND (year 5138).
MAX_PAYLOAD = 256 << 20  # bytes of one host's snapshot (100,000 rows fit in a tenth)
MAX_TEXT = 4096
MAX_ITEMS = 10_000
TIME_BOUND = 1e11


def decode(host: str, fields: Mapping[bytes, bytes]) -> Published | None:
    """A host's hash (HGETALL), or None when it is not one this version can read (see
    `read_host`, which also says why)."""
    return read_host(host, fields)[0]


def read_host(host: str, fields: Mapping[bytes, bytes]) -> tuple[Published | None, str | None]:
    """A host's hash (HGETALL) as a Published, or None and why it was left out: a newer
    schema, or a snapshot that is not JSON this version accepts (NaN, nesting, a number out of
    range: core/base/jsonfields.py), a value of the wrong type or out of range, a string or a
    list past its bound. Such a host's rows are left out of every listing, and the listing
    names it; nothing of it is ever an error, or printed."""
    from ackdeck.core.base.jsonfields import parse

    raw = fields.get(b"payload", b"")
    if len(raw) > MAX_PAYLOAD:
        return None, f"its snapshot is {len(raw)} bytes, past {MAX_PAYLOAD}"
    try:
        payload = parse(raw)
        at = int(fields[b"at"]) / 1000
        ttl = float(fields[b"ttl"])
    except (KeyError, ValueError) as exc:  # parse and int/float give ValueError only
        return None, f"its snapshot is not one this version reads ({_short(exc)})"
    if not isinstance(payload, dict) or payload.get("v") != SCHEMA:
        version = payload.get("v") if isinstance(payload, dict) else None
        return None, f"its snapshot is of another schema ({_short(version)}, this reads {SCHEMA})"
    clock = payload.get("clock")
    if not _is_time(clock) or not _is_time(at) or not (_is_time(ttl) and ttl > 0):
        return None, "its snapshot's clock, time or TTL is not a time"
    rows: dict[str, list[dict[str, Any]]] = {}
    for kind in KINDS:
        listed = payload.get(kind, [])
        if not isinstance(listed, list):
            return None, f"its {kind} are not a list"
        kept = [r for r in listed if isinstance(r, dict)]
        for i, row in enumerate(kept):
            why = _bad_row(kind, row)
            if why is not None:
                return None, f"its {kind}[{i}] {why}"
        rows[kind] = kept
    return Published(host, at, float(clock), ttl, rows), None


def _is_time(v: object) -> TypeGuard[float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and -TIME_BOUND < v < TIME_BOUND


def _bad_row(kind: str, row: dict[str, Any]) -> str | None:
    """Why one published row cannot be shown (None: it can): its times and ages must be
    times (or absent, or null), every string and list within its bound, at any depth."""
    for key in TIMES[kind] + AGES[kind]:
        v = row.get(key)
        if v is not None and not _is_time(v):
            return f"{key} is not a time: {_short(v)}"
    # The flat fields inline (a listing of 100,000 rows reads each once), nested ones walked.
    if len(row) > MAX_ITEMS:
        return f"holds an object of {len(row)} keys, past {MAX_ITEMS}"
    for k, v in row.items():
        if len(k) > MAX_TEXT:
            return f"holds a key of {len(k)} characters, past {MAX_TEXT}"
        t = type(v)
        if t is str:
            if len(v) > MAX_TEXT:
                return f"holds a string of {len(v)} characters, past {MAX_TEXT}"
        elif t is list or t is dict:
            why = _bad_value(v)
            if why is not None:
                return why
    return None


def _bad_value(value: object) -> str | None:
    # Iterative: parse bounded the depth; the walk needs no stack of its own either way.
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if len(v) > MAX_TEXT:
                return f"holds a string of {len(v)} characters, past {MAX_TEXT}"
        elif isinstance(v, list | dict):
            if len(v) > MAX_ITEMS:
                return f"holds a list of {len(v)} items, past {MAX_ITEMS}"
            if isinstance(v, dict):
                stack.extend(v.keys())
                stack.extend(v.values())
            else:
                stack.extend(v)
    return None


def _short(value: object) -> str:
    """A value of a hostile snapshot as one short line: never its whole self."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
