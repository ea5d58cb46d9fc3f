"""A work-queue room: each line goes to exactly one claimer at a time, under a lease.

What every kind of queue room shares (today the file room, core/rooms/file/queue.py): the
task record, the fencing token, the results the doors show, and the pure decisions. The
I/O lives with each kind; everything here is a function of its arguments (the clock is an
argument), so tests/test_queue_decisions.py checks the decisions exhaustively.

The rules, one place each:

- **claim** hands out the oldest line that is claimable: an open task whose lease ended
  (expired, or released: `until` 0), else the next line nobody ever claimed. Every claim is
  a delivery (`deliveries` + 1) and gets a new fencing token.
- **the fencing check** (`check_token`): done, extend and release act only with the token of
  the line's *current* lease. A token that a later claim superseded is refused in one line,
  so a holder whose lease expired can never complete a line that someone else now holds.
  A lease that expired but was not claimed again is still that token's: its done counts.
- **done** finishes the task (a repeated done with the same token is a no-op, so a lost
  reply can be retried); the finished lines at the head of the room then leave it through
  the room's own ack transaction (`finished_prefix`).
- **max_deliveries** (the room policy): an expired task already delivered that often goes to
  the dead-letter room instead of being handed out again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import InvalidInput
from ackdeck.core.errors import TokenRefused as TokenRefused  # each kind's queue raises it

if TYPE_CHECKING:
    from collections.abc import Iterable

DEFAULT_LEASE = 600.0  # seconds: ten minutes of work before the line is handed out again
MAX_LEASE = 7200.0  # seconds: two hours; longer work renews with extend
OPEN, DONE, DEAD = "open", "done", "dead"
# On its way to the dead-letter room: never handed out or completed again.
DYING = "dying"
OPS = ("done", "extend", "release")


class Task(Struct, kw_only=True):
    """One claimed line of a queue room, as the queue's state keeps it."""

    offset: int  # the line's logical stream offset (stable across acks)
    length: int  # its bytes, newline included
    sha256: str  # of those bytes: a reclaim checks the line is still the same
    token: int  # the fencing number of its current (or last) lease
    holder: str  # the session that holds (or last held) the lease
    until: float  # when the lease ends (0: released)
    deliveries: int  # how many times it was claimed
    state: str = OPEN  # open, done (finished by its holder), dying or dead (dead-lettered)


# ----- the fencing token ------------------------------------------------------------------
def token_text(number: int, queue_id: str) -> str:
    """`17-3f9a2c1d`: the fencing number, monotonic per room, then the id of the queue state
    that issued it, so a token from a state that was reset never matches a new lease."""
    return f"{number}-{queue_id}"


def parse_token(text: str) -> tuple[int, str]:
    number, sep, queue_id = str(text).strip().partition("-")
    if not sep or not number.isdigit() or not queue_id.isalnum() or len(number) > 18:
        raise InvalidInput(f"invalid token {str(text)[:60]!r}: use the token a claim returned")
    return int(number), queue_id


def check_lease(seconds: float | None) -> float:
    """The lease asked for, in seconds (None: DEFAULT_LEASE); refused unless in (0, MAX]."""
    if seconds is None:
        return DEFAULT_LEASE
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise InvalidInput(f"invalid lease {seconds!r}: a number of seconds")
    if not 0 < seconds <= MAX_LEASE:  # also refuses NaN
        raise InvalidInput(
            f"invalid lease {seconds!r}: seconds above 0, at most {MAX_LEASE:g} (2 hours); "
            "renew a longer task with extend"
        )
    return float(seconds)


# ----- the decisions ----------------------------------------------------------------------
def claimable(task: Task, now: float) -> bool:
    """An open task whose lease ended (expired or released) may be claimed again."""
    return task.state == OPEN and task.until <= now


def goes_dead(task: Task, max_deliveries: int | None) -> bool:
    """A claimable task delivered `max_deliveries` times goes to the dead-letter room."""
    return max_deliveries is not None and task.deliveries >= max_deliveries


def claimed(task: Task, token: int, holder: str, now: float, lease: float) -> Task:
    """`task` handed to `holder` under a new lease with fencing number `token`."""
    return task.replace(
        token=token, holder=holder, until=now + lease, deliveries=task.deliveries + 1
    )


def first_claim(
    offset: int, length: int, sha256: str, token: int, holder: str, now: float, lease: float
) -> Task:
    return Task(
        offset=offset,
        length=length,
        sha256=sha256,
        token=token,
        holder=holder,
        until=now + lease,
        deliveries=1,
    )


class Verdict(Struct):
    ok: bool
    mode: str  # done, extended, released, noop, refused
    reason: str = ""


