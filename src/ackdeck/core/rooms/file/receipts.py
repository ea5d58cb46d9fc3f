"""Receipts: what each session last read, so an ack removes exactly that and nothing else.

A receipt file (`<sidecar>/receipts/<session>.rcpt`) is one JSON header line followed by one
LINE_DIGEST-byte digest per line read (core/base/digest.py), never the lines' text: a read of
a big page writes a receipt that grows with its lines, not their bytes, and acked text does
not stay behind in the sidecar. What an ack checks:

- nobody acked part of the read (the usual case): the room's head hashes to the header's
  SHA-256 of the whole read;
- another session acked its first lines: the lines now at the head are, in order, the read's
  last lines, matched by their digests (ledger.plan_ack).

The header holds the SHA-256 of the digests (`digests_sha256`), so a damaged receipt is a
clear error, never an ack. Once acked, a receipt is its header alone: a cursor (where the
session stopped reading) that authorises nothing.

Receipts written before (no `digests_sha256`) hold the consumed bytes after the header. They
are read as they are (their line digests computed from the bytes, which must match the
header's SHA-256) and rewritten in this format, without the text, by the ack that uses them.

Receipts are not fsynced: losing one only turns the next ack into a refused cold ack (the
agent re-reads); it can never cause a deletion.
"""

from __future__ import annotations

import os

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.byteio import split_lines
from ackdeck.core.base.digest import LINE_DIGEST, line_digests
from ackdeck.core.base.statefile import open_state, read_state
from ackdeck.core.base.struct import Sparse, Struct
from ackdeck.core.errors import AckdeckError, CorruptState, RecordError
from ackdeck.core.rooms.file.ledger import FileIdentity, sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path  # annotations only: the store's names are plain strings

    from ackdeck.core.rooms.file.ack_stream import HeadCheck

SUFFIX = locations.RECEIPT_SUFFIX


# ----- schema -------------------------------------------------------------------------------
class ReceiptHeader(Struct, kw_only=True):
    """One session's latest read. The digests of its lines follow the header in the same
    file (the consumed bytes themselves in receipts written before `digests_sha256`)."""

    session: str
    epoch: int
    start: int
    end: int
    lines: int
    sha256: str
    read_at: float
    # After an ack the receipt becomes a cursor: it still tells where the session stopped
    # reading (for unread counts) but no longer authorises an ack.
    acked: bool = False
    # The room file as this read saw it: an in-place rewrite after the read (same inode,
    # shrunk or same size with a new mtime) makes the receipt stale even if the ledger
    # cannot tell.
    seen: FileIdentity | None = None
    # The reader this receipt was handed to (an MCP server instance); None for the CLI,
    # the dashboard and library callers. Only an ack by the same reader may use it.
    reader: str | None = None
    # This read's entry in the read log (core/rooms/file/readlog.py), and how many of this
    # session's reads so far could not be logged (the log is incomplete by that many).
    read_id: str | None = None
    unlogged: int = 0
    # SHA-256 of the line digests that follow the header; None in a receipt of the previous
    # format, whose body is the consumed bytes (and in no file written since). Sparse: a
    # header of the previous format is written back byte for byte.
    digests_sha256: Sparse[str | None] = None


class Receipt(Struct):
    """A receipt as an ack uses it: its header and the LINE_DIGEST-byte digests of the lines
    it covers, in order (empty once acked)."""

    header: ReceiptHeader
    digests: bytes


def sealed(header: ReceiptHeader, lines: list[bytes]) -> Receipt:
    """The receipt of a read of `lines` (without their newlines), described by `header`:
    their digests, and the header naming the digests' own checksum."""
    digests = line_digests(lines)
    return Receipt(header.replace(digests_sha256=sha256(digests)), digests)


# ----- encoding -----------------------------------------------------------------------------
def encode_receipt_header(header: ReceiptHeader) -> bytes:
    """The first line of a receipt file; the line digests follow it."""
    return header.dumps().encode() + b"\n"


def encode_receipt(receipt: Receipt) -> bytes:
    return encode_receipt_header(receipt.header) + receipt.digests


def _corrupt(where: Path | str) -> CorruptState:
    return CorruptState(f"corrupt receipt {where}; it was left in place: read the room again")


