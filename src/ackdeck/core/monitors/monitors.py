"""Pure line scanning for process monitors: no files, no clock, no processes.

A monitor sees `output.log` as a stream of raw bytes fed in arbitrary pieces. It reports every
complete line whose *cleaned* text (ANSI/VT sequences removed, control characters except tab
dropped) matches its regex (or, with `exclude`, does not), each with the line's absolute raw
byte range `[start, end)` in the file (`end` is past the `\\n`, or the end of the final fragment).

Lines are only cleaned and decoded once they are complete, so an escape sequence or a UTF-8
character split across two reads is handled exactly like an unsplit one.

Lines longer than MAX_FRAGMENT are matched in windows, whatever way they arrive: the windows are
the line's bytes [k*H, k*H + 2H) for k = 0, 1, ... (H = MAX_FRAGMENT / 2) up to the one that
reaches the line's end, each cleaned and matched on its own (`^` and `$` only at the line's own
ends); the line matches if a window does (with `exclude`: if none does). An unterminated line
keeps at most MAX_FRAGMENT bytes, handing each complete window to the matchers as it passes
(LineBuffer.on_window, one at a time), so a flood without newlines stays bounded in memory,
and the outcome does not depend on how the writer split its writes or the reader its reads.

Patterns run on RE2 (core/monitors/patterns.py): linear time whatever the pattern.

Speed: most output holds no control bytes, and a line without them is its own cleaned text. So
each read's complete lines are searched as one buffer: by strstr for the literals every match
must contain (core/monitors/scan.py), each hit then checked by the pattern on its line, or else
by the pattern in multi-line mode; line boundaries are only looked up around a hit, and only matched
lines are decoded. Apart from that, the lines holding control bytes are found (strcspn; beside
a regex search in a helper thread on large reads), cleaned and matched one by one, replacing
whatever the search said about them, because cleaning can create a match (`ERR\\x1b[0mOR`) or
remove one. The result is exactly that of matching every cleaned line alone (property tests
compare the two).
"""

from __future__ import annotations

from ackdeck.core.monitors.patterns import Pattern, compile_pattern
from ackdeck.core.monitors.scan import (
    PARALLEL_MIN,
    Buf,
    LiteralFinder,
    ctrl_lines,
    ctrl_lines_beside,
    fast_literal_search,
)

TYPE_CHECKING = False  # collections.abc imports collections: not in a run's supervisor
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Pattern", "compile_pattern"]  # re-exported: the compile site of every user regex

MAX_FRAGMENT = 1 << 20  # newest bytes kept of an unterminated line
MAX_PAYLOAD = 1024  # bytes of a matched line kept in a wake (middle truncated)

# CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL or ST), DCS/SOS/PM/APC strings
# (ESC P/X/^/_ ... ST) and two/three-byte escapes (ESC intermediates final). ackdeck's own
# fixed pattern, not a user's. Compiled by `re` at the first line holding an escape (re's own
# cache keeps it): `re` brings `enum`, ~0.6 MiB of each supervisor whose output has none.
_ANSI = (
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]"
    rb"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    rb"|[PX^_][^\x1b]*(?:\x1b\\)?"
    rb"|[ -/]*[0-~])"
)
# Every C0 control byte except tab, plus DEL. `\n` is never inside a line.
_CTRL_BYTES = bytes(c for c in range(0x20) if c != 0x09) + b"\x7f"


def clean(raw: bytes) -> bytes:
    """The text a monitor or filter matches: escapes removed, control bytes but tab dropped."""
    if b"\x1b" in raw:
        import re

        raw = re.sub(_ANSI, b"", raw)
    return raw.translate(None, _CTRL_BYTES)


def truncate_middle(data: Buf | memoryview, limit: int = MAX_PAYLOAD) -> bytes:
    """Keep the head and tail of `data` within `limit` bytes, marking what was cut."""
    if len(data) <= limit:
        return bytes(data)
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
    return bytes(data[:head]) + marker + bytes(data[t:])


def display(raw: bytes) -> str:
    """The wake text of a matched line: cleaned, middle-truncated, decoded with replacement."""
    return truncate_middle(clean(raw)).decode("utf-8", errors="replace")


def _display_plain(buf: Buf, ls: int, end: int) -> str:
    """display() of buf[ls:end], a line without control bytes (its own cleaned text): no
    cleaning pass and, for a long line, no copy beyond the head and tail that are kept."""
    with memoryview(buf)[ls:end] as line:
        return truncate_middle(line).decode("utf-8", errors="replace")


