"""A session's presence log read back: its events (the log and the gates' marks, in time
order), the timeline, the fold that rotates a long log into a carry, the sessions that have a
log, and the servers that died. core/presence/log.py writes the events; the fold of events
into facts is core/presence/model.py.

Apart from the writer so that a read, an ack or a hook, which record presence on every turn
but never read it, load none of this (tests/test_layering.py). A log is read through `_read`:
never through a symlink, never blocking on a FIFO, and bounded (READ_CAP) whatever its size,
so a damaged or sparse log costs no more than a full one.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.jsontext import dumps
from ackdeck.core.base.names import check_name
from ackdeck.core.errors import CorruptState
from ackdeck.core.hook_input import hook_fields

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from ackdeck.core.presence.model import Facts

TAIL = 64 << 10  # bytes of the rotated log read for a timeline
# Bytes of a log read at most: its head (a rotated log's carry comes first) and its tail. A log
# past LIMIT is folded at its next event, so only a log grown behind ackdeck's back (or a
# rotation that failed every time) reaches this; what lies between is not read.
READ_CAP = 16 << 16  # 1 MiB: sixteen times the writer's LIMIT (core/presence/log.py)


def rotate(home: Path, session: str, limit: int) -> None:
    """Fold the log into a carry and start a new log with it, under the presence lock, when it
    is still past `limit` bytes (the writer's LIMIT: a second writer that saw the same size
    finds the log already short and does nothing; appends wait on its shared side,
    `_append`, so none lands in the log being renamed away)."""
    from ackdeck.core.base.atomic import atomic_write
    from ackdeck.core.base.locks import locked
    from ackdeck.core.presence.model import fold

    path = locations.presence_log(home, session)
    try:
        with locked(locations.presence_lock(home, session)):
            if path.stat().st_size <= limit:
                return
            # The marks too: a carry replaces every event before it, marks included.
            facts = fold(session, _merged(parse(_read(path)), marks(home, session)))
            carry = {"t": round(time.time(), 3), "ev": "carry", "facts": facts.carry()}
            os.replace(path, locations.presence_log(home, session, old=True))
            line = dumps(carry, separators=(",", ":"), ensure_ascii=False) + "\n"
            # A writer that appended through the old name created a fresh log meanwhile:
            # keep its events after the carry.
            try:
                late = path.read_bytes()
            except FileNotFoundError:
                late = b""
            atomic_write(path, line.encode() + late, mode=0o600)
    except (OSError, CorruptState):  # NotRegular: a FIFO or a directory in the log's place
        return


def parse(raw: bytes) -> list[dict[str, Any]]:
    """The events of a log's bytes; a torn or foreign line is skipped.

    A whole log is parsed as one JSON array first (one call into the C decoder instead of
    one per line: `ackdeck agents` over 300 sessions was mostly this); only a log with a torn
    or foreign line is parsed line by line. Safe because a JSON writer (jsontext.dumps,
    json.dumps) never writes a raw newline inside a value."""
    body = raw.strip()
    if not body:
        return []
    try:
        whole = parse_json(b"[" + body.replace(b"\n", b",") + b"]")
    except ValueError:  # a torn or foreign line, NaN, nesting: line by line below
        whole = None
    if isinstance(whole, list) and all(isinstance(v, dict) for v in whole):
        return whole
    out: list[dict[str, Any]] = []
    for line in raw.split(b"\n"):
        if not line.startswith(b"{"):
            continue
        try:
            value = parse_json(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _read(path: Path, tail: int | None = None) -> bytes:
    """A log's bytes (its last `tail` only, when given): all of them up to READ_CAP, else its
    first and last READ_CAP / 2 (parse skips the line cut at the seam). OSError for a log
    that is missing, CorruptState (NotRegular) for one that is not a regular file (a FIFO, a
    directory, a symlink)."""
    from ackdeck.core.base.statefile import open_state

    fd = open_state(path)
    if fd is None:
        raise FileNotFoundError(path)
    try:
        size = os.fstat(fd).st_size
        if tail is not None:
            return os.pread(fd, min(size, tail), max(0, size - tail))
        if size <= READ_CAP:
            return os.pread(fd, size, 0)
        half = READ_CAP // 2
        return os.pread(fd, half, 0) + b"\n" + os.pread(fd, half, size - half)
    finally:
        os.close(fd)


# The turn events a gated hook records by the mtime of a mark file instead of a log line
# (core/hook_install.py `gate_command`: no Python starts for a turn with nothing to say), and the
# session's end (`presence_gate`: the SessionEnd hook), whose mark holds the hook's stdin
# JSON, read here as `hooks end` reads it.
MARKED = ("start", "prompt", "stop", "end")
_PAYLOAD_MARKS = frozenset({"end"})
# Bytes of a payload mark read at most (Claude Code's JSON is a few hundred bytes; a message
# longer than this is cut by notification_detail anyway).
MARK_CAP = 64 << 10
# How late a mark may really have been written after its mtime: a file's mtime comes from the
# kernel's coarse clock, up to a tick (1-10 ms) behind time.time(); a filesystem that keeps
# whole seconds (an mtime with no nanoseconds) keeps them truncated.
MARK_TICK_S = 0.01
# A log event's time is rounded to the millisecond (`record`): it may read this much earlier.
LOG_ROUND_S = 0.0005


def marks(home: Path, session: str) -> list[dict[str, Any]]:
    """The latest `start`, `prompt`, `stop` and `end` a gate marked, as events at their
    marks' mtimes (the gate truncates the mark, which stamps it with the time, without a
    fork; a start mark holds Claude Code's session id, an end mark the hook's stdin JSON).
    Only the latest of each is known: enough for the state, which follows the newest turn
    event. An end mark's time is placed within its clock's grain by `_merged`
    (`placed_end`)."""
    import stat

    out = []
    for kind in MARKED:
        path = locations.presence_mark(home, session, kind)
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        event: dict[str, Any] = {"t": st.st_mtime_ns / 1e9, "ev": kind, "marked": True}
        if kind == "start":  # a skipped start: a `startup`, and Claude Code's session id
            event["detail"] = "startup"
            cc = _mark_word(path)
            if cc:
                event["cc"] = cc
        elif kind in _PAYLOAD_MARKS:
            event.update(hook_fields(kind, _mark_payload(path)))
            if st.st_mtime_ns % 1_000_000_000 == 0:
                event["grain"] = 1.0  # whole seconds: written within the second after
        out.append(event)
    return out


def _mark_bytes(path: Path, cap: int) -> bytes | None:
    try:
        # Never blocking on a FIFO put in the mark's place, never through a symlink.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            return os.read(fd, cap)
        finally:
            os.close(fd)
    except OSError:
        return None


def _mark_payload(path: Path) -> dict[str, Any]:
    """The hook JSON an end mark holds; {} when it holds none (read by hand, cut,
    or caught while the gate writes it): the event then reads as the hook reads no input."""
    raw = _mark_bytes(path, MARK_CAP)
    try:
        value = parse_json(raw) if raw and raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _mark_word(path: Path) -> str | None:
    """The word a start mark holds (Claude Code's session id), read bounded; None if none."""
    raw = _mark_bytes(path, 128)
    if raw is None:
        return None
    word = raw.decode(errors="replace").strip()
    ok = word and len(word) <= 64 and all(c.isalnum() or c in "-_." for c in word)
    return word if ok else None


def events(home: Path, session: str) -> list[dict[str, Any]]:
    """The session's current log and its marks (`marks`), oldest first ([] when it has none
    or they cannot be read)."""
    try:
        logged = parse(_read(locations.presence_log(home, session)))
    except (OSError, CorruptState):
        logged = []
    return _merged(logged, marks(home, session))


def _merged(logged: list[dict[str, Any]], marked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log's events with the marks among them in time order (fold orders a log that is
    not, but a timeline reads this order). At an equal time a mark comes after the log's
    events: its clock is the coarse one, so it was written at or after that time. An end
    mark is placed by `placed_end`."""
    if not marked:
        return logged
    from ackdeck.core.presence.model import is_time

    def at(e: dict[str, Any]) -> float:
        return float(e["t"]) if is_time(e.get("t")) else 0.0

    keyed = [(at(e), 0, e) for e in logged]
    for e in marked:
        if e.get("ev") == "end":
            others = [x for x in logged + marked if x is not e]
            t, rank = placed_end(at(e), float(e.get("grain", MARK_TICK_S)), e.get("cc"), others)
            placed = {k: v for k, v in e.items() if k != "grain"}
            keyed.append((t, rank, {**placed, "t": t}))
        else:
            keyed.append((at(e), 1, e))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [e for _, _, e in keyed]


def placed_end(
    t: float, grain: float, cc: object, others: list[dict[str, Any]]
) -> tuple[float, int]:
    """Where an end mark with mtime `t` goes among the session's `others` events: its time
    and its rank among events at that time (-1 before them, 2 after every other).

    The mark was written within `grain` after `t` (a coarse clock, or whole seconds), so an
    event in that window may be before or after it. A `start` there that does not name the
    same Claude Code session (`cc`) is a restart: the end goes just before the first such
    start (an end older than a later start is not an end). Otherwise every event in the
    window belongs to the run that ended (SessionEnd is a run's last hook): the end goes
    after them. Pure (tests/test_hooks_session_end_gate.py)."""
    from ackdeck.core.presence.model import is_time

    lo, hi = t - LOG_ROUND_S, t + grain
    window = [e for e in others if is_time(e.get("t")) and lo <= e["t"] < hi]
    restarts = [
        float(e["t"]) for e in window if e.get("ev") == "start" and (not cc or e.get("cc") != cc)
    ]
    if restarts:
        return min(restarts), -1
    return max([t, *(float(e["t"]) for e in window)]), 2


def timeline(home: Path, session: str, limit: int = 50) -> list[dict[str, Any]]:
    """The session's last `limit` events, newest first, from the rotated log too when the
    current one is short; carries left out."""
    from ackdeck.core.presence.model import is_time

    evs = [e for e in events(home, session) if e.get("ev") != "carry"]
    if len(evs) < limit:
        old = locations.presence_log(home, session, old=True)
        try:
            older = parse(_read(old, tail=TAIL))
        except (OSError, CorruptState):
            older = []
        evs = [e for e in older if e.get("ev") != "carry"] + evs
    evs.sort(key=lambda e: e["t"] if is_time(e.get("t")) else 0.0)
    return list(reversed(evs[-limit:]))


def sessions(home: Path) -> list[str]:
    """Every session with a presence log, sorted."""
    return scan(home)[0]


def scan(home: Path) -> tuple[list[str], list[str]]:
    """Every session with a presence log, sorted, and one line for each other file in the
    presence folder that looks like a log but cannot be one (a name no session can have, a
    directory, a FIFO, a symlink): skipped and named, so one stray file never hides the
    others (`ackdeck agents`, the metrics)."""
    import stat

    from ackdeck.core.errors import InvalidName

    folder = locations.agents_dir(home)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return [], []
    out, strays = [], []
    for e in entries:
        n = e.name
        if n.startswith(".") or not n.endswith(".jsonl") or n.endswith(".1.jsonl"):
            continue
        session = n[: -len(".jsonl")]
        try:
            check_name(session)
            mode = e.stat(follow_symlinks=False).st_mode
        except InvalidName:
            strays.append(f"skipped {folder / n}: not a session's presence log (its name)")
            continue
        except OSError:
            continue  # removed meanwhile
        if not stat.S_ISREG(mode):
            strays.append(f"skipped {folder / n}: not a regular file; left in place")
            continue
        out.append(session)
    return sorted(out), sorted(strays)


def signature(home: Path) -> frozenset[tuple[str, int, int]]:
    """(name, size, mtime) of every presence log: changes whenever an event is appended."""
    out = set()
    try:
        entries = list(os.scandir(locations.agents_dir(home)))
    except OSError:
        return frozenset()
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        out.add((e.name, st.st_size, st.st_mtime_ns))
    return frozenset(out)


def load(home: Path, session: str) -> Facts:
    from ackdeck.core.presence.model import fold

    return fold(session, events(home, session))


def dead_servers(facts: Facts, host: str) -> list[str]:
    """The connected servers of `facts` on `host` (this one) whose pid is no longer running (a
    server on another host cannot be checked from here and counts as alive)."""
    dead = []
    for key in facts.servers:
        h, _, pid = key.rpartition(":")
        if h != host or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            dead.append(key)
        except PermissionError:
            pass  # running, as another user
    return dead
