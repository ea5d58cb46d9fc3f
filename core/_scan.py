"""Speed helpers for the monitor scanner (pure computation, no I/O).

- CtrlFinder: locate the control bytes that cleaning drops, with glibc's vectorised strcspn
  where it can be loaded (several times faster than a regex character class), else with one
  `translate` + `find`.
- required_literals: literal byte strings every match of a regex must contain, read from the
  stdlib's own regex parser, so candidate lines are found with `bytes.find`.

Both only narrow where core.monitors looks; every candidate is still verified by the real regex
on the cleaned line, so results are exactly those of a line-by-line scan.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib
import re
from collections.abc import Callable
from typing import Any

Buf = bytes | bytearray

# Maps every control byte that cleaning drops to NUL and every other byte to itself: one
# `translate` plus `find(NUL)` locates them several times faster than a regex character class.
_CTRL_TABLE = bytes(
    0 if (c < 0x20 and c not in (0x09, 0x0A)) or c == 0x7F else c for c in range(256)
)


@functools.cache
def _strcspn() -> Callable[[int, bytes], int] | None:
    """libc's strcspn (vectorised in glibc), or None where it cannot be loaded."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.strcspn
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_size_t
    fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    return fn


# strcspn stops at NUL by itself, which is also a control byte, so NUL is left out of the set.
# Two halves of at most 16 bytes each: glibc's SSE4.2 strcspn handles sets that small in one
# vector compare, which makes two passes faster than one pass over the 29-byte set.
_CTRL_SET = bytes(c for c in range(1, 0x20) if c not in (0x09, 0x0A)) + b"\x7f"
_CTRL_HALVES = (_CTRL_SET[:15], _CTRL_SET[15:])


def _address(buf: Buf) -> int | None:
    """Address of buf's bytes when they are followed by a NUL somewhere (strcspn must stop)."""
    if isinstance(buf, bytes):
        # CPython keeps every bytes object NUL-terminated.
        return ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value
    if buf and buf[-1] == 0:
        return ctypes.addressof(ctypes.c_char.from_buffer(buf))
    return None


class CtrlFinder:
    """Finds control bytes in buf[lo:hi]: strcspn when possible, else translate + find."""

    def __init__(self, buf: Buf, lo: int, hi: int) -> None:
        self.buf, self.hi = buf, hi
        fn = _strcspn()
        self.addr = _address(buf) if fn is not None else None
        self.fn = fn
        self.marked: bytes | None = None
        self.hits = [-1, -1]
        if self.addr is None:
            self.marked = bytes(buf[lo:hi]).translate(_CTRL_TABLE)
            self.lo = lo

    def next(self, pos: int) -> int:
        """Index of the first control byte at or after pos (< hi), or -1."""
        if self.marked is not None:
            i = self.marked.find(b"\0", pos - self.lo)
            return -1 if i < 0 else i + self.lo
        assert self.fn is not None and self.addr is not None
        # Each half remembers its next hit, so a half that hits rarely is not rescanned from
        # every hit of the other one.
        for k, chars in enumerate(_CTRL_HALVES):
            if self.hits[k] < pos:
                self.hits[k] = pos + self.fn(self.addr + pos, chars)
        i = min(self.hits)
        return i if i < self.hi else -1


def required_literals(pattern: str) -> tuple[bytes, ...] | None:
    """Literal byte strings such that every match of `pattern` contains one of them.

    `bytes.find` locates literals several times faster than the regex engine scans, and a line
    can only match if it contains one of them, so they make an exact candidate filter. Uses the
    longest run of literals the pattern always contains, or, failing that, an alternation
    (also inside a group) whose every branch contains one, e.g. `ERROR|FAIL(ED)?: `.
    None when there is no such set (then the whole regex scans the chunk).
    """
    try:
        # The stdlib's own regex parser (private, but stable within the pinned Python 3.11).
        parser: Any = importlib.import_module("re._parser")
        parsed = parser.parse(pattern.encode("utf-8"))
        if parsed.state.flags & re.IGNORECASE:
            return None
        found = _required(parser, list(parsed.data))
    except (ImportError, AttributeError, re.error, ValueError, TypeError):
        return None
    if not found or any(not lit for lit in found) or len(found) > 8:
        return None
    return tuple(sorted(set(found)))


def _required(parser: Any, items: list[Any]) -> list[bytes] | None:
    """Every item of a sequence is mandatory; pick the best requirement any of them gives."""
    best = b""
    run = bytearray()
    alternatives: list[bytes] | None = None
    for op, arg in items:
        if op == parser.LITERAL:
            run.append(arg)
            continue
        best = max(best, bytes(run), key=len)
        run = bytearray()
        if alternatives is not None:
            continue
        if op == parser.BRANCH:
            alts = [_required(parser, list(alt)) for alt in arg[1]]
            if all(a is not None for a in alts):
                alternatives = [lit for a in alts if a is not None for lit in a]
        elif op == parser.SUBPATTERN and not arg[1] and not arg[2]:  # a group without flags
            alternatives = _required(parser, list(arg[3]))
    best = max(best, bytes(run), key=len)
    if len(best) >= 3 or (best and alternatives is None):
        return [best]
    return alternatives
