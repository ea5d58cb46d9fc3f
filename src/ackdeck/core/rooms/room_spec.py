"""Is a room spec a URL or a path? Kept apart from `room_url` (which parses URLs and imports
`dataclasses`, `urllib`) so the doors that handle a file room on every turn decide this without
loading the URL parser. A path's own rule (`file_room_path`) is here too, on plain strings:
the per-turn push resolves it without building a room reference (core/service/push.py)."""

from __future__ import annotations

import os

from ackdeck.core.base.names import room_path_str
from ackdeck.core.errors import InvalidInput


def is_url(spec: object) -> bool:
    """Is this room spec a URL (any `scheme://`) rather than a path?"""
    return isinstance(spec, str) and "://" in spec


def file_room_path(spec: str | os.PathLike[str], dirs: dict[str, str] | None = None) -> str:
    """The absolute path a file room's spec names, its directory resolved as the kernel does
    (`names.room_path`; `dirs`: see there). InvalidInput for a NUL byte, or for a spec that
    names a directory."""
    text = os.fspath(spec)
    if "\0" in text:
        raise InvalidInput("room path contains a NUL byte")
    return room_path_str(text, dirs)
