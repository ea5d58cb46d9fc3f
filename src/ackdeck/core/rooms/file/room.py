"""Rooms: notification files with a consumed-only ack.

Protocol (docs/concepts/exact-acks.md):
- push appends under the *shared* sidecar lock; ack rewrites under the *exclusive* one;
- read returns complete lines and records a receipt (the exact bytes) per session;
- ack removes only the receipt's bytes still at the head, then sweeps the old inode for bytes
  that unlocked producers (`printf >> file`) appended after the read. The old inode stays
  hard-linked in the sidecar for a grace period, so late writers and an ack killed between
  its rename and its sweep lose nothing either.

The room's concepts each live in their own module; `Room` ties them together:
- core/rooms/file/sidecar.py: the sidecar layout, its safety checks, the audit log, leftovers;
- core/rooms/file/receipts.py: what each session read (schema, encoding, store, verification);
- core/rooms/file/ack.py: the ack transaction, step by step (its crash-safety order);
- core/rooms/file/append.py: push's append (what the CLI's push runs without this module),
  over push_handles.py: the descriptors it keeps open and its one write;
- core/rooms/file/ledger.py: the persisted state and the pure decisions on it;
- core/rooms/file/prev_inodes.py: replaced inodes, where late unlocked writers end up.
- core/rooms/file/queries.py: trace, find and the waits (no turn runs them);
- core/rooms/file/handover.py: a hand-over's side of the room (push_lines, forget, ...).

Bytes are the truth: nothing here decodes text.
"""

from __future__ import annotations

import _thread  # threading's lock without importing threading (~1 ms per command)
import errno
import os
import stat
import time

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.byteio import (
    complete_end,
    complete_prefix,
    count_lines,
    newline_census,
    pread_all,
    read_page,
    split_lines,
    tail_lines,
    wait_for_writes,
)
from ackdeck.core.base.faults import pause
from ackdeck.core.base.locks import locked
from ackdeck.core.base.names import as_pathlib_would, check_name, check_room_path
from ackdeck.core.errors import CorruptState, InvalidInput, RoomUnavailable
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file import prev_inodes as prev_inodes
from ackdeck.core.rooms.file import seen_marks
from ackdeck.core.rooms.file.prev_inodes import PREV_GRACE_S
from ackdeck.core.rooms.file.sidecar import Sidecar, intent_entry
from ackdeck.core.rooms.file.sidecar_checks import check_kind, refuse_unless_regular, room_target
from ackdeck.core.rooms.results import (
    PAGE_BYTES,
    AckResult,
    ReadResult,
    RoomStatus,
    SessionStatus,
    Shown,
    ack_delivered,
    check_page,
)
from ackdeck.core.rooms.room_errors import LEDGER_HINT, cold_ack, write_error

# Every command opens a Room, and a push (the commonest, on every producer's every line) needs
# only the ledger, the marks and the append: the modules of the other operations (the ack
# transaction, receipts, the read log, ages, journeys, the dead-letter move, the policy, the
# birth time through ctypes) are imported by the method that uses them, so a command loads
# only its own (tests/test_layering.py counts them).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator
    from contextlib import AbstractContextManager
    from pathlib import Path

    from ackdeck.core.rooms.file.ack import AckSite
    from ackdeck.core.rooms.file.append import Appender
    from ackdeck.core.rooms.file.push_handles import PushHandles
    from ackdeck.core.rooms.file.receipts import Receipt, ReceiptHeader, ReceiptStore
    from ackdeck.core.rooms.journey import Journey
    from ackdeck.core.rooms.line_counts import LineCounts
    from ackdeck.core.rooms.policy import RoomPolicy

__all__ = ["AckResult", "ReadResult", "Room", "RoomStatus", "SessionStatus", "format_poller_line"]

if TYPE_CHECKING:
    Clock = Callable[[], float]


