"""Overdue alerts: a room's threshold (its policy, or --overdue), `overdue` in status for the
room and each session, `ackdeck room overdue` exiting 1, and one wake per room per episode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.policy import RoomPolicy, parse_duration
from ackdeck.core.service import alerts, wakes
from ackdeck.core.service import rooms as service
from ackdeck.core.service.refs import open_room
from tests.helpers.cli import ackdeck
from tests.helpers.clock import Clock


@pytest.mark.parametrize(
    "text, seconds", [("90", 90), ("90s", 90), ("10m", 600), ("1.5h", 5400), ("2d", 172800)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds
    assert parse_duration("off") is None


def test_policy_is_set_once_and_every_door_sees_it(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = str(tmp_path / "r.txt")
    out = ackdeck(cli_env, "room", "policy", room, "--overdue", "10m", "--max-deliveries", "3")
    assert out.returncode == 0, out.stderr
    out = ackdeck(cli_env, "room", "policy", room, "--owner", "boss", "--json")
    assert json.loads(out.stdout) == {
        "room": "r.txt",
        "path": room,
        "overdue": 600.0,
        "max_deliveries": 3,
        "owner": "boss",
    }
    assert Room(room).policy() == RoomPolicy(overdue=600.0, max_deliveries=3, owner="boss")
    st = json.loads(ackdeck(cli_env, "room", "status", room, "--json").stdout)["rooms"][0]
    assert (st["overdue_after"], st["max_deliveries"], st["overdue"]) == (600.0, 3, False)
    for args, needle in [
        (["--overdue", "soon"], "invalid duration"),
        (["--max-deliveries", "-1"], "invalid --max-deliveries"),
        (["--owner", "../x"], "invalid session name"),
    ]:
        bad = ackdeck(cli_env, "room", "policy", room, *args)
        assert bad.returncode == 1 and needle in bad.stderr
    assert Room(room).policy().overdue == 600.0  # nothing half-written


def test_status_marks_the_room_and_the_sessions_past_the_threshold(tmp_path: Path) -> None:
    clock = Clock()
    r = Room(tmp_path / "r.txt", clock=clock)
    r.set_policy(RoomPolicy(overdue=600))
    r.push("old")
    r.read("slow")  # reads, never acks
    r.push("fresh")
    r.read("quick")
    clock.t += 601
    r.push("new")
    row = service.status([(r, "r.txt")]).rooms[0]
    assert row.overdue and row.overdue_after == 600
    sessions = row.sessions
    assert sessions["slow"].overdue and sessions["quick"].overdue  # both reads wait 601 s
    assert row.to_json()["sessions"]["slow"]["overdue"] is True
    r.ack("quick")
    row = service.status([(r, "r.txt")]).rooms[0]
    assert not row.overdue  # only "new" is left: 0 s old
    assert not row.sessions["quick"].overdue
    # A door's --overdue overrides the policy for that call.
    assert service.status([(r, "r")], overdue=None).rooms[0].overdue_after == 600
    clock.t += 10
    assert service.status([(r, "r")], overdue=5).rooms[0].overdue


def test_room_overdue_exits_1_when_a_line_waits_too_long(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = str(tmp_path / "r.txt")
    empty = str(tmp_path / "e.txt")
    Room(room).push("waiting")
    out = ackdeck(cli_env, "room", "overdue", room, empty, "--overdue", "1h")
    assert out.returncode == 0 and "r.txt: ok" in out.stdout
    out = ackdeck(cli_env, "room", "overdue", room, empty, "--overdue", "0.001", "--json")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["overdue"] is True and [r["overdue"] for r in doc["rooms"]] == [True, False]
    out = ackdeck(cli_env, "room", "overdue", room)
    assert out.returncode == 0 and "no threshold set" in out.stdout


def test_one_wake_per_room_per_overdue_episode(tmp_path: Path, home: Path) -> None:
    clock = Clock()
    r = Room(tmp_path / "inbox.txt", clock=clock)
    r.set_policy(RoomPolicy(overdue=60, owner="boss"))
    r.push("urgent")

    def check() -> alerts.Overdue:
        return alerts.check([(r, "inbox.txt")], home, clock=clock)

    assert check().woke == []  # not overdue yet
    clock.t += 61
    assert check().woke == ["inbox.txt"]
    for _ in range(5):
        clock.t += 30
        assert check().woke == []  # the same episode: no second wake
    got = wakes.drain(home, "boss")
    assert len(got.delivered) == 1
    assert "room inbox.txt: its oldest line has waited" in got.delivered[0].lines[0].text
    r.read("agent")
    r.ack("agent")  # the episode ends at the first check that finds the room fine
    assert check().overdue is False
    r.push("again")
    clock.t += 61
    assert check().woke == ["inbox.txt"]  # a new episode, a new wake
    assert len(wakes.drain(home, "boss").delivered) == 1


def test_redis_rooms_keep_their_policy_and_report_overdue(redis_server: object, home: Path) -> None:
    url = redis_server.url()  # type: ignore[attr-defined]
    clock = Clock()
    r = open_room(url, clock=clock)
    clock.t = 0  # entry IDs carry the server's time; a clock far behind: nothing is overdue
    r.set_policy(RoomPolicy(overdue=60, owner="boss"))
    r.push("x")
    assert open_room(url).policy().overdue == 60
    assert not alerts.check([(r, "x")], home, clock=clock).overdue
    import time

    clock.t = time.time() + 3600  # an hour later by this client's clock
    found = alerts.check([(r, "x")], home, clock=clock)
    assert found.overdue and found.woke == ["x"]
    r.close()


def test_a_stalled_agent_wakes_the_owner_of_its_room_once_per_stall(
    tmp_path: Path, home: Path
) -> None:
    """Issue 32: stalls feed the same alerts as overdue rooms."""
    from ackdeck.core.presence import model
    from ackdeck.core.service import presence

    clock = Clock()
    r = Room(tmp_path / "inbox.txt", clock=clock)
    r.set_policy(RoomPolicy(owner="boss"))  # an owner, no overdue threshold of its own
    r.push("please look")
    presence.record(home, "agent", "start", at=clock.t, rooms=[str(r.path)])
    presence.record(home, "agent", "stop", at=clock.t)

    def check() -> alerts.Overdue:
        return alerts.check([(r, "inbox.txt")], home, clock=clock)

    assert check().woke == []
    clock.t += model.DEFAULT_S + 1  # the line waited past a new session's default
    assert check().woke == ["agent agent"]
    clock.t += 30
    assert check().woke == []  # the same stall: told once
    got = wakes.drain(home, "boss")
    (delivered,) = got.delivered
    assert "agent agent is stalled: 1 unread" in delivered.lines[0].text
    r.read("agent")
    presence.record(home, "agent", "read", at=clock.t, room=str(r.path), lines=1, waited=1.0)
    r.ack("agent")
    assert check().woke == []  # the stall ended
    r.push("again")
    clock.t += model.DEFAULT_S + 1
    assert check().woke == ["agent agent"]  # a new stall, a new wake
