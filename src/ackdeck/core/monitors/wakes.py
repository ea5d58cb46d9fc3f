"""Wake records: what a monitor has to tell its owner session, and the push-ack drain.

    wakes/SESSION/NAME.json   one WakeRecord per owner session and process name
    wakes/SESSION/.lock       flock for every read-modify-write of that session's records

A record gathers every run of NAME: each line carries the run that produced it, each run's exit
(or monitor-lost) notice is kept on its own, and a drain delivers one item per run, so reusing a
name never mixes runs and every run's exit is reported.

Records are validated (`WakeRecord.from_dict`, core/base/jsonfields.py) with unknown fields
ignored and replaced atomically under the lock. A file that fails to parse is skipped and
reported, never deleted: a merge that finds one renames it aside (`NAME.json.corrupt-…`) and
starts a fresh record, so neither is lost.

The drain is the room ack one level up: take a snapshot of the deliverable lines, settle (wait
for the owner's in-flight reads), gate each line against what the owner was shown in that run,
push the survivors, then ack exactly the snapshot. Lines merged meanwhile stay pending.
"""

from __future__ import annotations

import errno
import os
import time

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.home import made_home, make_dirs, resolve_home, wakes_dir
from ackdeck.core.base.locks import Held, locked
from ackdeck.core.base.names import check_name
from ackdeck.core.base.statefile import read_state
from ackdeck.core.errors import CorruptState, InvalidName, RecordError
from ackdeck.core.monitors.results import (
    MAX_LINES,
    Delivery,
    DrainResult,
    WakeLine,
    WakeNotice,
    WakeRecord,
)

# The values a drain returns and their text live in core/monitors/results.py (light to import);
# the wake store's callers keep their names here.
from ackdeck.core.monitors.results import format_wake_text as format_wake_text
from ackdeck.core.monitors.results import read_rest as read_rest
from ackdeck.core.monitors.runs import load_meta, run_dir

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:  # the monitor engine (RE2) is not needed to read or deliver wakes
    # Nor pathlib, collections.abc or contextlib to merge them (a run's supervisor: str paths;
    # the last two bring collections and functools).
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any

    from ackdeck.core.base.atomic import P
    from ackdeck.core.monitors.monitors import MatchedLine

    Clock = Callable[[], float]
    DeliverWakes = Callable[[DrainResult], bool]

KIND_RANK = {"match": 0, "exited": 1, "monitor-lost": 2}


# ----- storage -----------------------------------------------------------------------------
session_dir = locations.wake_session_dir
record_path = locations.wake_record


def session_locked(home: P, session: str) -> AbstractContextManager[P]:
    """`with session_locked(home, session) as d`: the session's directory `d` (made if
    missing), its lock held for the block."""
    return _SessionLocked(session_dir(home, session), locations.wake_lock(home, session))


class _SessionLocked:
    """session_locked's block (a class: contextlib is not imported, see the top)."""

    __slots__ = ("d", "held", "lock")

    def __init__(self, d: Path | str, lock: Path | str) -> None:
        self.d, self.lock = d, lock
        self.held: Held | None = None

    def __enter__(self) -> Any:
        # Path.mkdir(0o700, parents=True, exist_ok=True), on a str too
        os.makedirs(self.d, mode=0o700, exist_ok=True)
        held = locked(self.lock)
        held.__enter__()
        self.held = held
        return self.d

    def __exit__(self, *exc: object) -> None:
        held, self.held = self.held, None
        if held is not None:
            held.__exit__(None, None, None)


def record_or_new(path: P, now: float, *, session: str, name: str, **fields: Any) -> WakeRecord:
    """The wake record at `path` (its session's lock held), or a new empty one with `fields`
    when there is none. A damaged file is kept (renamed, still reported as skipped; a
    directory or FIFO in the record's place is renamed the same way) and a new one started."""
    try:
        return parse_record(path)
    except FileNotFoundError:
        pass
    except CorruptState:
        os.replace(path, locations.corrupt_aside(path, now))
    empty: dict[str, Any] = dict(
        kind="match", lines=[], dropped=0, filter=None, exclude=False, total_matches=0,
        status="running",
    )  # fmt: skip
    return WakeRecord(
        session=session, name=name, created_at=now, updated_at=now, **{**empty, **fields}
    )


