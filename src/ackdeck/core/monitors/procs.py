"""Monitored processes: start under a detached supervisor, list, kill, and detect lost ones.

Each start of NAME is a new run (`procs/NAME/RUN_ID/`, see core/monitors/runs.py). `start` validates
everything it can (names, regexes, cwd, that the command exists) before anything is created, then
spawns the supervisor (core/monitors/supervisor.py, through `python -c SUPERVISOR_MAIN`), which
detaches, takes the run's supervisor lock, starts the command with stdout+stderr going straight
into `output.log`, and reports back over a pipe.

A name has at most one live run: a start while one lives is refused (it would be orphaned, out of
reach of `kill NAME`), or with `replace` stops it first. The check and the new run's creation
happen under the name's start lock, so two starts racing cannot both pass the check."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ackdeck.core.base import locations
from ackdeck.core.base.home import procs_dir, resolve_home, starts_dir
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.locks import locked
from ackdeck.core.base.names import check_name
from ackdeck.core.base.ranges import in_range
from ackdeck.core.base.statefile import read_state
from ackdeck.core.errors import CorruptState, InvalidInput, InvalidName, ProcessError
from ackdeck.core.monitors import holders
from ackdeck.core.monitors.monitors import compile_pattern
from ackdeck.core.monitors.results import MonitorSpec, RunInfo
from ackdeck.core.monitors.runs import (
    CHILD_PYTHONPATH,
    STARTUP_GRACE,
    UNSET_PYTHONPATH,
    MonitorModel,
    RunMeta,
    kill_marker,
    load_meta,
    lock_path,
    meta_path,
    new_run_id,
    output_path,
    pid_alive,
    run_dir,
    run_dirs,
    store_meta,
    supervisor_alive,
    unsupervised,
)
from ackdeck.core.monitors.tail import Tail, total_matches

Clock = Callable[[], float]
HomeArg = str | os.PathLike[str] | None
# The package root, so the supervisor imports this very `core` whatever the user's cwd holds.
_ROOT = str(Path(__file__).resolve().parent.parent)
HANDSHAKE_TIMEOUT = 30.0


def _info(meta: RunMeta, rdir: Path) -> RunInfo:
    return RunInfo(
        name=meta.name,
        run_id=meta.run_id,
        pid=meta.pid,
        status=meta.status,
        exit_code=meta.exit_code,
        started_at=meta.started_at,
        ended_at=meta.ended_at,
        argv=list(meta.argv),
        cwd=meta.cwd,
        session=meta.session,
        monitors=[
            MonitorSpec(m.pattern, m.exclude, m.cooldown_ms, m.max_events) for m in meta.monitors
        ],
        matches=total_matches(rdir),
        run_dir=rdir,
        wake_host=meta.wake_host,
    )


# ----- start -------------------------------------------------------------------------------
def _check_monitor(m: MonitorSpec) -> MonitorModel:
    compile_pattern(m.pattern)
    # A day of cooldown is already one wake a day; a count past a billion never ends a monitor.
    in_range(m.cooldown_ms, "cooldown", 0, 86_400_000, integer=True, unit="ms")
    if m.max_events is not None:
        in_range(m.max_events, "max-events", 1, 1_000_000_000, integer=True)
    return MonitorModel(
        pattern=m.pattern, exclude=m.exclude, cooldown_ms=m.cooldown_ms, max_events=m.max_events
    )


def _check_command(cmd: str, cwd: Path) -> None:
    if "\0" in cmd or cmd == "":
        raise ProcessError("cannot start an empty command")
    if "/" in cmd:
        path = cwd / cmd
        if not path.is_file():
            raise ProcessError(f"cannot start {cmd!r}: no such file")
        if not os.access(path, os.X_OK):
            raise ProcessError(f"cannot start {cmd!r}: permission denied (not executable)")
    elif shutil.which(cmd) is None:
        raise ProcessError(f"cannot start {cmd!r}: command not found in PATH")


def start(
    home: HomeArg,
    name: str,
    argv: list[str],
    *,
    session: str = "default",
    monitors: Sequence[MonitorSpec] = (),
    cwd: str | None = None,
    replace: bool = False,
    replace_own_only: bool = False,
    wake_host: str | None = None,
    clock: Clock = time.time,
) -> RunInfo:
    """Start `argv` as a new run of `name`; returns once the command is running.

    While a run of `name` is alive this refuses (ProcessError naming that run), unless
    `replace`: then the live runs are stopped first (TERM, KILL after REPLACE_GRACE seconds), and
    if one cannot be stopped nothing is started. With `replace_own_only`, only runs `session`
    started may be stopped so (the MCP door: an agent stops only what it started)."""
    check_name(name, "process")
    if "@" in name:
        # NAME@HOST names another host's process: the wake record a run of `build@alpha`
        # makes here would be the very file its session's records imported from alpha's
        # `build` are kept in (docs/how-to/fleet.md), and the two would pass for each other.
        raise InvalidName(
            f"invalid process name {name!r}: '@' is kept for NAME@HOST, another host's process"
        )
    check_name(session)
    if not argv:
        raise InvalidInput("no command given: use `ackdeck run NAME -- CMD ARG...`")
    models = [_check_monitor(m) for m in monitors]
    if any("\0" in arg for arg in argv):
        # exec cannot pass a NUL; refusing here keeps the run directory from ever existing.
        raise InvalidInput("a command argument contains a NUL byte")
    wd = Path(cwd if cwd is not None else os.getcwd()).absolute()
    if not wd.is_dir():
        why = "not a directory" if wd.exists() else "no such directory"
        raise ProcessError(f"cannot start in {wd}: {why}")
    _check_command(argv[0], wd)
    h = resolve_home(home)
    starts_dir(h).mkdir(mode=0o700, exist_ok=True)
    with locked(locations.start_lock(h, name)):
        _make_room_for(h, name, replace, session if replace_own_only else None, clock)
        return _start_run(h, name, argv, session, models, wd, clock, wake_host)


# Seconds between TERM and KILL when a start replaces a live run.
REPLACE_GRACE = 3.0


def _make_room_for(home: Path, name: str, replace: bool, owner: str | None, clock: Clock) -> None:
    live = live_runs(home, name, clock=clock)
    if live and not replace:
        r = live[-1]
        raise ProcessError(
            f"process {name!r} is still running as run {r.run_id} (pid {r.pid}, {r.status}); "
            "kill it first, or start again with replace (--replace) to stop it and start anew"
        )
    foreign = [r for r in live if owner is not None and r.session != owner]
    if foreign:
        r = foreign[-1]
        raise ProcessError(
            f"process {name!r} is running as run {r.run_id} of session {r.session!r}, not "
            f"{owner!r}; only its owner may replace it here"
        )
    for r in live:
        after = kill(home, name, grace=REPLACE_GRACE, run_id=r.run_id, clock=clock)
        if alive(after):
            raise ProcessError(
                f"could not stop run {r.run_id} of process {name!r} (pid {r.pid}); "
                "nothing was started"
            )


def _start_run(
    h: Path,
    name: str,
    argv: list[str],
    session: str,
    models: list[MonitorModel],
    wd: Path,
    clock: Clock,
    wake_host: str | None = None,
) -> RunInfo:
    now = clock()
    run_id = new_run_id(now)
    rdir = run_dir(h, name, run_id)
    rdir.mkdir(mode=0o700, parents=True)
    output_path(rdir).touch(mode=0o600)
    store_meta(
        rdir,
        RunMeta(
            name=name,
            run_id=run_id,
            argv=list(argv),
            cwd=str(wd),
            session=session,
            wake_host=wake_host,
            monitors=models,
            created_at=now,
            started_at=now,
        ),
    )
    try:
        _spawn_supervisor(h, rdir)
    except BaseException:
        # Nothing is running: leave no half-made run behind, nor the name's directory if this
        # run made it (`run` checks everything before anything exists). rmdir removes it only
        # while empty, so another run of the name made meanwhile is kept.
        shutil.rmtree(rdir, ignore_errors=True)
        with contextlib.suppress(OSError):
            rdir.parent.rmdir()
        raise
    return get_run(h, name, run_id)


# The supervisor's entry, run with -c rather than `-m ackdeck.core.monitors.supervisor`: -m
# goes through runpy, which imports importlib.util, importlib.machinery and runpy itself for
# the supervisor's whole life (~0.1 MiB of each monitored run; docs/performance.md,
# "Supervisor memory"), and runs the module as __main__, a second copy of it.
SUPERVISOR_MAIN = "from ackdeck.core.monitors.supervisor import main; raise SystemExit(main())"


def _spawn_supervisor(home: Path, rdir: Path) -> None:
    env = dict(os.environ)
    env[CHILD_PYTHONPATH] = env.get("PYTHONPATH", UNSET_PYTHONPATH)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
    r, w = (_above_stdio(fd) for fd in os.pipe())
    try:
        with open(locations.supervisor_log(rdir), "ab") as log:
            launcher = subprocess.Popen(
                [sys.executable, "-c", SUPERVISOR_MAIN, "--home", str(home)]
                + ["--run-dir", str(rdir), "--ready-fd", str(w)],
                pass_fds=(w,),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=rdir,  # never the user's cwd: a `core/` there must not shadow ours
                env=env,
                start_new_session=True,  # no terminal signals, survives the caller
            )
        os.close(w)
        w = -1
        launcher.wait()  # the launcher forks the real supervisor and exits at once
        reply = _read_reply(r)
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)
    if reply is None:
        detail = _last_line(locations.supervisor_log(rdir))
        raise ProcessError(f"the supervisor did not start{': ' + detail if detail else ''}")
    if not reply.get("ok"):
        raise ProcessError(str(reply.get("error") or "the command could not be started"))


def _above_stdio(fd: int) -> int:
    """`fd`, moved above 2 if it is a standard descriptor (the caller started with some of 0-2
    closed, so a pipe got one): the launcher's stdio set-up would dup2 over it otherwise."""
    if fd > 2:
        return fd
    import fcntl

    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    finally:
        os.close(fd)


