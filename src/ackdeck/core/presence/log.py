"""A session's presence log: one JSON object per line, `{"t": …, "ev": KIND, …}`, appended by
every door that sees the session act (its hooks, its MCP server, its reads, acks and nudges)
and folded by core/presence/model.py.

Appends take no lock: each event is one O_APPEND write of well under PIPE_BUF, so concurrent
writers never interleave, and a hook pays one open and one write (the per-turn commands are
the hot path: `python -m bench startup`). When the log passes LIMIT bytes, the writer that
notices takes the session's presence lock, folds the log and starts a new one whose first
event carries the folded facts (`carry`); the old log is kept once as SESSION.1.jsonl for the
timeline. An event appended to the old log in that instant is folded into nothing: presence
is a hint, never what an ack removes.

Nothing here raises for an unwritable home or a damaged log: presence must never stop a read,
an ack or a hook (they record it after they took effect). `record` answers False instead. A
log is read through `_read`: never through a symlink, never blocking on a FIFO, and bounded
(READ_CAP) whatever its size, so a damaged or sparse log costs no more than a full one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ackdeck.core.base import locations
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.names import check_name
from ackdeck.core.errors import CorruptState

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ackdeck.core.presence.model import Facts

LIMIT = 64 << 10  # bytes of log before it is folded into a carry and rotated
TAIL = 64 << 10  # bytes of the rotated log read for a timeline
# Bytes of a log read at most: its head (a rotated log's carry comes first) and its tail. A log
# past LIMIT is folded at its next event, so only a log grown behind ackdeck's back (or a
# rotation that failed every time) reaches this; what lies between is not read.
READ_CAP = 16 * LIMIT


def this_host() -> str:
    return os.uname().nodename  # socket.gethostname() without importing socket


def record(home: Path, session: str, kind: str, *, at: float | None = None, **fields: Any) -> bool:
    """Append one event of `session`; False when it could not be written (reported nowhere:
    the operation that records it goes on)."""
    event = {"t": round(time.time() if at is None else at, 3), "ev": kind}
    event.update({k: v for k, v in fields.items() if v is not None})
    data = (json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    path = locations.presence_log(home, check_name(session))
    # O_NONBLOCK: a FIFO in the log's place fails the open (ENXIO) instead of blocking the
    # read or ack that records the event; on a regular file it changes nothing.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            os.makedirs(path.parent, mode=0o700, exist_ok=True)
            fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, data)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
    except OSError:
        return False
    if size > LIMIT:
        try:
            rotate(home, session)
        except Exception as exc:  # noqa: BLE001 - see below
            # The event is written and the read, ack or hook that recorded it took effect:
            # a fold that fails on a log damaged in a way nobody foresaw must not turn that
            # into an exit 1 with a traceback. Said once, on stderr; the log stays as it is,
            # and the next event tries again.
            import sys

            print(
                f"ackdeck: warning: presence log of {session} not folded: {exc!r:.200}",
                file=sys.stderr,
            )
    return True


def rotate(home: Path, session: str) -> None:
    """Fold the log into a carry and start a new log with it, under the presence lock (a second
    writer that saw the same size finds the log already short and does nothing)."""
    from ackdeck.core.base.atomic import atomic_write
    from ackdeck.core.base.locks import locked
    from ackdeck.core.presence.model import fold

    path = locations.presence_log(home, session)
    try:
        with locked(locations.presence_lock(home, session)):
            if path.stat().st_size <= LIMIT:
                return
            # The marks too: a carry replaces every event before it, marks included.
            facts = fold(session, _merged(parse(_read(path)), marks(home, session)))
            carry = {"t": round(time.time(), 3), "ev": "carry", "facts": facts.carry()}
            os.replace(path, locations.presence_log(home, session, old=True))
            line = json.dumps(carry, separators=(",", ":"), ensure_ascii=False) + "\n"
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
    or foreign line is parsed line by line. Safe because json.dumps never writes a raw
    newline inside a value."""
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
# (core/hooks.py `gate_command`: no Python starts for a turn with nothing to say).
MARKED = ("start", "prompt", "stop")


def marks(home: Path, session: str) -> list[dict[str, Any]]:
    """The latest `start`, `prompt` and `stop` a gated hook marked, as events at their marks'
    mtimes (the gate truncates the mark, which stamps it with the time, without a fork; a
    start mark holds Claude Code's session id). Only the latest of each is known: enough for
    the state, which follows the newest turn event."""
    import stat

    out = []
    for kind in MARKED:
        try:
            st = os.stat(locations.presence_mark(home, session, kind), follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        event: dict[str, Any] = {"t": st.st_mtime_ns / 1e9, "ev": kind, "marked": True}
        if kind == "start":  # a skipped start: a `startup`, and Claude Code's session id
            event["detail"] = "startup"
            cc = _mark_word(locations.presence_mark(home, session, kind))
            if cc:
                event["cc"] = cc
        out.append(event)
    return out


def _mark_word(path: Path) -> str | None:
    """The word a start mark holds (Claude Code's session id), read bounded; None if none."""
    try:
        # Never blocking on a FIFO put in the mark's place, never through a symlink.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            raw = os.read(fd, 128)
        finally:
            os.close(fd)
    except OSError:
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
    not, but a timeline reads this order)."""
    if not marked:
        return logged
    from ackdeck.core.presence.model import is_time

    return sorted(logged + marked, key=lambda e: e["t"] if is_time(e.get("t")) else 0.0)


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


def dead_servers(facts: Facts, host: str | None = None) -> list[str]:
    """The connected servers of `facts` on this host whose pid is no longer running (a server
    on another host cannot be checked from here and counts as alive)."""
    here = this_host() if host is None else host
    dead = []
    for key in facts.servers:
        h, _, pid = key.rpartition(":")
        if h != here or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            dead.append(key)
        except PermissionError:
            pass  # running, as another user
    return dead
