"""Receipts: what each session last read, so an ack removes exactly that and nothing else.

A receipt file (`<sidecar>/receipts/<session>.rcpt`) is one JSON header line followed by the
consumed bytes themselves. This module holds its schema, its encoding, the store that reads
and writes the files, and the verification an ack runs against the room's head.

Receipts are not fsynced: losing one only turns the next ack into a refused cold ack (the
agent re-reads); it can never cause a deletion.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ackdeck.core.base import atomic
from ackdeck.core.base.jsonfields import JsonRecord, get, get_optional, get_required
from ackdeck.core.base.names import check_name
from ackdeck.core.base.statefile import open_state, read_state
from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import AckdeckError, CorruptState, RecordError
from ackdeck.core.inbox.ack_stream import ReceiptCheck, hash_range
from ackdeck.core.inbox.ledger import FileIdentity, sha256

SUFFIX = ".rcpt"


# ----- schema -------------------------------------------------------------------------------
class ReceiptHeader(JsonRecord):
    """One session's latest read. The consumed bytes follow the header in the same file."""

    def __init__(
        self,
        *,
        session: str,
        epoch: int,
        start: int,
        end: int,
        lines: int,
        sha256: str,
        read_at: float,
        acked: bool = False,
        seen: FileIdentity | None = None,
        reader: str | None = None,
        read_id: str | None = None,
        unlogged: int = 0,
    ) -> None:
        self.session = session
        self.epoch = epoch
        self.start = start
        self.end = end
        self.lines = lines
        self.sha256 = sha256
        self.read_at = read_at
        # After an ack the receipt becomes a cursor: it still tells where the session stopped
        # reading (for unread counts) but no longer authorises an ack.
        self.acked = acked
        # The room file as this read saw it: an in-place rewrite after the read (same inode,
        # shrunk or same size with a new mtime) makes the receipt stale even if the ledger
        # cannot tell.
        self.seen = seen
        # The reader this receipt was handed to (an MCP server instance); None for the CLI,
        # the dashboard and library callers. Only an ack by the same reader may use it.
        self.reader = reader
        # This read's entry in the read log (core/inbox/readlog.py), and how many of this
        # session's reads so far could not be logged (the log is incomplete by that many).
        self.read_id = read_id
        self.unlogged = unlogged

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> ReceiptHeader:
        seen = get_optional(d, dict, "seen")
        return cls(
            session=get_required(d, str, "session"),
            epoch=get_required(d, int, "epoch"),
            start=get_required(d, int, "start"),
            end=get_required(d, int, "end"),
            lines=get_required(d, int, "lines"),
            sha256=get_required(d, str, "sha256"),
            read_at=get_required(d, float, "read_at"),
            acked=get(d, bool, "acked", False),
            seen=None if seen is None else FileIdentity.from_dict(seen),
            reader=get_optional(d, str, "reader"),
            read_id=get_optional(d, str, "read_id"),
            unlogged=get(d, int, "unlogged", 0),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "session": self.session,
            "epoch": self.epoch,
            "start": self.start,
            "end": self.end,
            "lines": self.lines,
            "sha256": self.sha256,
            "read_at": self.read_at,
            "acked": self.acked,
            "seen": None if self.seen is None else self.seen.to_dict(),
            "reader": self.reader,
            "read_id": self.read_id,
            "unlogged": self.unlogged,
        }


class Receipt(Struct):
    header: ReceiptHeader
    data: bytes


# ----- encoding -----------------------------------------------------------------------------
def encode_receipt_header(header: ReceiptHeader) -> bytes:
    """The first line of a receipt file; the consumed bytes follow it."""
    return header.to_json().encode() + b"\n"


def encode_receipt(receipt: Receipt) -> bytes:
    return encode_receipt_header(receipt.header) + receipt.data


def decode_receipt_header(raw: bytes, where: Path) -> ReceiptHeader:
    """Only the header line (the first line) of a receipt file."""
    head, sep, _ = raw.partition(b"\n")
    try:
        if not sep:
            raise ValueError("no header line")
        return ReceiptHeader.from_json(head)
    except (ValueError, RecordError):
        raise CorruptState(
            f"corrupt receipt {where}; it was left in place: read the room again"
        ) from None


