"""Crash-safe file replacement: temp file in the same directory -> fsync -> rename -> fsync dir.

A reader (or a kill -9) sees either the old file or the new one, never a torn one, because
rename(2) within one directory is atomic. Temp names carry TEMP_MARK so the next writer can
clean up temps left by a crashed one.
"""

from __future__ import annotations

import os

from ackdeck.core.base.digest import sha256_hex

# On the push path (tests/test_push_path.py, for fitting_name): pathlib and collections.abc
# are for type checkers only here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

TEMP_MARK = ".ackdeck-tmp-"


NAME_MAX = 255
# What a temp name adds to its target's name: ".", TEMP_MARK, a pid, "-", 8 hex digits.
_TEMP_EXTRA = 1 + len(TEMP_MARK) + 10 + 1 + 8


def fitting_name(name: str, extra: int) -> str:
    """`name` if `extra` more bytes still fit in NAME_MAX; otherwise a prefix of it and a hash
    of the whole, so internal names derived from any name the filesystem accepts fit too."""
    raw = os.fsencode(name)
    if len(raw) + extra <= NAME_MAX:
        return name
    digest = sha256_hex(raw)[:16]
    return os.fsdecode(raw[: NAME_MAX - extra - 17]) + "~" + digest


def temp_path_for(path: Path) -> Path:
    # Same directory as the target so the rename never crosses a filesystem.
    stem = fitting_name(path.name, _TEMP_EXTRA)
    return path.with_name(f".{stem}{TEMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")


def is_temp_name(name: str) -> bool:
    """Is `name` one of temp_path_for's names (and not, say, a receipt of a session whose
    name happens to contain TEMP_MARK)?"""
    _, mark, tail = name.rpartition(TEMP_MARK)
    pid, dash, token = tail.partition("-")
    return (
        bool(mark)
        and name.startswith(".")
        and pid.isdigit()
        and bool(dash)
        and (bool(token) and all(c in "0123456789abcdef" for c in token))
    )


def fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; without it a power cut can resurrect the old name.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(
    path: Path,
    chunks: Iterable[bytes],
    *,
    mode: int | None = None,
    owner: tuple[int, int] | None = None,
    fsync: bool = True,
) -> Path:
    """Write `chunks` to a fresh temp file next to `path`; return its path (not yet renamed).

    On any error the temp file is removed and the original is untouched.
    """
    tmp = temp_path_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        if mode is not None:
            os.fchmod(fd, mode)
        if owner is not None and os.geteuid() == 0:
            # Only root may give a file away; for anyone else the file is already theirs.
            os.fchown(fd, *owner)
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        unlink_quietly(tmp)
        raise
    os.close(fd)
    return tmp


def replace(tmp: Path, path: Path, *, fsync: bool = True) -> None:
    try:
        os.replace(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise
    if fsync:
        fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes, *, mode: int = 0o600, fsync: bool = True) -> None:
    """Replace `path` with `data` atomically."""
    replace(write_temp(path, [data], mode=mode, fsync=fsync), path, fsync=fsync)


def clean_stale_temps(path: Path) -> int:
    """Remove temp files for `path` left by writers that died. Call under the writer's lock."""
    prefix = f".{fitting_name(path.name, _TEMP_EXTRA)}{TEMP_MARK}"
    removed = 0
    try:
        entries = list(os.scandir(path.parent))
    except FileNotFoundError:
        return 0
    for entry in entries:
        if entry.name.startswith(prefix):
            unlink_quietly(entry.path)
            removed += 1
    return removed


def unlink_quietly(path: Path | str) -> None:
    """Remove `path` if it is there; a file already gone is what the caller wanted."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def make_dir(directory: str) -> None:
    """Create one directory (0700), or find it there: another process may create it first.
    Never its parents (a missing parent is an error the caller sees)."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
