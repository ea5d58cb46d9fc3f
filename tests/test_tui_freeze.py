"""The lines panel after an ack: it must never freeze (issue 10).

The freeze: a sync of the lines panel was in flight when a fresh index arrived; the queued
sync then started on the old index, its count was dropped as stale, and the hand-written
"running" flag stayed set, so every later change only queued another sync that never ran.
The first test drives exactly that order of messages (a gate holds the sync's probe); the
stress test runs the owner's ack keys against a real unlocked writer process.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

from ackdeck.core.rooms.file.room import Room
from ackdeck.tui.app import make_app
from ackdeck.tui.lineindex import LineIndex
from ackdeck.tui.messages import FilesChanged, IndexBuilt
from ackdeck.tui.screens.modals import AckAllScreen
from ackdeck.tui.testing import fixed_clock, quiet_config, settle
from ackdeck.tui.widgets.line_view import LineView
from tests.helpers.wait import WAIT, eventually_async

SIZE = (120, 36)


def complete_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def append_from_other_process(path: Path, line: str) -> None:
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$1" >> "$2"', "sh", line, str(path)], check=True)


async def test_sync_in_flight_when_a_fresh_index_arrives_does_not_freeze_the_panel(
    tmp_path: Path, monkeypatch
) -> None:
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"one\ntwo\nthree\n")
    gate = threading.Event()
    probing = threading.Event()
    real_probe = LineIndex.probe

    def gated_probe(self: LineIndex):
        probing.set()
        assert gate.wait(WAIT)
        return real_probe(self)

    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = app.main.query_one("#lines", LineView)
        assert view.count == 3
        monkeypatch.setattr(LineIndex, "probe", gated_probe)
        view.sync()  # a sync on the current index, held in its probe
        await eventually_async(probing.is_set, what="the sync to start", pilot=pilot)
        view.sync()  # a second change while it runs: queued
        # A fresh index of the same room arrives while the sync is still in flight.
        fresh = LineIndex.open(room)
        fresh.extend_to(fresh.size_now())
        view.post_message(IndexBuilt(str(room), fresh, fresh.count))
        await pilot.pause()
        gate.set()
        monkeypatch.setattr(LineIndex, "probe", real_probe)
        await eventually_async(
            lambda: not view.busy, what="the lines panel to be idle (not frozen)", pilot=pilot
        )
        # Later lines must still show up.
        append_from_other_process(room, "four")
        append_from_other_process(room, "five")
        app.post_message(FilesChanged())
        await eventually_async(
            lambda: view.count == 5, what=f"panel stuck at {view.count} lines", pilot=pilot
        )
        await settle(pilot, timeout=WAIT)
        assert view.visible_text() == ["one", "two", "three", "four", "five"]


WRITER = r"""
import os, sys, time
path = sys.argv[1]
n = 0
while True:
    n += 1
    # Like `printf ... >> room`: open, append, close, no lock; one write per line.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"[alerts] pager: disk 91% on db-3 (#{n})\n".encode())
    finally:
        os.close(fd)
    time.sleep(0.01)
"""


async def test_50_ack_all_and_50_read_ack_rounds_with_an_unlocked_writer_keep_the_panel_exact(
    tmp_path: Path,
) -> None:
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"".join(f"old {i}\n".encode() for i in range(20)))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(room)])
    app = make_app(quiet_config([room]), clock=fixed_clock)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, timeout=WAIT)
            view = app.main.query_one("#lines", LineView)
            for round_no in range(100):  # 50 rounds of A/y, 50 of r/a, alternating
                # The writer appends while the owner presses the keys and the acks run.
                if round_no % 2 == 0:
                    acked_before = Room(room).status().acked_total
                    await pilot.press("A")
                    await eventually_async(
                        lambda: isinstance(app.screen, AckAllScreen), what="the dialog", pilot=pilot
                    )
                    shown = app.screen.shown
                    await pilot.press("y")
                    await eventually_async(
                        lambda: not isinstance(app.screen, AckAllScreen),
                        what=f"round {round_no}: {getattr(app.screen, 'failed', None)}",
                        pilot=pilot,
                    )
                    # Exactly the dialog's number was acked; later lines stayed.
                    assert Room(room).status().acked_total - acked_before == shown
                else:
                    await pilot.press("r")
                    await pilot.pause()
                    await pilot.press("a")
                await settle(pilot, timeout=WAIT)
                # Hold the writer (between two whole-line writes: each line is one write),
                # then the panel must catch up with the file exactly.
                writer.send_signal(signal.SIGSTOP)
                try:
                    app.post_message(FilesChanged())  # what the watcher would post
                    await eventually_async(
                        lambda: not view.busy and view.count == complete_lines(room),
                        what=f"round {round_no}: panel {view.count} lines, "
                        f"file {complete_lines(room)}",
                        pilot=pilot,
                    )
                finally:
                    writer.send_signal(signal.SIGCONT)
            assert app.main.query_one("#lines", LineView) is view
    finally:
        writer.kill()
        writer.wait(WAIT)


async def test_an_index_build_that_crashes_says_so_and_does_not_hold_later_syncs(
    tmp_path: Path, monkeypatch
) -> None:
    # An unexpected error in the build thread (not an OSError it reports itself) used to leave
    # "loading…" on screen and every sync queued behind it for good.
    room = tmp_path / "alerts.txt"
    room.write_bytes(b"one\ntwo\n")
    real_step = LineIndex.extend_step

    def broken_step(self: LineIndex, *args, **kwargs):
        raise RuntimeError("index exploded")

    monkeypatch.setattr(LineIndex, "extend_step", broken_step)
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        view = app.main.query_one("#lines", LineView)
        await eventually_async(
            lambda: view.error is not None, what="the build error was not shown", pilot=pilot
        )
        assert "index exploded" in view.error
        monkeypatch.setattr(LineIndex, "extend_step", real_step)
        view.sync()  # the next change re-indexes the file
        await eventually_async(
            lambda: view.count == 2 and not view.busy, what="the panel to recover", pilot=pilot
        )
        await settle(pilot, timeout=WAIT)
        assert view.visible_text() == ["one", "two"]


async def test_watcher_messages_while_the_app_closes_are_harmless(tmp_path: Path) -> None:
    """The watcher thread keeps posting while the app exits: the screen's widgets are removed
    after its message loop stops and before it unmounts, and a change handled in between must
    not crash the exit (seen once in CI, 3.13; this flood reproduces it every few exits)."""
    room = tmp_path / "r.txt"
    room.write_text("a\n")
    for _ in range(10):
        app = make_app(quiet_config([room], home=tmp_path / "home"))
        stop = threading.Event()

        def flood(app=app, stop=stop) -> None:  # type: ignore[no-untyped-def]
            while not stop.is_set():
                app.post_message(FilesChanged())

        thread = threading.Thread(target=flood, daemon=True)
        try:
            async with app.run_test(size=(100, 30)) as pilot:
                await settle(pilot)
                thread.start()
                await pilot.pause(0.05)
                app.request_scan()
        finally:
            stop.set()
            if thread.is_alive():
                thread.join(timeout=30)