class Room:
    """One notification file and its sidecar directory. Cheap to construct; after a push it
    keeps two descriptors (the sidecar lock and the ledger) open until `close()`."""

    # An ack can remove only the lines a client's transcript proves shown (`ack(shown=)`).
    PROVES_SHOWN = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = time.time,
        grace: float = PREV_GRACE_S,
        follow_symlinks: bool = False,
        door: str = "api",
        home: str | os.PathLike[str] | None = None,
    ) -> None:
        text = check_room_path(path)  # pathlib would quietly drop a trailing `/`
        if "\0" in text:
            raise InvalidInput("room path contains a NUL byte")
        # The path as str(Path(path).absolute()) spelled it, on strings: pathlib (with `re`,
        # `urllib.parse`, `ipaddress`) cost a turn's read, ack or status ~2x a bare
        # interpreter. With the owner's opt-in, a symlink's target (room_target).
        absolute = text if os.path.isabs(text) else os.path.join(os.getcwd(), text)
        self._path_s = as_pathlib_would(room_target(as_pathlib_would(absolute), follow_symlinks))
        self._path_made: Path | None = None  # `path`, built when first asked for
        self._side = Sidecar(self._path_s)
        self._receipts_store: ReceiptStore | None = None  # see _receipts
        self._clock = clock
        self._grace = grace
        self.door = door  # which door reads through this Room, for the read log
        self._home = home  # where the owner's wakes go (None: $ACKDECK_HOME), resolved then
        # The push's append works on plain strings (core/rooms/file/append.py: the CLI's
        # push runs it without this module) and keeps the lock and ledger descriptors open
        # across pushes. The other operations' names are plain strings too (a status over
        # 3,000 rooms makes 3,000 Rooms), named as the append names them.
        self._appender_made: Appender | None = None  # built by the first push
        self._sidecar_s = self._side.path_s
        self._lock_s = locations.room_lock_str(self._sidecar_s)
        self._ledger_s = locations.ledger_str(self._sidecar_s)
        self._journey_s = os.path.join(self._sidecar_s, locations.JOURNEY)
        self._marks_s = locations.seen_marks_str(self._sidecar_s)
        self._appender_mutex = _thread.allocate_lock()

    @property
    def path(self) -> Path:
        """The room's absolute path, as a Path for the callers that use one (the dashboard,
        the MCP server, tests); built on first use: the room's own operations use the
        string, so a turn's read, ack or status never imports pathlib."""
        made = self._path_made
        if made is None:
            from pathlib import Path

            made = self._path_made = Path(self._path_s)
        return made

    @property
    def path_text(self) -> str:
        return self._path_s

    @property
    def sidecar(self) -> Path:
        """The sidecar directory (core/rooms/file/sidecar.py), as a Path: see `path`."""
        return self._side.path

    @property
    def _appender(self) -> Appender:
        """The push's append (core/rooms/file/append.py), built by the first push: a read, an
        ack or a status never loads it."""
        with self._appender_mutex:
            if self._appender_made is None:
                from ackdeck.core.rooms.file.append import Appender

                self._appender_made = Appender(self._path_s, clock=self._clock, slow=lambda: self)
            return self._appender_made

    @property
    def _receipts(self) -> ReceiptStore:
        """What each session read (built on first use: a push never needs it)."""
        if self._receipts_store is None:
            from ackdeck.core.rooms.file.receipts import ReceiptStore

            self._receipts_store = ReceiptStore(self._side.receipts_s)
        return self._receipts_store

    # ----- sidecar layout -------------------------------------------------------------
    # (core/rooms/file/sidecar.py; receipts: core/rooms/file/receipts.py)
    @property
    def lock_file(self) -> Path:
        return self._side.lock_file

    @property
    def ledger_file(self) -> Path:
        return self._side.ledger_file

    @property
    def audit_file(self) -> Path:
        return self._side.audit_file

    def receipt_file(self, session: str) -> Path:
        from pathlib import Path  # for tests and tools: the read names it as a string

        return Path(self._receipts.file(session))

    def last_reader(self, session: str) -> str | None:
        """The reader `session`'s unacked read was handed to (None: none, or a CLI read),
        peeked without the lock: an ack naming it is checked again under the lock (issue 41:
        the CLI run from an agent's shell acks the agent's MCP read once proven shown)."""
        header = self._receipts.header(session)
        return None if header is None or header.acked or not header.lines else header.reader

    # ----- state --------------------------------------------------------------------------
    def _ledger(self, receipts: dict[str, ReceiptHeader] | None = None) -> L.Ledger:
        return L.load_ledger(self._ledger_s, hint=LEDGER_HINT) or self._fresh_ledger(receipts)

    def _fresh_ledger(self, receipts: dict[str, ReceiptHeader] | None = None) -> L.Ledger:
        """The state to start from when there is no ledger (yet, or any more).

        A receipt is always written after the ledger it refers to, so receipts without a ledger
        mean it was lost or moved aside: start past every epoch and offset they name, so none
        of them can authorise an ack against restarted offsets. `receipts`: their headers when
        the caller already read them (after the ledger was found missing, or before looking).
        """
        if receipts is None and self._receipts_store is None:
            if not os.path.isdir(self._side.receipts_s):
                # No receipt can exist (a room's first push): the receipts' modules (and
                # json) are not needed to find none.
                return L.fresh_ledger([])
        found = self._receipts.headers() if receipts is None else receipts
        return L.fresh_ledger(list(found.values()))

    def _store(self, ledger: L.Ledger) -> None:
        L.store_ledger(self._ledger_s, ledger)

    @staticmethod
    def _stat_fd(fd: int) -> L.FileStat:
        """A stat whose mtime belongs to a finished write (the rewrite rule depends on it).

        ext4 updates mtime at the start of a buffered write and the size as it copies, both
        under the inode lock, so a stat during an unlocked producer's append can show the new
        mtime with the old size, which looks like an in-place rewrite (xfs too).
        wait_for_writes takes the lock the write holds (lseek(SEEK_HOLE) on ext4, tmpfs and
        btrfs; a read on xfs), so it returns only after a write in progress at the first
        fstat finished. If the size did not change across it, no append was in
        progress and the first stat is settled; if it grew, the second one is used (a size
        that differs from a seen one makes the mtime rule moot; see ledger.rewritten_since).
        """
        from ackdeck.core.base.fileid import birth_ns  # ctypes: not for a push

        first = os.fstat(fd)
        wait_for_writes(fd)  # where nothing waits (no SEEK_HOLE): the plain stat, as before
        second = os.fstat(fd)
        st = first if second.st_size == first.st_size else second
        return L.stat_of(st, birth_ns(fd))

    def _check_kind(self) -> None:
        """Refuse a room that is not a regular file before anything is created beside it
        (sidecar_checks.check_kind)."""
        check_kind(self._path_s)

    def _open(self) -> int | None:
        try:
            # O_NONBLOCK: opening a FIFO by mistake must not hang; no effect on regular files.
            # O_NOFOLLOW: a room swapped for a symlink after any check is refused, not followed.
            fd = os.open(self._path_s, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except PermissionError:
            raise RoomUnavailable(f"cannot read room {self._path_s}: permission denied") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                refuse_unless_regular(self._path_s, stat.S_IFLNK)
            raise
        try:
            refuse_unless_regular(self._path_s, os.fstat(fd).st_mode)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _settled_ledger(
        self,
        fd: int,
        *,
        can_write: bool,
        persist_growth: bool = True,
        looked: tuple[L.FileStat, bytes] | None = None,
    ) -> tuple[L.Ledger, L.FileStat, bool]:
        """The ledger reconciled with the open file. Returns (ledger, file stat, changed).

        Persists the change only when `can_write` (the exclusive lock is held). Reads persist
        mere growth too (the high-water mark of what sessions have seen); an ack need not, as
        it writes the identity of the file it leaves behind anyway. `looked`: the file's stat
        and head when the caller already took them (`_look`).
        """
        numbered = self._numbered()  # before the stat: see _numbered
        cur, head = looked or self._look(fd)
        ledger = self._ledger()
        verdict = L.classify(ledger, cur, head, numbered)
        settled = L.settle(ledger, verdict, L.identity_of(cur, head), numbered)
        if settled == ledger:
            return ledger, cur, False
        if can_write and (persist_growth or verdict != "grown"):
            if verdict == "recovered" and ledger.pending is not None:
                # Audit before the commit, as the ack itself does (core/rooms/file/ack.py).
                self._side.audit_once(intent_entry(ledger, self._clock()))
            self._store(settled)
        return settled, cur, True

    def _numbered(self) -> int:
        """The furthest logical offset ackdeck numbered in this room: the newest first-seen
        mark (every push leaves one, and every look that saw new lines). Taken before the
        room's stat: a mark is written after its line, so a concurrent push can only make
        the stat larger, never the mark ahead of it. 0 when the marks cannot be read (the
        ledger's recorded size alone then decides, as before)."""
        try:
            return seen_marks.Marks(self._marks_s).newest_end()
        except OSError:
            return 0

    def _look(self, fd: int) -> tuple[L.FileStat, bytes]:
        """The open file's settled stat and its first bytes, as the ledger compares them."""
        return self._stat_fd(fd), os.pread(fd, L.HEAD_BYTES, 0)

    # ----- replaced inodes (late unlocked writers, see core/rooms/file/prev_inodes.py) ---
    def _prevs_need_sweep(self, ledger: L.Ledger) -> bool:
        return prev_inodes.need_sweep(self._sidecar_s, ledger, self._clock(), self._grace)

    def _sweep_prevs(self, ledger: L.Ledger, *, only_newest: bool = False) -> tuple[L.Ledger, int]:
        return prev_inodes.sweep(
            self._path_s,
            self._sidecar_s,
            ledger,
            now=self._clock(),
            grace=self._grace,
            store=self._store,
            only_newest=only_newest,
        )

    def _maybe_sweep(self) -> None:
        """Sweep replaced inodes if they hold late bytes (used by wait, which never acks)."""
        if not self._side.ensure(create=False):
            return
        ledger = self._ledger()
        if not ledger.prev or not self._prevs_need_sweep(ledger):
            return
        with self._side.lock(shared=False):
            fd = self._open()
            if fd is None:
                return
            try:
                ledger, _, _ = self._settled_ledger(fd, can_write=True)
                self._sweep_prevs(ledger)
            finally:
                os.close(fd)

    # ----- read ---------------------------------------------------------------------------
    def read(
        self,
        session: str,
        *,
        deliver: Callable[[ReadResult], int | None] | None = None,
        reader: str | None = None,
        confirm: Callable[[ReadResult], None] | None = None,
        max_bytes: int | None = None,
    ) -> ReadResult:
        """The complete lines at the head of the room, a page of at most `max_bytes` (default
        PAGE_BYTES; one longer line is returned whole), and how many more wait (`waiting`);
        records the session's receipt of exactly that page (replacing the old).

        Recorded only once delivered: the lines are snapshotted, handed to `deliver` (which
        writes them to the reader and raises if it cannot), and only then is the receipt
        stored. If `deliver` returns a number, only that many lines (from the first) were
        delivered: the receipt and the result cover exactly those (an MCP reply has a size
        limit). If `deliver` raises, nothing is recorded and the session's previous receipt
        stays as it was. `reader` binds the receipt to one reader (an MCP server instance):
        only an ack with the same `reader` may use it (see ack()). `confirm` gets exactly what
        will be recorded (after `deliver`'s cut) just before it is; if it raises, nothing is
        (an MCP reply is confirmed once the transport wrote it: a cancelled call records
        nothing).
        """
        check_name(session)
        self._side.check_dir()
        self._check_kind()
        pol = self._policy_or_none()
        # A queue room counts deliveries per claim (core/rooms/file/queue.py), not per read:
        # a look at its lines must never move them to the dead-letter room.
        if pol.max_deliveries is not None and not pol.queue:
            self._move_dead_letters(pol.max_deliveries)
        page = PAGE_BYTES if max_bytes is None else check_page(max_bytes)
        try:
            snap = self._snapshot(session, reader, page)
        except OSError as exc:
            raise write_error(
                self._path_s, exc, after="the room is unchanged; read again"
            ) from None
        if snap is None:
            result = ReadResult([], 0, 0, 0)
            if deliver is not None:
                deliver(result)
            if confirm is not None:
                confirm(result)
            return result
        result, header = snap
        if deliver is not None:
            taken = deliver(result)  # outside the lock: a slow pipe must not hold up acks
            if taken is not None and header is not None and taken < len(result.lines):
                result, header = _first_lines(result, header, taken)
        if confirm is not None:
            confirm(result)
        if header is not None:
            from ackdeck.core.rooms.file import readlog
            from ackdeck.core.rooms.file.receipts import Receipt, sealed

            receipt = sealed(header, result.lines)  # the lines' digests, outside the lock
            header = self._log_read(receipt.header)
            pause("read-after-log")
            try:
                self._commit_receipt(Receipt(header, receipt.digests))
            except OSError as exc:
                raise write_error(
                    self.receipt_file(session), exc, after="no receipt was recorded; read again"
                ) from None
            pause("read-after-receipt")
            if readlog.needs_rotation(self._journey_s):
                readlog.try_rotate(self._lock_s, self._journey_s, header.start)
        return result

    def _log_read(self, header: ReceiptHeader) -> ReceiptHeader:
        """Log a delivered read before its receipt is stored (so no receipt lacks its entry).
        An empty read handed nothing out and is not logged. A log that cannot be written is
        counted in the receipt (`unlogged`) and the read goes on."""
        if header.lines == 0 or header.read_id is None:
            return header.replace(read_id=None)  # nothing was handed out
        from ackdeck.core.rooms.file import readlog

        entry = readlog.ReadEntry(
            header.read_id,
            header.read_at,
            header.session,
            header.reader,
            self.door,
            header.epoch,
            header.start,
            header.end,
            header.lines,
        )
        if readlog.append(self._journey_s, entry):
            return header
        return header.replace(read_id=None, unlogged=1)

    def _snapshot(
        self, session: str, reader: str | None, page: int
    ) -> tuple[ReadResult, ReceiptHeader | None] | None:
        """The first page of complete lines now in the room, how many more wait, and the
        receipt that would record the page (None when there is no room and no sidecar:
        nothing to record)."""
        # Imported before the lock is taken (see ack()).
        from ackdeck.core.base import fileid  # noqa: F401 (for _stat_fd)
        from ackdeck.core.rooms.file import ages, readlog
        from ackdeck.core.rooms.file.ack_stream import Digest
        from ackdeck.core.rooms.file.receipts import ReceiptHeader

        if not os.path.exists(self._path_s) and not self._side.ensure(create=False):
            return None
        shared = True
        while True:
            with self._side.lock(shared=shared):
                fd = self._open()
                if fd is None:
                    ledger = self._ledger()
                    return ReadResult([], ledger.base, ledger.base, ledger.epoch), None
                try:
                    ledger, _, changed = self._settled_ledger(fd, can_write=not shared)
                    if shared and (changed or self._prevs_need_sweep(ledger)):
                        shared = False  # retry under the exclusive lock to record the change
                        continue
                    if not shared:
                        ledger, _ = self._sweep_prevs(ledger)
                    cur = self._stat_fd(fd)
                    data, head, complete, waiting = _page(fd, cur.size, page)
                    if changed or not shared:
                        # Something arrived since ackdeck last looked: date it. (Unchanged,
                        # the marks already reach the end: a repeated read costs nothing.)
                        ages.observe(self._marks_s, ledger.base + complete, self._clock())
                finally:
                    os.close(fd)
            # Hash in a thread (hashlib releases the GIL) while this one splits the lines.
            digest = Digest(data)
            lines = split_lines(data)
            header = ReceiptHeader(
                session=session,
                epoch=ledger.epoch,
                start=ledger.base,
                end=ledger.base + len(data),
                lines=len(lines),
                sha256=digest.hexdigest(),
                read_at=self._clock(),
                seen=L.identity_of(cur, head),
                reader=reader,
                read_id=readlog.new_id(),
            )
            result = ReadResult(lines, header.start, header.end, header.epoch, data, waiting)
            return result, header

    def _commit_receipt(self, receipt: Receipt) -> None:
        """Store the receipt of a delivered read. Under the shared lock, so an exclusive
        operation's leftover cleanup never removes the temp of a receipt being written. If
        the room moved on meanwhile (another ack, a rewrite), the ack's own checks (epoch,
        offsets, head bytes) decide what this receipt may still remove."""
        from ackdeck.core.rooms.file.receipts import Receipt

        header = receipt.header
        with self._side.lock(shared=True):
            try:
                kept = self._receipts.header(header.session)
            except CorruptState:
                kept = None  # replaced by this read, as before
            if kept is not None and _later_read(kept, header):
                return
            if kept is not None and kept.unlogged:
                # A running count per session: this receipt replaces the one that held it.
                header = header.replace(unlogged=kept.unlogged + header.unlogged)
            self._receipts.store(Receipt(header, receipt.digests))

    # ----- ack ----------------------------------------------------------------------------
    def _absent_ack(self) -> AckResult:
        return AckResult(
            mode="noop",
            acked=0,
            preserved=0,
            message=f"room {self._path_s} does not exist; nothing to ack",
        )

    def ack(
        self,
        session: str,
        *,
        all: bool = False,  # noqa: A002 - CLI flag name
        reader: str | None = None,
        deliver: Callable[[ReadResult], int | None] | None = None,
        confirm: Callable[[ReadResult], None] | None = None,
        max_bytes: int | None = None,
        shown: Shown | None = None,
    ) -> AckResult:
        """Remove exactly what `session` consumed (or, with all=True, every complete line of
        the first page: at most `max_bytes`, default PAGE_BYTES, or one longer line; the
        rest stays, counted as preserved).

        Only a receipt handed to the same `reader` (see read()) authorises the ack; any
        other is refused like a cold ack, so a restarted MCP server never acks lines that
        only its dead predecessor was given.

        With all=True and `deliver`, the lines are delivered first and only what was
        delivered is removed (a read and an ack of that receipt, under the hood): `ack --all
        | head` cannot clear lines nobody saw. The result's mode is then "all". `confirm`, as
        for read(), comes last before the read of those lines is recorded: if it raises,
        nothing is removed.

        `shown` (issue 41: the client's transcript) says how many of the read's lines, from
        the first, its model was shown: only those are removed, the rest stay unread.
        """
        page = PAGE_BYTES if max_bytes is None else check_page(max_bytes)
        self._side.check_dir()
        if self._policy_or_none().queue:
            # An ack drops the head, claimed lines and all: their holders' work would be lost.
            raise InvalidInput(
                f"room {self._path_s} is a queue: finish a task with `ackdeck done ROOM TOKEN` "
                "(nothing was removed)"
            )
        if all and deliver is not None:
            return ack_delivered(
                lambda: self.read(
                    session, reader=reader, deliver=deliver, confirm=confirm, max_bytes=page
                ),
                lambda: self.ack(session, reader=reader),
                "no complete lines to ack",
            )
        check_name(session)
        self._side.check_dir()
        self._check_kind()
        has_sidecar = self._side.ensure(create=False)
        if not os.path.exists(self._path_s) and not has_sidecar:
            return self._absent_ack()
        if not has_sidecar and not all:
            # No sidecar, so no receipt: refuse without creating the sidecar, lock or ledger.
            fd = self._open()
            if fd is None:
                return self._absent_ack()
            try:
                raise cold_ack(session, "no read", count_lines(fd, os.fstat(fd).st_size))
            finally:
                os.close(fd)
        # Imported before the lock is taken: a first import (the ack transaction, ctypes for
        # the file's birth time) must not lengthen what producers wait for.
        from ackdeck.core.base import fileid  # noqa: F401 (for _stat_fd)
        from ackdeck.core.rooms.file.ack import ack_locked

        with self._side.lock(shared=False):
            fd = self._open()
            if fd is None:
                return self._absent_ack()
            try:
                done = ack_locked(
                    self._ack_site(),
                    fd,
                    session,
                    ack_all=all,
                    reader=reader,
                    page=page,
                    shown=shown,
                )
                self._journey_upkeep()
                return done
            except OSError as exc:
                # Anything before the rename leaves the room as it was (temps are removed on
                # the way out or by the next ack); later failures are converted in ack.py.
                raise write_error(self._path_s, exc) from None
            finally:
                os.close(fd)

    def _move_dead_letters(self, limit: int) -> None:
        from ackdeck.core.rooms.file.deadletter import move_dead_letters

        move_dead_letters(self, limit)

    def exclusively(self) -> AbstractContextManager[tuple[int | None, AckSite]]:
        """The room open (None: missing) under its exclusive lock, with what an ack may touch:
        the work queue's claims and completions run inside it (core/rooms/file/queue.py)."""
        from contextlib import contextmanager  # a queue's: not for a turn's read, ack, status

        return contextmanager(self._exclusively)()

    def _exclusively(self) -> Iterator[tuple[int | None, AckSite]]:
        self._side.check_dir()
        self._check_kind()
        with self._side.lock(shared=False):
            fd = self._open()
            try:
                yield fd, self._ack_site()
            finally:
                if fd is not None:
                    os.close(fd)

    def append_dead(self, data: bytes) -> int:
        """Append complete lines as a push does (the dead-letter room's side of a move)."""
        return self._append(data)

    def _journey_upkeep(self) -> None:
        """Keep the read log and the marks bounded (exclusive lock held). Never fails an ack
        that already happened: a full disk only leaves them longer until the next one."""
        from ackdeck.core.rooms.file import readlog

        try:
            base = self._ledger().base
            readlog.rotate(self._journey_s, base)
            seen_marks.Marks(self._marks_s).compact(base)
        except OSError:
            pass

    def _ack_site(self) -> AckSite:
        """What the ack may touch (core/rooms/file/ack.py); built per ack from this Room's parts."""
        from ackdeck.core.rooms.file.ack import AckSite

        return AckSite(
            path=self._path_s,
            sidecar=self._side,
            receipts=self._receipts,
            settle=lambda fd: self._settled_ledger(fd, can_write=True, persist_growth=False)[:2],
            store=self._store,
            sweep_all=self._sweep_prevs,
            sweep_newest=lambda ledger: self._sweep_prevs(ledger, only_newest=True),
            clock=self._clock,
            numbered=self._numbered,
        )

    # ----- push ---------------------------------------------------------------------------
    def push(self, line: str | bytes) -> int:
        """Append one line under the shared lock; return the logical offset where it starts.

        A str is encoded as UTF-8 with surrogateescape, so bytes that came in through argv
        (`room push r $'\\xff'`) are written exactly (append.line_bytes)."""
        from ackdeck.core.rooms.file.append import line_bytes

        return self._append(line_bytes(line))

    # ----- a hand-over's side (core/rooms/file/handover.py) ---------------------------------
    def push_lines(self, lines: list[bytes]) -> int:
        """Append several lines in one write; the logical offset of the first (handover.py)."""
        from ackdeck.core.rooms.file import handover

        return handover.push_lines(self, lines)

    def find_block(self, since: int, epoch: int, block: bytes) -> tuple[int | None, bool]:
        """Where the lines `block` start at or after `since`, and if certain (handover.py)."""
        from ackdeck.core.rooms.file import handover

        return handover.find_block(self, since, epoch, block)

    def note_handover(self, start: int, end: int, lines: int, sha256: str, text: str) -> None:
        """Audit, once, that a hand-over moved the lines in [start, end) (handover.py)."""
        from ackdeck.core.rooms.file import handover

        handover.note_handover(self, start, end, lines, sha256, text)

    def forget(self, session: str, readers: Collection[str] = ()) -> bool:
        """Stop counting `session` as a reader of this room (handover.py)."""
        from ackdeck.core.rooms.file import handover

        return handover.forget(self, session, readers)

    def _append(self, data: bytes) -> int:
        """Append complete lines in one write under the shared lock (push, and the dead-letter
        move, which carries another room's lines byte for byte): core/rooms/file/append.py."""
        return self._appender.append(data)

    @property
    def _handles(self) -> PushHandles | None:
        """The descriptors kept open across pushes (the append's)."""
        made = self._appender_made
        return None if made is None else made.handles

    def _settle_epoch(self) -> None:
        """Reconcile and store the ledger with the room as it is now (exclusive lock)."""
        with self._side.lock(shared=False):
            fd = self._open()
            if fd is not None:
                try:
                    self._settled_ledger(fd, can_write=True)
                finally:
                    os.close(fd)

    def close(self) -> None:
        """Close the descriptors kept for push (also done when the Room is collected)."""
        if self._appender_made is not None:
            self._appender_made.close()

    # ----- status -------------------------------------------------------------------------
    def exists(self) -> bool:
        """Is something at the room's path? A missing room is an empty room (a producer creates
        it); doors use this to say so. lexists: a symlink or FIFO there is not "missing", it is
        refused by the operation that opens it."""
        return os.path.lexists(self._path_s)

    def status(self, counts: LineCounts | None = None) -> RoomStatus:
        """Counters for the room and every session that has read it. Never writes the room;
        beside it, it records first-seen marks (creating the sidecar of a room that holds lines
        no ackdeck process has dated yet, where the directory allows it).

        `counts`: this room's counts from the previous call, kept by a caller that asks again
        and again (the dashboard); only bytes appended since are then read (see
        core/rooms/line_counts.py). The result is the same either way.
        """
        # Imported before the lock is taken (see ack()).
        from ackdeck.core.base import fileid  # noqa: F401 (for _stat_fd)
        from ackdeck.core.rooms.file import ages  # noqa: F401 (for _status_locked)

        has_sidecar = self._side.ensure(create=False)
        if not has_sidecar and _holds_bytes(self._path_s):
            try:
                has_sidecar = self._side.ensure(create=True)
            except RoomUnavailable:
                pass  # a read-only directory: counts without ages
        if has_sidecar:
            # Open the file only once the lock is held: a file opened before it may be the
            # inode an ack has just renamed away, which the ledger no longer describes (the
            # snapshot would show a phantom new epoch with the old bytes counted twice).
            with locked(self._lock_s, shared=True):
                return self._status_of_path(has_sidecar, counts)
        return self._status_of_path(has_sidecar, counts)

    def _status_of_path(self, has_sidecar: bool, counts: LineCounts | None) -> RoomStatus:
        fd = self._open()
        if fd is None:
            ledger = self._ledger() if has_sidecar else L.Ledger()
            pol = self._policy_or_none()
            return RoomStatus(
                path=self._path_s,
                exists=False,
                pending=0,
                partial_bytes=0,
                acked_total=ledger.acked_total,
                preserved_total=ledger.preserved_total,
                pushed_total=ledger.base,
                epoch=ledger.epoch,
                last_ack_at=ledger.last_ack_at,
                sessions={},
                late_total=ledger.late_total,
                held_open=sum(p.held_at is not None for p in ledger.prev),
                checked_at=self._clock(),
                dead_total=ledger.dead_total,
                overdue_after=pol.overdue,
                max_deliveries=pol.max_deliveries,
                owner=pol.owner,
                queue=bool(pol.queue),
            )
        try:
            return self._status_locked(fd, counts)
        finally:
            os.close(fd)

    def _status_locked(self, fd: int, counts: LineCounts | None) -> RoomStatus:
        from ackdeck.core.rooms.file import ages

        numbered = self._numbered()  # before the stat: see _numbered
        cur, head = self._look(fd)
        # Headers only: counters never need the consumed bytes (maybe the whole room). Read
        # once, before the ledger (a missing one starts from them): a read stores the ledger
        # before its receipt, so receipts read first are never newer than the ledger.
        receipts = self._receipts.headers()
        # The ledger's counters as `_settled_ledger` settles them; a status never stores it, so
        # it is not compared with the stored one (that only tells a writer to store) and the
        # file's new identity (a hash of its head) is not made (settle_counters).
        ledger = self._ledger(receipts)
        verdict = L.classify(ledger, cur, head, numbered)
        ledger = L.settle_counters(ledger, verdict, (cur.dev, cur.ino), numbered)
        # Kept counts go with the stat they were checked against; a plain status also counts
        # appends that landed after it, as it always has.
        size = cur.size if counts is not None else os.fstat(fd).st_size
        # Where each current-epoch session stopped reading, as a byte offset in the file.
        cuts = {
            n: max(0, h.end - ledger.base) for n, h in receipts.items() if h.epoch == ledger.epoch
        }
        if counts is None:
            pending, complete_len, before = newline_census(fd, size, cuts.values())
        else:
            epoch = (ledger.epoch, ledger.base)
            pending, complete_len, before = counts.census(fd, cur, head, epoch, list(cuts.values()))
        now = self._clock()
        journey = self._side.ensure(create=False)
        if journey and verdict != "foreign":
            # Not in a new epoch nobody has recorded yet: its numbering starts past the
            # newest mark, so a mark made here would move the start of the very epoch it
            # dates (its lines' ages stay unknown until a read or an ack records it).
            ages.observe(self._marks_s, ledger.base + complete_len, now)
        oldest, nobody, firsts = ages.file_ages(fd, ledger.base, complete_len, cuts, self._marks_s)
        sessions: dict[str, SessionStatus] = {}
        for name, h in receipts.items():
            if name not in cuts:
                # A stale read: everything is unread.
                first = oldest if pending else None
                sessions[name] = SessionStatus(0, pending, None, first)
                continue
            read = before[cuts[name]]
            in_flight = 0 if h.acked else read
            sessions[name] = SessionStatus(
                in_flight,
                pending - read,
                h.read_at if in_flight else None,
                firsts[name] if pending - read else None,
            )
        deliveries = 0
        if journey and pending:  # the read log says how often a waiting line was handed out
            from ackdeck.core.rooms.file import readlog

            live = readlog.live_entries(self._journey_s, ledger.base)
            deliveries = readlog.deliveries(live, ledger.epoch, ledger.base)
        pol = self._policy_or_none()
        return RoomStatus(
            path=self._path_s,
            exists=True,
            pending=pending,
            partial_bytes=size - complete_len,
            acked_total=ledger.acked_total,
            preserved_total=ledger.preserved_total,
            pushed_total=ledger.base + size,
            epoch=ledger.epoch,
            last_ack_at=ledger.last_ack_at,
            sessions=sessions,
            late_total=ledger.late_total,
            held_open=sum(p.held_at is not None for p in ledger.prev),
            checked_at=now,
            oldest_pending_at=oldest if pending else None,
            oldest_unread_at=nobody if pending > max(before.values(), default=0) else None,
            deliveries=deliveries,
            reads_unlogged=sum(h.unlogged for h in receipts.values()),
            dead_total=ledger.dead_total,
            overdue_after=pol.overdue,
            max_deliveries=pol.max_deliveries,
            owner=pol.owner,
            queue=bool(pol.queue),
        )

    def _policy_or_none(self) -> RoomPolicy:
        try:
            return self.policy()
        except CorruptState:
            from ackdeck.core.rooms.policy import RoomPolicy

            return RoomPolicy()  # counters stay usable; `room policy` reports it

    # ----- policy (core/rooms/policy.py) ------------------------------------------------------
    def policy(self) -> RoomPolicy:
        from ackdeck.core.rooms import policy as policy_mod

        path = os.path.join(self._sidecar_s, locations.POLICY)
        try:
            with open(path, "rb") as f:
                return policy_mod.decode(f.read(), path)
        except (FileNotFoundError, NotADirectoryError):
            return policy_mod.RoomPolicy()

    def set_policy(self, policy: RoomPolicy) -> None:
        self._side.check_dir()
        self._check_kind()
        from ackdeck.core.rooms import policy as policy_mod

        with self._side.lock(shared=False):
            data = policy_mod.encode(policy)
            atomic.atomic_write(locations.policy(self.sidecar), data)

    # ----- queries and waits (core/rooms/file/queries.py) -------------------------------------
    def trace(self, offset: int | str) -> Journey:
        """The journey of the line that starts at logical `offset` (what push returned)."""
        from ackdeck.core.rooms.file import queries

        return queries.trace(self, offset)

    def find(self, text: str | bytes) -> tuple[list[int | str], int]:
        """The offsets of the lines now in the room that contain `text`, and how many do."""
        from ackdeck.core.rooms.file import queries

        return queries.find(self, text)

    def wait_acked(
        self,
        offset: int | str,
        timeout: float | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Journey | None:
        """Block until the line at `offset` left the room: its journey (queries.py)."""
        from ackdeck.core.rooms.file import queries

        return queries.wait_acked(self, offset, timeout, stop)

    def first_seen(self, start: int | str, length: int) -> float | None:
        """When the line at logical offset `start` (`length` bytes and its newline) was first
        seen, from the marks (a lower bound for an unlocked producer's line)."""
        if not isinstance(start, int):
            return None
        end = start + length + 1
        return seen_marks.Marks(self._marks_s).first_seen([end])[end]

    def tail(self, count: int) -> list[bytes]:
        """The newest `count` complete lines, oldest first. Display only: records no receipt,
        takes no lock, and reads only the end of the file (a prompt hook on a big room)."""
        if count <= 0:
            return []
        fd = self._open()
        if fd is None:
            return []
        try:
            return tail_lines(fd, os.fstat(fd).st_size, count)
        finally:
            os.close(fd)

    def wait(
        self, session: str, timeout: float | None = None, stop: Callable[[], bool] | None = None
    ) -> bool:
        """Block until `session` has unread complete lines (True) or the timeout passes."""
        from ackdeck.core.rooms.file import queries

        return queries.wait(self, session, timeout, stop)


def _holds_bytes(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


def _later_read(kept: ReceiptHeader, header: ReceiptHeader) -> bool:
    """Is `kept` the receipt of a read taken after `header`'s? Two reads of one session
    overlap when one delivers to a slow pipe: the older snapshot, stored last, replaced the
    newer receipt, so the ack left lines the newer read delivered (repeated without a crash).
    In one epoch from one base the room only grows, so the larger end is the later read."""
    return (
        not kept.acked
        and kept.reader == header.reader
        and (kept.epoch, kept.start) == (header.epoch, header.start)
        and kept.end > header.end
    )


def _page(fd: int, size: int, limit: int) -> tuple[bytes, bytes, int, int]:
    """The read's page of the file open at `fd` (`size` bytes): (its complete lines, at most
    `limit` bytes or one longer line; the file's head for its identity; the end of the last
    complete line in the whole file; the complete lines after the page). A room that fits
    the page is read once, as it always was; a bigger one is never held whole."""
    if size <= limit:
        content = pread_all(fd, size)
        data = complete_prefix(content)
        return data, content, len(data), 0
    data = read_page(fd, size, limit)
    head = data if len(data) >= L.HEAD_BYTES else os.pread(fd, L.HEAD_BYTES, 0)
    complete = complete_end(fd, size)
    waiting = newline_census(fd, complete, (), start=len(data))[0] if complete else 0
    return data, head, complete, waiting


def _first_lines(
    result: ReadResult, header: ReceiptHeader, taken: int
) -> tuple[ReadResult, ReceiptHeader]:
    """The read cut to its first `taken` lines: what a door that delivered only those may ack
    (the lines cut off wait, with those after the page)."""
    size = sum(len(line) + 1 for line in result.lines[:taken])
    data = result.data[:size]
    header = header.replace(end=header.start + size, lines=taken, sha256=L.sha256(data))
    waiting = result.waiting + len(result.lines) - taken
    return (
        ReadResult(result.lines[:taken], result.start, header.end, result.epoch, data, waiting),
        header,
    )


def format_poller_line(room: str, sender: str, body: str, ts: float, *, utc: bool = True) -> str:
    """The common poller line `[ts] [room] sender: body`, flattened to one line."""
    stamp = time.strftime(
        "%Y-%m-%dT%H:%M:%SZ" if utc else "%Y-%m-%dT%H:%M:%S",
        time.gmtime(ts) if utc else time.localtime(ts),
    )
    flat = " ".join(body.replace("\0", " ").splitlines())
    return f"[{stamp}] [{room}] {sender}: {flat}"
