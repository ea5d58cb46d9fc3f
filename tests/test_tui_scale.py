"""The dashboard's work grows with what changed (issue 22): the scanner counts only rooms that
changed, replies with their rows only, run output never recounts rooms, the table updates
only changed rows, and labels are linear. Behaviour, not timings (those live in bench/)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual.widget import Widget

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.refs import parse_room
from ackdeck.core.service.roomref import RoomRef
from ackdeck.tui.app import SWEEP_TICKS, make_app
from ackdeck.tui.room_counts import RoomCounter, ScanDelta, ScanRequest
from ackdeck.tui.state import room_labels
from ackdeck.tui.testing import fixed_clock, quiet_config, settle
from ackdeck.tui.watch_map import WatchMap, home_event
from ackdeck.tui.widgets.tables import RoomsTable
from tests.helpers.cli import ackdeck
from tests.helpers.wait import WAIT, eventually_async

REPO = Path(__file__).resolve().parent.parent


def rooms_in(tmp_path: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        p = tmp_path / f"room-{i:02d}.txt"
        p.write_bytes(b"".join(b"line %d\n" % j for j in range(i + 1)))
        out.append(p)
    return out


def without_clock(st: object) -> dict[str, object]:
    """A status's fields but the moment it was taken (two looks differ only there)."""
    return {k: v for k, v in vars(st).items() if k != "checked_at"}


def look(counter: RoomCounter, rooms: list[Path], **kw) -> list[ScanDelta]:
    parts: list[ScanDelta] = []
    counter.scan(ScanRequest(None, list(rooms), 0.0, **kw), parts.append)
    assert parts and parts[-1].final
    return parts


def test_a_push_recounts_only_its_room_and_replies_with_its_row_only(tmp_path: Path) -> None:
    rooms = rooms_in(tmp_path, 20)
    later = [time.time() + 100]  # past the racy window: fingerprints are trusted
    counter = RoomCounter(wall=lambda: later[0])
    first = look(counter, rooms)
    assert sum(p.recounted for p in first) == 20
    assert {r.key for p in first for r in p.rows} == {str(r) for r in rooms}
    Room(rooms[7]).push("news")
    # The watcher names the room: only it is counted, and only its row comes back.
    parts = look(counter, rooms, keys=frozenset({str(rooms[7])}), sweep=False)
    assert sum(p.recounted for p in parts) == 1
    [row] = [r for p in parts for r in p.rows]
    assert row.key == str(rooms[7]) and row.status is not None and row.status.pending == 9
    # A sweep with nothing changed counts nothing and sends nothing.
    parts = look(counter, rooms, sweep=True)
    assert sum(p.recounted for p in parts) == 0 and not [r for p in parts for r in p.rows]
    # As the scanner process gets it (the room list sent once): the same, without a pass over
    # the other rooms.
    Room(rooms[3]).push("more")
    parts = []
    keys = frozenset({str(rooms[3]), "/not/a/room.txt"})
    counter.scan(ScanRequest(None, None, 0.0, keys=keys, sweep=False), parts.append)
    [row] = [r for p in parts for r in p.rows]
    assert sum(p.recounted for p in parts) == 1 and row.key == str(rooms[3])
    assert row.status is not None and row.status.pending == 5


def test_a_sweep_finds_a_change_no_watcher_reported(tmp_path: Path) -> None:
    rooms = rooms_in(tmp_path, 5)
    counter = RoomCounter(wall=lambda: time.time() + 100)
    look(counter, rooms)
    with rooms[3].open("ab") as f:  # an unlocked producer, its event lost
        f.write(b"missed\n")
    parts = look(counter, rooms, sweep=True)
    [row] = [r for p in parts for r in p.rows]
    assert row.key == str(rooms[3]) and row.status is not None and row.status.pending == 5
    assert without_clock(row.status) == without_clock(Room(rooms[3]).status())


