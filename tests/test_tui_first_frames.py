"""The first minute (issue 32 item 6; the 80x24 part is in test_tui_owner_view.py): the first
frames never disagree with each other: the lines panel never shows a room the rooms table does
not list, and a wake's status never contradicts its process's row after the name was started
again."""

from __future__ import annotations

import threading
from pathlib import Path

from ackdeck.core.monitors import procs, wakes
from ackdeck.tui import app as app_mod
from ackdeck.tui.app import make_app
from ackdeck.tui.testing import feed_change, fixed_clock, quiet_config, screen_text, settle
from ackdeck.tui.widgets.line_view import LineView
from ackdeck.tui.widgets.tables import ProcsTable, RoomsTable, WakesTable
from tests.helpers.runs import wait_status
from tests.helpers.wait import WAIT, eventually, eventually_async


def _cells(table, key: str) -> list[str]:
    row = table._rows[table._keys.index(key)]
    return [c.plain if hasattr(c, "plain") else str(c) for c in row]


async def test_lines_shown_before_the_first_scan_are_the_highlighted_rooms(
    tmp_path: Path, monkeypatch
) -> None:
    """The lines panel pages the first room before the first count (a flooded room's first
    page paints long before its count): in those frames the rooms table already lists the
    rooms, highlights the one whose lines are shown, and gives its Pending from the same
    read; it never says "scanning…" beside a full lines panel."""
    alerts = tmp_path / "alerts.txt"
    alerts.write_bytes(b"disk full\nretrying\nstill full\n")
    chat = tmp_path / "chat.txt"
    chat.write_bytes(b"hello\n")
    gate = threading.Event()
    real_scan_at = app_mod.scan_at

    def held_scan_at(*args):  # the first count, held until the frames were looked at
        assert gate.wait(WAIT)
        return real_scan_at(*args)

    monkeypatch.setattr(app_mod, "scan_at", held_scan_at)
    app = make_app(quiet_config([alerts, chat]), clock=fixed_clock)
    async with app.run_test(size=(120, 35)) as pilot:
        try:
            main = app.main
            view = main.query_one(LineView)
            await eventually_async(
                lambda: view.count == 3, what="the lines of alerts.txt", pilot=pilot
            )
            await pilot.pause()
            assert app.snapshot is None  # the scan is still held
            rooms = main.query_one(RoomsTable)
            assert rooms._keys == [str(alerts), str(chat)]
            assert rooms.selected_key == main.selected_room == view.key == str(alerts)
            assert rooms.border_subtitle != RoomsTable.SCANNING
            assert _cells(rooms, str(alerts))[1] == "3"  # what the lines panel read
            assert _cells(rooms, str(chat))[1] == "…"  # not counted yet, and says so
            assert "counting…" in _cells(rooms, str(chat))
            assert "3 lines · alerts.txt" in str(view.border_title)
        finally:
            gate.set()  # also when an assertion failed: the held scan ends at once
        await settle(pilot, timeout=WAIT)
        assert _cells(rooms, str(alerts))[1] == "3" and _cells(rooms, str(chat))[1] == "1"
        assert "counting…" not in screen_text(app)


def _record(home: Path, name: str) -> wakes.WakeRecord | None:
    return next((w for w in wakes.list_wakes(home, "agent") if w.name == name), None)


async def test_a_wake_about_an_earlier_run_says_so_beside_the_names_new_run(
    phome: Path, tmp_path: Path
) -> None:
    """`build` ran and exited (its wake record: `exited`); started again, it is `running`
    in Processes while the record still holds the old run's last event. The Wakes row says
    the status is an earlier run's, until the new run's own event replaces it."""
    monitors = [procs.MonitorSpec("DONE", cooldown_ms=0)]
    first = procs.start(
        phome,
        "build",
        ["sh", "-c", "echo DONE"],
        session="agent",
        monitors=monitors,
        cwd=str(tmp_path),
    )
    wait_status(phome, "build", first.run_id)
    eventually(lambda: (r := _record(phome, "build")) and r.status == "exited", what="exited")
    go = tmp_path / "go"
    script = f'while [ ! -e "{go}" ]; do sleep 0.05; done; echo DONE again; sleep 600'
    second = procs.start(
        phome,
        "build",
        ["sh", "-c", script],
        session="agent",
        monitors=monitors,
        cwd=str(tmp_path),
    )
    record = _record(phome, "build")
    assert record is not None and (record.status, record.run_id) == ("exited", first.run_id)
    app = make_app(quiet_config([], home=phome), clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        ptable, wtable = app.main.query_one(ProcsTable), app.main.query_one(WakesTable)
        assert _cells(ptable, "build")[1] == "running"
        assert _cells(wtable, "agent/build")[6] == "exited (earlier run)"
        assert "exited (earlier run)" in screen_text(app)  # whole, at 80 columns
        # The new run's first match: the record's last event is the current run's now.
        go.touch()
        eventually(
            lambda: (r := _record(phome, "build")) and r.run_id == second.run_id,
            what="the new run's match in the wake record",
        )
        await feed_change(pilot)
        assert _cells(ptable, "build")[1] == "running"
        assert _cells(wtable, "agent/build")[6] == "running"
    procs.kill(phome, "build")
