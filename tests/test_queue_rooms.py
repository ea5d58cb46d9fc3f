"""A file room used as a work queue (core/rooms/file/queue.py), through the service and the
CLI: what claim, done, extend and release do to real files, the stale holder refused, a
kill -9 at every step of a completion, and a room rewritten behind ackdeck's back."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.queue import TokenRefused
from tests.helpers.cli import ackdeck
from tests.helpers.clock import Clock
from tests.helpers.pauses import kill9, paused, wait_for_step
from tests.helpers.wait import eventually

LEASE = 60.0


def queue_room(tmp_path: Path, *lines: bytes) -> Path:
    room = tmp_path / "tasks.txt"
    room.write_bytes(b"".join(lines))
    r = Room(room)
    r.set_policy(RoomPolicy(queue=True))
    r.close()
    return room


def deck(home: Path, room: Path, session: str, clock: Clock) -> Deck:
    return Deck(home, session, [room], clock=clock)


def audit(room: Path) -> list[dict[str, object]]:
    side = room.with_name(f".{room.name}.ackdeck")
    text = (side / "audit.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_done_removes_exactly_that_line_once_the_lines_before_it_are_finished(
    tmp_path: Path, home: Path
) -> None:
    room = queue_room(tmp_path, b"a\n", b"b\n", b"c\n")
    clock = Clock()
    one, two = deck(home, room, "one", clock), deck(home, room, "two", clock)
    a = one.claim(one.rooms[0], lease=LEASE)
    b = two.claim(two.rooms[0], lease=LEASE)
    assert (a.line, b.line) == (b"a\n", b"b\n")
    assert a.token is not None and b.token is not None
    got = two.task(two.rooms[0], b.token, "done")
    # b is done, but a (before it) is still held: nothing may leave yet.
    assert (got.mode, got.removed) == ("done", 0)
    assert room.read_bytes() == b"a\nb\nc\n"
    got = one.task(one.rooms[0], a.token, "done")
    assert (got.mode, got.removed) == ("done", 2)
    assert room.read_bytes() == b"c\n"
    # Each run of lines left through the ack, audited as the session that finished it.
    assert [(e["session"], e["start"], e["end"]) for e in audit(room)] == [
        ("one", 0, 2),
        ("two", 2, 4),
    ]
    # A retried done with the same token (its reply lost) is refused in one line, changes
    # nothing: the line is finished and gone.
    with pytest.raises(TokenRefused, match="no task holds this token"):
        one.task(one.rooms[0], a.token, "done")
    assert room.read_bytes() == b"c\n"


def test_stale_holder_is_refused_after_its_expired_lease_was_claimed_again(
    tmp_path: Path, home: Path
) -> None:
    room = queue_room(tmp_path, b"fix test_a\n")
    clock = Clock()
    slow, fast = deck(home, room, "slow", clock), deck(home, room, "fast", clock)
    first = slow.claim(slow.rooms[0], lease=10)
    assert fast.claim(fast.rooms[0]).claimed is False  # held
    clock.t += 10  # the lease ends
    second = fast.claim(fast.rooms[0], lease=10)
    assert (second.line, second.deliveries) == (b"fix test_a\n", 2)
    assert first.token is not None and second.token is not None
    for op in ("done", "extend", "release"):
        with pytest.raises(TokenRefused, match="token superseded.*by fast") as err:
            slow.task(slow.rooms[0], first.token, op)
        assert "\n" not in str(err.value)
    assert room.read_bytes() == b"fix test_a\n"
    assert fast.task(fast.rooms[0], second.token, "done").removed == 1
    assert room.read_bytes() == b""


def test_a_lease_that_ended_unclaimed_is_still_its_holders(tmp_path: Path, home: Path) -> None:
    room = queue_room(tmp_path, b"x\n")
    clock = Clock()
    d = deck(home, room, "s", clock)
    got = d.claim(d.rooms[0], lease=5)
    assert got.token is not None
    clock.t += 100  # expired, but nobody claimed it again: as a broker's pending entry
    ext = d.task(d.rooms[0], got.token, "extend", lease=30)
    assert ext.lease_until == clock.t + 30
    assert d.claim(d.rooms[0]).claimed is False
    assert d.task(d.rooms[0], got.token, "done").removed == 1


def test_release_gives_the_line_back_at_once_and_counts_the_delivery(
    tmp_path: Path, home: Path
) -> None:
    room = queue_room(tmp_path, b"a\n", b"b\n")
    clock = Clock()
    d = deck(home, room, "s", clock)
    a = d.claim(d.rooms[0])
    assert a.token is not None
    d.task(d.rooms[0], a.token, "release")
    again = d.claim(d.rooms[0])
    assert (again.line, again.deliveries) == (b"a\n", 2)  # the oldest line first


def test_a_line_claimed_max_deliveries_times_goes_to_the_dead_letter_room(
    tmp_path: Path, home: Path
) -> None:
    room = queue_room(tmp_path, b"poison\n", b"fine\n")
    Room(room).set_policy(RoomPolicy(queue=True, max_deliveries=2))
    clock = Clock()
    d = deck(home, room, "s", clock)
    for _ in range(2):
        got = d.claim(d.rooms[0], lease=1)
        assert got.line == b"poison\n"
        clock.t += 1
    # Its holders died twice: the third claim moves it first and hands out the next line.
    got = d.claim(d.rooms[0], lease=1)
    assert (got.line, got.dead_lettered) == (b"fine\n", 1)
    assert room.with_name("tasks.txt.dead").read_bytes() == b"poison\n"
    assert room.read_bytes() == b"fine\n"  # the dead line left the room (audited as dead)
    assert audit(room)[-1]["mode"] == "dead"


def test_a_room_rewritten_behind_ackdecks_back_starts_the_queue_afresh(
    tmp_path: Path, home: Path
) -> None:
    room = queue_room(tmp_path, b"old\n")
    clock = Clock()
    d = deck(home, room, "s", clock)
    old = d.claim(d.rooms[0])
    assert old.token is not None
    room.write_bytes(b"new one\n")  # truncated and refilled by hand
    got = d.claim(d.rooms[0])
    assert got.line == b"new one\n"
    with pytest.raises(TokenRefused):
        d.task(d.rooms[0], old.token, "done")
    assert room.read_bytes() == b"new one\n"


def test_a_queue_refuses_the_inbox_ack_and_an_inbox_refuses_claims(
    tmp_path: Path, home: Path
) -> None:
    room = queue_room(tmp_path, b"a\n")
    r = Room(room)
    with pytest.raises(InvalidInput, match="is a queue"):
        r.ack("s", all=True)
    inbox = tmp_path / "inbox.txt"
    inbox.write_bytes(b"a\n")
    d = Deck(home, "s", [inbox])
    with pytest.raises(InvalidInput, match="not a queue.*--queue on"):
        d.claim(d.rooms[0])
    assert room.read_bytes() == inbox.read_bytes() == b"a\n"


# ----- the CLI ---------------------------------------------------------------------------------
def test_cli_claim_done_and_a_superseded_token_is_one_line_exit_4(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "tasks.txt"
    room.write_bytes(b"")
    out = ackdeck(cli_env, "room", "policy", str(room), "--queue", "on")
    assert out.returncode == 0 and "a work queue" in out.stdout
    with open(room, "ab") as f:  # a producer that knows nothing of ackdeck
        f.write(b"review a.py\n")
    out = ackdeck(cli_env, "claim", str(room), "--session", "s1", "--lease", "1s", "--json")
    first = json.loads(out.stdout)
    assert first["claimed"] and first["line"] == "review a.py\n" and first["lease_seconds"] == 1

    # Another session waits until the lease ends (no fixed sleep: claim until it is given).
    def reclaimed() -> dict[str, object] | None:
        got = json.loads(ackdeck(cli_env, "claim", str(room), "--session", "s2", "--json").stdout)
        return got if got["claimed"] else None

    second = eventually(reclaimed, what="the lease to end", timeout=30)
    out = ackdeck(cli_env, "done", str(room), first["token"])
    assert out.returncode == 4 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "token superseded" in out.stderr
    out = ackdeck(cli_env, "done", str(room), str(second["token"]), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["mode"] == "done"
    assert room.read_bytes() == b""
    for bad in (["done", str(room), "nonsense"], ["claim", str(room), "--lease", "3h"]):
        out = (
            ackdeck(cli_env, *bad, "--session", "s1")
            if bad[0] == "claim"
            else ackdeck(cli_env, *bad)
        )
        assert out.returncode != 0 and out.stderr.count("\n") == 1, out.stderr
        assert "Traceback" not in out.stderr


# ----- kill -9 at every step of a completion ----------------------------------------------------
DONE_STEPS = [
    "queue-before-update-commit",
    "queue-after-update-commit",
    "before-temp",
    "after-pending",
    "after-rename",
    "after-audit",
    "after-commit",
    "queue-after-compact",
]


@pytest.mark.parametrize("step", DONE_STEPS)
def test_done_killed_at_each_step_leaves_the_line_done_once_or_still_held(
    tmp_path: Path, cli_env: dict[str, str], step: str
) -> None:
    room = queue_room(tmp_path, b"a\n", b"b\n")
    out = ackdeck(cli_env, "claim", str(room), "--session", "s", "--json")
    token = json.loads(out.stdout)["token"]
    marker = tmp_path / "paused"
    with paused(cli_env, marker, [step], "done", str(room), token) as proc:
        wait_for_step(proc, marker, step)
        kill9(proc)
    # Before the commit the done never happened: the holder's retry does it. After it, the
    # retry is refused or a no-op, and the line leaves (the next operation finishes the
    # interrupted ack). Either way: a is gone exactly once, b is still there, claimable.
    again = ackdeck(cli_env, "done", str(room), token, "--json")
    committed = step != "queue-before-update-commit"
    if committed:
        assert again.returncode in (0, 4), again.stderr
    else:
        assert again.returncode == 0 and json.loads(again.stdout)["mode"] == "done"
    nxt = json.loads(ackdeck(cli_env, "claim", str(room), "--session", "t", "--json").stdout)
    assert nxt["line"] == "b\n"
    assert room.read_bytes() == b"b\n"
    acked = [e for e in audit(room) if e["mode"] in ("prefix", "recovered")]
    assert sum(int(e["acked"]) for e in acked) == 1, acked


CLAIM_STEPS = ["queue-before-claim-commit"]


def test_claim_killed_before_its_commit_hands_out_nothing(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = queue_room(tmp_path, b"a\n")
    marker = tmp_path / "paused"
    step = CLAIM_STEPS[0]
    with paused(cli_env, marker, [step], "claim", str(room), "--session", "s") as proc:
        wait_for_step(proc, marker, step)
        kill9(proc)
    got = json.loads(ackdeck(cli_env, "claim", str(room), "--session", "t", "--json").stdout)
    assert (got["line"], got["deliveries"]) == ("a\n", 1)


def test_claim_killed_after_the_dead_letter_append_never_lets_the_holder_complete_it(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = queue_room(tmp_path, b"poison\n", b"fine\n")
    Room(room).set_policy(RoomPolicy(queue=True, max_deliveries=1))
    first = json.loads(
        ackdeck(cli_env, "claim", str(room), "--session", "s", "--lease", "0.2s", "--json").stdout
    )
    marker = tmp_path / "paused"
    step = "queue-after-dead-append"
    # The next claim must find the lease ended (else it takes `fine`): wait for the clock.
    eventually(lambda: time.time() > first["lease_until"], what="the lease to end")
    with paused(cli_env, marker, [step], "claim", str(room), "--session", "t") as proc:
        wait_for_step(proc, marker, step)
        kill9(proc)
    # The line is in the dead-letter room and dying: its old holder cannot complete it.
    out = ackdeck(cli_env, "done", str(room), first["token"])
    assert out.returncode == 4 and "dead-letter room" in out.stderr
    nxt = json.loads(ackdeck(cli_env, "claim", str(room), "--session", "t", "--json").stdout)
    assert nxt["line"] == "fine\n"
    assert room.read_bytes() == b"fine\n"
    # In the dead-letter room once, or twice when the kill came after its append (the
    # recovery appends again rather than risk losing it); never in neither.
    dead = room.with_name("tasks.txt.dead").read_bytes()
    assert dead in (b"poison\n", b"poison\npoison\n")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "pages", "directory"])
def test_a_damaged_queue_state_is_one_line_and_kept(
    tmp_path: Path, cli_env: dict[str, str], damage: str
) -> None:
    room = queue_room(tmp_path, b"a\n", b"b\n")
    ackdeck(cli_env, "claim", str(room), "--session", "s")
    state = room.with_name(f".{room.name}.ackdeck") / "queue.sqlite"
    whole = state.read_bytes()
    state.unlink()
    if damage == "garbage":
        state.write_bytes(b"not a database at all\n" * 10)
    elif damage == "truncated":
        state.write_bytes(whole[: len(whole) // 2])
    elif damage == "pages":  # its header and schema intact, its tables' pages not
        state.write_bytes(whole[:4096] + b"\xa5" * (len(whole) - 4096))
    else:
        state.mkdir()
    for args in (["claim", str(room), "--session", "t"], ["done", str(room), "1-abcd"]):
        out = ackdeck(cli_env, *args)
        assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
        assert "queue state" in out.stderr and "Traceback" not in out.stderr
    assert state.exists() and room.read_bytes() == b"a\nb\n"
