"""`ackdeck inspect`: the state on disk explained to a person, for a room, a session or a run.

A query, never a repair: nothing here takes a lock, moves a malformed file aside or completes
an interrupted ack (the commands that use the state do that). Every file is read on its own,
so a damaged one is named with what is wrong with it and the rest is still explained; only a
target with no state at all is an error (InvalidInput: exit 1, one line).

The report is a plain dict (the `--json` shape); `render` turns it into the words people read.
The explanations (`explain_slots`, `receipt_words`, ...) are pure functions of the bytes and
records read, tested on their own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ackdeck.core.base import locations
from ackdeck.core.base.digest import sha256_hex
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.names import check_name, room_path
from ackdeck.core.base.statefile import read_state
from ackdeck.core.base.text import counted
from ackdeck.core.errors import AckdeckError, InvalidInput, RecordError
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file.prev_inodes import PREV_GRACE_S

Doc = dict[str, Any]

AUDIT_ENTRIES = 5  # the audit's last entries shown
_AUDIT_TAIL = 64 << 10  # bytes read from the end of audit.jsonl to find them


# ----- reading, never failing ------------------------------------------------------------
def _read(path: Path, damaged: list[Doc], limit: int | None = None) -> bytes | None:
    """The file's bytes; None when missing. A file that cannot be read is added to `damaged`
    (its path and why) and None returned."""
    try:
        return read_state(path, limit)
    except (AckdeckError, OSError) as exc:
        damaged.append({"file": str(path), "problem": _why(exc)})
        return None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc)
    # Core's messages end in advice for the commands ("it was skipped and left in place");
    # here the file is only being looked at.
    return text.split("; it was")[0]


def _json(path: Path, damaged: list[Doc], record: Any = None) -> Doc | None:
    """The JSON object in `path` (checked against `record`'s schema when given), or None:
    missing, or damaged (then named in `damaged`)."""
    raw = _read(path, damaged)
    if raw is None:
        return None
    try:
        doc = parse_json(raw)
        if not isinstance(doc, dict):
            raise ValueError(f"a JSON {type(doc).__name__}, not an object")
        if record is not None:
            record.from_dict(doc)
    except (ValueError, RecordError, AckdeckError) as exc:
        damaged.append({"file": str(path), "problem": f"not a valid {path.name}: {exc}"})
        return None
    return doc


def _names(directory: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []


# ----- the ledger's two slots --------------------------------------------------------------
def explain_slots(raw: bytes) -> Doc:
    """Which of the ledger's two slots is current and why, as `load_ledger` decides it: the
    slot with the highest sequence number whose checksum verifies."""
    slots: list[Doc] = []
    for i in (0, 1):
        chunk = raw[i * L.LEDGER_SLOT : (i + 1) * L.LEDGER_SLOT]
        h = L.slot_header(chunk)
        if h is None:
            blank = not chunk.strip(b"\0")
            slots.append(
                {
                    "slot": i,
                    "seq": None,
                    "valid": False,
                    "problem": "never written" if blank else "not a ledger slot (garbage)",
                }
            )
            continue
        seq, length, digest, offset = h
        body = chunk[offset : offset + length]
        if len(body) != length or sha256_hex(body).encode() != digest:
            slots.append(
                {
                    "slot": i,
                    "seq": seq,
                    "valid": False,
                    "problem": "checksum does not match (a torn or damaged write)",
                }
            )
            continue
        slots.append({"slot": i, "seq": seq, "valid": True, "problem": None, "_body": body})
    valid = sorted((s for s in slots if s["valid"]), key=lambda s: -s["seq"])
    current = valid[0] if valid else None
    if current is None:
        blank = all(s["problem"] == "never written" for s in slots)
        why = (
            "no slot was ever written (a kill before the first store): the room starts afresh"
            if blank
            else "no slot verifies: the ledger is damaged and commands on this room say so"
        )
    elif len(valid) == 2:
        other = valid[1]
        why = (
            f"slot {current['slot']} is current: both verify and its sequence number is the "
            f"higher ({current['seq']} > {other['seq']}); slot {other['slot']} holds the "
            "state before the last store, which is written over next"
        )
    else:
        other = next(s for s in slots if s is not current)
        why = (
            f"slot {current['slot']} (sequence {current['seq']}) is current: it is the only "
            f"one that verifies; slot {other['slot']}: {other['problem']}"
        )
    return {"slots": slots, "current": None if current is None else current["slot"], "why": why}


def _ledger(side: Path, damaged: list[Doc]) -> tuple[Doc | None, L.Ledger | None]:
    path = locations.ledger(side)
    raw = _read(path, damaged, 2 * L.LEDGER_SLOT)
    if raw is None:
        return None, None
    doc = explain_slots(raw)
    state = None
    bodies = {s["slot"]: s.pop("_body", None) for s in doc["slots"]}
    if doc["current"] is not None:
        try:
            state = L.Ledger.loads(bodies[doc["current"]])
        except RecordError as exc:
            doc["why"] += f", but its content is not a ledger ({exc})"
    if doc["current"] is None or state is None:
        if any(s["problem"] != "never written" for s in doc["slots"]):
            damaged.append({"file": str(path), "problem": doc["why"]})
    else:
        # The current slot stands; a damaged other one is still named (a torn store).
        damaged += [
            {"file": str(path), "problem": f"slot {s['slot']}: {s['problem']}"}
            for s in doc["slots"]
            if not s["valid"] and s["problem"] != "never written"
        ]
    doc["file"] = str(path)
    doc["state"] = None if state is None else state.to_json()
    return doc, state


def ledger_words(state: L.Ledger, room_stat: os.stat_result | None) -> list[str]:
    out = [
        f"epoch {state.epoch}: offsets count from the start of this epoch; a rewrite of the "
        "room outside ackdeck begins a new one",
        f"base {state.base}: the room's first byte is offset {state.base} "
        f"({state.acked_total} lines acked, {state.preserved_total} kept by acks, "
        f"{state.dead_total} moved to the dead-letter room, {state.late_total} carried in late)",
    ]
    ident = state.identity
    if ident is None:
        out.append("identity: none yet (no operation has seen the room file)")
    else:
        same = room_stat is not None and (room_stat.st_dev, room_stat.st_ino) == (
            ident.dev,
            ident.ino,
        )
        now = (
            "the same file is there now"
            if same
            else "the room file there now is another one (the next operation sorts it out)"
            if room_stat is not None
            else "the room file is gone"
        )
        out.append(
            f"identity: inode {ident.ino} on device {ident.dev}, {ident.size} bytes when last "
            f"seen; {now}"
        )
    if state.last_ack_at is not None:
        out.append(f"last ack: {_when(state.last_ack_at)} by {state.last_ack_session}")
    if state.pending is not None:
        p = state.pending
        what = f"a move to the dead-letter room {p.dead}" if p.dead else f"an ack by {p.session}"
        out.append(
            f"interrupted: {what} renamed its new file in but did not commit (new base "
            f"{p.base}); the next operation on the room completes it"
        )
    return out


# ----- receipts ----------------------------------------------------------------------------
def receipt_words(doc: Doc, state: L.Ledger | None, now: float) -> str:
    """One receipt in words: what it covers, since when, acked or not, usable or not."""
    covers = (
        f"bytes {doc.get('start')}-{doc.get('end')} ({_lines(doc.get('lines'))}) of epoch "
        f"{doc.get('epoch')}"
    )
    since = _when(doc.get("read_at"), now)
    if doc.get("acked"):
        return f"read {covers} {since}; acked: kept only as where it stopped reading"
    tail = "not acked yet"
    if state is not None and doc.get("epoch") != state.epoch:
        tail += f"; from an older epoch (the room is in {state.epoch}): an ack would be refused"
    elif state is not None and isinstance(doc.get("end"), int) and doc["end"] <= state.base:
        tail += "; those lines already left the room (another ack)"
    return f"read {covers} {since}; {tail}"


def _receipts(side: Path, state: L.Ledger | None, now: float, damaged: list[Doc]) -> list[Doc]:
    out = []
    rdir = locations.receipts_dir(side)
    for name in _names(rdir):
        if not name.endswith(locations.RECEIPT_SUFFIX) or name.startswith("."):
            continue
        path = rdir / name
        raw = _read(path, damaged, 64 << 10)
        if raw is None:
            continue
        # The header is the file's first line, whatever follows it.
        try:
            doc = parse_json(raw.split(b"\n", 1)[0])
            if not isinstance(doc, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            damaged.append({"file": str(path), "problem": f"not a receipt: {exc}"})
            continue
        header = {
            k: doc.get(k) for k in ("session", "epoch", "start", "end", "lines", "read_at", "acked")
        }
        header["file"] = str(path)
        header["words"] = receipt_words(header, state, now)
        out.append(header)
    return out


# ----- old inodes --------------------------------------------------------------------------
def _prev(side: Path, state: L.Ledger | None, now: float) -> list[Doc]:
    listed = {} if state is None else {p.name: p for p in state.prev}
    out = []
    on_disk = {n for n in _names(side) if n.startswith(locations.PREV_PREFIX)}
    for name, p in listed.items():
        held = (
            f"; still held open by a process (seen {_when(p.held_at, now)}), so kept"
            if p.held_at is not None
            else ""
        )
        why = (
            f"inode {p.ino} replaced by an ack {_when(p.since, now)}; kept so writers that "
            f"opened the room before it still land: bytes past offset {p.offset} are carried "
            f"into the room, for {PREV_GRACE_S:g}s{held}"
        )
        if name not in on_disk:
            why += "; listed in the ledger but missing on disk"
        out.append(
            {
                "name": name,
                "ino": p.ino,
                "offset": p.offset,
                "since": p.since,
                "held_at": p.held_at,
                "on_disk": name in on_disk,
                "why": why,
            }
        )
    for name in sorted(on_disk - set(listed)):
        out.append(
            {
                "name": name,
                "ino": None,
                "offset": None,
                "since": None,
                "held_at": None,
                "on_disk": True,
                "why": "not listed in the ledger: a leftover of an interrupted ack",
            }
        )
    return out


def _audit(side: Path, damaged: list[Doc]) -> list[Doc]:
    path = locations.audit(side)
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - _AUDIT_TAIL))
            raw = f.read()
    except FileNotFoundError:
        return []
    except OSError as exc:
        damaged.append({"file": str(path), "problem": _why(exc)})
        return []
    lines = raw.split(b"\n")
    if len(raw) == _AUDIT_TAIL:
        lines = lines[1:]  # the first may be cut
    out: list[Doc] = []
    bad = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            doc = parse_json(line)
            if not isinstance(doc, dict):
                raise ValueError
            out.append(doc)
        except ValueError:
            bad += 1
    if bad:
        damaged.append(
            {"file": str(path), "problem": f"{counted(bad, 'unreadable line')} near its end"}
        )
    return out[-AUDIT_ENTRIES:]


def inspect_room(room: str, *, clock: Callable[[], float] = time.time) -> Doc:
    from ackdeck.core.rooms.policy import RoomPolicy
    from ackdeck.core.rooms.room_spec import is_url

    if is_url(room):
        raise InvalidInput(
            "inspect reads a file room's state on disk; a redis room keeps it on the server "
            "(`ackdeck room status --json`)"
        )
    now = clock()
    path = room_path(room)
    side = locations.sidecar(path)
    damaged: list[Doc] = []
    try:
        room_stat: os.stat_result | None = os.lstat(path)
    except OSError:
        room_stat = None
    if room_stat is None and not os.path.lexists(side):
        raise InvalidInput(f"no room at {path}: neither the file nor its state exists")
    ledger_doc, state = _ledger(side, damaged)
    before = len(damaged)
    policy = _json(locations.policy(side), damaged, RoomPolicy)
    policy_damaged = len(damaged) > before
    doc: Doc = {
        "kind": "room",
        "room": str(path),
        "sidecar": str(side),
        "room_exists": room_stat is not None,
        "ledger": ledger_doc,
        "ledger_words": [] if state is None else ledger_words(state, room_stat),
        "receipts": _receipts(side, state, now, damaged),
        "prev_inodes": _prev(side, state, now),
        "policy": policy,
        "policy_damaged": policy_damaged,
        "audit": _audit(side, damaged),
        "damaged": damaged,
    }
    return doc


# ----- a session ---------------------------------------------------------------------------
def inspect_session(home: Path, session: str, *, clock: Callable[[], float] = time.time) -> Doc:
    from ackdeck.core.monitors.wakes import WakeRecord

    check_name(session)
    now = clock()
    damaged: list[Doc] = []
    wakes = []
    wdir = locations.wake_session_dir(home, session)
    for name in _names(wdir):
        path = wdir / name
        if locations.CORRUPT_MARK in name:
            damaged.append({"file": str(path), "problem": "a malformed file moved aside"})
            continue
        if name.startswith("."):
            continue  # the locks, and the import marks (below)
        if not name.endswith(".json"):
            continue
        rec = _json(path, damaged, WakeRecord)
        if rec is None:
            continue
        notices = rec.get("notices") or []
        wakes.append(
            {
                "name": rec.get("name"),
                "kind": rec.get("kind"),
                "status": rec.get("status"),
                "run_id": rec.get("run_id"),
                "lines": len(rec.get("lines") or []),
                "pending_notices": len(notices),
                "updated_at": rec.get("updated_at"),
                "file": str(path),
                "words": f"{rec.get('kind')} wake, {_lines(len(rec.get('lines') or []))} waiting, "
                f"{counted(len(notices), 'notice')} pending, "
                f"updated {_when(rec.get('updated_at'), now)}",
            }
        )
    # The newest batch each record imported from another host took in, kept by a dismiss
    # (docs/how-to/fleet.md): a resend at or below it is skipped.
    marks = _json(locations.wake_import_marks(home, session), damaged) or {}
    imported = [
        {"name": k, "batch": v, "words": f"batches up to {v} taken in"}
        for k, v in sorted(marks.items())
        if isinstance(v, int)
    ]
    notices = []
    ndir = locations.notices_dir(home, session)
    for name in _names(ndir):
        if name.startswith(".") or not name.endswith(".json"):
            continue  # the locks, and malformed states moved aside (named below)
        door = name[: -len(".json")]
        st = _json(locations.notice_state(home, session, door), damaged)
        if st is not None:
            notices.append({"door": door, "file": str(ndir / name), "state": st})
    for name in _names(ndir):
        if locations.CORRUPT_MARK in name:
            damaged.append({"file": str(ndir / name), "problem": "a malformed state moved aside"})
    alerts = []
    adir = locations.alerts_dir(home, session)
    for name in _names(adir):
        if name.startswith(".") or not name.endswith(".json"):
            continue
        st = _json(adir / name, damaged)
        if st is not None:
            since = st.get("since")
            alerts.append(
                {
                    "room": name[: -len(".json")],
                    "since": since,
                    "file": str(adir / name),
                    "words": f"overdue {_when(since, now)}" if since else "not overdue",
                }
            )
    if not (wakes or notices or alerts or damaged) and not any(
        os.path.isdir(d) for d in (wdir, locations.notices_dir(home, session), adir)
    ):
        raise InvalidInput(f"no state for session {session!r} in {home}")
    return {
        "kind": "session",
        "session": session,
        "home": str(home),
        "wakes": wakes,
        "imported": imported,
        "notices": notices,
        "alerts": alerts,
        "damaged": damaged,
    }


# ----- a run -------------------------------------------------------------------------------
def find_run(home: Path, run_id: str) -> Path:
    """The run's directory, whatever its name. Not procs.find_run: that one needs a readable
    meta.json, and a run whose meta is damaged is exactly one a person wants to inspect."""
    check_name(run_id, "run id")
    for name in _names(locations.procs_dir(home)):
        try:
            rdir = locations.run_dir(home, name, run_id)
        except AckdeckError:
            continue
        if os.path.isdir(rdir):
            return rdir
    raise InvalidInput(f"unknown run id {run_id!r}: `ackdeck ps` lists every run")


def inspect_run(home: Path, run_id: str, *, clock: Callable[[], float] = time.time) -> Doc:
    from ackdeck.core.monitors.runs import MonitorsState, RunMeta, supervisor_alive
    from ackdeck.core.monitors.shown import ReadState, leases

    now = clock()
    rdir = find_run(home, run_id)
    damaged: list[Doc] = []
    meta = _json(locations.run_meta(rdir), damaged, RunMeta)
    monitors = _json(locations.run_monitors(rdir), damaged, MonitorsState)
    try:
        output_bytes: int | None = os.stat(locations.run_output(rdir)).st_size
    except OSError:
        output_bytes = None
    shown = []
    sdir = locations.shown_dir(rdir)
    for name in _names(sdir):
        if name.startswith(".") or not name.endswith(".json"):
            continue
        session = name[: -len(".json")]
        st = _json(sdir / name, damaged, ReadState)
        if st is None:
            continue
        shown.append(
            {
                "session": session,
                "file": str(sdir / name),
                "state": st,
                "reads_in_flight": len(leases(rdir, session)),
            }
        )
    alive = supervisor_alive(rdir)
    words = []
    if meta is not None:
        words.append(
            f"{meta.get('name')} {meta.get('status')}: pid {meta.get('pid')}, started "
            f"{_when(meta.get('started_at'), now)}, exit code {meta.get('exit_code')}"
        )
    words.append("its supervisor is alive" if alive else "no supervisor holds the run")
    if os.path.lexists(locations.kill_requested(rdir)):
        words.append("a kill was asked for")
    return {
        "kind": "run",
        "run_id": run_id,
        "dir": str(rdir),
        "meta": meta,
        "monitors": monitors,
        "output_bytes": output_bytes,
        "supervisor_alive": alive,
        "shown": shown,
        "words": words,
        "damaged": damaged,
    }


# ----- words -------------------------------------------------------------------------------
def _lines(n: object) -> str:
    return counted(n, "line") if isinstance(n, int) else f"{n} lines"


def _when(at: object, now: float | None = None) -> str:
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        return "at an unknown time"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    if now is None:
        return f"at {stamp}"
    ago = max(0, int(now - at))
    return f"at {stamp} ({ago}s ago)"


def render(doc: Doc) -> str:
    """The report as text for a person (made terminal-safe by the door that prints it)."""
    out: list[str] = []
    if doc["kind"] == "room":
        out.append(f"room {doc['room']}")
        out.append(f"  state in {doc['sidecar']}")
        if not doc["room_exists"]:
            out.append("  the room file does not exist (its state does)")
        led = doc["ledger"]
        out.append("ledger:")
        if led is None:
            out.append("  none yet: nothing was read or acked here")
        else:
            for s in led["slots"]:
                state = "verifies" if s["valid"] else s["problem"]
                seq = "" if s["seq"] is None else f" sequence {s['seq']},"
                out.append(f"  slot {s['slot']}:{seq} {state}")
            out.append(f"  {led['why']}")
            out += [f"  {w}" for w in doc["ledger_words"]]
        out.append("receipts:" if doc["receipts"] else "receipts: none")
        out += [f"  {r['session']}: {r['words']}" for r in doc["receipts"]]
        out.append("old inodes:" if doc["prev_inodes"] else "old inodes: none held")
        out += [f"  {p['name']}: {p['why']}" for p in doc["prev_inodes"]]
        pol = doc["policy"]
        if doc["policy_damaged"]:
            out.append("policy: damaged (below); commands on the room refuse it until set again")
        elif not pol or not any(v is not None for v in pol.values()):
            out.append("policy: none (no overdue alert, no dead-letter room)")
        else:
            out.append("policy: " + ", ".join(f"{k} {v}" for k, v in pol.items() if v is not None))
        out.append("audit (last entries):" if doc["audit"] else "audit: no ack yet")
        for a in doc["audit"]:
            out.append(
                f"  {_when(a.get('at'))} {a.get('session')} {a.get('mode')}: "
                f"{_lines(a.get('acked'))} removed, bytes {a.get('start')}-{a.get('end')} of epoch "
                f"{a.get('epoch')}"
            )
    elif doc["kind"] == "session":
        out.append(f"session {doc['session']} (home {doc['home']})")
        out.append("wakes:" if doc["wakes"] else "wakes: none waiting")
        out += [f"  {w['name']}: {w['words']}" for w in doc["wakes"]]
        if doc["imported"]:
            out.append("imported from other hosts (kept after a dismiss):")
            out += [f"  {m['name']}: {m['words']}" for m in doc["imported"]]
        out.append("notices:" if doc["notices"] else "notices: none told yet")
        for n in doc["notices"]:
            told = ", ".join(sorted(n["state"])) or "nothing"
            out.append(f"  {n['door']}: remembers {told}")
        out.append("alerts (rooms it owns):" if doc["alerts"] else "alerts: none")
        out += [f"  {a['room']}: {a['words']}" for a in doc["alerts"]]
    else:
        out.append(f"run {doc['run_id']} in {doc['dir']}")
        out += [f"  {w}" for w in doc["words"]]
        if doc["output_bytes"] is not None:
            out.append(f"  output: {doc['output_bytes']} bytes")
        mons = (doc["monitors"] or {}).get("monitors") or []
        models = (doc["meta"] or {}).get("monitors") or []
        out.append("monitors:" if mons else "monitors: none")
        for i, m in enumerate(mons):
            model = models[i] if i < len(models) else {}
            what = model.get("pattern") or model.get("name") or f"monitor {i}"
            counts = ", ".join(f"{k} {m[k]}" for k in ("matches", "events", "suppressed") if k in m)
            out.append(f"  {what}: {counts}")
        out.append("shown:" if doc["shown"] else "shown: nothing read yet")
        for s in doc["shown"]:
            st = s["state"]
            flight = (
                f", {counted(s['reads_in_flight'], 'read')} in flight"
                if s["reads_in_flight"]
                else ""
            )
            ranges = ", ".join(f"{a}-{b}" for a, b in st.get("shown") or []) or "nothing"
            end = "; saw the end" if st.get("saw_end") else ""
            out.append(
                f"  {s['session']}: shown bytes {ranges}, consumed to byte {st.get('cursor')} "
                f"in {counted(st.get('reads') or 0, 'read')}, last {_when(st.get('updated_at'))}"
                f"{end}{flight}"
            )
    if doc["damaged"]:
        out.append("damaged (left in place):")
        out += [f"  {d['file']}: {d['problem']}" for d in doc["damaged"]]
    return "\n".join(out) + "\n"