class MatchedLine:
    """A matched line: its raw byte range [start, end) in output.log and its display text.

    A plain immutable class rather than a dataclass: `dataclasses` imports inspect, ast and
    dis, about 1.3 MiB of every supervisor's memory (one per monitored run)."""

    __slots__ = ("start", "end", "text")
    start: int
    end: int
    text: str

    def __init__(self, start: int, end: int, text: str) -> None:
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)
        object.__setattr__(self, "text", text)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"MatchedLine is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"MatchedLine is immutable; cannot delete {name!r}")

    def _key(self) -> tuple[int, int, str]:
        return (self.start, self.end, self.text)

    def __eq__(self, other: object) -> bool:
        if type(other) is not MatchedLine:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"MatchedLine(start={self.start!r}, end={self.end!r}, text={self.text!r})"


# A region of complete lines inside a buffer: (buf, lo, hi, base, first_start). buf[lo:hi] are
# whole lines (hi is just past a `\n`); the absolute offset of buf[i] is base + i, except that
# the line starting at lo really starts at first_start (earlier, if its head was trimmed).
Region = tuple[Buf, int, int, int, int]


def line_windows(n: int, half: int) -> list[tuple[int, int]]:
    """The [s, e) windows of a line of n bytes: [k*half, k*half + 2*half), up to the first one
    that reaches the end (see the module doc)."""
    out = []
    k = 0
    while True:
        s, e = k * half, min(n, (k + 2) * half)
        out.append((s, e))
        if e >= n:
            return out
        k += 1


