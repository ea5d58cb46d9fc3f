"""A room's policy and its dead-letter room under hostile or careless hands: a policy that makes
no sense is refused in one line whoever wrote it (policy.json, the redis policy hash), a name
in it never becomes a path outside the home, the dead-letter room keeps the room's mode, never
blocks the room it serves and follows --home, and overdue state is keyed by the room, not its
file name."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.service import alerts, wakes
from ackdeck.core.service.refs import open_room
from tests.helpers.cli import ackdeck
from tests.helpers.clock import Clock


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


HOSTILE_POLICIES = [
    {"max_deliveries": 0},
    {"max_deliveries": -3},
    {"max_deliveries": True},
    {"overdue": 0},
    {"overdue": -5},
    {"overdue": float("nan")},
    {"overdue": float("inf")},
    {"owner": "../../x"},
    {"owner": "/tmp/abs"},
    {"owner": ""},
    {"owner": "a/b"},
]


@pytest.mark.parametrize("bad", HOSTILE_POLICIES, ids=lambda d: json.dumps(d))
def test_a_hand_written_policy_that_makes_no_sense_is_refused_in_one_line(
    tmp_path: Path, home: Path, cli_env: dict[str, str], bad: dict[str, object]
) -> None:
    room = tmp_path / "proj" / "r.txt"
    room.parent.mkdir()
    r = Room(room)
    r.push("never read")
    (r.sidecar / "policy.json").write_text(json.dumps(bad))
    before = tree(tmp_path)
    for args in (["room", "policy", str(room)], ["room", "overdue", str(room)]):
        out = ackdeck(cli_env, *args)
        assert out.returncode != 0, (args, out)
        assert out.stderr.count("\n") == 1 and "policy" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
    # A read goes on without the policy: nothing moves, nothing is written outside the room.
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "a").stdout == "never read\n"
    assert not (room.parent / "r.txt.dead").exists()
    assert not (tmp_path / "x").exists() and not Path("/tmp/abs").exists()
    assert not (home / "alerts").exists() and not (home / "wakes").exists()
    assert {p for p in tree(tmp_path) if not p.startswith(("proj/.r.txt.", "home"))} <= before


def test_max_deliveries_zero_in_a_hand_written_policy_moves_no_line_never_read(
    tmp_path: Path,
) -> None:
    room = tmp_path / "r.txt"
    r = Room(room)
    r.push("unread")
    (r.sidecar / "policy.json").write_text(json.dumps({"max_deliveries": 0}))
    assert r.read("agent").lines == [b"unread"]
    assert not (tmp_path / "r.txt.dead").exists()


def test_a_policy_owner_that_is_a_path_in_the_redis_hash_never_reaches_the_disk(
    redis_server: object, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    import redis

    url = redis_server.url()  # type: ignore[attr-defined]
    r = open_room(url)
    r.push("x")
    r.set_policy(RoomPolicy(overdue=1, owner="boss"))
    key = r._keys[1]  # type: ignore[attr-defined]
    raw = json.dumps({"overdue": 1, "max_deliveries": None, "owner": str(tmp_path / "abs")})
    server = redis.Redis.from_url(url.rsplit("/", 1)[0])
    server.hset(key, "policy", raw)
    for args in (["room", "policy", url], ["room", "overdue", url]):
        out = ackdeck(cli_env, *args)
        assert out.returncode != 0 and out.stderr.count("\n") == 1, out
        assert "owner" in out.stderr
    assert not (tmp_path / "abs").exists()
    for bad in ({"max_deliveries": 0}, {"owner": "../../x"}):
        server.hset(key, "policy", json.dumps(bad))
        assert r.read("agent").lines == [b"x"]  # reads go on, nothing moved
    assert open_room(url + ".dead").status().pending == 0
    r.close()


def test_the_dead_letter_room_keeps_the_rooms_mode(tmp_path: Path) -> None:
    room = tmp_path / "r.txt"
    r = Room(room)
    r.push("poison")
    os.chmod(room, 0o600)
    r.set_policy(RoomPolicy(max_deliveries=1))
    r.read("agent")
    r.read("agent")
    dead = tmp_path / "r.txt.dead"
    assert dead.read_bytes() == b"poison\n"
    assert stat.S_IMODE(dead.stat().st_mode) == 0o600
    assert (dead.stat().st_uid, dead.stat().st_gid) == (room.stat().st_uid, room.stat().st_gid)


@pytest.mark.parametrize("blocker", ["directory", "symlink", "fifo", "its sidecar"])
def test_a_blocked_dead_letter_room_never_blocks_the_room_it_serves(
    tmp_path: Path, blocker: str
) -> None:
    room = tmp_path / "r.txt"
    dead = tmp_path / "r.txt.dead"
    if blocker == "directory":
        dead.mkdir()
    elif blocker == "symlink":
        dead.symlink_to(tmp_path / "elsewhere")
    elif blocker == "fifo":
        os.mkfifo(dead)
    else:
        (tmp_path / ".r.txt.dead.ackdeck").write_text("not a directory")
    r = Room(room)
    r.set_policy(RoomPolicy(max_deliveries=1))
    r.push("poison")
    r.push("next")
    for _ in range(3):
        assert r.read("agent").lines == [b"poison", b"next"]  # nothing lost, nothing moved
    assert r.ack("agent").acked == 2
    assert r.status().dead_total == 0
    assert not (tmp_path / "elsewhere").exists()


def test_the_dead_letter_wake_goes_to_the_home_the_command_was_given(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = str(tmp_path / "r.txt")
    other = tmp_path / "other-home"
    assert ackdeck(cli_env, "room", "push", room, "poison").returncode == 0
    set_pol = ["room", "policy", room, "--max-deliveries", "1", "--owner", "boss"]
    assert ackdeck(cli_env, *set_pol).returncode == 0
    read = ["--home", str(other), "room", "read", room, "--session", "a"]
    for _ in range(2):
        assert ackdeck(cli_env, *read).returncode == 0
    assert Path(room + ".dead").read_text() == "poison\n"
    assert len(wakes.drain(other, "boss").delivered) == 1
    assert wakes.drain(Path(cli_env["ACKDECK_HOME"]), "boss").delivered == []


def test_two_rooms_of_one_name_in_two_projects_each_wake_their_owner(
    tmp_path: Path, home: Path
) -> None:
    clock = Clock()
    rooms = []
    for project in ("a", "b"):
        (tmp_path / project).mkdir()
        r = Room(tmp_path / project / "inbox.txt", clock=clock)
        r.set_policy(RoomPolicy(overdue=60, owner="boss"))
        r.push(f"urgent in {project}")
        rooms.append(r)
    clock.t += 61
    # Two cron jobs, one per project: each names its room by its short name.
    assert alerts.check([(rooms[0], "inbox.txt")], home, clock=clock).woke == ["inbox.txt"]
    assert alerts.check([(rooms[1], "inbox.txt")], home, clock=clock).woke == ["inbox.txt"]
    texts = [x.text for d in wakes.drain(home, "boss").delivered for x in d.lines]
    assert len(texts) == 2, texts
    assert any(str(tmp_path / "a" / "inbox.txt") in t for t in texts), texts
    assert any(str(tmp_path / "b" / "inbox.txt") in t for t in texts), texts


def test_a_redis_read_doubt_is_kept_in_the_doors_home(tmp_path: Path) -> None:
    # A room opened by a door with --home keeps its state there, not in $ACKDECK_HOME.
    env = {"ACKDECK_HOME": str(tmp_path / "env-home")}
    r = open_room("redis://127.0.0.1:1/r", env=env, home=tmp_path / "door-home")
    doubts = r._doubts()  # type: ignore[attr-defined]
    assert doubts.put("agent", "1-0") is None
    assert (tmp_path / "door-home" / "redis-doubts").is_dir()
    assert not (tmp_path / "env-home").exists()
