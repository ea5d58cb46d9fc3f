"""A receipt holds what an ack needs, not the text (core/rooms/file/receipts.py): offsets, the
SHA-256 of the whole read and a fixed-size digest per line. Real rooms, real sidecars."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ackdeck.core.base.digest import LINE_DIGEST
from ackdeck.core.errors import ColdAck, CorruptState
from ackdeck.core.rooms.file.room import Room

SECRET = b"the-launch-code-is-4711"


def _room(tmp_path: Path, content: bytes, **kw) -> Room:
    path = tmp_path / "inbox.txt"
    path.write_bytes(content)
    return Room(path, **kw)


def _holding(root: Path, text: bytes) -> list[str]:
    """Names (relative to `root`) of every file under `root` whose bytes contain `text`."""
    found = []
    for where, _dirs, files in os.walk(root):
        for name in files:
            path = Path(where) / name
            if text in path.read_bytes():
                found.append(str(path.relative_to(root)))
    return sorted(found)


def _old_format(room: Room, session: str, data: bytes) -> None:
    """Rewrite `session`'s receipt as the previous format wrote it: the header without
    `digests_sha256`, then the consumed bytes themselves (users have these on disk)."""
    path = room.receipt_file(session)
    header = json.loads(path.read_bytes().partition(b"\n")[0])
    del header["digests_sha256"]
    assert list(header) == [
        "session", "epoch", "start", "end", "lines", "sha256", "read_at", "acked", "seen",
        "reader", "read_id", "unlogged",
    ]  # fmt: skip
    path.write_bytes(json.dumps(header, separators=(",", ":")).encode() + b"\n" + data)


# ----- no text on disk --------------------------------------------------------------------
def test_a_receipt_holds_no_line_text_before_or_after_its_ack(tmp_path: Path) -> None:
    room = _room(tmp_path, b"hello\n" + SECRET + b"\nbye\n")
    assert room.read("s").lines == [b"hello", SECRET, b"bye"]
    assert SECRET not in room.receipt_file("s").read_bytes()
    assert room.ack("s").acked == 3
    assert _holding(room.sidecar / "receipts", SECRET) == []


def test_after_an_ack_acked_text_stays_only_in_the_replaced_inode_until_it_is_retired(
    tmp_path: Path,
) -> None:
    # The one documented place (docs/concepts/exact-acks.md): the `prev-*` link of the
    # replaced inode, kept for late unlocked writers, for the grace period at most.
    room = _room(tmp_path, SECRET + b"\n", grace=0.0)
    room.read("s")
    room.push("later")
    assert room.ack("s").acked == 1
    assert [n for n in _holding(room.sidecar, SECRET) if not n.startswith("prev-")] == []
    room.read("t")  # any later exclusive operation retires the inode past its grace
    room.ack("t")
    assert _holding(room.sidecar, SECRET) == []
    assert _holding(tmp_path, SECRET) == []


def test_an_acked_receipt_keeps_only_its_header(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\nb\nc\n")
    room.read("s")
    room.ack("s")
    raw = room.receipt_file("s").read_bytes()
    header, _, body = raw.partition(b"\n")
    assert body == b"" and json.loads(header)["acked"] is True
    assert room.status().pending == 0
    with pytest.raises(ColdAck, match="no unacked read"):
        room.ack("s")


# ----- size: lines, not bytes -------------------------------------------------------------
@pytest.mark.parametrize(("lines", "size"), [(100, 10 * 1024), (10_000, 100)])
def test_a_receipt_grows_with_the_lines_it_covers_not_their_bytes(
    tmp_path: Path, lines: int, size: int
) -> None:
    line = b"x" * (size - 1) + b"\n"
    room = _room(tmp_path, line * lines)
    assert len(room.read("s", max_bytes=lines * size).lines) == lines
    header_bytes = 1024
    assert room.receipt_file("s").stat().st_size <= header_bytes + lines * LINE_DIGEST
    assert LINE_DIGEST <= 16
    assert room.ack("s").acked == lines


# ----- what the digests still prove -------------------------------------------------------
def test_overlapping_reads_ack_the_rest_after_another_session_acked_the_first_part(
    tmp_path: Path,
) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s1")
    room.push("b")
    room.push("c")
    room.read("s2")
    assert room.ack("s1").acked == 1
    res = room.ack("s2")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 2, 0)
    assert room.path.read_bytes() == b""


def test_a_damaged_line_digest_is_a_clear_error_and_removes_nothing(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s1")
    room.push("b")
    room.read("s2")
    receipt = room.receipt_file("s2")
    raw = bytearray(receipt.read_bytes())
    raw[-1] ^= 0xFF  # the header is intact, the last line's digest is not
    receipt.write_bytes(bytes(raw))
    room.ack("s1")
    with pytest.raises(CorruptState, match="corrupt receipt .*read the room again"):
        room.ack("s2")
    assert room.path.read_bytes() == b"b\n"


# ----- receipts written by the previous format ----------------------------------------------
def test_an_old_format_receipt_still_acks_and_is_converted_by_the_ack(tmp_path: Path) -> None:
    room = _room(tmp_path, b"one\n" + SECRET + b"\n")
    room.read("s")
    _old_format(room, "s", b"one\n" + SECRET + b"\n")
    room.push("late")
    res = room.ack("s")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 2, 1)
    assert room.path.read_bytes() == b"late\n"
    assert SECRET not in room.receipt_file("s").read_bytes()
    with pytest.raises(ColdAck, match="no unacked read"):
        room.ack("s")  # a cursor now, as any acked receipt


def test_an_old_format_receipt_acks_the_rest_after_another_session_acked_part(
    tmp_path: Path,
) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s1")
    room.push("b")
    room.read("s2")
    _old_format(room, "s2", b"a\nb\n")
    room.push("late")
    room.ack("s1")
    res = room.ack("s2")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 1, 1)
    assert room.path.read_bytes() == b"late\n"
    assert b"b\n" not in room.receipt_file("s2").read_bytes().partition(b"\n")[2]


def test_an_old_format_receipt_whose_text_is_damaged_removes_nothing(tmp_path: Path) -> None:
    room = _room(tmp_path, b"one\ntwo\n")
    room.read("s")
    _old_format(room, "s", b"one\nTWO\n")
    with pytest.raises(CorruptState, match="corrupt receipt .*read the room again"):
        room.ack("s")
    assert room.path.read_bytes() == b"one\ntwo\n"


def test_an_old_format_receipt_of_replaced_lines_is_stale(tmp_path: Path) -> None:
    # Another session acked the first line; the rest of the room is no longer what this
    # session read (same length, other bytes): nothing is removed.
    room = _room(tmp_path, b"a\n")
    room.read("s1")
    room.push("b")
    room.read("s2")
    _old_format(room, "s2", b"a\nb\n")
    room.ack("s1")
    with open(room.path, "r+b") as f:
        f.write(b"c\n")
    res = room.ack("s2")
    assert (res.mode, res.acked) == ("stale", 0)
    assert room.path.read_bytes() == b"c\n"
