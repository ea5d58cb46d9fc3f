"""One run of a monitored process on disk: layout, persisted schemas and liveness.

procs/NAME/RUN_ID/
    meta.json          RunMeta: argv, cwd, session, monitors, pid, status, exit code, times
    output.log         stdout+stderr, written by the child itself (survives the supervisor)
    monitors.json      MonitorsState: how far the monitors scanned, counts per monitor
    supervisor.lock    flock held by the live supervisor for its whole life
    kill_requested     present once `kill` asked the run to stop
    lock               flock for read-modify-write of meta.json
    reads/SESSION.*    per-session cursor, shown ranges and read leases (core/monitors/shown.py)
"""

from __future__ import annotations

import fcntl
import os
import time

from ackdeck.core.base import locations
from ackdeck.core.base.atomic import child, exists
from ackdeck.core.base.home import procs_dir
from ackdeck.core.base.statefile import load_record, store_record
from ackdeck.core.base.struct import Sparse, Struct
from ackdeck.core.errors import CorruptState

# No pathlib: a run's supervisor works on str paths (docs/performance.md, "Supervisor memory
# against 1.3x"), and so does a Stop hook's reconcile (its home is a str); every other caller
# passes Paths and gets Paths back (P: a str or a Path, kept as given).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ackdeck.core.base.atomic import P

STATUSES = ("running", "exited", "killed", "lost")
# A run whose supervisor has not taken its lock within this many seconds of being created is
# considered lost (the supervisor never came up).
STARTUP_GRACE = 30.0
# The supervisor runs with ackdeck's package root first on PYTHONPATH; the caller's own value
# (or UNSET_PYTHONPATH) travels in CHILD_PYTHONPATH and is restored for the command.
CHILD_PYTHONPATH = "ACKDECK_CHILD_PYTHONPATH"
UNSET_PYTHONPATH = "<ackdeck:unset>"  # env values cannot hold NUL


class MonitorModel(Struct, kw_only=True):
    pattern: str
    exclude: bool = False
    cooldown_ms: int = 1000
    max_events: int | None = None


class RunMeta(Struct, kw_only=True):
    name: str
    run_id: str
    argv: list[str]
    cwd: str
    session: str
    # The session's host when it is not this one (`--session NAME@HOST`): the wake record is
    # forwarded there through the fleet (core/monitors/forwarding.py).
    wake_host: Sparse[str | None] = None
    monitors: list[MonitorModel] = []
    pid: int | None = None
    supervisor_pid: int | None = None
    status: str = "running"
    exit_code: int | None = None
    created_at: float
    started_at: float
    ended_at: float | None = None
    lost_reason: str | None = None


class MonitorCounters(Struct, kw_only=True):
    matches: int = 0  # matched lines handed to the wake store (or suppressed there)
    events: int = 0  # flushes that carried at least one line
    suppressed: int = 0  # lines dropped at match time: the owner was shown them
    seen: int = 0  # matched lines so far, including ones still inside a cooldown
    # Lines of this monitor starting before it were already flushed.
    resume_offset: int = 0


class MonitorsState(Struct, kw_only=True):
    """What a replacement scan needs after a supervisor crash: every matched line that starts
    before `resume_offset` is already in the wake store (or was suppressed)."""

    resume_offset: int = 0
    scanned_to: int = 0
    monitors: list[MonitorCounters] = []
    done: bool = False


def new_run_id(now: float) -> str:
    """Sortable by start time, unique by a random suffix; a valid path component."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}{int(now * 1000) % 1000:03d}-{os.urandom(3).hex()}"


# The run's files, as core/base/locations.py names them (the names callers here know).
name_dir = locations.process_dir
run_dir = locations.run_dir
meta_path = locations.run_meta
output_path = locations.run_output
monitors_path = locations.run_monitors
lock_path = locations.run_lock
supervisor_lock_path = locations.supervisor_lock
kill_marker = locations.kill_requested


def load_meta(rdir: P) -> RunMeta | None:
    return load_record(meta_path(rdir), RunMeta)


def store_meta(rdir: P, meta: RunMeta) -> None:
    store_record(meta_path(rdir), meta)


def load_monitors_state(rdir: P) -> MonitorsState | None:
    try:
        return load_record(monitors_path(rdir), MonitorsState)
    except CorruptState:
        # Fail safe: without it a rescan starts at 0 and dedup in the wake store absorbs repeats.
        return None


def store_monitors_state(rdir: P, state: MonitorsState) -> None:
    store_record(monitors_path(rdir), state)


def supervisor_alive(rdir: P) -> bool:
    """True while some process holds the run's supervisor lock.

    The kernel releases an flock when its holder dies, so this cannot be fooled by pid reuse
    or by a zombie the way a `kill(pid, 0)` check can.
    """
    try:
        fd = os.open(supervisor_lock_path(rdir), os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(fd)  # releases the probe lock if we got it


def pid_alive(pid: int | None) -> bool:
    """Best effort for processes we cannot flock (children, readers): exists and not a zombie."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    # Field 3 (after the parenthesised command, which may itself hold spaces) is the state.
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state not in (b"Z", b"X")


def run_dirs(home: P, name: str | None = None) -> list[P]:
    """Every run directory (of `name`, or of all names) that has a meta.json. In the type of
    `home`: a Stop hook's reconcile gives a str (no pathlib on a turn)."""
    base = procs_dir(home)
    names = [name_dir(home, name)] if name is not None else _subdirs(base)
    out: list[P] = []
    for nd in names:
        out.extend(d for d in _subdirs(nd) if exists(meta_path(d)))
    return out


def unsupervised(home: P, name: str | None = None) -> list[P]:
    """Runs that say `running` but whose supervisor holds no lock: candidates for
    `procs.reconcile`. A query: it changes nothing, and it needs none of the monitor engine."""
    out: list[P] = []
    for rdir in run_dirs(home, name):
        try:
            meta = load_meta(rdir)
        except CorruptState:
            continue
        if meta is not None and meta.status == "running" and not supervisor_alive(rdir):
            out.append(rdir)
    return out


def _subdirs(path: P) -> list[P]:
    try:
        found = os.scandir(path)
        return sorted(child(path, e.name) for e in found if e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return []
