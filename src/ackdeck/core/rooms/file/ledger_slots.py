"""The ledger file's two slots (core/rooms/file/ledger.py stores and loads the whole state
through them), and the one number a push needs from them, `base`.

Kept apart from ledger.py, whose records (Struct) and decisions import pathlib and `re`: a
push, on every producer's every line, reads only the latest valid slot's checksum and the
`base` at the fixed start of its body (core/rooms/file/append.py). Anything else it finds (no
ledger, no valid slot, a body that does not start as a store writes it) is ledger.py's to
read and to name precisely.
"""

from __future__ import annotations

import os

from ackdeck.core.base.digest import sha256_hex
from ackdeck.core.base.statefile import open_state

TYPE_CHECKING = False  # pathlib stays unimported on the push path (tests/test_push_path.py)
if TYPE_CHECKING:
    from pathlib import Path

# One file with two fixed slots; each store writes the slot NOT holding the latest state with
# one pwrite (see ledger.py), so a kill or a torn write leaves the other intact.
LEDGER_SLOT = 8192
SLOT_MAGIC = b"ackdeck-ledger 1 "
# How a store's JSON body starts (Ledger's first two fields, compact): `base` is read here.
_VERSION_KEY = b'{"version":'
_BASE_KEY = b',"base":'


def slot_header(slot: bytes) -> tuple[int, int, bytes, int] | None:
    """(seq, body length, digest, body offset) of a slot, unverified; None if not a slot."""
    if not slot.startswith(SLOT_MAGIC):
        return None
    fields = slot[len(SLOT_MAGIC) : len(SLOT_MAGIC) + 120].split(b" ", 3)
    if len(fields) < 4 or not fields[0].isdigit() or not fields[1].isdigit():
        return None
    offset = len(SLOT_MAGIC) + len(fields[0]) + len(fields[1]) + len(fields[2]) + 3
    return int(fields[0]), int(fields[1]), fields[2], offset


def latest_slot(raw: bytes) -> tuple[int, bytes] | None:
    """The valid slot with the highest sequence number: (seq, JSON body)."""
    found = []
    for i in (0, 1):
        slot = raw[i * LEDGER_SLOT : (i + 1) * LEDGER_SLOT]
        h = slot_header(slot)
        if h is not None:
            found.append((h, slot))
    for (seq, length, digest, offset), slot in sorted(found, key=lambda x: -x[0][0]):
        body = slot[offset : offset + length]
        if len(body) == length and sha256_hex(body).encode() == digest:
            return seq, body
    return None


def base_in(body: bytes) -> int | None:
    """`base` from a verified body's fixed start, `{"version":V,"base":N,`; None when it does
    not start so (the full model then reads it and says what is wrong)."""
    head, key, rest = body.partition(_BASE_KEY)
    if not key or not head.startswith(_VERSION_KEY) or not head[len(_VERSION_KEY) :].isdigit():
        return None
    digits, comma, _ = rest.partition(b",")
    return int(digits) if comma and digits.isdigit() else None


def read_slots(path: str | Path) -> bytes | None:
    """Both slots of the ledger at `path` as stored; None when there is no ledger. A FIFO or
    directory in its place is refused (statefile.open_state), never waited on."""
    fd = open_state(path)
    if fd is None:
        return None
    try:
        return os.pread(fd, 2 * LEDGER_SLOT, 0)
    finally:
        os.close(fd)


def read_base(path: str) -> int | None:
    """The ledger's `base` from its latest valid slot, or None when this cannot tell it (no
    ledger, no valid slot, another body): ledger.load_base then decides, slowly and exactly.
    Bytes only: ASCII digits, as a store writes them (bytes.isdigit takes no other)."""
    raw = read_slots(path)
    if raw is None:
        return None
    latest = latest_slot(raw)
    return None if latest is None else base_in(latest[1])
