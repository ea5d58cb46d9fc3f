"""flock-based locks on dedicated lock files.

The lock always lives on a sidecar file, never on the data file: an ack renames a new inode
over the data file, and a lock held on the old inode would protect nothing.
"""

from __future__ import annotations

import fcntl
import os
import time

from ackdeck.core.errors import LockTimeout

# pathlib for type checkers only: a run's supervisor locks by str path. No contextlib either:
# it brings collections and functools (~0.3 MiB of each supervisor, which takes these locks
# for its whole life; docs/performance.md, "Supervisor memory against 1.3x").
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

__all__ = ["LockTimeout", "locked"]  # LockTimeout lives in ackdeck.core.errors; importable here too


def locked(lock_file: Path | str, *, shared: bool = False, timeout: float | None = None) -> Held:
    """Hold an flock on `lock_file` (created if missing) for the duration of the block."""
    return Held(lock_file, shared, timeout)


class Held:
    """`with locked(...)`: the flock is taken on entry and released on exit, also on error
    paths (what a contextlib generator did, without contextlib)."""

    __slots__ = ("_fd", "lock_file", "shared", "timeout")

    def __init__(self, lock_file: Path | str, shared: bool, timeout: float | None) -> None:
        self.lock_file, self.shared, self.timeout = lock_file, shared, timeout
        self._fd = -1

    def __enter__(self) -> None:
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            op = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
            if self.timeout is None:
                fcntl.flock(fd, op)
            else:
                deadline = time.monotonic() + self.timeout
                while True:
                    try:
                        fcntl.flock(fd, op | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            what = f"timed out waiting for lock {self.lock_file}"
                            raise LockTimeout(what) from None
                        time.sleep(0.005)
        except BaseException:
            os.close(fd)  # not taken: nothing is held
            raise
        self._fd = fd

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Closing the descriptor releases the flock, also on error paths.
        fd, self._fd = self._fd, -1
        os.close(fd)
