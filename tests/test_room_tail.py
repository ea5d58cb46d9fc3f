"""Room.tail: the newest complete lines, read from the end of the file (the prompt hook's peek)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from ackdeck.core.base.byteio import tail_lines
from ackdeck.core.rooms.file.room import Room


def _reference(data: bytes, count: int) -> list[bytes]:
    # What the prompt hook computed from the whole file before it asked the room.
    complete = data[: data.rfind(b"\n") + 1]
    lines = complete[:-1].split(b"\n") if complete else []
    return lines[max(0, len(lines) - count) :] if count > 0 else []


CASES = [
    b"",
    b"partial",
    b"\n",
    b"\n\n\n",
    b"a\n",
    b"a\nb\nc\n",
    b"a\nb\nc\npartial",
    b"one\r\ntwo\rstill two\n\nfour\n",
    b"x" * 40 + b"\n" + b"y" * 3 + b"\n" + b"z" * 17,
]


@pytest.mark.parametrize("data", CASES)
def test_tail_lines_agrees_with_the_whole_file_at_every_chunk_size(
    tmp_path: Path, data: bytes
) -> None:
    path = tmp_path / "r"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        for count, chunk in itertools.product(range(0, 8), (1, 2, 3, 5, 64, 1 << 16)):
            got = tail_lines(fd, len(data), count, chunk=chunk)
            assert got == _reference(data, count), (count, chunk)
    finally:
        os.close(fd)


def test_room_tail_shows_the_newest_lines_and_records_nothing(tmp_path: Path) -> None:
    path = tmp_path / "inbox.txt"
    room = Room(path)
    assert room.tail(3) == []  # no room yet
    for i in range(10):
        room.push(f"m{i}")
    with open(path, "ab") as f:
        f.write(b"half a li")  # a producer mid-line: not a line yet
    assert room.tail(3) == [b"m7", b"m8", b"m9"]
    assert room.tail(50) == [f"m{i}".encode() for i in range(10)]
    assert room.tail(0) == []
    assert room.status().sessions == {}  # a peek is not a read


def test_room_tail_reads_the_end_of_a_huge_sparse_room(tmp_path: Path) -> None:
    # 64 GiB of hole before the last lines: reading the whole file (as the prompt hook did)
    # would not finish; the tail reads a few kilobytes.
    path = tmp_path / "inbox.txt"
    with open(path, "wb") as f:
        f.truncate(64 << 30)
        f.seek(0, os.SEEK_END)
        f.write(b"\nlast-but-one\nlast\n")
    assert Room(path).tail(2) == [b"last-but-one", b"last"]
