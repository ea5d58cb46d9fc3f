"""The dashboard's side of issue 24: `t` traces a line (the same journey `room trace` prints),
the rooms table shows how long the oldest line waited, and an overdue room and session are
marked with a word and a colour."""

from __future__ import annotations

from pathlib import Path

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.tui.app import make_app
from ackdeck.tui.screens.modals import PromptScreen, TextScreen
from ackdeck.tui.testing import FIXED_NOW, fixed_clock, quiet_config, screen_text, settle
from ackdeck.tui.widgets.tables import RoomsTable

SIZE = (140, 36)


def _body(app) -> str:  # noqa: ANN001
    screen = app.screen
    assert isinstance(screen, TextScreen)
    return str(screen.query_one("#text-body").render())


async def test_t_traces_a_line_by_offset_and_by_text(tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    r = Room(room, clock=lambda: FIXED_NOW - 60)
    r.push("deploy now")
    at = r.push("second")
    Room(room, door="cli", clock=lambda: FIXED_NOW - 30).read("agent")
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*str(at), "enter")
        await settle(pilot)
        body = _body(app)
        assert f"offset {at}: second" in body
        assert "by agent via cli" in body and "not acked" in body
        await pilot.press("escape")
        await pilot.press("t", *"deploy", "enter")
        await settle(pilot)
        assert "offset 0: deploy now" in _body(app)


async def test_an_overdue_room_and_session_are_marked_with_a_word(tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    old = Room(room, clock=lambda: FIXED_NOW - 3600)
    old.set_policy(RoomPolicy(overdue=600))
    old.push("waiting an hour")
    old.read("agent")  # an hour ago, never acked
    fresh = tmp_path / "fresh.txt"
    Room(fresh, clock=lambda: FIXED_NOW - 5).push("new")
    app = make_app(quiet_config([room, fresh]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "inbox.txt OVERDUE" in text
        assert "agent:0 late" in text
        assert "1h00m" in text  # the oldest line's wait
        assert "fresh.txt OVERDUE" not in text
        table = app.main.query_one(RoomsTable)
        assert table.row_count == 2
