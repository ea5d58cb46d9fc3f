"""The ack transaction: drop a verified head of the room by temp file + rename, crash-safely.

An ack runs under the room's exclusive lock. Its steps, in this order, are the fault-injection
points of core/base/faults.py (tests/test_room_crash.py kills a real process at each):

  before-size                           measure what the ack covers
  before-temp → mid-temp → after-temp   copy what stays into a temp file (mid-temp: ack_stream)
  after-link                            hard-link the old inode into the sidecar (late writers)
  after-pending                         record the intent (`pending`) in the ledger
  before-rename                         the temp took what the old inode got since (catch-up)
  after-rename                          rename the temp over the room
  before-/after-splice-rename           place a late tail of the old inode (carry_over.py)
  after-sweep → after-fsync-dir         carry late bytes over, fsync the directory, again
  after-audit                           append the audit entry (what says "acked")
  after-commit                          store the ledger with the new base and counters
  after-receipt                         mark the session's receipt acked

A kill -9 anywhere leaves the old file (before the rename) or the new one (after it); the next
exclusive operation removes leftover temps and orphan links, completes an interrupted commit
(`pending` in the ledger) and carries late bytes from the old inode.
"""

from __future__ import annotations

import os
import stat

# functools.partial itself (C): `functools` imports `collections`, which a turn's ack need not.
from _functools import partial

from ackdeck.core.base import atomic
from ackdeck.core.base.byteio import (
    complete_end,
    complete_prefix,
    count_lines,
    pread_all,
    pread_all_from,
    pread_chunks,
    read_page,
    settled_size,
    split_lines,
    write_all,
)
from ackdeck.core.base.digest import LINE_DIGEST, line_digests
from ackdeck.core.base.faults import pause
from ackdeck.core.base.fileid import birth_ns_path
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.text import counted
from ackdeck.core.errors import RoomUnavailable
from ackdeck.core.rooms.file import carry_over, prev_inodes
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file.ack_stream import CountingCopy
from ackdeck.core.rooms.file.receipts import Receipt, ReceiptHeader, ReceiptStore
from ackdeck.core.rooms.file.sidecar import AuditEntry, Sidecar, same_inode
from ackdeck.core.rooms.results import PAGE_BYTES, UNSHOWN_WHY, AckResult, Shown
from ackdeck.core.rooms.room_errors import RENAMED, cold_ack, write_error

# On a turn's ack (tests/test_layering.py): the room's names are plain strings (the Room's own),
# so pathlib (with `re`, `urllib.parse`, `ipaddress`) is for type checkers only here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

STALE_REPLACED = (
    "the room was replaced during the ack; nothing was removed. Read the room again, then ack"
)


class AckSite(Struct):
    """The room an ack works on: its files and the ledger operations it needs (the Room's,
    core/rooms/file/room.py). Every one is called with the exclusive lock held."""

    path: str  # absolute, as pathlib spells it (the Room's)
    sidecar: Sidecar
    receipts: ReceiptStore
    # The ledger reconciled with the file open at fd (persisted if it changed): (ledger, stat).
    settle: Callable[[int], tuple[L.Ledger, L.FileStat]]
    store: Callable[[L.Ledger], None]  # store a ledger state
    # Carry late bytes out of replaced inodes into the room (all of them, or only the newest,
    # the one this ack linked): (ledger after, lines carried).
    sweep_all: Callable[[L.Ledger], tuple[L.Ledger, int]]
    sweep_newest: Callable[[L.Ledger], tuple[L.Ledger, int]]
    clock: Callable[[], float]
    # The furthest logical offset ackdeck numbered in the room (a new epoch starts past it).
    numbered: Callable[[], int]


# ----- what an ack may remove ---------------------------------------------------------------
def refuse_hard_linked(path: str, fd: int) -> None:
    """Refuse to ack a room file that has another name. An ack renames a new file over the
    room, which splits a hard link: the other name keeps every acked line (read there again),
    and its later appends land in the replaced inode, which the sweep carries into this room
    (one line in two rooms). Our own crash leftovers (links of the current inode) are gone by
    now (settle and remove_leftovers), so any other link is someone else's name."""
    links = os.fstat(fd).st_nlink
    if links > 1:
        raise RoomUnavailable(
            f"room {path} has {counted(links - 1, 'other hard link')}: an ack replaces the "
            "file, so the other name would keep the acked lines; remove the other name (or make "
            "it a copy), then ack; nothing was removed"
        )


