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
an ack or a hook (they record it after they took effect). `record` answers False instead.
What every door runs lives here: the one append an event costs, and how a hook's stdin JSON
becomes an event's fields. Reading a log back (its events, marks, timeline, the fold that
rotates it, the listing of sessions) is core/presence/history.py: a read, an ack or a hook
records presence but never reads it, so none of them loads that (tests/test_layering.py).
"""

from __future__ import annotations

import os
import time

from ackdeck.core.base import locations
from ackdeck.core.base.jsontext import dumps
from ackdeck.core.base.names import check_name

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

LIMIT = 64 << 10  # bytes of log before it is folded into a carry and rotated


def this_host() -> str:
    return os.uname().nodename  # socket.gethostname() without importing socket


def record(
    home: Path | str, session: str, kind: str, *, at: float | None = None, **fields: Any
) -> bool:
    """Append one event of `session`; False when it could not be written (reported nowhere:
    the operation that records it goes on). `home` as a plain string too: the hooks that only
    record their event run without pathlib (core/cli/_hook_events.py)."""
    event = {"t": round(time.time() if at is None else at, 3), "ev": kind}
    event.update({k: v for k, v in fields.items() if v is not None})
    line = dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n"
    # A lone surrogate (a hook's JSON may carry one, an argv path its undecodable bytes) has
    # no UTF-8: written as "?", never an exit 1 after the hook's work was done.
    data = line.encode("utf-8", "replace")
    home_str = os.fspath(home)
    path = locations.presence_log_str(home_str, check_name(session))
    try:
        size = _append(path, locations.presence_lock_str(home_str, session), data)
    except OSError:
        return False
    if size > LIMIT:
        try:
            from pathlib import Path

            from ackdeck.core.presence.history import rotate

            rotate(Path(home), session, LIMIT)
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


# How long an append waits for a fold of the log to finish. A fold takes milliseconds; only a
# lock holder that is stuck reaches this, and then the event is appended anyway: a hook or a
# read never hangs on presence (the fold that holds the lock may then miss that one event).
FOLD_WAIT_S = 10.0


def _append(path: str, lock: str, data: bytes) -> int:
    """Append `data` to the log at `path` under the shared side of the presence lock; the
    log's size after it. `rotate` takes the lock exclusively while it reads, folds and
    replaces the log, so an event is either in what the fold read or appended after the
    fold's new log is in place, never in the file being renamed away. flock here, not
    core/base/locks.locked: its open would block on a FIFO in the lock's place and follow a
    symlink, and a lock it cannot take in time is an error, where an event is written anyway."""
    import fcntl

    # O_NONBLOCK: a FIFO in the log's (or the lock's) place fails the open (ENXIO) instead of
    # blocking the read or ack that records the event; on a regular file it changes nothing.
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    lock_flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        lock_fd = os.open(lock, lock_flags, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        lock_fd = os.open(lock, lock_flags, 0o600)
    try:
        deadline = time.monotonic() + FOLD_WAIT_S
        while True:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break  # appended unlocked rather than never (FOLD_WAIT_S)
                time.sleep(0.002)
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, data)
            return os.fstat(fd).st_size
        finally:
            os.close(fd)
    finally:
        os.close(lock_fd)  # releases the flock
