"""Speed helpers for the monitor scanner (pure computation, no I/O).

- CtrlFinder: locate the control bytes that cleaning drops, with glibc's vectorised strcspn
  where it can be loaded (several times faster than a regex character class), else with one
  `translate` + `find`.
- LiteralFinder: locate the literals every match must contain (core.monitors.literals) with libc's
  strstr (glibc's is vectorised: 5-6x faster than memmem or RE2's own prefix search here),
  else memmem, else `bytes.find`.

- ctrl_lines / ctrl_lines_beside: the lines holding control bytes, optionally in a helper thread
  beside a regex search (both passes release the GIL; a literal search is too quick for the
  hand-over to pay).

Control-byte lines are then matched alone on their cleaned text and literal hits are verified
by the real regex on their line, so results are exactly those of a line-by-line scan.
"""

from __future__ import annotations

import ctypes
import os
import sys

# On the hot path (tests/test_layering.py; every monitored run's supervisor imports
# this module): typing is for type checkers only, and ctypes.util is not imported at all (its
# find_library pulls in shutil, tempfile, bz2 and lzma: ~1 MiB per process). Nor are
# functools and collections.abc (they import collections: ~0.3 MiB of each supervisor), so
# the two caches below are plain dicts.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import ThreadPoolExecutor
    from typing import Any, TypeVar

    T = TypeVar("T")

Buf = bytes | bytearray

_CPYTHON = sys.implementation.name == "cpython"

# Maps every control byte that cleaning drops to NUL and every other byte to itself: one
# `translate` plus `find(NUL)` locates them several times faster than a regex character class.
_CTRL_TABLE = bytes(
    0 if (c < 0x20 and c not in (0x09, 0x0A)) or c == 0x7F else c for c in range(256)
)


# What functools.cache kept: one answer per call, for the process's life (derived from the
# arguments alone, so a cache, not state).
_LIBC_FNS: dict[tuple[Any, ...], Any] = {}


def _libc_fn(name: str, restype: Any, *argtypes: Any) -> Any:
    """libc's function `name` with the given signature, or None where it cannot be loaded."""
    key = (name, restype, *argtypes)
    if key in _LIBC_FNS:
        return _LIBC_FNS[key]
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols, libc's among them
        fn = getattr(libc, name)
    except (OSError, AttributeError):
        fn = None
    else:
        fn.restype = restype
        fn.argtypes = list(argtypes)
    _LIBC_FNS[key] = fn
    return fn


def _strcspn() -> Callable[[int, bytes], int] | None:
    """libc's strcspn (vectorised in glibc), or None where it cannot be loaded."""
    return _libc_fn("strcspn", ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p)


# strcspn stops at NUL by itself, which is also a control byte, so NUL is left out of the set.
# Two halves of at most 16 bytes each: glibc's SSE4.2 strcspn handles sets that small in one
# vector compare, which makes two passes faster than one pass over the 29-byte set.
_CTRL_SET = bytes(c for c in range(1, 0x20) if c not in (0x09, 0x0A)) + b"\x7f"
_CTRL_HALVES = (_CTRL_SET[:15], _CTRL_SET[15:])


def _address(buf: Buf) -> int | None:
    """Address of buf's bytes when a NUL follows them (strcspn and strstr must stop), or None.

    CPython keeps every bytes and bytearray object NUL-terminated just past its end (the C API
    promises it: PyBytes_AsString, PyByteArray_AsString); elsewhere only a bytearray whose own
    last byte is NUL (ackdeck.core.monitors.tail's read buffer) qualifies.
    """
    if len(buf) == 0:
        return None
    if not (_CPYTHON or buf[-1] == 0):
        return None
    return _any_address(buf)


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


_HELPERS: dict[int, ThreadPoolExecutor] = {}


def _helper(pid: int) -> ThreadPoolExecutor:
    """One worker thread per process (keyed by pid: threads do not survive a fork)."""
    if pid not in _HELPERS:
        from concurrent.futures import ThreadPoolExecutor  # only scans of large reads need it

        _HELPERS[pid] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"ackdeck-scan-{pid}")
    return _HELPERS[pid]


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


