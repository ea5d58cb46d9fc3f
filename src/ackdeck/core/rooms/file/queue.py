"""A file room used as a work queue: claims, leases and fencing tokens (core/rooms/queue.py
decides; this module does the I/O).

The room file stays the truth for the tasks: producers append lines as to any room (`push`,
or a plain `>>`). The queue's own state is `<sidecar>/queue.sqlite` (one table of claimed
lines, one of issued tokens, and the queue's id, next token and frontier): claims need the
oldest expired lease and the next never-claimed line in a time that does not grow with the
number of claimed lines, which an index gives and a rewritten JSON file does not.

Every operation runs under the room's exclusive lock (the ack's), so claims, completions
and the ack never interleave, and SQLite's own transaction (synchronous FULL) makes each
step durable before the lock is released:

- **claim**: the ack's upkeep first (finish an interrupted ack, carry late lines of
  unlocked producers); then the oldest open task whose lease ended, else the complete line
  at the frontier. A task past max_deliveries is marked dying (committed: no holder can
  complete it any more), appended to the dead-letter room, then marked dead; a kill -9 in
  between leaves it dying, and the next operation appends it (again, if the kill came after
  the append: a duplicate in the dead-letter room, never a loss) and marks it dead.
- **done** marks the task done in one transaction: that commit is the completion. The run
  of finished lines at the head of the room then leaves it through the ack's own
  transaction (core/rooms/file/ack.py: temp, rename, ledger, audit), one run per holder and
  kind, so `room trace` names who finished each line; a kill anywhere leaves lines that the
  next operation removes (finished tasks stay finished, an interrupted ack is recovered).
- A room rewritten behind ackdeck's back (a new epoch) starts the queue afresh: every lease
  is dropped (its token refused) and every line is claimable again. Redelivery, never loss.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.byteio import settled_size
from ackdeck.core.base.faults import pause
from ackdeck.core.errors import AckdeckError, CorruptState, InvalidInput, RoomUnavailable
from ackdeck.core.rooms import queue as Q
from ackdeck.core.rooms.file import deadletter
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file.ack import AckTransaction
from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.rooms.room_errors import write_error

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from typing import Any

    from ackdeck.core.rooms.file.ack import AckSite
    from ackdeck.core.rooms.file.room import Room

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value);
CREATE TABLE IF NOT EXISTS tasks (
    offset INTEGER PRIMARY KEY, length INTEGER NOT NULL, sha256 TEXT NOT NULL,
    token INTEGER NOT NULL, holder TEXT NOT NULL, until REAL NOT NULL,
    deliveries INTEGER NOT NULL, state TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tasks_lease_end ON tasks(until) WHERE state = 'open';
CREATE INDEX IF NOT EXISTS tasks_dying ON tasks(offset) WHERE state = 'dying';
CREATE TABLE IF NOT EXISTS tokens (token INTEGER PRIMARY KEY, offset INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS tokens_offset ON tokens(offset);
"""
# Version 2: each claim's record (who, when, its lease end and how it ended: released, done,
# dead), kept after its line left for `room trace` (CLAIMS_KEPT of them, newest).
_CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    token INTEGER PRIMARY KEY, offset INTEGER NOT NULL, holder TEXT NOT NULL,
    at REAL NOT NULL, until REAL NOT NULL, ended TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS claims_offset ON claims(offset);
"""
CLAIMS_KEPT = 100_000
_COLUMNS = "offset, length, sha256, token, holder, until, deliveries, state"
_CHUNK = 1 << 16
_RUN_BATCH = 256  # finished tasks looked at per query while compacting the head


_STATES = frozenset({Q.OPEN, Q.DONE, Q.DYING, Q.DEAD})


def _damaged(where: str, why: str) -> CorruptState:
    """A value in the queue state that ackdeck never writes (a hand edit, another program):
    one line naming the file, never a traceback nor a wrong claim."""
    return CorruptState(
        f"queue state {where} holds what ackdeck never writes: {why}; move it aside to start "
        "the queue afresh (every line becomes claimable again)"
    )


def _count(value: object, what: str, where: str, least: int = 0) -> int:
    """`value` if it is an integer of at least `least` (SQLite keeps any type in any column)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise _damaged(where, f"{what} is {repr(value)[:40]}, not a whole number from {least}")
    return value


