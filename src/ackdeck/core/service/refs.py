"""Parse a room spec once, where a door reads its configuration or arguments: the one place
that tells a file room from a redis room (`core.service.roomref`), and the one way to open one
(`open_room`, or a reference's own `open`). The redis side is imported only for a URL."""

from __future__ import annotations

import os
import time

from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.room_spec import is_url
from ackdeck.core.service.roomref import FileRoomRef, RoomRef

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from ackdeck.core.rooms.room_backend import RoomBackend


def parse_room(
    spec: str | os.PathLike[str] | RoomRef,
    *,
    env: Mapping[str, str] | None = None,
    follow_symlinks: bool = False,
    dirs: dict[str, str] | None = None,
) -> RoomRef:
    """The room `spec` names: a `redis://` / `rediss://` URL, else a file path. Raises
    InvalidInput (one line, never a password) when it names none. `dirs`: directories
    resolved for the other rooms a caller parses at once (`names.room_path`)."""
    if isinstance(spec, RoomRef):
        return spec
    if isinstance(spec, str) and spec.startswith("claude-team://"):
        from ackdeck.core.service.claude_team_ref import ClaudeTeamRoomRef

        return ClaudeTeamRoomRef.parse(spec, env)
    if isinstance(spec, str) and spec.startswith("claude-tasks://"):
        from ackdeck.core.service.claude_tasks_ref import ClaudeTasksRoomRef

        return ClaudeTasksRoomRef.parse(spec, env)
    if is_url(spec):
        from ackdeck.core.service.redis_ref import RedisRoomRef

        return RedisRoomRef.parse(str(spec), env)
    return FileRoomRef(spec, follow_symlinks=follow_symlinks, dirs=dirs)


def open_room(
    spec: str | os.PathLike[str] | RoomRef,
    *,
    clock: Callable[[], float] = time.time,
    env: Mapping[str, str] | None = None,
    follow_symlinks: bool = False,
    door: str = "api",
    home: str | os.PathLike[str] | None = None,
) -> RoomBackend:
    """The room `spec` names, opened: a `redis://` / `rediss://` URL, else a file path (see
    `parse_room`). `door` names who reads through it in the read log (cli, mcp, hook,
    dashboard; "api" for library callers); `home`: where its owner's wakes go (None:
    $ACKDECK_HOME)."""
    ref = parse_room(spec, env=env, follow_symlinks=follow_symlinks)
    return ref.open(clock=clock, door=door, home=home)


def display_of(spec: str | os.PathLike[str]) -> str:
    """How to show a room spec without opening it: the path, or the URL without its password;
    a spec that names no room is shown as such (this is for error lines)."""
    try:
        return parse_room(spec, env={}).display
    except InvalidInput:
        return "(an invalid room URL)" if is_url(spec) else os.fspath(spec)[:200]


def room_spec(spec: str | os.PathLike[str], *, check: bool = False) -> str | Path:
    """A room spec as a door keeps it in its configuration, before parsing: a URL stays text
    (a Path would fold its `//`), anything else is a Path. With `check`, a URL that names no
    room is refused here (InvalidInput, one line, never a password)."""
    if is_url(spec):
        if check:
            parse_room(spec, env={})
        return str(spec)
    from pathlib import Path  # a door's configuration, not a turn's command (no pathlib there)

    return Path(spec)


def absolute_spec(spec: str | os.PathLike[str]) -> str:
    """The spec as a process started elsewhere reads it: a path made absolute (`~` expanded),
    a URL as given."""
    kept = room_spec(spec)
    return kept if isinstance(kept, str) else os.fspath(kept.expanduser().absolute())