def decode_receipt(raw: bytes, where: Path) -> Receipt:
    head, sep, data = raw.partition(b"\n")
    try:
        if not sep:
            raise ValueError("no header line")
        header = ReceiptHeader.from_json(head)
        if len(data) != header.end - header.start or sha256(data) != header.sha256:
            raise ValueError("content does not match its checksum")
    except (ValueError, RecordError, json.JSONDecodeError):
        raise CorruptState(
            f"corrupt receipt {where}; it was left in place: read the room again"
        ) from None
    return Receipt(header, data)


# ----- the store ----------------------------------------------------------------------------
class ReceiptStore:
    """The receipts of one room: one file per session in `directory` (the sidecar's
    `receipts/`). The caller holds the room's lock as each method says."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def file(self, session: str) -> Path:
        return self.directory / f"{check_name(session)}{SUFFIX}"

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
        """The receipt's header line only: an ack normally never loads the consumed bytes."""
        path = self.file(session)
        raw = read_state(path, 1 << 16)  # never blocks on a FIFO; refuses a non-file
        if raw is None:
            return None
        return decode_receipt_header(raw, path)

    def load(self, session: str) -> Receipt | None:
        path = self.file(session)
        raw = read_state(path)
        if raw is None:
            return None
        return decode_receipt(raw, path)

    def store(self, header: ReceiptHeader, data: bytes) -> None:
        """Write a delivered read's receipt (replacing the session's previous one). Under the
        shared lock, so an exclusive operation's leftover cleanup never removes its temp.
        Header and bytes are written as two chunks, never concatenated in memory."""
        self.directory.mkdir(mode=0o700, exist_ok=True)
        target = self.file(header.session)
        tmp = atomic.write_temp(
            target, [encode_receipt_header(header), data], mode=0o600, fsync=False
        )
        atomic.replace(tmp, target, fsync=False)

    def mark_acked(self, header: ReceiptHeader | None) -> None:
        """Mark the read as acked: the receipt stays as a cursor (where the session stopped
        reading, for unread counts) but can no longer authorise an ack.

        Flips `"acked":false` to `"acked":true ` in place with one pwrite of the same length
        (a rename would cost more than the rest of a small ack); falls back to a rewrite.
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
            if at >= 0 and ReceiptHeader.from_json(line) == header:
                os.pwrite(fd, b'"acked":true ', at)
                return
        finally:
            os.close(fd)
        cursor = header.replace(acked=True, start=header.end, lines=0, sha256=sha256(b""))
        atomic.atomic_write(path, encode_receipt(Receipt(cursor, b"")), fsync=False)

    # ----- verification ---------------------------------------------------------------------
    @contextmanager
    def head_check(
        self, fd: int, header: ReceiptHeader, length: int
    ) -> Iterator[Callable[[], bool]]:
        """A started check: does the room (`fd`) start with exactly the bytes of `header`'s
        receipt?

        Big heads are compared in a worker thread that overlaps the temp copy (see
        ReceiptCheck); the answer is awaited before anything is renamed. A receipt whose body
        does not match its own checksum is a clear error, not a stale ack."""
        path = self.file(header.session)
        rfd = open_state(path)
        if rfd is None:
            yield lambda: False
            return
        corrupt = CorruptState(f"corrupt receipt {path}; it was left in place: read the room again")
        try:
            body_at = os.pread(rfd, 1 << 16, 0).find(b"\n") + 1
            body_len = os.fstat(rfd).st_size - body_at
            if body_at <= 0 or body_len != header.end - header.start:
                raise corrupt
            check = ReceiptCheck(fd, rfd, body_at, length)

            def verify() -> bool:
                if check.ok():
                    return True
                if hash_range(rfd, body_at, body_at + body_len) == header.sha256:
                    return False  # the receipt is intact: the room's head changed
                raise corrupt

            try:
                yield verify
            finally:
                check.join()  # never leave a thread reading descriptors about to be closed
        finally:
            os.close(rfd)