def parse_record(path: Path | str) -> WakeRecord:
    """The record at `path`. CorruptState for a malformed file and (NotRegular) for a
    directory, FIFO or symlink in its place, which is never opened for reading."""
    raw = read_state(path)
    if raw is None:
        raise FileNotFoundError(errno.ENOENT, "no such wake record", str(path))
    try:
        rec = WakeRecord.loads(raw)
    except (RecordError, ValueError, UnicodeDecodeError):
        raise CorruptState(
            f"malformed wake file {path}; it was skipped and left in place"
        ) from None
    if rec.notice_pending and not rec.notices and rec.notice_run_id and rec.kind in KIND_RANK:
        # A record from before per-run notices: its one pending notice becomes a list entry.
        old = WakeNotice(
            run_id=rec.notice_run_id,
            kind=rec.kind,
            status=rec.notice_status or rec.status,
            exit_code=rec.notice_exit_code,
            seq=rec.notice_seq,
        )
        rec = rec.replace(notices=[old])
    return rec


def store_record(path: P, record: WakeRecord) -> None:
    atomic.atomic_write(path, record.dumps().encode(), fsync=False)


def scan_dir(d: P) -> tuple[list[tuple[P, WakeRecord]], list[P]]:
    """Parse every record file in a session dir: (records, malformed files kept on disk), named
    in the type of `d` (a str in a drain: see `drain`)."""
    good: list[tuple[P, WakeRecord]] = []
    bad: list[P] = []
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except FileNotFoundError:
        return good, bad
    for e in entries:
        if e.name.startswith("."):
            continue  # the locks
        path = atomic.child(d, e.name)
        if not e.name.endswith(".json"):
            if ".json.corrupt-" in e.name:
                bad.append(path)
            continue
        try:
            good.append((path, parse_record(path)))
        except FileNotFoundError:
            continue  # dismissed meanwhile
        except (CorruptState, OSError):
            # Malformed, or a directory / FIFO / symlink in a record's place: reported and
            # kept; every other record of the session is still delivered.
            bad.append(path)
    return good, bad


def scan_wakes(
    home: str | os.PathLike[str] | Path | None, session: str | None = None
) -> tuple[list[WakeRecord], list[Path]]:
    """Every record (of `session`, or all sessions) plus the malformed files that were skipped.
    A query: call `procs.reconcile` first to have a dead supervisor show up as monitor-lost."""
    h = resolve_home(home)
    if session is not None:
        dirs = [session_dir(h, session)]
    else:
        try:
            top = wakes_dir(h)
            dirs = sorted(atomic.child(top, e.name) for e in os.scandir(top) if e.is_dir())
        except FileNotFoundError:
            dirs = []
    records: list[WakeRecord] = []
    skipped: list[Path] = []
    for d in dirs:
        good, bad = scan_dir(d)
        records.extend(r for _, r in good)
        skipped.extend(bad)
    records.sort(key=lambda r: (r.session, r.name))
    return records, skipped


def list_wakes(
    home: str | os.PathLike[str] | Path | None, session: str | None = None
) -> list[WakeRecord]:
    """Records sorted by (session, name); malformed files are skipped (see scan_wakes)."""
    return scan_wakes(home, session)[0]


