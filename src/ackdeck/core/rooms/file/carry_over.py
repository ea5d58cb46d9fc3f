"""The carry-over: a replaced inode's tail carried into the file that replaces it, the rule that
keeps lines whole when a producer that does not lock writes one line in several appends (a
shell poller's `printf 'L%d' $i >> room; printf '\\n' >> room`, reopening the path each time).

Such a producer's next append goes wherever the path points when it reopens it. Bytes it wrote
into the inode an ack is replacing therefore belong, in the new file, right after what the ack
copied and before anything written through the path since the rename: the start of their line,
in order. Once no process holds the old inode open for writing, nothing can be added to it any
more (the path no longer reaches it), so its tail is final, partial last line included, and
goes there whole. While a writer does hold it (one descriptor, several writes), that writer
finishes its line in the old inode, and only complete lines are carried over (the later sweeps
of core/rooms/file/prev_inodes.py carry the rest).

An ack applies the rule in two steps (core/rooms/file/ack.py):
- catch-up: just before its rename, the temp takes the complete lines the old inode got since
  the copy (whether a writer still holds the inode, and will finish a partial line there,
  cannot be asked yet: a read lease on a file others can still open would be broken by their
  open, and the break signal kills);
- splice: after the rename, with the exclusive lock still held (no reader has seen the new
  file yet), once no writer holds the old inode, its final tail (a partial line from before
  the rename, or whatever landed between the catch-up and the rename) is put at its place by
  one more rewrite of the new file (at most MAX_SPLICES in a row).
"""

from __future__ import annotations

import os
import time

from ackdeck.core.base.byteio import pread_all_from
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file import prev_inodes

# On a turn's ack (tests/test_layering.py): its paths are the Room's plain strings.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

# Rewrites an ack makes after its rename to put late tails at their place. Each has its own
# window of microseconds; a producer landing in every one of them is left to the sweeps.
MAX_SPLICES = 8
# How long an ack waits for a writer holding the replaced inode to let go, and how often it
# looks (see held).
HOLD_WAIT_S = 0.02
HOLD_POLL_S = 0.0002


def held(link: str | None, st: os.stat_result) -> bool:
    """May a process still write into the replaced inode `st` (linked at `link`)? By read
    lease where the kernel answers, else by /proc (prev_inodes.held_by_writers); unknown
    counts as held, which only keeps a partial line back. Only for an inode no path reaches
    any more (a writer's open would break the lease, and its signal would kill us).

    A shell's `printf ... >> room` holds the file from its open to its close, a few
    microseconds around its write: a writer found holding it is looked at again for up to
    HOLD_WAIT_S (the ack's lock is held meanwhile), so that one is not mistaken for a
    writer that keeps its descriptor."""
    deadline = time.monotonic() + HOLD_WAIT_S
    while True:
        answer = prev_inodes.open_for_writing(link) if link is not None else None
        if answer is None:
            return bool(prev_inodes.held_open([(st.st_dev, st.st_ino)]))
        if not answer or time.monotonic() >= deadline:
            return answer
        time.sleep(HOLD_POLL_S)


def tail_of(fd: int, start: int) -> bytes:
    """The bytes of the file open at `fd` past `start`. A plain read to the end, even if an
    append is in the middle of it: what follows lands right after it in the same inode, and
    the catch-up keeps only complete lines, the splice only runs on an inode no writer holds,
    the next splice puts the rest right after."""
    return pread_all_from(fd, start)


def spliced(chunks: Iterable[bytes], at: int, tail: bytes) -> Iterator[bytes]:
    """`chunks` with `tail` inserted after their first `at` bytes (pure)."""
    seen = 0
    placed = False
    for chunk in chunks:
        if not placed and seen + len(chunk) >= at:
            cut = at - seen
            yield from (part for part in (chunk[:cut], tail, chunk[cut:]) if part)
            placed = True
        else:
            yield chunk
        seen += len(chunk)
    if not placed:
        yield tail


def open_ours(path: str, ident: L.FileIdentity) -> int | None:
    """The room file open for reading if it is still the file `ident` names, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (ident.dev, ident.ino):
        os.close(fd)
        return None
    return fd
