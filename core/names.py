"""Validation of names that become parts of paths (sessions, process names)."""

from __future__ import annotations

import re

from .errors import InvalidName

# Letters, digits and `._@-`; never `/`, NUL, or a name made only of dots.
_NAME = re.compile(r"[A-Za-z0-9._@-]{1,128}")


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
