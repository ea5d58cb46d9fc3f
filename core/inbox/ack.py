"""The ack transaction: drop a verified head of the room by temp file + rename, crash-safely.

An ack runs under the room's exclusive lock. Its steps, in this order, are the fault-injection
points of core/base/faults.py (tests/test_room_crash.py kills a real process at each):

  before-temp → mid-temp → after-temp   copy what stays into a temp file (mid-temp: ack_stream)
  after-link                            hard-link the old inode into the sidecar (late writers)
  after-pending                         record the intent (`pending`) in the ledger
  after-rename                          rename the temp over the room
  after-sweep → after-fsync-dir         carry late bytes over, fsync the directory, again
  after-commit                          store the ledger with the new base and counters
  after-audit                           append the audit entry
  after-receipt                         mark the session's receipt acked

A kill -9 anywhere leaves the old file (before the rename) or the new one (after it); the next
exclusive operation removes leftover temps and orphan links, completes an interrupted commit
(`pending` in the ledger) and carries late bytes from the old inode.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from core.base import atomic
from core.base.byteio import complete_prefix, pread_all_from, split_lines, write_all
from core.base.faults import pause
from core.base.fileid import birth_ns_path
from core.base.record import Struct
from core.inbox import ledger as L
from core.inbox import prev_inodes
from core.inbox.ack_stream import CountingCopy
from core.inbox.receipts import ReceiptHeader, ReceiptStore
from core.inbox.results import AckResult
from core.inbox.room_errors import RENAMED, write_error
from core.inbox.sidecar import AuditEntry, Sidecar, same_inode

STALE_REPLACED = (
    "stale: the room was replaced during the ack; nothing was removed. "
    "Read the room again, then ack"
)


class AckSite(Struct):
    """The room an ack works on: its files and the ledger operations it needs."""

    path: Path
    sidecar: Sidecar
    receipts: ReceiptStore
    store: Callable[[L.Ledger], None]  # store a ledger state (exclusive lock held)
    # Sweep the newest replaced inode into the room: (ledger after, lines carried).
    sweep_newest: Callable[[L.Ledger], tuple[L.Ledger, int]]
    clock: Callable[[], float]


class AckTransaction:
    """One ack: drop `plan.drop` head bytes of the room open at `fd` (`size` bytes, described
    by `ledger`) for `session`.

    The head is verified already, or by `verify()` once the temp is written (run() then
    returns None if it says no: the caller reports a stale ack). `acked` and `digest` describe
    the dropped lines for the counters and the audit log; `receipt` is marked acked at the
    end; `dropped_all` (ack-all only) are the dropped bytes, returned as lines.
    """

    def __init__(
        self,
        site: AckSite,
        *,
        fd: int,
        size: int,
        ledger: L.Ledger,
        session: str,
        plan: L.AckPlan,
        acked: int,
        digest: str,
        receipt: ReceiptHeader | None = None,
        dropped_all: bytes | None = None,
        verify: Callable[[], bool] | None = None,
    ) -> None:
        self.site = site
        self.fd = fd
        self.size = size
        self.ledger = ledger
        self.session = session
        self.plan = plan
        self.acked = acked
        self.digest = digest
        self.receipt = receipt
        self.dropped_all = dropped_all
        self.verify = verify
        # Filled in by the steps.
        self.st = os.fstat(fd)  # the room inode being replaced
        self.copy = CountingCopy(fd, plan.drop, size)
        self.link: Path | None = None
        self.pending = ledger  # the ledger with the intent recorded
        self._fd_offset = size  # how far the fallback sweep read the old inode

    def run(self) -> AckResult | None:
        path = self.site.path
        tmp = self.write_temp()
        try:
            if self.verify is not None and not self.verify():
                atomic.unlink_quietly(tmp)
                return None
            self.link_old_inode()
            self.record_intent(tmp)
            if not same_inode(path, self.st):
                # Replaced behind our back (a foreign rename) since we opened it: our copy is
                # of a file that is no longer the room. Remove nothing.
                return self.abandon(tmp)
        except BaseException:
            atomic.unlink_quietly(tmp)
            raise
        atomic.replace(tmp, path, fsync=False)
        pause("after-rename")
        try:
            return self.finish()
        except OSError as exc:
            raise write_error(path, exc, after=RENAMED) from None

    # ----- before the rename: nothing visible changes -----------------------------------------
    def write_temp(self) -> Path:
        """Copy what stays (everything after the dropped head) into a temp beside the room."""
        pause("before-temp")
        try:
            tmp = atomic.write_temp(
                self.site.path,
                self.copy.chunks(),
                mode=stat.S_IMODE(self.st.st_mode),
                owner=(self.st.st_uid, self.st.st_gid),
            )
        except OSError as exc:
            raise write_error(self.site.path, exc) from None
        pause("after-temp")
        return tmp

    def link_old_inode(self) -> None:
        """Keep the inode being replaced reachable for late unlocked writers."""
        self.link = prev_inodes.link_old_inode(self.site.path, self.site.sidecar.path, self.st)
        pause("after-link")

    def record_intent(self, tmp: Path) -> None:
        """Intent first: if we die after the rename, the next caller recognises the new inode
        as ours (and sweeps the linked old one) instead of starting a new epoch."""
        new_identity = L.identity_of(L.stat_of(os.stat(tmp), birth_ns_path(tmp)), self.copy.head)
        now = self.site.clock()
        prev = list(self.ledger.prev)
        if self.link is not None:
            entry = L.PrevInode(
                name=self.link.name,
                dev=self.st.st_dev,
                ino=self.st.st_ino,
                offset=self.size,
                since=now,
            )
            # Never dropped here (its link would become an orphan, its late lines lost):
            # sweeps retire the oldest beyond MAX_PREV once nobody holds them.
            prev = [*prev, entry]
        self.pending = self.ledger.model_copy(
            update={
                "pending": L.PendingRewrite(
                    identity=new_identity,
                    base=self.ledger.base + self.plan.drop,
                    session=self.session,
                    acked=self.acked,
                    at=now,
                ),
                "prev": prev,
            }
        )
        self.site.store(self.pending)
        pause("after-pending")

    def abandon(self, tmp: Path) -> AckResult:
        """Undo the intent, the link and the temp: the ack removes nothing."""
        self.site.store(self.ledger)
        if self.link is not None:
            atomic.unlink_quietly(self.link)
        atomic.unlink_quietly(tmp)
        return AckResult("stale", 0, 0, STALE_REPLACED)

    # ----- after the rename ------------------------------------------------------------------
    def finish(self) -> AckResult:
        """Sweeps, directory fsync, commit, audit, receipt."""
        swept = self.sweep_late()
        pause("after-sweep")
        atomic.fsync_dir(self.site.path.parent)
        pause("after-fsync-dir")
        swept += self.sweep_late()
        remaining = self.copy.newlines + swept
        self.commit(remaining)
        pause("after-commit")
        self.audit(remaining)
        pause("after-audit")
        self.site.receipts.mark_acked(self.receipt)
        pause("after-receipt")
        lines = split_lines(self.dropped_all) if self.dropped_all is not None else None
        msg = (
            f"acked {self.acked} line(s); preserved {remaining} line(s) that arrived or remain "
            "unread"
        )
        return AckResult(self.plan.mode, self.acked, remaining, msg, lines)

    def sweep_late(self) -> int:
        """Carry over bytes that unlocked producers who opened the path before the rename wrote
        into the old inode; the lines carried. Done before and after the directory fsync, and
        (through the link) by every exclusive operation for PREV_GRACE_S. With no link (a
        filesystem without hard links) the still-open descriptor allows these two sweeps.
        The sweep stores the ledger with `pending` still set, so a crash right after it is
        still recovered as our rename; the commit takes the swept offsets from it."""
        if self.link is None:
            self._fd_offset, n = sweep_fd(self.site.path, self.fd, self._fd_offset)
            return n
        self.pending, n = self.site.sweep_newest(self.pending)
        return n

    def commit(self, remaining: int) -> None:
        intent = self.pending.pending
        assert intent is not None and intent.at is not None
        ledger = self.ledger
        committed = self.pending.model_copy(
            update={
                "base": ledger.base + self.plan.drop,
                "identity": intent.identity,
                "pending": None,
                "acked_total": ledger.acked_total + self.acked,
                "last_ack_at": intent.at,
                "last_ack_session": self.session,
                "preserved_total": ledger.preserved_total + remaining,
            }
        )
        self.site.store(committed)

    def audit(self, remaining: int) -> None:
        ledger = self.ledger
        self.site.sidecar.audit(
            AuditEntry(
                at=self.site.clock(),
                session=self.session,
                mode=self.plan.mode,
                epoch=ledger.epoch,
                start=ledger.base,
                end=ledger.base + self.plan.drop,
                acked=self.acked,
                preserved=remaining,
                sha256=self.digest,
            )
        )


def sweep_fd(path: Path, old_fd: int, offset: int) -> tuple[int, int]:
    """Fallback sweep through the still-open old inode (no hard link available).

    Returns (new offset, newlines carried)."""
    late = complete_prefix(pread_all_from(old_fd, offset))
    if not late:
        return offset, 0
    out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        write_all(out, late)
        os.fsync(out)
    finally:
        os.close(out)
    return offset + len(late), late.count(b"\n")
