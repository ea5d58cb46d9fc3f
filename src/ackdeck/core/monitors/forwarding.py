"""Cross-host wakes (docs/how-to/fleet.md): a run on one host wakes a session on another.

On the run's host, the wake record of `--session NAME@HOST` is kept under the session
`NAME@HOST` with `to_host` set; no drain there delivers it. The fleet's publishers forward it:

1. Everything it holds (lines, exit / monitor-lost notices, counts of lines the cap dropped)
   becomes one numbered **batch**, moved out of the pending items into the record's
   `in_flight` in one atomic write, before anything is sent. Its number is above the record's
   last, above the newest the session's host confirmed for the record's name (a record made
   again after a dismiss, with a clock stepped back meanwhile) and not below the clock in ms.
2. The batch is sent (`send`: one script on the fleet's Redis that appends each item to the
   target host's stream once, by a mark per item), and sent again at every forward until the
   session's host confirms it imported it (`taken`). A reply lost, a crash after the write, a
   Redis that restarted without its data: the batch is still in the record and goes again.
3. Confirmed, it leaves the record (counted in `forwarded_total`) and the next batch can go.

On the session's host, the publishers import the stream's entries into its own wake records
(`NAME@HOST` under the session, `from_host` set), each record in one write that also keeps
the newest batch it took in (`imported_batch`): a batch that arrives again (sent again,
restored by a restarted Redis, left in the stream by a crash before the delete) is skipped.
A record the owner dismisses leaves that batch number behind (`wakes/SESSION/.imported.json`),
so a batch sent again after the dismiss is skipped and confirmed too.
Then they confirm what each record holds, and delete the entries. The record is drained like
any other, off Redis, through the same gate.

Nothing here talks to Redis: `send`, `taken` and the stream's entries come from
core/service/fleet/hosts.py.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from ackdeck.core.base import faults, locations
from ackdeck.core.base.locks import locked
from ackdeck.core.base.text import os_error_line
from ackdeck.core.errors import AckdeckError, CorruptState
from ackdeck.core.monitors import wakes
from ackdeck.core.monitors.results import WakeItem, WakeLine, WakeNotice, WakeRecord

Clock = Callable[[], float]
Send = Callable[[str, list[WakeItem]], object]  # (target host, items); raises if not sent
# (the run's host id the batch went under, target host, session there, record name there):
# the newest batch the target confirmed, or None.
Taken = Callable[[str, str, str, str], "int | None"]


def item_key(it: WakeItem) -> str:
    """What makes the item itself (its mark on the fleet): the same line, notice or dropped
    count sent again has the same key, and the fleet appends it once."""
    if it.what == "line":
        tail = f"{it.start}:{it.end}"
    elif it.what == "notice":
        tail = f"{it.kind}:{it.seq}"
    else:
        tail = str(it.upto)
    ident = "\0".join((it.origin, it.session, it.name, it.run_id, it.what, tail))
    return hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def target_session(r: WakeRecord) -> str:
    """The session on the target host of a record kept as `NAME@HOST`."""
    assert r.to_host is not None
    return r.session.removesuffix(f"@{r.to_host}")


# ----- the run's host: forward ---------------------------------------------------------------
def outgoing(home: Path) -> list[str]:
    """The sessions (`NAME@HOST`) with a record that has something to forward or on its way."""
    try:
        dirs = sorted(e.name for e in os.scandir(locations.wakes_dir(home)) if e.is_dir())
    except FileNotFoundError:
        return []
    out = []
    for d in dirs:
        good, _ = wakes.scan_dir(locations.wakes_dir(home) / d)
        if any(_to_forward(r) or r.in_flight for _, r in good):
            out.append(d)
    return out


def _to_forward(r: WakeRecord) -> bool:
    return r.to_host is not None and bool(r.pending or r.dropped_by_run)


def batch_of(
    origin: str,
    r: WakeRecord,
    status_of: Callable[[str], str],
    now: float,
    *,
    above: int | None = None,
) -> tuple[list[WakeItem], WakeRecord]:
    """Everything `r` has to forward as one batch, in order (lines, then dropped counts, then
    notices: an exit notice never arrives before its run's lines), and the record once they
    are on their way. `status_of(run_id)`: the run's status now. A batch number is above the
    last one, above `above` (the newest the other host confirmed) and not below the clock in
    ms: a record dismissed and made again never reuses one the other host has imported, even
    when the clock stepped back meanwhile."""
    batch = max((r.forward_batch or 0) + 1, (above or 0) + 1, int(now * 1000))
    target = target_session(r)

    def item(run_id: str, what: str, **kw: object) -> WakeItem:
        return WakeItem(
            origin=origin,
            session=target,
            name=r.name,
            batch=batch,
            run_id=run_id,
            what=what,
            filter=r.filter,
            exclude=r.exclude,
            matches=r.matches_by_run.get(run_id, r.total_matches),
            **kw,  # type: ignore[arg-type]
        )

    sent_dropped = dict(r.forwarded_dropped or {})
    out = [
        item(x.run_id, "line", start=x.start, end=x.end, text=x.text, status=status_of(x.run_id))
        for x in r.lines
    ]
    for rid, n in sorted(r.dropped_by_run.items()):
        sent_dropped[rid] = sent_dropped.get(rid, 0) + n
        out.append(item(rid, "dropped", upto=sent_dropped[rid]))
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
    after = r.replace(
        lines=[],
        dropped_by_run={},
        dropped_span_by_run={},
        forwarded_dropped=sent_dropped or None,
        in_flight=out,
        forward_batch=batch,
        on_the_way=len(r.lines) + len(r.notices),
        updated_at=now,
        **wakes.notice_fields([]),
    )
    return out, after


def confirmed(r: WakeRecord, now: float) -> WakeRecord:
    """`r` once the session's host confirmed its batch: counted as forwarded, and gone."""
    return r.replace(
        in_flight=None,
        on_the_way=None,
        forwarded_total=(r.forwarded_total or 0) + (r.on_the_way or 0),
        updated_at=now,
    )


def forward(
    home: Path,
    session: str,
    origin: str,
    send: Send,
    taken: Taken,
    *,
    clock: Clock = time.time,
) -> int:
    """One forward of `session`'s records (`NAME@HOST`): a batch on its way is dropped once
    its host confirmed it, else sent again; with none on its way, what is pending becomes the
    next batch and is sent. Returns how many lines and notices were sent now. If `send`
    raises, the batch stays in the record and the next forward sends it again.

    Under the session's drain lock: two publishers of this host never make two batches of one
    record at once."""
    with locked(locations.drain_lock(home, session)):
        with wakes.session_locked(home, session) as d:
            good, _ = wakes.scan_dir(d)
        return sum(
            _forward_one(home, session, origin, path, rec, send, taken, clock)
            for path, rec in good
            if rec.to_host is not None
        )


def _forward_one(
    home: Path,
    session: str,
    origin: str,
    path: Path,
    rec: WakeRecord,
    send: Send,
    taken: Taken,
    clock: Clock,
) -> int:
    host = rec.to_host
    assert host is not None
    above: int | None = None  # the newest batch the other host confirmed under this id
    if rec.in_flight:
        batch, sent_as = rec.in_flight[0].batch, rec.in_flight[0].origin
        # Confirmed under the id the batch went under, which is not this publisher's when the
        # host id changed since (or two publishers of this home disagree on it).
        got = taken(sent_as, host, target_session(rec), f"{rec.name}@{sent_as}")
        if got is None or got < batch:
            send(host, rec.in_flight)  # not confirmed (yet, or lost): again
            return 0
        now = _update(home, session, path, lambda r: confirmed(r, clock()))
        if now is None:
            return 0
        rec = now
        if sent_as == origin:
            above = got
    if not _to_forward(rec):
        return 0
    if above is None:
        # A record made again here numbers its batches from the clock, which may have stepped
        # back since the other host confirmed the last one of this name: asked, and above it.
        above = taken(origin, host, target_session(rec), f"{rec.name}@{origin}")
    items: list[WakeItem] = []

    def make(r: WakeRecord) -> WakeRecord:
        if r.in_flight or not _to_forward(r):
            return r
        made, after = batch_of(origin, r, partial(_status, home, r), clock(), above=above)
        items.extend(made)
        return after

    if _update(home, session, path, make) is None or not items:
        return 0
    # A kill here (tests/test_fleet_wakes.py) leaves the batch in the record, unsent: the
    # next forward sends it.
    faults.pause("fleet-batched")
    send(host, items)
    return sum(1 for it in items if it.what != "dropped")


def _status(home: Path, rec: WakeRecord, run_id: str) -> str:
    return wakes.run_status(home, rec, run_id)[0]


def _update(
    home: Path, session: str, path: Path, change: Callable[[WakeRecord], WakeRecord]
) -> WakeRecord | None:
    """Apply `change` to the record at `path` under its session's lock, in one atomic write;
    None when it was dismissed or damaged meanwhile."""
    with wakes.session_locked(home, session):
        try:
            current = wakes.parse_record(path)
        except (FileNotFoundError, CorruptState):
            return None
        after = change(current)
        if after is not current:
            wakes.store_record(path, after)
        return after


# ----- the session's host: import ------------------------------------------------------------
def import_items(
    home: Path, items: Iterable[WakeItem], *, clock: Clock = time.time
) -> tuple[int, list[tuple[str, str, str, int]], dict[tuple[str, str], str]]:
    """Import `items` (from the stream, in its order) into this host's wake records, each
    record in one write that also keeps the newest batch it took in; batches at or below it
    are skipped (imported already). Returns how many items were new; for every record an
    item was for: (run's host, session, record name, newest batch it holds) to confirm; and
    the (session, record name) this host could not write, with why: their entries must stay
    in the stream, and every other record is imported all the same."""
    groups: dict[tuple[str, str], list[WakeItem]] = {}
    for it in items:
        groups.setdefault((it.session, it.record_name), []).append(it)
    took = 0
    confirm: list[tuple[str, str, str, int]] = []
    held: dict[tuple[str, str], str] = {}
    for (session, name), group in sorted(groups.items()):
        try:
            new, mark = _import_one(home, session, name, group, clock)
        except (AckdeckError, OSError) as exc:
            # This host's own state (a file where the session's directory goes, a lock that
            # cannot be opened, a full disk): one session's fault holds up no other's wakes.
            held[(session, name)] = os_error_line(exc) if isinstance(exc, OSError) else str(exc)
            continue
        took += new
        if mark:
            confirm.append((group[0].origin, session, name, mark))
    return took, confirm, held


def _import_one(
    home: Path,
    session: str,
    name: str,
    group: list[WakeItem],
    clock: Clock,
) -> tuple[int, int]:
    """Import one record's items: how many were new, and the newest batch it holds (0: none)."""
    origin = group[0].origin
    with wakes.session_locked(home, session):
        path = locations.wake_record(home, session, name)
        now = clock()
        record = wakes.record_or_new(path, now, session=session, name=name, from_host=origin)
        # A dismissed record left its mark apart: a batch it took in is not taken again.
        kept = wakes.import_marks(home, session).get(name, 0)
        mark = max(record.imported_batch or 0, kept)
        new = [it for it in group if it.batch > mark]
        if new:
            record = absorbed(record, new, now)
            mark = max(it.batch for it in new)
            record = record.replace(imported_batch=mark)
            wakes.store_record(path, record)
        return len(new), mark


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