def merge(
    home: P,
    session: str,
    name: str,
    *,
    run_id: str,
    kind: str,
    lines: Sequence[MatchedLine] = (),
    filter: str | None,
    exclude: bool,
    matches: int = 0,
    status: str,
    exit_code: int | None = None,
    to_host: str | None = None,
    clock: Clock = time.time,
) -> WakeRecord:
    """Add matched lines and/or an exit / monitor-lost notice to the owner's record (`to_host`:
    the owner is a session on that host, to which the fleet forwards the record's items)."""
    now = clock()
    with session_locked(home, session):
        path = record_path(home, session, name)
        record = record_or_new(
            path,
            now,
            session=session,
            name=name,
            filter=filter,
            exclude=exclude,
            status=status,
            to_host=to_host,
            forwarded_total=None if to_host is None else 0,
        )
        have = {(x.run_id, x.start, x.end) for x in record.lines}
        new = [
            WakeLine(run_id=run_id, start=m.start, end=m.end, text=m.text)
            for m in lines
            if (run_id, m.start, m.end) not in have
        ]
        matches_by_run = dict(record.matches_by_run)
        if matches:
            matches_by_run[run_id] = matches_by_run.get(run_id, 0) + matches
        upd: dict[str, object] = {
            **capped(record, record.lines + new),
            "matches_by_run": matches_by_run,
            "total_matches": record.total_matches + matches,
            "status": status,
            "run_id": run_id,
            "event_exit_code": exit_code,
            "updated_at": now,
        }
        if new or matches:
            upd["filter"] = filter
            upd["exclude"] = exclude
        notices = list(record.notices)
        if kind != "match":
            seq = record.notice_seq + 1
            upd["notice_seq"] = seq
            notice = WakeNotice(
                run_id=run_id, kind=kind, status=status, exit_code=exit_code, seq=seq
            )
            # One notice per run: the stronger one stays (monitor-lost > exited), else the
            # newest replaces it. Other runs' notices are never touched.
            old = next((n for n in notices if n.run_id == run_id), None)
            if old is None:
                notices.append(notice)
            elif KIND_RANK[old.kind] <= KIND_RANK[kind]:
                notices[notices.index(old)] = notice
        upd.update(notice_fields(notices))
        record = record.replace(**upd)
        store_record(path, record)
        return record


def capped(record: WakeRecord, all_lines: list[WakeLine]) -> dict[str, object]:
    """The record's fields once it holds `all_lines`: the newest MAX_LINES kept, the older ones
    counted per run as dropped, with the byte span they lie in."""
    dropped = max(0, len(all_lines) - MAX_LINES)
    dropped_by_run = dict(record.dropped_by_run)
    spans = dict(record.dropped_span_by_run)
    for x in all_lines[:dropped]:
        dropped_by_run[x.run_id] = dropped_by_run.get(x.run_id, 0) + 1
        lo, hi = spans.get(x.run_id, (x.start, x.end))
        spans[x.run_id] = (min(lo, x.start), max(hi, x.end))
    return {
        "lines": all_lines[dropped:],
        "dropped": record.dropped + dropped,
        "dropped_by_run": dropped_by_run,
        "dropped_span_by_run": spans,
    }


def notice_fields(notices: list[WakeNotice]) -> dict[str, object]:
    """The record-level summary of its pending notices: the strongest kind names the record."""
    kind = max((n.kind for n in notices), key=KIND_RANK.__getitem__, default="match")
    # The single-slot fields older readers use: the newest notice of the strongest kind.
    top = max(notices, key=lambda n: (KIND_RANK[n.kind], n.seq), default=None)
    return {
        "notices": notices,
        "notice_pending": bool(notices),
        "kind": kind,
        "notice_run_id": top.run_id if top else None,
        "notice_status": top.status if top else None,
        "notice_exit_code": top.exit_code if top else None,
    }


def dismiss(home: str | os.PathLike[str] | Path | None, session: str, name: str) -> bool:
    """Remove the owner's record for `name`. False if there is none; a malformed one is kept."""
    h = resolve_home(home)
    with session_locked(h, session):
        path = record_path(h, session, name)
        try:
            # Refuses (CorruptState) rather than delete a file it cannot read.
            rec = parse_record(path)
        except FileNotFoundError:
            return False
        if rec.from_host is not None and rec.imported_batch is not None:
            # The run's host may not have seen this batch confirmed yet and send it again
            # (docs/how-to/fleet.md): the mark outlives the record, written before it goes.
            keep_import_mark(h, session, name, rec.imported_batch)
        os.unlink(path)
        return True


def import_marks(home: Path, session: str) -> dict[str, int]:
    """The newest batch taken in per imported record name of `session`, as kept by `dismiss`
    (the record's own `imported_batch` is the mark while it exists). A file that cannot be
    read as marks counts as none: at worst a batch resent after a dismiss is taken in again,
    which is what happened before marks were kept."""
    from ackdeck.core.base.jsonfields import parse

    try:
        raw = read_state(locations.wake_import_marks(home, session))
        data = parse(raw) if raw is not None else {}
    except (CorruptState, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool)}