def decode_receipt_header(raw: bytes, where: Path | str) -> ReceiptHeader:
    """Only the header line (the first line) of a receipt file."""
    head, sep, _ = raw.partition(b"\n")
    try:
        if not sep:
            raise ValueError("no header line")
        return ReceiptHeader.loads(head)
    except (ValueError, RecordError):
        raise _corrupt(where) from None


def decode_receipt(raw: bytes, where: Path | str) -> Receipt:
    """A whole receipt file, checked against its own checksums. An acked receipt's body (an
    old one may still have one) is not read: it authorises nothing."""
    head, sep, body = raw.partition(b"\n")
    try:
        if not sep:
            raise ValueError("no header line")
        header = ReceiptHeader.loads(head)
        if header.acked:
            return Receipt(header, b"")
        if header.digests_sha256 is None:
            # The previous format: the consumed bytes themselves. Checked as they always
            # were, then matched by their digests as any receipt is.
            if len(body) != header.end - header.start or sha256(body) != header.sha256:
                raise ValueError("content does not match its checksum")
            return Receipt(header, line_digests(split_lines(body)))
        if len(body) != header.lines * LINE_DIGEST or sha256(body) != header.digests_sha256:
            raise ValueError("line digests do not match their checksum")
    except (ValueError, RecordError):  # a JSONDecodeError is a ValueError
        raise _corrupt(where) from None
    return Receipt(header, body)


