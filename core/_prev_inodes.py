"""Replaced room inodes: where late bytes from producers that do not lock end up.

An ack renames a new file over the room. A producer that opened the path just before (a shell
poller doing `printf >> room`) writes into the old inode. Before its rename an ack hard-links
the old inode into the sidecar (`prev-*`, listed in the ledger with the offset up to which it
was copied); every exclusive operation then carries complete lines written past that offset
into the room, for PREV_GRACE_S, after which anything left is carried and the link removed.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from . import _atomic
from . import ledger as L
from ._bytes import complete_prefix, pread_all_from, write_all

# How long a replaced inode stays linked (and swept) after an ack. A producer that opened the
# path before the rename and writes within this many seconds still reaches the room.
PREV_GRACE_S = 10.0
# Bound on replaced inodes kept at once (each holds up to one old copy of the room on disk).
MAX_PREV = 8
PREV_PREFIX = "prev-"


def need_sweep(sidecar: Path, ledger: L.Ledger, now: float, grace: float) -> bool:
    """Cheap check under the shared lock: does an old inode hold late bytes, or expire?"""
    for p in ledger.prev:
        if now - p.since > grace:
            return True
        try:
            if os.stat(os.path.join(sidecar, p.name)).st_size > p.offset:
                return True
        except FileNotFoundError:
            return True
    return False


def sweep(
    room: Path,
    sidecar: Path,
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
    expired_links: list[Path] = []
    changed = False
    newest = ledger.prev[-1].name
    for p in ledger.prev:
        if only_newest and p.name != newest:
            # Swept at the start of this ack; only the inode its rename replaced can hold
            # new late bytes this soon.
            kept.append(p)
            continue
        link = sidecar / p.name
        expired = now - p.since > grace
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
        kept.append(p.model_copy(update={"offset": p.offset + len(late)}) if late else p)
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
        swept = ledger.model_copy(update={"prev": kept})
        store(swept)
        if out is not None:
            os.fsync(out)
    finally:
        if out is not None:
            os.close(out)
    for link in expired_links:
        _atomic._unlink_quietly(link)  # after the store; a leftover is an orphan, cleaned
    return swept, sum(piece.count(b"\n") for piece in pieces)


def late_bytes(link: Path, p: L.PrevInode, *, final: bool) -> bytes | None:
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


def link_old_inode(room: Path, sidecar: Path, st: os.stat_result) -> Path | None:
    """Hard-link the room's current inode into the sidecar; None if links are unsupported.

    Other OSErrors propagate (the caller turns them into a one-line error)."""
    link = sidecar / f"{PREV_PREFIX}{st.st_ino}-{secrets.token_hex(4)}"
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
        _atomic._unlink_quietly(link)
        return None
    return link


def remove_leftovers(room: Path, sidecar: Path, ledger: L.Ledger) -> None:
    """Remove temps and links left by crashed writers. Exclusive lock held, so every
    writer of these names (acks, and reads writing receipts under the shared lock) is idle."""
    _atomic.clean_stale_temps(room)
    live = {p.name for p in ledger.prev}
    for directory in (sidecar, sidecar / "receipts"):
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            continue
        for entry in entries:
            # Exact shapes only: a session may be named `prev-1` or `x.ackdeck-tmp-1`, and
            # its receipt (`receipts/<session>.rcpt`) is not a leftover.
            if _atomic.is_temp_name(entry.name) or (
                directory == sidecar
                and entry.name.startswith(PREV_PREFIX)
                and entry.name not in live
            ):
                _atomic._unlink_quietly(Path(entry.path))
