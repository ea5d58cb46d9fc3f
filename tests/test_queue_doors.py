"""The work queue through the doors around the agent and its owner, on a file room and on a
redis room: the Stop hook reminds an agent of a claim it holds unfinished (cheaply: nothing is
looked at for a session that never claimed), `room trace` shows each claim, expiry and
completion, the queue's view and metrics count it, the owner dead-letters a line, and the
dashboard shows a queue and acts on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import ackdeck
from tests.helpers.queues import QueueRooms


@pytest.fixture(params=["file", "redis"])
def rooms(request: pytest.FixtureRequest, tmp_path: Path) -> QueueRooms:
    server = request.getfixturevalue("redis_server") if request.param == "redis" else None
    return QueueRooms(request.param, tmp_path, server)


def stop(env: dict[str, str], room: str, session: str, active: bool):  # type: ignore[no-untyped-def]
    """The Stop hook as installed for `session`, its inbox an empty room beside the queue
    (the reminder does not depend on the rooms the hook watches)."""
    inbox = Path(env["ACKDECK_HOME"]).parent / "inbox.txt"
    inbox.touch()
    payload = {"hook_event_name": "Stop", "stop_hook_active": active, "session_id": "x"}
    return ackdeck(
        env, "hooks", "stop", "--session", session, "--room", str(inbox),
        input=json.dumps(payload),
    )  # fmt: skip


def test_the_stop_hook_reminds_an_agent_of_a_claim_it_has_not_finished(
    rooms: QueueRooms, cli_env: dict[str, str]
) -> None:
    room = rooms.make("tasks.txt", [b"fix test_parser\n", b"review a.py\n"])
    assert stop(cli_env, room, "agent", False).returncode == 0  # nothing held: it may stop
    got = json.loads(ackdeck(cli_env, "claim", room, "--session", "agent", "--json").stdout)
    out = stop(cli_env, room, "agent", False)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert got["token"] in out.stderr and "fix test_parser" in out.stderr
    assert "task_done" in out.stderr and "lease ends in" in out.stderr
    # Another session holds nothing: it is not reminded of the agent's claim.
    assert stop(cli_env, room, "other", False).returncode == 0
    # Already continuing because of a Stop hook: no second block for the same claim.
    again = stop(cli_env, room, "agent", True)
    assert again.returncode == 0 and got["token"] not in again.stderr
    # The reminder is a notice: it claimed, finished or released nothing.
    assert rooms.lines(room) == [b"fix test_parser\n", b"review a.py\n"]
    done = ackdeck(cli_env, "done", room, got["token"])
    assert done.returncode == 0, done.stderr
    assert stop(cli_env, room, "agent", False).returncode == 0  # finished: nothing to remind


def test_a_refused_token_ends_its_reminder(rooms: QueueRooms, cli_env: dict[str, str]) -> None:
    room = rooms.make("tasks.txt", [b"x\n"])
    got = json.loads(
        ackdeck(cli_env, "claim", room, "--session", "agent", "--lease", "0.1s", "--json").stdout
    )
    # Its lease ends; another session claims the line: the agent's token is superseded.
    from tests.helpers.wait import eventually

    def taken() -> bool:
        out = json.loads(ackdeck(cli_env, "claim", room, "--session", "b", "--json").stdout)
        return bool(out["claimed"])

    eventually(taken, what="the lease to end and the line to be claimed again", timeout=30)
    assert stop(cli_env, room, "agent", False).returncode == 2  # still marked: done will say
    out = ackdeck(cli_env, "done", room, got["token"])
    assert out.returncode == 4
    assert stop(cli_env, room, "agent", False).returncode == 0
    assert stop(cli_env, room, "b", False).returncode == 2  # b holds it now


# ----- room trace, the queue's view and metrics -------------------------------------------------
def test_room_trace_shows_each_claim_expiry_release_and_completion(
    rooms: QueueRooms, home: Path
) -> None:
    from ackdeck.core.service.deck import Deck
    from tests.helpers.clock import Clock

    room = rooms.make("tasks.txt", [b"a\n", b"b\n"])
    clock = Clock()
    one, two = Deck(home, "one", [room], clock=clock), Deck(home, "two", [room], clock=clock)
    a = one.claim(one.rooms[0], lease=10)
    clock.t += 11  # one's lease ends
    a2 = two.claim(two.rooms[0], lease=10)
    b = one.claim(one.rooms[0], lease=10)
    assert a2.token is not None and b.token is not None
    one.task(one.rooms[0], b.token, "release")
    where_a = a.offset if rooms.kind == "file" else a.entry
    where_b = b.offset if rooms.kind == "file" else b.entry
    held = one.trace(one.rooms[0], offset=where_a).lines[0]
    assert held.claims is not None
    assert [(c.session, c.end) for c in held.claims] == [("one", "expired"), ("two", "holding")]
    assert held.summary.startswith("claimed by two; the lease ends in")
    two.task(two.rooms[0], a2.token, "done")
    gone = one.trace(one.rooms[0], offset=where_a).lines[0]
    assert gone.claims is not None
    assert [(c.session, c.token, c.end) for c in gone.claims] == [
        ("one", 1, "expired"),
        ("two", 2, "done"),
    ]
    assert gone.summary == "done by two (claimed 2 times)"
    text = "\n".join(gone.report())
    assert "claimed" in text and "expired" in text and "done       by two" in text
    released = one.trace(one.rooms[0], offset=where_b).lines[0]
    assert released.claims is not None
    assert [(c.session, c.end) for c in released.claims] == [("one", "released")]
    assert released.summary == "claimable again (released by one)"


def test_the_queue_view_and_metrics_count_claimed_expired_and_dead(
    rooms: QueueRooms, home: Path
) -> None:
    from ackdeck.core.service import metrics
    from ackdeck.core.service.deck import Deck
    from ackdeck.core.service.queue import file_queue
    from tests.helpers.clock import Clock

    room = rooms.make("tasks.txt", [b"a\n", b"b\n", b"c\n", b"d\n"], max_deliveries=1)
    clock = Clock()
    d = Deck(home, "s", [room], clock=clock)
    d.claim(d.rooms[0], lease=5)  # a: will expire
    clock.t += 6
    d.claim(d.rooms[0], lease=60)  # a expired once already (max 1): dead; b handed out
    d.claim(d.rooms[0], lease=5)  # c
    clock.t += 6  # c's lease ends; b's runs
    view = file_queue(d.open(d.rooms[0])).view()
    assert (view.claimed, view.expired, view.dead) == (1, 1, 1)
    assert [(h.holder, h.deliveries) for h in view.held] == [("s", 1), ("s", 1)]
    assert view.held[0].claimed_at is not None and view.held[0].until > clock.t
    # The exporter reads the real clock, decades past this test's: both leases have ended.
    text = metrics.exposition([room], None).decode()
    got = {
        line.split("{")[0]: line.rsplit(" ", 1)[1]
        for line in text.splitlines()
        if line.startswith("ackdeck_queue_")
    }
    assert got == {
        "ackdeck_queue_claimed_lines": "0.0",
        "ackdeck_queue_expired_lines": "2.0",
        "ackdeck_queue_dead_lines_total": "1.0",
    }, text


def test_the_owner_dead_letters_a_claimed_line_and_its_holder_is_refused(
    rooms: QueueRooms, home: Path
) -> None:
    from ackdeck.core.service.deck import Deck
    from ackdeck.core.service.queue import TokenRefused
    from tests.helpers.clock import Clock

    room = rooms.make("tasks.txt", [b"poison\n", b"fine\n"])
    clock = Clock()
    worker, owner = Deck(home, "worker", [room], clock=clock), Deck(home, "owner", [room])
    got = worker.claim(worker.rooms[0], lease=60)
    assert got.token is not None
    moved = owner.dead_letter(owner.rooms[0], got.token)
    assert moved.mode == "dead" and moved.removed == 1
    assert rooms.dead(room) == [b"poison\n"] and rooms.lines(room) == [b"fine\n"]
    with pytest.raises(TokenRefused):
        worker.task(worker.rooms[0], got.token, "done")
    with pytest.raises(TokenRefused):  # once only: the token names no task now
        owner.dead_letter(owner.rooms[0], got.token)
    assert rooms.dead(room) == [b"poison\n"]
    assert worker.claim(worker.rooms[0]).line == b"fine\n"
    where = got.offset if rooms.kind == "file" else got.entry
    gone = worker.trace(worker.rooms[0], offset=where).lines[0]
    assert gone.claims is not None and gone.claims[-1].end == "dead"


def test_release_dead_on_the_cli_dead_letters_the_line_in_one_line(
    rooms: QueueRooms, cli_env: dict[str, str]
) -> None:
    room = rooms.make("tasks.txt", [b"poison\n", b"fine\n"])
    got = json.loads(ackdeck(cli_env, "claim", room, "--session", "w", "--json").stdout)
    out = ackdeck(cli_env, "release", room, got["token"], "--dead", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["mode"] == "dead"
    assert rooms.dead(room) == [b"poison\n"] and rooms.lines(room) == [b"fine\n"]
    again = ackdeck(cli_env, "release", room, got["token"], "--dead")
    assert again.returncode == 4 and again.stderr.count("\n") == 1
    assert stop(cli_env, room, "w", False).returncode == 0  # no reminder of a dead line


# ----- the dashboard ----------------------------------------------------------------------------
async def test_the_dashboard_shows_a_queue_and_the_owner_releases_or_dead_letters_a_claim(
    tmp_path: Path, home: Path
) -> None:
    """`Q` on a queue room: counts of unclaimed, claimed, expired and dead lines and each claim
    with its holder; `R` then `y` gives the highlighted claim back (its holder is refused);
    `D` then `y` moves the highlighted claim's line to the dead-letter room."""
    from ackdeck.core.rooms.file.room import Room
    from ackdeck.core.rooms.policy import RoomPolicy
    from ackdeck.core.service.deck import Deck
    from ackdeck.core.service.queue import TokenRefused
    from ackdeck.tui.app import make_app
    from ackdeck.tui.screens.modals import ConfirmScreen
    from ackdeck.tui.screens.queue import QueueScreen
    from ackdeck.tui.testing import quiet_config, screen_text, settle
    from tests.helpers.wait import eventually_async

    room = tmp_path / "tasks.txt"
    room.write_bytes(b"a\n[b]b[/b]\nc\n")
    Room(room).set_policy(RoomPolicy(queue=True))
    worker = Deck(home, "worker-1", [room])
    held = worker.claim(worker.rooms[0], lease=600)
    assert held.token is not None
    app = make_app(quiet_config([room], home=home))
    async with app.run_test(size=(150, 32)) as pilot:
        await settle(pilot)
        await pilot.press("Q")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        screen = app.screen
        await eventually_async(lambda: bool(screen.rows), what="the queue looked at")
        assert list(screen.rows) == [held.token]
        text = screen_text(app)
        assert "2 unclaimed · 1 claimed · 0 expired or released · 0 dead-lettered" in text
        assert "worker-1" in text
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        await eventually_async(
            lambda: "1 expired or released" in screen_text(app), what="the release shown"
        )
        # Claimed again by another worker, then dead-lettered by the owner with D.
        other = Deck(home, "worker-3", [room]).claim(worker.rooms[0])
        assert other.line == b"a\n" and other.token is not None
        await pilot.press("l")
        await eventually_async(lambda: other.token in screen.rows, what="the new claim shown")
        table = screen.query_one("#queue-table")
        table.move_cursor(row=table.get_row_index(other.token))
        await pilot.press("D")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        await eventually_async(
            lambda: "1 dead-lettered" in screen_text(app), what="the dead letter shown"
        )
        assert room.with_name("tasks.txt.dead").read_bytes() == b"a\n"
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, QueueScreen)
    assert room.read_bytes() == b"[b]b[/b]\nc\n"
    # The first holder's line was given back, claimed again and dead-lettered: refused.
    with pytest.raises(TokenRefused):
        worker.task(worker.rooms[0], held.token, "done")


