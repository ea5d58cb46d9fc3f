"""The dashboard follows a room through core's sidecar layout, never its own copy of it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ackdeck.core.rooms.file.room import Room
from ackdeck.tui.app import make_app
from ackdeck.tui.state import in_flight_total
from ackdeck.tui.testing import fixed_clock, quiet_config, settle
from tests.helpers.wait import eventually_async

REPO = Path(__file__).resolve().parent.parent


async def test_a_read_by_another_process_shows_for_a_room_with_a_long_name(
    tmp_path: Path,
) -> None:
    # A 250-byte room name leaves no room for ".NAME.ackdeck": core hashes the sidecar's stem.
    # The dashboard used to build `.NAME.ackdeck/receipts` itself, a name too long to exist
    # (asking whether it is a directory raised ENAMETOOLONG), so it never followed the room.
    room = tmp_path / ("r" * 250)
    room.write_bytes(b"one\ntwo\n")
    Room(room).read("owner")  # the sidecar and its receipts/ exist before the watcher starts
    app = make_app(quiet_config([room], watch=True), clock=fixed_clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert in_flight_total(app.snapshot.rooms[0].status) == 2
        await eventually_async(
            lambda: any(w.group == "watch" and w.is_running for w in app.workers),
            what="the watcher to start",
            pilot=pilot,
        )
        await pilot.pause(0.2)  # let the watcher register its directories
        script = (
            "import sys; from ackdeck.core.rooms.file.room import Room; "
            "Room(sys.argv[1]).read('agent')"
        )
        subprocess.run([sys.executable, "-c", script, str(room)], check=True, cwd=REPO)
        await eventually_async(
            lambda: in_flight_total(app.snapshot.rooms[0].status) == 4,
            what="the read elsewhere to reach the dashboard",
            pilot=pilot,
        )
