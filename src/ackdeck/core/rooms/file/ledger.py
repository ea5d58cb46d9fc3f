"""Persisted room state (typed records) and the pure decisions made on it. The receipts'
schema is in core/rooms/file/receipts.py.

Apart from the ledger file's reader and writer, everything here is free of I/O, so the rules
that decide what an ack may remove can be tested exhaustively (tests/test_ledger_decisions.py).
"""

from __future__ import annotations

import errno
import os

from ackdeck.core.base.byteio import split_lines
from ackdeck.core.base.digest import LINE_DIGEST, line_digests, sha256_hex
from ackdeck.core.base.statefile import open_state
from ackdeck.core.base.struct import Sparse, Struct
from ackdeck.core.errors import CorruptState, RecordError
from ackdeck.core.rooms.file import ledger_slots

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False

# How many leading bytes of the room file the ledger fingerprints. A foreign rewrite almost
# always changes the head; appends never do.
HEAD_BYTES = 4096


class FileStat(Struct):
    """The parts of stat(2) the ledger compares."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    # statx birth time (core/base/fileid.py); None where the filesystem does not record it.
    birth_ns: int | None = None


def stat_of(st: os.stat_result, birth_ns: int | None = None) -> FileStat:
    return FileStat(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, birth_ns)


class FileIdentity(Struct, kw_only=True):
    """The room file as ackdeck last saw or left it."""

    dev: int
    ino: int
    size: int
    head_len: int
    head_sha: str
    # Appends always grow a file, so the same inode at the same size with another mtime can
    # only be an in-place rewrite (`printf 'x\n' > room`), once a write in progress has been
    # waited out (Room._stat_fd). None in ledgers from older versions.
    mtime_ns: int | None = None
    # Birth time (statx): a room removed and recreated on a reused inode number is another
    # file. None where unavailable, and in ledgers from older versions.
    birth_ns: int | None = None


class PrevInode(Struct, kw_only=True):
    """A replaced room inode kept alive by a hard link in the sidecar for a grace period.

    Producers that do not lock (`printf >> room`) may have opened the path just before an ack
    renamed a new file over it; their bytes land in this inode. Every exclusive operation
    carries bytes past `offset` into the current file until the grace period ends.
    """

    name: str
    dev: int
    ino: int
    offset: int
    since: float
    # When a process was last found holding this inode open after its grace period (it is
    # kept while one does); None while within the grace period.
    held_at: float | None = None


class PendingRewrite(Struct, kw_only=True):
    """Written just before an ack's rename, so a crash between rename and commit is recognised
    (the new inode matches `identity`) and completed instead of being mistaken for a foreign
    rewrite."""

    identity: FileIdentity
    base: int
    # What the interrupted ack did, so recovery can complete its counters and audit entry.
    session: str = ""
    acked: int = 0
    at: float | None = None
    # The two below are written only when set (Sparse): an intent of a plain ack reads and
    # writes back byte for byte as ledgers written before dead-letter intents and splices.
    # A dead-letter move (core/rooms/file/deadletter.py): the room the lines went to. Recovery
    # counts them as dead and audits mode "dead", never as an ack nobody made.
    dead: Sparse[str | None] = None
    # The file the ack put in the room's place by a second rename, to place a late tail
    # (core/rooms/file/carry_over.py): recognised as the ack's output like `identity`.
    spliced: Sparse[FileIdentity | None] = None
    # The replaced inode that tail came from, as it is once that rename happened (its offset
    # past the tail): recovery adopts it only when the room is `spliced`, so a kill right after
    # the splice's rename does not carry the tail again, and one before it still carries it.
    spliced_tail: Sparse[PrevInode | None] = None


class Ledger(Struct, kw_only=True):
    version: int = 1
    base: int = 0
    epoch: int = 0
    identity: FileIdentity | None = None
    pending: PendingRewrite | None = None
    prev: list[PrevInode] = []
    acked_total: int = 0
    preserved_total: int = 0
    last_ack_at: float | None = None
    last_ack_session: str | None = None
    # Lines carried into the room from replaced inodes (late unlocked writers), ever.
    late_total: int = 0
    # Lines moved to the dead-letter room (core/rooms/file/deadletter.py), ever.
    dead_total: int = 0


if TYPE_CHECKING:
    from collections.abc import Callable  # annotations only, as pathlib: a turn loads neither
    from pathlib import Path  # annotations only: the room's paths are built by its Room
    from typing import Literal

    from ackdeck.core.rooms.file.receipts import ReceiptHeader

    # Types only: a result's JSON shape (core/service/results.py, fields_of) gives these
    # fields `str` explicitly.
    Verdict = Literal["same", "grown", "new", "foreign", "recovered"]
    AckMode = Literal["prefix", "noop", "stale", "refused", "all"]


# ----- the ledger file: two checksummed slots written in place ---------------------------
# Replacing a small file by rename costs ~0.2-0.5 ms on ext4 (auto_da_alloc starts writeback
# of the new inode), several times per ack. The ledger is instead one file with two fixed
# slots; each store writes the slot NOT holding the latest state with one pwrite, so a kill
# (or a torn write after a power cut) leaves the previous state intact in the other slot. A
# store is only ever made under the room's exclusive lock, and readers hold the shared lock.
# The slots themselves (their layout, the latest valid one, `base` for a push) are in
# core/rooms/file/ledger_slots.py, which a push imports without this module.
LEDGER_SLOT = ledger_slots.LEDGER_SLOT
_SLOT_MAGIC = ledger_slots.SLOT_MAGIC
slot_header = ledger_slots.slot_header
_latest_slot = ledger_slots.latest_slot


def load_ledger(path: str | Path, *, hint: str = "") -> Ledger | None:
    """The latest valid ledger state; None if there is none yet. Garbage raises, file kept."""
    raw = ledger_slots.read_slots(path)
    if raw is None:
        return None
    latest = _latest_slot(raw)
    if latest is None:
        if not raw.strip(b"\0"):
            return None  # created but never written: a kill before the first store
        raise CorruptState(f"corrupt state file {path} (no valid slot); it was left in place{hint}")
    try:
        return Ledger.loads(latest[1])
    except RecordError as exc:
        first = str(exc)
        raise CorruptState(
            f"corrupt state file {path} ({first}); it was left in place{hint}"
        ) from None


def load_base(
    path: str | Path,
    *,
    hint: str = "",
    cache: dict[tuple[int, int], int] | None = None,
    fresh: Callable[[], int] = lambda: 0,
) -> int:
    """Just `base` (for push, on every line); `fresh()` when there is no ledger state yet.

    A slot's content never changes while its sequence number stays (the next store goes to the
    other slot, the one after that gets a higher number), so `cache` maps (ledger inode, seq)
    to the base verified for it, and a hit costs two small preads. On a miss the checksum
    proves the slot is what a store wrote, so the number is read without validating the whole
    model.
    """
    fd = open_state(path)
    if fd is None:
        return fresh()
    try:
        ino = os.fstat(fd).st_ino
        if cache:
            seqs = [
                h[0]
                for h in (slot_header(os.pread(fd, 128, i * LEDGER_SLOT)) for i in (0, 1))
                if h is not None
            ]
            hit = cache.get((ino, max(seqs))) if seqs else None
            if hit is not None:
                return hit
        raw = os.pread(fd, 2 * LEDGER_SLOT, 0)
    finally:
        os.close(fd)
    latest = _latest_slot(raw)
    base = ledger_slots.base_in(latest[1]) if latest is not None else None
    if latest is None or base is None:
        ledger = load_ledger(path, hint=hint)  # the slow path names the problem precisely
        return ledger.base if ledger is not None else fresh()
    if cache is not None:
        cache.clear()
        cache[(ino, latest[0])] = base
    return base


def store_ledger(path: str | Path, ledger: Ledger) -> None:
    fd = open_state(path, os.O_RDWR | os.O_CREAT)
    assert fd is not None  # O_CREAT
    try:
        latest = _latest_slot(os.pread(fd, 2 * LEDGER_SLOT, 0))
        seq = 1 if latest is None else latest[0] + 1
        body = ledger.dumps().encode()
        slot = _SLOT_MAGIC + f"{seq} {len(body)} {sha256(body)} ".encode() + body
        if len(slot) >= LEDGER_SLOT:
            raise CorruptState(f"ledger state too large for {path} ({len(slot)} bytes)")
        slot = slot.ljust(LEDGER_SLOT - 1) + b"\n"  # `cat` shows one line per slot
        written = os.pwrite(fd, slot, (seq % 2) * LEDGER_SLOT)
        if written != len(slot):
            raise OSError(errno.ENOSPC, f"short write to {path}")
    finally:
        os.close(fd)


def sha256(data: bytes) -> str:
    return sha256_hex(data)


def identity_of(st: FileStat, head: bytes) -> FileIdentity:
    head = head[: min(st.size, HEAD_BYTES)]
    return FileIdentity(
        dev=st.dev,
        ino=st.ino,
        size=st.size,
        head_len=len(head),
        head_sha=sha256(head),
        mtime_ns=st.mtime_ns,
        birth_ns=st.birth_ns,
    )


def same_file(ident: FileIdentity, st: FileStat) -> bool:
    """Same device, inode number and (where both are known) birth time."""
    if (st.dev, st.ino) != (ident.dev, ident.ino):
        return False
    return ident.birth_ns is None or st.birth_ns is None or ident.birth_ns == st.birth_ns


def rewritten_since(seen: FileIdentity, st: FileStat) -> bool:
    """True if the same file was provably rewritten in place after `seen` was taken.

    Appends (the only in-place change ackdeck or a well-behaved producer makes) never shrink
    the file, so shrinking means a rewrite, and so does the same size with another mtime
    (`printf 'x\n' > room` rewriting an identical line). That second rule needs a settled
    stat: an O_APPEND write updates mtime before size (ext4), so a stat taken during it shows
    exactly that. Room._stat_fd waits such a write out (see there) before this is asked.
    A rewrite that leaves the file larger with an unchanged head is indistinguishable from an
    append (an ack still verifies every byte it removes against the receipt).
    """
    if not same_file(seen, st):
        return False
    if st.size < seen.size:
        return True
    return st.size == seen.size and seen.mtime_ns is not None and st.mtime_ns != seen.mtime_ns


def classify(ledger: Ledger, st: FileStat, head: bytes, numbered: int = 0) -> Verdict:
    """How the file on disk relates to what ackdeck last wrote.

    `head` must hold at least the first HEAD_BYTES bytes of the file (or all of it).
    `numbered`: the furthest logical offset ackdeck has handed out or dated in this room (the
    newest first-seen mark, core/rooms/file/seen_marks.py), taken before `st`.
    - "new": no identity recorded yet (first use of this room);
    - "same": exactly as recorded (same inode, size and mtime);
    - "grown": same inode, head unchanged, only appends since (larger);
    - "recovered": an ack crashed after its rename; the file is that ack's output;
    - "foreign": rewritten, replaced or truncated behind ackdeck's back.
    """
    if ledger.pending is not None and ours(ledger.pending, st, head) is not None:
        return "recovered"
    if ledger.base + st.size < numbered:
        # Shorter than what ackdeck already numbered: truncated (`: > room`) since. Pushes
        # do not store the ledger, so its recorded size (or identity) may predate every one
        # of them; the marks they leave are what proves the shrink.
        return "foreign"
    if ledger.identity is None:
        return "new"
    if not matches(ledger.identity, st, head):
        return "foreign"
    if (st.size, st.mtime_ns) == (ledger.identity.size, ledger.identity.mtime_ns):
        return "same"
    return "grown"


def ours(pending: PendingRewrite, st: FileStat, head: bytes) -> FileIdentity | None:
    """The identity of the interrupted ack's output that the file `st` is (its rename, or
    the rename of its splice), None if it is neither."""
    for ident in (pending.spliced, pending.identity):
        if ident is not None and matches(ident, st, head):
            return ident
    return None


def matches(ident: FileIdentity, st: FileStat, head: bytes) -> bool:
    """The file `st` (whose first bytes are `head`) is `ident`'s file, only appended to since."""
    if not same_file(ident, st) or rewritten_since(ident, st):
        return False
    return len(head) >= ident.head_len and sha256(head[: ident.head_len]) == ident.head_sha


