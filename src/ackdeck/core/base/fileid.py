"""File identity beyond the inode number: the birth time from statx(2).

ext4 and tmpfs hand a new file the inode number of one just removed (tmpfs almost always), so
(device, inode) alone takes a room deleted and recreated for the same file. The birth time
(`stx_btime`, nanoseconds) differs between the two. Python 3.11 has no os.statx, so this calls
glibc's statx itself. Checked here: ext4 and tmpfs report it (Linux 6.x, glibc 2.36); xfs (v5)
and btrfs do too. Where the filesystem or libc does not, the answer is None and the ledger falls
back to inode, size and head fingerprint (as before).

Every read, ack and status of a file room asks, so the call is made through the `_ctypes`
extension directly rather than the `ctypes` package (issue 43): the package's `__init__` builds
dozens of classes and imports `struct`, `_struct` and `ctypes._endian`, 1.4-2.1 ms of a 35-40 ms
read (docs/performance.md), for one function and one 256-byte buffer. The buffer is parsed
with `int.from_bytes` at the offsets of `struct statx` in <linux/stat.h> rather than through a
`Structure`. Where `_ctypes` lacks what this needs or its API differs (a future Python), the
`ctypes` code this replaced is used instead (`_via_ctypes`), with the same answers;
`tests/test_fileid.py` holds the two to the same values on real files.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing stays off the per-turn path (PEP 781)
if TYPE_CHECKING:
    from collections.abc import Callable

    _Statx = Callable[[int, bytes, int], "int | None"]

_AT_EMPTY_PATH = 0x1000
_AT_SYMLINK_NOFOLLOW = 0x100
_AT_FDCWD = -100
_STATX_BTIME = 0x800
_STATX_SIZE = 256  # sizeof(struct statx), fixed by the kernel ABI (spares fill it up)
# Offsets in struct statx (<linux/stat.h>): __u32 stx_mask at 0; struct statx_timestamp
# stx_btime at 80, which is __s64 tv_sec then __u32 tv_nsec. Native byte order.
_MASK_AT = 0
_BTIME_SEC_AT = 80
_BTIME_NSEC_AT = 88


def btime_from_statx(raw: bytes) -> int | None:
    """The birth time in ns from the bytes of a filled `struct statx`, or None when its mask
    says the filesystem did not record one (the field's bytes mean nothing then)."""
    mask = int.from_bytes(raw[_MASK_AT : _MASK_AT + 4], sys.byteorder)
    if not mask & _STATX_BTIME:
        return None
    sec = int.from_bytes(raw[_BTIME_SEC_AT : _BTIME_SEC_AT + 8], sys.byteorder, signed=True)
    nsec = int.from_bytes(raw[_BTIME_NSEC_AT : _BTIME_NSEC_AT + 4], sys.byteorder)
    return sec * 1_000_000_000 + nsec


def _via_ctypes_extension() -> _Statx | None:
    """statx through `_ctypes` alone, the function pointer built once; None where libc has no
    statx (not glibc >= 2.28, or not Linux). Raises ImportError, AttributeError or TypeError
    where `_ctypes` is not what this expects (the caller then falls back to `ctypes`)."""
    import _ctypes

    # The few simple types the call needs, declared as `ctypes` declares c_int and friends:
    # a `_type_` code on `_SimpleCData`. The argument types convert and check each argument
    # as `ctypes` did (a fd that is not an int raises ctypes.ArgumentError, as before).
    class _Int(_ctypes._SimpleCData):
        _type_ = "i"

    class _UInt(_ctypes._SimpleCData):
        _type_ = "I"

    class _CharP(_ctypes._SimpleCData):
        _type_ = "z"

    class _VoidP(_ctypes._SimpleCData):
        _type_ = "P"

    class _Char(_ctypes._SimpleCData):
        _type_ = "c"

    class _Fn(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = _Int
        _argtypes_ = (_Int, _CharP, _Int, _UInt, _VoidP)

    try:
        # ctypes.CDLL(None): the process's own symbols, which include libc's (typeshed's stub
        # takes a path only; the extension takes None, which is what CDLL(None) passes it).
        handle = _ctypes.dlopen(None, _ctypes.RTLD_LOCAL)  # type: ignore[arg-type]
        address = _ctypes.dlsym(handle, "statx")
    except OSError:
        return None  # ctypes.CDLL(None).statx fails the same way: no birth times
    fn = _Fn(address)
    buffer = _Char * _STATX_SIZE
    byref = _ctypes.byref

    def call(dirfd: int, path: bytes, flags: int) -> int | None:
        buf = buffer()
        if fn(dirfd, path, flags, _STATX_BTIME, byref(buf)) != 0:
            # EBADF, ENOENT..., or ENOSYS where glibc does not fill the basic fields itself
            # for a kernel without statx (2.36 does, without STATX_BTIME): no birth time.
            return None
        return btime_from_statx(bytes(buf))

    return call


def _via_ctypes() -> _Statx | None:
    """statx through the `ctypes` package, as this module did before it used `_ctypes` alone:
    the fallback where `_ctypes` differs, and the reference the tests compare with. None where
    libc has no statx."""
    import ctypes

    class _Timestamp(ctypes.Structure):
        _fields_ = [
            ("tv_sec", ctypes.c_int64),
            ("tv_nsec", ctypes.c_uint32),
            ("_r", ctypes.c_int32),
        ]

    class _StatxStruct(ctypes.Structure):
        # struct statx from <linux/stat.h> (256 bytes).
        _fields_ = [
            ("stx_mask", ctypes.c_uint32),
            ("stx_blksize", ctypes.c_uint32),
            ("stx_attributes", ctypes.c_uint64),
            ("stx_nlink", ctypes.c_uint32),
            ("stx_uid", ctypes.c_uint32),
            ("stx_gid", ctypes.c_uint32),
            ("stx_mode", ctypes.c_uint16),
            ("_spare0", ctypes.c_uint16),
            ("stx_ino", ctypes.c_uint64),
            ("stx_size", ctypes.c_uint64),
            ("stx_blocks", ctypes.c_uint64),
            ("stx_attributes_mask", ctypes.c_uint64),
            ("stx_atime", _Timestamp),
            ("stx_btime", _Timestamp),
            ("stx_ctime", _Timestamp),
            ("stx_mtime", _Timestamp),
            ("stx_rdev_major", ctypes.c_uint32),
            ("stx_rdev_minor", ctypes.c_uint32),
            ("stx_dev_major", ctypes.c_uint32),
            ("stx_dev_minor", ctypes.c_uint32),
            ("_spare2", ctypes.c_uint64 * 14),
        ]

    try:
        fn = ctypes.CDLL(None, use_errno=True).statx
    except (OSError, AttributeError):
        return None  # not glibc >= 2.28 (or not Linux): no birth times
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    fn.restype = ctypes.c_int

    def call(dirfd: int, path: bytes, flags: int) -> int | None:
        buf = _StatxStruct()
        if fn(dirfd, path, flags, _STATX_BTIME, ctypes.byref(buf)) != 0:
            return None
        if not buf.stx_mask & _STATX_BTIME:
            return None  # this filesystem does not record birth times
        return int(buf.stx_btime.tv_sec * 1_000_000_000 + buf.stx_btime.tv_nsec)

    return call


def _load() -> _Statx | None:
    try:
        return _via_ctypes_extension()
    except (ImportError, AttributeError, TypeError):
        pass  # `_ctypes` is missing or not the one this was written against: use `ctypes`
    try:
        return _via_ctypes()
    except ImportError:
        return None  # no ctypes at all (a Python built without libffi): no birth times


_statx = _load()


def _birth(dirfd: int, path: bytes, flags: int) -> int | None:
    if _statx is None:
        return None
    return _statx(dirfd, path, flags)


def birth_ns(fd: int) -> int | None:
    """Birth time of the open file `fd` in ns, or None where it is not available."""
    return _birth(fd, b"", _AT_EMPTY_PATH)


def birth_ns_path(path: str | os.PathLike[str]) -> int | None:
    """Birth time of `path` itself (a symlink is not followed), or None."""
    return _birth(_AT_FDCWD, os.fsencode(path), _AT_SYMLINK_NOFOLLOW)
