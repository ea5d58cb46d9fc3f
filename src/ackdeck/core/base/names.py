"""Validation of names that become parts of paths (sessions, process names)."""

from __future__ import annotations

import os

from ackdeck.core.errors import InvalidInput, InvalidName

# On the push path (tests/test_push_path.py): no `re`, no pathlib at import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# Letters, digits and `._@-`, 1-128 of them; never `/`, NUL, or a name made only of dots.
# Checked with str methods: `re` alone costs a per-turn command half a bare interpreter.
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@-")
_NAME_MAX = 128


def room_path(path: str | os.PathLike[str], dirs: dict[str, str] | None = None) -> Path:
    """A room's absolute path, its directory resolved as the kernel resolves it.

    `dir/link/../r` is `r` beside the link's *target* for open(2) (and for the CLI), so a
    lexical normpath (os.path.abspath) named another file. Only the directory is resolved:
    the room itself may be a symlink, which rooms refuse unless the owner opts in.
    `dirs`: directories already resolved for the other rooms one caller names at once (a
    `room status` of 3,000 rooms in one directory resolves it once, not 3,000 times).
    """
    from pathlib import Path

    return Path(room_path_str(path, dirs))


def room_path_str(path: str | os.PathLike[str], dirs: dict[str, str] | None = None) -> str:
    """`room_path` as a plain string (the push path builds no Path): the one definition."""
    head, name = os.path.split(os.path.join(os.getcwd(), check_room_path(path)))
    if dirs is None:
        return os.path.join(os.path.realpath(head), name)
    real = dirs.get(head)
    if real is None:
        real = dirs[head] = os.path.realpath(head)
    return os.path.join(real, name)


def as_pathlib_would(path: str) -> str:
    """An absolute path as str(Path(path)) spells it: repeated slashes and `.` parts gone, no
    trailing slash, `..` kept (not resolved: a symlink may be in front of it), POSIX's two
    leading slashes kept. The file room's names are strings spelled so (core/rooms/file/
    room.py, core/service/roomref.py), and the home (base/home.py)."""
    lead = "//" if path.startswith("//") and not path.startswith("///") else "/"
    return lead + "/".join(p for p in path.split("/") if p not in ("", "."))


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
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= _NAME_MAX
        or not _NAME_CHARS.issuperset(value)
        or value.strip(".") == ""
    ):
        shown = repr(value)[:60]
        raise InvalidName(
            f"invalid {what} name {shown}: use 1-128 of A-Z a-z 0-9 . _ @ - (no '/', '..' or NUL)"
        )
    if what == "process" and value.startswith("."):
        # Wake records are NAME.json next to the store's own dot files (.lock, temp files),
        # which every reader skips: a dot name would be written but never read.
        raise InvalidName(f"invalid process name {value!r}: it must not start with '.'")
    return value
