"""The header's clock shows the time of day to the minute and repaints once a minute (a clock
with seconds repainted the header every second: most of an idle dashboard's work)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from ackdeck.tui.app import make_app
from ackdeck.tui.testing import quiet_config, settle
from ackdeck.tui.widgets.header import MinuteClock


def _minutes_around_now() -> set[str]:
    now = datetime.now()
    return {(now + timedelta(minutes=d)).strftime("%H:%M") for d in (-1, 0, 1)}


async def test_the_header_clock_shows_hours_and_minutes(tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.write_text("one\n")
    app = make_app(quiet_config([room], show_clock=True))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        clock = app.main.query_one(MinuteClock)
        assert str(clock.render()) in _minutes_around_now()
        # Drawn in the header's top-right corner, where Textual's clock would be.
        assert clock.region.y == 0 and clock.region.right == 120


async def test_without_the_clock_there_is_no_clock(tmp_path: Path) -> None:
    app = make_app(quiet_config([], show_clock=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.main.query(MinuteClock)