class LineBuffer:
    """Splits a byte stream into regions of complete lines, keeping the unterminated tail.

    `offset` is the absolute file offset of the next byte to be fed; `frag_start` the absolute
    start of the unterminated line held in `frag` (of which only the newest bytes are kept).
    Regions point into the fed buffer itself (no copy) except the one line that completes a
    held fragment.
    """

    def __init__(
        self,
        offset: int = 0,
        frag: bytearray | None = None,
        frag_start: int = 0,
        max_fragment: int = MAX_FRAGMENT,
        frag_base: int = 0,
        on_window: Callable[[int, int, bytes], None] | None = None,
    ) -> None:
        self.offset = offset
        self.frag = bytearray() if frag is None else frag
        self.frag_start = frag_start
        self.max_fragment = max_fragment
        self.frag_base = frag_base  # absolute offset of frag[0]: frag_start plus a multiple of H
        # Called with each window the kept bytes move past (see the module doc); None drops them.
        self.on_window = on_window

    @classmethod
    def at(cls, offset: int, max_fragment: int = MAX_FRAGMENT) -> LineBuffer:
        return cls(offset=offset, frag_start=offset, max_fragment=max_fragment, frag_base=offset)

    def feed(self, data: Buf, n: int | None = None) -> list[Region]:
        """Add data[:n]; return the regions of lines it completed."""
        n = len(data) if n is None else n
        last = data.rfind(b"\n", 0, n)
        if last < 0:
            self._append(data, 0, n)
            self.offset += n
            return []
        base = self.offset
        regions: list[Region] = []
        lo = 0
        if self.frag or self.frag_base != self.frag_start:
            first = data.find(b"\n", 0, n)
            head = bytes(self.frag) + bytes(data[: first + 1])
            regions.append((head, 0, len(head), self.frag_base, self.frag_start))
            lo = first + 1
        if lo <= last:
            regions.append((data, lo, last + 1, base, base + lo))
        self.offset += n
        self.frag = bytearray()
        self.frag_start = self.frag_base = base + last + 1
        self._append(data, last + 1, n)
        return regions

    def _append(self, data: Buf, lo: int, hi: int) -> None:
        """Add data[lo:hi] to the unterminated line in steps, so it never holds much more than
        max_fragment bytes however large the read was."""
        step = max(1, self.max_fragment // 2)
        for i in range(lo, hi, step):
            self.frag += data[i : min(hi, i + step)]
            self._trim()

    def _trim(self) -> None:
        """Keep at most max_fragment bytes: hand each window the line has moved past on."""
        half = max(1, self.max_fragment // 2)
        while len(self.frag) > 2 * half:
            k = (self.frag_base - self.frag_start) // half
            if self.on_window is not None:
                self.on_window(self.frag_start, k, bytes(self.frag[: 2 * half]))
            del self.frag[:half]
            self.frag_base += half

    def final(self) -> tuple[bytes, int, int] | None:
        """The unterminated last line as (kept bytes, start, end), consumed; None if empty.
        The kept bytes start at `end - len(kept)`, a window boundary of the line."""
        if self.offset == self.frag_start:
            return None
        out = (bytes(self.frag), self.frag_start, self.offset)
        self.frag = bytearray()
        self.frag_start = self.frag_base = self.offset
        return out


class LineMatcher:
    """One regex (plain or inverted) applied to regions of complete lines."""

    def __init__(self, pattern: str, exclude: bool = False, max_line: int = MAX_FRAGMENT) -> None:
        # Deferred: RE2 is loaded at the first line that could match, not now (a run's
        # patterns were checked before it started; core/monitors/patterns.py, Deferred).
        self.rx = compile_pattern(pattern, deferred=True)
        self.exclude = exclude
        self.half = max(1, max_line // 2)
        # Long lines whose windows are being seen: line start -> text of the first hit (None:
        # no hit yet). At most two: the line a region completes and the next unfinished one.
        self._long: dict[int, str | None] = {}
        # Searching a buffer of lines finds the lines that match, so it serves plain monitors;
        # an exclude monitor reports the others, line by line.
        self._chunk_rx = None if exclude else self.rx.chunk
        self._literals = self.rx.literals if self._chunk_rx is not None else None
        if self.rx.prefix_literal and not fast_literal_search():
            # RE2's own prefix search beats memmem (core/monitors/patterns.py)
            self._literals = None

    def line_hits(self, raw: Buf) -> bool:
        return (self.rx.search(clean(bytes(raw))) is not None) != self.exclude

    # ----- lines longer than MAX_FRAGMENT: windows (see the module doc) ----------------------
    def _window_hit(self, w: bytes, first: bool, last: bool) -> bool:
        # At a window's inner edges the line goes on, so `^` / `$` must not match there: a NUL
        # (which never survives cleaning) on each inner side is the context RE2 sees, and
        # pos/endpos keep every match inside the window, so no part of the pattern (`[^a]`,
        # `\W`, `.`) can match the NUL itself.
        text = (b"" if first else b"\0") + clean(w) + (b"" if last else b"\0")
        return self.rx.search(text, 0 if first else 1, len(text) - (0 if last else 1)) is not None

    def see_window(self, line_start: int, k: int, w: bytes) -> None:
        """A window of a line that is still being written (from LineBuffer.on_window)."""
        if self._long.get(line_start) is None and self._window_hit(w, k == 0, False):
            self._long[line_start] = display(w)
        else:
            self._long.setdefault(line_start, None)

    def _long_line(
        self, rest: bytes, line_start: int, rest_start: int, end: int, out: list[MatchedLine]
    ) -> None:
        """Decide a long line from the windows seen so far and those of its kept `rest` (which
        starts at the window boundary `rest_start`)."""
        hit = self._long.pop(line_start, None)
        for stale in [s for s in self._long if s < line_start]:
            del self._long[stale]  # a line we will never see complete (e.g. after a rescan)
        last_w = rest
        for s, e in line_windows(len(rest), self.half):
            if hit is not None:
                break
            last_w = rest[s:e]
            first = rest_start == line_start and s == 0
            if self._window_hit(last_w, first, e >= len(rest)):
                hit = display(last_w)
        if (hit is not None) != self.exclude:
            out.append(MatchedLine(line_start, end, hit if hit is not None else display(last_w)))

    def _check(self, raw: bytes, start: int, end: int, out: list[MatchedLine]) -> None:
        """Decide one complete line held whole."""
        if len(raw) > 2 * self.half:
            self._long_line(raw, start, start, end, out)
        elif self.line_hits(raw):
            out.append(MatchedLine(start, end, display(raw)))

    def scan(self, region: Region) -> list[MatchedLine]:
        """Matching lines of a region of complete lines, with absolute ranges."""
        buf, lo, hi, base, first_start = region
        if lo >= hi:
            return []
        out: list[MatchedLine] = []
        if first_start != base + lo:
            # The first line completes a long fragment whose head already passed as windows.
            le = buf.find(b"\n", lo, hi) + 1
            self._long_line(bytes(buf[lo : le - 1]), first_start, base + lo, base + le, out)
            lo = le
            region = (buf, lo, hi, base, base + lo)
            if lo >= hi:
                return out
        if self._chunk_rx is None:
            self._scan_lines(region, lo, hi, out)
            return out
        # Two independent passes: the lines holding control bytes (checked alone, cleaned), and
        # the lines whose raw text matches (right for every other line, whose raw text is its
        # cleaned text). Both run in C without the GIL. A literal search (strstr) takes a
        # fraction of the control-byte pass, so the two run here one after the other (and the
        # search skips looking for NULs when the first found no control byte at all); a regex
        # search is slower, so on a large region the control-byte pass is offered to a helper
        # thread while this one searches.
        if self._literals is not None:
            ctrl = ctrl_lines(buf, lo, hi)
            hits = self._raw_hits(buf, lo, hi, nul_free=not ctrl)
        else:
            ctrl, hits = ctrl_lines_beside(
                buf, lo, hi, lambda: self._raw_hits(buf, lo, hi), parallel=hi - lo >= PARALLEL_MIN
            )
        k = 0
        for ls, le in hits:
            while k < len(ctrl) and ctrl[k][0] <= ls:
                cs, ce = ctrl[k]
                self._scan_lines(region, cs, ce, out)
                k += 1
            if k and ctrl[k - 1][0] == ls:
                continue  # a line with control bytes: decided on its cleaned text above
            start = self._start(region, ls)
            if le - 1 - ls > 2 * self.half:
                self._long_line(bytes(buf[ls : le - 1]), start, start, base + le, out)
            else:
                out.append(MatchedLine(start, base + le, _display_plain(buf, ls, le - 1)))
        for cs, ce in ctrl[k:]:
            self._scan_lines(region, cs, ce, out)
        return out

    def _start(self, region: Region, ls: int) -> int:
        _, lo, _, base, first_start = region
        return first_start if ls == lo else base + ls

    def _raw_hits(
        self, buf: Buf, pos: int, endpos: int, *, nul_free: bool = False
    ) -> list[tuple[int, int]]:
        """[start, end) of each line of buf[pos:endpos] whose raw text matches.

        The multi-line pattern answers on a line inside the buffer exactly as on the line alone
        (`^`/`$` are line ends, `\\b` sees the newline, never_nl keeps a match inside its line).
        So the first hit in the buffer is in the first matching line, which is taken without a
        second look; a literal hit is only a candidate, checked by the pattern on its line.
        """
        chunk_rx = self._chunk_rx
        assert chunk_rx is not None
        lits = LiteralFinder(buf, self._literals, nul_free=nul_free) if self._literals else None
        hits: list[tuple[int, int]] = []
        while pos < endpos:
            if lits is not None:
                at = lits.next(pos, endpos)
            else:
                m = chunk_rx.search(buf, pos, endpos)
                at = -1 if m is None else m.start()
            if at < 0 or at >= endpos:
                break
            ls = buf.rfind(b"\n", pos, at) + 1 or pos
            le = buf.find(b"\n", at, endpos) + 1 or endpos
            if lits is None or chunk_rx.search(buf, ls, le - 1) is not None:
                hits.append((ls, le))
            pos = le
        return hits

    def _scan_lines(self, region: Region, pos: int, endpos: int, out: list[MatchedLine]) -> None:
        buf, _, _, base, _ = region
        while pos < endpos:
            le = buf.find(b"\n", pos, endpos) + 1 or endpos
            raw = bytes(buf[pos : le - 1])
            self._check(raw, self._start(region, pos), base + le, out)
            pos = le

    def scan_final(self, frag: tuple[bytes, int, int] | None) -> list[MatchedLine]:
        """The unterminated last line, treated as a line once the process has exited."""
        if frag is None:
            return []
        raw, start, end = frag
        out: list[MatchedLine] = []
        rest_start = end - len(raw)
        if rest_start != start:
            self._long_line(raw, start, rest_start, end, out)
        else:
            self._check(raw, start, end, out)
        return out


class Batch:
    """Cooldown and max_events for one monitor (pure: the caller passes `now`).

    The cooldown is a fixed window from the first pending match: a burst inside it becomes one
    event. An event is one flush with at least one line; after `max_events` events the monitor
    stops (the process keeps running).
    """

    def __init__(
        self,
        cooldown: float,
        max_events: int | None = None,
        pending: list[MatchedLine] | None = None,
        first_at: float | None = None,
        events: int = 0,
        matches: int = 0,
    ) -> None:
        self.cooldown = cooldown
        self.max_events = max_events
        self.pending: list[MatchedLine] = [] if pending is None else pending
        self.first_at = first_at
        self.events = events
        self.matches = matches

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
