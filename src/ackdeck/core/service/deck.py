"""`Deck`: the one service object every door holds.

A door builds it once from what it was configured with (home, session, room specs) and then
calls only it: the deck parses the rooms once (`core.service.roomref`), validates the session
once, resolves the room a caller names (the default, a configured path or URL, an unambiguous
basename), opens rooms for each operation and closes them after, and owns the read-only views
the doors show (a session's unread lines, a room's notice view, the session's deliverable
wakes). Reconciling dead supervisors happens only in the operations that are that explicit
step (`drain`, `reconcile_lost`); views never write.

Operations return the service's results (`core.service.rooms`, `core.service.wakes`), which
carry every number a door shows and encode themselves for CLI `--json` and MCP alike.

Light on purpose: the per-turn commands build a deck (the hot path in pyproject.toml).
"""

from __future__ import annotations

import time

from ackdeck.core.base.names import check_name
from ackdeck.core.errors import AckdeckError, InvalidInput
from ackdeck.core.service import rooms as room_ops
from ackdeck.core.service.refs import parse_room
from ackdeck.core.service.roomref import RoomRef, label_of, name_counts

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path

    from ackdeck.core.rooms.policy import RoomPolicy
    from ackdeck.core.rooms.room_backend import RoomBackend
    from ackdeck.core.service import views
    from ackdeck.core.service.alerts import Overdue
    from ackdeck.core.service.handover import Handover
    from ackdeck.core.service.queue import Claimed, QueueView, Updated
    from ackdeck.core.service.trace import Trace
    from ackdeck.core.service.wakes import DeliverWakes, Drained

    Clock = Callable[[], float]
    Spec = str | os.PathLike[str] | RoomRef


