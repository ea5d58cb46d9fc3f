"""The monitor scanner driven as the supervisor drives it, and a reference to check it by."""

from __future__ import annotations

import re2

from ackdeck.core.monitors.monitors import LineBuffer, LineMatcher, MatchedLine, clean


def scan_pieces(
    pattern: str, pieces: list[bytes], *, exclude: bool = False, final: bool = True
) -> tuple[list[MatchedLine], LineBuffer]:
    """What the scanner matches in `pieces` read one after another."""
    buf = LineBuffer.at(0)
    m = LineMatcher(pattern, exclude)
    out: list[MatchedLine] = []
    for p in pieces:
        for region in buf.feed(p):
            out.extend(m.scan(region))
    if final:
        out.extend(m.scan_final(buf.final()))
    return out, buf


def naive(pattern: str, data: bytes, exclude: bool = False) -> list[tuple[int, int]]:
    """Reference: split the whole file into lines, clean each, match it alone with plain RE2."""
    rx = re2.compile(pattern.encode())
    out = []
    pos = 0
    for raw in data.split(b"\n"):
        end = pos + len(raw) + 1
        if end > len(data):
            end = len(data)
        if end > pos and (rx.search(clean(raw)) is not None) != exclude:
            out.append((pos, end))
        pos = end
    return out


def scan_reused_buffer(pattern: str, pieces: list[bytes], exclude: bool) -> list[MatchedLine]:
    """The supervisor's way: one reused buffer with stale bytes past what each read filled."""
    size = max([len(p) for p in pieces] + [1])
    buf = bytearray(
        b"\x1b\r" * size + b"\x00"
    )  # last byte NUL, like ackdeck.core.monitors.tail's buffer
    lb = LineBuffer.at(0)
    m = LineMatcher(pattern, exclude)
    out: list[MatchedLine] = []
    for p in pieces:
        buf[: len(p)] = p
        for region in lb.feed(buf, len(p)):
            out.extend(m.scan(region))
        buf[: len(p)] = b"\x07" * len(p)  # stale garbage for the next round
    out.extend(m.scan_final(lb.final()))
    return out
