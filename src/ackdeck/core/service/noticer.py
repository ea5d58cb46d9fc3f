"""The I/O around `core.service.notices`: read-only views of rooms and wakes, the per-session notice
state on disk, and an async watch loop that coalesces changes into notices.

The loop is live for both kinds of room: file rooms and wakes through watchfiles on their
directories, redis rooms through a blocking XREAD per room in a thread (no polling); both poke
one channel that the loop drains, so a push reaches a notice as fast on either backend.

Nothing here reads a room the way `room_list_new` does, acks, drains or reconciles: the views
come from the service (`Deck.room_view`, `Deck.pending_wakes`: read-only). The only file
written is the door's own state, `HOME/notices/SESSION/DOOR.json`.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.names import check_name
from ackdeck.core.base.statefile import read_state
from ackdeck.core.errors import AckdeckError, CorruptState, RecordError
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.notices import Notice, NoticeState, RoomView, WakeView, decide

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    # The hooks give a str home, and every name here is then a str (locations keeps the type
    # it is given): pathlib, with re, enum and collections, stays off their path.
    from collections.abc import Awaitable, Callable, Mapping, Sequence
    from pathlib import Path

    import anyio

    from ackdeck.core.base.atomic import P
    from ackdeck.core.service.deck import Spec
    from ackdeck.core.service.roomref import RoomRef

    Clock = Callable[[], float]

DEFAULT_WINDOW_S = 0.5
# Without any event the loop still looks this often (a task of its own, whatever the watched
# directories do): it catches a room directory created after the start and anything a watcher
# can miss (an unlocked writer into a replaced inode).
RESCAN_S = 10.0
RESCAN_ENV = "ACKDECK_NOTICE_RESCAN_S"  # overrides RESCAN_S (tests prove the live paths with it)
DOORS = ("channel", "nudge", "hooks")
# How often a notifier tries for its door's lock while another notifier of the door holds it.
CLAIM_STEP_S = 0.02


def state_path(home: P, session: str, door: str) -> P:
    if door not in DOORS:
        raise ValueError(f"unknown notice door {door!r}")
    return locations.notice_state(home, session, door)


def load_state(path: P) -> NoticeState:
    """The stored state; a missing file is an empty state. A malformed one is moved aside (kept)
    and treated as empty: noticing everything waiting again beats going silent."""
    try:
        raw = read_state(path)  # a FIFO in its place must not hang the door
        if raw is None:
            return NoticeState()
        return NoticeState.loads(raw)
    except (CorruptState, RecordError, ValueError):
        # Malformed, or a directory / FIFO in its place: renamed aside either way.
        aside = locations.corrupt_aside(path, time.time())
        os.replace(path, aside)
        print(f"ackdeck: malformed notice state moved to {aside}", file=sys.stderr)
        return NoticeState()


def store_state(path: P, state: NoticeState) -> None:
    _make_parent(path)
    # Not fsynced: losing it in a power cut repeats a notice at most, it never loses one.
    atomic.atomic_write(path, state.dumps().encode(), fsync=False)


def _make_parent(path: str | Path) -> None:
    """path.parent.mkdir(mode=0o700, parents=True, exist_ok=True), for a str as for a Path."""
    from ackdeck.core.base.home import make_dirs

    make_dirs(os.path.dirname(os.fspath(path)), 0o700)


def rescan_interval(env: Mapping[str, str]) -> float:
    from ackdeck.core.base.timeouts import seconds_from_env  # math: the watchers', not a hook's

    return seconds_from_env(env, RESCAN_ENV, RESCAN_S, 0.1, 86_400)


def _dir_ids(dirs: Sequence[Path]) -> dict[Path, tuple[int, int]]:
    """Which directories are watched, by identity: one made again is another inode."""
    out: dict[Path, tuple[int, int]] = {}
    for d in dirs:
        try:
            st = os.stat(d)
        except OSError:
            continue
        out[d] = (st.st_dev, st.st_ino)
    return out


class Noticer:
    """What waits for one session in its rooms and wakes, and what one door already said.

    `due()` decides without writing anything; `commit()` records the state after the door
    delivered the notices (commit what was delivered, not what was meant to be).
    """

    def __init__(
        self,
        home: str | Path,
        session: str,
        rooms: Sequence[Spec],
        door: str,
        *,
        wakes: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.home = home
        self._env = env  # read by `run` only: the hooks build a noticer on every turn
        self.session = check_name(session)
        self.deck = Deck(home, session, rooms, env=env)
        self.rooms: tuple[RoomRef, ...] = self.deck.rooms
        self.door = door
        self.watch_wakes = wakes
        # The door's files named as strings whichever home was given (a str from the hooks).
        where = os.fspath(home)
        self.path = state_path(where, session, door)
        self._lock_path = locations.notice_lock(where, session, door)
        self._broken: set[RoomRef] = set()
        # The state as last loaded or delivered; `_unsaved`: delivered but not on disk (a full,
        # read-only or broken HOME), so this process decides from memory until it can write.
        self._stored: NoticeState | None = None
        self._unsaved = False
        self._state_error: int | None = None
        self._watch_error: int | None = None

    def views(self) -> tuple[list[RoomView], list[WakeView]]:
        rooms: list[RoomView] = []
        for r in self.rooms:
            try:
                rooms.append(self.deck.room_view(r))
                self._broken.discard(r)
            except (AckdeckError, OSError) as exc:
                # A broken room must not silence the others; say so once, not every time.
                if r not in self._broken:
                    print(f"ackdeck: cannot watch room {r}: {exc}", file=sys.stderr)
                    self._broken.add(r)
        wakes = self.deck.pending_wakes() if self.watch_wakes else []
        return rooms, wakes

    def due(self) -> tuple[list[Notice], NoticeState]:
        """The notices due now and the state that records them; writes nothing."""
        notices, state, _ = self.due_with_views()
        return notices, state

    def due_with_views(self) -> tuple[list[Notice], NoticeState, list[RoomView]]:
        """`due`, and the rooms' views it was decided from (a hook's text reuses them)."""
        with self._held():
            return self._decide_with_views()

    def commit(self, state: NoticeState) -> None:
        """Record `state` once the door delivered its notices (commit what was delivered)."""
        with self._held():
            self._record(state)

    def can_record(self) -> bool:
        """Whether this door's state can be written now (it writes back the state as loaded):
        a hook that cannot record what it tells must not count on the record."""
        with self._held():
            try:
                store_state(self.path, self._load())
            except OSError as exc:
                self._state_failed(exc)
                return False
        return True

    def _decide(self) -> tuple[list[Notice], NoticeState]:
        # Under the door's lock when it could be taken.
        notices, state, _ = self._decide_with_views()
        return notices, state

    def _decide_with_views(self) -> tuple[list[Notice], NoticeState, list[RoomView]]:
        state = self._load()
        rooms, wakes = self.views()
        return (*decide(state, rooms, wakes, self.session), rooms)

    def _load(self) -> NoticeState:
        if self._unsaved and self._stored is not None:
            return self._stored  # the disk is behind what this door already said
        try:
            state = load_state(self.path)
        except OSError as exc:
            # An unreadable state must not silence the door: decide from what this process
            # remembers (nothing at first), which may repeat a notice but never skips one.
            self._state_failed(exc)
            return self._stored if self._stored is not None else NoticeState()
        self._stored = state
        return state

    def _record(self, state: NoticeState) -> None:
        if state == self._stored and not self._unsaved:
            return  # nothing changed: no write per event
        self._stored = state
        try:
            store_state(self.path, state)
        except OSError as exc:
            # A full or read-only HOME must not end the notices: this process remembers what
            # it said (no repeats while it runs) and writes it once it can; a restart before
            # then may repeat these notices, never go silent.
            self._unsaved = True
            self._state_failed(exc)
            return
        self._unsaved = False
        self._state_error = None

    def _lock_fd(self) -> int | None:
        """The door's lock file, opened (not locked); None when it cannot be made (the door
        then goes on unlocked: a second notifier of the door may repeat, none goes silent)."""
        try:
            _make_parent(self.path)
            return os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            self._state_failed(exc)
            return None

    def _held(self) -> _Held:
        return _Held(self._lock_fd())

    async def _claim(self) -> int | None:
        """The door's lock, taken without blocking the event loop or a cancellation: it is
        held while notices are decided, sent and recorded, which takes milliseconds."""
        import anyio

        fd = self._lock_fd()
        if fd is None:
            return None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    await anyio.sleep(CLAIM_STEP_S)
        except BaseException:
            os.close(fd)
            raise

    def watch_dirs(self, *, make: bool = True) -> list[Path]:
        """The directories to watch: the rooms' that exist, and the session's wakes directory
        (made here unless `make` is False; then only if it exists)."""
        dirs = {d for r in self.rooms for d in r.watch_dirs() if d.is_dir()}
        if self.watch_wakes:
            d = self.deck.wakes_dir()
            if not make:
                if d.is_dir():
                    dirs.add(d)
                return sorted(dirs)
            try:
                d.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                # A read-only HOME holds no new wakes either; the rooms are still watched.
                print(f"ackdeck: cannot watch wakes in {d}: {exc}", file=sys.stderr)
            else:
                dirs.add(d)
        return sorted(dirs)

    def _relevant(self, path: str) -> bool:
        from pathlib import Path  # the watch loop's (channel, nudge): never a hook's

        p = Path(path)
        if self.watch_wakes and p.name.endswith(".json") and p.parent.name == self.session:
            return True
        return any(r.watches(path) for r in self.rooms)

    async def run(
        self,
        send: Callable[[list[Notice]], Awaitable[bool]],
        *,
        window: float = DEFAULT_WINDOW_S,
        stop_event: anyio.Event | None = None,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Watch the room directories, the wakes directory and every redis room; after each
        burst of changes (grouped for up to `window` seconds, and never two sends closer than
        `window`) send what is due. `send` returns False when it could not deliver: nothing
        is recorded; `ready` as for `check`. Ends when `stop_event` is set."""
        import anyio

        rescan = rescan_interval(os.environ if self._env is None else self._env)
        last_sent = -1e9
        await self.check(send, ready)
        # Capacity 1: one poke waiting is as good as many (the check looks at everything).
        poke_tx, pokes = anyio.create_memory_object_stream[None](1)

        def poke() -> None:
            try:
                poke_tx.send_nowait(None)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # a poke already waits, or the loop is ending

        async with anyio.create_task_group() as tg:

            async def until_stopped() -> None:
                if stop_event is None:
                    await anyio.sleep_forever()
                else:
                    await stop_event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(until_stopped)
            tg.start_soon(self._watch_files, poke, window, rescan)
            for room in self.rooms:
                if room.FOLLOWS:
                    tg.start_soon(self._follow, room, poke)
            async for _ in pokes:
                wait = last_sent + window - time.monotonic()
                if wait > 0:
                    await anyio.sleep(wait)
                if await self.check(send, ready):
                    last_sent = time.monotonic()

    async def _watch_files(self, poke: Callable[[], None], window: float, rescan: float) -> None:
        """Poke on every burst of relevant file changes, and every `rescan` seconds anyway.

        The rescan is a task of its own: the watcher's timeout never fires while any watched
        directory changes (a build log beside a room), which silenced every room whose
        directory appeared later. When the directories to watch change (one appeared, or was
        removed and made again: the watch holds the old inode), the watch starts over on them."""
        import anyio
        import watchfiles

        window_ms = max(10, int(window * 1000))
        while True:
            dirs = self.watch_dirs()
            watched = _dir_ids(dirs)
            restart = anyio.Event()

            async def rescan_loop(
                watched: dict[Path, tuple[int, int]], restart: anyio.Event
            ) -> None:
                while True:
                    await anyio.sleep(rescan)
                    poke()
                    now = await anyio.to_thread.run_sync(
                        lambda: _dir_ids(self.watch_dirs(make=False))
                    )
                    if now != watched:
                        restart.set()
                        return

            async with anyio.create_task_group() as tg:
                tg.start_soon(rescan_loop, watched, restart)
                try:
                    if dirs:
                        async for _changes in watchfiles.awatch(
                            *dirs,
                            watch_filter=lambda _c, p: self._relevant(p),
                            debounce=window_ms,
                            step=min(50, window_ms),
                            stop_event=restart,
                            recursive=False,
                        ):
                            poke()
                    else:  # only redis rooms, no wakes, no room directory yet: the rescan alone
                        await restart.wait()
                except OSError as exc:
                    # A directory removed between choosing and watching it (a per-run directory
                    # wiped again), or no inotify watch left: the rescan goes on looking, and
                    # the watch is tried again after it. This used to end the notices for good.
                    self._watch_failed(exc)
                    await anyio.sleep(rescan)
                tg.cancel_scope.cancel()
            poke()  # the directories changed: look now, then watch the new ones

    async def _follow(self, room: RoomRef, poke: Callable[[], None]) -> None:
        """Poke whenever a followed room (redis) gets new entries: its own blocking follow
        loop, in a thread. An unreachable server is tried again by the loop; `views` reports
        it once."""
        import threading

        import anyio

        stop = threading.Event()

        def follow() -> None:
            try:
                room.follow(lambda: anyio.from_thread.run_sync(poke), stop)
            except anyio.RunFinishedError:
                pass  # the loop ended while this thread was blocked in a read

        try:
            # Abandoned on cancel: the thread sees `stop` within one blocking read and ends.
            await anyio.to_thread.run_sync(follow, abandon_on_cancel=True)
        finally:
            stop.set()

    async def check(
        self,
        send: Callable[[list[Notice]], Awaitable[bool]],
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> bool:
        """Send what is due now; True if notices went out. With `ready` (the nudge: until the
        pane is idle), it is awaited first and the notices are decided again afterwards, so
        lines read and wakes drained meanwhile are not announced. Deciding, sending and
        recording hold the door's lock: a second notifier of this session and door (two
        servers of one session) then finds them noticed instead of repeating them."""
        import anyio  # here: the hooks import this module on every turn, without an event loop

        try:
            if ready is not None and (await anyio.to_thread.run_sync(self.due))[0]:
                await ready()
            fd = await self._claim()
            try:
                notices, state = await anyio.to_thread.run_sync(self._decide)
                if notices and not await send(notices):
                    return False
                # A stop (SIGTERM, a closed client) right after a send must not skip the
                # record: the restarted door would then repeat the notice it already gave.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self._record, state)
            finally:
                if fd is not None:
                    os.close(fd)
        except OSError as exc:
            self._state_failed(exc)  # decided again at the next event
            return False
        return bool(notices)

    def _watch_failed(self, exc: OSError) -> None:
        # Once per kind of failure: a directory that keeps vanishing is not news each time.
        if self._watch_error != exc.errno:
            self._watch_error = exc.errno
            print(f"ackdeck: watching again after: {exc}", file=sys.stderr)

    def _state_failed(self, exc: OSError) -> None:
        # Once per kind of failure, not once per event.
        if self._state_error != exc.errno:
            self._state_error = exc.errno
            where = atomic.parent(self.path)
            print(f"ackdeck: cannot keep notice state in {where}: {exc}", file=sys.stderr)


class _Held:
    """`with noticer._held()`: the door's lock file `fd` (None: none) locked for the block,
    then closed. A class rather than contextlib.contextmanager: the prompt and session-start
    hooks take it on every turn, and contextlib is a module a turn need not load."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    def __enter__(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(self._fd)
                raise

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the flock
