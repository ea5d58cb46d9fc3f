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

Differences from a file queue, by nature: a lease that expired is given back to Claude Code at
once (its teammates may take it), so a late `done` of that token is refused rather than
counted; there is no dead-letter room (a task's deliveries are counted and shown).
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
from ackdeck.core.base.statefile import load_record, store_record
from ackdeck.core.base.struct import Struct
from ackdeck.core.clients.claude_code import tasks as tk
from ackdeck.core.clients.claude_code.lock import TASK_RETRY_DELAYS_S, MailboxLock
from ackdeck.core.errors import BadRecord, InvalidInput, MailboxLocked, TokenRefused
from ackdeck.core.rooms import queue as Q
from ackdeck.core.rooms.queue import Task

if TYPE_CHECKING:
    from collections.abc import Callable

SCHEME = "claude-tasks://"


class QueueState(Struct, kw_only=True):
    """ackdeck's leases on one task list. A lease is a queue Task whose `offset` is the task's
    id and whose `sha256` is the version of the file its claim wrote."""

    queue_id: str
    next_token: int = 1
    tasks: list[Task] = []


class _Leases:
    """QueueState while one operation changes it (under the state's lock)."""

    def __init__(self, rec: QueueState) -> None:
        self.queue_id = rec.queue_id
        self.next_token = rec.next_token
        self.tasks = list(rec.tasks)

    def record(self) -> QueueState:
        return QueueState(queue_id=self.queue_id, next_token=self.next_token, tasks=self.tasks)


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

    def trace(self, offset: int | str) -> object:
        raise self._refused("traced")

    def find(self, text: str | bytes) -> tuple[list[int | str], int]:
        raise self._refused("searched")

    def wait_acked(
        self, offset: int | str, timeout: float | None = None, stop: object = None
    ) -> object:
        raise self._refused("waited on")

    def policy(self) -> object:
        raise self._refused("given a policy")

    def set_policy(self, policy: object) -> None:
        raise self._refused("given a policy")

    def wait(self, session: str, timeout: float | None = None, stop: object = None) -> bool:
        raise self._refused("waited on")

    # ----- state ------------------------------------------------------------------------------
    def _state_lock(self) -> Path:
        d = locations.claude_tasks_queues_dir(self.home)
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        return locations.claude_tasks_queue_lock(self.home, self.task_list)

    def _load(self) -> _Leases:
        path = locations.claude_tasks_queue(self.home, self.task_list)
        rec = load_record(path, QueueState) or QueueState(queue_id=secrets.token_hex(4))
        return _Leases(rec)

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
            others = []
            for task_id, (doc, _raw) in docs.items():
                who = held_by_other(doc, mine.get(task_id), now)
                if who is not None:
                    others.append(f"task {task_id} by {who}")
                    continue
                ours = mine.get(task_id)
                if ours is not None and ours.state == Q.OPEN and ours.until > now:
                    continue  # a live lease of ours (its claim may not have reached the file)
                if not tk.claimable(doc, done_ids):
                    continue
                try:
                    got = self._claim_one(state, task_id, session, now, seconds, done_ids)
                except MailboxLocked:
                    others.append(f"task {task_id} locked by Claude Code right now")
                    continue
                if got is not None:
                    return got.replace(message=_joined(got.message, notes, others))
            self._store(state)
        what = "nothing to claim: no task is pending, unowned and unblocked"
        return Q.Claim(
            room=self.spec,
            path=str(self.dir),
            claimed=False,
            message=_joined(what, notes, others, problems),
            next="claim again later (tasks are added with Claude Code's TaskCreate)",
        )

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
                self._set(state, Q.applied(task, op, now, seconds))
                return f"{where} completed"
            self._set(state, Q.applied(task, op, now, seconds))
            return f"{where}: lease renewed"

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
