"""The birth time from statx(2) through the `_ctypes` extension alone (issue 43: the per-turn
read, ack and status no longer import the `ctypes` package for it) gives what the `ctypes` code
it replaced gave, on real files of the filesystems here, and falls back to that code where
`_ctypes` is not what it expects."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ackdeck.core.base import fileid

_AT_EMPTY_PATH = 0x1000
_AT_SYMLINK_NOFOLLOW = 0x100
_AT_FDCWD = -100


def _fresh_python(tmp_path: Path, code: str) -> dict[str, Any]:
    """Run `code` in a fresh interpreter in `tmp_path`; the JSON object it prints. It must
    exit 0 and say nothing on stderr."""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stderr == "", out.stderr
    found: dict[str, Any] = json.loads(out.stdout)
    return found


def _both(dirfd: int, path: bytes, flags: int) -> tuple[int | None, int | None]:
    """The answer of the module's own call and of the `ctypes` code, for the same file."""
    reference = fileid._via_ctypes()
    assert fileid._statx is not None and reference is not None
    return fileid._statx(dirfd, path, flags), reference(dirfd, path, flags)


def test_the_call_is_made_through_the_ctypes_extension_here() -> None:
    """Linux with glibc on 3.11-3.13: the comparisons below compare two implementations, not
    the fallback with itself."""
    assert fileid._statx is not None
    assert fileid._statx.__qualname__.startswith("_via_ctypes_extension."), fileid._statx


@pytest.mark.parametrize("where", ["tmp", "/dev/shm"])
def test_the_ctypes_extension_reads_the_birth_time_ctypes_read_on_real_files(
    tmp_path: Path, where: str
) -> None:
    """A file by fd and by path, a directory, a symlink itself (not followed), the file grown
    by an append (same birth) and removed and recreated (a new birth): the same ns both ways.
    tmp_path is ext4 here, /dev/shm tmpfs (which reuses the inode number at once)."""
    base = tmp_path if where == "tmp" else Path(where)
    if not base.is_dir():
        pytest.skip(f"no {where} here")
    work = base / f"ackdeck-fileid-{os.getpid()}"
    work.mkdir(exist_ok=where == "tmp")
    try:
        path = work / "r"
        path.write_bytes(b"a\n")
        link = work / "link"
        link.symlink_to(path)
        seen = []
        for target in (path, work, link):
            fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_PATH)
            try:
                by_fd = _both(fd, b"", _AT_EMPTY_PATH)
            finally:
                os.close(fd)
            by_path = _both(_AT_FDCWD, os.fsencode(target), _AT_SYMLINK_NOFOLLOW)
            assert by_fd[0] == by_fd[1] == by_path[0] == by_path[1], (target, by_fd, by_path)
            assert by_fd[0] == fileid.birth_ns_path(target)
            seen.append(by_fd[0])
        if seen[0] is None:
            pytest.skip(f"{where}: no statx birth time on this filesystem")
        with open(path, "ab") as f:
            f.write(b"b\n")
        assert _both(_AT_FDCWD, os.fsencode(path), 0) == (seen[0], seen[0])
        path.unlink()
        path.write_bytes(b"a\n")
        again = _both(_AT_FDCWD, os.fsencode(path), 0)
        assert again[0] == again[1] and again[0] != seen[0]
    finally:
        for name in ("r", "link"):
            (work / name).unlink(missing_ok=True)
        work.rmdir()


@pytest.mark.parametrize("path", ["/proc/self/status", "/sys/kernel", "/proc"])
def test_a_filesystem_without_birth_times_is_none_both_ways(path: str) -> None:
    """procfs and sysfs fill no stx_btime (the mask says so): None, not a zero time."""
    if not os.path.exists(path):
        pytest.skip(f"no {path} here")
    assert _both(_AT_FDCWD, path.encode(), _AT_SYMLINK_NOFOLLOW) == (None, None)
    assert fileid.birth_ns_path(path) is None