def _task(row: tuple, where: str) -> Q.Task:
    offset, length, sha, token, holder, until, deliveries, state = row
    _count(offset, "a task's offset", where)
    _count(length, f"the length of the task at {offset}", where, 1)
    _count(token, f"the token of the task at {offset}", where, 1)
    _count(deliveries, f"the deliveries of the task at {offset}", where)
    if not isinstance(sha, str) or not isinstance(holder, str) or state not in _STATES:
        why = f"the task at {offset} has a digest, holder or state ackdeck never wrote"
        raise _damaged(where, why)
    if isinstance(until, bool) or not isinstance(until, int | float) or until != until:
        raise _damaged(where, f"the lease end of the task at {offset} is {repr(until)[:40]}")
    return Q.Task(
        offset=offset,
        length=length,
        sha256=sha,
        token=token,
        holder=holder,
        until=until,
        deliveries=deliveries,
        state=state,
    )


def _row(t: Q.Task) -> tuple:
    return (t.offset, t.length, t.sha256, t.token, t.holder, t.until, t.deliveries, t.state)


def line_at(fd: int, at: int, size: int) -> bytes | None:
    """The complete line starting at byte `at` of the file open at `fd` (`size` bytes
    settled), or None when no newline ends it yet (a write in progress is never a task).
    Linear in the line: its chunks are joined once (growing one bytes object chunk by chunk
    took 14 s to claim a 50 MB line)."""
    pieces: list[bytes] = []
    pos = at
    while pos < size:
        got = os.pread(fd, min(_CHUNK, size - pos), pos)
        if not got:
            return None
        nl = got.find(b"\n")
        if nl >= 0:
            pieces.append(got[: nl + 1])
            return b"".join(pieces)
        pieces.append(got)
        pos += len(got)
    return None