class Deck:
    """The service for one door: a home, a session (may be None for commands that need none)
    and the rooms the door was given, the first being its default."""

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        session: str | None = None,
        rooms: Iterable[Spec] = (),
        *,
        env: Mapping[str, str] | None = None,
        clock: Clock = time.time,
        follow_symlinks: bool = False,
        door: str = "api",
    ) -> None:
        self._home_arg = home
        self.door = door  # how the read log names this door (cli, mcp, hook, dashboard)
        self._home: Path | None = None
        self._home_s: str | None = None
        self.session = None if session is None else check_name(session)
        self._env = env
        self._clock = clock
        self._follow_symlinks = follow_symlinks
        # A dict keeps the order and drops repeats in linear time (a list's `in` made 3,000
        # rooms cost seconds).
        refs: dict[RoomRef, None] = {}
        dirs: dict[str, str] = {}  # each directory named is resolved once for all its rooms
        for spec in rooms:
            refs.setdefault(self.parse(spec, dirs))
        self.rooms: tuple[RoomRef, ...] = tuple(refs)
        self._names = name_counts(self.rooms)  # every label is then O(1)
        self._room_set = frozenset(self.rooms)

    # ----- naming ---------------------------------------------------------------------------
    @property
    def home(self) -> Path:
        """The state directory, resolved on first use ($ACKDECK_HOME, else ~/.ackdeck)."""
        if self._home is None:
            from pathlib import Path

            self._home = Path(self.home_text)
        return self._home

    @property
    def home_text(self) -> str:
        """`home` as a string (resolve_home's, made and checked the same way), for what a turn
        records without building a Path (the presence log: pathlib is off a turn's read)."""
        if self._home_s is None:
            from ackdeck.core.base.home import made_home

            self._home_s = made_home(self._home_arg)
        return self._home_s

    def parse(self, spec: Spec, dirs: dict[str, str] | None = None) -> RoomRef:
        """`spec` as this door's room (`refs.parse_room`; `dirs`: see `names.room_path`)."""
        return parse_room(spec, env=self._env, follow_symlinks=self._follow_symlinks, dirs=dirs)

    def label(self, ref: RoomRef) -> str:
        """How this door names `ref` among its rooms (`roomref.label_of`, in constant time); a
        room it was not given is counted among them."""
        return label_of(ref, self._names.get(ref.name, 0) + (ref not in self._room_set))

    def room(self, requested: str | None = None) -> RoomRef:
        """The configured room `requested` names: its path (as configured or absolute), its
        URL (with or without the password) or its basename; None or "" is the default (first)
        room. Anything else is refused, so an agent can never point a door at another file."""
        if not self.rooms:
            raise InvalidInput(
                "configure at least one room (--room PATH); the first is the default"
            )
        if requested is None or requested == "":
            return self.rooms[0]
        if "\0" in requested:
            raise InvalidInput("room name contains a NUL byte")
        if "/" in requested:
            wanted = parse_room(requested, env={})  # addresses compare without their password
            if wanted in self.rooms:
                return self.rooms[self.rooms.index(wanted)]
        else:
            by_name = [r for r in self.rooms if r.name == requested]
            if len(by_name) == 1:
                return by_name[0]
            if len(by_name) > 1:
                raise InvalidInput(
                    f"room {requested!r} is ambiguous; use one of the full paths: "
                    + ", ".join(r.display for r in by_name)
                )
        raise InvalidInput(
            f"room {requested[:200]!r} is not configured for this server; use one of: "
            + ", ".join(self.label(r) for r in self.rooms)
        )

    def open(self, ref: RoomRef) -> RoomBackend:
        """`ref` opened for this door (the caller closes it)."""
        return ref.open(clock=self._clock, door=self.door, home=self._home_arg)

    def _session(self) -> str:
        if self.session is None:
            raise InvalidInput("no session: pass --session NAME or set ACKDECK_SESSION")
        return self.session

    # ----- room operations --------------------------------------------------------------------
    def _opened(self, ref: RoomRef) -> _Opened:
        """The room, open for one operation (its connections released after)."""
        return _Opened(self.open(ref))

    def push(self, ref: RoomRef, line: str | bytes) -> room_ops.Pushed:
        with self._opened(ref) as room:
            return room_ops.push(room, self.label(ref), line)

    def wait_ack(
        self,
        ref: RoomRef,
        pushed: room_ops.Pushed,
        *,
        session: str | None = None,
        timeout: float | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> room_ops.Pushed:
        """Block until the line `pushed` put in `ref` was acked (by `session`, if given),
        moved to the dead-letter room, or `timeout` passed (room push --wait-ack)."""
        with self._opened(ref) as room:
            return room_ops.wait_ack(room, pushed, session=session, timeout=timeout, stop=stop)

    def read(
        self,
        ref: RoomRef,
        *,
        reader: str | None = None,
        deliver: room_ops.Deliver | None = None,
        confirm: room_ops.Confirm | None = None,
        read_id: str | None = None,
        max_bytes: int | None = None,
    ) -> room_ops.Lines:
        """A page of complete lines (at most `max_bytes`; default
        core.rooms.results.PAGE_BYTES), how many more wait, and a receipt of the page; with
        `deliver`, recorded only once delivered (and `confirm`ed: see
        core.service.rooms.read)."""
        session = self._session()
        with self._opened(ref) as room:
            got = room_ops.read(
                room,
                self.label(ref),
                session,
                reader=reader,
                deliver=deliver,
                confirm=confirm,
                read_id=read_id,
                max_bytes=max_bytes,
            )
            if got.lines and self._records_presence():
                self._note_read(room, ref, session, got)
            return got

    def last_reader(self, ref: RoomRef) -> str | None:
        """The reader the session's unacked read of `ref` went to (None: none known; only
        file rooms bind a read to a reader this way). A peek: the ack checks it again."""
        session = self._session()
        with self._opened(ref) as room:
            peek = getattr(room, "last_reader", None)
            try:
                return None if peek is None else peek(session)
            except AckdeckError:
                return None  # a damaged receipt: the ack itself reports it

    def ack(
        self,
        ref: RoomRef,
        *,
        all: bool = False,  # noqa: A002 - the documented argument
        reader: str | None = None,
        deliver: room_ops.Deliver | None = None,
        confirm: room_ops.Confirm | None = None,
        max_bytes: int | None = None,
        shown: room_ops.Shown | None = None,
        estimate: str | None = None,
    ) -> room_ops.Acked:
        """Remove what the session read; with `all`, the first page (as `read` takes it).
        `shown` / `estimate`: what the client's transcript proves (room_ops.ack)."""
        session = self._session()
        with self._opened(ref) as room:
            res = room_ops.ack(
                room,
                self.label(ref),
                session,
                all=all,
                reader=reader,
                deliver=deliver,
                confirm=confirm,
                max_bytes=max_bytes,
                shown=shown,
                estimate=estimate,
            )
        if res.acked and self._records_presence():
            # Whether the client's record proved the lines shown (issue 41): the Agents panel
            # and the timeline mark an estimate.
            self._note(
                session, "ack", room=ref.display, lines=res.acked, mode=res.mode, proof=res.proof
            )
        return res

    # ----- presence (core/presence): what the session's reads and acks say about it ------------
    def _records_presence(self) -> bool:
        """The owner's reads in the dashboard are a person's, not an agent's presence."""
        return self.door != "dashboard"

    def _note_read(
        self, room: RoomBackend, ref: RoomRef, session: str, got: room_ops.Lines
    ) -> None:
        """Record the read with how long its first line had waited (the sample the session's
        stall threshold is learned from: core/presence/model.py)."""
        at = self._clock()
        try:
            first = room.first_seen(got.start, len(got.lines[0]))
        except (AckdeckError, OSError):
            first = None
        waited = None if first is None else round(max(0.0, at - first), 3)
        self._note(session, "read", at=at, room=ref.display, lines=len(got.lines), waited=waited)

    def _note(self, session: str, kind: str, **fields: object) -> None:
        """Record a presence event; a home that cannot be made must not fail what was done."""
        from ackdeck.core.service import presence

        try:
            presence.record(self.home_text, session, kind, **fields)
        except AckdeckError:
            pass  # the home is unusable: the operation itself already said so or did not need it

    def status(
        self, refs: Sequence[RoomRef] | None = None, *, overdue: float | None = None
    ) -> room_ops.Status:
        """Counters of `refs` (default: every room of the door), with the session's own counts;
        the door's default room is flagged `default`. `overdue` (seconds) overrides each
        room's own threshold (core/rooms/policy.py)."""
        targets = self.rooms if refs is None else refs
        opened = [(self.open(r), self.label(r)) for r in targets]
        try:
            default = self.label(self.rooms[0]) if self.rooms else None
            return room_ops.status(opened, self.session, default=default, overdue=overdue)
        finally:
            for room, _label in opened:
                room.close()

    def status_each(self) -> Iterator[tuple[str, room_ops.RoomState | None]]:
        """Each room's label and counters, as `status` gives them, one room at a time; None
        for a room that cannot be read (an unreachable server, a refused path), so that one
        room never hides the others (a metrics scrape)."""
        from ackdeck.core.base.digest import use_openssl
        from ackdeck.core.rooms.file.ledger import HEAD_BYTES

        use_openssl(len(self.rooms) * HEAD_BYTES)  # what `status` decides over all its rooms
        default = self.label(self.rooms[0]) if self.rooms else None
        for ref in self.rooms:
            label = self.label(ref)
            try:
                room = self.open(ref)
                try:
                    row = room_ops.state(room, label, self.session, label == default)
                finally:
                    room.close()
            except (AckdeckError, OSError):
                row = None
            yield label, row

    def wait(
        self, ref: RoomRef, timeout: float | None = None, stop: Callable[[], bool] | None = None
    ) -> bool:
        """True once the session has unread lines in `ref`, False when `timeout` passed (or
        `stop` answered True) first."""
        session = self._session()
        with self._opened(ref) as room:
            return room.wait(session, timeout, stop)

    def absent(self, ref: RoomRef) -> str | None:
        """The words every door shows for a room that does not exist yet, else None."""
        room = ref.open(clock=self._clock)
        try:
            return room_ops.absent(room, self.label(ref))
        finally:
            room.close()

    def trace(
        self, ref: RoomRef, *, offset: int | str | None = None, match: str | bytes | None = None
    ) -> Trace:
        """A line's journey in `ref` (core/service/trace.py), by offset or text."""
        from ackdeck.core.service.trace import trace

        with self._opened(ref) as room:
            return trace(room, self.label(ref), offset=offset, match=match, clock=self._clock)

    def claim(
        self,
        ref: RoomRef,
        *,
        lease: float | None = None,
        deliver: Callable[[Claimed], None] | None = None,
    ) -> Claimed:
        """Claim the oldest claimable line of the queue room `ref` (core/service/queue.py);
        `deliver` writes it to the claimant before the claim is committed."""
        from ackdeck.core.service import claims, queue

        with self._opened(ref) as room:
            got = queue.claim(room, self.label(ref), self._session(), lease, deliver)
        # What the session's Stop hook reminds it of until done or release (service/claims.py).
        claims.remember(self.home, self._session(), self.label(ref), got, self._clock())
        return got

    def task(self, ref: RoomRef, token: str, op: str, *, lease: float | None = None) -> Updated:
        """done, extend or release the claim `token` of the queue room `ref`."""
        from ackdeck.core.service import claims, queue

        with self._opened(ref) as room:
            try:
                got = queue.update(room, self.label(ref), token, op, lease)
            except queue.TokenRefused:
                # Not this session's lease any more (superseded, finished, gone): no reminder.
                claims.forget(self.home, self.session, token)
                raise
        if got.mode == "extended":
            claims.moved(self.home, self.session, token, got.lease_until)
        else:
            claims.forget(self.home, self.session, token)
        return got

    def done_next(self, ref: RoomRef, token: str, *, lease: float | None = None) -> Updated:
        """Done with `token`, then claim the next line of `ref` for this session: the done's
        result, with the claim in `claimed_next`."""
        from ackdeck.core.service import claims, queue

        session = self._session()
        with self._opened(ref) as room:
            try:
                done, got = queue.done_next(room, self.label(ref), token, session, lease)
            except queue.TokenRefused:
                claims.forget(self.home, session, token)
                raise
        claims.forget(self.home, session, token)
        claims.remember(self.home, session, self.label(ref), got, self._clock())
        return done.replace(claimed_next=got)

    def dead_letter(self, ref: RoomRef, token: str) -> Updated:
        """The owner moves the line claimed with `token` to the queue's dead-letter room."""
        from ackdeck.core.service import claims, queue

        with self._opened(ref) as room:
            got = queue.dead_letter(room, self.label(ref), token)
        claims.forget(self.home, None, token)  # its holder's reminder: nothing to finish now
        return got

    def queue_view(self, ref: RoomRef, *, limit: int = 100) -> QueueView:
        """What the queue room `ref` holds now: counts and the oldest claimed lines."""
        from ackdeck.core.service import queue

        with self._opened(ref) as room:
            return queue.view(room, limit)

    def handover(
        self,
        source: str,
        target: str,
        *,
        from_room: str | None = None,
        to_room: str | None = None,
    ) -> Handover:
        """Give `target` the lines `source` has not acked, exactly once
        (core/service/handover.py)."""
        from ackdeck.core.service.handover import hand_over

        return hand_over(
            self.home,
            source,
            target,
            from_room=from_room,
            to_room=to_room,
            clock=self._clock,
            door=self.door,
        )

    def policy(self, ref: RoomRef, update: Mapping[str, object] | None = None) -> RoomPolicy:
        """The room's policy (core/rooms/policy.py), changed by `update` first if given."""
        from ackdeck.core.errors import CorruptState
        from ackdeck.core.rooms.policy import RoomPolicy

        with self._opened(ref) as room:
            if not update:
                return room.policy()  # a refused one is the error, in one line
            try:
                pol = room.policy()
            except CorruptState:
                pol = RoomPolicy()  # setting it again is how a refused policy is mended
            pol = pol.replace(**update)
            room.set_policy(pol)
            return pol

    def overdue(self, *, overdue: float | None = None) -> Overdue:
        """The explicit alert step over the door's rooms (core/service/alerts.py)."""
        from ackdeck.core.service import alerts

        opened = [(self.open(r), self.label(r)) for r in self.rooms]
        try:
            return alerts.check(opened, self.home, overdue=overdue, clock=self._clock)
        finally:
            for room, _label in opened:
                room.close()

    # ----- read-only views ----------------------------------------------------------------------
    def unread(self, ref: RoomRef) -> views.Unread:
        """The session's unread lines in `ref`, read and acked by nobody (the hooks' peek)."""
        from ackdeck.core.service import views  # the hooks' and notices': not a read's

        return views.peek_unread(ref, self._session())

    def room_view(self, ref: RoomRef) -> views.RoomView:
        """What `ref` holds for the session right now (a notice's input)."""
        from ackdeck.core.service import views

        return views.view_room(ref, self._session(), self.label(ref))

    def pending_wakes(self) -> list[views.WakeView]:
        """The session's wake records reduced to what is still deliverable (what the drain's
        gate would keep), without reconciling or merging anything."""
        from ackdeck.core.service import views

        return views.view_wakes(self.home, self._session())

    # ----- processes -----------------------------------------------------------------------------
    def run_dir(self, name: str) -> Path:
        """The directory of `name`'s latest run (what a door watches while it waits)."""
        from ackdeck.core.monitors.procs import get_run

        return get_run(self.home, name).run_dir

    def read_lease(self, run_dir: Path) -> AbstractContextManager[object]:
        """Held while an unfiltered read of `run_dir` waits: a drain settles (bounded) before
        it delivers what that read may still show the session."""
        from ackdeck.core.monitors import shown

        return shown.lease(run_dir, self._session())

    # ----- wakes --------------------------------------------------------------------------------
    def wakes_dir(self) -> Path:
        """Where the session's wake records live (what a door watches for new wakes)."""
        from ackdeck.core.monitors.wakes import session_dir

        return session_dir(self.home, self._session())

    def reconcile_lost(self) -> None:
        """The explicit step: report dead supervisors as monitor-lost wakes."""
        from ackdeck.core.monitors.reconcile import reconcile_lost

        reconcile_lost(self.home)

    def drain(self, *, settle_timeout: float = 2.0, deliver: DeliverWakes | None = None) -> Drained:
        """Deliver what the session was not shown, then ack exactly that (reconciling first).
        With the home as a string: the Stop hook drains through here (no pathlib on a turn)."""
        from ackdeck.core.service import wakes

        return wakes.drain(
            self.home_text, self._session(), settle_timeout=settle_timeout, deliver=deliver
        )


class _Opened:
    """`with deck._opened(ref) as room`: the room, closed after the operation. A class, not
    contextlib.contextmanager: contextlib is a module a turn need not load
    (tests/test_layering.py)."""

    __slots__ = ("room",)

    def __init__(self, room: RoomBackend) -> None:
        self.room = room

    def __enter__(self) -> RoomBackend:
        return self.room

    def __exit__(self, *exc: object) -> None:
        self.room.close()
