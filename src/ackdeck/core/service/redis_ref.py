"""A redis room's reference (see `core.service.roomref`): imported only for a `redis://` URL,
so file-room users never load redis or the URL parser."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ackdeck.core.errors import AckdeckError
from ackdeck.core.rooms.redis.room import RedisRoom
from ackdeck.core.rooms.room_url import RedisAddress, parse_redis_url
from ackdeck.core.service.roomref import RoomRef

if TYPE_CHECKING:
    import os
    import threading
    from collections.abc import Callable, Mapping

    from ackdeck.core.rooms.room_backend import RoomBackend
    from ackdeck.core.service.redis_lines import RedisLines

    Clock = Callable[[], float]
    Home = str | os.PathLike[str] | None

# After an arrival the follower waits this long before its next blocking read, so a flood
# costs a few reads a second, not one per entry.
FOLLOW_STEP_S = 0.05
# An unreachable server is tried again this often.
RETRY_S = 1.0


class RedisRoomRef(RoomRef):
    FOLLOWS = True

    def __init__(self, address: RedisAddress, env: Mapping[str, str] | None = None) -> None:
        self.address = address
        self.display = address.display
        self.name = address.name
        self._env = env

    @classmethod
    def parse(cls, spec: str, env: Mapping[str, str] | None = None) -> RedisRoomRef:
        return cls(parse_redis_url(spec, env), env)

    def open(
        self, *, clock: Clock = time.time, door: str = "api", home: Home = None
    ) -> RoomBackend:
        return RedisRoom(self.address, clock=clock, env=self._env, door=door, home=home)

    @property
    def long_name(self) -> str:
        return f"{self.address.where}/{self.name}"

    def lines(self) -> RedisLines:
        from ackdeck.core.service.redis_lines import RedisLines

        return RedisLines(RedisRoom(self.address, env=self._env))

    def follow(self, arrived: Callable[[], None], stop: threading.Event) -> None:
        """Blocking XREADs (each at most about half the client timeout, so `stop` is seen
        within it), never polling. `arrived` is called after each arrival and once on each
        change between reachable and unreachable (a door shows or clears the room's error)."""
        room = RedisRoom(self.address, env=self._env)
        after: str | None = None
        reachable: bool | None = None
        try:
            while not stop.is_set():
                try:
                    if after is None:
                        after = room.newest_id()
                        reachable = True
                        arrived()  # reachable (again): look, in case entries came meanwhile
                    newest = room.arrivals(after, stop)
                except AckdeckError:
                    after = None
                    if reachable is not False:
                        reachable = False
                        arrived()
                    stop.wait(RETRY_S)
                    continue
                if newest != after:
                    after = newest
                    arrived()
                    stop.wait(FOLLOW_STEP_S)
        finally:
            room.close()
