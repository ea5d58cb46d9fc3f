"""The detached supervisor of one run.

    python -m ackdeck.core.monitors.supervisor --home H --run-dir D --ready-fd N

(procs.start runs `main` through `python -c`, not -m: runpy would stay imported for the
supervisor's whole life.)

It forks once more so the caller can reap the launcher at once (no zombie, no controlling
terminal), takes the run's supervisor lock for its whole life (that lock is how everyone else
tells a live supervisor from a dead one), starts the command with stdout+stderr going straight
into output.log, reports `{"ok": true, "pid": N}` on the ready pipe, then tails and scans the log
until the command exits *and* no process still holds the log open for writing (children left
running in the background keep writing it: they are watched too, core/monitors/holders.py), records
the command's exit status (signals as 128+N) and flushes the monitors.
"""

from __future__ import annotations

import fcntl
import os
import select
import time

# The C module `signal` wraps: the same numbers, without the IntEnum `signal` builds (and the
# `enum` module it imports, ~0.6 MiB of each supervisor). Python's own start-up imports it.
from _signal import SIGPIPE, SIGXFSZ

from ackdeck.core.base.diskfull import Backoff
from ackdeck.core.base.jsontext import dumps
from ackdeck.core.base.locks import locked
from ackdeck.core.monitors import holders
from ackdeck.core.monitors.runs import (
    CHILD_PYTHONPATH,
    UNSET_PYTHONPATH,
    RunMeta,
    kill_marker,
    load_meta,
    lock_path,
    output_path,
    store_meta,
    supervisor_lock_path,
)
from ackdeck.core.monitors.tail import Tail

# Memory: one supervisor lives per monitored run, so it imports only what it needs for its
# whole life (docs/performance.md, "Supervisor memory"). No argparse (its formatter pulls in
# shutil and the compression modules), no subprocess or threading: the command is started with
# posix_spawn and waited for through a pidfd; no json (core/base/jsontext writes the reply);
# no pathlib (it brings re, enum, urllib.parse and ipaddress): paths are plain strings here.
# tests/test_supervisor_footprint.py checks the list.

TYPE_CHECKING = False  # collections.abc imports collections (see above)
if TYPE_CHECKING:
    from collections.abc import Callable

    Clock = Callable[[], float]

POLL = 0.05  # seconds between looks at output.log while the command is quiet
# Once the command has exited, how often to look for processes still writing its output.
HOLDERS_EVERY = 0.25


def child_env(rdir: str) -> dict[str, str]:
    """The caller's environment, minus what start() added to import this package, plus the
    run's mark (so its process group is recognised even after the leader exited)."""
    env = dict(os.environ)
    env[holders.RUN_MARK] = holders.mark_value(rdir)
    original = env.pop(CHILD_PYTHONPATH, None)
    if original is not None:
        if original == UNSET_PYTHONPATH:
            env.pop("PYTHONPATH", None)
        else:
            env["PYTHONPATH"] = original
    return env


def exit_code_of(returncode: int) -> int:
    """-N for "killed by signal N" (as Popen reports it) becomes the shell's 128+N."""
    return returncode if returncode >= 0 else 128 - returncode


class Child:
    """The command's process, as much of subprocess.Popen as the supervisor uses: started with
    posix_spawn, waited for through a pidfd (polled where the kernel has none)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None  # -N if killed by signal N, like Popen's
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):  # Linux < 5.3, or not Linux
            self._pidfd = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                if self._pidfd is not None:
                    os.close(self._pidfd)
                    self._pidfd = None
        return self.returncode

    def wait(self, timeout: float | None) -> bool:
        """Wait up to `timeout` seconds (None: for ever) for the exit; True once it exited."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            if self._pidfd is not None:
                waiter = select.poll()  # poll, not select: any descriptor number works
                waiter.register(self._pidfd, select.POLLIN)  # readable once the child exits
                waiter.poll(None if left is None else max(0, int(left * 1000) + 1))
            else:
                time.sleep(POLL if left is None else min(POLL, left))
        return True


