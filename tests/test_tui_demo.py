"""The demo world: live pollers, an agent and monitored processes, all stopped on exit."""

from __future__ import annotations

import os
import time
from pathlib import Path

from core import procs
from core.rooms import Room
from tui.app import make_app
from tui.demo import DemoWorld
from tui.testing import quiet_config, settle
from tui.widgets.tables import ProcsTable, RoomsTable


async def test_demo_world_feeds_the_dashboard_and_cleans_up(tmp_path: Path) -> None:
    world = DemoWorld(tmp_path)
    try:
        world.start()
        app = make_app(quiet_config(world.rooms, home=world.home, watch=True))
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            deadline = time.monotonic() + 20
            # The fast poller's lines reach the screen through the watcher alone.
            while True:
                rooms = app.main.query_one(RoomsTable)
                alerts = next(r for r in app.snapshot.rooms if r.label == "alerts.txt")
                if alerts.status is not None and alerts.arrived >= 3 and rooms.row_count == 3:
                    break
                assert time.monotonic() < deadline, "no poller lines arrived"
                await pilot.pause(0.1)
            assert app.main.query_one(ProcsTable).row_count == 2
        assert {r.name for r in procs.list_runs(world.home)} == {"build", "tests"}
        pids = [c.pid for c in world.children]
    finally:
        world.stop()
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        # A zombie is gone as far as work goes; a live poller is a leak.
        assert Path(f"/proc/{pid}/status").read_text().count("zombie") == 1
    assert all(r.status != "running" for r in procs.list_runs(world.home))
    # Nothing writes to the rooms any more.
    sizes = [Room(p).status().pushed_total for p in world.rooms]
    time.sleep(0.5)
    assert [Room(p).status().pushed_total for p in world.rooms] == sizes