def ack_locked(
    site: AckSite,
    fd: int,
    session: str,
    *,
    ack_all: bool,
    reader: str | None,
    page: int = PAGE_BYTES,
    shown: Shown | None = None,
) -> AckResult:
    """Ack for `session` (or, `ack_all`, the first page of complete lines: at most `page`
    bytes or one longer line, which it returns) in the room open at `fd`, with the
    exclusive lock held: decide what may go (refusals raise ColdAck), then run the
    transaction. Only a receipt handed to the same `reader` authorises the ack. `shown`
    (issue 41) says how many of the read's lines still at the head, from the first, the
    reader's model was shown: the receipt is cut to those first, the rest stay unread."""
    # Upkeep any exclusive operation does, also before a refusal: finish an interrupted
    # ack and carry late lines out of replaced inodes (so the unread count includes them).
    # It never removes a line; the refusal itself records nothing.
    ledger, cur = site.settle(fd)
    site.sidecar.remove_leftovers(ledger)
    ledger, _ = site.sweep_all(ledger)
    refuse_hard_linked(site.path, fd)
    header = None if ack_all else site.receipts.header(session)
    if not ack_all and (header is None or header.acked):
        why = "no read" if header is None else "no unacked read"
        raise cold_ack(session, why, count_lines(fd, os.fstat(fd).st_size))
    if header is not None and header.reader != reader:
        # Another reader was given these lines; this one may never have seen them.
        why = "no read by this reader (the last read went to another reader)"
        raise cold_ack(session, why, count_lines(fd, os.fstat(fd).st_size))
    if header is not None and header.seen is not None and not header.acked:
        if L.rewritten_since(header.seen, cur):
            # Rewritten in place after this read (e.g. truncated and refilled): the bytes
            # at the head may be new lines identical to the consumed ones. New epoch.
            head = os.pread(fd, L.HEAD_BYTES, 0)
            ledger = L.settle(ledger, "foreign", L.identity_of(cur, head), site.numbered())
            site.store(ledger)
    unshown = 0
    evidence = None if shown is None else shown.evidence
    if shown is not None and header is not None:
        header, unshown = narrow(site, fd, header, ledger, shown)
        if header.acked:  # the model was shown none of what is left: nothing to remove
            preserved = count_lines(fd, os.fstat(fd).st_size)
            return AckResult(
                mode="prefix",
                acked=0,
                preserved=preserved,
                unshown=unshown,
                message=f"acked 0 lines: {UNSHOWN_WHY} ({counted(unshown, 'line')})",
            )
    pause("before-size")
    # Not a plain fstat: it can end inside an unlocked producer's half-written line, whose
    # first part would then start a line in the new room and its rest follow later, after
    # other producers' lines (two lines torn).
    size = settled_size(fd)

    # Every transaction below removes from this file, as it is now, for this session.
    remove = partial(AckTransaction, site, fd=fd, size=size, ledger=ledger, session=session)

    if ack_all:
        dropped = read_page(fd, size, page)  # what a read would hand out: bounded alike
        if not dropped:
            return AckResult(
                mode="all", acked=0, preserved=0, message="no complete lines to ack", lines=[]
            )
        plan = L.AckPlan("all", len(dropped))
        acked, digest = dropped.count(b"\n"), L.sha256(dropped)
        done = remove(plan=plan, acked=acked, digest=digest, dropped_all=dropped).run()
        assert done is not None  # no verification step can refuse an ack-all
        return done
    assert header is not None and not header.acked  # refused above
    plan = L.plan_offsets(header, ledger.epoch, ledger.base)
    if plan.mode == "prefix":
        if ledger.base == header.start:
            # Fast path: nobody acked part of this read, so all of it must still be at the
            # head; hashed while the temp is written, checked before the rename.
            with site.receipts.head_check(fd, header, plan.drop) as verify:
                done = remove(
                    plan=plan,
                    acked=header.lines,
                    digest=header.sha256,
                    receipt=header,
                    verify=verify,
                    proof=evidence,
                ).run()
        else:
            # Another session acked the first part: match the rest line by line.
            head = pread_all(fd, plan.drop)
            receipt = site.receipts.load(session)
            same = receipt is not None and receipt.header == header
            digests = receipt.digests if receipt is not None and same else b""
            checked = L.plan_ack(header, digests, ledger.epoch, ledger.base, head)
            acked, digest = head.count(b"\n"), L.sha256(head)
            done = (
                remove(plan=plan, acked=acked, digest=digest, receipt=header, proof=evidence).run()
                if checked == plan
                else None
            )
        if done is not None:
            if unshown:
                why = f"; {counted(unshown, 'line')} of the read stay unread: {UNSHOWN_WHY}"
                done = done.replace(unshown=unshown, message=done.message + why)
            return done
        plan = L.HEAD_DIFFERS
    site.receipts.mark_acked(header)
    preserved = count_lines(fd, size)
    if plan.mode == "stale":
        site.sidecar.audit(
            AuditEntry(
                at=site.clock(),
                session=session,
                mode="stale",
                epoch=ledger.epoch,
                start=ledger.base,
                end=ledger.base,
                acked=0,
                preserved=preserved,
                sha256=None,
            )
        )
        return AckResult(
            mode="stale",
            acked=0,
            preserved=preserved,
            message=f"{plan.reason}; nothing was removed. Read the room again, then ack",
        )
    return AckResult(mode=plan.mode, acked=0, preserved=preserved, message=plan.reason)


