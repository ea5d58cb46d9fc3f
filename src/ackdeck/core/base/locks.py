"""flock-based locks on dedicated lock files.

The lock always lives on a sidecar file, never on the data file: an ack renames a new inode
over the data file, and a lock held on the old inode would protect nothing.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ackdeck.core.errors import LockTimeout

TYPE_CHECKING = False  # pathlib for type checkers only: a run's supervisor locks by str path
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["LockTimeout", "locked"]  # LockTimeout lives in ackdeck.core.errors; importable here too


@contextmanager
def locked(
    lock_file: Path | str, *, shared: bool = False, timeout: float | None = None
) -> Iterator[None]:
    """Hold an flock on `lock_file` (created if missing) for the duration of the block."""
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        op = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        if timeout is None:
            fcntl.flock(fd, op)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, op | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(f"timed out waiting for lock {lock_file}") from None
                    time.sleep(0.005)
        yield
    finally:
        # Closing the descriptor releases the flock, also on error paths.
        os.close(fd)
