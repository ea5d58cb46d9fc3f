"""Work-queue operations for every door: claim, done, extend, release (core/rooms/queue.py
says what they mean; core/rooms/file/queue.py does them on a file room).

Each opens the room the door named, calls the queue once and returns the queue's own result
(`Claim`, `TaskUpdate`), labelled as the door names the room; CLI --json and MCP structured
content are that value's JSON. A redis room is refused in one line: its consumer-group queue
is not built yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.queue import DEFAULT_LEASE, MAX_LEASE, OPS, Claim, TaskUpdate, TokenRefused

__all__ = ["DEFAULT_LEASE", "MAX_LEASE", "Claimed", "TokenRefused", "Updated", "claim", "update"]

if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.file.queue import FileQueue
    from ackdeck.core.rooms.room_backend import RoomBackend

Claimed = Claim
Updated = TaskUpdate


def file_queue(room: RoomBackend) -> FileQueue:
    from ackdeck.core.rooms.file.queue import FileQueue
    from ackdeck.core.rooms.file.room import Room

    if not isinstance(room, Room):
        raise InvalidInput(
            f"room {room.path} is not a file room: work queues are on file rooms for now "
            "(a redis consumer-group queue is not built yet)"
        )
    return FileQueue(room)


def claim(
    room: RoomBackend,
    label: str,
    session: str,
    lease: float | None = None,
    deliver: Callable[[Claim], None] | None = None,
) -> Claim:
    """`deliver`: the door's write of the claim, before it is committed (FileQueue.claim).
    A Claude Code task list commits its claim under Claude Code's lock first, so there the
    write follows the claim (one that fails leaves the lease to run out)."""
    if _claude_tasks(room):  # claude-tasks://LIST: Claude Code's task list as the queue
        got = room.claim(session, lease).replace(room=label)  # type: ignore[attr-defined]
        if deliver is not None and got.claimed:
            deliver(got)
        return got
    hand = None if deliver is None else (lambda got: deliver(got.replace(room=label)))
    return file_queue(room).claim(session, lease, hand).replace(room=label)


def _claude_tasks(room: object) -> bool:
    from ackdeck.core.rooms.claude_tasks.queue import ClaudeTasksQueue

    return isinstance(room, ClaudeTasksQueue)


def update(
    room: RoomBackend, label: str, token: str, op: str, lease: float | None = None
) -> TaskUpdate:
    if op not in OPS:
        raise InvalidInput(f"invalid operation {op!r}: one of {', '.join(OPS)}")
    if _claude_tasks(room):
        return room.update(token, op, lease).replace(room=label)  # type: ignore[attr-defined]
    return file_queue(room).update(token, op, lease).replace(room=label)