# ----- the agents' door on a redis queue --------------------------------------------------------
async def test_the_mcp_task_tools_work_a_redis_queue(redis_server: object, tmp_path: Path) -> None:
    """The official SDK client through a real `ackdeck mcp` on a redis queue room: a claim
    (its structured content names the entry), an extend, a done, a done with `next: true`
    (the next claim in the same call); a refused token is an error result in one line; the
    reminder mark follows the claim and its done."""
    from tests.helpers.mcp import call, connect, error_of, text_of

    rooms = QueueRooms("redis", tmp_path, redis_server)
    room = rooms.make("tasks", [b"fix a\n", b"fix b\n"])
    home = tmp_path / "home"
    home.mkdir()
    async with connect(home, [room], "agent") as client:  # type: ignore[list-item]
        got = await call(client, "task_claim", {"lease": 30})
        assert not got.is_error, text_of(got)
        claim = got.structured_content
        assert claim is not None and claim["claimed"] and claim["line"] == "fix a\n"
        assert claim["entry"] and claim["offset"] is None
        assert "task_done" in text_of(got) and claim["token"] in text_of(got)
        assert (home / "claims" / "agent" / f"{claim['token']}.json").exists()
        ext = await call(client, "task_extend", {"token": claim["token"], "lease": 60})
        assert not ext.is_error and ext.structured_content["mode"] == "extended"  # type: ignore[index]
        done = await call(client, "task_done", {"token": claim["token"]})
        assert not done.is_error and done.structured_content["removed"] == 1  # type: ignore[index]
        assert not (home / "claims" / "agent" / f"{claim['token']}.json").exists()
        # The worker's loop in one call: done, then the next claim (claimed_next).
        b = await call(client, "task_claim", {})
        assert b.structured_content is not None and b.structured_content["line"] == "fix b\n"
        rooms.append(room, b"fix c\n")
        loop = await call(
            client, "task_done", {"token": b.structured_content["token"], "next": True}
        )
        assert not loop.is_error, text_of(loop)
        nxt = loop.structured_content["claimed_next"]  # type: ignore[index]
        assert (nxt["line"], nxt["deliveries"]) == ("fix c\n", 1)
        assert nxt["token"] in text_of(loop) and "fix c" in text_of(loop)
        bad = await call(client, "task_release", {"token": "1-abcd1234"})
        assert bad.is_error and "\n" not in text_of(bad)
        assert error_of(bad)["error"] == "TokenRefused"
    assert rooms.lines(room) == [b"fix c\n"] and rooms.completed(room) == 2