def check_token(
    task: Task | None, token: int, op: str, now: float, *, fencing: bool = True
) -> Verdict:
    """May the holder of fencing number `token` do `op` (done, extend, release) on `task`
    (the task that token was issued for, None if none is known)? `fencing=False` is only
    for the test that shows the property fails without the check."""
    if task is None:
        return Verdict(False, "refused", "no task holds this token (unknown, or its line left)")
    if fencing and task.token != token:
        return Verdict(
            False,
            "refused",
            f"token superseded: the lease ended and the line was claimed again "
            f"(by {task.holder}, token {task.token})",
        )
    if task.state in (DEAD, DYING):
        return Verdict(False, "refused", "the line went to the dead-letter room")
    if task.state == DONE:
        if op == "done":
            return Verdict(True, "noop", "already done with this token")
        return Verdict(False, "refused", "the task is done already")
    # "dead": the owner moves the line to the dead-letter room (with the token it was shown)
    mode = {"done": "done", "extend": "extended", "release": "released", "dead": "dead"}[op]
    return Verdict(True, mode)


def applied(task: Task, op: str, now: float, lease: float) -> Task:
    """`task` after an accepted `op`."""
    if op == "done":
        return task.replace(state=DONE)
    if op == "extend":
        return task.replace(until=now + lease)
    return task.replace(until=0.0)  # released: claimable at once


def head_run(base: int, tasks: Iterable[Task]) -> tuple[str, str, int] | None:
    """The first run of finished tasks at the head of the room (which starts at logical
    `base`), given the tasks in offset order: (done or dead, the holder, its bytes), the bytes
    the room may drop in one ack, audited as that holder's. None when the head line is open
    or was never claimed (a gap): only lines proven finished ever leave."""
    kind = holder = None
    at = base
    for t in tasks:
        if t.offset < at:
            continue  # left the room already
        if t.offset != at or t.state not in (DONE, DEAD):
            break
        if kind is None:
            kind, holder = t.state, t.holder
        elif (t.state, t.holder) != (kind, holder):
            break
        at += t.length
    if kind is None or holder is None:
        return None
    return kind, holder, at - base


# ----- the results every door shows -------------------------------------------------------
class Claim(Struct, kw_only=True):
    """What a claim handed out (or that nothing was claimable)."""

    room: str
    path: str
    claimed: bool
    token: str | None = None  # pass it to done / extend / release
    offset: int | None = None  # a file room's line: its logical offset
    entry: str | None = None  # a redis room's line: its entry ID
    line: bytes | None = None  # the task (its JSON: the text, invalid UTF-8 replaced)
    deliveries: int | None = None  # this claim included
    lease_until: float | None = None  # when the lease ends unless extended
    lease_seconds: float | None = None
    dead_lettered: int = 0  # lines this claim moved to the dead-letter room first
    message: str = ""
    next: str | None = None  # the call to make next


class TaskUpdate(Struct, kw_only=True):
    """What done, extend or release did with a token."""

    room: str
    path: str
    token: str
    mode: str  # done, noop, extended, released
    offset: int | None = None
    entry: str | None = None  # a redis room's line: its entry ID
    lease_until: float | None = None  # extend: the lease's new end
    removed: int = 0  # finished lines that left the room with this call
    message: str = ""
    next: str | None = None
    # `done --next` (MCP `task_done` with `next: true`): the claim made after the done.
    claimed_next: Claim | None = None


class Held(Struct, kw_only=True):
    """A claimed line as a look at the queue shows it (the dashboard, metrics)."""

    offset: int | None = None  # a file room's line
    entry: str | None = None  # a redis room's line
    holder: str
    token: str
    claimed_at: float | None  # when this lease began (None: not recorded)
    until: float  # when it ends (or ended: then it is claimable again; 0: released)
    deliveries: int


class QueueView(Struct, kw_only=True):
    """What a queue holds now."""

    claimed: int  # lines whose lease runs
    expired: int  # lines whose lease ended (or was released) and nobody claimed again yet
    dead: int  # lines moved to the dead-letter room, ever
    held: list[Held]  # the oldest claimed lines, running or ended
    unclaimed: int = 0  # complete lines in the room nobody ever claimed


def nothing_claimed(path: str, seconds: float, moved: int, why: str) -> Claim:
    """A claim that found no line for its claimant (`why`), after moving `moved` lines past
    their deliveries to the dead-letter room: the same result from every kind of queue."""
    from ackdeck.core.base.text import counted

    extra = f"; moved {counted(moved, 'line')} to the dead-letter room" if moved else ""
    return Claim(
        room="",
        path=path,
        claimed=False,
        lease_seconds=seconds,
        dead_lettered=moved,
        message=why + extra,
        next="claim again later (or `room wait` for new lines)",
    )
