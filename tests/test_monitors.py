"""The pure monitor scanner: offsets from raw bytes, matching on cleaned text, split reads."""

from __future__ import annotations

import ctypes
import os
import random
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ackdeck.core.errors import InvalidInput
from ackdeck.core.monitors import monitors
from ackdeck.core.monitors import scan as _scan
from ackdeck.core.monitors.monitors import (
    MAX_FRAGMENT,
    MAX_PAYLOAD,
    Batch,
    LineBuffer,
    LineMatcher,
    MatchedLine,
    compile_pattern,
    display,
)
from tests.helpers.scanning import naive, scan_pieces, scan_reused_buffer


def test_ansi_is_stripped_before_matching_and_offsets_stay_raw() -> None:
    data = b"ok\n\x1b[31mER\x1b[0mROR: disk\x1b]0;title\x07 full\n"
    got, _ = scan_pieces("ERROR: disk full", [data])
    assert [(m.start, m.end, m.text) for m in got] == [(3, len(data), "ERROR: disk full")]


def test_ansi_sequence_split_across_reads_is_still_stripped() -> None:
    got, _ = scan_pieces("^ERROR$", [b"\x1b[3", b"1", b"mERROR\x1b", b"[0m\n"])
    assert [(m.start, m.end, m.text) for m in got] == [(0, 15, "ERROR")]


def test_utf8_character_split_across_reads_keeps_offsets_exact() -> None:
    line = "naïve café ERR ✓\n".encode()
    data = b"first\n" + line
    pieces = [data[i : i + 1] for i in range(len(data))]  # every byte its own read
    got, _ = scan_pieces("café ERR ✓", pieces)
    assert [(m.start, m.end, m.text) for m in got] == [(6, len(data), "naïve café ERR ✓")]