def narrow(
    site: AckSite, fd: int, header: ReceiptHeader, ledger: L.Ledger, shown: Shown
) -> tuple[ReceiptHeader, int]:
    """The receipt `header` cut to the lines `shown` says the model saw, stored, and how many
    of its lines still at the head were not shown. `shown` gets those lines (the bytes the
    room holds now, checked against the receipt's digests). Whatever cannot be checked here
    (another epoch, the head differs, a receipt replaced) is left as it was: the ack's own
    checks then refuse it. None shown: the receipt becomes a cursor at the head (it
    authorises nothing; the lines count as unread)."""
    if ledger.epoch != header.epoch or not header.start <= ledger.base < header.end:
        return header, 0
    head = pread_all(fd, header.end - ledger.base)
    lines = split_lines(head)
    gone = header.lines - len(lines)  # the first lines, acked by another session already
    if not head.endswith(b"\n") or gone < 0:
        return header, 0
    k = max(0, min(shown.count(lines), len(lines)))
    if k == len(lines):
        return header, 0  # all shown: the ack's own checks verify the head, as always
    # A cut must be of the lines this session read: checked against the receipt's digests.
    receipt = site.receipts.load(header.session)
    if (
        receipt is None
        or receipt.header != header
        or line_digests(lines) != receipt.digests[gone * LINE_DIGEST :]
    ):
        return header, 0
    size = sum(len(line) + 1 for line in lines[:k])
    digests = receipt.digests[: (gone + k) * LINE_DIGEST]
    cut = header.replace(
        end=ledger.base + size,
        lines=gone + k,
        sha256=L.sha256(head[:size]),
        digests_sha256=L.sha256(digests),
    )
    site.receipts.store(Receipt(cut, digests))
    if k == 0:
        site.receipts.mark_acked(cut)
        cut = cut.replace(acked=True)
    return cut, len(lines) - k


