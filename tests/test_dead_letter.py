"""Redeliveries and the dead-letter room: a line handed out max_deliveries times without an
ack moves to NAME.dead, exactly, under the ack's lock, audited, with a wake for the owner;
off by default; kill -9 at every step of the move loses nothing."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.service import wakes
from ackdeck.core.service.trace import trace
from tests.helpers.cli import ackdeck
from tests.helpers.pauses import start_paused, wait_for_step


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes() if path.exists() else b""
    assert data == b"" or data.endswith(b"\n")
    return data.split(b"\n")[:-1] if data else []


def test_off_by_default_a_line_is_handed_out_again_and_again(tmp_path: Path) -> None:
    r = Room(tmp_path / "r.txt")
    r.push("poison")
    for _ in range(10):
        assert r.read("agent").lines == [b"poison"]
    assert r.status().deliveries == 10
    assert not (tmp_path / "r.txt.dead").exists()


def test_a_line_handed_out_n_times_moves_to_the_dead_letter_room_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("ACKDECK_HOME", str(home))
    room = tmp_path / "r.txt"
    r = Room(room)
    r.set_policy(RoomPolicy(max_deliveries=3, owner="boss"))
    r.push(b"poison \xff")
    with open(room, "ab") as f:
        f.write(b"\n")  # an empty line from a producer that does not lock: bytes are the truth
    for _ in range(3):
        assert len(r.read("agent").lines) == 2
    r.push("fresh")
    got = r.read("agent")  # the fourth read: the two lines go, "fresh" is handed out
    assert got.lines == [b"fresh"]
    assert lines_of(tmp_path / "r.txt.dead") == [b"poison \xff", b""]
    st = r.status()
    assert (st.dead_total, st.acked_total, st.pending, st.deliveries) == (2, 0, 1, 1)
    audit = [json.loads(x) for x in (r.sidecar / "audit.jsonl").read_text().splitlines()]
    assert [(a["mode"], a["acked"], a["dead"]) for a in audit] == [
        ("dead", 2, str(tmp_path / "r.txt.dead"))
    ]
    j = trace(r, "r.txt", offset=0).lines[0]
    assert j.dead_room == str(tmp_path / "r.txt.dead") and len(j.reads) == 3
    assert j.summary.startswith("moved to the dead-letter room")
    # The owner is told with a wake; the dead-letter room is a room like any other.
    drained = wakes.drain(home, "boss").delivered
    assert len(drained) == 1 and "2 lines handed out 3 times" in drained[0].lines[0].text
    dead = Room(tmp_path / "r.txt.dead")
    assert dead.read("owner").lines == [b"poison \xff", b""]
    assert dead.ack("owner").acked == 2
    # The agent's ack removes what it read last ("fresh") and nothing else.
    assert r.ack("agent").acked == 1


def test_an_ack_in_between_starts_the_count_again(tmp_path: Path) -> None:
    r = Room(tmp_path / "r.txt")
    r.set_policy(RoomPolicy(max_deliveries=2))
    r.push("a")
    r.read("agent")
    r.ack("agent")
    r.push("b")
    r.read("agent")
    assert r.read("agent").lines == [b"b"]  # "b" was handed out once before this read
    assert r.read("agent").lines == []  # now twice: it moved
    assert lines_of(tmp_path / "r.txt.dead") == [b"b"]


def test_the_cli_sets_and_applies_max_deliveries(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = str(tmp_path / "r.txt")

    ackdeck(cli_env, "room", "push", room, "crashes the agent")
    assert ackdeck(cli_env, "room", "policy", room, "--max-deliveries", "1").returncode == 0
    assert ackdeck(cli_env, "room", "read", room, "--session", "a").stdout == "crashes the agent\n"
    assert ackdeck(cli_env, "room", "read", room, "--session", "a").stdout == ""
    st = json.loads(ackdeck(cli_env, "room", "status", room, "--json").stdout)["rooms"][0]
    assert (st["dead_total"], st["max_deliveries"], st["pending"]) == (1, 1, 0)
    assert "1 line moved to" in ackdeck(cli_env, "room", "status", room).stdout


STEPS = ["before-temp", "after-pending", "after-rename", "after-commit", "after-audit"]


@pytest.mark.parametrize("step", STEPS)
def test_kill9_during_the_move_leaves_every_line_in_one_room_or_both(
    tmp_path: Path, cli_env: dict[str, str], step: str
) -> None:
    room = tmp_path / "r.txt"
    r = Room(room)
    r.set_policy(RoomPolicy(max_deliveries=1))
    r.push("one")
    r.push("two")
    r.read("agent")
    r.push("three")
    marker = tmp_path / "marker"
    proc = start_paused(cli_env, marker, [step], "room", "read", str(room), "--session", "agent")
    wait_for_step(proc, marker, step)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    # The next read recovers (finishes or redoes the move) and hands out the rest.
    got = Room(room).read("agent").lines
    here, dead = lines_of(room), lines_of(tmp_path / "r.txt.dead")
    assert got == here
    assert set(here) | set(dead) == {b"one", b"two", b"three"}  # nothing lost
    assert b"three" in here and b"three" not in dead  # never handed out: never moved
    assert len(here) == len(set(here))  # nothing doubled in the room itself
    assert dead[:2] == [b"one", b"two"]  # a redone move may repeat them after, never tear


def test_a_redis_entry_handed_out_n_times_moves_to_the_dead_letter_stream(
    redis_server: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ackdeck.core.service.refs import open_room

    home = tmp_path / "home"
    monkeypatch.setenv("ACKDECK_HOME", str(home))
    url = redis_server.url()  # type: ignore[attr-defined]
    r = open_room(url)
    r.set_policy(RoomPolicy(max_deliveries=2, owner="boss"))
    first = r.push("poison")
    r.push("also")
    for _ in range(2):
        assert r.read("agent").lines == [b"poison", b"also"]
    r.push("fresh")
    assert r.read("agent").lines == [b"fresh"]
    dead = open_room(url + ".dead")
    assert dead.read("owner").lines == [b"poison", b"also"]
    st = r.status()
    assert (st.dead_total, st.acked_total, st.pending) == (2, 0, 1)
    j = trace(r, "r", offset=first).lines[0]
    assert j.dead_room is not None and j.dead_room.endswith(".dead")
    assert len(j.reads) == 2
    assert r.ack("agent").acked == 1  # its receipt still works: the epoch held
    assert len(wakes.drain(home, "boss").delivered) == 1
    r.close()
    dead.close()


MOVE_STEPS = [
    "push-after-append",  # the lines are in NAME.dead; the room still holds them
    "before-temp",
    "mid-temp",
    "after-temp",
    "after-link",
    "after-pending",
    "after-rename",
    "after-sweep",
    "after-fsync-dir",
    "after-audit",
    "after-commit",
    "after-receipt",
]


def _counter(exposition: bytes, name: str) -> float:
    for line in exposition.decode().splitlines():
        if line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} missing from {exposition.decode()}")


@pytest.mark.parametrize("step", MOVE_STEPS)
def test_kill9_at_each_step_of_the_move_never_reports_the_moved_lines_acked(
    tmp_path: Path, cli_env: dict[str, str], step: str
) -> None:
    from ackdeck.core.service import rooms as service
    from ackdeck.core.service.metrics import exposition

    room = tmp_path / "r.txt"
    r = Room(room)
    r.set_policy(RoomPolicy(max_deliveries=1))
    one = service.push(r, "r.txt", "one")
    r.push("two")
    r.read("agent")
    r.push("three")
    marker = tmp_path / "marker"
    proc = start_paused(cli_env, marker, [step], "room", "read", str(room), "--session", "agent")
    wait_for_step(proc, marker, step)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    renamed = MOVE_STEPS.index(step) >= MOVE_STEPS.index("after-rename")
    dead_room = str(tmp_path / "r.txt.dead")

    def agree(moved: bool) -> None:
        # Status, metrics, trace and wait-ack tell what the move did: nobody acked anything.
        st = Room(room).status()
        assert (st.acked_total, st.dead_total) == (0, 2 if moved else 0)
        metrics = exposition([str(room)], None)
        assert _counter(metrics, "ackdeck_room_acked_lines_total") == 0
        assert _counter(metrics, "ackdeck_room_dead_lettered_lines_total") == (2 if moved else 0)
        j = trace(Room(room), "r.txt", offset=one.offset).lines[0]
        assert j.acked_by is None and j.acked_at is None
        assert j.dead_room == (dead_room if moved else None)
        got = service.wait_ack(Room(room), one, timeout=0)
        assert not got.acked and got.acked_by is None
        assert got.dead_room == (dead_room if moved else None)

    agree(renamed)  # before anything recovers the interrupted move (queries write nothing)
    Room(room).read("agent")  # recovers it, or moves the lines again
    agree(True)
    audit = [json.loads(x) for x in (r.sidecar / "audit.jsonl").read_text().splitlines()]
    assert [a["mode"] for a in audit] == ["dead"]  # one entry for one move, never "recovered"
