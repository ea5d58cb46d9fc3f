"""Pure gate decisions: exact per-line shown ranges, fail open on missing data."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ackdeck.core.monitors import gate


def test_only_the_exact_shown_line_is_suppressed() -> None:
    shown = gate.add_ranges([], [(0, 4), (10, 15)])  # lines 0-4 and 10-15 returned by reads
    split = gate.split_lines([("r1", 0, 4), ("r1", 4, 10), ("r1", 10, 15)], {"r1": shown})
    assert split.deliver == [1] and split.suppress == [0, 2]


def test_shown_data_of_another_run_never_suppresses() -> None:
    shown = gate.add_ranges([], [(0, 100)])
    split = gate.split_lines([("old", 0, 4)], {"new": shown})
    assert split.deliver == [0]  # a reused name's new run cannot hide the old run's wake


def test_missing_or_unreadable_shown_data_fails_open() -> None:
    split = gate.split_lines([("r1", 0, 4)], {"r1": None})
    assert split.deliver == [0] and split.suppress == []


def test_adjacent_ranges_merge_without_covering_gaps() -> None:
    iv = gate.add_range([], 0, 4)
    iv = gate.add_range(iv, 4, 9)
    iv = gate.add_range(iv, 20, 25)
    assert iv == [(0, 9), (20, 25)]
    assert gate.contains(iv, 4, 9) and not gate.contains(iv, 9, 20)
    assert not gate.contains(iv, 5, 21)


def test_exit_notice_is_dropped_only_when_the_owner_saw_the_end() -> None:
    assert gate.exit_notice_suppressed("exited", True)
    assert not gate.exit_notice_suppressed("exited", None)  # no read state: fail open
    assert not gate.exit_notice_suppressed("monitor-lost", True)


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=30), st.data())
def test_intervals_answer_exactly_which_lines_were_shown(lengths, data) -> None:
    # Lines partition the file; any subset shown, in any order, via either builder.
    bounds, pos = [], 0
    for n in lengths:
        bounds.append((pos, pos + n))
        pos += n
    picked = data.draw(st.lists(st.sampled_from(bounds), unique=True))
    bulk = gate.add_ranges([], picked)
    one_by_one: gate.Intervals = []
    for s, e in picked:
        one_by_one = gate.add_range(one_by_one, s, e)
    assert bulk == one_by_one
    for s, e in bounds:
        assert gate.contains(bulk, s, e) == ((s, e) in picked)
