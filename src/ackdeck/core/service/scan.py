"""The dashboard's scan, as the service's views: one look at every room (its counters from one
moment), and at the home's processes and wake records. Views do not write, except the one
explicit step a scan takes: dead supervisors are reported as lost first (`scan_home`).

Each room comes as a `RoomRef` (`core.service.refs.parse_room`), so the scan never asks which
backend it is; any failure becomes an error line instead of an exception (an unreachable redis
room is such a line until its server answers again). Not on the hot path: only the dashboard
scans.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ackdeck.core.base.home import resolve_home
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.text import counted
from ackdeck.core.errors import AckdeckError

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    from ackdeck.core.rooms.line_counts import LineCounts
    from ackdeck.core.rooms.results import RoomStatus
    from ackdeck.core.service.roomref import RoomRef


class RoomScan(Struct):
    """One room as the scan saw it: its counters, or why there are none."""

    status: RoomStatus | None
    error: str | None = None
    mtime: float | None = None  # when the file last changed (None: missing, or not a file)


class HomeScan(Struct):
    """The home's processes (the latest run of each name) and wake records (every session's),
    with one line per kind of damaged file skipped (kept on disk) or failed listing."""

    runs: list[Any]  # core.monitors.procs.RunInfo, as core.service.procs.Run wraps them
    wakes: list[Any]  # core.monitors.results.WakeRecord
    errors: list[str]


def consistent_status(ref: RoomRef, tries: int = 5, counts: LineCounts | None = None) -> RoomStatus:
    """The room's status from one moment: pending and acked totals taken around the same ack.

    An ack renames a new file over the room. A status that opened the file before that rename
    and read the ledger after it counts the acked lines twice (once pending, once acked), and
    the arrivals sparkline jumps. The room's identity is compared before and after: if an ack
    landed in between, read again (a few times; a room acked non-stop gets the last reading).
    A room without a file identity (redis: one server-side read) is read once. `counts`:
    the room's kept line counts (core/rooms/line_counts.py), for a caller that asks again and
    again (the dashboard's scanner): only bytes appended since its last look are read.
    """
    room = ref.open()
    try:
        for _ in range(tries - 1):
            before = ref.identity()
            st = room.status(counts)
            if ref.identity() == before:
                return st
        return room.status(counts)
    finally:
        room.close()


def scan_room(ref: RoomRef, label: str, counts: LineCounts | None = None) -> RoomScan:
    """Counters for one room (`label`: how the table names it, for an unreadable file;
    `counts`: see `consistent_status`)."""
    try:
        st = consistent_status(ref, counts=counts)
        return RoomScan(st, None, ref.modified())
    except AckdeckError as exc:
        return RoomScan(None, ref.shorten(str(exc)))
    except OSError as exc:
        return RoomScan(None, f"cannot read {label}: {exc.strerror or exc}")


def scan_home(home: str | os.PathLike[str] | Path) -> HomeScan:
    """The explicit step (dead supervisors become `lost`: the one write of a scan), then the
    latest run of each process and every wake record."""
    runs, errors = latest_runs(home)
    records, more = wake_records(home)
    return HomeScan(runs, records, errors + more)


def latest_runs(home: str | os.PathLike[str] | Path) -> tuple[list[Any], list[str]]:
    """(the latest run of each process, error lines), dead supervisors reported as lost
    first (the explicit step)."""
    from ackdeck.core.monitors import procs

    try:
        procs.reconcile(resolve_home(home))
        runs, skipped = procs.scan_runs(home, latest_only=True)
    except (AckdeckError, OSError) as exc:
        return [], [f"processes: {exc}"]
    return runs, skipped_note("run state", skipped)


def wake_records(home: str | os.PathLike[str] | Path) -> tuple[list[Any], list[str]]:
    """(every session's wake records, error lines); nothing is reconciled or merged."""
    from ackdeck.core.monitors import wakes

    try:
        records, skipped = wakes.scan_wakes(home)
    except (AckdeckError, OSError) as exc:
        return [], [f"wakes: {exc}"]
    return records, skipped_note("wake record", skipped)


def run_info(home: str | os.PathLike[str] | Path, name: str, run_id: str) -> Any | None:
    """One run (a RunInfo), or None when it is gone or half made (a full look settles it)."""
    from ackdeck.core.monitors import procs

    try:
        return procs.get_run(home, name, run_id)
    except (AckdeckError, OSError):
        return None


def skipped_note(what: str, paths: Sequence[Path]) -> list[str]:
    """One header note per kind: damaged files are skipped and kept, the rest is shown."""
    if not paths:
        return []
    names = ", ".join(f"{p.parent.name}/{p.name}" for p in paths[:3])
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return [f"skipped {counted(len(paths), f'damaged {what} file')}, kept on disk: {names}{more}"]