class State:
    """The queue's SQLite state, open for one operation (the room's exclusive lock held)."""

    def __init__(self, path: str) -> None:
        try:
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        except sqlite3.Error as exc:
            raise RoomUnavailable(f"cannot open the queue state {path}: {exc}") from None
        self.path = path
        try:
            # FULL: each commit is on disk before the lock is released (a done survives a
            # power cut too). The default rollback journal: WAL measured no faster here (its
            # last connection checkpoints on close, and every operation is one connection)
            # and would add two more files to the sidecar.
            self.db.execute("PRAGMA synchronous = FULL")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version < 2:
                self.db.executescript(
                    "BEGIN IMMEDIATE;"
                    + (_SCHEMA if version == 0 else "")
                    + _CLAIMS
                    + "PRAGMA user_version = 2; COMMIT;"
                )
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise CorruptState(
                f"queue state {path} cannot be read ({exc}); move it aside to start the "
                "queue afresh (every line becomes claimable again)"
            ) from None

    def close(self) -> None:
        self.db.close()

    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def get(self, key: str) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def number(self, key: str, default: int) -> int:
        """The whole number kept under `key` (`default` when none is): a text or a float
        there (`frontier` 1e300 stalled the queue silently) is damage, named in one line."""
        value = self.get(key)
        return default if value is None else _count(value, key, self.path)

    def queue_id(self) -> str:
        value = self.get("queue_id")
        if not isinstance(value, str) or not value.isalnum():  # a token is NUMBER-ID
            raise _damaged(self.path, f"queue_id is {repr(value)[:40]}, not letters and digits")
        return value

    def put(self, key: str, value: object) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def task(self, offset: int) -> Q.Task | None:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM tasks WHERE offset = ?", (offset,))
        got = row.fetchone()
        return None if got is None else _task(got, self.path)

    def task_of_token(self, token: int) -> Q.Task | None:
        row = self.db.execute("SELECT offset FROM tokens WHERE token = ?", (token,)).fetchone()
        return None if row is None else self.task(row[0])

    def save(self, task: Q.Task) -> None:
        self.db.execute(
            f"INSERT OR REPLACE INTO tasks ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)", _row(task)
        )

    def issue(self, offset: int) -> int:
        """A new fencing number, for the task at `offset` (monotonic per room, persisted)."""
        token = self.number("next_token", 1) or 1
        self.put("next_token", token + 1)
        self.db.execute("INSERT INTO tokens VALUES (?, ?)", (token, offset))
        return token

    def oldest_claimable(self, now: float) -> Q.Task | None:
        """The open task of lowest offset whose lease ended (through the lease-end index:
        the work grows with the expired tasks, not with the claimed ones)."""
        row = self.db.execute(
            f"SELECT {_COLUMNS} FROM tasks WHERE state = 'open' AND until <= ? "
            "ORDER BY offset LIMIT 1",
            (now,),
        ).fetchone()
        return None if row is None else _task(row, self.path)

    def dying(self) -> list[Q.Task]:
        # Through the partial index: every operation asks, and almost always none is dying.
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM tasks INDEXED BY tasks_dying WHERE state = 'dying'"
        )
        return [_task(r, self.path) for r in rows.fetchall()]

    def head(self, base: int) -> Iterator[Q.Task]:
        """The tasks from logical `base` on, in offset order (fetched in batches)."""
        at, batch = base, 1  # most heads are decided by their first task: fetch it alone
        while True:
            rows = self.db.execute(
                f"SELECT {_COLUMNS} FROM tasks WHERE offset >= ? ORDER BY offset LIMIT ?",
                (at, batch),
            ).fetchall()
            for r in rows:
                yield _task(r, self.path)
            if len(rows) < batch:
                return
            at, batch = rows[-1][0] + 1, min(batch * 4, _RUN_BATCH)

    def claimed_by(self, task: Q.Task, now: float) -> None:
        """Record the claim `task` now is (its token, holder and lease)."""
        self.db.execute(
            "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, '')",
            (task.token, task.offset, task.holder, now, task.until),
        )
        if task.token % 1024 == 0:  # now and then, the oldest records beyond CLAIMS_KEPT
            self.db.execute("DELETE FROM claims WHERE token <= ?", (task.token - CLAIMS_KEPT,))

    def claim_ended(self, token: int, end: str, until: float | None = None) -> None:
        if until is None:
            self.db.execute("UPDATE claims SET ended = ? WHERE token = ?", (end, token))
        else:
            self.db.execute(
                "UPDATE claims SET ended = ?, until = ? WHERE token = ?", (end, until, token)
            )

    def forget_before(self, base: int) -> None:
        """Tasks (and their tokens) of lines that left the room."""
        self.db.execute("DELETE FROM tasks WHERE offset < ?", (base,))
        self.db.execute("DELETE FROM tokens WHERE offset < ?", (base,))

    def reset(self, epoch: int, base: int) -> None:
        """The room was rewritten behind ackdeck's back: every lease is dropped."""
        self.db.execute("DELETE FROM tasks")
        self.db.execute("DELETE FROM tokens")
        self.db.execute("DELETE FROM claims")  # offsets name other lines in a new epoch
        self.put("epoch", epoch)
        self.put("frontier", base)


