"""The detached supervisor of one run.

    python -m core.watch.supervisor --home H --run-dir D --ready-fd N

It forks once more so the caller can reap the launcher at once (no zombie, no controlling
terminal), takes the run's supervisor lock for its whole life (that lock is how everyone else
tells a live supervisor from a dead one), starts the command with stdout+stderr going straight
into output.log, reports `{"ok": true, "pid": N}` on the ready pipe, then tails and scans the log
until the command exits *and* no process still holds the log open for writing (children left
running in the background keep writing it: they are watched too, core/watch/holders.py), records the
command's exit status (signals as 128+N) and flushes the monitors.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from core.base.locks import locked
from core.watch import holders
from core.watch.runs import (
    RunMeta,
    kill_marker,
    load_meta,
    lock_path,
    output_path,
    store_meta,
    supervisor_lock_path,
)
from core.watch.tail import Tail

Clock = Callable[[], float]
POLL = 0.05  # seconds between looks at output.log while the command is quiet
# Once the command has exited, how often to look for processes still writing its output.
HOLDERS_EVERY = 0.25


def child_env(rdir: Path) -> dict[str, str]:
    """The caller's environment, minus what start() added to import this package, plus the
    run's mark (so its process group is recognised even after the leader exited)."""
    from core.watch.procs import _UNSET, CHILD_PYTHONPATH

    env = dict(os.environ)
    env[holders.RUN_MARK] = holders.mark_value(rdir)
    original = env.pop(CHILD_PYTHONPATH, None)
    if original is not None:
        if original == _UNSET:
            env.pop("PYTHONPATH", None)
        else:
            env["PYTHONPATH"] = original
    return env


def exit_code_of(returncode: int) -> int:
    """Popen's -N for "killed by signal N" becomes the shell's 128+N."""
    return returncode if returncode >= 0 else 128 - returncode


def launch(rdir: Path, ready: int, clock: Clock = time.time) -> subprocess.Popen[bytes] | None:
    """Take the supervisor lock, start the command, report on `ready`. None if it failed."""
    lock_fd = os.open(supervisor_lock_path(rdir), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)  # held (fd kept open) until this process ends
    meta = load_meta(rdir)
    if meta is None:
        _reply(ready, {"ok": False, "error": f"run directory {rdir} has no meta.json"})
        return None
    log_fd = os.open(output_path(rdir), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        child = subprocess.Popen(
            meta.argv,
            cwd=meta.cwd,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            env=child_env(rdir),
            # Own process group: `kill` signals the whole tree, and terminal signals aimed at
            # the caller never reach it.
            start_new_session=True,
        )
    except OSError as exc:
        _reply(ready, {"ok": False, "error": f"cannot start {meta.argv[0]!r}: {exc.strerror}"})
        return None
    finally:
        os.close(log_fd)
    with locked(lock_path(rdir)):
        meta = load_meta(rdir) or meta
        store_meta(
            rdir,
            meta.model_copy(
                update={"pid": child.pid, "supervisor_pid": os.getpid(), "started_at": clock()}
            ),
        )
    _reply(ready, {"ok": True, "pid": child.pid})
    return child


def _reply(fd: int, msg: dict[str, object]) -> None:
    try:
        os.write(fd, json.dumps(msg).encode())
    finally:
        os.close(fd)


def supervise(
    home: Path, rdir: Path, child: subprocess.Popen[bytes], clock: Clock = time.time
) -> int:
    meta = load_meta(rdir)
    assert meta is not None
    tail = Tail(home, rdir, meta, clock=clock)
    exited = threading.Event()

    def _wait() -> None:
        child.wait()
        exited.set()

    threading.Thread(target=_wait, daemon=True).start()
    log = output_path(rdir)
    looked = 0.0  # monotonic time of the last look for processes still writing the output
    while True:
        if exited.is_set() and time.monotonic() - looked >= HOLDERS_EVERY:
            # The command exited; children it left behind may still write its output.
            if not holders.writers(log, skip=os.getpid()):
                break
            looked = time.monotonic()
        timeout: float | None = HOLDERS_EVERY if exited.is_set() else None
        if tail.active():  # else nothing to scan (no monitor, or max_events reached)
            if tail.pump():
                tail.flush_due()
                continue
            tail.flush_due()
            timeout = HOLDERS_EVERY if exited.is_set() else POLL
            due = tail.next_due()
            if due is not None:
                timeout = min(timeout, max(0.0, due - clock()))
        if exited.is_set():
            time.sleep(timeout or 0.0)  # the event stays set: sleep between looks instead
        else:
            exited.wait(timeout)
    code = exit_code_of(child.returncode)
    status = "killed" if child.returncode < 0 or kill_marker(rdir).exists() else "exited"
    # Wakes first, status second: anyone who sees the final status (a test, a hook, the
    # dashboard) also finds every match and the exit notice already in the wake store. The
    # supervisor lock is still held, so nobody mistakes this moment for a crash.
    tail.finish(kind="exited", status=status, exit_code=code)
    with locked(lock_path(rdir)):
        current: RunMeta = load_meta(rdir) or meta
        store_meta(
            rdir,
            current.model_copy(update={"status": status, "exit_code": code, "ended_at": clock()}),
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m core.watch.supervisor")
    p.add_argument("--home", required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--ready-fd", type=int, required=True)
    args = p.parse_args(argv)
    if os.fork() > 0:
        os._exit(0)  # the launcher: start() reaps it immediately; we live on, reparented
    child = launch(Path(args.run_dir), args.ready_fd)
    if child is None:
        return 1
    return supervise(Path(args.home), Path(args.run_dir), child)


if __name__ == "__main__":
    raise SystemExit(main())