# ----- the transaction ------------------------------------------------------------------------


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
        dead: str | None = None,
        proof: str | None = None,
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
        # The dead-letter room the dropped lines were moved to (core/rooms/file/deadletter.py):
        # counted as dead, not acked, and audited as mode "dead".
        self.dead = dead
        self.proof = proof  # the record proving the lines were shown (Shown.evidence)
        # Filled in by the steps.
        self.st = os.fstat(fd)  # the room inode being replaced
        self.copy = CountingCopy(fd, plan.drop, size)
        self.link: str | None = None
        self.pending = ledger  # the ledger with the intent recorded
        self._fd_offset = size  # how far the fallback sweep read the old inode
        # Late tails handed over to the new file (core/rooms/file/carry_over.py).
        self.placed = 0  # bytes this ack put in the new file (the temp, catch-up, splices)
        self.placed_lines = 0  # newlines handed over by catch-up and splices
        self.spliced_lines = 0  # of which carried by splices (counted as late lines)
        self._tmp_out: int | None = None  # the temp's descriptor while catch-up bytes await fsync
        self._own_fd: int | None = None  # a replaced inode a splice opened (closed at the end)

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
            self.catch_up(tmp)
            pause("before-rename")
        except BaseException:
            self._close_tmp_out()
            atomic.unlink_quietly(tmp)
            raise
        atomic.replace(tmp, path, fsync=False)
        pause("after-rename")
        try:
            return self.finish()
        except OSError as exc:
            raise write_error(path, exc, after=RENAMED) from None
        finally:
            self._close_tmp_out()
            if self._own_fd is not None:
                os.close(self._own_fd)
                self._own_fd = None

    # ----- before the rename: nothing visible changes -----------------------------------------
    def write_temp(self) -> str:
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
        self.placed = self.size - self.plan.drop
        pause("after-temp")
        return tmp

    def link_old_inode(self) -> None:
        """Keep the inode being replaced reachable for late unlocked writers."""
        self.link = prev_inodes.link_old_inode(self.site.path, self.site.sidecar.path_s, self.st)
        pause("after-link")

    def record_intent(self, tmp: str) -> None:
        """Intent first: if we die after the rename, the next caller recognises the new inode
        as ours (and sweeps the linked old one) instead of starting a new epoch."""
        new_identity = L.identity_of(L.stat_of(os.stat(tmp), birth_ns_path(tmp)), self.copy.head)
        now = self.site.clock()
        prev = list(self.ledger.prev)
        if self.link is not None:
            entry = L.PrevInode(
                name=os.path.basename(self.link),
                dev=self.st.st_dev,
                ino=self.st.st_ino,
                offset=self.size,
                since=now,
            )
            # Never dropped here (its link would become an orphan, its late lines lost):
            # sweeps retire the oldest beyond MAX_PREV once nobody holds them.
            prev = [*prev, entry]
        self.pending = self.ledger.replace(
            pending=L.PendingRewrite(
                identity=new_identity,
                base=self.ledger.base + self.plan.drop,
                session=self.session,
                acked=self.acked,
                at=now,
                dead=self.dead,
            ),
            prev=prev,
        )
        self.site.store(self.pending)
        pause("after-pending")

    def catch_up(self, tmp: str) -> None:
        """Just before the rename: the temp takes the complete lines the old inode got since
        the copy (carry_over.py; a partial last line waits for the splice, which can tell
        whether its writer let go). The intent is stored again with the replaced inode's
        offset past them before the rename: a kill right after the rename must not make the
        recovery carry them out of that inode a second time (a producer that keeps its
        descriptor writes its next lines there, and the sweeps take them from that offset).
        A kill before the rename leaves the old file, and the intent's offsets are dropped
        with it (ledger.settle). The bytes are fsync'd after the rename."""
        take = complete_prefix(carry_over.tail_of(self.fd, self._fd_offset))
        if not take:
            return
        self._tmp_out = os.open(tmp, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        write_all(self._tmp_out, take)
        self._handed_over(len(take), take.count(b"\n"))
        if self.link is not None:
            self.site.store(self.pending)

    def _handed_over(self, n: int, lines: int) -> None:
        """`n` bytes (`lines` newlines) past the old inode's handed-over offset now follow in
        the new file: advance that offset (the newest replaced inode's) in the intent."""
        self._fd_offset += n
        self.placed += n
        self.placed_lines += lines
        if self.link is not None:
            prev = self.pending.prev
            newest = prev[-1].replace(offset=prev[-1].offset + n)
            self.pending = self.pending.replace(prev=[*prev[:-1], newest])

    def _close_tmp_out(self) -> None:
        if self._tmp_out is not None:
            os.close(self._tmp_out)
            self._tmp_out = None

    def abandon(self, tmp: str) -> AckResult:
        """Undo the intent, the link and the temp: the ack removes nothing."""
        self.site.store(self.ledger)
        if self.link is not None:
            atomic.unlink_quietly(self.link)
        atomic.unlink_quietly(tmp)
        return AckResult(mode="stale", acked=0, preserved=0, message=STALE_REPLACED)

    # ----- after the rename ------------------------------------------------------------------
    def finish(self) -> AckResult:
        """Splices, sweeps, directory fsync, audit, commit, receipt."""
        if self._tmp_out is not None:
            os.fsync(self._tmp_out)
            self._close_tmp_out()
        for _ in range(carry_over.MAX_SPLICES):
            if not self.splice():
                break
        swept = self.sweep_late()
        pause("after-sweep")
        atomic.fsync_dir(atomic.parent(self.site.path))
        pause("after-fsync-dir")
        swept += self.sweep_late()
        remaining = self.copy.newlines + self.placed_lines + swept
        # The audit entry first, while the ledger still holds the intent: the audit is what
        # says "acked" (trace, push --wait-ack), so no committed base may run ahead of it. A
        # kill between the two leaves the intent, and its recovery sees the entry is there.
        self.audit(remaining)
        pause("after-audit")
        self.commit(remaining)
        pause("after-commit")
        self.site.receipts.mark_acked(self.receipt)
        pause("after-receipt")
        lines = split_lines(self.dropped_all) if self.dropped_all is not None else None
        msg = (
            f"acked {counted(self.acked, 'line')}; preserved {counted(remaining, 'line')} that "
            "arrived or remain unread"
        )
        return AckResult(
            mode=self.plan.mode, acked=self.acked, preserved=remaining, message=msg, lines=lines
        )

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

    def splice(self) -> bool:
        """After the rename, with the lock still held (no reader saw the new file): if the
        replaced inode got a final tail after the catch-up (a producer's write landed between
        it and the rename), rewrite the new file with that tail where it belongs, right after
        what this ack put there (carry_over.py). True if it did; the inode it replaced is then
        the one to check. The intent names the splice's output before its rename, and where
        the tail's inode stands once it happened (`spliced_tail`), so a kill on either side
        of it is recovered as this ack, the tail carried exactly once."""
        if self.link is None:
            return False
        # Held first, then the tail: nobody can open the replaced inode any more, so once no
        # writer holds it its tail is final (a writer that opened it before the rename may
        # not have written yet).
        if carry_over.held(self.link, self.st):
            return False  # its writer may still finish its line there: the sweeps
        tail = carry_over.tail_of(self.fd, self._fd_offset)
        if not tail:
            return False
        path = self.site.path
        intent = self.pending.pending
        assert intent is not None
        nfd = carry_over.open_ours(path, intent.spliced or intent.identity)
        if nfd is None:
            return False  # not our file any more (a foreign rename): the sweeps
        keep = False
        try:
            nst = os.fstat(nfd)
            # Whole lines only past what this ack put there: a partial last line may be a
            # write in progress, or a writer holding its descriptor, whose rest lands in this
            # inode once the splice replaced it (and the sweeps would carry it after other
            # lines: torn, seen in CI). Left here, the next splice places it once no writer
            # holds the inode, or the sweeps carry it whole.
            end = max(self.placed, complete_end(nfd, nst.st_size))
            chunks = carry_over.spliced(pread_chunks(nfd, 0, end), self.placed, tail)
            tmp = atomic.write_temp(
                path, chunks, mode=stat.S_IMODE(nst.st_mode), owner=(nst.st_uid, nst.st_gid)
            )
            before = self.pending
            try:
                link = prev_inodes.link_old_inode(path, self.site.sidecar.path_s, nst)
                if link is None:
                    atomic.unlink_quietly(tmp)
                    return False
                self._splice_intent(tmp, nst, link, end, len(tail))
                if not same_inode(path, nst):
                    self.site.store(before)
                    self.pending = before
                    atomic.unlink_quietly(link)
                    atomic.unlink_quietly(tmp)
                    return False
                # Catch-up, whole lines only (as the ack's own, and for the reason above).
                late = complete_prefix(carry_over.tail_of(nfd, end))
                if late:
                    self._tmp_out = os.open(tmp, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
                    write_all(self._tmp_out, late)
                    # Stored before the rename, as the ack's catch-up is: if the rename does
                    # not happen, the file it replaces is still the room and this entry is
                    # dropped (ledger.settle); if it does, these bytes are never carried again.
                    prev = self.pending.prev
                    newest = prev[-1].replace(offset=end + len(late))
                    self.pending = self.pending.replace(prev=[*prev[:-1], newest])
                    self.site.store(self.pending)
                pause("before-splice-rename")
            except BaseException:
                self._close_tmp_out()
                atomic.unlink_quietly(tmp)
                raise
            atomic.replace(tmp, path, fsync=False)
            pause("after-splice-rename")
            keep = True
            if self._tmp_out is not None:
                os.fsync(self._tmp_out)
                self._close_tmp_out()
        finally:
            if not keep:
                os.close(nfd)
        # The old inode's tail is in the room now (its offset is stored with the next
        # store); the inode just replaced is the newest one to check.
        lines = tail.count(b"\n") + late.count(b"\n")
        self.spliced_lines += tail.count(b"\n")
        self.placed_lines += lines
        self.placed = end + len(tail) + len(late)
        old = self.pending.prev
        moved = old[-2].replace(offset=old[-2].offset + len(tail))
        newest = old[-1].replace(offset=end + len(late))
        self.pending = self.pending.replace(prev=[*old[:-2], moved, newest])
        if self._own_fd is not None:
            os.close(self._own_fd)
        self._own_fd = self.fd = nfd
        self.st, self.link, self._fd_offset = nst, link, end + len(late)
        return True

    def _splice_intent(
        self, tmp: str, nst: os.stat_result, link: str, offset: int, tail: int
    ) -> None:
        """Record the splice before its rename: its output (recognised like the ack's own),
        the inode it replaces, linked for late writers, handed over up to `offset`, and the
        inode its `tail` bytes came from as it is once the rename happened (recovery adopts
        that only if it did)."""
        with open(tmp, "rb") as f:
            head = f.read(L.HEAD_BYTES)
        spliced = L.identity_of(L.stat_of(os.stat(tmp), birth_ns_path(tmp)), head)
        intent = self.pending.pending
        assert intent is not None
        source = self.pending.prev[-1]  # the inode the last rename replaced: self.fd's
        entry = L.PrevInode(
            name=os.path.basename(link),
            dev=nst.st_dev,
            ino=nst.st_ino,
            offset=offset,
            since=self.site.clock(),
        )
        self.pending = self.pending.replace(
            pending=intent.replace(
                spliced=spliced, spliced_tail=source.replace(offset=source.offset + tail)
            ),
            prev=[*self.pending.prev, entry],
        )
        self.site.store(self.pending)

    def commit(self, remaining: int) -> None:
        intent = self.pending.pending
        assert intent is not None and intent.at is not None
        ledger = self.ledger
        counts: dict[str, object] = (
            {"dead_total": ledger.dead_total + self.acked}
            if self.dead is not None
            else {
                "acked_total": ledger.acked_total + self.acked,
                "last_ack_at": intent.at,
                "last_ack_session": self.session,
                "preserved_total": ledger.preserved_total + remaining,
            }
        )
        committed = self.pending.replace(
            base=ledger.base + self.plan.drop,
            identity=intent.spliced or intent.identity,
            pending=None,
            late_total=self.pending.late_total + self.spliced_lines,
            **counts,
        )
        self.site.store(committed)

    def audit(self, remaining: int) -> None:
        ledger = self.ledger
        self.site.sidecar.audit(
            AuditEntry(
                at=self.site.clock(),
                session=self.session,
                mode=self.plan.mode if self.dead is None else "dead",
                epoch=ledger.epoch,
                start=ledger.base,
                end=ledger.base + self.plan.drop,
                acked=self.acked,
                preserved=remaining,
                sha256=self.digest,
                dead=self.dead,
                proof=self.proof,
            )
        )


def sweep_fd(path: str, old_fd: int, offset: int) -> tuple[int, int]:
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