@pytest.mark.parametrize("size", [1, 2 << 20])  # one line alone; inside a large read
@pytest.mark.parametrize(
    ("line", "hit"),
    [
        (b"ERR\x1b[0mOR", True),  # cleaning joins the literal across an escape sequence
        (b"\x1b[31mER\x1b[0mROR", True),
        (b"ERR\rOR", True),  # ... and across a dropped control byte
        (b"ERR\x00OR", True),  # ... even a NUL, where strstr stops
        (b"E\x07R\x08R\x0bO\x7fR", True),
        (b"\x1b]0;ERROR\x07 all good", False),  # the raw text holds it, the cleaned does not
        (b"\x1b[ERRORm ok", False),  # inside a CSI sequence (ESC [ ... final byte)
        (b"ERRO\x1b[1mX\x1b[0mR", False),
        (b"\x00 ERROR", True),  # after a NUL: the search goes on past it
        (b"ERROR\x00", True),
    ],
)
def test_a_literal_is_matched_on_the_cleaned_line_not_the_raw_bytes(
    line: bytes, hit: bool, size: int
) -> None:
    """The literal search runs on raw bytes; a line with control bytes is still decided on its
    cleaned text, whichever way cleaning changes it (joining a literal split by escapes or
    control bytes, or removing one that sat inside an escape sequence)."""
    filler = b"INFO all good, DEBUG, WARN nothing to see\n"
    before = filler * (size // len(filler))
    data = before + line + b"\n" + filler
    want = [(len(before), len(before) + len(line) + 1)] if hit else []
    assert naive("ERROR", data) == want
    for pattern in ("ERROR", "ERROR|FATAL"):
        got, _ = scan_pieces(pattern, [data])
        assert [(m.start, m.end) for m in got] == want, pattern
        got = scan_reused_buffer(pattern, [data], False)
        assert [(m.start, m.end) for m in got] == want, pattern


@pytest.mark.parametrize("nul_lines", [1, _scan.MAX_NUL_STOPS + 10])
@pytest.mark.parametrize("size", [1, 2 << 20])
def test_a_literal_after_nul_bytes_is_still_found(nul_lines: int, size: int) -> None:
    """strstr stops at a NUL: lines after one (their own text has none) are still searched,
    also past the point where the search gives way to memmem."""
    filler = b"INFO all good, DEBUG, WARN nothing to see\n"
    data = filler * (size // len(filler))
    for i in range(nul_lines):
        data += b"bin\x00ary %d\n" % i + filler + b"ERROR Error %d\n" % i
    data += b"ERROR Error last\n"
    want = naive("ERROR", data)
    assert len(want) == nul_lines + 1
    for pattern in ("ERROR", "ERROR|FATAL", "[Ee]rror"):
        assert naive(pattern, data) == want
        got, _ = scan_pieces(pattern, [data])
        assert [(m.start, m.end) for m in got] == want, pattern
        got = scan_reused_buffer(pattern, [data], False)
        assert [(m.start, m.end) for m in got] == want, pattern


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.lists(st.sampled_from([b"ab", b"a", b"b", b"x", b"\x00", b"\n"]), max_size=40),
    st.lists(st.sampled_from([b"ab", b"ba", b"b", b"aab"]), min_size=1, max_size=3, unique=True),
    st.integers(0, 8),
    st.integers(0, 3),
    st.sampled_from(["bytes", "bytearray", "reused"]),
)
def test_literal_finder_equals_find(
    parts: list[bytes], literals: list[bytes], cut: int, max_stops: int, kind: str
) -> None:
    """LiteralFinder.next (strstr, NUL stops, the switch to memmem) gives what bytes.find does
    on buf[pos:endpos], with bytes past endpos that would match."""
    text = b"".join(parts)
    endpos = max(0, len(text) - cut)
    buf: bytes | bytearray
    if kind == "bytes":
        buf = text
    elif kind == "bytearray":
        buf = bytearray(text)
    else:  # ackdeck.core.monitors.tail's buffer: stale bytes past the data, a NUL as its last byte
        buf = bytearray(text + b"abab" + b"\x00")
    lits = tuple(literals)
    old = _scan.MAX_NUL_STOPS
    _scan.MAX_NUL_STOPS = max_stops
    try:
        for nul_free in [False, True] if b"\x00" not in text[:endpos] else [False]:
            finder = _scan.LiteralFinder(buf, lits, nul_free=nul_free)
            pos = 0
            while pos <= endpos:
                hits = [i for lit in lits if (i := text.find(lit, pos, endpos)) >= 0]
                want = min(hits) if hits else -1
                assert finder.next(pos, endpos) == want
                if want < 0:
                    break
                pos = want + 1
    finally:
        _scan.MAX_NUL_STOPS = old


def test_buffers_the_scanner_hands_to_libc_end_in_a_nul() -> None:
    """strcspn and strstr read until a NUL: CPython keeps one just past every bytes and
    bytearray (the C API promises it), also after the edits ackdeck.core.monitors makes."""
    grown = bytearray(b"ab")
    grown += b"c" * 1000
    trimmed = bytearray(b"x" * 5000)
    del trimmed[:4000]
    for buf in [b"abc", bytes(100), bytearray(b"abc"), grown, trimmed, bytearray(b"a\x01")]:
        addr = _scan._address(buf)
        assert addr is not None
        assert ctypes.string_at(addr, len(buf) + 1) == bytes(buf) + b"\0"
    assert _scan._address(bytearray()) is None


def test_control_characters_but_tab_are_dropped() -> None:
    got, _ = scan_pieces("a\tbcERR", [b"a\tb\x07c\rERR\x00\n"])
    assert [m.text for m in got] == ["a\tbcERR"]


def test_token_after_16kb_of_a_long_line_still_matches() -> None:
    data = b"x" * 20_000 + b" TOKEN-42 " + b"y" * 100 + b"\n"
    pieces = [data[i : i + 1000] for i in range(0, len(data), 1000)]
    got, _ = scan_pieces("TOKEN-42", pieces)
    assert [(m.start, m.end) for m in got] == [(0, len(data))]
    assert len(got[0].text.encode()) <= MAX_PAYLOAD  # payload middle-truncated
    assert got[0].text.startswith("xxx") and got[0].text.endswith("y")


def test_unterminated_flood_stays_bounded_and_its_end_still_matches() -> None:
    piece = b"z" * (1 << 20)
    buf = LineBuffer.at(0)
    m = LineMatcher("END-TOKEN")
    for _ in range(24):  # 24 MB without a newline
        assert buf.feed(piece) == []  # no newline: nothing complete yet
        assert len(buf.frag) <= MAX_FRAGMENT
    got = [x for r in buf.feed(b"END-TOKEN\nnext\n") for x in m.scan(r)]
    end = 24 * (1 << 20) + len(b"END-TOKEN\n")
    assert [(g.start, g.end) for g in got] == [(0, end)]  # start is the line's true start


def test_matched_offset_is_the_matched_lines_end_not_the_chunks() -> None:
    got, _ = scan_pieces("ERR", [b"ERR one\nfine\nstill fine\npartial"], final=False)
    assert [(m.start, m.end) for m in got] == [(0, 8)]


def test_final_unterminated_fragment_becomes_a_line_only_at_the_end() -> None:
    got, buf = scan_pieces("ERR", [b"ok\nERR tail"], final=False)
    assert got == []
    m = LineMatcher("ERR")
    assert [(x.start, x.end, x.text) for x in m.scan_final(buf.final())] == [(3, 11, "ERR tail")]


def test_exclude_wakes_on_lines_not_matching() -> None:
    got, _ = scan_pieces("^ok", [b"ok 1\nboom\nok 2\nbad\n"], exclude=True)
    assert [m.text for m in got] == ["boom", "bad"]


def test_payload_is_truncated_in_the_middle() -> None:
    data = b"ERR " + "é".encode() * 3000 + b" tail-end\n"
    got, _ = scan_pieces("ERR", [data])
    text = got[0].text
    assert len(text.encode()) <= MAX_PAYLOAD
    assert text.startswith("ERR ") and text.endswith("tail-end") and "bytes]" in text
    assert "\ufffd" not in text  # never cut inside a UTF-8 character


def test_invalid_regex_is_one_clear_error() -> None:
    with pytest.raises(InvalidInput, match="invalid monitor regex"):
        compile_pattern("ERR(")
    with pytest.raises(InvalidInput):
        LineMatcher("")


def test_cooldown_is_a_fixed_window_from_the_first_pending_match() -> None:
    b = Batch(cooldown=1.0)
    b.add([MatchedLine(0, 4, "a")], now=10.0)
    b.add([MatchedLine(4, 8, "b")], now=10.9)  # inside the window: same event
    assert not b.due(10.99)
    assert b.due(11.0)  # measured from the first match, not the last
    assert [x.text for x in b.take()] == ["a", "b"]
    assert b.events == 1 and b.due_at() is None


def test_max_events_stops_the_monitor() -> None:
    b = Batch(cooldown=0.0, max_events=2)
    for i in range(5):
        b.add([MatchedLine(i, i + 1, str(i))], now=float(i))
        b.take()
    assert b.events == 2 and b.stopped and b.matches == 2


PATTERNS = [
    "ERR",
    "^ERR",
    "ERR$",
    "^$",
    r"E\s+R",
    r"[^a]b",
    "a.b",
    "(?i)err",
    r"\bab\b",
    r"\Bb",
    r"\Aab",
    r"ab\z",
    r"(?-m)^ab$",
    "(?s)a.b",
    r"a\Cb",
    r"a[^E]b",
    "(?U)a+b",
    "(a+)+$",
    "[[:upper:]]R",
    r"\pLR",
    "b*",
    r"a\nb",
    "ERR.*b",
    "ab?E",
    "é",
    "R E",
    "ERR|ab",
    "(ab|E)R",
    "a|(b|Ré)E",
    "[aE]RR",
    r"\w+ ERR",
]
ALPHABET = [
    b"a",
    b"b",
    b"E",
    b"R",
    b" ",
    b"\t",
    b"\n",
    b"\x1b[1m",
    b"\x1b",
    b"\r",
    b"x",
    b"\xc3\xa9",
    b"\xc3",
    b"\xff",
    b"\x00",  # ends a strstr (the literal search) early: the search must go on past it
]


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.sampled_from(PATTERNS),
    st.lists(st.sampled_from(ALPHABET), max_size=60),
    st.lists(st.integers(1, 12), min_size=1, max_size=8),
    st.booleans(),
)
def test_chunked_scan_equals_line_by_line_reference(pattern, parts, cuts, exclude) -> None:
    data = b"".join(parts)
    pieces, pos, i = [], 0, 0
    while pos < len(data):
        n = cuts[i % len(cuts)]
        pieces.append(data[pos : pos + n])
        pos += n
        i += 1
    got, _ = scan_pieces(pattern, pieces, exclude=exclude)
    assert [(m.start, m.end) for m in got] == naive(pattern, data, exclude)
    # The supervisor's way: one reused buffer with stale bytes (control bytes, even) past n.
    got = scan_reused_buffer(pattern, pieces, exclude)
    assert [(m.start, m.end) for m in got] == naive(pattern, data, exclude)


