"""Cross-host wakes (docs/how-to/fleet.md): a run on one host wakes a session on another.

On the run's host, the wake record of `--session NAME@HOST` is kept under the session
`NAME@HOST` with `to_host` set; no drain there delivers it. The fleet's publishers forward it
with the drain's push-ack shape: take a snapshot of its items (lines, exit / monitor-lost
notices, counts of lines the cap dropped), hand them to `send` (one script on the fleet's
Redis that appends each item to the target host's stream once, by a key per item), and only
when `send` returned remove exactly that snapshot from the record. A forward whose reply was
lost is sent again whole; the per-item keys make the second one add nothing.

On the session's host, the publishers import the stream's entries into its own wake records
(`NAME@HOST` under the session, `from_host` set), each record written once with the newest
stream id it took in (`imported_through`): a crash between that write and the stream delete
imports nothing twice, because the next import skips every entry at or below the mark. The
record is then drained like any other, off Redis, through the same gate.

Nothing here talks to Redis: `send` and the stream's entries come from core/service/fleet.py.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from ackdeck.core.base import locations
from ackdeck.core.base.locks import locked
from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import CorruptState
from ackdeck.core.watch import wakes
from ackdeck.core.watch.results import WakeLine, WakeNotice, WakeRecord

Clock = Callable[[], float]


class WakeItem(Struct, kw_only=True):
    """One item of a wake record on its way to the session's host, as the fleet's stream holds
    it (JSON): a matched line, an exit / monitor-lost notice, or the count of a run's lines the
    cap dropped (cumulative, `upto`, so that counting it twice cannot happen)."""

    origin: str  # the run's host
    session: str  # the owner session, on the target host
    name: str  # the process, on the run's host
    run_id: str
    what: str  # "line" | "notice" | "dropped"
    start: int = 0
    end: int = 0
    text: str = ""
    kind: str = "match"  # a notice's: "exited" | "monitor-lost"
    status: str = ""  # the run's status when it was forwarded
    exit_code: int | None = None
    seq: int = 0  # a notice's sequence number in the forwarding record
    upto: int = 0  # "dropped": the run's dropped lines forwarded so far, this one included
    filter: str | None = None
    exclude: bool = False
    matches: int = 0  # the run's matches so far

    def key(self) -> str:
        """What makes the item itself: the same line, notice or dropped count forwarded again
        (a retry after a lost reply) has the same key, and the fleet adds it once."""
        if self.what == "line":
            tail = f"{self.start}:{self.end}"
        elif self.what == "notice":
            tail = f"{self.kind}:{self.seq}"
        else:
            tail = str(self.upto)
        ident = "\0".join((self.origin, self.session, self.name, self.run_id, self.what, tail))
        return hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()[:32]

    @property
    def record_name(self) -> str:
        """The record it joins on the session's host: the process as `NAME@HOST`, so that a
        process of the same name there stays another record."""
        return f"{self.name}@{self.origin}"


Send = Callable[[str, list[WakeItem]], object]  # (target host, items); raises if not sent


# ----- the run's host: forward ---------------------------------------------------------------
def outgoing(home: Path) -> list[str]:
    """The sessions (`NAME@HOST`) with a record that has something to forward."""
    try:
        dirs = sorted(e.name for e in os.scandir(locations.wakes_dir(home)) if e.is_dir())
    except FileNotFoundError:
        return []
    out = []
    for d in dirs:
        good, _ = wakes.scan_dir(locations.wakes_dir(home) / d)
        if any(_to_forward(r) for _, r in good):
            out.append(d)
    return out


def _to_forward(r: WakeRecord) -> bool:
    return r.to_host is not None and bool(r.pending or r.dropped_by_run)


def items_of(origin: str, r: WakeRecord, status_of: Callable[[str], str]) -> list[WakeItem]:
    """Everything `r` has to forward, in order: lines, then dropped counts, then notices (so an
    exit notice never arrives before the lines of its run). `status_of(run_id)`: the run's
    status now."""
    assert r.to_host is not None
    target = r.session.removesuffix(f"@{r.to_host}")

    def item(run_id: str, what: str, **kw: object) -> WakeItem:
        return WakeItem(
            origin=origin,
            session=target,
            name=r.name,
            run_id=run_id,
            what=what,
            filter=r.filter,
            exclude=r.exclude,
            matches=r.matches_by_run.get(run_id, r.total_matches),
            **kw,  # type: ignore[arg-type]
        )

    out = [
        item(x.run_id, "line", start=x.start, end=x.end, text=x.text, status=status_of(x.run_id))
        for x in r.lines
    ]
    for rid, n in sorted(r.dropped_by_run.items()):
        out.append(item(rid, "dropped", upto=(r.forwarded_dropped or {}).get(rid, 0) + n))
    for note in r.notices:
        out.append(
            item(
                note.run_id,
                "notice",
                kind=note.kind,
                status=note.status,
                exit_code=note.exit_code,
                seq=note.seq,
            )
        )
    return out


def forward(home: Path, session: str, origin: str, send: Send, *, clock: Clock = time.time) -> int:
    """Forward what `session`'s records (`NAME@HOST`) hold to their host, then remove exactly
    what was sent; returns how many lines and notices went. If `send` raises (the fleet did
    not answer, or its reply was lost) nothing is removed and the next forward sends it again.

    Under the session's drain lock: two publishers of this host never forward one snapshot
    twice (the per-item keys would absorb it, but the counts would not)."""
    with locked(locations.drain_lock(home, session)):
        with wakes.session_locked(home, session) as d:
            good, _ = wakes.scan_dir(d)
        snapshot = [(p, r) for p, r in good if _to_forward(r)]
        sent = 0
        for path, rec in snapshot:
            assert rec.to_host is not None
            items = items_of(origin, rec, partial(_status, home, rec))
            send(rec.to_host, items)
            sent += len(rec.lines) + len(rec.notices)
            with wakes.session_locked(home, session):
                try:
                    current = wakes.parse_record(path)
                except (FileNotFoundError, CorruptState):
                    continue  # dismissed or damaged meanwhile: nothing of ours to remove
                wakes.store_record(path, forwarded(current, rec, clock()))
        return sent


def _status(home: Path, rec: WakeRecord, run_id: str) -> str:
    return wakes.run_status(home, rec, run_id)[0]


def forwarded(current: WakeRecord, snap: WakeRecord, now: float) -> WakeRecord:
    """`current` without what `snap` (taken earlier) forwarded; anything merged since stays."""
    done = {(x.run_id, x.start, x.end) for x in snap.lines}
    lines = [x for x in current.lines if (x.run_id, x.start, x.end) not in done]
    acked = {(n.run_id, n.seq) for n in snap.notices}
    notices = [n for n in current.notices if (n.run_id, n.seq) not in acked]
    dropped_left = {k: v - snap.dropped_by_run.get(k, 0) for k, v in current.dropped_by_run.items()}
    dropped_left = {k: v for k, v in dropped_left.items() if v > 0}
    sent_dropped = dict(current.forwarded_dropped or {})
    for k, v in snap.dropped_by_run.items():
        sent_dropped[k] = sent_dropped.get(k, 0) + v
    return current.replace(
        lines=lines,
        forwarded_total=(current.forwarded_total or 0) + len(snap.lines) + len(snap.notices),
        dropped_by_run=dropped_left,
        dropped_span_by_run={
            k: v for k, v in current.dropped_span_by_run.items() if k in dropped_left
        },
        forwarded_dropped=sent_dropped or None,
        updated_at=now,
        **wakes.notice_fields(notices),
    )


# ----- the session's host: import ------------------------------------------------------------
def stream_order(stream_id: str) -> tuple[int, int]:
    """A stream id (`MS-SEQ`) as a sortable pair."""
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


def import_items(
    home: Path, entries: Iterable[tuple[str, WakeItem]], *, clock: Clock = time.time
) -> int:
    """Import the stream's `entries` (stream id, item; in stream order) into this host's wake
    records, each record in one write that also records the newest id it took in; returns how
    many items were new. Entries at or below a record's mark are skipped: imported already."""
    groups: dict[tuple[str, str], list[tuple[str, WakeItem]]] = {}
    for sid, it in entries:
        groups.setdefault((it.session, it.record_name), []).append((sid, it))
    took = 0
    for (session, name), group in sorted(groups.items()):
        with wakes.session_locked(home, session):
            path = locations.wake_record(home, session, name)
            record: WakeRecord | None = None
            try:
                record = wakes.parse_record(path)
            except FileNotFoundError:
                pass
            except CorruptState:
                os.replace(path, locations.corrupt_aside(path, clock()))  # kept, as merge does
            now = clock()
            if record is None:
                record = WakeRecord(
                    session=session,
                    name=name,
                    kind="match",
                    lines=[],
                    dropped=0,
                    filter=None,
                    exclude=False,
                    total_matches=0,
                    status="running",
                    created_at=now,
                    updated_at=now,
                    from_host=group[0][1].origin,
                )
            mark = record.imported_through
            new = [
                (sid, it)
                for sid, it in group
                if mark is None or stream_order(sid) > stream_order(mark)
            ]
            if not new:
                continue
            record = absorbed(record, [it for _, it in new], now)
            record = record.replace(imported_through=max((s for s, _ in new), key=stream_order))
            wakes.store_record(path, record)
            took += len(new)
    return took


