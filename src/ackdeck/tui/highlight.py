"""What the lines panel filters by and highlights: pure, no Textual (worker threads use it).

A filter is plain text (case-insensitive substring) or `/regex/` (RE2, as monitors are written
in the processes table, compiled by core so the syntax and its errors are the same). Highlights
mark the match itself, not the line: the filter's matches and every monitor pattern's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ackdeck.core.errors import InvalidInput
from ackdeck.core.service.procs import compile_regex

from .lineindex import display_text

if TYPE_CHECKING:
    from ackdeck.core.service.procs import Pattern

FILTER_SYNTAX = "text (any case), or /regex/ (RE2); empty shows all"  # the prompts say it

Span = tuple[int, int]  # [start, end) in characters of a line's display text


class LineFilter:
    """A parsed `/` filter. Raises InvalidInput (one line) for a regex RE2 refuses."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pattern: Pattern | None = None
        self._literal: re.Pattern[str] | None = None
        if len(text) >= 2 and text.startswith("/") and text.endswith("/"):
            self.pattern = compile_regex(text[1:-1], "filter")
        else:
            self._folded = text.casefold().encode("utf-8", errors="replace")
            self._ascii = self._folded.isascii()
            # Only for highlighting: an escaped literal cannot backtrack.
            self._literal = re.compile(re.escape(text), re.IGNORECASE)

    @property
    def is_regex(self) -> bool:
        return self.pattern is not None

    def describe(self) -> str:
        return f"regex {self.text}" if self.is_regex else repr(self.text)

    def keeps(self, raw: bytes) -> bool:
        """Does the line (raw bytes, no newline) match?"""
        if self.pattern is not None:
            return self.pattern.search(display_text(raw).encode("utf-8", "replace")) is not None
        hay = raw.lower() if self._ascii else display_text(raw).casefold().encode()
        return self._folded in hay

    def spans(self, text: str) -> list[Span]:
        if self.pattern is not None:
            return regex_spans(self.pattern, text)
        assert self._literal is not None
        return [m.span() for m in self._literal.finditer(text) if m.end() > m.start()]


def regex_spans(pattern: Pattern, text: str) -> list[Span]:
    """Where an RE2 pattern matches `text`, in characters (RE2 matches UTF-8 bytes)."""
    data = text.encode("utf-8", "surrogateescape")
    out: list[Span] = []
    pos = 0
    while pos <= len(data):
        m = pattern.search(data, pos)
        if m is None:
            break
        start, end = m.start(), m.end()
        if end > start:
            first = len(data[:start].decode("utf-8", "replace"))
            out.append((first, first + len(data[start:end].decode("utf-8", "replace"))))
        pos = end if end > start else end + 1
    return out


@lru_cache(maxsize=256)
def monitor_pattern(text: str) -> Pattern | None:
    """A monitor's pattern compiled once (None if it no longer compiles: nothing to mark)."""
    try:
        return compile_regex(text)
    except InvalidInput:
        return None


def monitor_patterns(runs: Sequence[Any]) -> tuple[Pattern, ...]:
    """The including patterns of the monitors of `runs` (a snapshot's processes)."""
    seen: dict[str, Pattern] = {}
    for run in runs:
        for m in run.monitors:
            if not m.exclude and m.pattern not in seen:
                compiled = monitor_pattern(m.pattern)
                if compiled is not None:
                    seen[m.pattern] = compiled
    return tuple(seen.values())


def marks(
    text: str, monitors: Sequence[Pattern], line_filter: LineFilter | None
) -> list[tuple[Span, str]]:
    """The spans of `text` to mark and how: "monitor" or "match" (the filter's; drawn over a
    monitor's where both mark the same characters)."""
    out: list[tuple[Span, str]] = []
    for p in monitors:
        out += [(s, "monitor") for s in regex_spans(p, text)]
    if line_filter is not None:
        out += [(s, "match") for s in line_filter.spans(text)]
    return out


def cut_by_marks(text: str, spans: Sequence[tuple[Span, str]]) -> list[tuple[str, str | None]]:
    """`text` in pieces, each with the kind of mark over it (None: unmarked); later spans
    win where they overlap."""
    if not spans:
        return [(text, None)]
    edges = sorted({0, len(text), *(min(max(p, 0), len(text)) for s, _ in spans for p in s)})
    pieces: list[tuple[str, str | None]] = []
    for a, b in zip(edges, edges[1:], strict=False):
        kind = None
        for (s, e), k in spans:
            if s <= a and b <= e:
                kind = k
        if pieces and pieces[-1][1] == kind:
            pieces[-1] = (pieces[-1][0] + text[a:b], kind)
        else:
            pieces.append((text[a:b], kind))
    return pieces
