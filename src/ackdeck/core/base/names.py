"""Validation of names that become parts of paths (sessions, process names)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ackdeck.core.errors import InvalidInput, InvalidName

# Letters, digits and `._@-`; never `/`, NUL, or a name made only of dots.
_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")


def room_path(path: str | os.PathLike[str], dirs: dict[str, str] | None = None) -> Path:
    """A room's absolute path, its directory resolved as the kernel resolves it.

    `dir/link/../r` is `r` beside the link's *target* for open(2) (and for the CLI), so a
    lexical normpath (os.path.abspath) named another file. Only the directory is resolved:
    the room itself may be a symlink, which rooms refuse unless the owner opts in.
    `dirs`: directories already resolved for the other rooms one caller names at once (a
    `room status` of 3,000 rooms in one directory resolves it once, not 3,000 times).
    """
    head, name = os.path.split(os.path.join(os.getcwd(), check_room_path(path)))
    if dirs is None:
        return Path(os.path.realpath(head), name)
    real = dirs.get(head)
    if real is None:
        real = dirs[head] = os.path.realpath(head)
    return Path(real, name)


def check_room_path(path: str | os.PathLike[str]) -> str:
    """The path as text, if its last component names a file. `r/`, `r/.`, `.` and `/` name a
    directory: resolving them as one chased a symlinked room (`inbox/agent.txt/` became the
    link's target, past the symlink refusal) and `/` was a traceback."""
    text = os.fspath(path)
    if os.path.basename(text) in ("", ".", ".."):
        raise InvalidInput(f"room {text[:200]!r} names a directory, not a notification file")
    return text


def check_name(value: str, what: str = "session") -> str:
    """Return `value` if it is safe to use as a single path component, else raise."""
    if not isinstance(value, str) or not _NAME.fullmatch(value) or set(value) == {"."}:
        shown = repr(value)[:60]
        raise InvalidName(
            f"invalid {what} name {shown}: use 1-128 of A-Z a-z 0-9 . _ @ - (no '/', '..' or NUL)"
        )
    if what == "process" and value.startswith("."):
        # Wake records are NAME.json next to the store's own dot files (.lock, temp files),
        # which every reader skips: a dot name would be written but never read.
        raise InvalidName(f"invalid process name {value!r}: it must not start with '.'")
    return value
