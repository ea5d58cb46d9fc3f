"""File identity beyond the inode number: the birth time from statx(2).

ext4 and tmpfs hand a new file the inode number of one just removed (tmpfs almost always), so
(device, inode) alone takes a room deleted and recreated for the same file. The birth time
(`stx_btime`, nanoseconds) differs between the two. Python 3.11 has no os.statx, so this calls
glibc's statx through ctypes. Checked here: ext4 and tmpfs report it (Linux 6.x, glibc 2.36);
xfs (v5) and btrfs do too. Where the filesystem or libc does not, the answer is None and the
ledger falls back to inode, size and head fingerprint (as before).
"""

from __future__ import annotations

import ctypes
import os

_AT_EMPTY_PATH = 0x1000
_AT_SYMLINK_NOFOLLOW = 0x100
_AT_FDCWD = -100
_STATX_BTIME = 0x800


class _Timestamp(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_int64), ("tv_nsec", ctypes.c_uint32), ("_r", ctypes.c_int32)]


class _Statx(ctypes.Structure):
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


def _load() -> object | None:
    try:
        fn = ctypes.CDLL(None, use_errno=True).statx
    except (OSError, AttributeError):
        return None  # not glibc >= 2.28 (or not Linux): no birth times
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


_statx = _load()


def _birth(dirfd: int, path: bytes, flags: int) -> int | None:
    if _statx is None:
        return None
    buf = _Statx()
    if _statx(dirfd, path, flags, _STATX_BTIME, ctypes.byref(buf)) != 0:  # type: ignore[operator]
        return None
    if not buf.stx_mask & _STATX_BTIME:
        return None  # this filesystem does not record birth times
    return buf.stx_btime.tv_sec * 1_000_000_000 + buf.stx_btime.tv_nsec


def birth_ns(fd: int) -> int | None:
    """Birth time of the open file `fd` in ns, or None where it is not available."""
    return _birth(fd, b"", _AT_EMPTY_PATH)


def birth_ns_path(path: str | os.PathLike[str]) -> int | None:
    """Birth time of `path` itself (a symlink is not followed), or None."""
    return _birth(_AT_FDCWD, os.fsencode(path), _AT_SYMLINK_NOFOLLOW)
