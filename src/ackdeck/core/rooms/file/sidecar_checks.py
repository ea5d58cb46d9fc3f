"""The checks that keep ackdeck from writing through a borrowed target, on plain str paths:
the room must be a regular file, its directory must exist, and its sidecar must be our own
real directory.

Kept apart from sidecar.py (the audit log's records, the lock's context manager, the
leftovers, and pathlib with them) so a push, on every producer's every line, runs the same
checks without importing those (core/rooms/file/append.py). sidecar.py's `Sidecar` calls
these; there is no second copy of a rule.
"""

from __future__ import annotations

import os
import stat

from ackdeck.core.errors import RoomUnavailable, UnsafeSidecar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def refuse_unless_regular(path: Path | str, mode: int) -> None:
    """Raise unless `mode` is a regular file's: a room is never a symlink (without the owner's
    opt-in, resolved before this), a FIFO, a device or a directory."""
    if stat.S_ISREG(mode):
        return
    if stat.S_ISLNK(mode):
        raise RoomUnavailable(
            f"room {path} is a symlink; refusing to follow it (anyone who can write its "
            "directory could point acks at another file). Use the target's path, or opt in "
            "with --follow-symlinks (CLI only: the MCP server never follows one)"
        )
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a special file"
    )
    raise RoomUnavailable(f"room {path} is {kind}, not a regular file")


def same_inode(path: str | os.PathLike[str], st: os.stat_result) -> bool:
    """Is `path` still the inode `st` describes? lstat: a symlink swapped in for the room is
    not the room."""
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def check_room_dir(room: str) -> None:
    """The room's directory must exist: ackdeck creates a room's file and sidecar, never the
    directory a typo named."""
    parent = os.path.dirname(room) or "."  # as Path(room).parent names it
    if not os.path.isdir(parent):
        raise RoomUnavailable(f"room directory {parent} does not exist")


def check_kind(room: str) -> None:
    """Refuse a room that is not a regular file before anything is created beside it (no
    `/dev/.null.ackdeck`, no sidecar next to a directory). Only a first, friendly check: every
    open repeats it on the descriptor (O_NOFOLLOW, fstat), so a swap after this check cannot
    redirect a write either."""
    try:
        st = os.lstat(room)
    except FileNotFoundError:
        return
    refuse_unless_regular(room, st.st_mode)


def room_target(path: str, follow_symlinks: bool) -> str:
    """The file a room at `path` (absolute) writes: the path itself, or with the owner's opt-in
    a symlink's target (an ack renames a new file over the path; over the link it would strand
    producers writing through the target). Without the opt-in every open uses O_NOFOLLOW and
    a symlinked room is refused."""
    if follow_symlinks and os.path.islink(path):
        return os.path.realpath(path)
    return path


def ensure_sidecar(room: str, side: str, *, create: bool) -> bool:
    """Check (and maybe create) the sidecar `side` of `room`; False if it does not exist and
    create=False."""
    try:
        st = os.lstat(side)
    except FileNotFoundError:
        if not create:
            return False
        check_room_dir(room)
        try:
            os.mkdir(side, 0o700)
        except FileExistsError:
            pass  # another process created it first; the checks below still apply
        except OSError as exc:
            parent = os.path.dirname(room) or "."
            raise RoomUnavailable(
                f"cannot create {side}: {exc.strerror} (is {parent} writable?)"
            ) from None
        try:
            st = os.lstat(side)
        except FileNotFoundError:
            raise RoomUnavailable(f"sidecar {side} vanished while being created") from None
    # A symlinked or foreign-owned sidecar could redirect our writes or feed us forged
    # receipts, so refuse rather than follow it.
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeSidecar(f"refusing sidecar {side}: it is a symlink")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeSidecar(f"refusing sidecar {side}: it is not a directory")
    if st.st_uid != os.geteuid():
        raise UnsafeSidecar(f"refusing sidecar {side}: owned by uid {st.st_uid}")
    return True
