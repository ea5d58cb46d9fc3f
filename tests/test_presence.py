"""Presence: the pure decision (events -> state, since, evidence) and the log its doors write."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.presence import history, log, model
from ackdeck.core.presence.model import decide, fold

T0 = 1_800_000_000.0


def ev(dt: float, kind: str, **fields: object) -> dict:
    return {"t": T0 + dt, "ev": kind, **fields}


def state(events: list[dict], now: float, **kw: object) -> model.Presence:
    return decide(fold("agent", events), T0 + now, **kw)  # type: ignore[arg-type]


def test_a_turn_is_working_and_its_stop_idle() -> None:
    evs = [ev(0, "start", detail="startup"), ev(5, "prompt")]
    p = state(evs, 10)
    assert (p.state, p.since) == ("working", T0 + 5) and "UserPromptSubmit" in p.evidence
    p = state([*evs, ev(30, "stop")], 40)
    assert (p.state, p.since) == ("idle", T0 + 30) and "Stop" in p.evidence


def test_a_stop_hook_that_gave_more_work_keeps_it_working() -> None:
    p = state([ev(0, "prompt"), ev(9, "stop", blocked=True)], 10)
    assert (p.state, p.since) == ("working", T0 + 9)


def test_a_permission_prompt_is_waiting_until_the_session_acts_again() -> None:
    evs = [
        ev(0, "prompt"),
        ev(3, "notify", detail="permission_prompt: Claude needs your permission"),
    ]
    p = state(evs, 10)
    assert (p.state, p.since) == ("waiting", T0 + 3) and "permission_prompt" in p.evidence
    # An idle prompt (Claude Code's "waiting for your input") is waiting for the owner too.
    assert state([ev(0, "stop"), ev(60, "notify", detail="idle_prompt: x")], 70).state == "waiting"
    # Granted: the session goes on reading (working), then stops (idle).
    p = state([*evs, ev(20, "read", room="/r", lines=1, waited=1.0)], 25)
    assert p.state == "working" and p.since == T0 + 20
    assert state([*evs, ev(30, "stop")], 31).state == "idle"
    # Other notifications are kept for the timeline only.
    assert state([ev(0, "stop"), ev(5, "notify", detail="auth_success")], 9).state == "idle"


def test_session_end_and_a_disconnected_server_are_gone_until_it_comes_back() -> None:
    p = state([ev(0, "start"), ev(4, "end", detail="prompt_input_exit")], 10)
    assert (p.state, p.since) == ("gone", T0 + 4) and "prompt_input_exit" in p.evidence
    mcp = [ev(0, "connect", pid=11, host="h"), ev(1, "client", client="claude-code", version="2")]
    assert state(mcp, 5).state == "idle"
    p = state([*mcp, ev(8, "disconnect", pid=11, host="h")], 9)
    assert (p.state, p.since) == ("gone", T0 + 8) and "disconnected" in p.evidence
    back = [*mcp, ev(8, "disconnect", pid=11, host="h"), ev(20, "connect", pid=12, host="h")]
    assert state(back, 21).state == "idle"


def test_a_server_found_dead_by_its_pid_is_gone() -> None:
    mcp = [ev(0, "connect", pid=11, host="h"), ev(3, "prompt")]
    assert state(mcp, 5, dead=["h:11"]).state == "gone"
    assert state(mcp, 5, dead=["h:12"]).state == "working"
    # Two servers of one session: gone only once both are.
    two = [*mcp, ev(4, "connect", pid=12, host="h")]
    assert state(two, 5, dead=["h:11"]).state == "working"
    assert state(two, 5, dead=["h:11", "h:12"]).state == "gone"


def test_activity_without_hooks_is_working_for_a_while_then_idle() -> None:
    evs = [ev(0, "connect", pid=1, host="h"), ev(10, "ack", room="/r", lines=2)]
    assert state(evs, 20).state == "working"
    p = state(evs, 10 + model.ACTIVE_S + 1)
    assert p.state == "idle" and p.since == T0 + 10 + model.ACTIVE_S


def test_unread_lines_past_the_default_threshold_stall_a_new_session() -> None:
    evs = [ev(0, "stop")]
    limit = model.DEFAULT_S
    assert state(evs, 100, unread=3, oldest_unread_age=limit - 1).state == "idle"
    p = state(evs, 10_000, unread=3, oldest_unread_age=limit + 50)
    assert p.state == "stalled" and p.since == T0 + 10_000 - 50
    assert "default" in p.evidence and "was idle" in p.evidence
    # Nothing unread: never stalled, however long ago it read.
    assert state(evs, 10_000, unread=0, oldest_unread_age=None).state == "idle"
    # Waiting for the owner, or gone, is said as such, not as a stall.
    waiting = [ev(0, "notify", detail="permission_prompt: x")]
    assert state(waiting, 9_000, unread=3, oldest_unread_age=5_000).state == "waiting"


def test_the_threshold_is_learned_from_the_sessions_own_reads() -> None:
    quick = [ev(i, "read", room="/r", lines=1, waited=20.0) for i in range(10)]
    limit, why = model.threshold(fold("a", quick).waited)
    assert limit == 60.0 and "p90" in why  # 3 x 20 s, at the floor
    slow = [ev(i, "read", room="/r", lines=1, waited=1_000.0) for i in range(10)]
    assert model.threshold(fold("a", slow).waited)[0] == 3_000.0
    # A slow reader with a line waiting 20 minutes is not stalled; a quick one is.
    after = [ev(100, "stop")]
    assert state([*slow, *after], 2_000, unread=1, oldest_unread_age=1_200).state == "idle"
    assert state([*quick, *after], 2_000, unread=1, oldest_unread_age=1_200).state == "stalled"
    # Too few samples: the documented default.
    few = [ev(i, "read", room="/r", lines=1, waited=1.0) for i in range(model.MIN_SAMPLES - 1)]
    assert model.threshold(fold("a", few).waited)[0] == model.DEFAULT_S
    # The window keeps the last WINDOW samples only.
    many = [ev(i, "read", room="/r", lines=1, waited=float(i)) for i in range(200)]
    assert len(fold("a", many).waited) == model.WINDOW


def test_an_unanswered_nudge_stalls_an_idle_session_and_a_read_answers_it() -> None:
    evs = [ev(0, "stop"), ev(10, "nudge", door="tmux")]
    grace = model.NUDGE_GRACE_S
    assert state(evs, 10 + grace - 1, unread=2, oldest_unread_age=30).state == "idle"
    p = state(evs, 10 + grace + 1, unread=2, oldest_unread_age=30)
    assert p.state == "stalled" and "nudge" in p.evidence
    f = fold("a", [*evs, ev(11, "nudge"), ev(50, "read", room="/r", lines=1)])
    assert f.nudges_unanswered == 0 and f.last_nudge == T0 + 11 and f.last_read == T0 + 50
    assert fold("a", [*evs, ev(11, "nudge")]).nudges_unanswered == 2


def test_evidence_counts_lines_and_nudges_as_people_write_them() -> None:
    """ "1 line", "3 lines", "1 nudge": the Agents panel never says "line(s)" or "nudge(s)"."""
    assert fold("a", [ev(0, "read", room="/x/inbox.txt", lines=1)]).activity_what == (
        "read 1 line of inbox.txt"
    )
    assert fold("a", [ev(0, "ack", room="/x/inbox.txt", lines=3)]).activity_what == (
        "acked 3 lines of inbox.txt"
    )
    assert (
        fold("a", [ev(0, "read", room="/x/r", lines="junk")]).activity_what == "read ? lines of r"
    )
    p = state(
        [ev(0, "stop"), ev(10, "nudge")],
        10 + model.NUDGE_GRACE_S + 1,
        unread=2,
        oldest_unread_age=30,
    )
    assert "2 unread and 1 nudge unanswered" in p.evidence and "(s)" not in p.evidence


def test_unknown_kinds_torn_lines_and_a_carry_fold_safely() -> None:
    f = fold("a", [{"ev": "prompt"}, ev(1, "from-the-future", x=1), ev(2, "prompt")])
    assert f.turn == "prompt" and f.turn_at == T0 + 2
    carried = fold("a", [ev(0, "connect", pid=3, host="h"), ev(1, "client", client="c")])
    f = fold("a", [ev(5, "carry", facts=carried.carry()), ev(6, "stop")])
    assert f.client == "c" and f.servers == {"h:3": T0} and f.turn == "stop"
    assert decide(f, T0 + 7, dead=["h:3"]).state == "gone"


# ----- the log ------------------------------------------------------------------------------
def test_record_appends_one_line_per_event_and_creates_the_directory(home: Path) -> None:
    assert log.record(home, "agent", "prompt", at=T0)
    assert log.record(home, "agent", "read", at=T0 + 1, room="/r", lines=2, waited=None)
    path = locations.presence_log(home, "agent")
    assert path.parent == home / "agents" and path.stat().st_mode & 0o777 == 0o600
    lines = path.read_bytes().splitlines()
    assert [json.loads(x)["ev"] for x in lines] == ["prompt", "read"]
    assert "waited" not in json.loads(lines[1])  # unknown values are left out, not null
    assert history.sessions(home) == ["agent"]


def test_an_unwritable_home_records_nothing_and_raises_nothing(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: permissions do not bind")
        assert log.record(ro, "agent", "prompt") is False
    finally:
        ro.chmod(0o700)


def test_a_full_log_is_folded_into_a_carry_and_keeps_its_facts(home: Path) -> None:
    log.record(home, "agent", "connect", at=T0, pid=7, host="h", rooms=["/r"])
    log.record(home, "agent", "client", at=T0 + 1, client="claude-code", version="2.1")
    n = 0
    while locations.presence_log(home, "agent", old=True).exists() is False:
        log.record(home, "agent", "read", at=T0 + 2 + n, room="/r", lines=1, waited=3.0)
        n += 1
        assert n < 10_000
    assert locations.presence_log(home, "agent").stat().st_size < log.LIMIT
    f = history.load(home, "agent")
    assert (f.client, f.version, f.rooms, f.servers) == ("claude-code", "2.1", ["/r"], {"h:7": T0})
    assert f.last_read == T0 + 1 + n and len(f.waited) == model.WINDOW
    # The timeline still reaches back into the rotated log, newest first, without the carry.
    tl = history.timeline(home, "agent", limit=10)
    assert [e["t"] for e in tl] == sorted((e["t"] for e in tl), reverse=True)
    assert all(e["ev"] != "carry" for e in history.timeline(home, "agent", limit=10_000))


def _holds_open(pid: int, path: Path) -> bool:
    """Has process `pid` got `path` open? (Its /proc fd links; gone once it exited.)"""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            continue
    return False


def test_an_event_appended_while_the_log_is_folded_is_kept(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: a fold reads the log, folds it into a carry and renames it aside; an event
    another process appends in between lands in the file being renamed away, after the fold
    read it, and was lost (not in the carry, not after it). Here the other process, a real
    one, appends exactly inside that window: it must wait for the fold and land after it."""
    import subprocess
    import sys

    from tests.helpers.wait import eventually

    log.record(home, "agent", "client", at=T0, client="claude-code", version="2.1")
    while locations.presence_log(home, "agent").stat().st_size + 200 < log.LIMIT:
        log.record(home, "agent", "read", at=T0 + 1, room="/r", lines=1, waited=3.0)
    writers: list[subprocess.Popen[bytes]] = []
    real_fold = model.fold

    def fold_with_a_late_writer(*args: object, **kwargs: object) -> object:
        if not writers:  # the fold inside the rotation, not the reads after it
            code = (
                "from ackdeck.core.presence import log; import sys; "
                "log.record(sys.argv[1], 'agent', 'client', at=float(sys.argv[2]), "
                "client='late', version='9')"
            )
            argv = [sys.executable, "-c", code, str(home), str(T0 + 10)]
            writers.append(subprocess.Popen(argv))
            # Appended (unlocked, as before the fix), or holding the presence lock's file
            # open: from then on it opens the log only once it holds the lock's shared side,
            # which this fold's rotation holds exclusively until the new log is in place.
            lock = locations.presence_lock(home, "agent")
            eventually(
                lambda: writers[0].poll() is not None or _holds_open(writers[0].pid, lock),
                what="the late writer to append or to wait for the fold",
            )
        return real_fold(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(model, "fold", fold_with_a_late_writer)
    while not locations.presence_log(home, "agent", old=True).exists():
        log.record(home, "agent", "read", at=T0 + 2, room="/r", lines=1, waited=3.0)
    assert writers, "the log was never folded"
    assert writers[0].wait(timeout=60) == 0
    monkeypatch.setattr(model, "fold", real_fold)
    f = history.load(home, "agent")
    assert (f.client, f.version) == ("late", "9")
