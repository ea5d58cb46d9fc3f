"""ackdeck's small JSON state files (run meta, monitor state): parse one into its record
(core/base/jsonfields.py), write one atomically. Kept apart from the room ledger so that a
run's supervisor, which reads and writes only these, imports none of the ledger's machinery."""

from __future__ import annotations

import os
import stat

from ackdeck.core.base import atomic
from ackdeck.core.errors import CorruptState, NotRegular, RecordError

# On the hot path (tests/test_layering.py): typing is for type checkers only; on the push
# path (open_state, tests/test_push_path.py) pathlib and the records' Struct too.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypeVar

    from ackdeck.core.base.atomic import P
    from ackdeck.core.base.struct import Struct

    R = TypeVar("R", bound=Struct)


_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFLNK: "a symlink",
}


def open_state(path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int | None:
    """A descriptor on one of ackdeck's own state files (wake record, run meta, read state,
    notice state, receipt, ledger); None if it does not exist.

    O_NONBLOCK, so a FIFO in the file's place neither blocks the open nor a read; O_NOFOLLOW,
    because ackdeck never writes its state through a symlink; then fstat on the descriptor
    (no gap between check and use), and anything but a regular file raises NotRegular."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW, mode)
    except FileNotFoundError:
        return None
    except OSError as exc:
        # ELOOP: a symlink (O_NOFOLLOW); EISDIR: a directory opened for writing; ENXIO: a
        # FIFO opened for writing with no reader; EOPNOTSUPP/ENXIO: a socket.
        try:
            kind = os.lstat(path).st_mode
        except OSError:
            raise exc from None
        if stat.S_ISREG(kind):
            raise
        raise _not_regular(path, kind) from None
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(path, mode)
    return fd  # O_NONBLOCK changes nothing for a regular file


def _not_regular(path: Path | str, mode: int) -> NotRegular:
    kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
    return NotRegular(
        f"state file {path} is {kind}, not a regular file; it was skipped and left in place"
    )


def read_state(path: Path | str, limit: int | None = None) -> bytes | None:
    """The bytes of a state file (at most `limit`); None if it does not exist. NotRegular for
    a directory, FIFO, socket, device or symlink in its place (see open_state)."""
    fd = open_state(path)
    if fd is None:
        return None
    try:
        if limit is not None:
            return os.read(fd, limit)
        parts = []
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def load_record(path: Path | str, record: type[R], *, hint: str = "") -> R | None:
    """Parse a JSON state file; None if it does not exist. A bad file raises and is kept."""
    raw = read_state(path)
    if raw is None:
        return None
    try:
        return record.loads(raw)
    except RecordError as exc:
        first = str(exc)
        raise CorruptState(
            f"corrupt state file {path} ({first}); it was left in place{hint}"
        ) from None


def store_record(path: P, value: Struct, *, fsync: bool = False) -> None:
    # State files are written without fsync by default: losing one to a power cut only makes
    # the next operation see a "foreign" change and start a new epoch, which redelivers and
    # never deletes. kill -9 cannot lose them (the page cache survives the process).
    atomic.atomic_write(path, value.dumps().encode(), fsync=fsync)
