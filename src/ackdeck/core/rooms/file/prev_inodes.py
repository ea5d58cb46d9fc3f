"""Replaced room inodes: where late bytes from producers that do not lock end up.

An ack renames a new file over the room. A producer that opened the path just before (a shell
poller doing `printf >> room`) writes into the old inode. Before its rename an ack hard-links
the old inode into the sidecar (`prev-*`, listed in the ledger with the offset up to which it
was copied); every exclusive operation then carries complete lines written past that offset
into the room. After PREV_GRACE_S (or when more than MAX_PREV are kept) an inode is retired,
but only once no process holds it open for writing any more (the kernel tells: a read lease
is refused while it does; /proc/*/fd where leases are unavailable): a writer that keeps its
descriptor for minutes still reaches the room. Retiring carries
everything left, then removes the link.
"""

from __future__ import annotations

import errno
import fcntl
import os

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.byteio import complete_prefix, pread_all_from, write_all
from ackdeck.core.rooms.file import ledger as L

# On the hot path (tests/test_layering.py): these are for type checkers only; the paths
# themselves are the Room's (core/rooms/file/room.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from ackdeck.core.base.atomic import P

# How long a replaced inode stays linked (and swept) after an ack. A producer that opened the
# path before the rename and writes within this many seconds still reaches the room.
PREV_GRACE_S = 10.0
# Replaced inodes kept at once beyond which the oldest are retired early (each holds up to one
# old copy of the room on disk), unless a process still holds them open.
MAX_PREV = 8
# Even held-open inodes are retired beyond this many (the ledger slot must hold the list);
# the one residual loss left: see docs/concepts/exact-acks.md,
# "Producers that do not lock".
HARD_MAX_PREV = 40
# How often an inode kept because it was held open is looked up in /proc again.
HELD_RECHECK_S = 1.0
PREV_PREFIX = locations.PREV_PREFIX


def _due(p: L.PrevInode, index: int, count: int, now: float, grace: float) -> bool:
    """Is `p` due to be retired (if no process holds it open)? Pure."""
    if p.held_at is not None and now - p.held_at <= HELD_RECHECK_S:
        return False  # found held open a moment ago; look again later
    return now - p.since > grace or index < count - MAX_PREV


def open_for_writing(link: str | Path) -> bool | None:
    """Does any process hold this file open for writing? None if the kernel will not say.

    Asks for a read lease: Linux grants one only when no descriptor (of any process, user or
    PID namespace, a writable shared mapping, or one in flight over a socket) has the inode
    open for writing, and refuses with EAGAIN otherwise. A few microseconds, where a /proc
    scan costs milliseconds. Needs the file's owner or CAP_LEASE and fs.leases-enable.
    """
    try:
        fd = os.open(link, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        return True if exc.errno == errno.EAGAIN else None
    else:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return False
    finally:
        os.close(fd)


def held_by_writers(sidecar: str | Path, prevs: list[L.PrevInode]) -> set[tuple[int, int]]:
    """The (device, inode) pairs of `prevs` that some process may still write into: by lease
    where the kernel answers, else (not the owner, leases disabled) by a /proc scan."""
    held: set[tuple[int, int]] = set()
    unknown: list[tuple[int, int]] = []
    for p in prevs:
        answer = open_for_writing(os.path.join(sidecar, p.name))
        if answer:
            held.add((p.dev, p.ino))
        elif answer is None:
            unknown.append((p.dev, p.ino))
    return held | held_open(unknown)


def held_open(inodes: Iterable[tuple[int, int]]) -> set[tuple[int, int]]:
    """Which of these (device, inode) pairs some other process has open, from /proc/*/fd.

    The fallback for held_by_writers: only processes this user may inspect are seen (all of
    them for root). Sockets, pipes and anonymous inodes are skipped by their link text, so
    mostly regular files are stat'ed; about 20 ms with 120 processes on the development VM.
    """
    wanted = set(inodes)
    found: set[tuple[int, int]] = set()
    if not wanted:
        return found
    me = str(os.getpid())
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit() and d != me]
    except OSError:
        return found
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # exited, or not ours to see
        for fd in fds:
            entry = f"{fd_dir}/{fd}"
            try:
                if not os.readlink(entry).startswith("/"):
                    continue  # socket:[…], pipe:[…], anon_inode:…
                st = os.stat(entry)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in wanted:
                found.add(key)
                if found == wanted:
                    return found
    return found


def need_sweep(sidecar: str | Path, ledger: L.Ledger, now: float, grace: float) -> bool:
    """Cheap check under the shared lock: does an old inode hold late bytes, or expire?"""
    count = len(ledger.prev)
    for i, p in enumerate(ledger.prev):
        if _due(p, i, count, now, grace):
            return True
        try:
            if os.stat(os.path.join(sidecar, p.name)).st_size > p.offset:
                return True
        except FileNotFoundError:
            return True
    return False


