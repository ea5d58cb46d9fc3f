"""Persisted room state (pydantic schemas) and the pure decisions made on it.

Everything here is free of I/O except `load_model`/`store_model`, so the rules that decide
what an ack may remove can be tested exhaustively (tests/test_ledger_decisions.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from . import _atomic
from .errors import CorruptState

# How many leading bytes of the room file the ledger fingerprints. A foreign rewrite almost
# always changes the head; appends never do.
HEAD_BYTES = 4096


class FileIdentity(BaseModel):
    """The room file as ackdeck last left it."""

    model_config = ConfigDict(extra="ignore")
    dev: int
    ino: int
    size: int
    head_len: int
    head_sha: str


class PendingRewrite(BaseModel):
    """Written just before an ack's rename, so a crash between rename and commit is recognised
    (the new inode matches `identity`) and completed instead of being mistaken for a foreign
    rewrite."""

    model_config = ConfigDict(extra="ignore")
    identity: FileIdentity
    base: int


class Ledger(BaseModel):
    model_config = ConfigDict(extra="ignore")
    version: int = 1
    base: int = 0
    epoch: int = 0
    identity: FileIdentity | None = None
    pending: PendingRewrite | None = None
    acked_total: int = 0
    preserved_total: int = 0
    last_ack_at: float | None = None
    last_ack_session: str | None = None


class ReceiptHeader(BaseModel):
    """One session's latest read. The consumed bytes follow the header in the same file."""

    model_config = ConfigDict(extra="ignore")
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


@dataclass(frozen=True)
class Receipt:
    header: ReceiptHeader
    data: bytes


M = TypeVar("M", bound=BaseModel)


def load_model(path: Path, model: type[M]) -> M | None:
    """Parse a JSON state file; None if it does not exist. A bad file raises and is kept."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]["msg"] if exc.errors() else str(exc)
        raise CorruptState(f"corrupt state file {path} ({first}); it was left in place") from None


def store_model(path: Path, value: BaseModel, *, fsync: bool = False) -> None:
    # State files are written without fsync by default: losing one to a power cut only makes
    # the next operation see a "foreign" change and start a new epoch, which redelivers and
    # never deletes. kill -9 cannot lose them (the page cache survives the process).
    _atomic.atomic_write(path, value.model_dump_json().encode(), fsync=fsync)


def encode_receipt(receipt: Receipt) -> bytes:
    return receipt.header.model_dump_json().encode() + b"\n" + receipt.data


def decode_receipt(raw: bytes, where: Path) -> Receipt:
    head, sep, data = raw.partition(b"\n")
    try:
        if not sep:
            raise ValueError("no header line")
        header = ReceiptHeader.model_validate_json(head)
        if len(data) != header.end - header.start or sha256(data) != header.sha256:
            raise ValueError("content does not match its checksum")
    except (ValueError, ValidationError, json.JSONDecodeError):
        raise CorruptState(
            f"corrupt receipt {where}; it was left in place: read the room again"
        ) from None
    return Receipt(header, data)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def identity_of(dev: int, ino: int, size: int, head: bytes) -> FileIdentity:
    head = head[: min(size, HEAD_BYTES)]
    return FileIdentity(dev=dev, ino=ino, size=size, head_len=len(head), head_sha=sha256(head))


Verdict = Literal["same", "new", "foreign", "recovered"]


def classify(ledger: Ledger, dev: int, ino: int, size: int, head: bytes) -> Verdict:
    """How the file on disk relates to what ackdeck last wrote.

    `head` must hold at least the first HEAD_BYTES bytes of the file (or all of it).
    - "new": no identity recorded yet (first use of this room);
    - "same": same inode, not shrunk, head unchanged: only appends happened;
    - "recovered": an ack crashed after its rename; the file is that ack's output;
    - "foreign": rewritten, replaced or truncated behind ackdeck's back.
    """
    if ledger.pending is not None and _matches(ledger.pending.identity, dev, ino, size, head):
        return "recovered"
    if ledger.identity is None:
        return "new"
    if _matches(ledger.identity, dev, ino, size, head):
        return "same"
    return "foreign"


def _matches(ident: FileIdentity, dev: int, ino: int, size: int, head: bytes) -> bool:
    if (dev, ino) != (ident.dev, ident.ino) or size < ident.size:
        return False
    return len(head) >= ident.head_len and sha256(head[: ident.head_len]) == ident.head_sha


def settle(ledger: Ledger, verdict: Verdict, current: FileIdentity) -> Ledger:
    """The ledger after accepting the file on disk as the truth."""
    if verdict == "same":
        return ledger
    if verdict == "new":
        return ledger.model_copy(update={"identity": current, "pending": None})
    if verdict == "recovered":
        assert ledger.pending is not None
        return ledger.model_copy(
            update={
                "identity": ledger.pending.identity,
                "base": ledger.pending.base,
                "pending": None,
            }
        )
    # Foreign: a new epoch. `base` keeps growing so logical offsets never repeat.
    old_size = ledger.identity.size if ledger.identity else 0
    return ledger.model_copy(
        update={
            "epoch": ledger.epoch + 1,
            "base": ledger.base + old_size,
            "identity": current,
            "pending": None,
        }
    )


AckMode = Literal["prefix", "noop", "stale", "refused", "all"]


@dataclass(frozen=True)
class AckPlan:
    """What an ack will do. `drop` bytes are removed from the head of the file."""

    mode: AckMode
    drop: int
    reason: str = ""


def plan_ack(receipt: ReceiptHeader, data: bytes, epoch: int, base: int, head: bytes) -> AckPlan:
    """Decide how much of the file head a receipt may remove.

    `head` is the file's first `receipt.end - base` bytes (or fewer if the file is shorter).
    Removes only bytes that are provably the ones this session read: same epoch, and the
    bytes now at the head equal the tail of the receipt that is still in the file.
    """
    if receipt.acked:
        return AckPlan("refused", 0, "this read was already acked")
    if receipt.epoch != epoch:
        return AckPlan("stale", 0, "the room was rewritten since this read")
    if receipt.end <= base:
        return AckPlan("noop", 0, "already acked by another session")
    if base < receipt.start:
        # Within an epoch base only grows and a read starts at base, so this is corruption.
        return AckPlan("stale", 0, "the ledger moved backwards since this read")
    drop = receipt.end - base
    expected = data[base - receipt.start :]
    if head[:drop] != expected:
        return AckPlan("stale", 0, "the lines at the head differ from what was read")
    return AckPlan("prefix", drop)
