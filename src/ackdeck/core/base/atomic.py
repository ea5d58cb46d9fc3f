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
    from typing import TypeVar

    # A path as the caller gave it: a str (a run's supervisor) or a Path (everyone else).
    P = TypeVar("P", str, Path)

TEMP_MARK = ".ackdeck-tmp-"


# ----- names on a path given as a str or a Path, returned in the caller's own type --------
# A run's supervisor works on plain strings, so it never imports pathlib, which brings `re`,
# `enum`, `urllib.parse` and `ipaddress` (~0.9 MiB of each supervisor, one per monitored run;
# docs/performance.md, "Supervisor memory against 1.3x"). Everyone else passes Path objects and
# gets them back. ackdeck's paths are built by joining names (no trailing slash), where
# os.path and pathlib name the same file.
def child(directory: P, *names: str) -> P:
    """`directory / name / ...`."""
    if isinstance(directory, str):
        return os.path.join(directory, *names)
    return directory.joinpath(*names)


def sibling(path: P, name: str) -> P:
    """`path.with_name(name)`: `name` in the directory that holds `path`."""
    if isinstance(path, str):
        return os.path.join(os.path.dirname(path), name)
    return path.with_name(name)


def parent(path: P) -> P:
    """`path.parent`."""
    if isinstance(path, str):
        return os.path.dirname(path) or "."  # as Path("f").parent
    return path.parent


def exists(path: Path | str) -> bool:
    """`path.exists()`. On a str, as pathlib answers it: False for a name that is not there
    (ENOENT, ENOTDIR, EBADF, ELOOP: pathlib's _IGNORED_ERRNOS, Python 3.11-3.13) or holds a
    NUL, the error itself for one that cannot be told (EACCES), where os.path.exists would
    say False and hide it."""
    if not isinstance(path, str):
        return path.exists()
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        import errno  # here: the hooks that only record their event import it nowhere else

        if exc.errno in (errno.EBADF, errno.ELOOP):
            return False
        raise
    except ValueError:
        return False
    return True


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


def temp_path_for(path: P) -> P:
    # Same directory as the target so the rename never crosses a filesystem.
    stem = fitting_name(os.path.basename(path), _TEMP_EXTRA)
    return sibling(path, f".{stem}{TEMP_MARK}{os.getpid()}-{os.urandom(4).hex()}")


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


def fsync_dir(directory: Path | str) -> None:
    # Makes the rename itself durable; without it a power cut can resurrect the old name.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(
    path: P,
    chunks: Iterable[bytes],
    *,
    mode: int | None = None,
    owner: tuple[int, int] | None = None,
    fsync: bool = True,
) -> P:
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


def replace(tmp: Path | str, path: P, *, fsync: bool = True) -> None:
    try:
        os.replace(tmp, path)
    except BaseException:
        unlink_quietly(tmp)
        raise
    if fsync:
        fsync_dir(parent(path))


def atomic_write(path: P, data: bytes, *, mode: int = 0o600, fsync: bool = True) -> None:
    """Replace `path` with `data` atomically."""
    replace(write_temp(path, [data], mode=mode, fsync=fsync), path, fsync=fsync)


def clean_stale_temps(path: P) -> int:
    """Remove temp files for `path` left by writers that died. Call under the writer's lock."""
    prefix = f".{fitting_name(os.path.basename(path), _TEMP_EXTRA)}{TEMP_MARK}"
    removed = 0
    try:
        entries = list(os.scandir(parent(path)))
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