def test_a_fingerprint_taken_right_after_a_write_is_not_trusted(tmp_path: Path) -> None:
    # Two writes in one clock tick leave the same stamps: a room counted within the racy
    # window is counted again by the next sweep, even if its stamps look unchanged.
    rooms = rooms_in(tmp_path, 2)
    now = [time.time()]
    counter = RoomCounter(wall=lambda: now[0])
    look(counter, rooms)
    st = os.stat(rooms[1])
    with rooms[1].open("r+b") as f:  # same size, same stamps: only a recount can tell
        f.write(b"LINE 0\nLINE 1")
    os.utime(rooms[1], ns=(st.st_atime_ns, st.st_mtime_ns))
    parts = look(counter, rooms, sweep=True)
    assert sum(p.recounted for p in parts) == 2  # both were counted within the racy window
    now[0] += 100
    look(counter, rooms, sweep=True)
    assert sum(p.recounted for p in look(counter, rooms, sweep=True)) == 0


def test_a_long_first_count_arrives_in_parts_selected_room_first(
    tmp_path: Path, monkeypatch
) -> None:
    from ackdeck.tui import room_counts

    monkeypatch.setattr(room_counts, "PART_S", 0.0)  # a part after every room
    rooms = rooms_in(tmp_path, 6)
    parts = look(RoomCounter(), rooms, first=str(rooms[4]))
    assert parts[0].rows[0].key == str(rooms[4])
    assert [p.final for p in parts] == [False] * (len(parts) - 1) + [True]
    assert sorted(r.key for p in parts for r in p.rows) == sorted(str(r) for r in rooms)


def test_a_room_a_new_namesake_renames_is_sent_again_with_its_new_label(tmp_path: Path) -> None:
    # The counter keeps what each row said, not the row: a room whose label changes because
    # another room of the same name appeared is counted again and sent with the new label,
    # and its numbers are still core's.
    a, b = tmp_path / "a" / "same.txt", tmp_path / "b" / "same.txt"
    for p in (a, b):
        p.parent.mkdir()
        p.write_bytes(b"one\ntwo\n")
    counter = RoomCounter(wall=lambda: time.time() + 100)
    [row] = [r for p in look(counter, [a]) for r in p.rows]
    assert row.label == "same.txt"
    assert not [r for p in look(counter, [a], sweep=True) for r in p.rows]  # nothing new
    rows = {r.key: r for p in look(counter, [a, b], sweep=False) for r in p.rows}
    assert {k: r.label for k, r in rows.items()} == {str(a): "a/same.txt", str(b): "b/same.txt"}
    assert without_clock(rows[str(a)].status) == without_clock(Room(a).status())
    # The namesake goes: the first room gets its short label back.
    [row] = [r for p in look(counter, [a], sweep=False) for r in p.rows]
    assert (row.key, row.label) == (str(a), "same.txt")


def test_run_output_is_not_a_room_or_table_change(tmp_path: Path) -> None:
    home = str(tmp_path)
    rdir = os.path.join(home, "procs", "build", "20261201T000000000-abcdef")
    assert home_event(home, os.path.join(rdir, "output.log")) == ("output", rdir)
    assert home_event(home, os.path.join(rdir, "monitors.json")) == ("run", rdir)
    assert home_event(home, os.path.join(rdir, ".monitors.json.ackdeck-tmp-1-x"))[0] == "none"
    assert home_event(home, os.path.join(rdir, "supervisor.log"))[0] == "none"
    assert home_event(home, rdir) == ("run", rdir)
    assert home_event(home, os.path.join(home, "wakes", "s", "build.json"))[0] == "wakes"
    assert home_event(home, os.path.join(home, "elsewhere"))[0] == "home"


def test_watch_map_names_the_room_of_each_state_file(tmp_path: Path) -> None:
    rooms = rooms_in(tmp_path, 3)
    Room(rooms[1]).read("agent")
    wmap = WatchMap([(str(r), parse_room(r)) for r in rooms])
    side = str(Room(rooms[1]).sidecar)
    assert wmap.room_of(str(rooms[1])) == (str(rooms[1]), False)
    assert wmap.room_of(side) == (str(rooms[1]), True)
    assert wmap.room_of(side + "/ledger") == (str(rooms[1]), False)
    assert wmap.room_of(side + "/receipts/agent.receipt") == (str(rooms[1]), False)
    assert wmap.room_of(str(tmp_path / "unrelated.log")) == (None, False)
    assert set(wmap.targets()) == {str(tmp_path), side, side + "/receipts"}


