"""Per-(session, run) read state: cursor, exact shown byte ranges, and read leases.

    RUN_DIR/reads/SESSION.json          ReadState (cursor, shown intervals, saw_end)
    RUN_DIR/reads/SESSION.lock          flock serialising that session's reads of the run
    RUN_DIR/reads/SESSION.lease.PID.X   one per in-flight read; its reader holds an flock on it

A delivery settles before it gates: it waits, bounded, for the owner's in-flight reads so a line
that a read is about to return is counted as shown. A lease's flock is released by the kernel
when its reader dies, and a lease whose pid is gone is ignored, so a crashed reader never blocks.
"""

from __future__ import annotations

import fcntl
import os
import time

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.locks import Held, locked
from ackdeck.core.base.statefile import open_state, read_state
from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import CorruptState, RecordError
from ackdeck.core.monitors.gate import Intervals
from ackdeck.core.monitors.runs import pid_alive

# pathlib for type checkers only: a run's supervisor passes str paths, and so does a Stop
# hook's drain (its settle and gate: the leases and read states of the runs it delivers).
# collections.abc and contextlib too (they bring collections and functools into every
# supervisor): the read lock and the lease are classes.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from contextlib import AbstractContextManager
    from pathlib import Path

    from ackdeck.core.base.atomic import P

LEASE_MARK = locations.LEASE_MARK


class ReadState(Struct, kw_only=True):
    session: str
    run_id: str
    # Bytes of output.log this session has consumed (returned or filtered out).
    cursor: int = 0
    # Merged [start, end) ranges of returned lines.
    shown: list[tuple[int, int]] = []
    # A read returned the final status after consuming everything.
    saw_end: bool = False
    reads: int = 0
    updated_at: float = 0.0


def reads_dir(rdir: P) -> P:
    return locations.shown_dir(rdir)


def state_path(rdir: P, session: str) -> P:
    return locations.shown_state(rdir, session)


def read_lock_path(rdir: Path, session: str) -> Path:
    return locations.shown_lock(rdir, session)


def load_state(rdir: P, session: str) -> ReadState | None:
    """The session's read state; None if missing *or unreadable* (callers fail open)."""
    path = state_path(rdir, session)
    try:
        raw = read_state(path)  # a FIFO in its place must not block the read or the gate
        return None if raw is None else ReadState.loads(raw)
    except (OSError, CorruptState, RecordError, ValueError):
        return None


def state_is_corrupt(rdir: Path, session: str) -> bool:
    path = state_path(rdir, session)
    return os.path.lexists(path) and load_state(rdir, session) is None


def store_state(rdir: Path, state: ReadState) -> None:
    reads_dir(rdir).mkdir(mode=0o700, exist_ok=True)
    atomic.atomic_write(state_path(rdir, state.session), state.dumps().encode(), fsync=False)


def shown_intervals(rdir: P, session: str) -> Intervals | None:
    """What the gate needs: the shown ranges, or None (fail open) when there is no usable data."""
    state = load_state(rdir, session)
    return None if state is None else list(state.shown)


def session_lock(rdir: Path, session: str) -> AbstractContextManager[None]:
    """`with session_lock(rdir, session)`: the session's read lock on this run, held."""
    return _SessionLock(rdir, session)


class _SessionLock:
    __slots__ = ("held", "rdir", "session")

    def __init__(self, rdir: Path, session: str) -> None:
        self.rdir, self.session = rdir, session
        self.held: Held | None = None

    def __enter__(self) -> None:
        reads_dir(self.rdir).mkdir(mode=0o700, exist_ok=True)
        held = locked(read_lock_path(self.rdir, self.session))
        held.__enter__()
        self.held = held

    def __exit__(self, *exc: object) -> None:
        held, self.held = self.held, None
        if held is not None:
            held.__exit__(None, None, None)


def lease(rdir: Path, session: str) -> AbstractContextManager[Path]:
    """Mark a read by this process as in flight for (session, run) until the block ends."""
    return _Lease(rdir, session)


class _Lease:
    __slots__ = ("fd", "final", "rdir", "session", "tmp")

    def __init__(self, rdir: Path, session: str) -> None:
        self.rdir, self.session = rdir, session
        self.fd = -1
        self.final = self.tmp = rdir

    def __enter__(self) -> Path:
        d = reads_dir(self.rdir)
        d.mkdir(mode=0o700, exist_ok=True)
        tag = f"{os.getpid()}.{os.urandom(4).hex()}"
        final = locations.shown_lease(self.rdir, self.session, tag)
        tmp = locations.lease_temp(final)
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            # Lock before the lease becomes visible (rename), so a drain never sees it unlocked.
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, f"{os.getpid()}\n".encode())
            os.rename(tmp, final)
        except BaseException:
            atomic.unlink_quietly(tmp)
            os.close(fd)
            raise
        self.fd, self.final, self.tmp = fd, final, tmp
        return final

    def __exit__(self, *exc: object) -> None:
        try:
            # Unlink while still locked: a drain that then gets the lock sees the file gone.
            atomic.unlink_quietly(self.final)
        finally:
            atomic.unlink_quietly(self.tmp)
            os.close(self.fd)


def leases(rdir: P, session: str) -> list[P]:
    prefix = f"{session}{LEASE_MARK}"
    try:
        d = reads_dir(rdir)
        return [
            atomic.child(d, e.name)
            for e in os.scandir(d)
            if e.name.startswith(prefix) and _is_lease_tail(e.name[len(prefix) :])
        ]
    except FileNotFoundError:
        return []


def _is_lease_tail(tail: str) -> bool:
    """`PID.XXXXXXXX` exactly: session "a.lease.7" has files starting with "a.lease." too
    (a.lease.7.json, a.lease.7.lock), and they are not session "a"'s leases to remove."""
    pid, dot, token = tail.partition(".")
    return (
        bool(dot)
        and pid.isdigit()
        and pid.isascii()
        and len(token) == 8
        and all(c in "0123456789abcdef" for c in token)
    )


def lease_pid(path: Path | str) -> int | None:
    try:
        return int(os.path.basename(path).rsplit(".", 2)[-2])
    except (ValueError, IndexError):
        return None


def settle(run_dirs: Iterable[P], session: str, timeout: float) -> bool:
    """Wait (bounded) until `session` has no live in-flight read in any of `run_dirs`.

    Returns False if the timeout passed with a read still in flight. Leases of dead readers are
    ignored (and removed); no busy spin: each live lease is waited on with a blocking flock
    attempt in short slices.
    """
    deadline = time.monotonic() + max(0.0, timeout)
    for rdir in run_dirs:
        for path in leases(rdir, session):
            if not _wait_lease(path, deadline):
                return False
    return True


def _wait_lease(path: Path | str, deadline: float) -> bool:
    pid = lease_pid(path)
    if not pid_alive(pid):
        atomic.unlink_quietly(path)  # its reader is gone; nothing can still be shown through it
        return True
    try:
        fd = open_state(path)
    except CorruptState:
        return True  # not a lease ackdeck made (a FIFO there must not block the drain)
    if fd is None:
        return True
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.01)
        # Got the lock: the read finished (its file is unlinked) or its holder died.
        if atomic.exists(path) and not pid_alive(pid):
            atomic.unlink_quietly(path)
        return True
    finally:
        os.close(fd)
