"""Speed helpers for the monitor scanner (pure computation, no I/O).

- CtrlFinder: locate the control bytes that cleaning drops, with glibc's vectorised strcspn
  where it can be loaded (several times faster than a regex character class), else with one
  `translate` + `find`.
- LiteralFinder: locate the literals every match must contain (core.watch.literals) with glibc's
  memmem, else `bytes.find` (memmem is 1.5-2x faster on literals whose first byte is common).

- ctrl_lines / ctrl_lines_beside: the lines holding control bytes, optionally in a helper thread
  beside the search (both passes release the GIL).

Control-byte lines are then matched alone on their cleaned text and literal hits are verified
by the real regex on their line, so results are exactly those of a line-by-line scan.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

T = TypeVar("T")

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


def ctrl_lines(buf: Buf, lo: int, hi: int) -> list[tuple[int, int]]:
    """[start, end) of each line of buf[lo:hi] (whole lines) that holds a control byte."""
    found: list[tuple[int, int]] = []
    ctrl = CtrlFinder(buf, lo, hi)
    pos = lo
    while pos < hi:
        c = ctrl.next(pos)
        if c < 0:
            break
        ls = buf.rfind(b"\n", lo, c) + 1 or lo
        le = buf.find(b"\n", c, hi) + 1 or hi
        found.append((ls, le))
        pos = le
    return found


# Below this size a region is scanned in one thread: handing work over costs more than it saves.
PARALLEL_MIN = 1 << 20


@functools.cache
def _helper(pid: int) -> ThreadPoolExecutor:
    """One worker thread per process (keyed by pid: threads do not survive a fork)."""
    from concurrent.futures import ThreadPoolExecutor  # only scans of large reads need it

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ackdeck-scan-{pid}")


def ctrl_lines_beside(
    buf: Buf, lo: int, hi: int, other: Callable[[], T], *, parallel: bool
) -> tuple[list[tuple[int, int]], T]:
    """ctrl_lines(buf, lo, hi) and other(), the first offered to a helper thread if `parallel`.

    Both are read-only passes over buf that spend their time in C with the GIL released
    (strcspn through ctypes, RE2 or memmem), so on two idle cores they overlap almost entirely.
    On busy cores the helper may not get to run in time: if it has not started when other()
    is done, the work is taken back and done here, so a busy machine costs no more than one
    thread does (no waiting for a core).
    """
    if not parallel:
        return ctrl_lines(buf, lo, hi), other()
    job = _helper(os.getpid()).submit(ctrl_lines, buf, lo, hi)
    try:
        result = other()
    finally:
        # Never return (or raise) while the helper may still read buf: the caller reuses it.
        taken_back = job.cancel()
        found = ctrl_lines(buf, lo, hi) if taken_back else job.result()
    return found, result


@functools.cache
def _memmem() -> Callable[[int, int, bytes, int], int | None] | None:
    """libc's memmem, or None where it cannot be loaded."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.memmem
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    return fn


def _any_address(buf: Buf) -> int | None:
    """Address of buf's bytes (valid while buf is not resized), or None."""
    if isinstance(buf, bytes):
        return ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value
    if len(buf) == 0:
        return None
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


class LiteralFinder:
    """Finds the next occurrence of any of a few literals in buf, remembering each one's next
    hit so a literal that occurs rarely is not searched again from every hit of another."""

    def __init__(self, buf: Buf, literals: tuple[bytes, ...]) -> None:
        self.buf, self.literals = buf, literals
        self.fn = _memmem()
        self.addr = _any_address(buf) if self.fn is not None else None
        self.nexts = [-1] * len(literals)  # next hit, or -1: none before upto
        self.upto = [-1] * len(literals)

    def _find(self, lit: bytes, pos: int, endpos: int) -> int:
        if endpos - pos < len(lit):
            return -1
        if self.addr is None or self.fn is None:
            return self.buf.find(lit, pos, endpos)
        hit = self.fn(self.addr + pos, endpos - pos, lit, len(lit))
        return -1 if not hit else hit - self.addr

    def next(self, pos: int, endpos: int) -> int:
        """Start of the first literal occurrence in buf[pos:endpos], or -1.

        Calls come with increasing, disjoint ranges (the scanner's), so a remembered hit (or a
        remembered miss up to an end) stays true until pos passes it.
        """
        best = -1
        for k, lit in enumerate(self.literals):
            at, upto = self.nexts[k], self.upto[k]
            if at < pos and not (at < 0 and pos < upto and upto >= endpos):
                at = self._find(lit, pos, endpos)
                self.nexts[k], self.upto[k] = at, endpos
            if 0 <= at < endpos and (best < 0 or at < best):
                best = at
        return best
