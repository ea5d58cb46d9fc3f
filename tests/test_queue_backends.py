"""The work queue's rules on both kinds of room, the same test for each: a file room
(core/rooms/file/queue.py) and a redis room (core/rooms/redis/queue.py, a consumer group on a
real redis-server). Where the kinds differ on purpose, the test says how: a file drops only
its head (a task done behind a held one waits in the file, marked done), a stream deletes
the entry at once; a file forgets a token once its line left, a redis queue remembers a
done token for a while so a retried done (its reply lost) is a no-op."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ackdeck.core.errors import InvalidInput
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.queue import TokenRefused
from tests.helpers.cli import ackdeck
from tests.helpers.clock import Clock
from tests.helpers.queues import QueueRooms
from tests.helpers.wait import eventually

LEASE = 60.0


@pytest.fixture(params=["file", "redis"])
def rooms(request: pytest.FixtureRequest, tmp_path: Path) -> QueueRooms:
    server = request.getfixturevalue("redis_server") if request.param == "redis" else None
    return QueueRooms(request.param, tmp_path, server)


def deck(home: Path, room: str, session: str, clock: Clock) -> Deck:
    return Deck(home, session, [room], clock=clock)


def test_each_line_goes_to_one_claimer_and_done_removes_exactly_it(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"a\n", b"b\n", b"c\n"])
    clock = Clock()
    one, two = deck(home, room, "one", clock), deck(home, room, "two", clock)
    a = one.claim(one.rooms[0], lease=LEASE)
    b = two.claim(two.rooms[0], lease=LEASE)
    assert (a.line, b.line, a.deliveries, b.deliveries) == (b"a\n", b"b\n", 1, 1)
    assert a.token is not None and b.token is not None and a.token != b.token
    got = two.task(two.rooms[0], b.token, "done")
    assert got.mode == "done"
    if rooms.kind == "file":  # a held line before it: b waits in the file, marked done
        assert got.removed == 0 and rooms.lines(room) == [b"a\n", b"b\n", b"c\n"]
    else:  # a stream deletes from the middle
        assert got.removed == 1 and rooms.lines(room) == [b"a\n", b"c\n"]
    assert one.task(one.rooms[0], a.token, "done").mode == "done"
    assert rooms.lines(room) == [b"c\n"]
    assert rooms.completed(room) == 2
    c = one.claim(one.rooms[0], lease=LEASE)
    assert c.line == b"c\n"
    assert two.claim(two.rooms[0]).claimed is False  # c is held; nothing else waits


def test_stale_holder_is_refused_after_its_expired_lease_was_claimed_again(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"fix test_a\n"])
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
    assert rooms.lines(room) == [b"fix test_a\n"]
    assert fast.task(fast.rooms[0], second.token, "done").removed == 1
    assert rooms.lines(room) == []
    assert rooms.completed(room) == 1


def test_a_lease_that_ended_unclaimed_is_still_its_holders(rooms: QueueRooms, home: Path) -> None:
    room = rooms.make("tasks.txt", [b"x\n"])
    clock = Clock()
    d = deck(home, room, "s", clock)
    got = d.claim(d.rooms[0], lease=5)
    assert got.token is not None
    clock.t += 100  # expired, but nobody claimed it again: as a broker's pending entry
    ext = d.task(d.rooms[0], got.token, "extend", lease=30)
    assert ext.lease_until == clock.t + 30
    assert d.claim(d.rooms[0]).claimed is False
    assert d.task(d.rooms[0], got.token, "done").removed == 1


def test_expired_lines_are_handed_out_oldest_first_before_new_ones(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"a\n", b"b\n", b"c\n"])
    clock = Clock()
    d = deck(home, room, "s", clock)
    d.claim(d.rooms[0], lease=20)  # a: ends last
    d.claim(d.rooms[0], lease=10)  # b: ends first
    clock.t += 30
    got = [d.claim(d.rooms[0], lease=60) for _ in range(4)]
    assert [(g.line, g.deliveries) for g in got[:3]] == [(b"a\n", 2), (b"b\n", 2), (b"c\n", 1)]
    assert got[3].claimed is False


def test_release_gives_the_line_back_at_once_and_counts_the_delivery(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"a\n", b"b\n"])
    clock = Clock()
    d = deck(home, room, "s", clock)
    a = d.claim(d.rooms[0])
    assert a.token is not None
    assert d.task(d.rooms[0], a.token, "release").mode == "released"
    again = d.claim(d.rooms[0])
    assert (again.line, again.deliveries) == (b"a\n", 2)  # the oldest line first
    with pytest.raises(TokenRefused, match="superseded"):
        d.task(d.rooms[0], a.token, "done")


def test_a_line_claimed_max_deliveries_times_goes_to_the_dead_letter_room(
    rooms: QueueRooms, home: Path
) -> None:
    room = rooms.make("tasks.txt", [b"poison\n", b"fine\n"], max_deliveries=2)
    clock = Clock()
    d = deck(home, room, "s", clock)
    tokens = []
    for _ in range(2):
        got = d.claim(d.rooms[0], lease=1)
        assert got.line == b"poison\n"
        tokens.append(got.token)
        clock.t += 1
    # Its holders died twice: the third claim moves it first and hands out the next line.
    got = d.claim(d.rooms[0], lease=1)
    assert (got.line, got.dead_lettered) == (b"fine\n", 1)
    assert rooms.dead(room) == [b"poison\n"]
    assert rooms.lines(room) == [b"fine\n"]
    # Its last holder can never complete it now: it is in the dead-letter room.
    with pytest.raises(TokenRefused):
        d.task(d.rooms[0], str(tokens[-1]), "done")
    assert d.open(d.rooms[0]).status().dead_total == 1


def test_a_retried_done_never_completes_twice(rooms: QueueRooms, home: Path) -> None:
    room = rooms.make("tasks.txt", [b"a\n", b"b\n"])
    d = deck(home, room, "s", Clock())
    a = d.claim(d.rooms[0])
    assert a.token is not None
    assert d.task(d.rooms[0], a.token, "done").removed == 1
    if rooms.kind == "file":  # the line left: its token is unknown now
        with pytest.raises(TokenRefused, match="no task holds this token"):
            d.task(d.rooms[0], a.token, "done")
    else:  # remembered for a while: the retry of a done whose reply was lost
        assert d.task(d.rooms[0], a.token, "done").mode == "noop"
        with pytest.raises(TokenRefused, match="done already"):
            d.task(d.rooms[0], a.token, "extend")
    assert rooms.lines(room) == [b"b\n"] and rooms.completed(room) == 1


def test_a_queue_refuses_the_inbox_ack_and_reads_never_dead_letter(
    rooms: QueueRooms, home: Path, cli_env: dict[str, str]
) -> None:
    room = rooms.make("tasks.txt", [b"a\n"], max_deliveries=1)
    d = deck(home, room, "s", Clock())
    for _ in range(3):  # looks at a queue room are not claims
        assert len(d.read(d.rooms[0]).lines) == 1
    with pytest.raises(InvalidInput, match="is a queue"):
        d.ack(d.rooms[0], all=True)
    assert rooms.lines(room) == [b"a\n"] and rooms.dead(room) == []
    # From the CLI: one line, and the lines an `ack --all` would remove are not printed.
    out = ackdeck(cli_env, "room", "ack", room, "--all", "--session", "s")
    assert out.returncode == 1 and out.stdout == "" and "is a queue" in out.stderr
    got = d.claim(d.rooms[0])
    assert (got.line, got.deliveries, got.dead_lettered) == (b"a\n", 1, 0)


def test_an_inbox_refuses_claims_in_one_line(rooms: QueueRooms, home: Path) -> None:
    room = rooms.make("inbox.txt", [b"a\n"])
    r = Deck(home, "s", [room])
    r.policy(r.rooms[0], {"queue": None})  # an inbox again
    with pytest.raises(InvalidInput, match="not a queue.*--queue on"):
        r.claim(r.rooms[0])
    assert rooms.lines(room) == [b"a\n"]


def test_tokens_of_one_queue_are_refused_by_another(rooms: QueueRooms, home: Path) -> None:
    one = rooms.make("one.txt", [b"a\n"])
    two = rooms.make("two.txt", [b"b\n"])
    d1, d2 = deck(home, one, "s", Clock()), deck(home, two, "s", Clock())
    a = d1.claim(d1.rooms[0])
    d2.claim(d2.rooms[0])
    assert a.token is not None
    with pytest.raises(TokenRefused, match="another queue state"):
        d2.task(d2.rooms[0], a.token, "done")
    assert rooms.lines(two) == [b"b\n"]


# ----- the CLI ---------------------------------------------------------------------------------
def test_cli_claim_done_and_a_superseded_token_is_one_line_exit_4(
    rooms: QueueRooms, cli_env: dict[str, str]
) -> None:
    room = rooms.make("tasks.txt", [])
    rooms.append(room, b"review a.py\n")  # a producer that knows nothing of ackdeck
    out = ackdeck(cli_env, "claim", room, "--session", "s1", "--lease", "1s", "--json")
    first = json.loads(out.stdout)
    assert first["claimed"] and first["line"] == "review a.py\n" and first["lease_seconds"] == 1

    def reclaimed() -> dict[str, object] | None:
        got = json.loads(ackdeck(cli_env, "claim", room, "--session", "s2", "--json").stdout)
        return got if got["claimed"] else None

    second = eventually(reclaimed, what="the lease to end", timeout=30)
    out = ackdeck(cli_env, "done", room, first["token"])
    assert out.returncode == 4 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "token superseded" in out.stderr
    out = ackdeck(cli_env, "done", room, str(second["token"]), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["mode"] == "done"
    assert rooms.lines(room) == []
    out = ackdeck(cli_env, "done", room, "nonsense")
    assert out.returncode != 0 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_done_next_finishes_a_task_and_claims_the_next_in_one_call(
    rooms: QueueRooms, cli_env: dict[str, str]
) -> None:
    room = rooms.make("tasks.txt", [b"a\n", b"b\n"])
    first = json.loads(ackdeck(cli_env, "claim", room, "--session", "w", "--json").stdout)
    out = ackdeck(cli_env, "done", room, first["token"], "--next", "--session", "w", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["mode"] == "done"
    assert (got["claimed_next"]["line"], got["claimed_next"]["deliveries"]) == ("b\n", 1)
    assert rooms.lines(room) == [b"b\n"]
    # The last one: done, and nothing more to claim.
    token = got["claimed_next"]["token"]
    out = ackdeck(cli_env, "done", room, token, "--next", "--session", "w")
    assert out.returncode == 0 and "no unclaimed line waits" in out.stdout, out
    assert rooms.lines(room) == [] and rooms.completed(room) == 2
    # A token this queue never issued: refused in one line, exit 4, and nothing is claimed.
    rooms.append(room, b"c\n")
    out = ackdeck(cli_env, "done", room, "1-abcd1234", "--next", "--session", "w")
    assert out.returncode == 4 and out.stderr.count("\n") == 1
    assert (
        json.loads(ackdeck(cli_env, "claim", room, "--session", "v", "--json").stdout)["deliveries"]
        == 1
    )