def _memmem() -> Callable[[int, int, bytes, int], int | None] | None:
    args = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
    return _libc_fn("memmem", ctypes.c_void_p, *args)


def _strstr() -> Callable[[int, bytes], int | None] | None:
    return _libc_fn("strstr", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)


def _any_address(buf: Buf) -> int | None:
    """Address of buf's bytes (valid while buf is not resized), or None."""
    if isinstance(buf, bytes):
        return ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value
    if len(buf) == 0:
        return None
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


# After this many stops at NUL bytes inside one buffer, strstr gives way to memmem: each stop
# costs a round trip through Python, which output full of NULs would pay per byte.
MAX_NUL_STOPS = 64


def fast_literal_search() -> bool:
    """Whether LiteralFinder can use strstr (glibc's is vectorised: on this project's machines
    it finds a literal 5-6x faster than memmem or RE2's own prefix search)."""
    return _strstr() is not None


class LiteralFinder:
    """Finds the next occurrence of any of a few literals in buf, remembering each one's next
    hit so a literal that occurs rarely is not searched again from every hit of another.

    strstr is the fast search, but it needs a NUL-terminated text and stops at every NUL: a NUL
    in buf ends one strstr call and the search goes on past it (no literal holds a NUL; one
    that does is searched with memmem). It may read on past `endpos` up to buf's terminating
    NUL; a hit that does not end by `endpos` counts as none. `nul_free` says the caller knows
    buf holds no NUL before the end of its searches (the scanner's control-byte pass, which
    finds NULs too, found none), which spares looking for one after each miss.
    """

    def __init__(self, buf: Buf, literals: tuple[bytes, ...], *, nul_free: bool = False) -> None:
        self.buf, self.literals = buf, literals
        self.nul_free = nul_free
        # The last NUL lookup: (first NUL at or after `lo`, or -1 if none before `hi`, lo, hi).
        self._nul_memo = (-1, 1 << 62, -1)
        self.memmem = _memmem()
        self.addr = _any_address(buf) if self.memmem is not None else None
        self.str_addr = None
        if fast_literal_search() and not any(b"\0" in lit for lit in literals):
            self.str_addr = _address(buf)
        self.nul_stops = 0
        self.nexts = [-1] * len(literals)  # next hit, or -1: none before upto
        self.upto = [-1] * len(literals)

    def _find(self, lit: bytes, pos: int, endpos: int) -> int:
        if endpos - pos < len(lit):
            return -1
        if self.str_addr is not None and self.nul_stops <= MAX_NUL_STOPS:
            return self._find_str(lit, pos, endpos)
        if self.addr is None or self.memmem is None:
            return self.buf.find(lit, pos, endpos)
        hit = self.memmem(self.addr + pos, endpos - pos, lit, len(lit))
        return -1 if not hit else hit - self.addr

    def _find_str(self, lit: bytes, pos: int, endpos: int) -> int:
        """_find with strstr (self.str_addr is set: buf is NUL-terminated, lit holds no NUL)."""
        strstr, addr = _strstr(), self.str_addr
        assert strstr is not None and addr is not None
        while endpos - pos >= len(lit):
            hit = strstr(addr + pos, lit)
            if hit:
                at = hit - addr
                return at if at + len(lit) <= endpos else -1
            # No hit before the next NUL (no hit can span it): go on past it, if it is in range.
            if self.nul_free:
                return -1
            nul = self._nul(pos, endpos)
            if nul < 0:
                return -1
            self.nul_stops += 1
            if self.nul_stops > MAX_NUL_STOPS:
                return self._find(lit, nul + 1, endpos)
            pos = nul + 1
        return -1

    def _nul(self, pos: int, endpos: int) -> int:
        """The first NUL in buf[pos:endpos], or -1 (one memchr serves every literal)."""
        at, lo, hi = self._nul_memo
        if not (lo <= pos and (at >= pos or (at < 0 and endpos <= hi))):
            at = self.buf.find(b"\0", pos, endpos)
            self._nul_memo = (at, pos, endpos)
        return at if at < endpos else -1

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