def sweep(
    room: str | Path,
    sidecar: str | Path,
    ledger: L.Ledger,
    *,
    now: float,
    grace: float,
    store: Callable[[L.Ledger], None],
    only_newest: bool = False,
) -> tuple[L.Ledger, int]:
    """Carry bytes written to replaced inodes into the room. Exclusive lock held.

    Within the grace period only complete lines are carried (a writer may still be
    finishing its line); at expiry everything left is carried and the link removed.
    The ledger with the advanced offsets is stored right after the append and before the
    fsync, so only a kill in those microseconds can carry bytes twice (a redelivery);
    nothing can be carried zero times. Returns (ledger, newlines carried).
    """
    if not ledger.prev:
        return ledger, 0
    pieces: list[bytes] = []
    kept: list[L.PrevInode] = []
    expired_links: list[str] = []
    changed = False
    newest = ledger.prev[-1].name
    count = len(ledger.prev)
    due = {
        p.name
        for i, p in enumerate(ledger.prev)
        if not (only_newest and p.name != newest) and _due(p, i, count, now, grace)
    }
    # One /proc scan per sweep, and only when something is due: a writer holding a replaced
    # inode open may still write into it, so it is kept (and swept) until it lets go.
    held = held_by_writers(sidecar, [p for p in ledger.prev if p.name in due]) if due else set()
    for i, p in enumerate(ledger.prev):
        if only_newest and p.name != newest:
            # Swept at the start of this ack; only the inode its rename replaced can hold
            # new late bytes this soon.
            kept.append(p)
            continue
        link = os.path.join(sidecar, p.name)
        expired = p.name in due and ((p.dev, p.ino) not in held or i < count - HARD_MAX_PREV)
        late = late_bytes(link, p, final=expired)
        if late is None:  # the link vanished or is not that inode any more
            changed = True
            continue
        if late:
            pieces.append(late)
            changed = True
        if expired:
            expired_links.append(link)
            changed = True
            continue
        update: dict[str, object] = {}
        if late:
            update["offset"] = p.offset + len(late)
        if p.name in due:
            update["held_at"] = now  # due, but held open: kept, looked up again later
        if update:
            changed = True
        kept.append(p.replace(**update) if update else p)
    if not changed:
        return ledger, 0
    out: int | None = None
    if pieces:
        try:
            out = os.open(room, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            # The room was deleted meanwhile: keep every link until it is back.
            return ledger, 0
    try:
        if out is not None:
            write_all(out, b"".join(pieces))
        carried = sum(piece.count(b"\n") for piece in pieces)
        swept = ledger.replace(prev=kept, late_total=ledger.late_total + carried)
        store(swept)
        if out is not None:
            os.fsync(out)
    finally:
        if out is not None:
            os.close(out)
    for link in expired_links:
        atomic.unlink_quietly(link)  # after the store; a leftover is an orphan, cleaned
    return swept, carried


def late_bytes(link: str | Path, p: L.PrevInode, *, final: bool) -> bytes | None:
    """Bytes written to a replaced inode after `p.offset` (complete lines unless `final`)."""
    if not final:
        try:
            if os.stat(link).st_size <= p.offset:
                return b""  # nothing new: one stat instead of open/fstat/pread/close
        except FileNotFoundError:
            return None
    try:
        src = os.open(link, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(src)
        if (st.st_dev, st.st_ino) != (p.dev, p.ino):
            return None
        late = pread_all_from(src, p.offset)
    finally:
        os.close(src)
    return late if final else complete_prefix(late)


def own_links(sidecar: Path, st: os.stat_result) -> int:
    """How many of the room inode `st`'s names are ackdeck's own links in its `sidecar`: an
    ack killed between its link and its rename leaves one to the live file, which the next
    exclusive operation removes (so it is no other name to refuse the room for)."""
    try:
        entries = list(os.scandir(sidecar))
    except OSError:
        return 0
    own = 0
    for entry in entries:
        if not entry.name.startswith(PREV_PREFIX):
            continue
        try:
            est = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if (est.st_dev, est.st_ino) == (st.st_dev, st.st_ino):
            own += 1
    return own


def link_old_inode(room: P, sidecar: P, st: os.stat_result) -> P | None:
    """Hard-link the room's current inode into the sidecar; None if links are unsupported.

    Other OSErrors propagate (the caller turns them into a one-line error)."""
    link = locations.prev_inode(sidecar, st.st_ino, os.urandom(4).hex())
    try:
        os.link(room, link)
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EXDEV, errno.EACCES):
            return None
        raise
    lst = os.stat(link)
    if (lst.st_dev, lst.st_ino) != (st.st_dev, st.st_ino):
        # The path changed between our open and the link; the same-inode check before the
        # rename will turn this ack into a stale one.
        atomic.unlink_quietly(link)
        return None
    return link
