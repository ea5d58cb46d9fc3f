"""Pure line scanning for process monitors: no files, no clock, no processes.

A monitor sees `output.log` as a stream of raw bytes fed in arbitrary pieces. It reports every
complete line whose *cleaned* text (ANSI/VT sequences removed, control characters except tab
dropped) matches its regex (or, with `exclude`, does not), each with the line's absolute raw
byte range `[start, end)` in the file (`end` is past the `\\n`, or the end of the final fragment).

Lines are only cleaned and decoded once they are complete, so an escape sequence or a UTF-8
character split across two reads is handled exactly like an unsplit one. An unterminated line
keeps only its newest MAX_FRAGMENT bytes, so a flood without newlines stays bounded in memory
while a token near its end still matches.

Speed: the regex runs over whole chunks of clean lines at once (compiled bytes regex, MULTILINE)
and only the lines around a hit are cleaned, decoded and verified on their own. Lines that hold
control bytes are always verified one by one, because cleaning could create a match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import InvalidInput

MAX_FRAGMENT = 1 << 20  # newest bytes kept of an unterminated line
MAX_PAYLOAD = 1024  # bytes of a matched line kept in a wake (middle truncated)

# CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL or ST), DCS/SOS/PM/APC strings
# (ESC P/X/^/_ ... ST) and two/three-byte escapes (ESC intermediates final).
_ANSI = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]"
    rb"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    rb"|[PX^_][^\x1b]*(?:\x1b\\)?"
    rb"|[ -/]*[0-~])"
)
# Every C0 control byte except tab, plus DEL. `\n` is never inside a line.
_CTRL_BYTES = bytes(c for c in range(0x20) if c != 0x09) + b"\x7f"
_CTRL_IN_LINE = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
# Assertions whose meaning differs between "the line alone" and "the line inside a chunk"
# (string anchors, lookarounds): with them the chunk prefilter could miss a match, so such
# patterns are checked line by line. Anything else that matches a line alone at position p
# also matches at p inside the chunk (MULTILINE makes ^/$ line anchors), so the leftmost chunk
# hit is never past a true match; a hit that spans lines is verified on its first line only.
_CHUNK_UNSAFE = re.compile(r"\\[AZz]|\(\?<?[=!]")


def clean(raw: bytes) -> bytes:
    """The text a monitor or filter matches: escapes removed, control bytes but tab dropped."""
    if b"\x1b" in raw:
        raw = _ANSI.sub(b"", raw)
    return raw.translate(None, _CTRL_BYTES)


def truncate_middle(data: bytes, limit: int = MAX_PAYLOAD) -> bytes:
    """Keep the head and tail of `data` within `limit` bytes, marking what was cut."""
    if len(data) <= limit:
        return data
    cut = len(data) - limit
    marker = f" …[{cut + 40} bytes]… ".encode()
    keep = limit - len(marker)
    head, tail = keep // 2, keep - keep // 2
    # Never split a UTF-8 character: back off over continuation bytes.
    while head > 0 and 0x80 <= data[head] < 0xC0:
        head -= 1
    t = len(data) - tail
    while t < len(data) and 0x80 <= data[t] < 0xC0:
        t += 1
    return data[:head] + marker + data[t:]


def display(raw: bytes) -> str:
    """The wake text of a matched line: cleaned, middle-truncated, decoded with replacement."""
    return truncate_middle(clean(raw)).decode("utf-8", errors="replace")


def compile_pattern(pattern: str, what: str = "monitor") -> re.Pattern[bytes]:
    """Compile a user regex for cleaned line bytes; a bad one is a one-line InvalidInput."""
    if not isinstance(pattern, str) or pattern == "":
        raise InvalidInput(f"invalid {what} regex: it must not be empty")
    try:
        return re.compile(pattern.encode("utf-8"))
    except re.error as exc:
        raise InvalidInput(f"invalid {what} regex {pattern!r}: {exc}") from None


@dataclass(frozen=True)
class MatchedLine:
    start: int
    end: int
    text: str


@dataclass
class LineBuffer:
    """Splits a byte stream into regions of complete lines, keeping the unterminated tail.

    `offset` is the absolute file offset of the next byte to be fed; `frag_start` the absolute
    start of the unterminated line held in `frag` (of which only the newest bytes are kept).
    """

    offset: int = 0
    frag: bytearray = field(default_factory=bytearray)
    frag_start: int = 0
    max_fragment: int = MAX_FRAGMENT

    @classmethod
    def at(cls, offset: int, max_fragment: int = MAX_FRAGMENT) -> LineBuffer:
        return cls(offset=offset, frag_start=offset, max_fragment=max_fragment)

    def feed(self, data: bytes) -> tuple[bytes, int, int]:
        """Add `data`; return (region, region_start, first_line_start).

        `region` holds complete lines only (ends with `\\n`, or is empty); region_start is the
        absolute offset of region[0]. When the first line's head was trimmed, first_line_start
        is its true start (< region_start); otherwise it equals region_start.
        """
        nl = data.rfind(b"\n")
        if nl < 0:
            self._grow(data)
            return b"", self.offset, self.offset
        first_start = self.frag_start
        if self.frag:
            region = bytes(self.frag) + data[: nl + 1]
            region_start = self.offset - len(self.frag)
        else:
            region = data[: nl + 1]
            region_start = self.offset
        self.offset += len(data)
        self.frag = bytearray(data[nl + 1 :])
        self.frag_start = self.offset - len(self.frag)
        self._trim()
        return region, region_start, first_start

    def _grow(self, data: bytes) -> None:
        self.frag += data
        self.offset += len(data)
        self._trim()

    def _trim(self) -> None:
        excess = len(self.frag) - self.max_fragment
        if excess > 0:
            del self.frag[:excess]

    def final(self) -> tuple[bytes, int, int] | None:
        """The unterminated last line as (kept bytes, start, end), consumed; None if empty."""
        if self.offset == self.frag_start:
            return None
        out = (bytes(self.frag), self.frag_start, self.offset)
        self.frag = bytearray()
        self.frag_start = self.offset
        return out


class LineMatcher:
    """One regex (plain or inverted) applied to regions of complete lines."""

    def __init__(self, pattern: str, exclude: bool = False) -> None:
        self.rx = compile_pattern(pattern)
        self.exclude = exclude
        self._chunk_rx: re.Pattern[bytes] | None = None
        if not exclude and not _CHUNK_UNSAFE.search(pattern):
            self._chunk_rx = re.compile(pattern.encode("utf-8"), re.MULTILINE)

    def line_hits(self, raw: bytes) -> bool:
        return (self.rx.search(clean(raw)) is not None) != self.exclude

    def scan(self, region: bytes, region_start: int, first_start: int) -> list[MatchedLine]:
        """Matching lines of `region` (complete lines), with absolute ranges."""
        if not region:
            return []
        if self._chunk_rx is None:
            return self._scan_lines(region, region_start, first_start, 0, len(region))
        out: list[MatchedLine] = []
        pos = 0
        # Lines holding control bytes are checked alone; the chunk regex covers the rest.
        for ctrl in _CTRL_IN_LINE.finditer(region):
            c = ctrl.start()
            if c < pos:
                continue
            ls = region.rfind(b"\n", 0, c) + 1
            le = region.find(b"\n", c) + 1
            self._scan_chunk(region, region_start, first_start, pos, ls, out)
            out.extend(self._scan_lines(region, region_start, first_start, ls, le))
            pos = le
        self._scan_chunk(region, region_start, first_start, pos, len(region), out)
        return out

    def _scan_chunk(
        self,
        region: bytes,
        region_start: int,
        first_start: int,
        pos: int,
        endpos: int,
        out: list[MatchedLine],
    ) -> None:
        assert self._chunk_rx is not None
        search = self._chunk_rx.search
        while pos < endpos:
            m = search(region, pos, endpos)
            if m is None:
                return
            at = m.start()
            if at >= endpos:
                return
            nl = region.rfind(b"\n", pos, at)
            ls = nl + 1 if nl >= 0 else pos
            le = region.find(b"\n", at) + 1
            if le == 0:
                le = len(region)
            # Verify on the line alone: the chunk hit may have spanned lines.
            raw = region[ls : le - 1]
            if self.rx.search(raw) is not None:
                start = first_start if ls == 0 else region_start + ls
                out.append(MatchedLine(start, region_start + le, display(raw)))
            pos = le

    def _scan_lines(
        self, region: bytes, region_start: int, first_start: int, pos: int, endpos: int
    ) -> list[MatchedLine]:
        out: list[MatchedLine] = []
        while pos < endpos:
            le = region.find(b"\n", pos, endpos) + 1
            if le == 0:
                le = endpos
                raw = region[pos:le]
            else:
                raw = region[pos : le - 1]
            if self.line_hits(raw):
                start = first_start if pos == 0 else region_start + pos
                out.append(MatchedLine(start, region_start + le, display(raw)))
            pos = le
        return out

    def scan_final(self, frag: tuple[bytes, int, int] | None) -> list[MatchedLine]:
        """The unterminated last line, treated as a line once the process has exited."""
        if frag is None:
            return []
        raw, start, end = frag
        return [MatchedLine(start, end, display(raw))] if self.line_hits(raw) else []


@dataclass
class Batch:
    """Cooldown and max_events for one monitor (pure: the caller passes `now`).

    The cooldown is a fixed window from the first pending match: a burst inside it becomes one
    event. An event is one flush with at least one line; after `max_events` events the monitor
    stops (the process keeps running).
    """

    cooldown: float
    max_events: int | None = None
    pending: list[MatchedLine] = field(default_factory=list)
    first_at: float | None = None
    events: int = 0
    matches: int = 0

    @property
    def stopped(self) -> bool:
        return self.max_events is not None and self.events >= self.max_events

    def add(self, lines: list[MatchedLine], now: float) -> None:
        if not lines or self.stopped:
            return
        if self.first_at is None:
            self.first_at = now
        self.pending.extend(lines)
        self.matches += len(lines)

    def due_at(self) -> float | None:
        return None if self.first_at is None else self.first_at + self.cooldown

    def due(self, now: float) -> bool:
        at = self.due_at()
        return at is not None and now >= at

    def take(self) -> list[MatchedLine]:
        """Flush: the pending lines as one event."""
        lines, self.pending, self.first_at = self.pending, [], None
        if lines:
            self.events += 1
        return lines
