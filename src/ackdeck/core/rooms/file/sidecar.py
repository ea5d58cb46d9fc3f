"""The sidecar: the directory `.NAME.ackdeck/` beside a room, holding its bookkeeping.

Layout:
  lock          flock target: push and read take it shared, ack and upkeep exclusive
  ledger        the room's state (core/rooms/file/ledger.py)
  audit.jsonl   one entry per ack (AuditEntry), and per hand-over of lines out or in
  receipts/     one receipt per session (core/rooms/file/receipts.py)
  journey/      the read log and first-seen marks (core/rooms/file/readlog.py, seen_marks.py)
  prev-*        replaced room inodes kept for late writers (core/rooms/file/prev_inodes.py)

The checks that keep ackdeck from writing through a borrowed target (the sidecar must be our
own real directory, the room a regular file) are in sidecar_checks.py, which push imports
without this module; they are imported here for everyone else.
"""

from __future__ import annotations

import os

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.byteio import write_all
from ackdeck.core.base.locks import Held, locked
from ackdeck.core.base.struct import Sparse, Struct
from ackdeck.core.errors import RoomUnavailable
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file.prev_inodes import PREV_PREFIX
from ackdeck.core.rooms.file.sidecar_checks import (  # noqa: F401 (the room's own checks)
    check_room_dir,
    ensure_sidecar,
    refuse_unless_regular,
    same_inode,
)

# On the hot path (tests/test_layering.py): the sidecar's paths are plain strings derived
# from the Room's own (core/rooms/file/room.py); a Path is built only when asked for.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

SUFFIX = locations.SIDECAR_SUFFIX
# The names inside a sidecar (the layout above), as core/base/locations.py spells them.
LOCK, LEDGER, AUDIT = locations.ROOM_LOCK, locations.LEDGER, locations.AUDIT
RECEIPTS, JOURNEY = locations.RECEIPTS, locations.JOURNEY


def path_for(room: Path) -> Path:
    """The sidecar directory of the room at `room` (an absolute path, symlinks resolved as
    the Room resolves them). A hashed stem for names too long to take the dot and suffix (a
    250-byte room name)."""
    return locations.sidecar(room)


def state_dirs(room: Path) -> tuple[Path, Path, Path]:
    """Where a room's state changes show up as directory entries: its own directory (pushes;
    an ack renames a new inode over the file), its sidecar (ledger, audit) and the sidecar's
    receipts (reads). A watcher that follows a room watches these, not recursively."""
    side = Sidecar(room)
    return room.parent, side.path, side.receipts_dir


class AuditEntry(Struct, kw_only=True):
    """One line of `audit.jsonl`: what an ack (or a recovered one) removed, or (mode
    "handover") lines a hand-over moved out of this room or into it (`handover` says which)."""

    at: float
    session: str
    mode: str
    epoch: int
    start: int  # logical offsets of the removed bytes
    end: int
    acked: int  # lines removed
    preserved: int  # lines kept (arrived or unread)
    sha256: str | None  # of the removed bytes; None when nothing was removed
    dead: str | None = None  # mode "dead": the dead-letter room the lines were moved to
    # Mode "handover": "handed over from S to T" (core/service/handover.py), for `room trace`
    # of the lines in [start, end): in the room they left (acked there) and in the room they
    # were pushed to. Sparse: entries written before the field existed keep their bytes.
    handover: Sparse[str | None] = None
    # An ack proven by the reader's client (issue 41): the record that showed the lines to
    # its model ("Claude Code transcript SESSION.jsonl"), for `room trace`. Sparse as above.
    proof: Sparse[str | None] = None


# Bytes read from the end of the audit log to find its newest entry.
_AUDIT_TAIL = 16 << 10


def intent_entry(ledger: L.Ledger, at: float) -> AuditEntry:
    """The audit entry of the ack whose intent `ledger.pending` is (its rename happened):
    mode "dead" for a dead-letter move, else "recovered" (the ack's own mode is not kept).
    `at`: when, if the intent does not say."""
    p = ledger.pending
    assert p is not None
    return AuditEntry(
        at=p.at if p.at is not None else at,
        session=p.session,
        mode="recovered" if p.dead is None else "dead",
        epoch=ledger.epoch,
        start=ledger.base,
        end=p.base,
        acked=p.acked,
        preserved=0,
        sha256=None,
        dead=p.dead,
    )


def same_range(doc: dict[str, object] | None, entry: AuditEntry) -> bool:
    """Does the audit entry `doc` record the removal `entry` records (same epoch and range)?
    A hand-over's note of the same range is not the removal (it follows the ack it notes)."""
    if doc is None or doc.get("mode") == "handover":
        return False
    return (doc.get("epoch"), doc.get("start"), doc.get("end")) == (
        entry.epoch,
        entry.start,
        entry.end,
    )


