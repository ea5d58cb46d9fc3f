"""A room named once: `core.service.refs.parse_room(spec)` reads a path or a `redis://` URL
where a door reads its configuration or arguments, and returns a `RoomRef` that knows how to
open the room, how its arrivals are noticed, how to page its lines for display and how to
show it. Callers never ask which backend it is.

How arrivals are noticed differs by nature, so each reference says it once:
- a file room is noticed through its directories (`watch_dirs`, `watches`): a watch on the
  file itself dies when an ack renames a new file over it, and one watch per directory serves
  every room in it;
- a redis room has no file to watch: `follow` blocks on the stream (XREAD BLOCK) and calls
  back on each arrival. `FOLLOWS` says which of the two a reference needs.

This module is on the hot path (every per-turn command names a room): the redis side lives in
`core.service.redis_ref` and is imported only for a URL.
"""

from __future__ import annotations

import os
import time

from ackdeck.core.base.names import as_pathlib_would
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.room_spec import file_room_path

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from ackdeck.core.rooms.room_backend import RoomBackend
    from ackdeck.core.service.lines import LineSource

    Clock = Callable[[], float]
    Home = str | os.PathLike[str] | None


class PagedRef:
    """Lines a door can show, paged (core/service/lines.py): a room's, a process's output."""

    display: str  # how to show it: a path, or a URL without its password
    name: str  # its short name

    def lines(self) -> LineSource:
        """Its lines, paged for display, none loaded yet (`first_page`, `catch_up`, ...).
        Display only: nothing is read or acked. Raises OSError (FileNotFoundError: not there
        yet) when a file cannot be opened; a redis room connects on the first load."""
        raise NotImplementedError


class RoomRef(PagedRef):
    """What every door may do with a room it was given, before and besides opening it."""

    # True: arrivals come by `follow` (a blocking read); False: by watching `watch_dirs`.
    FOLLOWS = False

    def open(
        self, *, clock: Clock = time.time, door: str = "api", home: Home = None
    ) -> RoomBackend:
        """The room, opened; `door` names who reads through it in the read log (cli, mcp,
        hook, dashboard); `home`: where its owner's wakes go (None: $ACKDECK_HOME)."""
        raise NotImplementedError

    def check_configured(self, given: str) -> None:
        """Refuse, when a door is configured with it (`given`: as the user wrote it), a room
        that can never work: a directory where a file room was meant."""

    def watch_dirs(self) -> list[Path]:
        """The directories whose changes may mean an arrival (none for a followed room)."""
        return []

    def watches(self, path: str) -> bool:
        """Whether a change to `path` (in one of `watch_dirs`) concerns this room."""
        return False

    def follow(self, arrived: Callable[[], None], stop: threading.Event) -> None:
        """Block until `stop` is set, calling `arrived` after each arrival, and once each time
        the room becomes reachable or unreachable. Only for `FOLLOWS` references."""
        raise NotImplementedError(f"{self.display} is watched through its directories")

    def identity(self) -> tuple[int, int, int | None] | None:
        """Which room this is beyond its counters: a file's (dev, inode, birth time), None
        when unknown or not a file (a redis room's ack counters tell a recreated one)."""
        return None

    @property
    def long_name(self) -> str:
        """Its name with what tells it from a namesake (a dashboard's label when two rooms
        share a name): a file's `directory/name`, a redis room's `host:port/NAME`."""
        return self.name

    def modified(self) -> float | None:
        """When it last changed, as its store tells (a file's mtime); None when unknown or
        missing. Raises OSError when a file cannot be looked at."""
        return None

    def shorten(self, message: str) -> str:
        """An error line about this room without what a table that names it already shows
        (a file's directory)."""
        return message

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.display == self.display

    def __hash__(self) -> int:
        return hash((type(self), self.display))

    def __str__(self) -> str:
        return self.display

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.display!r})"


class FileRoomRef(RoomRef):
    """A notification file, by its absolute path (the directory resolved as the kernel does;
    the file itself is never chased)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        follow_symlinks: bool = False,
        dirs: dict[str, str] | None = None,
    ) -> None:
        # The path as str(Path(...)) spells it, kept as a string: a turn's read, ack or
        # status never builds a Path (pathlib with `re`, `urllib.parse`, `ipaddress` was ~2x
        # a bare interpreter); `path` builds one for the callers that use it.
        self._path_s = as_pathlib_would(file_room_path(path, dirs))  # dirs: names.room_path
        self._path_made: Path | None = None
        self.display = self._path_s
        self.name = os.path.basename(self._path_s)
        self.follow_symlinks = follow_symlinks

    @property
    def path(self) -> Path:
        made = self._path_made
        if made is None:
            from pathlib import Path

            made = self._path_made = Path(self._path_s)
        return made

    def open(
        self, *, clock: Clock = time.time, door: str = "api", home: Home = None
    ) -> RoomBackend:
        from ackdeck.core.rooms.file.room import Room

        return Room(
            self._path_s, clock=clock, follow_symlinks=self.follow_symlinks, door=door, home=home
        )

    def lines(self) -> LineSource:
        from ackdeck.core.service.lines import LineIndex

        return LineIndex.open(self.path)

    def check_configured(self, given: str) -> None:
        if self.name in ("", ".", "..") or os.path.isdir(self._path_s):
            raise InvalidInput(f"room {given!r} is a directory, not a notification file")

    def watch_dirs(self) -> list[Path]:
        from ackdeck.core.rooms.file.sidecar import state_dirs

        return list(state_dirs(self.path))

    def watches(self, path: str) -> bool:
        from pathlib import Path  # a watcher's (dashboard, MCP server): not a turn's

        from ackdeck.core.rooms.file.sidecar import path_for

        p = Path(path)
        return p == self.path or path_for(self.path) in (p, *p.parents)

    def identity(self) -> tuple[int, int, int | None] | None:
        from ackdeck.core.base.fileid import birth_ns_path

        try:
            st = os.stat(self._path_s, follow_symlinks=False)
        except OSError:
            return None
        return (st.st_dev, st.st_ino, birth_ns_path(self._path_s))

    @property
    def long_name(self) -> str:
        return f"{os.path.basename(os.path.dirname(self._path_s))}/{self.name}"

    def modified(self) -> float | None:
        try:
            return os.stat(self._path_s).st_mtime
        except FileNotFoundError:
            return None

    def shorten(self, message: str) -> str:
        return message.replace(os.path.dirname(self._path_s) + os.sep, "")


def name_counts(rooms: Iterable[RoomRef]) -> dict[str, int]:
    """How many of `rooms` bear each short name, counted once for all of them: `label_of` is
    then O(1) a room (comparing every room with every room was 2.6 s of `room status` over
    3,000 rooms)."""
    counts: dict[str, int] = {}
    for ref in rooms:
        counts[ref.name] = counts.get(ref.name, 0) + 1
    return counts


def label_of(room: RoomRef, sharing: int, *, narrow: bool = False) -> str:
    """How every door names `room` among the rooms it shows, `sharing` of which (itself
    counted; `name_counts`) bear its short name: that name when it is the only one, else what
    tells it from its namesakes, never a password: its full path or URL, or where columns are
    narrow (the dashboard's table) its `long_name` (`directory/name`, `host:port/NAME`)."""
    if sharing == 1:
        return room.name
    return room.long_name if narrow else room.display