def settle(ledger: Ledger, verdict: Verdict, current: FileIdentity, numbered: int = 0) -> Ledger:
    """The ledger after accepting the file on disk as the truth (`numbered`: as for classify).

    Also forgets what no longer applies: a `pending` rewrite whose rename never happened, and
    `prev` entries for the inode that is still the room (an ack that died before its rename
    linked the live file; sweeping it into itself would duplicate lines).
    """
    settled = settle_counters(ledger, verdict, (current.dev, current.ino), numbered)
    if verdict in ("new", "grown", "foreign"):
        # "grown": recording the larger size is what lets a later shrink or in-place rewrite
        # of bytes some session has read be detected (reads persist it before their receipt).
        return settled.replace(identity=current)
    return settled


def settle_counters(
    ledger: Ledger, verdict: Verdict, file: tuple[int, int], numbered: int = 0
) -> Ledger:
    """`settle` without recording the identity of the file on disk (device and inode `file`):
    its epoch, offsets, totals, `pending` and `prev` are `settle`'s, its `identity` stays the
    recorded one (a recovered rewrite's: its own). What a status reports, which never stores
    the ledger, so it need not hash the file's head for an identity nobody reads."""
    prev = [p for p in ledger.prev if (p.dev, p.ino) != file]
    if verdict in ("same", "new", "grown"):
        return ledger.replace(pending=None, prev=prev)
    if verdict == "recovered":
        pending = ledger.pending
        assert pending is not None
        # The output the file on disk is: the rename's, or its splice's (same device, inode).
        ident = pending.identity
        if pending.spliced is not None and (pending.spliced.dev, pending.spliced.ino) == file:
            ident = pending.spliced
            tail = pending.spliced_tail
            if tail is not None:
                key = (tail.name, tail.dev, tail.ino)
                prev = [tail if (p.name, p.dev, p.ino) == key else p for p in prev]
        done = ledger.replace(identity=ident, base=pending.base, pending=None, prev=prev)
        if pending.dead is not None:
            return done.replace(dead_total=ledger.dead_total + pending.acked)
        return done.replace(
            acked_total=ledger.acked_total + pending.acked,
            last_ack_at=pending.at if pending.at is not None else ledger.last_ack_at,
            last_ack_session=pending.session or ledger.last_ack_session,
        )
    # Foreign: a new epoch. `base` keeps growing so logical offsets never repeat: past the
    # recorded size and past every offset a push or a look numbered since (`numbered`), so
    # no old offset, first-seen mark or audit range can name a line of the new epoch.
    old_size = ledger.identity.size if ledger.identity else 0
    base = max(ledger.base + old_size, numbered)
    return ledger.replace(epoch=ledger.epoch + 1, base=base, pending=None, prev=prev)


