"""The demo world: live pollers, an agent and monitored processes, all stopped on exit."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ackdeck.core.monitors import procs
from ackdeck.core.rooms.file.room import Room
from ackdeck.tui.app import make_app
from ackdeck.tui.demo import DemoWorld
from ackdeck.tui.testing import quiet_config, settle
from ackdeck.tui.widgets.tables import ProcsTable, RoomsTable
from tests.helpers.wait import eventually, eventually_async


async def test_demo_world_feeds_the_dashboard_and_cleans_up(tmp_path: Path) -> None:
    world = DemoWorld(tmp_path)
    try:
        world.start()
        app = make_app(quiet_config(world.rooms, home=world.home, watch=True))
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)

            # The fast poller's lines reach the screen through the watcher alone.
            def arrived() -> bool:
                rooms = app.main.query_one(RoomsTable)
                alerts = next(r for r in app.snapshot.rooms if r.label == "alerts.txt")
                return alerts.status is not None and alerts.arrived >= 3 and rooms.row_count == 3

            await eventually_async(arrived, what="the poller's lines", pilot=pilot)
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


def test_demo_helpers_stop_when_the_demo_dies(tmp_path: Path) -> None:
    """kill -9 of the demo: its pollers notice they were orphaned and stop."""
    import subprocess
    import sys

    room = tmp_path / "r.txt"
    room.touch()
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-m', 'ackdeck.tui.demo', 'poll', sys.argv[1], '50',"
        " 'pager', 'raw'], start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    demo = subprocess.Popen(
        [sys.executable, "-c", code, str(room)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert demo.stdout is not None
    poller = int(demo.stdout.readline())
    eventually(lambda: room.stat().st_size > 0, what="the poller to write")
    demo.kill()
    demo.wait()

    def gone() -> bool:
        try:
            os.kill(poller, 0)
            state = Path(f"/proc/{poller}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return True
        return state == "Z"

    eventually(gone, what="the orphaned poller to stop")


def test_demo_world_stays_alive(tmp_path: Path, monkeypatch) -> None:
    """Processes start again and match, the agent acks and drains, and its wakes are both
    delivered and superseded, for as long as the demo is open (here at a faster pace)."""
    from ackdeck.core.monitors import wakes

    monkeypatch.setenv("ACKDECK_DEMO_PACE", "0.2")
    world = DemoWorld(tmp_path)
    try:
        world.start()

        def alive() -> bool:
            runs = procs.list_runs(world.home)
            again = any(sum(r.name == n for r in runs) >= 2 for n in ("build", "tests"))
            records = wakes.list_wakes(world.home)
            delivered = sum(w.delivered_total for w in records)
            superseded = sum(w.superseded_total for w in records)
            acked = Room(world.rooms[1]).status().acked_total
            return again and delivered > 0 and superseded > 0 and acked > 0

        eventually(alive, timeout=120, what="the demo world to move", every=0.5)
        # And it keeps going: another run starts after that.
        count = len(procs.list_runs(world.home))
        eventually(
            lambda: len(procs.list_runs(world.home)) > count,
            what="a process to start again",
            every=0.5,
        )
    finally:
        world.stop()
    assert all(r.status != "running" for r in procs.list_runs(world.home))