LONG_TOKENS = [b"ERR", b"x", b"xxxxxxx", b"\n", b"\x1b[1m", b"\r", b"E", b"RR"]


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.sampled_from(LONG_TOKENS), min_size=1, max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    reads=st.integers(min_value=1, max_value=64),
    pattern=st.sampled_from(["ERR", "^ERR", "ERR$", "^x+$", "RRx"]),
    exclude=st.booleans(),
)
def test_long_lines_match_the_same_however_they_were_split(
    parts: list[bytes], cuts: list[int], reads: int, pattern: str, exclude: bool
) -> None:
    """Lines longer than the fragment bound (16 bytes here) give the same matches whether the
    data arrives at once or in arbitrary pieces, including reads chunked by the reader."""
    data = b"".join(parts)

    def run(pieces: list[bytes]) -> list[tuple[int, int, str]]:
        lb = LineBuffer.at(0, max_fragment=16)
        m = LineMatcher(pattern, exclude, max_line=16)
        lb.on_window = m.see_window
        out: list[MatchedLine] = []
        for p in pieces:
            for region in lb.feed(p):
                out.extend(m.scan(region))
            assert len(lb.frag) <= 16
        out.extend(m.scan_final(lb.final()))
        return [(x.start, x.end, x.text) for x in out]

    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    split = [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    chunked = [data[i : i + reads] for i in range(0, len(data), reads)]
    whole = run([data])
    assert run(split) == whole and run(chunked) == whole
    # Lines within the bound still match exactly as a line matched alone.
    short = [(s, e) for s, e, _ in whole if e - s <= 16]
    assert short == [(s, e) for s, e in naive(pattern, data, exclude) if e - s <= 16]


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize(
    "pattern",
    ["ERROR", "ERROR|FATAL", "[Ee]rror", r"\.\w+ done$", "ERR$", "(?i)error", "[EF][RA]"],
)
def test_large_region_scanned_in_two_threads_equals_line_by_line(
    pattern: str, parallel: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Over PARALLEL_MIN bytes in one read: the control-byte pass is offered to a helper thread
    # while RE2 searches; a literal search (the first five patterns) is too quick for that to
    # pay, so both passes run in this thread.
    if not parallel:
        monkeypatch.setattr(monitors, "PARALLEL_MIN", 1 << 40)
    calls: list[bool] = []
    beside = _scan.ctrl_lines_beside
    monkeypatch.setattr(
        monitors,
        "ctrl_lines_beside",
        lambda *a, parallel: calls.append(parallel) or beside(*a, parallel=parallel),
    )
    rnd = random.Random(pattern)
    kinds = [
        b"INFO all good",
        b"ERROR: disk full",
        b"\x1b[31mER\x1b[0mROR split by colour",
        b"FATAL\r",
        b"Error ",
        b"ERR\r",
        b"job done",
        b"\x07job done",
        b"caf\xc3\xa9 \xff ERROR",
    ]
    pad = b" " + b"." * 60  # long lines: fewer of them for the same size
    data = b"".join(pad + rnd.choice(kinds) + b"\n" for _ in range(20_000))
    assert len(data) > 1 << 20
    got, _ = scan_pieces(pattern, [data])
    want = naive(pattern, data)
    assert [(m.start, m.end) for m in got] == want
    assert len(want) > 500
    assert [m.text for m in got] == [display(data[s : e - 1]) for s, e in want]
    literal = LineMatcher(pattern)._literals is not None
    assert literal == (pattern not in ("(?i)error", "[EF][RA]"))
    assert calls == ([] if literal else [parallel])


def _ctrl_data() -> bytes:
    return b"".join(
        (b"plain %d\n" % i) if i % 7 else (b"\x1b[1mbold %d\x1b[0m\n" % i) for i in range(50_000)
    )


def test_control_lines_found_by_the_helper_thread_equal_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = _ctrl_data()
    want = _scan.ctrl_lines(data, 0, len(data))
    assert len(want) == len(range(0, 50_000, 7))
    started = threading.Event()
    real = _scan.ctrl_lines

    def helper_side(*args: Any) -> list[tuple[int, int]]:
        started.set()
        return real(*args)

    monkeypatch.setattr(_scan, "ctrl_lines", helper_side)

    def other() -> str:
        assert started.wait(60), "the helper thread never started"
        return "searched"

    found, result = _scan.ctrl_lines_beside(data, 0, len(data), other, parallel=True)
    assert (found, result) == (want, "searched")


def test_control_lines_are_taken_back_when_the_helper_is_busy() -> None:
    data = _ctrl_data()
    release = threading.Event()
    busy = _scan._helper(os.getpid()).submit(release.wait, 60)
    try:
        found, result = _scan.ctrl_lines_beside(data, 0, len(data), lambda: 1, parallel=True)
        assert not busy.done()  # the helper never got to it: done here instead
    finally:
        release.set()
    assert busy.result() is True
    assert (found, result) == (_scan.ctrl_lines(data, 0, len(data)), 1)


@pytest.mark.parametrize("read", [64 << 10, 1 << 20, 3 << 20])
@pytest.mark.parametrize(
    ("pattern", "at"),
    [("x[^a]", MAX_FRAGMENT - 1), ("[^a]x", MAX_FRAGMENT // 2), (r"x\W", MAX_FRAGMENT - 1)],
)
def test_window_edges_of_a_line_over_1mb_are_no_false_match(
    pattern: str, at: int, read: int
) -> None:
    """A line over MAX_FRAGMENT is matched in windows; no window edge may lend the pattern a
    character the line does not hold (a sentinel byte matched by `[^a]` did: a false wake).
    The `x` sits at a window's last byte, or its first, with only `a`s around it."""
    line = bytearray(b"a" * (3 * MAX_FRAGMENT))
    line[at] = ord("x")
    data = bytes(line) + b"\n"
    assert naive(pattern, data) == []  # the line alone holds no match
    lb = LineBuffer.at(0)
    m = LineMatcher(pattern)
    lb.on_window = m.see_window
    got: list[MatchedLine] = []
    for i in range(0, len(data), read):
        for region in lb.feed(data[i : i + read]):
            got.extend(m.scan(region))
    got.extend(m.scan_final(lb.final()))
    assert got == []
    # The same line without its newline, decided once the process exited.
    lb = LineBuffer.at(0)
    m = LineMatcher(pattern)
    lb.on_window = m.see_window
    for i in range(0, len(data) - 1, read):
        assert lb.feed(data[i : min(i + read, len(data) - 1)]) == []
    assert m.scan_final(lb.final()) == []
