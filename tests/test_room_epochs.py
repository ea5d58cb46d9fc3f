"""A room rewritten behind ackdeck's back (truncated, rewritten, recreated) starts a new epoch,
and everything dated or numbered in the old one stays there: ages restart, offsets never
repeat, and a line that left without an ack is never called acked."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.service import alerts, wakes
from ackdeck.core.service import rooms as service
from tests.helpers.cli import ACKDECK
from tests.helpers.clock import Clock
from tests.helpers.wait import eventually


def _truncate(path: Path) -> None:
    with open(path, "wb"):  # `: > room`
        pass


def _rewrite(path: Path) -> None:
    with open(path, "r+b") as f:  # `printf 'x\n' > room`: same inode, new content
        f.truncate(0)
        f.write(b"x\n")


def _recreate(path: Path) -> None:
    path.unlink()
    path.write_bytes(b"")


HANDS: dict[str, Callable[[Path], None]] = {
    "truncate": _truncate,
    "rewrite": _rewrite,
    "recreate": _recreate,
}


@pytest.mark.parametrize("hand", HANDS)
@pytest.mark.parametrize("looked", [False, True], ids=["never-looked", "looked"])
def test_a_push_after_the_room_was_emptied_by_hand_is_young_not_overdue(
    tmp_path: Path, home: Path, hand: str, looked: bool
) -> None:
    clock = Clock()
    path = tmp_path / "inbox.txt"
    r = Room(path, clock=clock)
    r.set_policy(RoomPolicy(overdue=60, owner="boss"))
    if looked:
        r.status()  # the ledger records the room's identity (size 0) before the pushes
    first = r.push("old one")
    r.push("old two")
    clock.t += 3600
    HANDS[hand](path)
    pushed = r.push("new")
    st = r.status()
    assert st.epoch == 1
    # Dated by its own push, not by the old line whose offset it would have repeated.
    assert st.oldest_pending_at == clock.t
    assert pushed > first + len(b"old one\nold two\n") - 1  # past every old offset
    assert alerts.check([(r, "inbox.txt")], home, clock=clock).woke == []
    assert wakes.drain(home, "boss").delivered == []


def test_lines_an_unlocked_producer_wrote_after_a_truncate_are_not_aged_by_old_marks(
    tmp_path: Path, home: Path
) -> None:
    clock = Clock()
    path = tmp_path / "inbox.txt"
    r = Room(path, clock=clock)
    r.set_policy(RoomPolicy(overdue=60, owner="boss"))
    r.push("old one")
    r.push("old two")
    clock.t += 3600
    path.write_bytes(b"new\n")  # `printf 'new\n' > room`: no push, no mark
    st = r.status()
    assert st.pending == 1 and st.epoch == 1
    # Nobody recorded the new epoch yet: unknown, never the old lines' age.
    assert st.oldest_pending_at in (None, clock.t)
    assert alerts.check([(r, "inbox.txt")], home, clock=clock).woke == []
    assert r.status().epoch == 1  # a status that writes no ledger settles the same way again
    assert r.read("agent").lines == [b"new"]
    assert r.status().oldest_pending_at == clock.t


def _wait_ack(env: dict[str, str], room: Path, text: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*ACKDECK, "room", "push", str(room), text, "--wait-ack", "--timeout", "120", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("looked", [False, True], ids=["never-looked", "looked"])
def test_wait_ack_after_a_hand_edit_of_another_line_never_says_acked(
    tmp_path: Path, cli_env: dict[str, str], looked: bool
) -> None:
    room = tmp_path / "inbox.txt"
    r = Room(room)
    r.push("one")
    if looked:
        r.status()
    proc = _wait_ack(cli_env, room, "two")
    eventually(lambda: b"two\n" in room.read_bytes(), what="the push to land")
    # `sed -i '/one/d' room`: a new file without "one"; nobody acked "two".
    subprocess.run(["sed", "-i", "/one/d", str(room)], check=True)
    assert room.read_bytes() == b"two\n"
    r.status()  # anything that looks at the room settles the new epoch
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, (out, err)
    doc = json.loads(out)
    assert (doc["acked"], doc["acked_by"], doc["removed"]) == (False, None, True)
    assert "without an ack" in err and "acked by" not in err
    # The line is still there, in the new epoch: the agent gets it, nothing says it was acked.
    assert Room(room).read("agent").lines == [b"two"]


def test_service_wait_ack_after_a_truncate_says_removed_not_acked(tmp_path: Path) -> None:
    r = Room(tmp_path / "r.txt")
    r.push("one")
    pushed = service.push(r, "r.txt", "two")
    _truncate(tmp_path / "r.txt")
    r.status()
    got = service.wait_ack(r, pushed, timeout=30)
    assert (got.acked, got.removed, got.timed_out, got.acked_by) == (False, True, False, None)


def test_a_new_epoch_never_reuses_an_offset_a_push_handed_out(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    r = Room(path)
    offsets = [r.push(f"line {i}") for i in range(5)]
    os.truncate(path, 0)
    again = [r.push(f"new {i}") for i in range(5)]
    assert min(again) > max(offsets)
    assert [Room(path).trace(o).text for o in again] == [f"new {i}".encode() for i in range(5)]