class FileQueue:
    """A file room's work queue. `room` is the Room (core/rooms/file/room.py); `fencing` is
    off only in the test that shows what the fencing check prevents."""

    def __init__(self, room: Room, *, fencing: bool = True) -> None:
        self.room = room
        self.clock: Callable[[], float] = room._clock
        self.fencing = fencing

    @property
    def state_file(self) -> str:
        return str(locations.queue_state(self.room.sidecar))

    @contextmanager
    def _state_errors(self) -> Iterator[None]:
        """A queue state SQLite cannot use (damaged, a full disk) is one line, not a
        traceback; the transaction it interrupted was rolled back by SQLite."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorcode == sqlite3.SQLITE_FULL:
                # Not damage: moving the state aside would hand every claimed line out again.
                raise RoomUnavailable(
                    f"queue state {self.state_file}: the disk is full; nothing changed, try "
                    "again once there is space"
                ) from None
            raise CorruptState(
                f"queue state {self.state_file} cannot be used ({exc}); if it is damaged, "
                "move it aside to start the queue afresh (every line becomes claimable again)"
            ) from None
        except sqlite3.Error as exc:
            raise RoomUnavailable(f"queue state {self.state_file}: {exc}") from None

    def _policy(self) -> RoomPolicy:
        """The room's policy, refused unless it makes the room a queue."""
        pol = self.room.policy()
        if not pol.queue:
            # A symlink, a directory or a FIFO reads as "no policy": say what it is, not to
            # make it a queue (`room policy` refuses it too).
            self.room._check_kind()
            raise InvalidInput(
                f"room {self.room.path} is not a queue; make it one with "
                f"`ackdeck room policy {self.room.path} --queue on`"
            )
        return pol

    def _open(self, site: AckSite, fd: int) -> tuple[State, L.Ledger, int]:
        """The ack's upkeep, then the state checked against the room's epoch and base."""
        ledger, _ = site.settle(fd)
        site.sidecar.remove_leftovers(ledger)
        ledger, _ = site.sweep_all(ledger)
        state = State(self.state_file)
        try:
            state.begin()
            changes = state.db.total_changes
            if state.get("queue_id") is None:
                state.put("queue_id", secrets.token_hex(4))
                state.put("epoch", ledger.epoch)
                state.put("frontier", ledger.base)
            elif state.get("epoch") != ledger.epoch:
                state.reset(ledger.epoch, ledger.base)
            state.queue_id()  # checked before any token is made of it
            frontier = state.number("frontier", 0)
            if frontier < ledger.base:
                state.put("frontier", ledger.base)
            state.forget_before(ledger.base)
            buried = self._bury_dying(state, fd, ledger.base)
            if state.db.total_changes != changes:
                # The upkeep stands on its own: a refusal after it must not undo it.
                state.commit()
                state.begin()
        except BaseException:
            state.rollback()
            state.close()
            raise
        return state, ledger, buried

    @staticmethod
    def _end(state: State, ok: bool) -> None:
        if ok:
            state.commit()
        else:
            state.rollback()

    # ----- claim ---------------------------------------------------------------------------
    def claim(
        self,
        session: str,
        lease: float | None = None,
        deliver: Callable[[Q.Claim], None] | None = None,
    ) -> Q.Claim:
        """Hand out the oldest claimable line. `deliver` (a door's write of the claim) runs
        once the claim is committed, the room's lock still held; if it raises, the claim is
        undone (the task as it was, its token never issued again: part of the claim may have
        reached someone): a claim that never reached its claimant (a full disk, a closed
        pipe) is neither a lease nobody holds nor a delivery (which, past max_deliveries, sent
        a line nobody saw to the dead-letter room). A kill -9 before the undo leaves the claim
        committed, as without `deliver`: its lease ends and the line is claimed again."""
        with self._state_errors():
            return self._claim(session, lease, deliver)

    def _claim(
        self, session: str, lease: float | None, deliver: Callable[[Q.Claim], None] | None
    ) -> Q.Claim:
        seconds = Q.check_lease(lease)
        pol = self._policy()
        with self.room.exclusively() as (fd, site):
            if fd is None:
                return self._nothing(seconds, 0, "the room does not exist yet")
            state, ledger, moved = self._open(site, fd)
            try:
                got, line, qid, finished, moved, undo = self._claim_in(
                    state, fd, ledger, session, seconds, pol, moved
                )
                if got is not None and deliver is not None:
                    try:
                        deliver(self._claimed(got, line, qid, seconds, moved))
                    except BaseException:
                        self._unclaim(state, got, undo)
                        raise
                if finished:
                    self._compact(fd, site, state)
            finally:
                state.close()
        if moved and pol.owner is not None:
            deadletter.tell_owner(
                self.room._home,
                pol.owner,
                self.room.path,
                moved,
                pol.max_deliveries or 0,
                self.clock,
            )
        if got is None:
            return self._nothing(seconds, moved, "no unclaimed line waits")
        return self._claimed(got, line, qid, seconds, moved)

    def _claim_in(
        self,
        state: State,
        fd: int,
        ledger: L.Ledger,
        session: str,
        seconds: float,
        pol: RoomPolicy,
        moved: int,
    ) -> tuple[Q.Task | None, bytes | None, str, bool, int, Q.Task | int | None]:
        """The claim's transaction: (the task handed out or None, its line, the queue id,
        whether finished lines wait at the head, how many lines were dead-lettered, what
        undoes the claim: the task as it was before, or the frontier before a first claim)."""
        dead_room = deadletter.dead_room_path(self.room.path)
        line: bytes | None = None
        got: Q.Task | None = None
        ok = False
        undo: Q.Task | int | None = None
        try:
            qid = state.queue_id()
            now = self.clock()
            size = settled_size(fd)
            while got is None:
                task = state.oldest_claimable(now)
                if task is None:
                    break
                line = self._line_of(fd, ledger.base, size, task)
                if line is None:
                    # Not the line it was (cannot happen without a new epoch): forget it.
                    state.db.execute("DELETE FROM tasks WHERE offset = ?", (task.offset,))
                elif Q.goes_dead(task, pol.max_deliveries) and deadletter.prepare(fd, dead_room):
                    # Dying first, committed: from here no holder can complete it (a done of
                    # a line also in the dead-letter room would be one task twice).
                    state.save(task.replace(state=Q.DYING))
                    state.commit()
                    state.begin()
                    moved += self._bury(state, fd, dead_room, line, task)
                else:
                    got = Q.claimed(task, state.issue(task.offset), session, now, seconds)
                    undo = task
            if got is None:
                frontier = state.number("frontier", ledger.base)
                line = line_at(fd, frontier - ledger.base, size)
                if line is not None:
                    token = state.issue(frontier)
                    got = Q.first_claim(
                        frontier, len(line), L.sha256(line), token, session, now, seconds
                    )
                    state.put("frontier", frontier + len(line))
                    undo = frontier
            if got is not None:
                state.save(got)
                state.claimed_by(got, now)
            # Finished lines at the head (dead-lettered now, or by an earlier operation that
            # could not remove them) leave after the commit.
            finished = Q.head_run(ledger.base, state.head(ledger.base)) is not None
            pause("queue-before-claim-commit")
            ok = True
        finally:
            self._end(state, ok)
        return got, line, qid, finished, moved, undo

    @staticmethod
    def _unclaim(state: State, got: Q.Task, undo: Q.Task | int | None) -> None:
        """Undo a committed claim its claimant never received (the room's lock still held
        since, so nothing else changed): the task as it was, or no task and the frontier
        back. `next_token` stays past its token, and the token's row stays: a claimant that
        saw part of the claim is refused, never taken for a later holder."""
        state.begin()
        if isinstance(undo, Q.Task):
            state.save(undo)
        else:
            state.db.execute("DELETE FROM tasks WHERE offset = ?", (got.offset,))
            state.put("frontier", got.offset if undo is None else undo)
        state.commit()

    def _claimed(
        self, got: Q.Task, line: bytes | None, qid: str, seconds: float, moved: int
    ) -> Q.Claim:
        token_s = Q.token_text(got.token, qid)
        return Q.Claim(
            room="",
            path=str(self.room.path),
            claimed=True,
            token=token_s,
            offset=got.offset,
            line=line,
            deliveries=got.deliveries,
            lease_until=got.until,
            lease_seconds=seconds,
            dead_lettered=moved,
            message=(
                f"claimed the line at offset {got.offset} (delivery {got.deliveries}) until "
                f"the lease ends in {seconds:g} s"
            ),
            next=f"work on it, then `done {token_s}` (or `extend {token_s}` before the lease "
            f"ends, `release {token_s}` to give it back)",
        )

    def _nothing(self, seconds: float, moved: int, why: str) -> Q.Claim:
        return Q.nothing_claimed(str(self.room.path), seconds, moved, why)

    @staticmethod
    def _line_of(fd: int, base: int, size: int, task: Q.Task) -> bytes | None:
        """The task's line as the room holds it, or None if it is not there any more."""
        at = task.offset - base
        if at < 0 or at + task.length > size:
            return None
        line = os.pread(fd, task.length, at)
        if len(line) != task.length or L.sha256(line) != task.sha256:
            return None
        return line

    def _bury(self, state: State, fd: int, dead_room: Path, line: bytes, task: Q.Task) -> int:
        """Append a dying task's line to the dead-letter room, then mark it dead (1), or leave
        it dying for the next operation (0) when that room cannot take it now. A kill between
        the append and the mark appends it again: a duplicate there, never a loss."""
        from ackdeck.core.rooms.file.room import Room

        dead = Room(dead_room, clock=self.clock, door=self.room.door)
        try:
            dead.append_dead(line)
        except (AckdeckError, OSError):
            return 0
        finally:
            dead.close()
        pause("queue-after-dead-append")
        state.save(task.replace(state=Q.DEAD))
        state.claim_ended(task.token, "dead")
        return 1

    def _bury_dying(self, state: State, fd: int, base: int) -> int:
        """Finish what a killed claim left dying (exclusive lock held, in a transaction)."""
        dead_room = deadletter.dead_room_path(self.room.path)
        moved = 0
        size = settled_size(fd)
        for task in state.dying():
            line = self._line_of(fd, base, size, task)
            if line is not None and deadletter.prepare(fd, dead_room):
                moved += self._bury(state, fd, dead_room, line, task)
        return moved

    # ----- done, extend, release -------------------------------------------------------------
    def update(self, token_text: str, op: str, lease: float | None = None) -> Q.TaskUpdate:
        """Done, extend or release with `token_text`; refused (TokenRefused, one line) unless
        it is the line's current lease."""
        with self._state_errors():
            return self._update(token_text, op, lease)

    def _update(self, token_text: str, op: str, lease: float | None) -> Q.TaskUpdate:
        if op not in Q.OPS:
            raise InvalidInput(f"invalid operation {op!r}: one of {', '.join(Q.OPS)}")
        number, qid = Q.parse_token(token_text)
        seconds = Q.check_lease(lease)
        self._policy()
        removed = 0
        with self.room.exclusively() as (fd, site):
            if fd is None:
                raise Q.TokenRefused(f"token {token_text} refused: room {self.room.path} is gone")
            state, ledger, buried = self._open(site, fd)
            try:
                ok = False
                try:
                    if state.queue_id() != qid:
                        raise Q.TokenRefused(
                            f"token {token_text} refused: it was issued by another queue "
                            "state (the queue was started afresh); claim again"
                        )
                    now = self.clock()
                    task = state.task_of_token(number)
                    verdict = Q.check_token(task, number, op, now, fencing=self.fencing)
                    if not verdict.ok or task is None:
                        raise Q.TokenRefused(
                            f"token {token_text} refused: {verdict.reason}; nothing changed"
                        )
                    if verdict.mode != "noop":
                        task = Q.applied(task, op, now, seconds)
                        state.save(task)
                        if op == "extend":
                            state.claim_ended(task.token, "", task.until)
                        else:  # released: its lease ended now; done: it ended so
                            ended = "done" if op == "done" else "released"
                            state.claim_ended(task.token, ended, now if ended != "done" else None)
                    pause("queue-before-update-commit")
                    ok = True
                finally:
                    self._end(state, ok)
                pause("queue-after-update-commit")
                if op == "done" or buried:
                    removed = self._compact(fd, site, state)
            finally:
                state.close()
        return self._updated(token_text, op, verdict.mode, task, removed, seconds)

    def _updated(
        self, token: str, op: str, mode: str, task: Q.Task, removed: int, seconds: float
    ) -> Q.TaskUpdate:
        if mode in ("done", "noop"):
            msg = "done" if mode == "done" else "done already (this token's own done)"
            nxt = "claim the next task"
        elif mode == "extended":
            msg = f"lease renewed for {seconds:g} s"
            nxt = f"`extend {token}` again before it ends, or `done {token}`"
        else:
            msg = "released: the line is claimable again"
            nxt = "claim a task"
        return Q.TaskUpdate(
            room="",
            path=str(self.room.path),
            token=token,
            mode=mode,
            offset=task.offset,
            lease_until=task.until if mode == "extended" else None,
            removed=removed,
            message=f"{msg} (line at offset {task.offset})",
            next=nxt,
        )

    # ----- the head leaves the room ----------------------------------------------------------
    def _compact(self, fd: int, site: AckSite, state: State) -> int:
        """Drop the finished lines at the head through the ack's transaction, one run per
        kind and holder; how many left. Never fails the completion that already happened."""
        removed = 0
        try:
            while True:
                ledger, _ = site.settle(fd)
                run = Q.head_run(ledger.base, state.head(ledger.base))
                if run is None:
                    return removed
                kind, holder, drop = run
                head = os.pread(fd, drop, 0)
                if len(head) != drop or not head.endswith(b"\n"):
                    return removed
                dead = str(deadletter.dead_room_path(self.room.path)) if kind == Q.DEAD else None
                done = AckTransaction(
                    site,
                    fd=fd,
                    size=settled_size(fd),
                    ledger=ledger,
                    session=holder,
                    plan=L.AckPlan("prefix", drop),
                    acked=head.count(b"\n"),
                    digest=L.sha256(head),
                    dead=dead,
                ).run()
                if done is None or done.mode != "prefix":
                    return removed
                removed += head.count(b"\n")
                pause("queue-after-compact")
                state.begin()
                state.forget_before(ledger.base + drop)
                state.commit()
                # The room file was replaced: later runs read the new one.
                new_fd = self.room._open()
                if new_fd is None:
                    return removed
                os.dup2(new_fd, fd)
                os.close(new_fd)
        except OSError as exc:
            state.rollback()
            raise write_error(self.room.path, exc) from None
        except (AckdeckError, sqlite3.Error):
            state.rollback()
            return removed  # the next operation removes them

    # ----- looks (read-only: no lock, no upkeep, nothing written) ----------------------------
    def _reader(self) -> sqlite3.Connection | None:
        """The state open read-only (None: no queue state yet, or one without the tables a
        look needs: written before version 2, until the next claim upgrades it)."""
        path = self.state_file
        if not os.path.isfile(path):
            return None
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
            if db.execute("PRAGMA user_version").fetchone()[0] < 2:
                db.close()
                return None
        except sqlite3.Error as exc:
            raise CorruptState(f"queue state {path} cannot be read ({exc})") from None
        return db

    def history(self, offset: int) -> list[tuple[str, float, int, float, str]]:
        """The claims of the line at logical `offset`, oldest first (for `room trace`):
        (holder, at, token, lease end, how it ended: released, done, dead or "")."""
        with self._state_errors():
            db = self._reader()
            if db is None:
                return []
            try:
                rows = db.execute(
                    "SELECT holder, at, token, until, ended FROM claims WHERE offset = ? "
                    "ORDER BY token",
                    (offset,),
                ).fetchall()
            finally:
                db.close()
        return [(h, float(at), int(t), float(u), str(e)) for h, at, t, u, e in rows]

    def view(self, limit: int = 100) -> Q.QueueView:
        """What the queue holds now: leases running and ended, dead letters, and the
        `limit` oldest claimed lines with their holders (for the dashboard and metrics)."""
        now = self.clock()
        status = self.room.status()
        dead = status.dead_total
        with self._state_errors():
            db = self._reader()
            if db is None:
                return Q.QueueView(
                    claimed=0, expired=0, dead=dead, held=[], unclaimed=status.pending
                )
            try:
                qid = db.execute("SELECT value FROM meta WHERE key = 'queue_id'").fetchone()
                # Every task row is a line claimed at least once (those that left the room
                # are forgotten by the next operation: until then counted here, a look).
                (tasks,) = db.execute("SELECT COUNT(*) FROM tasks").fetchone()
                claimed, expired = db.execute(
                    "SELECT COALESCE(SUM(until > ?), 0), COALESCE(SUM(until <= ?), 0) "
                    "FROM tasks WHERE state = 'open'",
                    (now, now),
                ).fetchone()
                rows = db.execute(
                    "SELECT t.offset, t.holder, t.token, t.until, t.deliveries, c.at "
                    "FROM tasks t LEFT JOIN claims c ON c.token = t.token "
                    "WHERE t.state = 'open' ORDER BY t.offset LIMIT ?",
                    (limit,),
                ).fetchall()
            finally:
                db.close()
        held = [
            Q.Held(
                offset=o,
                holder=h,
                token=Q.token_text(t, str(qid[0]) if qid else ""),
                claimed_at=at,
                until=u,
                deliveries=d,
            )
            for o, h, t, u, d, at in rows
        ]
        return Q.QueueView(
            claimed=int(claimed),
            expired=int(expired),
            dead=dead,
            held=held,
            unclaimed=max(0, status.pending - int(tasks)),
        )

    # ----- the owner's dead letter ----------------------------------------------------------
    def dead_letter(self, token_text: str) -> Q.TaskUpdate:
        """Move the line claimed with `token_text` (its current lease, running or ended) to
        the dead-letter room: the owner's act on a line no agent can finish. Dying first,
        committed (its holder can no longer complete it), appended, then dead, as a claim
        past max_deliveries does; refused (TokenRefused) unless the token is current."""
        with self._state_errors():
            number, qid = Q.parse_token(token_text)
            self._policy()
            dead_room = deadletter.dead_room_path(self.room.path)
            with self.room.exclusively() as (fd, site):
                if fd is None:
                    raise Q.TokenRefused(f"token {token_text} refused: the room is gone")
                state, ledger, _ = self._open(site, fd)
                try:
                    ok = False
                    try:
                        if str(state.get("queue_id")) != qid:
                            raise Q.TokenRefused(
                                f"token {token_text} refused: it was issued by another queue "
                                "state; nothing changed"
                            )
                        task = state.task_of_token(number)
                        verdict = Q.check_token(task, number, "dead", self.clock())
                        if not verdict.ok or task is None:
                            raise Q.TokenRefused(
                                f"token {token_text} refused: {verdict.reason}; nothing changed"
                            )
                        line = self._line_of(fd, ledger.base, settled_size(fd), task)
                        if line is None or not deadletter.prepare(fd, dead_room):
                            raise RoomUnavailable(
                                f"the dead-letter room {dead_room} cannot take the line; "
                                "nothing changed"
                            )
                        state.save(task.replace(state=Q.DYING))
                        state.commit()
                        state.begin()
                        moved = self._bury(state, fd, dead_room, line, task)
                        ok = True
                    finally:
                        self._end(state, ok)
                    removed = self._compact(fd, site, state)
                finally:
                    state.close()
        return Q.TaskUpdate(
            room="",
            path=str(self.room.path),
            token=token_text,
            mode="dead",
            offset=task.offset,
            removed=removed,
            message=(
                f"moved the line at offset {task.offset} to the dead-letter room {dead_room}"
                if moved
                else f"the line at offset {task.offset} is dying: the next operation moves it"
            ),
            next="claim the next task",
        )

    def done_next(
        self, token_text: str, session: str, lease: float | None = None
    ) -> tuple[Q.TaskUpdate, Q.Claim | None]:
        """Done with `token_text`, then a claim for `session` (the redis queue does both in
        one script; here they are two operations, each under the room's lock)."""
        Q.check_lease(lease)
        done = self.update(token_text, "done")
        return done, self.claim(session, lease)