def fresh_ledger(receipts: list[ReceiptHeader]) -> Ledger:
    """The ledger to start from when none exists, given the receipts found in the sidecar.

    With no receipts this is the first use of the room (epoch 0, offset 0). Receipts without a
    ledger mean it was lost or moved aside: the new epoch is past every receipt's, so they are
    all stale, and offsets continue after the furthest one any session read.
    """
    if not receipts:
        return Ledger()
    return Ledger(
        epoch=max(r.epoch for r in receipts) + 1,
        base=max(r.end for r in receipts),
    )


class AckPlan(Struct):
    """What an ack will do. `drop` bytes are removed from the head of the file."""

    mode: AckMode
    drop: int
    reason: str = ""


def plan_offsets(receipt: ReceiptHeader, epoch: int, base: int) -> AckPlan:
    """What a receipt may remove judged by epoch and offsets alone.

    A "prefix" plan still has to be confirmed against the bytes at the head (plan_ack, or by
    length and SHA-256 on the fast path, see ack_stream.HeadCheck) before anything is removed.
    """
    if receipt.acked:
        return AckPlan("refused", 0, "this read was already acked")
    if receipt.end == receipt.start:
        return AckPlan("noop", 0, "the read returned no lines; nothing to ack")
    if receipt.epoch != epoch:
        return AckPlan("stale", 0, "the room was rewritten since this read")
    if receipt.end <= base:
        return AckPlan("noop", 0, "already acked (by another session or an interrupted ack)")
    if base < receipt.start:
        # Within an epoch base only grows and a read starts at base, so this is corruption.
        return AckPlan("stale", 0, "the ledger moved backwards since this read")
    return AckPlan("prefix", receipt.end - base)


HEAD_DIFFERS = AckPlan("stale", 0, "the lines at the head differ from what was read")


def plan_ack(receipt: ReceiptHeader, digests: bytes, epoch: int, base: int, head: bytes) -> AckPlan:
    """Decide how much of the file head a receipt may remove.

    `digests` are the receipt's line digests (LINE_DIGEST bytes per line read, in order);
    `head` is the file's first `receipt.end - base` bytes (or fewer if the file is shorter).
    Removes only bytes that are provably the ones this session read: same epoch, and the
    lines now at the head are, one for one and in order, the read's last lines (by their
    digests: the receipt keeps no text), ending exactly at the read's end. Never a match by
    content anywhere else (the seed's multiset fallback could ack a late identical duplicate).
    """
    plan = plan_offsets(receipt, epoch, base)
    if plan.mode != "prefix":
        return plan
    rest = head[: plan.drop]
    if len(rest) != plan.drop or not rest.endswith(b"\n"):
        return HEAD_DIFFERS
    lines = split_lines(rest)
    size = len(lines) * LINE_DIGEST
    if size > len(digests) or line_digests(lines) != digests[len(digests) - size :]:
        return HEAD_DIFFERS
    return plan
