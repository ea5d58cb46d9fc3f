"""The line-offset index and the pure helpers behind the dashboard (no Textual)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ackdeck.core.service import lines as lineindex
from ackdeck.tui.lineindex import LineIndex, display_text, filter_lines
from ackdeck.tui.state import RateTracker, ago, sparkline


def reference_starts(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=400).map(lambda b: b.replace(b"\r", b"\n")),
    chunk=st.integers(min_value=1, max_value=17),
)
def test_index_matches_a_byte_by_byte_scan(tmp_path_factory, data: bytes, chunk: int) -> None:
    path = tmp_path_factory.mktemp("ix") / "room.txt"
    path.write_bytes(data)
    old = lineindex.CHUNK
    lineindex.CHUNK = chunk  # tiny chunks: lines straddle every boundary
    try:
        ix = LineIndex.open(path)
        ix.extend_to(len(data))
    finally:
        lineindex.CHUNK = old
    assert list(ix.starts) == reference_starts(data)
    complete = data[: data.rfind(b"\n") + 1]
    assert ix.line_bytes(0, ix.count) == complete.split(b"\n")[:-1]
    assert ix.partial_bytes() == len(data) - len(complete)
    ix.close()


def test_growth_is_indexed_incrementally_and_a_partial_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "room.txt"
    path.write_bytes(b"one\ntw")
    ix = LineIndex.open(path)
    ix.extend_to(ix.size_now())
    assert ix.count == 1 and ix.partial_text() == "tw"
    with path.open("ab") as f:
        f.write(b"o\nthree\n")
    probe = ix.probe()
    assert probe.verdict == "grown"
    ix.extend_to(probe.size)
    assert [ix.line(i) for i in range(ix.count)] == ["one", "two", "three"]
    assert ix.probe().verdict == "same"


@pytest.mark.parametrize(
    "change",
    [
        lambda p: (p.unlink(), p.write_bytes(b"new\n")),  # replaced (new inode)
        lambda p: p.write_bytes(b"x\n"),  # truncated
        lambda p: p.open("r+b").write(b"ONE"),  # rewritten in place, same size
    ],
)
def test_replace_truncate_and_rewrite_are_detected(tmp_path: Path, change) -> None:
    path = tmp_path / "room.txt"
    path.write_bytes(b"one\ntwo\n")
    ix = LineIndex.open(path)
    ix.extend_to(ix.size_now())
    change(path)
    assert ix.probe().verdict == "replaced"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "room.txt"
    path.write_bytes(b"a\n")
    ix = LineIndex.open(path)
    ix.extend_to(ix.size_now())
    os.unlink(path)
    assert ix.probe().verdict == "missing"
    assert ix.line(0) == "a"  # the open descriptor still shows what was indexed


def test_display_never_passes_control_characters_through() -> None:
    # Shown escaped (core/base/text.py), as every door shows them; bytes that are not UTF-8
    # are U+FFFD.
    assert display_text(b"a\x1b[31mred\rb\xff") == "a\\x1b[31mred\\x0db\ufffd"
    assert display_text(b"a\tb") == "a   b"  # tabs expand to 4-column stops
    # C1 controls encoded in UTF-8: some terminals take U+009B for CSI and U+009D for OSC.
    assert display_text("x\u009b31m\u009d0;t\u0085y".encode()) == "x\\x9b31m\\x9d0;t\\x85y"
    assert display_text("é ü ½".encode()) == "é ü ½"  # printable Latin-1 stays


def test_a_50_mb_line_is_shown_by_its_head_and_its_length(tmp_path: Path) -> None:
    # Every paint measures and crops the visible lines' text: a 50 MB line held the UI thread
    # for seconds at every refresh. The panel shows its first SHOWN_MAX bytes and its length;
    # the lines around it are whole, and the file is not touched.
    path = tmp_path / "room.txt"
    huge = b"x" * 50_000_000
    data = b"before\n" + huge + b"\n" + b"y" * lineindex.SHOWN_MAX + b"\nafter\n"
    path.write_bytes(data)
    ix = LineIndex.open(path)
    ix.extend_to(len(data))
    assert ix.count == 4
    shown = ix.line(1)
    assert shown.startswith("x" * lineindex.SHOWN_MAX + " … ")
    assert "50,000,000 bytes" in shown
    assert len(shown) < lineindex.SHOWN_MAX + 100
    assert [ix.line(0), ix.line(2), ix.line(3)] == ["before", "y" * lineindex.SHOWN_MAX, "after"]
    assert ix.line_bytes(1, 2) == [huge]  # bytes stay whole (filter, tests)
    assert path.read_bytes() == data


def test_filter_is_case_insensitive_including_non_ascii(tmp_path: Path) -> None:
    path = tmp_path / "room.txt"
    path.write_bytes("Build FAILED\nok\nÉCHEC du test\nfailed again\n".encode())
    ix = LineIndex.open(path)
    ix.extend_to(ix.size_now())
    from array import array

    out: array = array("Q")
    filter_lines(ix, "failed", 0, ix.count, out)
    assert list(out) == [0, 3]
    out2: array = array("Q")
    filter_lines(ix, "échec", 0, ix.count, out2)
    assert list(out2) == [2]


def test_rate_tracker_buckets_arrivals_and_ignores_drops() -> None:
    rt = RateTracker(bucket_seconds=5, buckets=4)
    rt.observe("r", 100.0, 0)
    rt.observe("r", 106.0, 10)  # +10, 14 s before now -> third-newest bucket
    rt.observe("r", 112.0, 4)  # an ack: not an arrival
    rt.observe("r", 119.0, 9)  # +5 in the newest bucket
    assert rt.series("r", 120.0) == [0, 10, 0, 5]
    assert sparkline([0, 10, 0, 5]) == "▁█▁▅"
    assert sparkline([0, 0]) == "▁▁"


def test_rate_tracker_forgets_the_samples_of_a_room_quiet_for_a_window() -> None:
    # Only rooms with arrivals within the window keep a series (3,000 quiet rooms kept a deque
    # each); a quiet room's next arrival is still counted from its last count.
    rt = RateTracker(bucket_seconds=5, buckets=4)  # a 20 s window
    rt.observe("r", 100.0, 0)
    rt.observe("r", 101.0, 3)
    assert rt.rising("r", 101.0) and rt.series("r", 101.0) == [0, 0, 0, 3]
    rt.observe("r", 130.0, 3)  # nothing arrived for a window
    assert not rt.rising("r", 130.0) and rt.series("r", 130.0) == [0, 0, 0, 0]
    assert "r" not in rt._samples  # only its last sample is kept
    rt.observe("r", 131.0, 2)  # an ack
    rt.observe("r", 133.0, 6)  # +4
    assert rt.series("r", 134.0) == [0, 0, 0, 4]
    rt.observe("q", 100.0, 5)  # a room that never rose keeps no series at all
    assert "q" not in rt._samples and rt.series("q", 100.0) == [0, 0, 0, 0]


def test_ages() -> None:
    assert ago(None, 100) == "-"
    assert ago(95, 100) == "just now"
    assert ago(40, 100) == "1m ago"
    assert ago(100 - 7200, 100) == "2h ago"