@given(
    st.lists(st.sampled_from(["/a/x", "/b/x", "/a/y", "/c/z", "/d/y", "/e/w"]), max_size=12),
    st.sampled_from(["/a/x", "/f/x", "/g/q"]),
)
def test_the_decks_labels_are_label_of_for_every_room(paths: list[str], other: str) -> None:
    deck = Deck(rooms=paths)
    rooms = deck.rooms
    assert [deck.label(r) for r in rooms] == [named_among(rooms, r) for r in rooms]
    ref = parse_room(other)  # a room the door was not given is labelled among them too
    among = rooms if ref in rooms else (*rooms, ref)
    assert deck.label(ref) == named_among(among, ref)


def named_among(rooms: tuple[RoomRef, ...], room: RoomRef) -> str:
    """What a door's label must be, said the slow obvious way (every room compared with every
    room): the short name when no other room bears it, else the full path or URL."""
    short = room.name
    return short if sum(r.name == short for r in rooms) == 1 else room.display


def test_a_deck_over_3000_rooms_labels_them_in_linear_time() -> None:
    specs = [f"/r/{i % 1500}/{'same' if i % 2 else f'n{i}'}.txt" for i in range(3000)]
    started = time.process_time()
    deck = Deck(rooms=specs)
    labels = [deck.label(r) for r in deck.rooms]
    assert labels[1] == "/r/1/same.txt" and labels[0] == "n0.txt"
    assert time.process_time() - started < 20  # a hang guard only; speed is in bench/


def test_room_labels_scale_linearly() -> None:
    # 20,000 rooms, half sharing a name: the pairwise version took minutes here.
    rooms = [Path(f"/r/{i % 10_000}/{'same' if i % 2 else f'n{i}'}.txt") for i in range(20_000)]
    started = time.process_time()
    labels = room_labels(rooms)
    assert labels[str(rooms[1])] == "1/same.txt" and labels[str(rooms[0])] == "n0.txt"
    assert time.process_time() - started < 20  # a hang guard only; speed is in bench/


async def test_a_push_updates_only_its_row_of_the_table(tmp_path: Path, monkeypatch) -> None:
    rooms = rooms_in(tmp_path, 30)
    app = make_app(quiet_config(rooms), clock=fixed_clock)
    updated: list[str] = []
    real = RoomsTable.update_cell

    def spy(self, row_key, column_key, value, **kw):  # type: ignore[no-untyped-def]
        updated.append(str(row_key.value if hasattr(row_key, "value") else row_key))
        return real(self, row_key, column_key, value, **kw)

    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        monkeypatch.setattr(RoomsTable, "update_cell", spy)
        Room(rooms[12]).push("news")
        app._changed({str(rooms[12])})  # what the watcher posts for that room
        await settle(pilot, timeout=WAIT)
        assert set(updated) == {str(rooms[12])}
        table = app.main.query_one(RoomsTable)
        cells = table._rows[table._keys.index(str(rooms[12]))]
        assert cells[1].plain == "14"


async def test_a_push_far_below_the_view_repaints_nothing_until_it_is_scrolled_to(
    tmp_path: Path, monkeypatch
) -> None:
    # A DataTable cell update repaints the whole table: a room pushed into hundreds of rows
    # below the view is drawn when it comes near (its row's numbers are core's at once), and
    # a refresh that changes no title sets none (setting one repaints the widget too).
    rooms = rooms_in(tmp_path, 90)
    app = make_app(quiet_config(rooms), clock=fixed_clock)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot, timeout=WAIT)
        table = app.main.query_one(RoomsTable)
        key = str(rooms[85])
        updated: list[str] = []
        titled: list[str] = []
        real = RoomsTable.update_cell

        def spy(self, row_key, column_key, value, **kw):  # type: ignore[no-untyped-def]
            updated.append(str(row_key.value if hasattr(row_key, "value") else row_key))
            return real(self, row_key, column_key, value, **kw)

        monkeypatch.setattr(RoomsTable, "update_cell", spy)
        monkeypatch.setattr(
            RoomsTable, "border_subtitle", property(lambda t: "", lambda t, v: titled.append(v))
        )
        Room(rooms[85]).push("news")
        app._changed({key})
        await settle(pilot, timeout=WAIT)
        assert table._rows[table._keys.index(key)][1].plain == "87"  # core's count, at once
        assert updated == [] and titled == []  # nothing drawn, no title set
        assert "87" not in str(table.get_cell(key, "pending"))
        await pilot.press("G")  # the last row: the pushed room is near the view now
        await settle(pilot, timeout=WAIT)
        # (Rows near it that the first look counted after they were first drawn come too.)
        assert key in updated and str(table.get_cell(key, "pending")) == "87"
        row = table.get_row_index(key)
        assert row in table._near_screen()


