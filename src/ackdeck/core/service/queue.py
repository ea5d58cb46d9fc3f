"""Work-queue operations for every door: claim, done, extend, release (core/rooms/queue.py
says what they mean; core/rooms/file/queue.py does them on a file room).

Each opens the room the door named, calls the queue once and returns the queue's own result
(`Claim`, `TaskUpdate`), labelled as the door names the room; CLI --json and MCP structured
content are that value's JSON. A file room's queue is core/rooms/file/queue.py, a redis
room's core/rooms/redis/queue.py (a consumer group): the same rules, the same results.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.queue import (
    DEFAULT_LEASE,
    MAX_LEASE,
    OPS,
    Claim,
    QueueView,
    TaskUpdate,
    TokenRefused,
)

__all__ = [
    "DEFAULT_LEASE",
    "MAX_LEASE",
    "Claimed",
    "QueueView",
    "TokenRefused",
    "Updated",
    "claim",
    "dead_letter",
    "done_next",
    "update",
    "view",
]

if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.claude_tasks.queue import ClaudeTasksQueue
    from ackdeck.core.rooms.file.queue import FileQueue
    from ackdeck.core.rooms.redis.queue import RedisQueue
    from ackdeck.core.rooms.room_backend import RoomBackend

Claimed = Claim
Updated = TaskUpdate


def file_queue(room: RoomBackend) -> FileQueue | RedisQueue | ClaudeTasksQueue:
    """The queue of `room`, whatever its kind (the name predates redis queues; a Claude Code
    task list is its own queue)."""
    from ackdeck.core.rooms.file.room import Room

    if _claude_tasks(room):
        return room  # type: ignore[return-value]
    if isinstance(room, Room):
        from ackdeck.core.rooms.file.queue import FileQueue

        return FileQueue(room)
    if isinstance(room.path, str):  # a redis room: its module is loaded already
        from ackdeck.core.rooms.redis.queue import RedisQueue
        from ackdeck.core.rooms.redis.room import RedisRoom

        if isinstance(room, RedisRoom):
            return RedisQueue(room)
    raise InvalidInput(f"room {room.path} cannot be a work queue (a file or a redis room can)")


def claim(
    room: RoomBackend,
    label: str,
    session: str,
    lease: float | None = None,
    deliver: Callable[[Claim], None] | None = None,
) -> Claim:
    """`deliver`: the door's write of the claim. A file queue calls it before the claim is
    committed (FileQueue.claim: a claim nobody received is rolled back). A redis queue and a
    Claude Code task list commit their claim first (one script; Claude Code's lock), so there
    the write follows, and a claim that could not be handed over is released at once: the line
    is claimable again, its delivery counted, nothing lost."""
    queue: Any
    if _claude_tasks(room):  # claude-tasks://LIST: Claude Code's task list as the queue
        queue = room
    else:
        queue = file_queue(room)
        from ackdeck.core.rooms.file.queue import FileQueue

        if isinstance(queue, FileQueue):
            hand = None if deliver is None else (lambda got: deliver(got.replace(room=label)))
            return queue.claim(session, lease, hand).replace(room=label)
    got = queue.claim(session, lease).replace(room=label)
    if deliver is not None and got.claimed:
        try:
            deliver(got)
        except BaseException:
            assert got.token is not None
            # The door's own failure is what the claimant is told; a release that fails too
            # leaves the lease to run out, which hands the line out again all the same.
            with contextlib.suppress(Exception):
                queue.update(got.token, "release")
            raise
    return got


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


def view(room: RoomBackend, limit: int = 100) -> QueueView:
    """What the queue room holds now (the dashboard's queue screen, metrics)."""
    if not room.policy().queue:
        raise InvalidInput(
            f"room {room.path} is not a queue; make it one with "
            f"`ackdeck room policy {room.path} --queue on`"
        )
    return file_queue(room).view(limit)


def dead_letter(room: RoomBackend, label: str, token: str) -> TaskUpdate:
    """The owner moves the line claimed with `token` to the dead-letter room."""
    return file_queue(room).dead_letter(token).replace(room=label)


def done_next(
    room: RoomBackend, label: str, token: str, session: str, lease: float | None = None
) -> tuple[TaskUpdate, Claim]:
    """Done with `token`, then claim the next task for `session` (one round trip on redis)."""
    done, got = file_queue(room).done_next(token, session, lease)
    assert got is not None
    return done.replace(room=label), got.replace(room=label)