def _read_reply(fd: int) -> dict[str, object] | None:
    deadline = time.monotonic() + HANDSHAKE_TIMEOUT
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    try:
        reply = parse_json(data or b"null")
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def _last_line(path: Path) -> str:
    try:
        raw = read_state(path) or b""
    except (OSError, CorruptState):
        return ""
    lines = raw.decode(errors="replace").strip().splitlines()
    return lines[-1][:200] if lines else ""


# ----- query -------------------------------------------------------------------------------
def _load(rdir: Path) -> RunMeta | None:
    try:
        return load_meta(rdir)
    except CorruptState:
        return None  # a broken run directory is skipped rather than breaking every listing


def reconcile(home: Path, name: str | None = None, *, clock: Clock = time.time) -> None:
    """Detect runs whose supervisor died: each becomes status `lost` and a monitor-lost wake.

    The explicit write step: listings (`list_runs`, `wakes.scan_wakes`) do not call it, so a
    query never changes state; the doors call it first where they want lost runs to show up.
    """
    for rdir in unsupervised(home, name):
        check_lost(home, rdir, clock=clock)


def check_lost(home: Path, rdir: Path, *, clock: Clock = time.time) -> None:
    meta = _load(rdir)
    if meta is None or meta.status != "running" or supervisor_alive(rdir):
        return
    if meta.supervisor_pid is None and clock() - meta.created_at < STARTUP_GRACE:
        return  # still starting up
    with locked(lock_path(rdir)):
        meta = _load(rdir)
        # Re-check under the lock: the supervisor writes its final status under it before it
        # lets go of its own lock, so a clean exit is never mistaken for a crash.
        if meta is None or meta.status != "running" or supervisor_alive(rdir):
            return
        child_alive = pid_alive(meta.pid) or bool(
            holders.writers(output_path(rdir), skip=os.getpid())
        )
        now = clock()
        tail = Tail(home, rdir, meta, clock=clock)
        # Wake first, status second: if we die in between, the next caller redoes both and
        # the wake store deduplicates the lines.
        tail.finish(
            kind="monitor-lost",
            status="lost",
            exit_code=None,
            final_fragment=not child_alive,
        )
        reason = "supervisor died" + ("; the command may still be running" if child_alive else "")
        store_meta(rdir, meta.replace(status="lost", ended_at=now, lost_reason=reason))