async def test_run_output_does_not_make_the_dashboard_recount_rooms(home: Path, tmp_path) -> None:
    from ackdeck.core.monitors import procs

    rooms = rooms_in(tmp_path, 3)
    app = make_app(quiet_config(rooms, home=home, watch=True), clock=fixed_clock)
    procs.start(
        home,
        "printer",
        [
            sys.executable,
            "-c",
            "import time\nwhile True: print('tick', flush=True); time.sleep(0.02)",
        ],
        session="agent",
        monitors=[],
    )
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, timeout=WAIT)
            await eventually_async(
                lambda: any(w.group == "watch" and w.is_running for w in app.workers),
                what="the watcher to start",
                pilot=pilot,
            )
            looks: list[ScanRequest] = []
            real = app._scan

            def counting():  # type: ignore[no-untyped-def]
                looks.append(app._changes.take())  # what this look was asked to count
                return real()

            app._scans._start = counting
            run = procs.list_runs(home, latest_only=True)[0]
            out = run.run_dir / "output.log"
            size = out.stat().st_size
            await eventually_async(  # the run prints on
                lambda: out.stat().st_size >= size + 2000, what="2,000 bytes more", pilot=pilot
            )
            await settle(pilot, timeout=WAIT)
            # Looks may come for the run's own state (its monitors file), never for rooms.
            assert all(not t.keys and not t.unknown for t in looks), looks
    finally:
        ackdeck(None, "--home", str(home), "kill", "printer")


async def test_ages_move_on_with_the_clock_without_a_look_at_the_files(tmp_path: Path) -> None:
    rooms = rooms_in(tmp_path, 5)
    mtime = os.stat(rooms[2]).st_mtime
    now = [mtime + 5]
    app = make_app(quiet_config(rooms), clock=lambda: now[0])
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        table = app.main.query_one(RoomsTable)

        def age(room: Path, column: int = 7) -> str:
            return str(table._rows[table._keys.index(str(room))][column])

        assert age(rooms[2]) == "just now"
        assert age(rooms[2], 6) == "0s"  # the oldest line's wait (Oldest)
        scans = app._scans
        now[0] = mtime + 125
        app.main.refresh_ages(now[0])  # what the tick does
        await pilot.pause()
        assert age(rooms[2]) == "2m ago"
        # (Its lines were first seen at the first look, a moment after `now` began.)
        assert age(rooms[2], 6) in ("1m", "2m")
        assert not scans.busy  # ages needed no scan
        before = list(table._rows)
        app.main.refresh_ages(now[0] + 1)  # nothing due: nothing changes
        assert table._rows == before


