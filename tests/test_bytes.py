"""newline_census counts a room's lines in chunks; it must agree with the obvious in-memory count
for every content and every cut, including cuts past the end and chunk boundaries."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ackdeck.core.base import byteio as _bytes


def _naive(data: bytes, cuts: list[int]) -> tuple[int, int, dict[int, int]]:
    complete = data[: data.rfind(b"\n") + 1]
    return (
        complete.count(b"\n"),
        len(complete),
        {c: data[: max(0, c)].count(b"\n") for c in cuts},
    )


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=64).map(lambda b: b.replace(b"a", b"\n")),
    cuts=st.lists(st.integers(-3, 70), max_size=5),
    chunk=st.integers(1, 9),
)
def test_census_matches_the_in_memory_count(
    tmp_path_factory, data: bytes, cuts: list[int], chunk: int
) -> None:
    path = tmp_path_factory.mktemp("census") / "room"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        # Small chunks put cuts and newlines on chunk boundaries.
        got = _bytes.newline_census(fd, len(data), cuts, chunk_size=chunk)
    finally:
        os.close(fd)
    assert got == _naive(data, cuts)


def test_census_of_a_file_shorter_than_asked(tmp_path: Path) -> None:
    path = tmp_path / "room"
    path.write_bytes(b"a\nb\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _bytes.newline_census(fd, 10, [3, 8]) == (2, 4, {3: 1, 8: 2})
    finally:
        os.close(fd)


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=64).map(lambda b: b.replace(b"a", b"\n")),
    chunk=st.integers(1, 9),
)
def test_complete_end_is_just_past_the_last_newline(
    tmp_path_factory, data: bytes, chunk: int
) -> None:
    path = tmp_path_factory.mktemp("end") / "room"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _bytes.complete_end(fd, len(data), chunk=chunk) == data.rfind(b"\n") + 1
        # A quiet file: its whole size, partial last line included (a crashed writer's
        # fragment stays where it is).
        assert _bytes.settled_size(fd) == len(data)
    finally:
        os.close(fd)
