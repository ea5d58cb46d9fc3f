"""Wake records: what a monitor has to tell its owner session, and the push-ack drain.

    wakes/SESSION/NAME.json   one WakeRecord per owner session and process name
    wakes/SESSION/.lock       flock for every read-modify-write of that session's records

Records are pydantic-validated with unknown fields ignored and replaced atomically under the
lock. A file that fails to parse is skipped and reported, never deleted: a merge that finds one
renames it aside (`NAME.json.corrupt-…`) and starts a fresh record, so neither is lost.

The drain is the room ack one level up: take a snapshot of the deliverable lines, settle (wait
for the owner's in-flight reads), gate each line against what the owner was shown in that run,
push the survivors, then ack exactly the snapshot. Lines merged meanwhile stay pending.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from . import _atomic, gate, shown
from ._locks import locked
from .errors import CorruptState
from .home import resolve_home, wakes_dir
from .monitors import MatchedLine
from .names import check_name
from .runs import run_dir

Clock = Callable[[], float]
MAX_LINES = 50  # newest lines kept per record; older ones are counted in `dropped`
KIND_RANK = {"match": 0, "exited": 1, "monitor-lost": 2}


class WakeLine(BaseModel):
    model_config = ConfigDict(extra="ignore")
    run_id: str
    start: int
    end: int
    text: str


class WakeRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")
    session: str
    name: str
    kind: str  # "match" | "monitor-lost" | "exited"
    lines: list[WakeLine]
    dropped: int
    filter: str | None
    exclude: bool
    total_matches: int
    status: str
    created_at: float
    updated_at: float
    delivered_total: int = 0
    superseded_total: int = 0
    # Beyond the fixed API. The run and exit code of the latest event; whether an exit or
    # monitor-lost notice is pending, with the run it is about, and a sequence number so a
    # drain acks only the notice it delivered, not one merged while it was delivering.
    run_id: str | None = None
    exit_code: int | None = None
    notice_pending: bool = False
    notice_seq: int = 0
    notice_run_id: str | None = None
    notice_status: str | None = None
    notice_exit_code: int | None = None

    @property
    def pending(self) -> int:
        """Items waiting: each pending line, plus 1 for a pending exit / monitor-lost notice."""
        return len(self.lines) + (1 if self.notice_pending else 0)


@dataclass
class Delivery:
    name: str
    run_id: str
    kind: str
    filter: str | None
    exclude: bool
    lines: list[WakeLine]
    total_matches: int
    status: str = ""
    exit_code: int | None = None


@dataclass
class DrainResult:
    delivered: list[Delivery]
    superseded: int
    pending: int
    skipped: list[Path] = field(default_factory=list)


# ----- storage -----------------------------------------------------------------------------
def session_dir(home: Path, session: str) -> Path:
    return wakes_dir(home) / check_name(session)


def record_path(home: Path, session: str, name: str) -> Path:
    return session_dir(home, session) / f"{check_name(name, 'process')}.json"


@contextmanager
def _session_locked(home: Path, session: str) -> Iterator[Path]:
    d = session_dir(home, session)
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    with locked(d / ".lock"):
        yield d


def _parse(path: Path) -> WakeRecord:
    try:
        return WakeRecord.model_validate_json(path.read_bytes())
    except (ValidationError, ValueError, UnicodeDecodeError):
        raise CorruptState(
            f"malformed wake file {path}; it was skipped and left in place"
        ) from None


def _store(path: Path, record: WakeRecord) -> None:
    _atomic.atomic_write(path, record.model_dump_json().encode(), fsync=False)


def _scan_dir(d: Path) -> tuple[list[tuple[Path, WakeRecord]], list[Path]]:
    """Parse every record file in a session dir: (records, malformed files kept on disk)."""
    good: list[tuple[Path, WakeRecord]] = []
    bad: list[Path] = []
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except FileNotFoundError:
        return good, bad
    for e in entries:
        if e.name.startswith(".") or not e.is_file(follow_symlinks=False):
            continue
        path = Path(e.path)
        if not e.name.endswith(".json"):
            if ".json.corrupt-" in e.name:
                bad.append(path)
            continue
        try:
            good.append((path, _parse(path)))
        except (CorruptState, OSError):
            bad.append(path)
    return good, bad


def scan_wakes(
    home: str | os.PathLike[str] | Path | None, session: str | None = None
) -> tuple[list[WakeRecord], list[Path]]:
    """Every record (of `session`, or all sessions) plus the malformed files that were skipped."""
    from .procs import reconcile  # see drain

    h = resolve_home(home)
    reconcile(h)  # so a supervisor that died shows up as a monitor-lost record here too
    if session is not None:
        dirs = [session_dir(h, session)]
    else:
        try:
            dirs = sorted(Path(e.path) for e in os.scandir(wakes_dir(h)) if e.is_dir())
        except FileNotFoundError:
            dirs = []
    records: list[WakeRecord] = []
    skipped: list[Path] = []
    for d in dirs:
        good, bad = _scan_dir(d)
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
    home: Path,
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
    clock: Clock = time.time,
) -> WakeRecord:
    """Add matched lines and/or an exit / monitor-lost notice to the owner's record."""
    now = clock()
    with _session_locked(home, session):
        path = record_path(home, session, name)
        record: WakeRecord | None = None
        if path.exists():
            try:
                record = _parse(path)
            except CorruptState:
                # Keep the bad file (renamed, still reported as skipped) and start afresh.
                os.replace(path, path.with_name(f"{path.name}.corrupt-{int(now * 1000)}"))
        if record is None:
            record = WakeRecord(
                session=session,
                name=name,
                kind="match",
                lines=[],
                dropped=0,
                filter=filter,
                exclude=exclude,
                total_matches=0,
                status=status,
                created_at=now,
                updated_at=now,
            )
        have = {(x.run_id, x.start, x.end) for x in record.lines}
        new = [
            WakeLine(run_id=run_id, start=m.start, end=m.end, text=m.text)
            for m in lines
            if (run_id, m.start, m.end) not in have
        ]
        all_lines = record.lines + new
        dropped = max(0, len(all_lines) - MAX_LINES)
        upd: dict[str, object] = {
            "lines": all_lines[dropped:],
            "dropped": record.dropped + dropped,
            "total_matches": record.total_matches + matches,
            "status": status,
            "run_id": run_id,
            "exit_code": exit_code,
            "updated_at": now,
        }
        if new or matches:
            upd["filter"] = filter
            upd["exclude"] = exclude
        if kind != "match":
            upd.update(notice_pending=True, notice_seq=record.notice_seq + 1)
            # One notice slot per record: the stronger pending one stays (monitor-lost >
            # exited); otherwise the newest replaces it.
            if not (record.notice_pending and KIND_RANK[record.kind] > KIND_RANK[kind]):
                upd.update(
                    kind=kind,
                    notice_run_id=run_id,
                    notice_status=status,
                    notice_exit_code=exit_code,
                )
        elif not record.notice_pending:
            upd["kind"] = "match"
        record = record.model_copy(update=upd)
        _store(path, record)
        return record


