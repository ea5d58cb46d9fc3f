"""Is a room spec a URL or a path? Kept apart from `room_url` (which parses URLs and imports
`dataclasses`, `urllib`) so the doors that handle a file room on every turn decide this without
loading the URL parser."""

from __future__ import annotations


def is_url(spec: object) -> bool:
    """Is this room spec a URL (any `scheme://`) rather than a path?"""
    return isinstance(spec, str) and "://" in spec