def spawn(meta: RunMeta, rdir: str, log_fd: int) -> Child:
    """Start the command as subprocess.Popen(argv, cwd=meta.cwd, stdin=DEVNULL, stdout=log,
    stderr=log, start_new_session=True) would; OSError if it cannot be started."""
    null = os.open(os.devnull, os.O_RDONLY)
    # posix_spawn has no chdir action before Python 3.13: the supervisor steps into the
    # command's directory for the spawn (a missing one fails here, as Popen's cwd= did) and
    # back into its run directory afterwards.
    os.chdir(meta.cwd)
    try:
        pid = os.posix_spawnp(
            meta.argv[0],
            meta.argv,
            child_env(rdir),
            file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd, 2),
            ],
            # Own session and process group: `kill` signals the whole tree, and terminal
            # signals aimed at the caller never reach it.
            setsid=True,
            # Python ignores these; the command gets the defaults, as Popen's restore_signals.
            setsigdef=(SIGPIPE, SIGXFSZ),
        )
    finally:
        os.close(null)
        os.chdir(rdir)
    return Child(pid)


def launch(rdir: str, ready: int, clock: Clock = time.time) -> Child | None:
    """Take the supervisor lock, start the command, report on `ready`. None if it failed."""
    os.set_inheritable(ready, False)  # the command must not hold the handshake pipe open
    lock_fd = os.open(supervisor_lock_path(rdir), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)  # held (fd kept open) until this process ends
    meta = load_meta(rdir)
    if meta is None:
        _reply(ready, {"ok": False, "error": f"run directory {rdir} has no meta.json"})
        return None
    log_fd = os.open(output_path(rdir), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        child = spawn(meta, rdir, log_fd)
    except OSError as exc:
        _reply(ready, {"ok": False, "error": f"cannot start {meta.argv[0]!r}: {exc.strerror}"})
        return None
    finally:
        os.close(log_fd)
    with locked(lock_path(rdir)):
        meta = load_meta(rdir) or meta
        store_meta(
            rdir,
            meta.replace(pid=child.pid, supervisor_pid=os.getpid(), started_at=clock()),
        )
    _reply(ready, {"ok": True, "pid": child.pid})
    return child


def _reply(fd: int, msg: dict[str, object]) -> None:
    try:
        os.write(fd, dumps(msg).encode())  # jsontext: `json` would stay imported for life
    finally:
        os.close(fd)


def supervise(home: str, rdir: str, child: Child, clock: Clock = time.time) -> int:
    meta = load_meta(rdir)
    assert meta is not None
    tail = Tail(home, rdir, meta, clock=clock, patient=True)
    log = output_path(rdir)
    # A run that wakes a Claude Code teammate delivers its wakes itself, into the mailbox
    # (core/monitors/team_wakes.py): no hook of the teammate's drains them.
    mailbox = _MailboxWakes(home, meta.session, clock) if _is_mailbox(meta.session) else None
    looked = 0.0  # monotonic time of the last look for processes still writing the output
    while True:
        exited = child.poll() is not None
        if exited and time.monotonic() - looked >= HOLDERS_EVERY:
            # The command exited; children it left behind may still write its output.
            if not holders.writers(log, skip=os.getpid()):
                break
            looked = time.monotonic()
        timeout: float | None = HOLDERS_EVERY if exited else None
        if tail.holding():  # matches a full disk kept from their wake record
            tail.retry_held()
            timeout = min(timeout or POLL, max(tail.space.due_in(), 0.01))
        if mailbox is not None:
            mailbox.after(tail.merges)
            if mailbox.failed_at is not None:
                timeout = min(timeout or POLL, POLL)
        if tail.active():  # else nothing to scan (no monitor, or max_events reached)
            if tail.pump():
                tail.flush_due()
                continue
            tail.flush_due()
            timeout = HOLDERS_EVERY if exited else POLL
            due = tail.next_due()
            if due is not None:
                timeout = min(timeout, max(0.0, due - clock()))
        if exited:
            time.sleep(timeout or 0.0)  # nothing more to wait for: sleep between looks
        else:
            child.wait(timeout)  # returns early when the command exits
    assert child.returncode is not None
    code = exit_code_of(child.returncode)
    killed = child.returncode < 0 or os.path.exists(kill_marker(rdir))
    status = "killed" if killed else "exited"
    # Wakes first, status second: anyone who sees the final status (a test, a hook, the
    # dashboard) also finds every match and the exit notice already in the wake store. The
    # supervisor lock is still held, so nobody mistakes this moment for a crash.
    # Out of space, both wait for it (the exit status exists only in this process).
    tail.finish(kind="exited", status=status, exit_code=code)
    if mailbox is not None:
        mailbox.finish(tail.merges)
    ended = clock()

    def record_end() -> None:
        with locked(lock_path(rdir)):
            current: RunMeta = load_meta(rdir) or meta
            store_meta(
                rdir,
                current.replace(status=status, exit_code=code, ended_at=ended),
            )

    Backoff().until_written(record_end)
    if mailbox is not None:
        mailbox.linger()
    return 0


def _is_mailbox(session: str) -> bool:
    return session.startswith("claude-team.")  # team_wakes.SESSION_PREFIX, without its import


class _MailboxWakes:
    """Writes a teammate's wakes into its mailbox after each merge; a failed write (the
    mailbox locked past Claude Code's retries, a bad file) is tried again a second later and
    the wakes stay pending meanwhile. team_wakes is imported only by such a run."""

    RETRY_S = 1.0
    GIVE_UP_S = 600.0  # after the run ended: how long its supervisor keeps trying the mailbox

    def __init__(self, home: str, session: str, clock: Clock) -> None:
        self.home, self.session, self.clock = home, session, clock
        self.done_at = 0  # tail.merges when everything merged was last delivered
        self.failed_at: float | None = None
        self.said = ""  # the last failure written to the supervisor's log

    def after(self, merges: int) -> None:
        if merges == self.done_at and self.failed_at is None:
            return
        if self.failed_at is not None and time.monotonic() - self.failed_at < self.RETRY_S:
            return
        from pathlib import Path  # a teammate's run only: team_wakes works on Paths

        from ackdeck.core.errors import AckdeckError
        from ackdeck.core.monitors import team_wakes

        try:
            team_wakes.drain(Path(self.home), self.session, clock=self.clock)
        except (AckdeckError, OSError) as exc:
            line = f"ackdeck supervisor: wake for {self.session} not delivered: {exc}"
            if line != self.said:  # once per cause, not once a second
                print(line, flush=True)
                self.said = line
            self.failed_at = time.monotonic()
            return
        self.done_at, self.failed_at, self.said = merges, None, ""

    def finish(self, merges: int) -> None:
        """Deliver what the end merged (the exit notice and the last lines)."""
        self.failed_at = None
        self.after(merges + 1)

    def linger(self) -> None:
        """After the run's status is recorded: keep trying a mailbox that would not take the
        last wake (Claude Code holding it, a damaged file) for up to GIVE_UP_S; after that the
        wake stays pending for `ackdeck wakes drain --session claude-team://TEAM/AGENT`."""
        end = time.monotonic() + self.GIVE_UP_S
        while self.failed_at is not None and time.monotonic() < end:
            time.sleep(self.RETRY_S)
            self.after(self.done_at + 1)


def parse_args(argv: list[str]) -> tuple[str, str, int]:
    """`--home H --run-dir D --ready-fd N`, as procs.start passes them (an internal command
    line, so no argparse). Paths are made absolute: spawn() changes directory."""
    usage = "usage: python -m ackdeck.core.monitors.supervisor --home H --run-dir D --ready-fd N"
    if len(argv) % 2:
        raise SystemExit(usage)
    opts = dict(zip(argv[::2], argv[1::2], strict=True))
    if sorted(opts) != ["--home", "--ready-fd", "--run-dir"] or not opts["--ready-fd"].isdigit():
        raise SystemExit(usage)
    home, rdir = (os.path.abspath(opts[k]) for k in ("--home", "--run-dir"))
    return home, rdir, int(opts["--ready-fd"])


def main(argv: list[str] | None = None) -> int:
    import sys

    home, rdir, ready = parse_args(sys.argv[1:] if argv is None else argv)
    if os.fork() > 0:
        os._exit(0)  # the launcher: start() reaps it immediately; we live on, reparented
    child = launch(rdir, ready)
    if child is None:
        return 1
    return supervise(home, rdir, child)


if __name__ == "__main__":
    raise SystemExit(main())
