"""One room interface, two backends: a notification file (`core.rooms.file.room.Room`) or a Redis
stream (`core.rooms.redis.room.RedisRoom`). Every door opens rooms through
`core.service.refs.open_room`, so each works on both.

The interface is structural (`typing.Protocol`): it names what the service uses of a room; both
backends satisfy it as they are and return the same value types (core/rooms/results.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from ackdeck.core.rooms.journey import Journey
    from ackdeck.core.rooms.line_counts import LineCounts
    from ackdeck.core.rooms.policy import RoomPolicy
    from ackdeck.core.rooms.results import AckResult, ReadResult, RoomStatus, Shown

    Clock = Callable[[], float]
    # Returns None (every line was delivered) or how many lines, from the first, were.
    Deliver = Callable[[ReadResult], "int | None"]
    # Gets what will be recorded, last before it is; raising records nothing.
    Confirm = Callable[[ReadResult], None]


class RoomBackend(Protocol):
    """What every door may do with a room."""

    # Whether `ack(shown=...)` removes only the lines a client's transcript proves its model
    # was shown (issue 41). A backend without it ignores `shown`: its acks are estimates.
    PROVES_SHOWN: bool

    @property
    def path(self) -> Path | str: ...  # the file's path, or the URL without its password
    @property
    def path_text(self) -> str: ...  # str(path), without building a Path (a turn's read)

    def push(self, line: str | bytes) -> int | str: ...
    # A read (and an ack-all) takes a page: at most `max_bytes` of whole lines (default
    # results.PAGE_BYTES; a longer line whole); the result says how many more wait.
    def read(
        self,
        session: str,
        *,
        deliver: Deliver | None = None,
        reader: str | None = None,
        confirm: Confirm | None = None,
        max_bytes: int | None = None,
    ) -> ReadResult: ...
    def ack(
        self,
        session: str,
        *,
        all: bool = False,  # noqa: A002
        reader: str | None = None,
        deliver: Deliver | None = None,
        confirm: Confirm | None = None,
        max_bytes: int | None = None,
        shown: Shown | None = None,
    ) -> AckResult: ...
    # `counts`: a file room's line counts kept by a caller that asks again and again (the
    # dashboard's scanner; core/rooms/line_counts.py); a redis room ignores them.
    def status(self, counts: LineCounts | None = None) -> RoomStatus: ...
    def exists(self) -> bool: ...  # the file (or stream) is there; a missing room is empty
    def tail(self, count: int) -> list[bytes]: ...  # newest lines, oldest first; no receipt
    # When the line a read returned first was first seen (its start offset or entry ID, and
    # its length without the newline); None when nothing dates it. Only reads.
    def first_seen(self, start: int | str, length: int) -> float | None: ...
    # A line's journey (push, reads, ack) by its offset or entry ID, and the lines holding a
    # text (core/rooms/journey.py). Both only read.
    def trace(self, offset: int | str) -> Journey: ...
    def find(self, text: str | bytes) -> tuple[list[int | str], int]: ...
    def wait_acked(
        self,
        offset: int | str,
        timeout: float | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Journey | None: ...  # blocks until the line left the room (its journey) or timeout
    def policy(self) -> RoomPolicy: ...
    def set_policy(self, policy: RoomPolicy) -> None: ...
    def wait(
        self, session: str, timeout: float | None = None, stop: Callable[[], bool] | None = None
    ) -> bool: ...
    def close(self) -> None: ...
