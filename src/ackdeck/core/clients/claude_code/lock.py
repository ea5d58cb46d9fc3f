"""The lock Claude Code takes around every rewrite of a team mailbox, taken the same way so
ackdeck and Claude Code exclude each other.

Claude Code 2.1.328 locks `AGENT.json` with its copy of npm's proper-lockfile (4.x protocol),
called as `lock(path, {lockfilePath: path + ".lock", retries: {retries: 10, minTimeout: 5,
maxTimeout: 100}})`, everything else at its defaults. That protocol, which this module follows:

- the lock is a *directory*, `AGENT.json.lock`, made with mkdir (atomic: one maker wins);
- the winner sets the directory's mtime to the next whole second plus 5 ms (its probe of the
  filesystem's mtime precision), and a holder refreshes the mtime every `update` (stale / 2 =
  5 s) while it holds the lock;
- a lock whose mtime is older than `stale` (10 s) is abandoned: the next taker removes it
  (rmdir) and tries mkdir once more without judging staleness again;
- a taker that finds a live lock waits 5, 10, 20, 40, 80, 100, 100, 100, 100, 100 ms between
  ten retries (exponential, factor 2, capped, no jitter), then gives up (ELOCKED);
- a holder whose directory's mtime is not the one it last set has been compromised (someone
  judged it stale and took over): Claude Code logs it; ackdeck then writes nothing.

ackdeck holds the lock for one read-append-replace (milliseconds), far below `update`, so it
never needs the refresh; it checks, just before its rename, that the lock is still the one it
made (`still_held`), and a section that ran past `stale` (a stopped process) writes nothing.
"""

from __future__ import annotations

import errno
import math
import os
import time
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.errors import LockLost, MailboxLocked

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

STALE_S = 10.0  # proper-lockfile's default `stale` (Claude Code passes none)
UPDATE_S = STALE_S / 2  # its default `update`, for the record: ackdeck never holds this long


def retry_delays(retries: int) -> tuple[float, ...]:
    """proper-lockfile's waits between `retries` retries, minTimeout 5 ms, maxTimeout 100 ms,
    factor 2 (its `retry` options, as Claude Code passes them)."""
    return tuple(min(100, 5 * 2**n) / 1000 for n in range(retries))


RETRY_DELAYS_S = retry_delays(10)  # a mailbox: retries 10
# A task (`tasks/LIST/N.json`): Claude Code locks the task file itself the same way, with
# retries 30 (2.1.328's task store, `{retries: {retries: 30, minTimeout: 5, maxTimeout: 100}}`).
TASK_RETRY_DELAYS_S = retry_delays(30)


def _probe_mtime(lock_dir: Path) -> int:
    # As proper-lockfile's mtime-precision probe: the next whole second + 5 ms, then read back
    # (a filesystem with whole-second mtimes keeps the second).
    at = (math.ceil(time.time()) * 1000 + 5) / 1000
    os.utime(lock_dir, (at, at))
    return os.stat(lock_dir).st_mtime_ns


def _is_stale(lock_dir: Path) -> bool | None:
    """Is the lock abandoned (mtime older than STALE_S)? None: it vanished meanwhile."""
    try:
        st = os.stat(lock_dir)
    except FileNotFoundError:
        return None
    return st.st_mtime < time.time() - STALE_S


class MailboxLock:
    """`with MailboxLock(inbox):` holds Claude Code's lock on one mailbox file. The same
    protocol guards a task file (`delays=TASK_RETRY_DELAYS_S`): `FILE.lock` beside it."""

    def __init__(
        self,
        inbox: Path,
        *,
        sleep: Callable[[float], None] = time.sleep,
        delays: tuple[float, ...] = RETRY_DELAYS_S,
    ) -> None:
        self.inbox = inbox
        self.lock_dir = locations.claude_inbox_lock(inbox)
        self._sleep = sleep
        self._delays = delays
        self._mark: tuple[int, int] | None = None  # (inode, mtime_ns) of the directory we made
        self._taken_at = 0.0

    def _try(self, judge_stale: bool) -> bool:
        try:
            os.mkdir(self.lock_dir)
        except FileExistsError:
            if not judge_stale:
                return False
            stale = _is_stale(self.lock_dir)
            if stale is None:  # released between our mkdir and stat: try again at once
                return self._try(False)
            if not stale:
                return False
            try:
                os.rmdir(self.lock_dir)
            except FileNotFoundError:
                pass
            return self._try(False)
        try:
            mtime_ns = _probe_mtime(self.lock_dir)
            self._mark = (os.stat(self.lock_dir).st_ino, mtime_ns)
        except OSError:
            os.rmdir(self.lock_dir)
            raise
        self._taken_at = time.monotonic()
        return True

    def acquire(self) -> None:
        for delay in (*self._delays, None):
            if self._try(True):
                return
            if delay is None:
                break
            self._sleep(delay)
        raise MailboxLocked(
            f"{self.inbox}: Claude Code's lock ({self.lock_dir.name}) stayed held through "
            f"{len(self._delays)} retries; nothing written (try again)"
        )

    def _ours(self) -> bool:
        """Is the lock directory still the one we made, its mtime the one we set?"""
        if self._mark is None:
            return False
        try:
            st = os.stat(self.lock_dir)
        except FileNotFoundError:
            return False
        return (st.st_ino, st.st_mtime_ns) == self._mark

    def still_held(self) -> bool:
        """Is the lock still ours, and held for less than STALE_S (after which another taker
        may judge it abandoned at any moment)?"""
        return time.monotonic() - self._taken_at < STALE_S and self._ours()

    def check(self) -> None:
        """Raise LockLost unless `still_held`."""
        if not self.still_held():
            raise LockLost(
                f"{self.inbox}: Claude Code's lock was taken over while ackdeck held it (judged "
                "stale); nothing written"
            )

    def release(self) -> None:
        mine = self._ours()
        self._mark = None
        if not mine:
            return  # not ours any more: removing it would free someone else's lock
        try:
            os.rmdir(self.lock_dir)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise

    def __enter__(self) -> MailboxLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