# ----- what the hooks and notices tell an agent about a queue room ------------------------------
def test_the_hooks_and_notices_tell_an_agent_to_claim_a_queue_rooms_lines_not_to_read_them(
    rooms: QueueRooms, cli_env: dict[str, str]
) -> None:
    # A queue refuses the inbox's ack: an agent told "room_list_new ... room_ack" about a queue
    # room is told a call that fails. Every door that tells of new lines names task_claim.
    from ackdeck.core.service.notices import nudge_line, room_notice
    from ackdeck.core.service.views import RoomView

    room = rooms.make("tasks.txt", [b"fix test_parser\n"])
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "x", "prompt": "go"})
    told = ackdeck(cli_env, "hooks", "prompt", "--session", "agent", "--room", room, input=payload)
    assert told.returncode == 0, told.stderr
    assert "task_claim" in told.stdout and "task_done" in told.stdout, told.stdout
    assert "room_list_new" not in told.stdout and "room_ack" not in told.stdout
    # The Stop hook, when lines arrived while the agent worked.
    inbox_stop = {"hook_event_name": "Stop", "stop_hook_active": False, "session_id": "x"}
    rooms.append(room, b"review a.py\n")
    out = ackdeck(
        cli_env, "hooks", "stop", "--session", "agent", "--room", room,
        input=json.dumps(inbox_stop),
    )  # fmt: skip
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "task_claim" in out.stderr and "room_list_new" not in out.stderr
    # The notice and the terminal nudge (the channel's and the nudge's text).
    view = RoomView(room, "tasks.txt", True, 0, 10, 2, "review a.py", queue=True)
    notice = room_notice(view, "agent")
    assert "task_claim (room 'tasks.txt')" in notice.content and "room_ack" not in notice.content
    assert "task_claim" in nudge_line([notice]) and "room_ack" not in nudge_line([notice])
    # A plain room is told as before.
    plain = room_notice(RoomView("inbox.txt", "inbox.txt", True, 0, 1, 1, "x"), "agent")
    assert "room_list_new (room 'inbox.txt')" in plain.content and "task_claim" not in plain.content