def list_runs(
    home: HomeArg,
    *,
    latest_only: bool = False,
    keep_live: bool = False,
    name: str | None = None,
    clock: Clock = time.time,
) -> list[RunInfo]:
    """Every run (of `name`, if given), sorted by (name, started_at); with latest_only, the
    newest run of each name, and with keep_live also every other run still alive (an older
    run is never hidden while it runs). A query: call `reconcile` first to have dead
    supervisors reported as `lost`."""
    return scan_runs(home, latest_only=latest_only, keep_live=keep_live, name=name)[0]


def scan_runs(
    home: HomeArg,
    *,
    latest_only: bool = False,
    keep_live: bool = False,
    name: str | None = None,
) -> tuple[list[RunInfo], list[Path]]:
    """`list_runs` plus the run state files that were skipped: a meta.json that is malformed
    or not a regular file (a directory or FIFO in its place) is reported and kept, and every
    other run is still listed."""
    h = resolve_home(home)
    infos = []
    skipped: list[Path] = []
    for rdir in run_dirs(h, name):
        try:
            meta = load_meta(rdir)
        except CorruptState:
            skipped.append(meta_path(rdir))
            continue
        if meta is not None:
            infos.append(_info(meta, rdir))
    infos.sort(key=lambda i: (i.name, i.started_at, i.run_id))
    if latest_only:
        latest: dict[str, RunInfo] = {}
        for i in infos:
            latest[i.name] = i
        newest = {(i.name, i.run_id) for i in latest.values()}
        infos = [i for i in infos if (i.name, i.run_id) in newest or (keep_live and is_live(i))]
    return infos, skipped


