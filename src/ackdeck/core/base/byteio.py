"""Byte helpers for rooms: complete lines, chunked preads, full writes. Nothing decodes text."""

from __future__ import annotations

import errno
import os

# On the push path (tests/test_push_path.py): collections.abc for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

CHUNK = 4 << 20


def split_lines(data: bytes) -> list[bytes]:
    """Complete lines without their `\n`. Only `\n` separates lines: a `\r` is content
    (bytes.splitlines would split on it and lose it)."""
    if not data:
        return []
    lines = data.split(b"\n")
    lines.pop()  # the empty string after the final newline (no copy of data[:-1])
    return lines


def complete_prefix(data: bytes) -> bytes:
    """The part of `data` up to and including its last newline (the complete lines)."""
    cut = data.rfind(b"\n")
    return data[: cut + 1] if cut >= 0 else b""


def pread_all(fd: int, size: int) -> bytes:
    # One pread into one buffer when it fits (no join copy); chunks only for huge files.
    first = os.pread(fd, min(size, 1 << 30), 0) if size > 0 else b""
    if len(first) >= size or not first:
        return first
    parts: list[bytes] = [first]
    offset = len(first)
    while offset < size:
        chunk = os.pread(fd, min(CHUNK, size - offset), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def pread_all_from(fd: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while True:
        chunk = os.pread(fd, CHUNK, offset)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        offset += len(chunk)


def pread_chunks(fd: int, start: int, end: int, *, size: int = CHUNK) -> Iterator[bytes]:
    offset = start
    while offset < end:
        chunk = os.pread(fd, min(size, end - offset), offset)
        if not chunk:
            return
        yield chunk
        offset += len(chunk)


def count_lines(fd: int, size: int) -> int:
    return sum(chunk.count(b"\n") for chunk in pread_chunks(fd, 0, size))


def newline_census(
    fd: int, size: int, cuts: Iterable[int], *, start: int = 0, chunk_size: int = CHUNK
) -> tuple[int, int, dict[int, int]]:
    """Count newlines in bytes `start`..`size` without holding the file in memory.

    Returns (newlines, offset just past the last one or `start` if none, {cut: newlines from
    `start` to cut}). Chunked so a flooded room costs one buffer, not two copies of the file.
    """
    cuts = list(cuts)
    wanted = sorted({c for c in cuts if start < c < size})
    before = {c: 0 for c in cuts if c <= start}
    before.update({c: -1 for c in cuts if c >= size})  # filled with the total below
    total = i = 0
    last_end = offset = start
    for chunk in pread_chunks(fd, start, size, size=chunk_size):
        end = offset + len(chunk)
        while i < len(wanted) and wanted[i] <= end:
            before[wanted[i]] = total + chunk.count(b"\n", 0, wanted[i] - offset)
            i += 1
        n = chunk.count(b"\n")
        if n:
            total += n
            last_end = offset + chunk.rfind(b"\n") + 1
        offset = end
    for c in wanted[i:]:  # the file was shorter than `size`
        before[c] = total
    return total, last_end, {c: (total if v == -1 else v) for c, v in before.items()}


def wait_for_writes(fd: int) -> bool:
    """Return once a write in progress on the file open at `fd` has finished; False where
    no call here waits for one (then a concurrent write may still be half done).

    Each filesystem lets a different call wait on the lock a write holds: lseek(SEEK_HOLE)
    takes the inode lock on ext4, tmpfs and btrfs; on xfs it does not, but a read takes the
    I/O lock the write holds (checked with a write stalled half done: tests/
    test_room_windows.py). One byte read from the page cache costs about a microsecond.
    """
    try:
        os.lseek(fd, 0, os.SEEK_HOLE)
    except OSError:
        return False
    os.pread(fd, 1, 0)
    return True


def settled_size(fd: int, *, tries: int = 100) -> int:
    """A size of the file open at `fd` that no append is in the middle of.

    ext4, tmpfs, btrfs and xfs grow a file page by page while a write copies, so a plain
    fstat during an unlocked producer's append can end inside its line; copying up to there
    tears the line (see core/rooms/file/ack.py). A size unchanged across wait_for_writes was not
    a half-done write. If it keeps changing, or nothing waits, the end of the last complete
    line is used instead: a write in progress cannot have finished a line it is still writing.
    """
    size = os.fstat(fd).st_size
    for _ in range(tries):
        if not wait_for_writes(fd):
            break
        after = os.fstat(fd).st_size
        if after == size:
            return size
        size = after
    return complete_end(fd, size)


def complete_end(fd: int, size: int, *, chunk: int = 1 << 16) -> int:
    """The offset just past the last newline in the first `size` bytes (0 if there is none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - chunk)
        cut = os.pread(fd, pos - start, start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        pos = start
    return 0


def read_page(fd: int, size: int, limit: int, *, chunk: int = 1 << 16) -> bytes:
    """The whole lines at the start of the file's first `size` bytes, at most `limit` bytes of
    them; when the first line alone is longer, that one line whole (a line is never cut); b""
    when no line is complete. Holds at most `limit` bytes (or the one long line): past the
    window it looks for the line's end in chunks it does not keep."""
    window = min(size, max(limit, 1))
    head = pread_all(fd, window)
    cut = head.rfind(b"\n")
    if cut >= 0:
        return head if cut + 1 == len(head) else head[: cut + 1]
    pos = len(head)
    del head
    while pos < size:
        got = os.pread(fd, min(chunk, size - pos), pos)
        if not got:
            break
        cut = got.find(b"\n")
        if cut >= 0:
            return pread_all(fd, pos + cut + 1)
        pos += len(got)
    return b""


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def tail_lines(fd: int, size: int, count: int, *, chunk: int = 1 << 16) -> list[bytes]:
    """The last `count` complete lines of the file's first `size` bytes, oldest first, each
    without its "\\n" (a partial last line is not one). Reads backwards from `size`, only as
    far as those lines reach: a prompt hook on a big room reads its end, not all of it."""
    if count <= 0:
        return []
    chunks: list[bytes] = []
    newlines = 0
    pos = size
    # count + 1 newlines: the one that ends the newest complete line and the `count` before it
    # (the oldest wanted line starts right after the last of them).
    while pos > 0 and newlines < count + 1:
        start = max(0, pos - chunk)
        got = os.pread(fd, pos - start, start)
        chunks.append(got)
        newlines += got.count(b"\n")
        pos = start
    data = b"".join(reversed(chunks))
    complete = data[: data.rfind(b"\n") + 1]
    if not complete:
        return []
    lines = complete[:-1].split(b"\n")
    if pos > 0:
        lines = lines[1:]  # begins mid-line (or with an older line than wanted)
    return lines[-count:]


def data_extents(fd: int, limit: int = 1024) -> list[tuple[int, int]]:
    """The [start, end) ranges of the file at `fd` that hold data, in order, so a reader of a
    kept log (the read log, the first-seen marks) skips the holes of a sparse file instead of
    reading them: a log grown to a gigabyte by `truncate -s` costs what its data costs. All of
    it as one range when the filesystem cannot tell holes (past `limit` ranges, the rest as
    one)."""
    size = os.fstat(fd).st_size
    out: list[tuple[int, int]] = []
    at = 0
    try:
        while at < size and len(out) < limit:
            try:
                data = os.lseek(fd, at, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:
                    return out  # only a hole from `at` on
                raise
            hole = min(os.lseek(fd, data, os.SEEK_HOLE), size)
            out.append((data, hole))
            at = hole
    except (OSError, AttributeError):  # no SEEK_DATA here, or the filesystem refuses it
        return [(0, size)] if size else []
    if at < size and len(out) == limit:
        out.append((at, size))
    return out
