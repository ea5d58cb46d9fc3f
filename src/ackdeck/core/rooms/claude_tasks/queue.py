"""A Claude Code task list as a work-queue room (`claude-tasks://LIST`, issue 45 item 2): each
task goes to one claimer at a time, under a lease and a fencing token, with the rules of every
queue room (core/rooms/queue.py); the tasks stay Claude Code's.

What is written where:

- **Claude Code's task file** (`tasks/LIST/N.json`) gets only what its own tools write: a claim
  sets `owner` and `status: in_progress`; done sets `status: completed`; a release or an
  expired lease removes `owner` and sets `status: pending` (as Claude Code gives back a
  departed teammate's task). Each change holds Claude Code's per-task lock (proper-lockfile on
  `N.json`, core/clients/claude_code/lock.py) and replaces the file whole.
- **ackdeck's own state** (`$ACKDECK_HOME/claude-tasks/LIST.json`, under its flock) keeps the
  leases: token, holder, until, deliveries, and the version (a digest) of the bytes the claim
  wrote. Nothing of it goes into Claude Code's file.

**A claim that is not ackdeck's is shown, never overwritten.** Only a task that is pending,
has no owner and waits on nothing unfinished is handed out; one held by anyone else (a
teammate through Claude Code's TaskUpdate, a blind writer) is named in the claim's message.
A release or an expiry gives a task back only if its file is still the bytes our claim wrote
(anything else changed it: it is left as it is, the lease dropped, and the result says what
changed); done needs the file to still name the holder as owner, in progress.

Order, for a kill -9 anywhere: a claim records its lease (fsynced) before it writes the task,
so a crash in between leaves a lease whose version the file never had: when it ends, the task
is found unchanged-by-us and simply stays (or becomes) claimable. done and release write the
task first, then the state; a crash in between leaves a lease whose file moved on, dropped
when it ends. A task is never handed out while a live lease of ours holds it.

**Dead letters** (`room policy claude-tasks://LIST --max-deliveries N`, kept in ackdeck's
state: a task list is always a queue and has no policy file of Claude Code's): a task whose
lease ended after N deliveries is not handed out again. Its file is left as Claude Code has
it (given back at the lease's end when it was still our claim's bytes, else as whoever
changed it left it: never overwritten); ackdeck marks it dead, so it never hands it out
again, and one line naming it (the list, the task's id and subject, the claims, the last
holder) goes to the dead-letter room `$ACKDECK_HOME/claude-tasks/LIST.dead`, a file room.
The line is appended before the task is marked dead: a kill -9 between the two appends it
again at the next claim (a duplicate there, never a loss). Claude Code's own teammates may
still take the task with TaskUpdate: the dead letter is ackdeck's queue giving up on it, as
a redis or file queue's is; the owner (the policy's `owner`) gets a wake.

**Trace** (`room trace claude-tasks://LIST N`): each claim of task N (holder, when, token),
how its lease ended (ran out, released, done, dead), from the claims ackdeck keeps in its
state (the newest CLAIMS_KEPT of the list).

Differences from a file queue, by nature: a lease that expired is given back to Claude Code at
once (its teammates may take it), so a late `done` of that token is refused rather than
counted.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import atomic, faults, locations
from ackdeck.core.base.digest import sha256_hex
from ackdeck.core.base.locks import locked
from ackdeck.core.base.names import check_name
from ackdeck.core.base.statefile import load_record, store_record
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.text import counted
from ackdeck.core.clients.claude_code import tasks as tk
from ackdeck.core.clients.claude_code.lock import TASK_RETRY_DELAYS_S, MailboxLock
from ackdeck.core.errors import (
    AckdeckError,
    BadRecord,
    CorruptState,
    InvalidInput,
    MailboxLocked,
    TokenRefused,
)
from ackdeck.core.rooms import queue as Q
from ackdeck.core.rooms.policy import check_deliveries
from ackdeck.core.rooms.queue import Task

if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.journey import Journey
    from ackdeck.core.rooms.policy import RoomPolicy

SCHEME = "claude-tasks://"
# Claims kept for `room trace` (the newest; a task list holds tens of tasks, claimed a few
# times each).
CLAIMS_KEPT = 2000


class ClaimRecord(Struct, kw_only=True):
    """One claim of a task and how its lease ended (for `room trace`)."""

    task: int
    session: str
    at: float
    token: int
    until: float  # when the lease ends or ended (released, dead: when that happened)
    end: str = ""  # released, done, dead; "" while it runs or after it ran out


class QueueState(Struct, kw_only=True):
    """ackdeck's leases on one task list. A lease is a queue Task whose `offset` is the task's
    id and whose `sha256` is the version of the file its claim wrote. The policy's
    max_deliveries and owner live here too (`room policy`: Claude Code's list has no place
    for them)."""

    queue_id: str
    next_token: int = 1
    tasks: list[Task] = []
    max_deliveries: int | None = None
    owner: str | None = None
    dead_total: int = 0  # tasks ever moved to the dead-letter room
    claims: list[ClaimRecord] = []


class _Leases:
    """QueueState while one operation changes it (under the state's lock)."""

    def __init__(self, rec: QueueState) -> None:
        self.queue_id = rec.queue_id
        self.next_token = rec.next_token
        self.tasks = list(rec.tasks)
        self.max_deliveries = rec.max_deliveries
        self.owner = rec.owner
        self.dead_total = rec.dead_total
        self.claims = list(rec.claims)

    def record(self) -> QueueState:
        return QueueState(
            queue_id=self.queue_id,
            next_token=self.next_token,
            tasks=self.tasks,
            max_deliveries=self.max_deliveries,
            owner=self.owner,
            dead_total=self.dead_total,
            claims=self.claims[-CLAIMS_KEPT:],
        )

    def claim_ended(self, token: int, end: str, until: float | None = None) -> None:
        """The claim record of `token` ended as `end` (released, done, dead), at `until`."""
        self.claims = [
            c.replace(end=end, until=c.until if until is None else until) if c.token == token else c
            for c in self.claims
        ]

    def claim_extended(self, token: int, until: float) -> None:
        self.claims = [c.replace(until=until) if c.token == token else c for c in self.claims]


def version_of(raw: bytes) -> str:
    """As `ackdeck tasks` shows a task's version (core/service/claude_tasks.py)."""
    return sha256_hex(raw)[:12]


def _read(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(tk.MAX_BYTES + 1)
    except FileNotFoundError:
        return None


def held_by_other(doc: dict, ours: Q.Task | None, now: float) -> str | None:
    """Who holds this task if not a live lease of ours (None: nobody, or us)."""
    owner = doc.get("owner")
    if doc.get("status") == "completed" or not owner:
        return None
    if ours is not None and ours.state == Q.OPEN and ours.holder == owner and ours.until > now:
        return None
    return str(owner)


class ClaudeTasksQueue:
    """The queue operations on one task list (the doors reach it through
    core/service/queue.py)."""

    def __init__(
        self,
        home: Path,
        tasks_dir: Path,
        task_list: str,
        *,
        clock: Callable[[], float] = time.time,
        spec: str | None = None,
    ) -> None:
        if not task_list or locations.claude_name(task_list) != task_list:
            raise InvalidInput(f"{task_list!r}: not a task list (letters, digits, _ and - only)")
        self.home = home
        self.task_list = task_list
        self.dir = tasks_dir / task_list
        self.spec = spec or f"{SCHEME}{task_list}"
        self._clock = clock

    # ----- the room interface (core/rooms/room_backend.py) -----------------------------------
    # A task list is a queue only: its tasks are created and changed by Claude Code's own tools,
    # and shown by `ackdeck tasks`. Everything an inbox does is refused in one line.
    PROVES_SHOWN = False

    @property
    def path(self) -> Path:
        return self.dir

    @property
    def path_text(self) -> str:
        return str(self.dir)

    def close(self) -> None:
        pass

    def exists(self) -> bool:
        return self.dir.is_dir()

    def _refused(self, what: str) -> InvalidInput:
        return InvalidInput(
            f"{self.spec} is a Claude Code task list used as a queue: it cannot be {what} (use "
            "`ackdeck claim`, `done`, `extend`, `release`; `ackdeck tasks` shows every task)"
        )

    def push(self, line: str | bytes) -> int:
        raise self._refused("pushed to (tasks are created with Claude Code's TaskCreate)")

    def read(self, session: str, **_kw: object) -> object:
        raise self._refused("read")

    def ack(self, session: str, **_kw: object) -> object:
        raise self._refused("acked")

    def status(self, counts: object = None) -> object:
        raise self._refused("shown by room status")

    def tail(self, count: int) -> list[bytes]:
        raise self._refused("tailed")

    def first_seen(self, start: int | str, length: int) -> float | None:
        return None

    def trace(self, offset: int | str) -> Journey:
        """Task `offset`'s journey through the queue: its subject, whether it is still open in
        Claude Code's list, and (the service adds them from `history`) each claim and how its
        lease ended. Reads only."""
        from ackdeck.core.rooms.journey import Journey

        task_id = str(offset).strip()
        if not task_id.isdigit() or len(task_id) > 18:
            raise InvalidInput(
                f"{str(offset)[:60]!r} is not a task id (a number, as `ackdeck tasks` shows)"
            )
        raw = _read(self._task_path(task_id))
        doc = None if raw is None else _load_or_none(raw)
        rec = self._peek()
        claims = [c for c in rec.claims if c.task == int(task_id)]
        if raw is None and not claims:
            raise InvalidInput(f"{self.spec}: no task {task_id} (and no claim of it kept)")
        dead = claims[-1] if claims and claims[-1].end == "dead" else None
        return Journey(
            offset=int(task_id),
            present=doc is not None and doc.get("status") != "completed",
            text=None if doc is None else _one_line(str(doc.get("subject", ""))).encode(),
            pushed_at=None,
            pushed=False,
            reads=[],
            claims=[],  # each claim, added by the service's trace (`history`)
            dead_at=None if dead is None else dead.until,
            dead_room=None if dead is None else str(self.dead_room),
        )

    def history(self, offset: int | str) -> list[tuple[str, float, int, float, str]]:
        """The claims of task `offset`, oldest first (for `room trace`): (holder, at, token,
        lease end, how it ended: released, done, dead or "")."""
        n = int(offset)
        return [
            (c.session, c.at, c.token, c.until, c.end) for c in self._peek().claims if c.task == n
        ]

    def find(self, text: str | bytes) -> tuple[list[int | str], int]:
        raise self._refused("searched")

    def wait_acked(
        self, offset: int | str, timeout: float | None = None, stop: object = None
    ) -> object:
        raise self._refused("waited on")

    def policy(self) -> RoomPolicy:
        """Always a queue; max_deliveries and owner as `room policy` set them (ackdeck's
        state)."""
        from ackdeck.core.rooms.policy import RoomPolicy

        rec = self._peek()
        return RoomPolicy(queue=True, max_deliveries=rec.max_deliveries, owner=rec.owner)

    def set_policy(self, policy: RoomPolicy) -> None:
        if not policy.queue:
            raise InvalidInput(f"{self.spec} is a Claude Code task list: always a queue")
        if policy.overdue is not None:
            raise InvalidInput(
                f"{self.spec}: --overdue does not apply to a task list (no line waits in it; "
                "`ackdeck tasks` shows each task's age)"
            )
        with locked(self._state_lock()):
            state = self._load()
            state.max_deliveries, state.owner = policy.max_deliveries, policy.owner
            self._store(state)

    def wait(self, session: str, timeout: float | None = None, stop: object = None) -> bool:
        raise self._refused("waited on")

    # ----- state ------------------------------------------------------------------------------
    def _state_lock(self) -> Path:
        d = locations.claude_tasks_queues_dir(self.home)
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        return locations.claude_tasks_queue_lock(self.home, self.task_list)

    def _load(self) -> _Leases:
        return _Leases(self._read_state() or QueueState(queue_id=secrets.token_hex(4)))

    def _peek(self) -> QueueState:
        """The state as last stored (a look: no lock, nothing written)."""
        return self._read_state() or QueueState(queue_id="")

    def _read_state(self) -> QueueState | None:
        """The stored state, refused in one line (CorruptState) when it holds what ackdeck
        never writes: a token made of a 30 MB queue id, or a negative next token, would be
        handed to agents that can never use it."""
        path = locations.claude_tasks_queue(self.home, self.task_list)
        mend = (
            "; move it aside to start the queue afresh (its leases and tokens are forgotten; "
            "Claude Code's tasks stay as they are)"
        )
        rec = load_record(path, QueueState, hint=mend)
        if rec is None:
            return None
        why = _unwritten(rec)
        if why is not None:
            raise CorruptState(f"corrupt state file {path} ({why}); it was left in place{mend}")
        return rec

    @property
    def dead_room(self) -> Path:
        return locations.claude_tasks_dead_room(self.home, self.task_list)

    def _store(self, state: _Leases) -> None:
        path = locations.claude_tasks_queue(self.home, self.task_list)
        store_record(path, state.record(), fsync=True)

    def _task_path(self, task_id: str) -> Path:
        return locations.claude_task(self.dir.parent, self.task_list, task_id)

    def _ids(self) -> list[str]:
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            raise InvalidInput(f"{self.spec}: no task list {self.dir}") from None
        ids = [n[: -len(".json")] for n in names if n.endswith(".json")]
        return sorted((i for i in ids if i.isdigit()), key=int)

    def _rewrite(self, path: Path, lock: MailboxLock, new: bytes) -> None:
        """Replace the task file (under its lock, still ours just before the rename)."""
        mode = os.stat(path).st_mode & 0o7777
        tmp = atomic.write_temp(path, [new], mode=mode)
        try:
            lock.check()
        except BaseException:
            os.unlink(tmp)
            raise
        atomic.replace(tmp, path)

    # ----- expiry -----------------------------------------------------------------------------
    def _expire(self, state: _Leases, now: float) -> list[str]:
        """Give back each task whose lease ended unreleased, if its file is still what our
        claim wrote; drop the leases whose file moved on. What happened, a line each."""
        notes = []
        keep = []
        for t in state.tasks:
            if t.state != Q.OPEN or t.until == 0 or t.until > now:
                keep.append(t)
                continue
            note = self._give_back(t, "lease expired")
            notes.append(note)
            keep.append(t.replace(until=0.0))
        state.tasks[:] = keep
        return notes

    def _give_back(self, t: Q.Task, why: str) -> str:
        path = self._task_path(str(t.offset))
        where = f"task {t.offset}"
        if not path.exists():
            return f"{where}: {why}; its file is gone"
        with MailboxLock(path, delays=TASK_RETRY_DELAYS_S) as lock:
            raw = _read(path)
            if raw is None:
                return f"{where}: {why}; its file is gone"
            if version_of(raw) != t.sha256:
                doc = _load_or_none(raw)
                now_is = (
                    f"owner {doc.get('owner') or 'none'}, status {doc.get('status')}"
                    if doc
                    else "not a task any more"
                )
                return f"{where}: {why}; changed since our claim ({now_is}), left as it is"
            faults.pause("claude-task-release")
            self._rewrite(path, lock, tk.dump(tk.released(tk.load(raw))))
        return f"{where}: {why}; given back (owner {t.holder} removed, status pending)"

    # ----- claim ------------------------------------------------------------------------------
    def claim(self, session: str, lease: float | None = None) -> Q.Claim:
        seconds = Q.check_lease(lease)
        with locked(self._state_lock()):
            state = self._load()
            now = self._clock()
            notes = self._expire(state, now)
            mine = {str(t.offset): t for t in state.tasks}
            docs: dict[str, tuple[dict, bytes]] = {}
            problems = []
            for task_id in self._ids():
                raw = _read(self._task_path(task_id))
                if raw is None:
                    continue
                try:
                    docs[task_id] = (tk.load(raw), raw)
                except BadRecord as exc:
                    problems.append(f"task {task_id}: {exc}")
            done_ids = {i for i, (d, _) in docs.items() if d.get("status") == "completed"}
            others: list[str] = []
            buried: list[str] = []
            for task_id, (doc, _raw) in docs.items():
                who = held_by_other(doc, mine.get(task_id), now)
                if who is not None:
                    others.append(f"task {task_id} by {who}")
                    continue
                ours = mine.get(task_id)
                if ours is not None and ours.state == Q.OPEN and ours.until > now:
                    continue  # a live lease of ours (its claim may not have reached the file)
                if ours is not None and ours.state == Q.DEAD:
                    continue  # dead-lettered: ackdeck never hands it out again
                if not tk.claimable(doc, done_ids):
                    continue
                dies = ours is not None and Q.goes_dead(ours, state.max_deliveries)
                if ours is not None and ours.state == Q.OPEN and dies:
                    # Delivered max_deliveries times: to the dead-letter room, not out again.
                    if self._bury(state, ours, doc, now):
                        buried.append(task_id)
                    continue
                try:
                    got = self._claim_one(state, task_id, session, now, seconds, done_ids)
                except MailboxLocked:
                    others.append(f"task {task_id} locked by Claude Code right now")
                    continue
                if got is not None:
                    self._tell_owner(state, buried)
                    dead = self._buried_notes(buried)
                    return got.replace(
                        message=_joined(got.message, notes, dead, others),
                        dead_lettered=len(buried),
                    )
            self._store(state)
        self._tell_owner(state, buried)
        what = "nothing to claim: no task is pending, unowned and unblocked"
        return Q.Claim(
            room=self.spec,
            path=str(self.dir),
            claimed=False,
            dead_lettered=len(buried),
            message=_joined(what, notes, self._buried_notes(buried), others, problems),
            next="claim again later (tasks are added with Claude Code's TaskCreate)",
        )

    # ----- dead letters ------------------------------------------------------------------------
    def _bury(self, state: _Leases, task: Q.Task, doc: dict, now: float) -> bool:
        """Append a line naming `task` to the dead-letter room, then mark it dead (True); or
        leave it for the next claim (False) when that room cannot take the line now. The
        task's file is not touched (it is as Claude Code has it)."""
        from ackdeck.core.rooms.file.room import Room

        subject = _one_line(str(doc.get("subject", "")))[:200]
        line = (
            f"{self.spec} task {task.offset}: {subject} (claimed "
            f"{counted(task.deliveries, 'time')} without a done, last by {task.holder}; left "
            "in Claude Code's list as it is)"
        )
        dead = Room(self.dead_room, clock=self._clock)
        try:
            dead.push(line)
        except (AckdeckError, OSError):
            return False
        finally:
            dead.close()
        faults.pause("claude-task-after-dead-append")
        state.tasks[:] = [
            t.replace(state=Q.DEAD, until=0.0) if t.offset == task.offset else t
            for t in state.tasks
        ]
        state.dead_total += 1
        state.claim_ended(task.token, "dead", now)
        self._store(state)
        return True

    def _buried_notes(self, buried: list[str]) -> list[str]:
        if not buried:
            return []
        ids = ", ".join(buried)
        return [f"task {ids} moved to the dead-letter room {self.dead_room}"]

    def _tell_owner(self, state: _Leases, buried: list[str]) -> None:
        if not buried or state.owner is None:
            return
        from ackdeck.core.monitors.room_wakes import tell

        text = (
            f"{self.spec}: {counted(len(buried), 'task')} claimed "
            f"{counted(state.max_deliveries or 0, 'time')} without a done moved to the "
            f"dead-letter room {self.dead_room}"
        )
        tell(self.home, state.owner, self.task_list, self.spec, "dead", text, count=len(buried),
             clock=self._clock)  # fmt: skip

    def _claim_one(
        self,
        state: _Leases,
        task_id: str,
        session: str,
        now: float,
        seconds: float,
        done_ids: set[str],
    ) -> Q.Claim | None:
        path = self._task_path(task_id)
        with MailboxLock(path, delays=TASK_RETRY_DELAYS_S) as lock:
            raw = _read(path)
            if raw is None:
                return None
            doc = tk.load(raw)
            if not tk.claimable(doc, done_ids):
                return None  # taken meanwhile (by Claude Code, under this lock): never ours
            new = tk.dump(tk.claimed(doc, session))
            token = state.next_token
            old = next((t for t in state.tasks if str(t.offset) == task_id), None)
            if old is None or old.state != Q.OPEN:
                mark = Q.first_claim(int(task_id), 0, version_of(new), token, session, now, seconds)
                if old is not None:
                    mark = mark.replace(deliveries=old.deliveries + 1)
            else:
                mark = Q.claimed(old, token, session, now, seconds).replace(sha256=version_of(new))
            state.next_token = token + 1
            state.tasks[:] = [t for t in state.tasks if str(t.offset) != task_id] + [mark]
            state.claims.append(
                ClaimRecord(
                    task=int(task_id), session=session, at=now, token=token, until=mark.until
                )  # fmt: skip
            )
            # The lease first: a crash before the file's write leaves a lease the file never
            # matched, which ends harmlessly; never a claimed task without its lease.
            self._store(state)
            faults.pause("claude-task-claim")
            self._rewrite(path, lock, new)
        return Q.Claim(
            room=self.spec,
            path=str(path),
            claimed=True,
            token=_token(token, state, task_id),
            offset=int(task_id),
            line=new,
            deliveries=mark.deliveries,
            lease_until=mark.until,
            lease_seconds=seconds,
            message=f"claimed task {task_id}: {doc.get('subject', '')}",
            next=f"done with token {_token(token, state, task_id)} when finished",
        )

    # ----- done, extend, release ----------------------------------------------------------------
    def update(self, token: str, op: str, lease: float | None = None) -> Q.TaskUpdate:
        number, queue_id = Q.parse_token(token)
        seconds = Q.check_lease(lease) if op == "extend" else 0.0
        base, _, task_id = queue_id.partition("t")
        with locked(self._state_lock()):
            state = self._load()
            now = self._clock()
            if base != state.queue_id or not task_id.isdigit():
                raise TokenRefused(f"{self.spec}: token {token} is not this queue's")
            self._expire(state, now)
            self._store(state)
            task = next((t for t in state.tasks if t.offset == int(task_id)), None)
            verdict = Q.check_token(task, number, op, now)
            if task is not None and verdict.ok and op != "done" and task.until == 0:
                verdict = Q.Verdict(False, "refused", "the lease ended and the task was given back")
            if task is not None and op == "done" and task.until == 0 and task.state == Q.OPEN:
                verdict = Q.Verdict(False, "refused", "the lease ended and the task was given back")
            if not verdict.ok:
                raise TokenRefused(f"{self.spec}: {op} refused: {verdict.reason}")
            assert task is not None
            if verdict.mode == "noop":
                return self._result(token, task, "noop", "already done with this token")
            message = self._apply(state, task, op, now, seconds)
            return self._result(token, _find(state, task), verdict.mode, message)

    def _apply(self, state: _Leases, task: Q.Task, op: str, now: float, seconds: float) -> str:
        path = self._task_path(str(task.offset))
        where = f"task {task.offset}"
        with MailboxLock(path, delays=TASK_RETRY_DELAYS_S) as lock:
            raw = _read(path)
            if raw is None:
                self._drop(state, task)
                raise TokenRefused(f"{self.spec}: {where} is gone; lease dropped")
            doc = tk.load(raw)
            owner, status = doc.get("owner"), doc.get("status")
            if op == "release":
                if version_of(raw) != task.sha256:
                    self._drop(state, task)
                    raise TokenRefused(
                        f"{self.spec}: release refused: {where} changed since our claim (owner "
                        f"{owner or 'none'}, status {status}); left as it is, lease dropped"
                    )
                self._rewrite(path, lock, tk.dump(tk.released(doc)))
                state.claim_ended(task.token, "released", now)
                self._set(state, Q.applied(task, op, now, seconds))
                return f"{where} given back: owner {task.holder} removed, status pending"
            if owner != task.holder or status != "in_progress":
                self._drop(state, task)
                raise TokenRefused(
                    f"{self.spec}: {op} refused: {where} is not {task.holder}'s any more (owner "
                    f"{owner or 'none'}, status {status}); left as it is, lease dropped"
                )
            if op == "done":
                self._rewrite(path, lock, tk.dump(tk.completed(doc)))
                state.claim_ended(task.token, "done")
                self._set(state, Q.applied(task, op, now, seconds))
                return f"{where} completed"
            renewed = Q.applied(task, op, now, seconds)
            state.claim_extended(task.token, renewed.until)
            self._set(state, renewed)
            return f"{where}: lease renewed"

    # ----- the owner's acts and looks ----------------------------------------------------------
    def done_next(
        self, token: str, session: str, lease: float | None = None
    ) -> tuple[Q.TaskUpdate, Q.Claim]:
        """Done with `token`, then a claim for `session` (two steps here: each under the
        state's lock, as each alone)."""
        done = self.update(token, "done")
        return done, self.claim(session, lease)

    def dead_letter(self, token: str) -> Q.TaskUpdate:
        """The owner moves the task claimed with `token` (its current lease) to the
        dead-letter room: given back first if its file is still our claim's bytes (as a
        release), else left as it is; then dead, as after max_deliveries."""
        number, queue_id = Q.parse_token(token)
        base, _, task_id = queue_id.partition("t")
        with locked(self._state_lock()):
            state = self._load()
            now = self._clock()
            if base != state.queue_id or not task_id.isdigit():
                raise TokenRefused(f"{self.spec}: token {token} is not this queue's")
            task = next((t for t in state.tasks if t.offset == int(task_id)), None)
            verdict = Q.check_token(task, number, "dead", now)
            if not verdict.ok:
                raise TokenRefused(f"{self.spec}: dead letter refused: {verdict.reason}")
            assert task is not None
            note = self._give_back(task, "moved to the dead-letter room") if task.until else ""
            raw = _read(self._task_path(task_id))
            doc = (None if raw is None else _load_or_none(raw)) or {}
            if not self._bury(state, task, doc, now):
                raise AckdeckError(
                    f"{self.spec}: the dead-letter room {self.dead_room} cannot take a line "
                    "now; nothing changed"
                )
            moved = f"task {task_id} moved to the dead-letter room {self.dead_room}"
            return self._result(token, task, "dead", _joined(moved, [note] if note else []))

    def view(self, limit: int = 100) -> Q.QueueView:
        """What the queue holds now (a look: nothing given back, nothing written): leases
        running and ended, tasks dead-lettered ever, and the tasks a claim could take."""
        rec = self._peek()
        now = self._clock()
        mine = {str(t.offset): t for t in rec.tasks}
        docs = {}
        for task_id in self._ids():
            raw = _read(self._task_path(task_id))
            doc = None if raw is None else _load_or_none(raw)
            if doc is not None:
                docs[task_id] = doc
        done_ids = {i for i, d in docs.items() if d.get("status") == "completed"}
        unclaimed = sum(
            1
            for i, d in docs.items()
            if tk.claimable(d, done_ids)
            and (mine.get(i) is None or mine[i].state not in (Q.OPEN, Q.DEAD))
        )
        open_ = sorted((t for t in rec.tasks if t.state == Q.OPEN), key=lambda t: t.offset)
        began = {c.token: c.at for c in rec.claims}
        held = [
            Q.Held(
                offset=t.offset,
                holder=t.holder,
                token=Q.token_text(t.token, f"{rec.queue_id}t{t.offset}"),
                claimed_at=began.get(t.token),
                until=t.until,
                deliveries=t.deliveries,
            )
            for t in open_[: max(0, limit)]
        ]
        return Q.QueueView(
            claimed=sum(1 for t in open_ if t.until > now),
            expired=sum(1 for t in open_ if t.until <= now),
            dead=rec.dead_total,
            held=held,
            unclaimed=unclaimed,
        )

    def _set(self, state: _Leases, task: Q.Task) -> None:
        state.tasks[:] = [task if t.offset == task.offset else t for t in state.tasks]
        self._store(state)

    def _drop(self, state: _Leases, task: Q.Task) -> None:
        state.tasks[:] = [t for t in state.tasks if t.offset != task.offset]
        self._store(state)

    def _result(self, token: str, task: Q.Task, mode: str, message: str) -> Q.TaskUpdate:
        return Q.TaskUpdate(
            room=self.spec,
            path=str(self._task_path(str(task.offset))),
            token=token,
            mode=mode,
            offset=task.offset,
            lease_until=task.until if mode == "extended" else None,
            message=message,
            next="claim the next task" if mode != "extended" else "done when finished",
        )


def _find(state: _Leases, task: Q.Task) -> Q.Task:
    return next((t for t in state.tasks if t.offset == task.offset), task)


def _token(number: int, state: _Leases, task_id: str) -> str:
    """`17-3f9a2c1dt5`: the fencing number, the queue state's id, `t`, the task's id (the
    state's id is hex, so the `t` parts them)."""
    return Q.token_text(number, f"{state.queue_id}t{task_id}")


def _unwritten(rec: QueueState) -> str | None:
    """What in `rec` ackdeck never writes (None: nothing)."""
    if not (rec.queue_id.isalnum() and len(rec.queue_id) <= 32):
        return "queue_id: not a short id of letters and digits"
    if not 1 <= rec.next_token < 10**18:
        return "next_token: not a token number"
    if rec.dead_total < 0:
        return "dead_total: negative"
    for t in rec.tasks:
        if t.offset < 0 or not 1 <= t.token < 10**18 or t.deliveries < 0:
            return f"task {t.offset}: not a lease ackdeck writes"
    try:
        check_deliveries(rec.max_deliveries)
        if rec.owner is not None:
            check_name(rec.owner, "owner")
    except AckdeckError as exc:
        return str(exc)
    return None


def _one_line(text: str) -> str:
    """A task's subject as one line (a dead letter, a trace): newlines and NULs as spaces."""
    return " ".join(text.replace("\0", " ").split())


def _load_or_none(raw: bytes) -> dict | None:
    try:
        return tk.load(raw)
    except BadRecord:
        return None


def _joined(head: str, *parts: list[str]) -> str:
    rest = [p for part in parts for p in part]
    if not rest:
        return head
    return head + "; " + "; ".join(rest)


def leases(home: Path, task_list: str) -> dict[str, Task]:
    """ackdeck's open leases on `task_list`'s tasks, by task id, as last stored (a look: no
    lock, nothing written; a state file that cannot be read shows none)."""
    from ackdeck.core.errors import AckdeckError

    try:
        rec = load_record(locations.claude_tasks_queue(home, task_list), QueueState)
    except (AckdeckError, OSError):
        return {}
    if rec is None:
        return {}
    return {str(t.offset): t for t in rec.tasks if t.state == Q.OPEN and t.until > 0}


def lease_flag(owner: str | None, lease: Task | None, now: float) -> tuple[str, str] | None:
    """What a task's ackdeck lease says of its owner (None: no lease of the owner's): a live
    lease is why a holder that is no team member is not gone; an ended one is stalled work."""
    if lease is None or owner is None or lease.holder != owner:
        return None
    if lease.until > now:
        return "", f"claimed through ackdeck's queue; its lease ends in {lease.until - now:.0f} s"
    return "owner-stalled", (
        f"{owner}'s ackdeck lease ended {now - lease.until:.0f} s ago; the next claim gives it "
        "back if it is unchanged"
    )