# ----- the store ----------------------------------------------------------------------------
class ReceiptStore:
    """The receipts of one room: one file per session in `directory` (the sidecar's
    `receipts/`). The caller holds the room's lock as each method says."""

    def __init__(self, directory: str) -> None:
        # A plain string (the Room's sidecar names are: no pathlib for a turn's read or ack).
        self.directory = directory

    def file(self, session: str) -> str:
        # The store's directory is the sidecar's receipts/ (locations.receipts_dir).
        return locations.receipt_str(os.path.dirname(self.directory), session)

    def sessions(self) -> list[str]:
        """Every session with a receipt, sorted; temps of receipts being written are skipped."""
        # scandir, not glob: glob skips names starting with "." (session ".hidden").
        try:
            return sorted(
                e.name[: -len(SUFFIX)]
                for e in os.scandir(self.directory)
                if e.name.endswith(SUFFIX) and not atomic.is_temp_name(e.name)
            )
        except (FileNotFoundError, NotADirectoryError):
            return []

    def headers(self) -> dict[str, ReceiptHeader]:
        """Every readable receipt's header by session. An unreadable receipt is left out
        (counters stay usable; read and ack report it)."""
        found: dict[str, ReceiptHeader] = {}
        for name in self.sessions():
            try:
                header = self.header(name)
            except (CorruptState, AckdeckError):
                continue
            if header is not None:
                found[name] = header
        return found

    def header(self, session: str) -> ReceiptHeader | None:
        """The receipt's header line only: most of what reads it needs no digests."""
        path = self.file(session)
        raw = read_state(path, 1 << 16)  # never blocks on a FIFO; refuses a non-file
        if raw is None:
            return None
        return decode_receipt_header(raw, path)

    def load(self, session: str) -> Receipt | None:
        """The whole receipt, checked (CorruptState if damaged)."""
        path = self.file(session)
        raw = read_state(path)
        if raw is None:
            return None
        return decode_receipt(raw, path)

    def store(self, receipt: Receipt) -> None:
        """Write a delivered read's receipt (replacing the session's previous one). Under the
        shared lock, so an exclusive operation's leftover cleanup never removes its temp."""
        header = receipt.header
        assert header.digests_sha256 is not None  # built by sealed(): never the old format
        try:  # Path.mkdir(mode=0o700, exist_ok=True), on the string, in its order
            os.mkdir(self.directory, 0o700)
        except OSError:
            if not os.path.isdir(self.directory):
                raise
        target = self.file(header.session)
        tmp = atomic.write_temp(
            target, [encode_receipt_header(header), receipt.digests], mode=0o600, fsync=False
        )
        atomic.replace(tmp, target, fsync=False)

    def mark_acked(self, header: ReceiptHeader | None) -> None:
        """Mark the read as acked: the receipt stays as a cursor (where the session stopped
        reading, for unread counts) but can no longer authorise an ack, so its line digests
        go.

        Flips `"acked":false` to `"acked":true ` in place with one pwrite of the same length
        and cuts the digests off (a rename would cost more than the rest of a small ack); a
        crash between the two leaves digests that authorise nothing. A receipt of the
        previous format (its body is the consumed text) is rewritten instead, as a cursor of
        this format: the rename leaves either the unacked receipt, which the next ack finds
        already acked (noop), or the cursor, never acked text.
        """
        if header is None:
            return
        path = self.file(header.session)
        fd = open_state(path, os.O_RDWR)
        if fd is None:
            return
        try:
            line = os.pread(fd, 1 << 16, 0).partition(b"\n")[0]
            at = line.find(b'"acked":false')
            if (
                at >= 0
                and header.digests_sha256 is not None
                and ReceiptHeader.loads(line) == header
            ):
                os.pwrite(fd, b'"acked":true ', at)
                os.ftruncate(fd, len(line) + 1)
                return
        finally:
            os.close(fd)
        empty = sha256(b"")
        cursor = header.replace(
            acked=True, start=header.end, lines=0, sha256=empty, digests_sha256=empty
        )
        atomic.atomic_write(path, encode_receipt_header(cursor), fsync=False)

    # ----- verification ---------------------------------------------------------------------
    def head_check(self, fd: int, header: ReceiptHeader, length: int) -> _HeadChecked:
        """A started check: does the room (`fd`) start with exactly the bytes `header`'s read
        returned (`length`, all of them: nobody acked part of it)? By the header's SHA-256 of
        the whole read (see HeadCheck). A receipt that does not match its own checksums is
        a clear error, not a stale ack; one gone or replaced since its header was read
        matches nothing. Used as `with ... as verify`: the check starts when the block is
        entered."""
        return _HeadChecked(self, fd, header, length)

    def _intact(self, header: ReceiptHeader) -> bool:
        """Is `header` still the session's receipt (False if gone or replaced), with its body
        matching its checksum (CorruptState if not)? The body is streamed, never loaded: a
        receipt of the previous format holds a whole page of text."""
        from ackdeck.core.rooms.file.ack_stream import hash_range

        path = self.file(header.session)
        rfd = open_state(path)
        if rfd is None:
            return False
        try:
            first = os.pread(rfd, 1 << 16, 0)
            body_at = first.find(b"\n") + 1
            if body_at <= 0:
                raise _corrupt(path)
            if decode_receipt_header(first, path) != header:
                return False
            if header.digests_sha256 is None:  # the previous format: the bytes read
                size, want = header.end - header.start, header.sha256
            else:
                size, want = header.lines * LINE_DIGEST, header.digests_sha256
            end = body_at + size
            if os.fstat(rfd).st_size != end or hash_range(rfd, body_at, end) != want:
                raise _corrupt(path)
            return True
        finally:
            os.close(rfd)


class _HeadChecked:
    """`ReceiptStore.head_check`'s block: a class rather than contextlib.contextmanager (the
    ack is a per-turn command; contextlib is a module a turn need not load). Entering starts
    the check and gives its verdict function; leaving waits for its thread."""

    __slots__ = ("_check", "_fd", "_header", "_length", "_store")

    def __init__(self, store: ReceiptStore, fd: int, header: ReceiptHeader, length: int) -> None:
        self._store, self._fd, self._header, self._length = store, fd, header, length
        self._check: HeadCheck | None = None

    def __enter__(self) -> Callable[[], bool]:
        header, length = self._header, self._length
        if length != header.end - header.start or not self._store._intact(header):
            return _never
        from ackdeck.core.rooms.file.ack_stream import HeadCheck  # an ack's: a status never checks

        self._check = HeadCheck(self._fd, length, header.sha256)
        return self._check.ok

    def __exit__(self, *exc: object) -> None:
        check, self._check = self._check, None
        if check is not None:
            check.join()  # never leave a thread reading a descriptor about to be closed


def _never() -> bool:
    return False
