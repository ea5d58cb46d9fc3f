"""Pilot tests of the processes and wakes panels and the output screen, on real monitored
processes started through ackdeck.core.monitors.procs (detached supervisors, real output.log
files)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from ackdeck.core.monitors import output, procs, wakes
from ackdeck.core.monitors.runs import load_meta, supervisor_alive
from ackdeck.tui.app import make_app
from ackdeck.tui.screens.modals import ConfirmScreen
from ackdeck.tui.screens.output import OutputScreen
from ackdeck.tui.testing import (
    feed_change,
    fixed_clock,
    notifications,
    quiet_config,
    screen_text,
    settle,
)
from ackdeck.tui.widgets.line_view import LineView
from ackdeck.tui.widgets.tables import ProcsTable, WakesTable
from tests.helpers.wait import eventually, eventually_async

SIZE = (140, 40)


def start_and_finish(home: Path, name: str, script: str, pattern: str, tmp_path: Path) -> None:
    """Run `sh -c script` under a monitor for session `agent` and wait until its wake exists."""
    procs.start(
        home,
        name,
        ["sh", "-c", script],
        session="agent",
        monitors=[procs.MonitorSpec(pattern, cooldown_ms=0)],
        cwd=str(tmp_path),
    )
    eventually(lambda: procs.get_run(home, name).status != "running", what=f"{name} to exit")
    eventually(
        lambda: any(w.name == name and w.lines for w in wakes.list_wakes(home, "agent")),
        what=f"the wake record of {name}",
    )


async def test_panels_show_processes_and_wake_records(home: Path, tmp_path: Path) -> None:
    start_and_finish(home, "build", "echo compiling; echo DONE", "DONE", tmp_path)
    start_and_finish(home, "tests", "echo collecting; echo FAIL test_x; exit 3", "FAIL", tmp_path)
    app = make_app(quiet_config([], home=home), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.main.query_one(ProcsTable)
        assert table.row_count == 2
        text = screen_text(app)
        assert "/DONE/" in text and "/FAIL/" in text
        rows = {k: [str(c) for c in v] for k, v in zip(table._keys, table._rows, strict=True)}
        assert rows["build"][1:3] == ["exited", "0"]
        assert rows["tests"][1:3] == ["exited", "3"]
        assert rows["tests"][4] == "1"  # one monitor match
        wt = app.main.query_one(WakesTable)
        assert set(wt._keys) == {"agent/build", "agent/tests"}
        # Core's Pending: the FAIL line plus the pending exit notice (exit 3).
        rec = next(w for w in wakes.list_wakes(home, "agent") if w.name == "tests")
        assert (len(rec.lines), rec.notice_pending) == (1, True)
        assert str(wt._rows[wt._keys.index("agent/tests")][3]) == str(rec.pending) == "2"


async def test_opening_output_does_not_change_the_agents_wake_outcome(
    home: Path, tmp_path: Path
) -> None:
    start_and_finish(home, "deploy", "echo step 1; echo FAIL rollout", "FAIL", tmp_path)
    # Control: the same situation, but the *agent* reads the output before the wake is
    # delivered. That read must supersede its wake (so the check below can fail).
    start_and_finish(home, "control", "echo step 1; echo FAIL rollout", "FAIL", tmp_path)
    output.read_output(home, "control", "agent")

    app = make_app(quiet_config([], home=home), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.main.query_one(ProcsTable)
        table.focus()
        table.move_cursor(row=table._keys.index("deploy"))
        await pilot.press("o")
        await settle(pilot)
        assert isinstance(app.screen, OutputScreen)
        view = app.screen.query_one(LineView)
        assert view.visible_text() == ["step 1", "FAIL rollout"]
        assert "2 new lines read as owner" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, OutputScreen)
        # Opened again: the same 2 lines on screen, none of them new to the owner. The header
        # said "0 lines read as owner" beside them, as if the owner had read none.
        await pilot.press("o")
        await settle(pilot)
        assert app.screen.query_one(LineView).visible_text() == ["step 1", "FAIL rollout"]
        assert "0 new lines read as owner" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)

    # The owner's read is recorded for the owner only...
    again = output.read_output(home, "deploy", "owner")
    assert again.lines == []
    # ...so the agent's wake still delivers the FAIL line; the control's is superseded.
    result = wakes.drain(home, "agent")
    delivered = {d.name: [x.text for x in d.lines] for d in result.delivered}
    assert delivered.get("deploy") == ["FAIL rollout"]
    assert "control" not in delivered or delivered["control"] == []
    assert result.superseded >= 1


async def test_output_screen_follows_new_output(home: Path, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    script = f'echo first; while [ ! -e "{gate}" ]; do sleep 0.05; done; echo second'
    procs.start(home, "slow", ["sh", "-c", script], session="agent", cwd=str(tmp_path))
    eventually(
        lambda: b"first" in (procs.get_run(home, "slow").run_dir / "output.log").read_bytes(),
        what="first output",
    )
    app = make_app(quiet_config([], home=home), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_output("slow")
        await settle(pilot)
        view = app.screen.query_one(LineView)
        assert view.visible_text() == ["first"]
        gate.touch()
        eventually(lambda: procs.get_run(home, "slow").status == "exited", what="slow to exit")
        await feed_change(pilot)
        assert view.visible_text() == ["first", "second"]
        assert "exited, exit 0" in screen_text(app)


async def test_dismiss_wake_removes_the_record(home: Path, tmp_path: Path) -> None:
    start_and_finish(home, "lint", "echo FAIL style", "FAIL", tmp_path)
    app = make_app(quiet_config([], home=home), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.main.query_one(WakesTable).focus()
        await pilot.press("x")
        await settle(pilot)
        # It asks first, as ack all does; no (and the focused button, cancel) keeps it.
        assert isinstance(app.screen, ConfirmScreen)
        assert "Dismiss the wake of agent for lint?" in screen_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert any(w.name == "lint" and w.lines for w in wakes.list_wakes(home, "agent"))
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert any(w.name == "lint" and w.lines for w in wakes.list_wakes(home, "agent"))
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert any("dismissed the wake of agent for lint" in n for n in notifications(app))
        assert not [w for w in wakes.list_wakes(home, "agent") if w.name == "lint" and w.lines]
        assert app.main.query_one(WakesTable).row_count == len(wakes.list_wakes(home))


async def test_output_the_screen_could_not_show_is_not_recorded_as_shown_to_the_owner(
    home: Path, tmp_path: Path, monkeypatch
) -> None:
    # Recorded only once delivered: if the screen cannot show a read (the app is closing, its
    # message refused), the owner's shown range must not move, or `ackdeck output read` as
    # the owner would skip lines the owner never saw.
    from ackdeck.tui.screens.output import OutputRead

    start_and_finish(home, "deploy", "echo step 1; echo FAIL rollout", "FAIL", tmp_path)
    real_post = OutputScreen.post_message

    def closing_post(self, message):
        if isinstance(message, OutputRead):
            return False  # what post_message answers once the screen is closing
        return real_post(self, message)

    monkeypatch.setattr(OutputScreen, "post_message", closing_post)
    app = make_app(quiet_config([], home=home), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.main.query_one(ProcsTable)
        table.focus()
        table.move_cursor(row=table._keys.index("deploy"))
        await pilot.press("o")
        await settle(pilot)
        assert isinstance(app.screen, OutputScreen)
    again = output.read_output(home, "deploy", "owner")
    assert [x.decode() for x in again.lines] == ["step 1", "FAIL rollout"]


async def test_a_run_whose_supervisor_died_shows_lost_without_a_file_event(
    home: Path, tmp_path: Path
) -> None:
    # kill -9 of a supervisor writes nothing, so no watch reports it: the sweep that looks
    # at the home while a run is running is what finds it lost.
    info = procs.start(home, "srv", ["sleep", "600"], cwd=str(tmp_path))
    try:
        eventually(
            lambda: (m := load_meta(info.run_dir)) is not None and m.supervisor_pid, what="pid"
        )
        meta = load_meta(info.run_dir)
        assert meta is not None and meta.supervisor_pid
        app = make_app(quiet_config([], home=home, watch=True, tick_seconds=0.05))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert "running" in screen_text(app)
            os.kill(meta.supervisor_pid, signal.SIGKILL)
            eventually(lambda: not supervisor_alive(info.run_dir), what="the supervisor to be gone")
            await eventually_async(
                lambda: "lost" in screen_text(app), what="the run shown as lost", pilot=pilot
            )
    finally:
        procs.kill(home, "srv")


async def test_a_monitor_pattern_with_brackets_is_shown_as_written(
    home: Path, tmp_path: Path
) -> None:
    # `[/x]` is a regex (a `/` or an `x`) and, read as markup, a closing tag with no opening
    # one: the Processes panel stopped the dashboard with a MarkupError.
    start_and_finish(home, "build", "echo a/b", "[/x]", tmp_path)
    app = make_app(quiet_config([], home=home), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "/[/x]/" in screen_text(app)
    assert app.return_code in (None, 0)
