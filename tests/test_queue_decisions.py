"""The work queue's pure decisions (core/rooms/queue.py), checked exhaustively.

A model queue runs random schedules of claims, completions, renewals, releases and clock
steps by several agents through exactly the functions the file queue calls. The property:
no line is ever completed under two different leases (none done twice), and once every lease
has ended a diligent agent finishes or dead-letters every line (none lost). Without the
fencing check the same search finds a schedule that completes a line twice.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms import queue as Q

LINES = 4
LEASE = 10.0


class Model:
    """A queue of LINES one-byte-plus-newline lines, kept as the file queue keeps it (tasks by
    offset, a frontier, a token counter), decided only by core/rooms/queue.py."""

    def __init__(self, *, fencing: bool, max_deliveries: int | None) -> None:
        self.fencing = fencing
        self.max_deliveries = max_deliveries
        self.tasks: dict[int, Q.Task] = {}
        self.frontier = 0
        self.next_token = 1
        self.tokens: dict[int, int] = {}  # token -> offset
        self.now = 1000.0
        self.completed: dict[int, set[int]] = {}  # offset -> tokens whose done was accepted
        self.dead: list[int] = []
        self.stale_accepted: list[tuple[int, str]] = []  # a superseded token's op accepted

    def claim(self, agent: str, lease: float) -> int | None:
        while True:
            open_ = sorted(
                (t for t in self.tasks.values() if Q.claimable(t, self.now)),
                key=lambda t: t.offset,
            )
            if not open_:
                break
            task = open_[0]
            if Q.goes_dead(task, self.max_deliveries):
                self.tasks[task.offset] = task.replace(state=Q.DEAD)
                self.dead.append(task.offset)
                continue
            token = self._issue(task.offset)
            self.tasks[task.offset] = Q.claimed(task, token, agent, self.now, lease)
            return token
        if self.frontier >= 2 * LINES:
            return None
        off = self.frontier
        token = self._issue(off)
        self.tasks[off] = Q.first_claim(off, 2, "x", token, agent, self.now, lease)
        self.frontier += 2
        return token

    def _issue(self, offset: int) -> int:
        token = self.next_token
        self.next_token += 1
        self.tokens[token] = offset
        return token

    def update(self, token: int, op: str, lease: float) -> Q.Verdict:
        task = self.tasks.get(self.tokens.get(token, -1))
        verdict = Q.check_token(task, token, op, self.now, fencing=self.fencing)
        if verdict.ok and task is not None:
            if token != task.token:
                self.stale_accepted.append((token, op))
            if op == "done":
                self.completed.setdefault(task.offset, set()).add(token)
            if verdict.mode != "noop":
                self.tasks[task.offset] = Q.applied(task, op, self.now, lease)
        return verdict

    def done_twice(self) -> bool:
        return any(len(tokens) > 1 for tokens in self.completed.values())

    def broken(self) -> bool:
        """A line completed under two leases, or a superseded holder's op accepted."""
        return self.done_twice() or bool(self.stale_accepted)


# Two agents, so that a stale holder and the one who claimed its line after it meet often.
OPS = st.lists(
    st.tuples(
        st.sampled_from(["claim", "claim", "tick", *Q.OPS, "done"]),
        st.integers(0, 1),
        st.sampled_from([1.0, 12.0]),  # a lease, or the clock's step (either may outlast it)
    ),
    min_size=12,
    max_size=30,
)


def run(ops: list[tuple[str, int, float]], *, fencing: bool, max_deliveries: int | None) -> Model:
    m = Model(fencing=fencing, max_deliveries=max_deliveries)
    held: dict[int, int] = {}  # agent -> the token of its last claim (maybe superseded since)
    for op, agent, value in ops:
        if op == "claim":
            token = m.claim(f"agent-{agent}", value)
            if token is not None:
                held[agent] = token
        elif op == "tick":
            m.now += value
        elif agent in held:
            m.update(held[agent], op, value)
    return m


def finish(m: Model) -> None:
    """Every lease ends; one diligent agent claims and finishes until nothing is left."""
    m.now += 10 * Q.MAX_LEASE
    while (token := m.claim("closer", LEASE)) is not None:
        assert m.update(token, "done", LEASE).ok


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, max_deliveries=st.sampled_from([None, 1, 2, 3]))
def test_no_line_is_completed_under_two_leases_and_none_is_lost(
    ops: list[tuple[str, int, float]], max_deliveries: int | None
) -> None:
    m = run(ops, fencing=True, max_deliveries=max_deliveries)
    assert not m.broken(), (m.completed, m.stale_accepted)
    finish(m)
    assert not m.broken(), (m.completed, m.stale_accepted)
    for off in range(0, 2 * LINES, 2):
        assert (off in m.completed) != (off in m.dead), (off, m.completed, m.dead)
    # Every line is finished, so the whole room may leave, run after run.
    base = 0
    while (run_ := Q.head_run(base, sorted(m.tasks.values(), key=lambda t: t.offset))) is not None:
        base += run_[2]
    assert base == 2 * LINES


