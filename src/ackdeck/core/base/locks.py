"""flock-based locks on dedicated lock files.

The lock always lives on a sidecar file, never on the data file: an ack renames a new inode
over the data file, and a lock held on the old inode would protect nothing.
"""

from __future__ import annotations

import fcntl
import os
import time

from ackdeck.core.errors import LockTimeout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["LockTimeout", "locked"]  # LockTimeout lives in ackdeck.core.errors; importable here too


class locked:  # noqa: N801 - used as `with locked(...)`, like the function it was
    """Hold an flock on `lock_file` (created if missing) for the duration of the block.

    A class rather than contextlib.contextmanager: every room operation takes this lock, and
    contextlib is a module the per-turn commands need not load (tests/test_layering.py). The
    lock file is opened when the block is entered, as the generator did."""

    __slots__ = ("_fd", "_lock_file", "_shared", "_timeout")

    def __init__(
        self, lock_file: Path | str, *, shared: bool = False, timeout: float | None = None
    ) -> None:
        self._lock_file = lock_file
        self._shared = shared
        self._timeout = timeout
        self._fd = -1

    def __enter__(self) -> None:
        fd = os.open(self._lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            op = fcntl.LOCK_SH if self._shared else fcntl.LOCK_EX
            if self._timeout is None:
                fcntl.flock(fd, op)
            else:
                deadline = time.monotonic() + self._timeout
                while True:
                    try:
                        fcntl.flock(fd, op | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise LockTimeout(
                                f"timed out waiting for lock {self._lock_file}"
                            ) from None
                        time.sleep(0.005)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(self, *exc: object) -> None:
        # Closing the descriptor releases the flock, also on error paths.
        fd, self._fd = self._fd, -1
        os.close(fd)
