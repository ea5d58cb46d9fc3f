"""Dead letters: a line handed out `max_deliveries` times without an ack leaves the room for
the dead-letter room beside it (`NAME.dead`, itself a room), so a line that crashes its
reader every time stops blocking the lines behind it.

Checked at each read of a room whose policy sets max_deliveries (core/rooms/policy.py),
before the read takes its snapshot, under the room's exclusive lock (the ack's): the lines
counted (core/rooms/file/readlog.py) as delivered that often are a prefix of the room (every read
hands out everything from the head, so counts never grow along the file). They are appended
to NAME.dead first (one append, under that room's shared lock, as a push), then removed from the
room by the ack's own transaction (temp, rename, ledger, audit entry with mode `dead`), so a
kill -9 between the two leaves the lines in both rooms, never in neither. The owner session
(the policy's `owner`) gets a wake.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.byteio import settled_size
from ackdeck.core.base.text import counted
from ackdeck.core.errors import AckdeckError
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file import readlog
from ackdeck.core.rooms.file.ack import AckSite, AckTransaction
from ackdeck.core.rooms.room_errors import write_error

if TYPE_CHECKING:
    from ackdeck.core.base.atomic import P
    from ackdeck.core.rooms.file.room import Room


def dead_room_path(room: P) -> P:
    return locations.dead_room(room)


def prepare(room_fd: int, dead: Path) -> bool:
    """Whether the dead-letter room `dead` can take lines, creating it as the room is (open at
    `room_fd`: its mode, its owner and group where this user may give them) when missing.

    Created 0600 and only then widened to the room's mode, so it is never readable by more
    people than the room, even for an instant (it was created 0644 beside a 0600 room). Not a
    regular file (a directory, a symlink, a FIFO): False, and the lines stay in their room:
    a dead-letter room must never stop the room it serves from being read."""
    try:
        fd = os.open(dead, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        try:
            return stat.S_ISREG(os.lstat(dead).st_mode)
        except OSError:
            return False
    except OSError:
        return False  # a read-only or full directory: the room is still read as it is
    try:
        st = os.fstat(room_fd)
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError as exc:
            if exc.errno != errno.EPERM:
                raise
            # Not ours to give (another user's room): ours, in the room's mode.
        os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o777)  # its permissions, never set-id bits
    finally:
        os.close(fd)
    return True


def doomed_prefix(
    fd: int, base: int, epoch: int, entries: list[readlog.ReadEntry], limit: int
) -> bytes:
    """The complete lines at the head of the room open at `fd` that were handed out at least
    `limit` times (pure but for the preads)."""
    size = os.fstat(fd).st_size
    out = b""
    at = 0
    while at < size:
        if readlog.deliveries(entries, epoch, base + at) < limit:
            break
        chunk = os.pread(fd, 1 << 16, at)
        nl = chunk.find(b"\n")
        while nl < 0 and len(chunk) < size - at:
            more = os.pread(fd, 1 << 16, at + len(chunk))
            if not more:
                break
            chunk += more
            nl = chunk.find(b"\n")
        if nl < 0:
            break  # a partial line is never a line
        out += chunk[: nl + 1]
        at += nl + 1
    return out


def move_locked(
    site: AckSite,
    fd: int,
    journey_dir: Path,
    limit: int,
    append_dead: Callable[[bytes], object],
) -> int:
    """Move the lines delivered `limit` times to the dead-letter room (exclusive lock held);
    how many moved."""
    ledger, _ = site.settle(fd)
    site.sidecar.remove_leftovers(ledger)
    ledger, _ = site.sweep_all(ledger)
    entries = readlog.live_entries(journey_dir, ledger.base)
    doomed = doomed_prefix(fd, ledger.base, ledger.epoch, entries, limit)
    if not doomed:
        return 0
    lines = doomed.count(b"\n")
    try:
        append_dead(doomed)  # exactly the bytes, before they leave this room
    except (AckdeckError, OSError):
        # The dead-letter room refused them (its sidecar unsafe, a full disk): they stay
        # here, handed out again; the room it serves is never blocked by it.
        return 0
    size = settled_size(fd)
    dead = str(dead_room_path(site.path))
    done = AckTransaction(
        site,
        fd=fd,
        size=size,
        ledger=ledger,
        session="ackdeck-dead-letter",
        plan=L.AckPlan("prefix", len(doomed)),
        acked=lines,
        digest=L.sha256(doomed),
        dead=dead,
    ).run()
    return 0 if done is None else lines


def tell_owner(
    home: str | os.PathLike[str] | None,
    owner: str,
    room: Path,
    moved: int,
    limit: int,
    clock: Callable[[], float],
) -> None:
    """A wake for the owner session, in the wake store of `home` (the door's --home; None:
    $ACKDECK_HOME)."""
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.monitors.room_wakes import tell

    text = (
        f"room {room.name}: {counted(moved, 'line')} handed out {counted(limit, 'time')} "
        f"without an ack moved to the dead-letter room {dead_room_path(room)}"
    )
    h = resolve_home(home)
    tell(h, owner, room.name, str(room), "dead", text, count=moved, clock=clock)


def move_dead_letters(room: Room, limit: int) -> None:
    """Lines of `room` handed out `limit` times without an ack go to NAME.dead (a read runs
    this when the room's policy sets max_deliveries: core/rooms/file/room.py)."""
    if not room._side.ensure(create=False):
        return
    # The room's own class (room.py imports this module in the method that calls it).
    dead = type(room)(dead_room_path(room.path), clock=room._clock, door=room.door)
    try:
        with room._side.lock(shared=False):
            fd = room._open()
            if fd is None:
                return
            try:
                if not prepare(fd, dead.path):
                    return  # a dead-letter room that cannot take lines never blocks this one
                moved = move_locked(
                    room._ack_site(), fd, room._side.journey_dir, limit, dead._append
                )
            except OSError as exc:
                raise write_error(room.path, exc) from None
            finally:
                os.close(fd)
    finally:
        dead.close()
    owner = room._policy_or_none().owner
    if moved and owner is not None:
        tell_owner(room._home, owner, room.path, moved, limit, room._clock)