def keep_import_mark(home: Path, session: str, name: str, batch: int) -> None:
    """Remember that record `name` of `session` took in batches up to `batch`. Under the
    session's lock (the caller's)."""
    from ackdeck.core.base.jsontext import dumps

    marks = import_marks(home, session)
    if marks.get(name, 0) >= batch:
        return
    marks[name] = batch
    data = dumps(marks, sort_keys=True).encode()
    path = locations.wake_import_marks(home, session)
    if path.is_dir() and not path.is_symlink():
        # No file can replace a directory: it is kept aside, as a damaged record is, rather
        # than have every dismiss of an imported record refused.
        os.replace(path, locations.corrupt_aside(path, time.time()))
    atomic.atomic_write(path, data, fsync=False)


# ----- drain -----------------------------------------------------------------------------
def drain(
    home: str | os.PathLike[str] | Path | None,
    session: str,
    *,
    settle_timeout: float = 2.0,
    clock: Clock = time.time,
    deliver: DeliverWakes | None = None,
) -> DrainResult:
    """Deliver what `session` was not shown, then ack exactly that snapshot.

    With `deliver`, the result is handed to it before anything is acked; if it answers False
    (the reader did not get it: a closed pipe, a failed write) nothing is acked.

    Callers reconcile first (`core/monitors/reconcile.py`) so that a dead supervisor is delivered
    as a monitor-lost wake; this module stays below procs (procs -> tail -> wakes) without a cycle.

    Every file is named with the home as a string (made and checked as resolve_home does, and
    spelled as str(Path) spelled it), whatever `home` is: pathlib, with `re`, `enum` and
    `collections`, is not imported by a Stop hook that drains (issue 43). What it returns is
    what it returned with Paths (`skipped` is a list of Paths).
    """
    h = made_home(home)  # str(resolve_home(home))
    check_name(session)
    make_dirs(session_dir(h, session), 0o700)  # Path.mkdir(0o700, parents=True, exist_ok=True)
    # One drain per session at a time (a Stop hook and an MCP call may race): two concurrent
    # drains would push the same snapshot twice. Merges use the other lock and never wait here.
    with locked(locations.drain_lock(h, session)):
        return _drain(h, session, settle_timeout, clock, deliver)


def _drain(
    h: str, session: str, settle_timeout: float, clock: Clock, deliver: DeliverWakes | None
) -> DrainResult:
    with session_locked(h, session) as d:
        snapshot, bad = scan_dir(d)
    skipped = _as_paths(bad)
    # A record for a session on another host is forwarded there (core/monitors/forwarding.py),
    # never delivered here.
    snapshot = [(p, r) for p, r in snapshot if r.pending and r.to_host is None]
    if not snapshot:
        return DrainResult(
            delivered=[], superseded=0, pending=_pending_total(h, session), skipped=skipped
        )

    # The gate and the shown sets are imported only now: a drain that finds nothing pending
    # (a Stop hook on most turns) needs neither.
    from ackdeck.core.monitors import shown

    # Settle: let in-flight reads of the owner finish so what they return counts as shown.
    involved = {(r.name, x.run_id) for _, r in snapshot for x in r.lines}
    involved |= {(r.name, n.run_id) for _, r in snapshot for n in r.notices}
    shown.settle([run_dir(h, name, rid) for name, rid in sorted(involved)], session, settle_timeout)

    delivered: list[Delivery] = []
    superseded = 0
    superseded_of: dict[str, int] = {}
    for path, rec in snapshot:
        found, dropped = _decide(h, rec, session)
        delivered.extend(found)
        superseded += dropped
        superseded_of[path] = dropped
    if (
        deliver is not None
        and delivered
        and not deliver(
            DrainResult(delivered=delivered, superseded=superseded, pending=0, skipped=skipped)
        )
    ):
        # The reader never got it: ack nothing, everything stays pending for the next drain.
        return DrainResult(
            delivered=[], superseded=0, pending=_pending_total(h, session), skipped=skipped
        )

    # Ack exactly the snapshot: remove the lines and notices we decided on (delivered or
    # superseded); keep anything merged since.
    with session_locked(h, session) as d:
        now_records, _ = scan_dir(d)
        current_by_path = dict(now_records)
        for path, snap in snapshot:
            current = current_by_path.get(path)
            if current is None:
                continue  # dismissed or replaced meanwhile; nothing of ours left to ack
            decided = {(x.run_id, x.start, x.end) for x in snap.lines}
            remaining = [x for x in current.lines if (x.run_id, x.start, x.end) not in decided]
            acked = {(n.run_id, n.seq) for n in snap.notices}
            notices = [n for n in current.notices if (n.run_id, n.seq) not in acked]
            mine = [x for dl in delivered if dl.name == snap.name for x in dl.lines]
            dropped_left = _minus(current.dropped_by_run, snap.dropped_by_run)
            upd: dict[str, object] = {
                "lines": remaining,
                "delivered_total": current.delivered_total + len(mine),
                "superseded_total": current.superseded_total + superseded_of[path],
                "dropped_by_run": dropped_left,
                "dropped_span_by_run": {
                    k: v for k, v in current.dropped_span_by_run.items() if k in dropped_left
                },
                "updated_at": clock(),
                **notice_fields(notices),
            }
            current_by_path[path] = current.replace(**upd)
            store_record(path, current_by_path[path])
        pending = sum(r.pending for r in current_by_path.values() if r.to_host is None)
    return DrainResult(delivered=delivered, superseded=superseded, pending=pending, skipped=skipped)


