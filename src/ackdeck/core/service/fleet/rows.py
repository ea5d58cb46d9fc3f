"""Another host's runs and wake records, as the dashboard shows them (docs/how-to/fleet.md,
"The dashboard"): typed values read from the JSON rows that host published.

Not a RunInfo or a WakeRecord: those are this host's, made from its own files (a run's
directory, a wake's pending notices, which the published JSON does not carry and the dashboard
cannot act on from here). These hold what another host said about its rows, which host said
it, and whether that host still publishes (`live`: False means the row is its last known
state). Whatever a row holds, nothing of it is trusted to be of its type: a row this version
cannot read is left out, never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ackdeck.core.base.struct import Struct
from ackdeck.core.monitors.results import MonitorSpec

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


class RemoteRun(Struct):
    """A process of another host (its newest run, or a live one), as `ps` there shows it."""

    host: str
    live: bool  # its host publishes (False: gone, this is the last known state)
    name: str
    status: str
    exit_code: int | None
    session: str
    monitors: list[MonitorSpec]
    matches: int


class RemoteWake(Struct):
    """A wake record of another host, as `wakes list` there shows it."""

    host: str
    live: bool  # its host publishes (False: gone, this is the last known state)
    session: str
    name: str
    kind: str
    pending: int  # as that host computed it (its pending notices are not published)
    delivered_total: int
    superseded_total: int
    status: str


def remote_runs(rows: Iterable[Mapping[str, Any]], live: Mapping[str, bool]) -> list[RemoteRun]:
    """Rows of kind `runs` with their `host` (fleet_model.host_rows), `live`: host -> whether
    it publishes (a host not in it counts as gone)."""
    out = []
    for row in rows:
        names = _names(row, "host", "name", "session")
        status, matches = _text(row, "status"), _count(row, "matches")
        exit_code = row.get("exit_code")
        if names is None or status is None or matches is None:
            continue
        if exit_code is not None and _count(row, "exit_code", signed=True) is None:
            continue
        monitors = [m for m in map(_monitor, _list(row, "monitors")) if m is not None]
        host, name, session = names
        out.append(
            RemoteRun(
                host, live.get(host, False), name, status, exit_code, session, monitors, matches
            )
        )
    return out


def remote_wakes(rows: Iterable[Mapping[str, Any]], live: Mapping[str, bool]) -> list[RemoteWake]:
    """Rows of kind `wakes` with their `host`, as for remote_runs."""
    out = []
    for row in rows:
        names = _names(row, "host", "session", "name")
        kind, status = _text(row, "kind"), _text(row, "status")
        counts = [_count(row, k) for k in ("pending", "delivered_total", "superseded_total")]
        if names is None or kind is None or status is None or None in counts:
            continue
        host, session, name = names
        pending, delivered, superseded = (int(c or 0) for c in counts)
        out.append(
            RemoteWake(
                host,
                live.get(host, False),
                session,
                name,
                kind,
                pending,
                delivered,
                superseded,
                status,
            )
        )
    return out


def _names(row: Mapping[str, Any], *keys: str) -> tuple[str, ...] | None:
    """The values of `keys`, each a name as this host accepts one (they become row keys and
    cells), else None."""
    from ackdeck.core.base.names import check_name
    from ackdeck.core.errors import InvalidName

    out = []
    for key in keys:
        value = row.get(key)
        if not isinstance(value, str):
            return None
        try:
            check_name(value, key)
        except InvalidName:
            return None
        out.append(value)
    return tuple(out)


def _text(row: Mapping[str, Any], key: str) -> str | None:
    """A status or kind: a short printable word (a cell shows it as it is), else None."""
    value = row.get(key)
    ok = isinstance(value, str) and 0 < len(value) <= 32 and value.isprintable()
    return value if ok else None


def _count(row: Mapping[str, Any], key: str, *, signed: bool = False) -> int | None:
    value = row.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if signed or value >= 0 else None


def _list(row: Mapping[str, Any], key: str) -> list[Any]:
    value = row.get(key)
    return value if isinstance(value, list) else []


def _monitor(item: Any) -> MonitorSpec | None:
    if not isinstance(item, dict) or not isinstance(item.get("pattern"), str):
        return None
    return MonitorSpec(item["pattern"], item.get("exclude") is True)