class Sidecar:
    """The sidecar of the room at `room` and the operations on its layout. Its names are kept
    as plain strings, which its operations use: pathlib (with `re`, `urllib.parse`,
    `ipaddress`, ~2x a bare interpreter) is imported only when a caller asks for one of the
    Path properties below (the dashboard, tests), not by a turn's read, ack or status."""

    def __init__(self, room: str | os.PathLike[str]) -> None:
        # `room` is absolute and spelled as pathlib spells it (the Room's own path), so the
        # string names are the ones `locations.sidecar` and `/` gave on a Path.
        self._room_s = os.fspath(room)
        self._path_s = locations.sidecar_str(self._room_s)
        self._room_p: Path | None = None
        self._path_p: Path | None = None

    @property
    def room(self) -> Path:
        if self._room_p is None:
            from pathlib import Path

            self._room_p = Path(self._room_s)
        return self._room_p

    @property
    def path(self) -> Path:
        if self._path_p is None:
            from pathlib import Path

            self._path_p = Path(self._path_s)
        return self._path_p

    @property
    def lock_file(self) -> Path:
        return self.path / LOCK

    @property
    def ledger_file(self) -> Path:
        return self.path / LEDGER

    @property
    def audit_file(self) -> Path:
        return self.path / AUDIT

    @property
    def receipts_dir(self) -> Path:
        return self.path / RECEIPTS

    @property
    def journey_dir(self) -> Path:
        """Its own directory, so a full filesystem for it alone is a real case to test."""
        return self.path / JOURNEY

    # The same names as plain strings, for the operations (no pathlib).
    @property
    def path_s(self) -> str:
        return self._path_s

    @property
    def lock_s(self) -> str:
        return locations.room_lock_str(self._path_s)

    @property
    def audit_s(self) -> str:
        return os.path.join(self._path_s, AUDIT)

    @property
    def receipts_s(self) -> str:
        return os.path.join(self._path_s, RECEIPTS)

    @property
    def journey_s(self) -> str:
        return os.path.join(self._path_s, JOURNEY)

    # ----- safety checks (core/rooms/file/sidecar_checks.py, on str paths for push) -----------
    def check_dir(self) -> None:
        check_room_dir(self._room_s)

    def ensure(self, *, create: bool) -> bool:
        """Check (and maybe create) the sidecar; False if it does not exist and create=False."""
        return ensure_sidecar(self._room_s, self._path_s, create=create)

    def lock(self, *, shared: bool) -> _RoomLock:
        """The room's lock (creating a checked sidecar first)."""
        return _RoomLock(self, shared)

    # ----- audit log --------------------------------------------------------------------------
    def audit(self, entry: AuditEntry) -> None:
        """Append one entry, under the exclusive lock: one O_APPEND write per entry, so
        entries never interleave."""
        from ackdeck.core.base.jsontext import dumps  # an ack writes one, never a push

        fd = os.open(self.audit_s, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            write_all(fd, (dumps(entry.to_json()) + "\n").encode())
        finally:
            os.close(fd)

    def audit_once(self, entry: AuditEntry) -> None:
        """Append `entry` unless it is the last one already (exclusive lock held): an
        interrupted ack audits before it commits, so its recovery may find its entry there."""
        if not same_range(self.last_audit(), entry):
            self.audit(entry)

    def last_audit(self) -> dict[str, object] | None:
        """The newest entry of the audit log (None: none, or not readable as one)."""
        try:
            fd = os.open(self.audit_s, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        try:
            size = os.fstat(fd).st_size
            # An entry is a few hundred bytes; a dead-letter room's path can make it longer.
            tail = os.pread(fd, min(size, _AUDIT_TAIL), max(0, size - _AUDIT_TAIL))
        finally:
            os.close(fd)
        # Here, not at the top: a push never reads the audit log (json is off its path).
        from ackdeck.core.base.jsonfields import parse as parse_json

        try:
            doc = parse_json(tail.rstrip(b"\n").rsplit(b"\n", 1)[-1])
        except ValueError:
            return None
        return doc if isinstance(doc, dict) else None

    # ----- leftovers --------------------------------------------------------------------------
    def remove_leftovers(self, ledger: L.Ledger) -> None:
        """Remove temps and links left by crashed writers. Exclusive lock held, so every
        writer of these names (acks, and reads writing receipts under the shared lock) is
        idle."""
        atomic.clean_stale_temps(self._room_s)
        live = {p.name for p in ledger.prev}
        for directory in (self._path_s, self.receipts_s):
            try:
                entries = list(os.scandir(directory))
            except FileNotFoundError:
                continue
            for entry in entries:
                # Exact shapes only: a session may be named `prev-1` or `x.ackdeck-tmp-1`, and
                # its receipt (`receipts/<session>.rcpt`) is not a leftover.
                if atomic.is_temp_name(entry.name) or (
                    directory == self._path_s
                    and entry.name.startswith(PREV_PREFIX)
                    and entry.name not in live
                ):
                    atomic.unlink_quietly(entry.path)


class _RoomLock:
    """`with sidecar.lock(shared=...)`: a class rather than contextlib.contextmanager (every
    room operation takes it; contextlib is a module a turn need not load), doing what the
    generator did, in its order: the sidecar is made and checked when the block is entered,
    and a PermissionError, from taking the lock or from the block itself, is the one line
    RoomUnavailable."""

    __slots__ = ("_held", "_shared", "_side")

    def __init__(self, side: Sidecar, shared: bool) -> None:
        self._side = side
        self._shared = shared
        self._held: Held | None = None

    def _refused(self, exc: PermissionError) -> RoomUnavailable:
        return RoomUnavailable(f"cannot lock {self._side.lock_s}: {exc.strerror}")

    def __enter__(self) -> None:
        self._side.ensure(create=True)
        held = locked(self._side.lock_s, shared=self._shared)
        try:
            held.__enter__()
        except PermissionError as exc:
            raise self._refused(exc) from None
        self._held = held

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.__exit__(kind, exc, tb)
        if isinstance(exc, PermissionError):
            raise self._refused(exc) from None
