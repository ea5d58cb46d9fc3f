"""`room push` to a file room, for the per-turn CLI: the producer's command, which pollers run
for every line they deliver.

The Deck's push (`Deck.push`: a room reference, the Room, the service's `Pushed` result) is
what every door runs, and the CLI too whenever it shows a result (`--json`, a terminal) or
waits for the ack. A producer's plain `ackdeck room push ROOM LINE` shows nothing and only
needs the append, so it runs the Room's own append (core/rooms/file/append.py) on the path
the room reference would name (core/rooms/room_spec.py), with the same checks in the same
order and the same one-line errors, without the modules a push never runs: pathlib, `re`,
json, enum, contextlib, functools, dataclasses and typing among them (tests/test_push_path.py
compares both paths' errors and keeps this one's imports).
"""

from __future__ import annotations

import time

from ackdeck.core.rooms.file.append import Appender, line_bytes
from ackdeck.core.rooms.file.sidecar_checks import room_target
from ackdeck.core.rooms.room_spec import file_room_path, is_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.file.room import Room


def names_a_file_room(spec: str) -> bool:
    """Does `spec` name a file room (a path), as `refs.parse_room` tells one from the rest?
    Every other kind is a URL (`redis://`, `claude-team://`, `claude-tasks://`)."""
    return not is_url(spec)


def push_to_file(
    spec: str,
    line: str | bytes,
    *,
    follow_symlinks: bool = False,
    clock: Callable[[], float] = time.time,
) -> int:
    """Append `line` to the file room `spec` names (a path, never a URL: the caller checked
    `names_a_file_room`); return the logical offset where it starts, as `Deck.push` would."""
    path = room_target(file_room_path(spec), follow_symlinks)  # the reference, then the Room
    data = line_bytes(line)
    built: list[Room] = []

    def room() -> Room:
        # A room's rare moments (its first push writes the ledger; a room truncated behind
        # ackdeck's back gets a new epoch) are the Room's, built only then.
        if not built:
            from ackdeck.core.rooms.file.room import Room

            built.append(Room(path, clock=clock, door="cli"))
        return built[0]

    # Closed below, always: no finalizer needed (core/rooms/file/push_handles.py).
    appender = Appender(path, clock=clock, slow=room, finalize=False)
    try:
        return appender.append(data)
    finally:
        appender.close()
        if built:
            built[0].close()
