"""Issue 42, round 4's classes rerun on queue rooms (issue 45): the queue's SQLite state is a
file in the room's sidecar, so any value in it may be one ackdeck never wrote (a hand edit,
another program, a restore from elsewhere). SQLite keeps any type in any column: a text
`frontier` or `next_token` ended claims in a ValueError traceback, a float `frontier` 1e300
stalled the queue silently ("no unclaimed line waits" with lines waiting), a negative one
handed a held line to a second holder. Each is now named in one line, nothing changes.

And a full disk under the state is said to be one (it advised moving the state aside, which
hands every claimed line out again), nothing lost. Real rooms, real `ackdeck` processes, a
real full tmpfs."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from ackdeck.core.service.deck import Deck
from ackdeck.core.service.queue import Claimed, TokenRefused
from tests.helpers.cli import ackdeck
from tests.helpers.clock import Clock
from tests.helpers.mounts import fill, mounted
from tests.test_queue_rooms import queue_room

DAMAGE = {
    "text-next-token": "UPDATE meta SET value = 'abc' WHERE key = 'next_token'",
    "text-frontier": "UPDATE meta SET value = 'x' WHERE key = 'frontier'",
    "huge-frontier": "UPDATE meta SET value = 1e300 WHERE key = 'frontier'",
    "negative-frontier": "UPDATE meta SET value = -100 WHERE key = 'frontier'",
    "queue-id": "UPDATE meta SET value = 'a-b' WHERE key = 'queue_id'",
    "task-state": "UPDATE tasks SET state = 'weird'",
    "task-lease-end": "UPDATE tasks SET until = 'soon'",
    "task-length": "UPDATE tasks SET length = -5",
    "task-digest": "UPDATE tasks SET sha256 = x'00'",
}


def state_of(room: Path) -> Path:
    return room.with_name(f".{room.name}.ackdeck") / "queue.sqlite"


@pytest.mark.parametrize("sql", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_queue_state_value_ackdeck_never_writes_is_one_line_never_a_wrong_claim(
    tmp_path: Path, cli_env: dict[str, str], sql: str
) -> None:
    room = queue_room(tmp_path, b"a\n", b"b\n", b"c\n")
    out = ackdeck(cli_env, "claim", str(room), "--session", "s1", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["line"] == "a\n", out.stderr
    db = sqlite3.connect(state_of(room))
    db.execute(sql)
    db.commit()
    db.close()
    out = ackdeck(cli_env, "claim", str(room), "--session", "s2")
    # Never a traceback, and never "a" (s1 holds it) nor "nothing waits" (b and c wait).
    assert out.returncode == 1 and out.stdout == "", out.stdout
    assert out.stderr.count("\n") == 1 and str(state_of(room)) in out.stderr, out.stderr
    assert "move it aside" in out.stderr
    assert room.read_bytes() == b"a\nb\nc\n"


def test_a_full_disk_under_the_queue_state_says_so_and_loses_nothing(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with mounted(mnt, "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs"):
        room = queue_room(mnt, b"a\n", b"b\n", b"c\n")
        out = ackdeck(cli_env, "claim", str(room), "--session", "s1", "--json")
        token = json.loads(out.stdout)["token"]
        filler = fill(mnt)
        for args in (["claim", str(room), "--session", "s2"], ["done", str(room), token]):
            out = ackdeck(cli_env, *args)
            assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
            assert "the disk is full" in out.stderr and "move it aside" not in out.stderr
        assert room.read_bytes() == b"a\nb\nc\n"
        filler.unlink()
        out = ackdeck(cli_env, "claim", str(room), "--session", "s2", "--json")
        assert json.loads(out.stdout)["line"] == "b\n", out.stderr  # a is still s1's
        out = ackdeck(cli_env, "done", str(room), token)
        assert out.returncode == 0, out.stderr
        assert room.read_bytes() == b"b\nc\n"


def _read_through(path: Path) -> float:
    """Seconds to read `path` once in 64 KiB chunks: what a linear pass costs here now."""
    began = time.monotonic()
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 16):
            pass
    return time.monotonic() - began


def test_a_claim_of_a_line_of_tens_of_mb_costs_time_linear_in_it(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # A task is a line of any size (a producer's `>>`); the claim grew one bytes object a
    # chunk at a time: 14 s for a 50 MB line.
    room = queue_room(tmp_path, b"y" * (40 << 20) + b"\n", b"small\n")
    linear = _read_through(room)
    began = time.monotonic()
    out = ackdeck(cli_env, "claim", str(room), "--session", "s", "--json")
    took = time.monotonic() - began
    assert out.returncode == 0 and len(json.loads(out.stdout)["line"]) == (40 << 20) + 1
    # Start-up, JSON and a busy machine cost some multiple of one read.
    assert took < 20 * linear + 4.0, (took, linear)
    out = ackdeck(cli_env, "claim", str(room), "--session", "s")  # the text is the task, whole
    assert out.stdout.splitlines()[1] == "small"


def test_a_handover_out_of_a_queue_room_is_refused_before_it_copies_a_line(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # It pushed every line to the target, then its ack of the queue was refused: each line
    # was then both a task in the queue (one of them claimed) and a line in the target.
    room = queue_room(tmp_path, b"a\n", b"b\n", b"c\n")
    target = tmp_path / "t.txt"
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "s1").returncode == 0
    assert ackdeck(cli_env, "claim", str(room), "--session", "s1").returncode == 0
    out = ackdeck(
        cli_env, "handover", "--from", "s1", "--to", "s2", "--from-room", str(room),
        "--to-room", str(target),
    )  # fmt: skip
    assert room.read_bytes() == b"a\nb\nc\n" and not target.exists(), target.read_bytes()
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert "is a work queue" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("stdout", ["/dev/full", "closed"])
def test_a_claim_that_never_reached_its_claimant_is_neither_a_lease_nor_a_delivery(
    tmp_path: Path, cli_env: dict[str, str], stdout: str
) -> None:
    # The claim was committed before its output failed: the line was held for a whole lease
    # by nobody, and counted as delivered, so with max_deliveries 1 the next claim sent it to
    # the dead-letter room though no one had ever seen it.
    room = queue_room(tmp_path, b"a\n", b"b\n")
    out = ackdeck(cli_env, "room", "policy", str(room), "--max-deliveries", "1")
    assert out.returncode == 0, out.stderr
    failed = ackdeck(cli_env, "claim", str(room), "--session", "s1", "--json", stdout=stdout)
    out = ackdeck(cli_env, "claim", str(room), "--session", "s2", "--json")
    got = json.loads(out.stdout)
    assert (got["line"], got["deliveries"], got["dead_lettered"]) == ("a\n", 1, 0), got
    assert not room.with_name(room.name + ".dead").exists()
    assert failed.returncode == 1 and failed.stderr.count("\n") == 1, failed.stderr
    assert "nothing was claimed" in failed.stderr and "Traceback" not in failed.stderr
    # The failed claim's token is never issued again: part of it may have reached someone.
    assert not got["token"].startswith("1-")


def test_a_reclaim_that_never_reached_its_claimant_leaves_the_task_as_it_was(
    tmp_path: Path, home: Path
) -> None:
    """A door whose write fails (the CLI's to a full disk) raises from `deliver`: the task
    is its earlier holder's again, its delivery not counted, the failed token refused."""
    room = queue_room(tmp_path, b"x\n")
    clock = Clock()
    one, two = (Deck(home, s, [room], clock=clock) for s in ("one", "two"))
    first = one.claim(one.rooms[0], lease=5)
    clock.t += 100  # its lease ended; nobody claimed it again yet
    seen: list[str] = []

    def full_disk(got: Claimed) -> None:
        assert got.token is not None
        seen.append(got.token)
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError):
        two.claim(two.rooms[0], lease=5, deliver=full_disk)
    with pytest.raises(TokenRefused):
        two.task(two.rooms[0], seen[0], "release")
    again = two.claim(two.rooms[0], lease=5)
    assert (again.line, again.deliveries) == (b"x\n", 2)  # one's claim, then this one
    assert again.token not in (first.token, seen[0])


@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo"])
def test_a_claim_on_a_path_that_is_no_room_says_what_it_is_not_to_make_it_a_queue(
    tmp_path: Path, cli_env: dict[str, str], kind: str
) -> None:
    # "not a queue; make it one with `room policy PATH --queue on`", which then refused it.
    room = queue_room(tmp_path, b"a\n")
    path = tmp_path / "other"
    if kind == "symlink":
        path.symlink_to(room)
    elif kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)
    for args in (["claim", str(path), "--session", "s"], ["done", str(path), "1-abcd"]):
        out = ackdeck(cli_env, *args)
        assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
        assert "--queue on" not in out.stderr and f"is a {kind.replace('fifo', 'FIFO')}" in (
            out.stderr
        )