def test_a_closed_fd_a_missing_path_and_a_path_with_a_nul_are_none_both_ways(
    tmp_path: Path,
) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    os.close(fd)  # EBADF
    assert _both(fd, b"", _AT_EMPTY_PATH) == (None, None)
    assert fileid.birth_ns(fd) is None
    missing = tmp_path / "gone"  # ENOENT
    assert _both(_AT_FDCWD, os.fsencode(missing), _AT_SYMLINK_NOFOLLOW) == (None, None)
    assert fileid.birth_ns_path(missing) is None
    # A C string ends at the NUL: both ask for `tmp_path/gone` (missing) and say None.
    assert _both(_AT_FDCWD, os.fsencode(missing) + b"\0x", 0) == (None, None)


def test_a_fd_that_is_not_an_int_raises_ctypes_argument_error_as_before() -> None:
    """The argument types convert as `ctypes` did: the same exception class, not a pointer made
    of a str (which `_ctypes` would pass without argument types)."""
    import ctypes

    with pytest.raises(ctypes.ArgumentError):
        fileid.birth_ns("3")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fileid.birth_ns_path(3)  # type: ignore[arg-type]


def test_a_filled_statx_is_read_at_the_offsets_of_linux_stat_h() -> None:
    """The pure part: stx_mask at 0, stx_btime.tv_sec (signed) at 80, tv_nsec at 88."""

    def statx(mask: int, sec: int, nsec: int) -> bytes:
        raw = bytearray(b"\xee" * 256)  # every other field: noise
        raw[0:4] = mask.to_bytes(4, sys.byteorder)
        raw[80:88] = sec.to_bytes(8, sys.byteorder, signed=True)
        raw[88:92] = nsec.to_bytes(4, sys.byteorder)
        return bytes(raw)

    btime = fileid._STATX_BTIME
    assert fileid.btime_from_statx(statx(0x7FF | btime, 1_700_000_000, 5)) == (
        1_700_000_000_000_000_005
    )
    assert fileid.btime_from_statx(statx(btime, -2, 999_999_999)) == -1_000_000_001
    assert fileid.btime_from_statx(statx(0x7FF, 1_700_000_000, 5)) is None  # mask without it


def _fresh(tmp_path: Path, before: str) -> dict[str, object]:
    """fileid in a fresh interpreter after `before` ran: which call it chose, whether the
    `ctypes` package was loaded, and its answers for a file (by fd and by path) and a missing
    path."""
    (tmp_path / "r").write_bytes(b"a\n")
    code = (
        "import json, os, sys\n"
        f"{before}\n"
        "from ackdeck.core.base import fileid\n"
        "fd = os.open('r', os.O_RDONLY)\n"
        "out = {'call': getattr(fileid._statx, '__qualname__', None),\n"
        "       'fd': fileid.birth_ns(fd), 'path': fileid.birth_ns_path('r'),\n"
        "       'missing': fileid.birth_ns_path('gone'), 'ctypes': 'ctypes' in sys.modules}\n"
        "print(json.dumps(out))\n"
    )
    return _fresh_python(tmp_path, code)


def test_importing_fileid_and_asking_loads_no_ctypes_package(tmp_path: Path) -> None:
    found = _fresh(tmp_path, "")
    here = fileid.birth_ns_path(tmp_path / "r")
    assert found == {
        "call": "_via_ctypes_extension.<locals>.call",
        "fd": here,
        "path": here,
        "missing": None,
        "ctypes": False,
    }


def test_a_python_whose_ctypes_extension_differs_falls_back_to_ctypes(tmp_path: Path) -> None:
    """A `_ctypes` without what the direct call uses (here `dlsym`, which the `ctypes` package
    does not use) is a Python this was not written against: the `ctypes` code answers, the same
    values."""
    found = _fresh(tmp_path, "import _ctypes\ndel _ctypes.dlsym")
    here = fileid.birth_ns_path(tmp_path / "r")
    assert found == {
        "call": "_via_ctypes.<locals>.call",
        "fd": here,
        "path": here,
        "missing": None,
        "ctypes": True,
    }