def _minus(now: dict[str, int], taken: dict[str, int]) -> dict[str, int]:
    """Per-run counts left after a drain reported `taken` (counts merged meanwhile stay)."""
    out = {k: v - taken.get(k, 0) for k, v in now.items()}
    return {k: v for k, v in out.items() if v > 0}


def _decide(h: str, rec: WakeRecord, session: str) -> tuple[list[Delivery], int]:
    """One delivery per run of the record with something left to say; and how many lines the
    gate suppressed because the owner was already shown them."""
    from ackdeck.core.monitors import gate, shown

    by_run: dict[str, list[WakeLine]] = {}
    for x in rec.lines:
        by_run.setdefault(x.run_id, []).append(x)
    notices = {n.run_id: n for n in rec.notices}
    run_ids = sorted(set(by_run) | set(notices) | set(rec.dropped_by_run))
    out: list[Delivery] = []
    superseded = 0
    for rid in run_ids:  # run ids sort by start time
        lines = by_run.get(rid, [])
        seen = shown.shown_intervals(run_dir(h, rec.name, rid), session)
        split = gate.split_lines([(rid, x.start, x.end) for x in lines], {rid: seen})
        keep = [lines[i] for i in split.deliver]
        superseded += len(split.suppress)
        n = notices.get(rid)
        if n is not None and gate.exit_notice_suppressed(
            n.kind, _saw_end(h, rec.name, rid, session)
        ):
            n = None
        dropped = rec.dropped_by_run.get(rid, 0)
        span = rec.dropped_span_by_run.get(rid)
        if dropped and span is not None and gate.is_shown(seen, *span):
            superseded += dropped  # every dropped line lies inside what the owner was shown
            dropped = 0
        if not (keep or n is not None or dropped):
            continue
        status, code = (n.status, n.exit_code) if n is not None else run_status(h, rec, rid)
        out.append(
            Delivery(
                name=rec.name,
                run_id=rid,
                kind=n.kind if n is not None else "match",
                filter=rec.filter,
                exclude=rec.exclude,
                lines=keep,
                total_matches=rec.matches_by_run.get(rid, rec.total_matches),
                status=status,
                exit_code=code,
                dropped=dropped,
                host=rec.from_host,
            )
        )
    return out, superseded


def run_status(h: P, rec: WakeRecord, rid: str) -> tuple[str, int | None]:
    """The run's own current status and exit code (not those of whichever run merged last)."""
    try:
        meta = load_meta(run_dir(h, rec.name, rid))
    except (CorruptState, InvalidName):
        meta = None
    if meta is None:
        return rec.status, (rec.event_exit_code if rec.run_id == rid else None)
    return meta.status, meta.exit_code


def _saw_end(home: str, name: str, rid: str, session: str) -> bool | None:
    from ackdeck.core.monitors import shown

    state = shown.load_state(run_dir(home, name, rid), session)
    return None if state is None else state.saw_end


def _pending_total(home: str, session: str) -> int:
    good, _ = scan_dir(session_dir(home, session))
    return sum(r.pending for _, r in good if r.to_host is None)


def _as_paths(found: list[str]) -> list[Path]:
    """The malformed record files a drain skipped, as the Paths its result has always held
    (DrainResult.skipped: the doors show them, the MCP schema declares them). pathlib is
    imported only when there is one."""
    if not found:
        return []
    from pathlib import Path

    return [Path(p) for p in found]