def dismiss(home: str | os.PathLike[str] | Path | None, session: str, name: str) -> bool:
    """Remove the owner's record for `name`. False if there is none; a malformed one is kept."""
    h = resolve_home(home)
    with _session_locked(h, session):
        path = record_path(h, session, name)
        if not path.exists():
            return False
        _parse(path)  # refuses (CorruptState) rather than deleting a file it cannot read
        os.unlink(path)
        return True


# ----- drain -----------------------------------------------------------------------------
def drain(
    home: str | os.PathLike[str] | Path | None,
    session: str,
    *,
    settle_timeout: float = 2.0,
    clock: Clock = time.time,
) -> DrainResult:
    """Deliver what `session` was not shown, then ack exactly that snapshot."""
    from .procs import reconcile  # procs merges into this module; import late to avoid a cycle

    h = resolve_home(home)
    check_name(session)
    reconcile(h, clock=clock)  # a dead supervisor becomes a monitor-lost record first
    d = session_dir(h, session)
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    # One drain per session at a time (a Stop hook and an MCP call may race): two concurrent
    # drains would push the same snapshot twice. Merges use the other lock and never wait here.
    with locked(d / ".drain.lock"):
        return _drain(h, session, settle_timeout, clock)


def _drain(h: Path, session: str, settle_timeout: float, clock: Clock) -> DrainResult:
    with _session_locked(h, session) as d:
        snapshot, skipped = _scan_dir(d)
    snapshot = [(p, r) for p, r in snapshot if r.pending]
    if not snapshot:
        return DrainResult([], 0, _pending_total(h, session), skipped)

    # Settle: let in-flight reads of the owner finish so what they return counts as shown.
    involved = {(r.name, x.run_id) for _, r in snapshot for x in r.lines}
    involved |= {(r.name, r.notice_run_id) for _, r in snapshot if r.notice_run_id}
    shown.settle([run_dir(h, name, rid) for name, rid in sorted(involved)], session, settle_timeout)

    delivered: list[Delivery] = []
    superseded = 0
    decisions: list[tuple[Path, WakeRecord, list[WakeLine], list[WakeLine]]] = []
    for path, rec in snapshot:
        shown_by_run = {
            rid: shown.shown_intervals(run_dir(h, rec.name, rid), session)
            for rid in {x.run_id for x in rec.lines}
        }
        split = gate.split_lines([(x.run_id, x.start, x.end) for x in rec.lines], shown_by_run)
        keep = [rec.lines[i] for i in split.deliver]
        drop = [rec.lines[i] for i in split.suppress]
        superseded += len(drop)
        notice = rec.notice_pending and not gate.exit_notice_suppressed(
            rec.kind, _saw_end(h, rec, session)
        )
        if keep or notice:
            kind = rec.kind if notice else "match"
            rid = rec.notice_run_id if notice else None
            delivered.append(
                Delivery(
                    name=rec.name,
                    run_id=rid or (keep[-1].run_id if keep else rec.run_id or ""),
                    kind=kind,
                    filter=rec.filter,
                    exclude=rec.exclude,
                    lines=keep,
                    total_matches=rec.total_matches,
                    status=(rec.notice_status if notice else None) or rec.status,
                    exit_code=rec.notice_exit_code if notice else rec.exit_code,
                )
            )
        decisions.append((path, rec, keep, drop))

    # Ack exactly the snapshot: remove the lines we decided on; keep anything merged since.
    with _session_locked(h, session) as d:
        now_records, _ = _scan_dir(d)
        current_by_path = dict(now_records)
        for path, snap, keep, drop in decisions:
            current = current_by_path.get(path)
            if current is None:
                continue  # dismissed or replaced meanwhile; nothing of ours left to ack
            decided = {(x.run_id, x.start, x.end) for x in snap.lines}
            remaining = [x for x in current.lines if (x.run_id, x.start, x.end) not in decided]
            upd: dict[str, object] = {
                "lines": remaining,
                "delivered_total": current.delivered_total + len(keep),
                "superseded_total": current.superseded_total + len(drop),
                "updated_at": clock(),
            }
            if snap.notice_pending and current.notice_seq == snap.notice_seq:
                upd["notice_pending"] = False
            current_by_path[path] = current.model_copy(update=upd)
            _store(path, current_by_path[path])
        pending = sum(r.pending for r in current_by_path.values())
    return DrainResult(delivered, superseded, pending, skipped)