async def test_a_room_directorys_new_file_is_watched_live_and_counted_incrementally(
    tmp_path: Path,
) -> None:
    # Rooms come and go with a room directory's files (#20): the scanner's memory, the watch
    # map and the fingerprints follow the list. A new file appears without a key press, a push
    # to it counts only the appended bytes, other rooms are not counted again, and a removed
    # file's row goes.
    d = tmp_path / "rooms"
    d.mkdir()
    a, b = (d / "a.txt"), (d / "b.txt")
    a.write_bytes(b"one\ntwo\nthree\n")
    b.write_bytes(b"x\ny\n")
    app = make_app(quiet_config(room_dirs=[d], watch=True), clock=fixed_clock)
    async with app.run_test(size=(140, 40)) as pilot:
        table = app.main.query_one(RoomsTable)

        def pending(room: Path) -> str | None:
            if str(room) not in table._keys:
                return None
            return table._rows[table._keys.index(str(room))][1].plain

        await settle(pilot, timeout=WAIT)
        await eventually_async(
            lambda: any(w.group == "watch" for w in app.workers), what="watcher", pilot=pilot
        )
        c = d / "c.txt"
        c.write_bytes(b"1\n2\n3\n4\n")  # a new room, written by something else
        await eventually_async(lambda: pending(c) == "4", what="the new room's row", pilot=pilot)
        assert table._keys == [str(a), str(b), str(c)]
        counts = app._counter._counts
        assert counts[str(c)].recounts == 1 and counts[str(a)].recounts == 1
        Room(c).push("five")
        await eventually_async(
            lambda: pending(c) == "5", what="the push to the new room", pilot=pilot
        )
        assert counts[str(c)].recounts == 1  # only the appended bytes were read
        assert counts[str(a)].recounts == 1
        b.unlink()
        await eventually_async(
            lambda: str(b) not in table._keys, what="the removed room's row to go", pilot=pilot
        )
        assert table._keys == [str(a), str(c)]
        assert str(b) not in app._counter._counts and str(b) not in app.labels
        Room(a).push("four")  # the rooms that stayed are still watched
        await eventually_async(
            lambda: pending(a) == "4", what="a push to a room that stayed", pilot=pilot
        )


async def test_ages_due_off_screen_are_made_again_when_scrolled_into_view(
    tmp_path: Path,
) -> None:
    # 200 rooms whose lines all began to wait in the same look: their Oldest text changes at
    # the same moment. Only the rows on (or near) the screen are repainted then; the others
    # are made again once they scroll into view, never shown stale.
    rooms = rooms_in(tmp_path, 200)
    now = [time.time()]
    app = make_app(quiet_config(rooms), clock=lambda: now[0])
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, timeout=WAIT)
        table = app.main.query_one(RoomsTable)

        def oldest(room: Path) -> str:
            return str(table._rows[table._keys.index(str(room))][6])

        assert oldest(rooms[0]) == oldest(rooms[-1]) == "0s"
        now[0] += 150  # (first seen at the first look, a moment after `now` began)
        app.main.refresh_ages(now[0])  # what the tick does
        await pilot.pause()
        assert oldest(rooms[0]) in ("1m", "2m")
        assert oldest(rooms[-1]) == "0s"  # far off screen: not made yet
        table.focus()
        await pilot.press("G")  # to the last room
        await settle(pilot, timeout=WAIT)
        assert oldest(rooms[-1]) in ("1m", "2m")
        assert app.main.selected_room == str(rooms[-1])


async def test_without_watches_every_tick_looks(tmp_path: Path) -> None:
    # `watch = false`: nothing reports a change, so each tick is a sweep (with watches, only
    # every 10th is: the watches report the rest).
    rooms = rooms_in(tmp_path, 3)
    app = make_app(quiet_config(rooms, tick_seconds=0.3), clock=fixed_clock)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        table = app.main.query_one(RoomsTable)
        Room(rooms[1]).push("news")
        pushed_at = app._ticks
        await eventually_async(
            lambda: table._rows[table._keys.index(str(rooms[1]))][1].plain == "3",
            what="a tick to look at the room",
            pilot=pilot,
        )
        assert app._ticks - pushed_at < SWEEP_TICKS  # before the 10-tick sweep came round


async def test_a_look_that_finds_nothing_new_repaints_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Idle is idle: the safety net's sweep (every room's fingerprint, the home, the lines
    # panel) that finds nothing new repaints no widget. Textual repaints a widget whenever its
    # border title is assigned, even the text it shows: each sweep used to repaint the rooms
    # table, the lines panel and both side tables.
    rooms = rooms_in(tmp_path, 5)
    home = tmp_path / "home"
    home.mkdir()
    app = make_app(quiet_config(rooms, home=home), clock=fixed_clock)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        repainted: list[str] = []
        original = Widget.refresh

        def refresh(self: Widget, *args: object, **kwargs: object) -> Widget:
            repainted.append(type(self).__name__)
            return original(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Widget, "refresh", refresh)
        before = app.snapshot
        app._changes.note(home=True, unknown=True)  # what the sweep's tick does
        app._scans.request()
        app.main.files_changed()
        await settle(pilot, timeout=WAIT)
        assert app.snapshot is not before  # the look happened and was applied
        assert repainted == []
        # A change still repaints: the pushed room's row.
        Room(rooms[1]).push("news")
        app._changes.note({str(rooms[1])})
        app._scans.request()
        await settle(pilot, timeout=WAIT)
        assert "RoomsTable" in repainted


