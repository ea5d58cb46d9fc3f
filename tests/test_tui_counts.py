"""Every number the dashboard shows is core's number for the same moment (issue 10).

The tables are compared cell by cell with `Room.status()`, `wakes.list_wakes()` and
`procs.list_runs()` across an owner ack, an agent's drain and a dismiss.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from ackdeck.core.monitors import procs, wakes
from ackdeck.core.rooms.absent import ABSENT_CELL
from ackdeck.core.rooms.file.room import Room
from ackdeck.tui import app as app_mod
from ackdeck.tui.app import make_app
from ackdeck.tui.state import in_flight_total, scan_room, unread_summary
from ackdeck.tui.testing import feed_change, fixed_clock, quiet_config, screen_text, settle
from ackdeck.tui.widgets.line_view import LineView
from ackdeck.tui.widgets.tables import ProcsTable, RoomsTable, WakesTable
from tests.helpers.wait import WAIT, eventually, eventually_async

REPO = Path(__file__).resolve().parent.parent
SIZE = (140, 40)


def cells(table, key: str) -> list[str]:
    row = table._rows[table._keys.index(key)]
    return [c.plain if hasattr(c, "plain") else str(c) for c in row]


def assert_screen_matches_core(app, home: Path, rooms: list[Path]) -> None:
    main = app.main
    rt = main.query_one(RoomsTable)
    for room in rooms:
        st = Room(room).status()
        row = cells(rt, str(room))
        assert row[1:6] == [
            f"{st.pending:,}",
            f"{in_flight_total(st):,}",
            f"{st.acked_total:,}",
            f"{st.preserved_total:,}",
            unread_summary(st),
        ], room
    view = main.query_one("#lines", LineView)
    selected = Room(Path(main.selected_room)).status()
    assert view.count == selected.pending
    noun = "line" if selected.pending == 1 else "lines"
    assert f"{selected.pending:,} {noun}" in str(view.border_title)
    wt = main.query_one(WakesTable)
    records = wakes.list_wakes(home)
    assert sorted(wt._keys) == sorted(f"{w.session}/{w.name}" for w in records)
    for w in records:
        row = cells(wt, f"{w.session}/{w.name}")
        assert row[3:6] == [f"{w.pending:,}", f"{w.delivered_total:,}", f"{w.superseded_total:,}"]
    pt = main.query_one(ProcsTable)
    for run in procs.list_runs(home, latest_only=True):
        assert cells(pt, run.name)[4] == f"{run.matches:,}"


async def test_every_count_on_screen_equals_core_across_ack_drain_and_dismiss(
    home: Path, tmp_path: Path
) -> None:
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"".join(f"alert {i}\n".encode() for i in range(7)))
    other = tmp_path / "chat.txt"
    other.write_bytes(b"hello\n")
    Room(room).read("agent")
    procs.start(
        home,
        "tests",
        ["sh", "-c", "echo FAIL a; echo FAIL b; echo FAIL c; exit 1"],
        session="agent",
        monitors=[procs.MonitorSpec("FAIL", cooldown_ms=0)],
        cwd=str(tmp_path),
    )
    eventually(lambda: procs.get_run(home, "tests").status != "running", what="tests to exit")
    eventually(
        lambda: any(w.name == "tests" and w.pending for w in wakes.list_wakes(home)),
        what="the wake record",
    )
    app = make_app(quiet_config([room, other], home=home), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, timeout=WAIT)
        assert_screen_matches_core(app, home, [room, other])
        # The owner reads and acks while a shell poller appends in between.
        await pilot.press("r")
        await settle(pilot, timeout=WAIT)
        subprocess.run(["sh", "-c", f'printf "late\\n" >> "{room}"'], check=True)
        await pilot.press("a")
        await settle(pilot, timeout=WAIT)
        await feed_change(pilot)
        assert_screen_matches_core(app, home, [room, other])
        # The agent drains its wakes: Pending goes to core's 0, Delivered up.
        result = wakes.drain(home, "agent")
        assert result.delivered
        await feed_change(pilot)
        assert_screen_matches_core(app, home, [room, other])
        wt = app.main.query_one(WakesTable)
        assert cells(wt, "agent/tests")[3] == "0"
        # The owner dismisses the record (asked first).
        wt.focus()
        await pilot.press("x")
        await settle(pilot, timeout=WAIT)
        await pilot.press("y")
        await settle(pilot, timeout=WAIT)
        await feed_change(pilot)
        assert not [w for w in wakes.list_wakes(home) if w.name == "tests"]
        assert_screen_matches_core(app, home, [room, other])


def _blocked_on_a_lock(pid: int) -> bool:
    """Is `pid` waiting for a lock (a `->` line of /proc/locks)?"""
    with open("/proc/locks") as f:
        return any("->" in line and f" {pid} " in line for line in f)


def test_arrivals_do_not_double_count_an_ack_that_lands_during_a_status(
    tmp_path: Path, monkeypatch
) -> None:
    # Room.status used to open the file, then read the ledger: an ack landing in between made
    # pending (old file) plus acked (new ledger) count the acked lines twice, and the sparkline
    # jumped by that much. Room.status now opens the file under the room's shared lock, so an
    # ack started right after the open (a real ack in another process) waits for the status to
    # finish: the scan sees the room before the ack, the next scan after it, never both.
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"".join(f"alert {i}\n".encode() for i in range(10)))
    Room(room).read("agent")
    real_open = Room._open
    acks: list[subprocess.Popen[bytes]] = []

    def open_then_ack(self: Room):
        fd = real_open(self)
        if not acks:
            script = (
                "import sys; from ackdeck.core.rooms.file.room import Room; "
                "Room(sys.argv[1]).ack('agent')"
            )
            acks.append(subprocess.Popen([sys.executable, "-c", script, str(room)], cwd=REPO))
            # Hold the open file until the ack is in flight: blocked on the lock (or, were the
            # status unlocked, done).
            eventually(
                lambda: _blocked_on_a_lock(acks[0].pid) or acks[0].poll() is not None,
                what="the ack to run or wait",
                every=0.01,
            )
        return fd

    monkeypatch.setattr(Room, "_open", open_then_ack)
    try:
        row = scan_room(room, "alerts.txt")
        assert len(acks) == 1  # the ack was started inside the scan
        assert acks[0].wait(60) == 0
    finally:
        for proc in acks:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    monkeypatch.undo()
    after = scan_room(room, "alerts.txt")
    assert row.status is not None and after.status is not None
    assert (row.status.pending, row.status.acked_total) in ((10, 0), (0, 10))
    assert (after.status.pending, after.status.acked_total) == (0, 10)
    assert row.arrived == after.arrived == 10


async def test_tables_say_scanning_while_the_first_scan_runs(tmp_path: Path, monkeypatch) -> None:
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"one\n")
    gate = threading.Event()
    real_scan_at = app_mod.scan_at

    def held_scan_at(*args):
        assert gate.wait(WAIT)
        return real_scan_at(*args)

    monkeypatch.setattr(app_mod, "scan_at", held_scan_at)
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await eventually_async(lambda: app.scanning, what="a scan under way", pilot=pilot)
        await pilot.pause()
        text = screen_text(app)
        assert "scanning…" in text
        assert "no rooms" not in text
        gate.set()
        await settle(pilot, timeout=WAIT)
        assert "scanning…" not in screen_text(app)
        assert "1 line" in screen_text(app) and "1 lines" not in screen_text(app)


async def test_no_rooms_is_said_only_after_a_scan_found_none(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    app = make_app(quiet_config([], home=home), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, timeout=WAIT)
        assert "no rooms: pass --room PATH" in screen_text(app)
        assert "scanning…" not in screen_text(app)


async def test_palette_lists_quit_once(tmp_path: Path) -> None:
    from textual.command import CommandList, CommandPalette

    room = tmp_path / "alerts.txt"
    room.write_bytes(b"one\n")
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, timeout=WAIT)
        await pilot.press("ctrl+p")
        await pilot.press(*"quit")
        listing = app.screen.query_one(CommandList)
        # Hits arrive in batches: take the list once the palette's search has finished.
        gathering = CommandPalette._GATHER_COMMANDS_GROUP
        await eventually_async(
            lambda: (
                listing.option_count > 0
                and not any(w.group == gathering and not w.is_finished for w in app.workers)
            ),
            what="the palette's search to finish",
            pilot=pilot,
        )
        prompts = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert len([p for p in prompts if p.lower().startswith("quit")]) == 1, prompts


def test_unread_counts_are_written_like_the_other_counts(tmp_path: Path) -> None:
    # Pending said "1,677" while Unread said "owner:1677" for the same lines.
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"first\n")
    Room(room).read("owner")
    with room.open("ab") as f:
        f.write(b"".join(b"alert %d\n" % i for i in range(1676)))
    st = Room(room).status()
    assert st.sessions["owner"].unread == 1676
    assert unread_summary(st) == "owner:1,676"


async def test_every_count_equals_core_across_many_rooms_changing_at_once(
    home: Path, tmp_path: Path
) -> None:
    # Issue 22: rooms are counted incrementally and only when they change. Whatever changed
    # (pushes, an unlocked append, a read, an ack, a rewrite in place, a removal), every cell
    # must still be core's number once the watcher (and the scanner process) caught up.
    rooms = []
    for i in range(40):
        p = tmp_path / f"room-{i:02d}.txt"
        p.write_bytes(b"".join(b"seed %d\n" % j for j in range(i * 7)))
        rooms.append(p)
    app = make_app(quiet_config(rooms, home=home, watch=True, scan_process=True), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, timeout=WAIT)
        await eventually_async(
            lambda: any(w.group == "watch" and w.is_running for w in app.workers),
            what="the watcher to start",
            pilot=pilot,
        )
        code = (
            "import sys; from pathlib import Path; from ackdeck.core.rooms.file.room import Room\n"
            "rooms = [Path(p) for p in sys.argv[1:]]\n"
            "for i, p in enumerate(rooms):\n"
            "    if i % 3 == 0: Room(p).push('pushed')\n"
            "    if i % 5 == 1:\n"
            "        with p.open('ab') as f: f.write(b'unlocked\\n')\n"
            "    if i % 7 == 2: Room(p).read('agent')\n"
            "    if i % 7 == 3: Room(p).read('agent'); Room(p).push('late'); Room(p).ack('agent')\n"
            "    if i % 11 == 4: p.write_bytes(b'rewritten\\n')\n"
            "    if i % 13 == 5: p.unlink()\n"
        )
        subprocess.run([sys.executable, "-c", code, *map(str, rooms)], check=True, cwd=REPO)

        def table_matches() -> bool:
            rt = app.main.query_one(RoomsTable)
            for room in rooms:
                st = Room(room).status()
                want = f"{st.pending:,}" if st.exists else ABSENT_CELL
                got = cells(rt, str(room))
                expect = [
                    want,
                    f"{in_flight_total(st):,}",
                    f"{st.acked_total:,}",
                    f"{st.preserved_total:,}",
                    unread_summary(st),
                ]
                if got[1:6] != expect:
                    return False
            return True

        await eventually_async(table_matches, what="the table to catch up with core", pilot=pilot)
        await settle(pilot, timeout=WAIT)
        assert table_matches()
        # Every room keeps its row, in the configured order (a removed one: "does not exist").
        assert app.main.query_one(RoomsTable)._keys == [str(r) for r in rooms]