def absorbed(record: WakeRecord, items: list[WakeItem], now: float) -> WakeRecord:
    """`record` with `items` (from the run's host) merged in as the run's own merges would
    have: lines once each, one notice per run (the stronger kind stays), dropped counts by
    their cumulative `upto`, matches as the run's host counted them."""
    have = {(x.run_id, x.start, x.end) for x in record.lines}
    lines = list(record.lines)
    notices = list(record.notices)
    seq = record.notice_seq
    matches = dict(record.matches_by_run)
    took_dropped = dict(record.imported_dropped or {})
    extra_dropped: dict[str, int] = {}
    status = record.status
    flt, exclude = record.filter, record.exclude
    last_run = record.run_id
    exit_code = record.event_exit_code
    for it in items:
        matches[it.run_id] = max(matches.get(it.run_id, 0), it.matches)
        if it.filter is not None:
            flt, exclude = it.filter, it.exclude
        if it.status:
            status = it.status
        last_run = it.run_id
        if it.what == "line":
            if (it.run_id, it.start, it.end) not in have:
                have.add((it.run_id, it.start, it.end))
                lines.append(WakeLine(run_id=it.run_id, start=it.start, end=it.end, text=it.text))
        elif it.what == "dropped":
            more = it.upto - took_dropped.get(it.run_id, 0)
            if more > 0:
                took_dropped[it.run_id] = it.upto
                extra_dropped[it.run_id] = extra_dropped.get(it.run_id, 0) + more
        elif it.what == "notice" and it.kind in wakes.KIND_RANK and it.kind != "match":
            exit_code = it.exit_code
            seq += 1
            notice = WakeNotice(
                run_id=it.run_id, kind=it.kind, status=it.status, exit_code=it.exit_code, seq=seq
            )
            old = next((n for n in notices if n.run_id == it.run_id), None)
            if old is None:
                notices.append(notice)
            elif wakes.KIND_RANK[old.kind] <= wakes.KIND_RANK[it.kind]:
                notices[notices.index(old)] = notice
    # The lines the cap drops here are counted with the ones the run's host dropped.
    upd = wakes.capped(record, lines)
    dropped_by_run: dict[str, int] = dict(upd.pop("dropped_by_run"))  # type: ignore[call-overload]
    for k, v in extra_dropped.items():
        dropped_by_run[k] = dropped_by_run.get(k, 0) + v
    upd["dropped"] = int(upd["dropped"]) + sum(extra_dropped.values())  # type: ignore[call-overload]
    return record.replace(
        **upd,
        dropped_by_run=dropped_by_run,
        matches_by_run=matches,
        total_matches=sum(matches.values()),
        imported_dropped=took_dropped or None,
        notice_seq=seq,
        status=status,
        filter=flt,
        exclude=exclude,
        run_id=last_run,
        event_exit_code=exit_code,
        updated_at=now,
        **wakes.notice_fields(notices),
    )