def test_without_the_fencing_check_a_stale_holder_completes_a_line_twice() -> None:
    # The same search, with the check off, finds a schedule completing one line under two
    # leases: the property above is what the fencing check buys.
    found = find(
        OPS,
        lambda ops: run(ops, fencing=False, max_deliveries=None).done_twice(),
        settings=settings(max_examples=5000, database=None),
    )
    # The same schedule with the check on: the stale holder is refused.
    assert not run(found, fencing=True, max_deliveries=None).broken()


# ----- the fencing check, case by case -------------------------------------------------------
def task(**kw: object) -> Q.Task:
    base = dict(offset=0, length=2, sha256="x", token=5, holder="a", until=100.0, deliveries=1)
    return Q.Task(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "token", "op", "now", "ok", "mode"),
    [
        (state, token, op, now, ok, mode)
        for state, token, op, now in itertools.product(
            (Q.OPEN, Q.DONE, Q.DEAD), (4, 5), Q.OPS, (50.0, 150.0)
        )
        for ok, mode in [
            (
                (False, "refused")
                if token != 5 or state == Q.DEAD or (state == Q.DONE and op != "done")
                else (True, "noop")
                if state == Q.DONE
                else (True, {"done": "done", "extend": "extended", "release": "released"}[op])
            )
        ]
    ],
)
def test_only_the_current_lease_token_acts_even_after_its_lease_ended(
    state: str, token: int, op: str, now: float, ok: bool, mode: str
) -> None:
    # A lease that ended but was not claimed again is still its token's (now=150): as a
    # broker's pending entry, its done counts; a later claim's token supersedes it.
    v = Q.check_token(task(state=state), token, op, now)
    assert (v.ok, v.mode) == (ok, mode)
    if not ok and token != 5:
        assert v.reason.startswith("token superseded")


def test_unknown_token_is_refused() -> None:
    assert Q.check_token(None, 3, "done", 0.0).ok is False


def test_claimable_only_when_open_and_the_lease_ended() -> None:
    assert Q.claimable(task(until=100.0), 100.0)
    assert not Q.claimable(task(until=100.0), 99.9)
    assert Q.claimable(Q.applied(task(), "release", 50.0, 10.0), 50.0)
    assert not Q.claimable(task(state=Q.DONE, until=0.0), 50.0)


def test_each_claim_is_a_delivery_and_dead_after_the_limit() -> None:
    t = task(deliveries=2, until=0.0)
    assert Q.claimed(t, 9, "b", 10.0, 5.0).replace() == t.replace(
        token=9, holder="b", until=15.0, deliveries=3
    )
    assert Q.goes_dead(t, 2) and not Q.goes_dead(t, 3) and not Q.goes_dead(t, None)


@given(
    states=st.lists(st.sampled_from([Q.OPEN, Q.DONE, Q.DEAD]), max_size=8),
    holders=st.lists(st.sampled_from("ab"), min_size=8, max_size=8),
    gap=st.integers(0, 8),
)
def test_head_run_is_one_holder_and_kind_of_finished_lines_from_the_base(
    states: list[str], holders: list[str], gap: int
) -> None:
    tasks = [
        task(offset=i * 2, state=s, holder=holders[i]) for i, s in enumerate(states) if i != gap
    ]
    got = Q.head_run(0, tasks)
    # The longest prefix with no gap, no open line, one kind and one holder.
    n = 0
    while (
        n < len(states)
        and n != gap
        and states[n] != Q.OPEN
        and (states[n], holders[n]) == (states[0], holders[0])
    ):
        n += 1
    assert got == (None if n == 0 else (states[0], holders[0], 2 * n))


def test_token_text_round_trips_and_bad_tokens_are_one_line() -> None:
    assert Q.parse_token(Q.token_text(17, "3f9a2c1d")) == (17, "3f9a2c1d")
    for bad in ("", "17", "x-3f", "17-", "-3f", "1" * 30 + "-ab", "17-a b"):
        with pytest.raises(InvalidInput, match="invalid token"):
            Q.parse_token(bad)


@pytest.mark.parametrize("bad", [0, -1, Q.MAX_LEASE + 1, float("nan"), True, "10"])
def test_lease_out_of_range_is_refused(bad: object) -> None:
    with pytest.raises(InvalidInput, match="invalid lease"):
        Q.check_lease(bad)  # type: ignore[arg-type]
    assert Q.check_lease(None) == Q.DEFAULT_LEASE == 600.0
