"""Pilot tests of the dashboard's owner actions on real room files.

Every action goes through core as the owner session; the assertions look at the files (what an
agent would see next) and at what the owner is told.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ackdeck.core.rooms.absent import ABSENT_CELL
from ackdeck.core.rooms.file.room import Room
from ackdeck.tui.app import make_app
from ackdeck.tui.screens.modals import AckAllScreen, ConfirmScreen, HelpScreen, PromptScreen
from ackdeck.tui.testing import (
    feed_change,
    fixed_clock,
    notifications,
    quiet_config,
    screen_text,
    settle,
    type_at_once,
)
from ackdeck.tui.widgets.line_view import LineView
from ackdeck.tui.widgets.tables import RoomsTable
from tests.helpers.wait import eventually_async

SIZE = (120, 36)


def make_room(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(line.encode() + b"\n" for line in lines))
    return path


def append_from_other_process(path: Path, line: str) -> None:
    """An unlocked shell poller: open, append, close, in another process."""
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$1" >> "$2"', "sh", line, str(path)], check=True)


def view(app) -> LineView:
    return app.main.query_one("#lines", LineView)


async def test_owner_ack_preserves_line_appended_after_read(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["one", "two", "three"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert any("owner read 3 lines" in n for n in notifications(app))
        append_from_other_process(room, "late arrival")
        await pilot.press("a")
        await settle(pilot)
        assert room.read_bytes() == b"late arrival\n"
        assert any("acked 3 lines, preserved 1 line " in n for n in notifications(app))
        # The view follows the rewritten file: only the preserved line is left.
        await feed_change(pilot)
        assert view(app).visible_text() == ["late arrival"]


async def test_r_then_a_pressed_at_once_acks_what_the_read_returned(
    tmp_path: Path, monkeypatch
) -> None:
    # `r` `a` typed quickly (or arriving together from a browser): the ack must wait for the
    # read, not run beside it and be refused ("no read") or ack an older read.
    import threading

    room = make_room(tmp_path, "inbox.txt", ["one", "two", "three"])
    gate = threading.Event()
    reading = threading.Event()
    real_read = Room.read

    def held_read(self, *args, **kwargs):
        reading.set()
        assert gate.wait(60)
        return real_read(self, *args, **kwargs)

    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        monkeypatch.setattr(Room, "read", held_read)
        await pilot.press("r")
        await eventually_async(reading.is_set, what="the read to start", pilot=pilot)
        await pilot.press("a")
        # The ack either ran beside the read (and was refused) or waits for its turn.
        turns = getattr(app.main, "_turns", None)
        await eventually_async(
            lambda: (
                any("refused" in n for n in notifications(app)) or (turns and turns.waiting == 1)
            ),
            what="the ack to run or wait",
            pilot=pilot,
        )
        gate.set()
        await settle(pilot)
        assert room.read_bytes() == b""
        assert not any("refused" in n for n in notifications(app)), notifications(app)
        assert any("acked 3 lines, preserved 0 lines" in n for n in notifications(app))


async def test_read_marks_in_flight_lines_and_counts_them(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["a", "b"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert view(app).in_flight == 2
        assert "owner read 2 (▌), not acked" in screen_text(app)
        assert Room(room).status().sessions["owner"].in_flight == 2


async def test_ack_without_read_is_refused_and_removes_nothing(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["keep me"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert room.read_bytes() == b"keep me\n"
        assert any("refused" in n and "read the room first" in n for n in notifications(app))


async def test_push_lands_in_the_file(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["first"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p")
        assert isinstance(app.screen, PromptScreen)
        # Keys that are bindings elsewhere (q, a, x, r) are text while typing.
        await pilot.press(*"quick: ack x r")
        await pilot.press("enter")
        await settle(pilot)
        assert room.read_bytes() == b"first\nquick: ack x r\n"
        await feed_change(pilot)
        assert view(app).visible_text() == ["first", "quick: ack x r"]


async def test_text_typed_right_after_p_reaches_the_prompt(tmp_path: Path) -> None:
    # The keys after `p` reach the prompt before its input has focus: they were dropped, and
    # the enter then submitted an empty prompt, which closed it with nothing said.
    room = make_room(tmp_path, "inbox.txt", ["first"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        type_at_once(app, "p", *"fast", "enter")
        await eventually_async(
            lambda: room.read_bytes() == b"first\nfast\n",
            what="the typed-ahead line to be pushed",
            pilot=pilot,
        )
        await settle(pilot)
        assert not isinstance(app.screen, PromptScreen)
        assert room.read_bytes() == b"first\nfast\n"


async def test_push_cancelled_with_escape_writes_nothing(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["first"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p", "x", "escape")
        await settle(pilot)
        assert room.read_bytes() == b"first\n"


async def test_ack_all_asks_first(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["x", "y"])
    with room.open("ab") as f:
        f.write(b"partial")  # a write in progress: never removed
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert room.read_bytes() == b"x\ny\npartial"  # nothing happens before the answer
        await pilot.press("n")
        await settle(pilot)
        assert room.read_bytes() == b"x\ny\npartial"
        await pilot.press("A")
        await settle(pilot)
        await pilot.press("enter")  # the focused button is the safe one: cancel
        await settle(pilot)
        assert room.read_bytes() == b"x\ny\npartial"
        await pilot.press("A")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert room.read_bytes() == b"partial"
        assert any("acked 2 lines of inbox.txt" in n for n in notifications(app))


async def test_ack_all_keeps_lines_that_arrived_while_the_dialog_was_open(
    tmp_path: Path,
) -> None:
    room = make_room(tmp_path, "alerts.txt", [f"shown {i}" for i in range(112)])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, AckAllScreen)
        assert dialog.shown == 112
        assert "has just read 112 complete lines" in screen_text(app)
        # A shell poller keeps writing while the owner looks at the dialog.
        for i in range(36):
            append_from_other_process(room, f"late {i}")
        await pilot.press("y")
        await settle(pilot)
        assert not isinstance(app.screen, AckAllScreen)
        assert room.read_bytes() == b"".join(f"late {i}\n".encode() for i in range(36))
        toast = notifications(app)[-1]
        assert "acked 112 lines of alerts.txt" in toast
        assert "preserved 36 lines" in toast
        assert toast.count("acked") == 1  # said once, not repeated in parentheses
        assert sum("acked 112" in n for n in notifications(app)) == 1
        # The audit log agrees: exactly the dialog's number was acked.
        assert Room(room).status().acked_total == 112


async def test_ack_all_of_a_snapshot_made_stale_removes_nothing_and_says_why(
    tmp_path: Path,
) -> None:
    room = make_room(tmp_path, "alerts.txt", ["a", "b", "c"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, AckAllScreen)
        # Someone rewrites the room in place while the dialog is open (not an ackdeck ack):
        # the lines at the head may not be the ones shown.
        room.write_bytes(b"rewritten by someone else\n")
        before = room.read_bytes()
        await pilot.press("y")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, AckAllScreen)  # it stays open to say why
        assert room.read_bytes() == before
        assert dialog.failed is not None and "nothing was removed" in dialog.failed
        assert "nothing was removed" in screen_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, AckAllScreen)
        assert room.read_bytes() == before


async def test_ack_all_removes_nothing_when_the_owner_reads_again_while_the_dialog_is_open(
    tmp_path: Path,
) -> None:
    # The owner's session reads the room elsewhere (a second terminal, `r` pressed just after
    # `A`) while the dialog shows 3 lines: the session's receipt now holds 5. Yes must not
    # ack those 5: the dialog's snapshot is no longer the receipt, so nothing is removed.
    room = make_room(tmp_path, "alerts.txt", ["a", "b", "c"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, AckAllScreen) and app.screen.shown == 3
        append_from_other_process(room, "late 1")
        append_from_other_process(room, "late 2")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ackdeck.core.cli",
                "room",
                "read",
                str(room),
                "--session",
                "owner",
            ],
            check=True,
            capture_output=True,
        )
        before = room.read_bytes()
        await pilot.press("y")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, AckAllScreen)  # it stays open to say why
        assert room.read_bytes() == before == b"a\nb\nc\nlate 1\nlate 2\n"
        assert dialog.failed is not None and "nothing was removed" in dialog.failed
        assert "another reader" in dialog.failed
        assert Room(room).status().acked_total == 0
        await pilot.press("n")
        await settle(pilot)
        assert room.read_bytes() == before


async def test_an_unexpected_error_in_the_ack_all_ack_is_said_and_the_dialog_closes(
    tmp_path: Path, monkeypatch
) -> None:
    # An error core does not translate (a bug, an odd filesystem) ended the dialog's worker
    # without an answer: the dialog said "acking…" for good and ignored n and escape.
    room = make_room(tmp_path, "alerts.txt", ["a", "b"])

    def broken_ack(self, *args, **kwargs):
        raise RuntimeError("disk on fire")

    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, AckAllScreen)
        monkeypatch.setattr(Room, "ack", broken_ack)
        await pilot.press("y")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, AckAllScreen)
        assert dialog.failed is not None and "disk on fire" in dialog.failed
        await pilot.press("n")
        await settle(pilot)
        assert not isinstance(app.screen, AckAllScreen)
        assert room.read_bytes() == b"a\nb\n"


async def test_an_unexpected_error_in_an_owner_action_is_said(tmp_path: Path, monkeypatch) -> None:
    room = make_room(tmp_path, "alerts.txt", ["a"])

    def broken_read(self, *args, **kwargs):
        raise RuntimeError("disk on fire")

    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        monkeypatch.setattr(Room, "read", broken_read)
        await pilot.press("r")
        await settle(pilot)
        assert any("disk on fire" in n for n in notifications(app)), notifications(app)


async def test_filter_shows_only_matching_lines(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["build ok", "build FAILED", "deploy", "test failed"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"failed", "enter")
        await settle(pilot)
        assert view(app).visible_text() == ["build FAILED", "test failed"]
        # New matching lines are filtered as they arrive.
        append_from_other_process(room, "lint failed")
        append_from_other_process(room, "lint ok")
        await feed_change(pilot)
        assert view(app).visible_text() == ["build FAILED", "test failed", "lint failed"]
        await pilot.press("slash", "ctrl+u", "enter")  # empty filter: everything again
        await settle(pilot)
        assert len(view(app).visible_text()) == 6


async def test_ack_all_with_a_filter_on_says_it_acks_every_line_not_only_the_filtered(
    tmp_path: Path,
) -> None:
    # An owner who filtered for the failures and presses A could take the dialog's number for
    # the filtered lines; it must say that the filter does not narrow the ack.
    room = make_room(tmp_path, "inbox.txt", ["build ok", "build FAILED", "deploy", "test failed"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"failed", "enter")
        await settle(pilot)
        assert view(app).row_count == 2
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, AckAllScreen) and app.screen.shown == 4
        # The dialog's text: what lies between its frame's side bars, row by row.
        rows = [r[r.find("█") + 1 : r.rfind("█")] for r in screen_text(app).splitlines()]
        text = " ".join(" ".join(rows).split())
        assert "The filter 'failed' does not narrow this ack: all 4 lines" in text, text
        await pilot.press("n")
        await settle(pilot)
        assert room.read_bytes() == b"build ok\nbuild FAILED\ndeploy\ntest failed\n"


async def test_switching_rooms_shows_the_selected_room(tmp_path: Path) -> None:
    a = make_room(tmp_path, "a.txt", ["alpha"])
    b = make_room(tmp_path, "b.txt", ["bravo", "bravo 2"])
    app = make_app(quiet_config([a, b]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert view(app).visible_text() == ["alpha"]
        await pilot.press("j")
        await settle(pilot)
        assert view(app).visible_text() == ["bravo", "bravo 2"]
        await pilot.press("k")
        await settle(pilot)
        assert view(app).visible_text() == ["alpha"]


async def test_room_deleted_recreated_and_rewritten_by_someone_else(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["old 1", "old 2"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert view(app).visible_text() == ["old 1", "old 2"]
        room.unlink()
        await feed_change(pilot)
        # Core's words for a missing room (issue 23), in the lines panel and in the table.
        assert "inbox.txt does not exist yet (an empty room" in screen_text(app)
        assert ABSENT_CELL in screen_text(app)
        make_room(tmp_path, "inbox.txt", ["new 1"])
        await feed_change(pilot)
        assert view(app).visible_text() == ["new 1"]
        # Rewritten in place with the same size but other bytes (same inode).
        with room.open("r+b") as f:
            f.write(b"NEW 9\n")
        await feed_change(pilot)
        assert view(app).visible_text() == ["NEW 9"]
        # Truncated and refilled.
        room.write_bytes(b"t\n")
        await feed_change(pilot)
        assert view(app).visible_text() == ["t"]


async def test_unreadable_room_shows_an_error_row(tmp_path: Path) -> None:
    bad = tmp_path / "adir.txt"
    bad.mkdir()  # a directory where a room file should be
    symlinked = make_room(tmp_path, "linked.txt", ["x"])
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / ".linked.txt.ackdeck").symlink_to(tmp_path / "elsewhere")
    good = make_room(tmp_path, "good.txt", ["fine"])
    app = make_app(quiet_config([bad, symlinked, good]), clock=fixed_clock)
    async with app.run_test(size=(160, 36)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "is a directory" in text.lower()
        assert "refusing sidecar .linked.txt.ackdeck: it is a symlink" in text
        assert str(tmp_path) not in text
        table = app.main.query_one(RoomsTable)
        assert table.row_count == 3
        await pilot.press("j", "j")
        await settle(pilot)
        assert view(app).visible_text() == ["fine"]


async def test_line_appended_by_another_process_appears_without_a_key_press(
    tmp_path: Path,
) -> None:
    room = make_room(tmp_path, "inbox.txt", ["first"])
    # The real thing: watcher on, counters from the scanner process.
    config = quiet_config([room], watch=True, scan_process=True)
    app = make_app(config, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert view(app).visible_text() == ["first"]
        # Let the real watcher start (it is started after the first scan).
        await eventually_async(
            lambda: any(w.group == "watch" and w.is_running for w in app.workers),
            what="the watcher to start",
            pilot=pilot,
        )
        # No pause here: a line appended before the watch is in place is looked at when it
        # is (tui/watching.py calls back once its watches exist).
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from ackdeck.core.rooms.file.room import Room; "
                "Room(sys.argv[1]).push('from afar')",
                str(room),
            ],
            check=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        await eventually_async(
            lambda: view(app).visible_text() == ["first", "from afar"],
            what="the line from afar in the lines panel",
            pilot=pilot,
        )
        await eventually_async(
            lambda: "2 lines" in screen_text(app), what="the panel's title", pilot=pilot
        )
        # The rooms table's counters follow too (scanned in the scanner process).
        await eventually_async(
            lambda: app.snapshot.rooms[0].status.pending == 2,
            what="the counters to update",
            pilot=pilot,
        )
        assert app._scanner is not None
        # A dead scanner is replaced; scanning goes on meanwhile.
        app._scanner._proc.kill()
        append_from_other_process(room, "third")
        await eventually_async(
            lambda: app.snapshot.rooms[0].status.pending == 3,
            what="the counters to go on after the scanner died",
            pilot=pilot,
        )


async def test_a_scanner_that_stops_answering_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stuck scanner (here: stopped with SIGSTOP) must not freeze the counters.
    import os
    import signal

    from ackdeck.tui import scanner as scanner_mod

    room = make_room(tmp_path, "inbox.txt", ["first"])
    app = make_app(quiet_config([room], scan_process=True), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)

        def answered_by_a_scanner() -> bool:
            # On a loaded machine the scanner's first answer (its start-up included) can take
            # longer than REPLY_TIMEOUT_S: it is then put down and that scan counted here, and
            # the next scan starts another. Wait for a scan a scanner process answered.
            if app._scanner is None:
                app.request_scan()
            return (
                app._scanner is not None
                and not app._counted_here
                and app.snapshot.rooms[0].status.pending == 1
            )

        await eventually_async(answered_by_a_scanner, what="a scanner's answer", pilot=pilot)
        assert app._scanner is not None
        # Short only once the scanner is up: starting it can take over a second on a busy
        # machine, and the first reply would then count as "stuck".
        monkeypatch.setattr(scanner_mod, "REPLY_TIMEOUT_S", 1.0)
        stuck = app._scanner._proc
        os.kill(stuck.pid, signal.SIGSTOP)
        try:
            append_from_other_process(room, "second")
            app.request_scan()
            await eventually_async(
                lambda: app.snapshot.rooms[0].status.pending == 2,
                what="the counters to go on behind a stuck scanner",
                pilot=pilot,
            )
            assert stuck.wait(timeout=10) == -signal.SIGKILL  # the stuck one was put down
        finally:
            if stuck.poll() is None:
                stuck.kill()


async def test_big_room_scrolls_to_the_end_and_back(tmp_path: Path) -> None:
    room = tmp_path / "flood.txt"
    with room.open("wb") as f:
        f.write(b"".join(b"event %06d\n" % i for i in range(200_000)))
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert view(app).count == 200_000
        view(app).focus()
        await pilot.press("G")
        await settle(pilot)
        assert view(app).visible_text()[-1] == "event 199999"
        await pilot.press("k")
        await pilot.press("g")
        await settle(pilot)
        assert view(app).visible_text()[0] == "event 000000"


async def test_help_lists_every_binding(tmp_path: Path) -> None:
    app = make_app(quiet_config([]), clock=fixed_clock)
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        for _title, rows in app.help_sections():
            for _keys, desc, _tip in rows:
                assert desc
        text = screen_text(app)
        for needle in ("Ack all", "Push", "Dismiss", "Filter", "Output", "Palette", "Quit"):
            assert needle in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


def test_every_binding_has_an_id_and_a_tooltip() -> None:
    from textual.binding import Binding

    from ackdeck.tui.app import AckdeckApp
    from ackdeck.tui.screens.main import MainScreen
    from ackdeck.tui.screens.modals import ConfirmScreen, HelpScreen, PromptScreen
    from ackdeck.tui.screens.output import OutputScreen
    from ackdeck.tui.widgets.tables import KeyedTable

    keys: set[str] = set()
    for cls in (
        AckdeckApp,
        MainScreen,
        LineView,
        KeyedTable,
        OutputScreen,
        ConfirmScreen,
        PromptScreen,
        HelpScreen,
    ):
        for b in cls.__dict__["BINDINGS"]:
            assert isinstance(b, Binding)
            assert b.id and b.tooltip and b.description, (cls.__name__, b)
            keys.update(b.key.split(","))
    for key in (
        "r",
        "a",
        "A",
        "p",
        "o",
        "x",
        "slash",
        "question_mark",
        "ctrl+p",
        "q",
        "tab",
        "j",
        "k",
        "g",
        "G",
        "up",
        "down",
    ):
        assert key in keys, key


async def test_palette_offers_commands_for_current_rooms(tmp_path: Path) -> None:
    room = make_room(tmp_path, "inbox.txt", ["hello"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"read room inbox")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert Room(room).status().sessions["owner"].in_flight == 1


async def test_the_palette_lists_a_room_whose_name_holds_markup_as_written(
    tmp_path: Path,
) -> None:
    # The palette read each command's text as markup: `[link=http:x]` in a room's name
    # stopped the dashboard with a MarkupError as soon as ctrl+p opened it.
    name = "[b]x[link=http:x]l.txt"
    room = make_room(tmp_path, name, ["hello"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await eventually_async(
            lambda: f"Show room {name}" in screen_text(app), what="the listed room", pilot=pilot
        )
        await pilot.press(*"push into")
        await eventually_async(
            lambda: f"Push into room {name}" in screen_text(app), what="the match", pilot=pilot
        )
        await pilot.press("enter")
        await eventually_async(
            lambda: isinstance(app.screen, PromptScreen), what="the push prompt", pilot=pilot
        )
        assert f"Push a line into {name}" in screen_text(app)
    assert app.return_code in (None, 0)


async def test_quit_key_exits(tmp_path: Path) -> None:
    app = make_app(quiet_config([]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert app._exit


@pytest.mark.parametrize("session", ["../x", "a/b", ""])
def test_bad_session_in_config_is_rejected(session: str) -> None:
    from ackdeck.core.errors import InvalidName
    from ackdeck.tui.config import DashConfig

    with pytest.raises((ValueError, InvalidName)):
        DashConfig(session=session)


async def test_view_at_the_end_follows_new_lines_and_a_scrolled_view_stays(
    tmp_path: Path,
) -> None:
    room = make_room(tmp_path, "inbox.txt", [f"line {i}" for i in range(5)])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        height = view(app).size.height
        # The room fits, so the view shows its last line: it keeps showing the newest.
        with room.open("ab") as f:
            f.write(b"".join(b"more %d\n" % i for i in range(3 * height)))
        await feed_change(pilot)
        assert view(app).visible_text()[-1] == f"more {3 * height - 1}"
        # Scrolled to the top, the owner's place is kept while lines arrive.
        view(app).focus()
        await pilot.press("g")
        await settle(pilot)
        append_from_other_process(room, "newest")
        await feed_change(pilot)
        assert view(app).visible_text()[0] == "line 0"
        assert "newest" not in view(app).visible_text()


async def test_long_lines_scroll_sideways(tmp_path: Path) -> None:
    long_line = "start " + "x" * 300 + " TAIL-END"
    room = make_room(tmp_path, "inbox.txt", [long_line, "short"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "TAIL-END" not in screen_text(app)
        view(app).focus()
        for _ in range(40):
            await pilot.press("l")
        await settle(pilot)
        assert "TAIL-END" in screen_text(app)
        for _ in range(40):
            await pilot.press("h")
        await settle(pilot)
        assert "start xxx" in screen_text(app)


async def test_line_numbers_stay_put_while_lines_scroll_sideways(tmp_path: Path) -> None:
    long_line = "start " + "x" * 300 + " TAIL-END"
    room = make_room(tmp_path, "inbox.txt", [long_line, "short"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        view(app).focus()
        for _ in range(40):
            await pilot.press("l")
        await settle(pilot)
        rows = [line for line in screen_text(app).splitlines() if "│" in line]
        first = next(r for r in rows if "TAIL-END" in r)
        second = next(r for r in rows if r.lstrip("│ ").startswith("2"))
        # The gutter still shows both numbers; only the text moved.
        assert first.split("│")[1].strip() == "1"
        assert second.split("│")[1].strip() == "2"
        assert "start" not in first


async def test_a_view_at_the_end_keeps_following_when_the_terminal_shrinks(
    tmp_path: Path,
) -> None:
    # The owner makes the terminal smaller mid-incident: the panel showed the newest line, so
    # it must keep showing the newest, not stay a few rows short of the end for good.
    room = make_room(tmp_path, "alerts.txt", [f"line {i}" for i in range(100)])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        view(app).focus()
        await pilot.press("k", "G", "k", "j")  # at the end by scrolling, not by `G`'s follow
        await settle(pilot)
        assert view(app).visible_text()[-1] == "line 99"
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert view(app).visible_text()[-1] == "line 99"
        append_from_other_process(room, "newest")
        await feed_change(pilot)
        assert view(app).visible_text()[-1] == "newest"
        # Scrolled up, the owner's place is kept across a resize.
        await pilot.press("g")
        await settle(pilot)
        await pilot.resize_terminal(120, 35)
        await settle(pilot)
        assert view(app).visible_text()[0] == "line 0"


async def test_a_room_name_with_markup_and_escape_codes_is_shown_as_written(
    tmp_path: Path,
) -> None:
    # A file name is bytes the owner did not choose: "[b]" was read as markup (the table and
    # the lines title showed "x.txt" for "[b]x.txt") and an ESC went raw to the terminal in
    # the table, the title, the dialog and the toasts.
    room = make_room(tmp_path, "[b]x\x1b[31mred.txt", ["one", "two"])
    shown = "[b]x\\x1b[31mred.txt"  # the ESC shown escaped, as every door shows it
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, AckAllScreen)
        text = screen_text(app)
        assert f"Ack all of {shown}?" in text
        await pilot.press("y")
        await settle(pilot)
        text = screen_text(app)
        assert "\x1b" not in text
        rows = [line for line in text.splitlines() if "│ " + shown in line]
        assert rows, text  # the rooms table's row
        assert f"Lines · 0 lines · {shown}" in text
        toasts = [n for n in notifications(app) if "red.txt" in n]
        assert toasts and all(shown in n for n in toasts), toasts
        assert room.read_bytes() == b""


async def test_a_room_name_with_markup_is_shown_as_written_in_the_prompts(
    tmp_path: Path,
) -> None:
    # The push and trace prompts and the journey's title read the name as markup: `[b]` was
    # eaten, and `[link=http:x]` stopped the dashboard with a MarkupError on `p`.
    name = "[b]x[link=http:x]l.txt"
    room = make_room(tmp_path, name, ["one"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        assert f"Push a line into {name}" in screen_text(app)
        await pilot.press("escape", "t")
        await settle(pilot)
        assert f"Trace a line of {name}" in screen_text(app)
        await pilot.press(*"one", "enter")
        await settle(pilot)
        assert f"Journey in {name}" in screen_text(app)
        # A trace that finds nothing says so, naming the room as written.
        await pilot.press("escape", "t", *"absent", "enter")
        await settle(pilot)
        assert f"no line of {name} holds that text now" in notifications(app)
        await eventually_async(
            lambda: "holds that text now" in screen_text(app), what="the toast", pilot=pilot
        )
    assert app.return_code in (None, 0)


class _FifoReleased:
    """If a reader is still stuck opening the FIFO after 60 s (the defect this pins: only a
    real hang gets there), open its write end once so that reader, and the test, can end."""

    def __init__(self, path: Path) -> None:
        import threading

        self.path = path
        self._timer = threading.Timer(60.0, self.release)

    def release(self) -> None:
        import os

        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader waiting (ENXIO), or no FIFO: nothing is stuck

    def __enter__(self) -> _FifoReleased:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self.release()


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
async def test_a_room_replaced_by_a_fifo_or_a_symlink_is_refused_by_the_panel_too(
    tmp_path: Path, kind: str
) -> None:
    # A FIFO in the room's place blocked the panel's open for good (its lines stayed, and `q`
    # never returned: the app waits for that thread); a symlink showed another file's lines
    # beside the error row core gives for it.
    import os

    room = make_room(tmp_path, "alerts.txt", ["one", "two"])
    other = make_room(tmp_path, "other.txt", ["not the room"])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    with _FifoReleased(room):
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert view(app).visible_text() == ["one", "two"]
            room.unlink()
            if kind == "fifo":
                os.mkfifo(room)
            else:
                os.symlink(other, room)
            await feed_change(pilot)
            word = "a FIFO" if kind == "fifo" else "a symlink"
            assert view(app).visible_text() == []
            assert view(app).error is not None and word in view(app).error
            assert f"room alerts.txt is {word}" in screen_text(app)
            assert "not the room" not in screen_text(app)
            await pilot.press("q")
        assert other.read_bytes() == b"not the room\n"