def test_the_reminders_marks_follow_claim_extend_done_and_skip_damaged_marks(
    tmp_path: Path,
) -> None:
    # The marks the Stop hook reads (service/claims.py), kept by the service's claim, extend
    # and done in this process; a damaged mark (any JSON: nested, NaN) is skipped, never fatal.
    from ackdeck.core.base import locations
    from ackdeck.core.service import claims
    from ackdeck.core.service.deck import Deck

    rooms = QueueRooms("file", tmp_path)
    room = rooms.make("tasks.txt", [b"fix test_parser\n", b"review a.py\n"])
    home = tmp_path / "home"
    now = [1_800_000_000.0]
    deck = Deck(home, "agent", [room], door="cli", clock=lambda: now[0])
    got = deck.claim(deck.rooms[0], lease=60)
    assert got.claimed and got.token is not None
    (mark,) = claims.held(home, "agent")
    assert mark["token"] == got.token and mark["line"] == "fix test_parser"
    text = claims.reminder(home, "agent", now[0] + 10)
    assert got.token in text and "lease ends in 50 s" in text
    deck.task(deck.rooms[0], got.token, "extend", lease=600)
    assert "lease ends in 590 s" in claims.reminder(home, "agent", now[0] + 10)
    # Damaged marks beside it: skipped by the reminder, left on disk for a person to see.
    d = locations.claims_dir(home, "agent")
    (d / "nested.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    (d / "nan.json").write_bytes(b'{"token": "1-x", "until": NaN}')
    assert claims.reminder(home, "agent", now[0]).count("you hold a task") == 1
    deck.task(deck.rooms[0], got.token, "done")
    assert claims.reminder(home, "agent", now[0]) == ""
    assert claims.held(home, "other") == [] and claims.reminder(home, "other", now[0]) == ""
