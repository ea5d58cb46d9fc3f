"""The one wording every door uses for a room that does not exist yet.

A missing room is an empty room by design (producers create it with their first line), so
reading, acking or waiting on one succeeds. But a typo of a room's name looks exactly like an
empty room, so each door says so, in these words: the CLI on stderr (and as `note` in JSON),
MCP `room_status`, the dashboard. When a file with a similar name sits in the same directory,
the note names it.
"""

from __future__ import annotations

import os

from ackdeck.core.rooms.room_spec import is_url

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pathlib import Path

# Short form, for a sentence; the note below starts with it.
NOT_YET = "does not exist yet"
# Shorter still, for a table's number cell: a cell that is never cut must not squeeze the
# room names beside it (at 80 columns, "does not exist yet" left them `esc.t…`, `doome…`).
ABSENT_CELL = "absent"
_WHY = "an empty room until the first line is pushed"
# Directories with more entries than this are not searched for a similar name (a spool of
# millions of files must not make a read of a mistyped room slow).
_MAX_ENTRIES = 10_000


def absent_note(label: str, path: Path | str) -> str:
    """`inbxo.txt does not exist yet (an empty room until the first line is pushed); did you
    mean inbox.txt?`: the line for a room whose file (or redis stream) is missing."""
    hint = ""
    if not is_url(str(path)):
        from ackdeck.core.base.suggest import did_you_mean

        hint = did_you_mean(os.path.basename(str(path)), _neighbours(str(path)))
    return f"{label} {NOT_YET} ({_WHY}){hint}"


def _neighbours(path: str) -> list[str]:
    """Names of the regular files beside `path` that could be rooms: not hidden (ackdeck's
    sidecars and temps are dot-names) and not followed through symlinks."""
    names: list[str] = []
    try:
        with os.scandir(os.path.dirname(path) or ".") as entries:
            for n, entry in enumerate(entries):
                if n >= _MAX_ENTRIES:
                    return []
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_file(follow_symlinks=False):
                        names.append(entry.name)
                except OSError:
                    continue  # vanished or unreadable: not a suggestion
    except OSError:
        return []  # no such directory, or not readable: nothing to suggest
    return sorted(names)