def _saw_end(home: Path, rec: WakeRecord, session: str) -> bool | None:
    rid = rec.notice_run_id or rec.run_id
    if not rid:
        return None
    state = shown.load_state(run_dir(home, rec.name, rid), session)
    return None if state is None else state.saw_end


def _pending_total(home: Path, session: str) -> int:
    good, _ = _scan_dir(session_dir(home, session))
    return sum(r.pending for _, r in good)


def format_wake_text(result: DrainResult) -> str:
    """The text a Stop hook or an MCP reply shows the agent."""
    if not result.delivered:
        return ""
    out = [f"ackdeck: {len(result.delivered)} process wake(s)"]
    for d in result.delivered:
        head = f"[{d.name} run {d.run_id}]"
        if d.kind == "monitor-lost":
            out.append(
                f"{head} monitor lost: the supervisor died; output after this point is not "
                "being watched (check `ackdeck output`)"
            )
        elif d.kind == "exited":
            code = "unknown" if d.exit_code is None else str(d.exit_code)
            out.append(f"{head} process {d.status or 'exited'} with exit code {code}")
        if d.lines:
            how = "not matching" if d.exclude else "matching"
            out.append(
                f"{head} {len(d.lines)} new line(s) {how} /{d.filter}/ "
                f"({d.total_matches} match(es) in total):"
            )
            out.extend(f"  {x.text}" for x in d.lines)
    if result.superseded:
        out.append(f"({result.superseded} line(s) already shown by a read were not repeated)")
    return "\n".join(out)
