"""One-line errors for room operations (what failed, and what state the room is in)."""

from __future__ import annotations

import errno
import os

from ackdeck.core.base.atomic import is_temp_name
from ackdeck.core.errors import AckdeckError, ColdAck, RoomUnavailable

# On the push path (tests/test_push_path.py): pathlib and text (with `re`) are imported by
# the error that needs them, never by a push that succeeds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

LEDGER_HINT = (
    "; move it aside to start a new epoch: every receipt from before becomes stale (nothing is "
    "removed until the sessions read again) and unacked lines are redelivered"
)

UNCHANGED = "the room is unchanged"
RENAMED = (
    "the room was already rewritten (nothing lost); the next read or ack finishes the bookkeeping"
)


def write_error(path: Path | str, exc: OSError, after: str = UNCHANGED) -> AckdeckError:
    from pathlib import Path

    # The file the error names, unless it is a temp (gone once the write failed, and no name
    # a person can act on): then the file it was to replace. (While the room's operations
    # passed Path objects, a temp's error carried a Path and so named `path`; on str names
    # this keeps that.)
    named = exc.filename if isinstance(exc.filename, str) else None
    where = Path(path if named is None or is_temp_name(os.path.basename(named)) else named)
    if exc.errno == errno.ENOSPC:
        return RoomUnavailable(f"no space left on device writing {where}; {after}")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return RoomUnavailable(f"cannot write {where} or its directory: {exc.strerror}; {after}")
    return RoomUnavailable(f"cannot write {where}: {exc.strerror}; {after}")


def cold_ack(session: str, why: str, unread: int) -> ColdAck:
    # Door-neutral words (the JSON `message` is the same in every door); each door adds its
    # own remedy in its own terms (a CLI flag, an MCP tool argument).
    from ackdeck.core.base.text import counted

    return ColdAck(
        f"refused: {why} by session {session!r} ({counted(unread, 'unread line')}); "
        "read the room first, then ack (or ack all); nothing was removed",
        unread,
        why=why,
    )