async def test_ages_move_on_when_due_without_a_tick_every_second(tmp_path: Path) -> None:
    # No timer wakes the dashboard every second: the table's next time-driven change (here
    # the room's age stepping from "just now" to "10s ago") arms a timer for that moment, and
    # no look at the files (a sweep: every 10 ticks, 50 s here) is needed for it.
    rooms = rooms_in(tmp_path, 3)
    written = time.time() - 7
    os.utime(rooms[1], (written, written))
    app = make_app(quiet_config(rooms, watch=True, tick_seconds=5.0))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        table = app.main.query_one(RoomsTable)

        def age() -> str:
            return str(table._rows[table._keys.index(str(rooms[1]))][7])

        assert age() == "just now" or time.time() - written >= 10  # (a slow start)
        await eventually_async(lambda: age() == "10s ago", what="the age '10s ago'", pilot=pilot)
        assert app._ticks == 0  # no sweep ran: the ages' own timer did it


async def test_a_slow_sweep_does_not_put_off_the_next_pushs_recount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: at 1,000 rooms the dashboard's worst push-to-row latency was 0.59-0.75 s
    (median 0.11 s). The safety net's sweep looks at every room's fingerprint, which takes a
    while at that scale, and the next file event's recount was put off by twice the last
    look's length: a back-off meant for a flooded room counted in full, not for a sweep."""
    from ackdeck.tui import app as app_module

    rooms = rooms_in(tmp_path, 3)
    app = make_app(quiet_config(rooms), clock=fixed_clock)
    real_scan_at = app_module.scan_at

    def slow_sweep(counter: RoomCounter, req: ScanRequest, emit: object) -> None:
        if req.sweep:
            time.sleep(0.3)  # a sweep over many rooms on a busy disk (not a synchronisation)
        real_scan_at(counter, req, emit)  # type: ignore[arg-type]

    monkeypatch.setattr(app_module, "scan_at", slow_sweep)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        app._sweep()  # the safety net's tick (watch = false: every tick sweeps the rooms)
        await settle(pilot, timeout=WAIT)
        delays: list[float] = []
        real_set_timer = app.set_timer

        def spy(delay: float, callback: object = None, **kw: object) -> object:
            if callback == app._delayed_scan:
                delays.append(delay)
            return real_set_timer(delay, callback, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(app, "set_timer", spy)
        Room(rooms[1]).push("news")
        app._changed({str(rooms[1])})  # what the watcher posts for that room
        await settle(pilot, timeout=WAIT)
        # (At most the spacing, which runs from the last look's end: none once it has
        # passed; recount_wait.)
        assert len(delays) <= 1 and all(d <= app_module.SCAN_DELAY for d in delays)
        table = app.main.query_one(RoomsTable)
        assert table._rows[table._keys.index(str(rooms[1]))][1].plain == "3"


async def _next_recount_delay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow_count: object
) -> list[float]:
    """The waits before the recounts of two pushes into two of three rooms, each looked at
    as the watcher would have it; counting the first push's room runs `slow_count` (a
    simulation of a busy machine or a costly room, not a synchronisation). Returns the wait
    chosen after that look, for the second push, into the room whose lines are shown (it
    waits the whole spacing: recount_wait)."""
    from ackdeck.tui import room_counts

    rooms = rooms_in(tmp_path, 3)
    app = make_app(quiet_config(rooms), clock=fixed_clock)
    real_scan_room = room_counts.scan_room

    def counted(path: Path | str, label: str, counts: object = None) -> object:
        if str(path) == str(rooms[1]):
            slow_count()  # type: ignore[operator]
        return real_scan_room(path, label, counts)  # type: ignore[arg-type]

    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        monkeypatch.setattr(room_counts, "scan_room", counted)
        Room(rooms[1]).push("news")
        app._changed({str(rooms[1])})  # what the watcher posts for that room
        await settle(pilot, timeout=WAIT)
        delays: list[float] = []
        real_set_timer = app.set_timer

        def spy(delay: float, callback: object = None, **kw: object) -> object:
            if callback == app._delayed_scan:
                delays.append(delay)
            return real_set_timer(delay, callback, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(app, "set_timer", spy)
        assert app.main.selected_room == str(rooms[0])
        Room(rooms[0]).push("more news")
        app._changed({str(rooms[0])})
        await settle(pilot, timeout=WAIT)
        table = app.main.query_one(RoomsTable)
        assert table._rows[table._keys.index(str(rooms[0]))][1].plain == "2"
    return delays


async def test_a_look_that_waited_for_a_core_does_not_put_off_the_next_pushs_recount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: the wait before a push's recount was twice the last look's wall time. On a
    busy machine a one-room look waits for a core (the scanner's turn, the reply's), so one
    slow look put the next push's row off by twice the machine's contention, however little
    counting it needed: the worst push-to-row latency grew with the load. The wait now
    follows the look's CPU time, which waiting for a core does not add to."""
    from ackdeck.tui import app as app_module

    delays = await _next_recount_delay(tmp_path, monkeypatch, lambda: time.sleep(0.3))
    assert delays == [app_module.SCAN_DELAY]


async def test_a_look_that_counted_long_still_spaces_the_next_recount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the wait is for stays: a look that used the CPU for long (a flooded room counted
    in full) is followed by a wait of twice that, so counting takes at most about a third of
    a core while a flood goes on and new lines stay snappy."""

    def count_long() -> None:
        end = time.thread_time() + 0.2  # 0.2 s of this thread's CPU, however long it takes
        while time.thread_time() < end:
            pass

    delays = await _next_recount_delay(tmp_path, monkeypatch, count_long)
    assert len(delays) == 1 and 0.4 <= delays[0] <= 1.0


def test_looks_are_spaced_from_the_last_ones_end_not_from_each_event() -> None:
    """`recount_wait`, the decision alone: a push after a quiet moment is counted at once; a
    flood still makes one look per spacing; a costly look spaces the next by twice its CPU
    time (capped at a second); the shown room's event waits for its lines panel's read."""
    from ackdeck.tui.app import SCAN_DELAY, recount_wait

    assert recount_wait(0.001, 10.0, lines_first=False) == 0.0  # quiet before: at once
    assert recount_wait(0.001, float("inf"), lines_first=False) == 0.0  # no look yet
    assert recount_wait(0.001, 0.02, lines_first=False) == pytest.approx(SCAN_DELAY - 0.02)
    assert recount_wait(0.2, 0.1, lines_first=False) == pytest.approx(0.3)
    assert recount_wait(0.2, 1.0, lines_first=False) == 0.0
    assert recount_wait(5.0, 0.0, lines_first=False) == 1.0
    assert recount_wait(0.001, 10.0, lines_first=True) == SCAN_DELAY
    assert recount_wait(0.2, 10.0, lines_first=True) == pytest.approx(0.4)


async def test_a_push_after_a_quiet_moment_is_recounted_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: every push waited SCAN_DELAY (50 ms) after its file event before the
    counters looked, half of the median push-to-row latency at 1,000 rooms (112 ms: the watch
    ~39 ms, that wait 51 ms, the look 2 ms, the repaint ~16 ms). The wait is for spacing looks
    during a flood; a push into a room not shown in the lines panel, after a quiet moment,
    is counted at once."""
    from ackdeck.tui import app as app_module

    rooms = rooms_in(tmp_path, 3)
    app = make_app(quiet_config(rooms), clock=fixed_clock)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, timeout=WAIT)
        looked = time.monotonic()  # every look has ended by now
        await eventually_async(
            lambda: time.monotonic() - looked > app_module.SCAN_DELAY,
            what="a quiet moment after the first look",
            pilot=pilot,
        )
        delays: list[float] = []
        real_set_timer = app.set_timer

        def spy(delay: float, callback: object = None, **kw: object) -> object:
            if callback == app._delayed_scan:
                delays.append(delay)
            return real_set_timer(delay, callback, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(app, "set_timer", spy)
        assert app.main.selected_room != str(rooms[2])
        Room(rooms[2]).push("news")
        app._changed({str(rooms[2])})  # what the watcher posts for that room
        await settle(pilot, timeout=WAIT)
        assert delays == []  # no timer: the look was asked for with the event
        table = app.main.query_one(RoomsTable)
        assert table._rows[table._keys.index(str(rooms[2]))][1].plain == "4"


async def test_a_push_into_one_of_1000_watched_rooms_is_counted_at_once_and_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43, end to end on real files and the real watch: at 1,000 rooms a push into one
    room, after a quiet moment, starts a look as soon as the watcher reports it (no timer
    first: every push waited 50 ms before), and that look counts that room alone; its row
    shows the new count without any sweep (the ticks are off)."""
    from ackdeck.tui import app as app_module

    rooms = []
    for i in range(1000):
        p = tmp_path / f"room-{i:04d}.txt"
        p.write_bytes(b"line\n" * (i % 7 + 1))
        rooms.append(p)
    Room(rooms[2]).push("made its sidecar")  # a new sidecar would make the watch start again
    app = make_app(quiet_config(rooms, watch=True), clock=fixed_clock)
    looks: list[tuple[ScanRequest, int]] = []  # each look, and the timers set before it
    delays: list[float] = []
    real_scan_at = app_module.scan_at

    def spy_scan(counter: RoomCounter, req: ScanRequest, emit: object) -> None:
        looks.append((req, len(delays)))
        real_scan_at(counter, req, emit)  # type: ignore[arg-type]

    monkeypatch.setattr(app_module, "scan_at", spy_scan)
    async with app.run_test(size=(140, 40)) as pilot:
        # The first look, then the one the watch asks for once it is in place.
        await eventually_async(
            lambda: sum(req.sweep for req, _ in looks) >= 2, what="the watch in place", pilot=pilot
        )
        await settle(pilot, timeout=WAIT)
        looked = time.monotonic()  # every look has ended by now
        await eventually_async(
            lambda: time.monotonic() - looked > app_module.SCAN_DELAY,
            what="a quiet moment",
            pilot=pilot,
        )
        real_set_timer = app.set_timer

        def spy(delay: float, callback: object = None, **kw: object) -> object:
            if callback == app._delayed_scan:
                delays.append(delay)
            return real_set_timer(delay, callback, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(app, "set_timer", spy)
        before = len(looks)
        key = str(rooms[2])
        assert app.main.selected_room != key
        Room(rooms[2]).push("news")  # 3 lines, the push before this one, and this one
        table = app.main.query_one(RoomsTable)
        await eventually_async(
            lambda: table._rows[table._keys.index(key)][1].plain == "5",
            what="the room's new count in its row",
            pilot=pilot,
        )
        first, timers_before = looks[before]
        assert (first.keys, first.sweep, timers_before) == (frozenset({key}), False, 0)


async def test_the_dashboard_freezes_its_start_up_objects_so_a_full_collection_cannot_stall_a_push(
    tmp_path: Path,
) -> None:
    """Issue 43: at 1,000 rooms a full garbage collection of the dashboard's process walked
    every object alive since start-up (Textual's, the table's rows and cells) and took up to
    150-180 ms of the UI thread, some of them in the middle of a push's repaint. `ackdeck tui`
    freezes what is alive once its first look is on screen; an app a test runs in its own
    process leaves that process's collector alone."""
    import gc

    rooms = rooms_in(tmp_path, 3)
    assert gc.get_freeze_count() == 0
    try:
        quiet = make_app(quiet_config(rooms), clock=fixed_clock)
        async with quiet.run_test(size=(140, 40)) as pilot:
            await settle(pilot, timeout=WAIT)
        assert gc.get_freeze_count() == 0
        app = make_app(quiet_config(rooms), clock=fixed_clock, freeze_gc=True)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, timeout=WAIT)
            await eventually_async(
                lambda: gc.get_freeze_count() > 0,
                what="the start-up objects frozen after the first look",
                pilot=pilot,
            )
    finally:
        gc.unfreeze()  # this is the test process: leave its collector as it was