def test_a_python_without_ctypes_gets_none_not_a_traceback(tmp_path: Path) -> None:
    """A Python built without libffi has neither `_ctypes` nor `ctypes`: no birth times (the
    ledger's other checks), where importing the module used to raise ImportError."""
    found = _fresh(tmp_path, "sys.modules['_ctypes'] = None")
    assert found == {"call": None, "fd": None, "path": None, "missing": None, "ctypes": False}


# A seccomp filter that answers statx with ENOSYS, as a kernel older than 4.11 does: x86_64's
# syscall number, checked against the filter's architecture so another one is let through.
_ENOSYS_STATX = """
import ctypes, errno, struct
libc = ctypes.CDLL(None, use_errno=True)
AUDIT_ARCH_X86_64, NR_STATX = 0xC000003E, 332
RET_ERRNO, RET_ALLOW = 0x00050000, 0x7FFF0000
def op(code, k, jt=0, jf=0):
    return struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([
    op(0x20, 4),                        # ld arch
    op(0x15, AUDIT_ARCH_X86_64, 1, 0),  # jeq x86_64 ? next+1 : next
    op(0x06, RET_ALLOW),
    op(0x20, 0),                        # ld nr
    op(0x15, NR_STATX, 0, 1),           # jeq statx ? next : next+1
    op(0x06, RET_ERRNO | errno.ENOSYS),
    op(0x06, RET_ALLOW),
])
buf = ctypes.create_string_buffer(prog)
fprog = struct.pack("HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
fbuf = ctypes.create_string_buffer(fprog)
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS (so a non-root may filter)
ulong = ctypes.c_ulong
libc.prctl.argtypes = [ctypes.c_int, ulong, ctypes.c_void_p, ulong, ulong]
assert libc.prctl(22, 2, ctypes.addressof(fbuf), 0, 0) == 0, ctypes.get_errno()  # SECCOMP
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the filter names x86_64's statx")
def test_a_kernel_without_statx_is_none_both_ways(tmp_path: Path) -> None:
    (tmp_path / "r").write_bytes(b"a\n")
    code = (
        "import json, os, sys\n"
        "from ackdeck.core.base import fileid\n"
        "direct, reference = fileid._statx, fileid._via_ctypes()\n"
        "fd = os.open('r', os.O_RDONLY)\n"
        "before = [direct(fd, b'', 0x1000), reference(fd, b'', 0x1000)]\n"
        f"{_ENOSYS_STATX}\n"
        "import ctypes\n"
        "ctypes.set_errno(0)\n"
        "sx = ctypes.create_string_buffer(256)\n"
        "raw = ctypes.CDLL(None, use_errno=True).statx(fd, b'', 0x1000, 0x800, sx)\n"
        "raw = [raw, ctypes.get_errno(), int.from_bytes(sx.raw[:4], sys.byteorder)]\n"
        "after = [direct(fd, b'', 0x1000), reference(fd, b'', 0x1000),\n"
        "         fileid.birth_ns(fd), fileid.birth_ns_path('r')]\n"
        "print(json.dumps({'before': before, 'raw': raw, 'after': after}))\n"
    )
    found = _fresh_python(tmp_path, code)
    assert found["before"][0] is not None and found["before"][0] == found["before"][1]
    # The kernel said ENOSYS (the filter is what the call met). glibc 2.36 then fills the
    # struct from fstatat itself and returns 0 with the basic fields' mask, no STATX_BTIME (a
    # glibc that assumes a kernel with statx returns -1): None either way.
    ret, errno, mask = found["raw"]
    assert errno == 38 and (ret == -1 or (ret == 0 and not mask & 0x800)), found["raw"]
    assert found["after"] == [None, None, None, None]