def is_live(info: RunInfo) -> bool:
    """Is the run still on? `running`, or `lost` (its supervisor died) with its command still
    alive. A run that ended is over even if children it left behind live on (`kill` by its run
    id still stops those)."""
    return info.status == "running" or (info.status == "lost" and alive(info))


def live_runs(home: Path, name: str, *, clock: Clock = time.time) -> list[RunInfo]:
    """The live runs of `name`, oldest first. A run that reads `running` is first checked for a
    dead supervisor (and then reads `lost`), so a crash never blocks the name for good."""
    live = []
    for rdir in run_dirs(home, name):
        meta = _load(rdir)
        if meta is not None and meta.status == "running" and not supervisor_alive(rdir):
            check_lost(home, rdir, clock=clock)
            meta = _load(rdir)
        # Only these two can be live: a long history of ended runs costs one small read each.
        if meta is not None and meta.status in ("running", "lost"):
            info = _info(meta, rdir)
            if is_live(info):
                live.append(info)
    return sorted(live, key=lambda i: (i.started_at, i.run_id))


def find_run(home: HomeArg, run_id: str) -> RunInfo:
    """The run whose id is `run_id`, whatever its name; ProcessError if there is none."""
    check_name(run_id, "run id")
    h = resolve_home(home)
    try:
        names = sorted(e.name for e in os.scandir(procs_dir(h)) if e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        names = []
    for n in names:
        try:
            meta = locations.run_meta(locations.run_dir(h, n, run_id))
        except InvalidName:
            continue  # a directory no `ackdeck run` made: not a process of ours
        if meta.exists():
            return get_run(h, n, run_id)
    raise ProcessError(f"unknown run id {run_id!r}: `ackdeck ps` lists every run")


def get_run(
    home: HomeArg, name: str, run_id: str | None = None, *, clock: Clock = time.time
) -> RunInfo:
    """A run of `name` (the latest one if run_id is None); ProcessError if unknown."""
    h = resolve_home(home)
    check_name(name, "process")
    if run_id is not None:
        rdir = run_dir(h, name, run_id)
        if not rdir.is_dir():
            raise ProcessError(f"unknown run {run_id!r} of process {name!r}")
        candidates = [rdir]
    else:
        candidates = run_dirs(h, name)
    metas = [(m, d) for d in candidates if (m := _load(d)) is not None]
    if not metas:
        raise ProcessError(f"unknown process {name!r}: start it with `ackdeck run {name} -- CMD`")
    meta, rdir = max(metas, key=lambda md: (md[0].started_at, md[0].run_id))
    if meta.status == "running":
        check_lost(h, rdir, clock=clock)
        meta = _load(rdir) or meta
    return _info(meta, rdir)


# ----- kill --------------------------------------------------------------------------------
def kill(
    home: HomeArg,
    name: str,
    *,
    grace: float = 3.0,
    run_id: str | None = None,
    clock: Clock = time.time,
) -> RunInfo:
    """TERM the latest run's processes, KILL them after `grace` seconds if still alive.

    The run's processes are its command's process group plus anything still writing its
    output. They are stopped whatever the run's status: after the command itself exited, its
    children live on in its group (recognised by the run's mark in their environment, never by
    the group number alone, which the system may reuse). A `lost` run (its supervisor died)
    may still have a live command too, though nobody is left to record an exit code.
    """
    h = resolve_home(home)
    info = get_run(h, name, run_id, clock=clock)
    if info.pid is None:
        return info
    pgid = info.pid  # the command leads its own session, so its pid is its group id
    if _ours(info, pgid):
        kill_marker(info.run_dir).touch()
        _signal_run(info, pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _ours(info, pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _ours(info, pgid):
            _signal_run(info, pgid, signal.SIGKILL)
    elif info.status != "running":
        return info
    # Nothing left to signal while the run still reads `running` (the command just exited, or
    # a concurrent kill got there first): its supervisor is finishing; report what it records
    # rather than a stale `running` that reads as "the kill failed".
    # Give the supervisor time to record the exit status it observes (it does so within
    # milliseconds; the bound only matters on a machine under heavy load).
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        meta = _load(info.run_dir)
        if meta is None or meta.status != "running" or not supervisor_alive(info.run_dir):
            break
        time.sleep(0.02)
    return get_run(h, name, info.run_id, clock=clock)


def alive(info: RunInfo) -> bool:
    """Does the run still have a live process (its command, or children it left behind)?"""
    return info.pid is not None and _ours(info, info.pid)


# A command starts before the supervisor records the run's start, and /proc's start times
# only err early (boot time in whole seconds); the slack only absorbs a clock step.
_START_SLACK = 1.0


def _our_group(info: RunInfo, pgid: int) -> bool:
    """Is live group `pgid` still this run's command group? Once the group emptied, the system
    may give the number to an unrelated process group (pid numbers wrap within hours), even
    while the run is `running` (a setsid'd child still writes its output) or `lost`."""
    members = holders.group_members(pgid)
    if members is None:  # no /proc: only the group test remains
        return holders.group_alive(pgid)
    if any(holders.carries_mark(p, info.run_dir) for p in members):
        return True
    # A command that rewrote its environment (setproctitle) no longer shows the mark: its
    # group is recognised by its leader, which started no later than the run did.
    started = holders.start_time(pgid) if pgid in members else None
    return started is not None and started <= info.started_at + _START_SLACK


def _ours(info: RunInfo, pgid: int) -> bool:
    if info.status in ("running", "lost") and _our_group(info, pgid):
        return True
    return bool(_targets(info, pgid))


def _targets(info: RunInfo, pgid: int) -> list[int]:
    """Live processes of the run: group members and writers of its output. Once the run is
    over, only those carrying the run's mark (a reused group number is someone else's)."""
    if info.status == "running":
        output = output_path(info.run_dir)
        found = holders.writers(output, skip=os.getpid())
        if _our_group(info, pgid):
            found = sorted(set(found) | set(holders.group_members(pgid) or []))
        return found
    found = holders.run_processes(info.run_dir, output_path(info.run_dir), pgid)
    return [p for p in found if holders.carries_mark(p, info.run_dir)]


def _signal_run(info: RunInfo, pgid: int, sig: int) -> None:
    if info.status in ("running", "lost") and _our_group(info, pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
    holders.signal_all(_targets(info, pgid), sig)
