"""Snapshot tests of the dashboard (pytest-textual-snapshot).

Deterministic: scenes are built through core on a clock frozen at build time (tui/scenes.py),
watchers and ticks are off, the header has no clock, sizes are explicit, and no temporary path,
pid or host name reaches the screen. Update with `pytest --snapshot-update` only on purpose.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from ackdeck.tui.app import make_app
from ackdeck.tui.scenes import Scene, apply_rates, build_flood, full_scene
from ackdeck.tui.testing import quiet_config, screen_text, settle


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    return full_scene(tmp_path_factory.mktemp("scene"), time.time())


@pytest.fixture(scope="module")
def flood(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    base = tmp_path_factory.mktemp("flood")
    now = time.time()
    path = build_flood(base)
    home = base / "home"
    home.mkdir()
    per_bucket = [
        40_000,
        90_000,
        120_000,
        60_000,
        80_000,
        150_000,
        110_000,
        70_000,
        90_000,
        100_000,
        50_000,
        40_000,
    ]
    samples = [(61.0, 0)]
    total = 0
    for i, n in enumerate(per_bucket):
        total += n
        samples.append((5.0 * (11 - i) + 0.5, total))
    return Scene([path], home, {str(path): samples}, now=now)


def app_for(scene: Scene, **extra: Any):
    app = make_app(quiet_config(scene.rooms, home=scene.home, **extra), clock=scene.clock)
    apply_rates(app, scene)
    return app


async def painted(pilot, *, timeout: float = 60.0) -> None:
    """Settled, and the screen the same over several frames of real time: widgets re-measure
    (DataTable column widths, a scrollbar that comes and goes) in their own idle handlers and
    repaint on a later frame, later still on a loaded machine (a fixed pause was not enough
    there: a column one cell narrower, a key pressed before the focus had landed). A modal
    pushed before that would show a stale background."""
    deadline = time.monotonic() + timeout
    await settle(pilot)
    last, same = screen_text(pilot.app), 0
    while same < 3:
        assert time.monotonic() < deadline, "the screen never stopped changing"
        await pilot.pause(0.05)
        await settle(pilot)
        now = screen_text(pilot.app)
        same = same + 1 if now == last else 0
        last = now


def settled(*keys: str):
    async def run_before(pilot) -> None:
        await painted(pilot)
        for key in keys:
            await pilot.press(key)
            await painted(pilot)

    return run_before


def test_main_screen_with_data(snap_compare, scene: Scene) -> None:
    assert snap_compare(app_for(scene), terminal_size=(140, 40), run_before=settled("j"))


def test_main_screen_120x35(snap_compare, scene: Scene) -> None:
    assert snap_compare(app_for(scene), terminal_size=(120, 35), run_before=settled())


def test_main_screen_80x24(snap_compare, scene: Scene) -> None:
    assert snap_compare(app_for(scene), terminal_size=(80, 24), run_before=settled())


def test_agents_panel_narrows_to_the_highlighted_agent(snap_compare, scene: Scene) -> None:
    """Issue 32: the Agents panel first, the waiting and stalled agents at its top; the
    highlighted agent narrows the rooms, processes and wakes to its own."""
    keys = ("shift+tab", "j", "j", "j")  # from the rooms up to the agents, down to `agent`
    assert snap_compare(app_for(scene), terminal_size=(140, 40), run_before=settled(*keys))


def test_agents_panel_80x24(snap_compare, scene: Scene) -> None:
    """At 80x24 the focused Agents panel grows to show its agents; every other panel keeps
    its first row and the footer still shows `q Quit` and `? Help`."""
    assert snap_compare(app_for(scene), terminal_size=(80, 24), run_before=settled("shift+tab"))


def test_main_screen_wide_terminal(snap_compare, scene: Scene) -> None:
    assert snap_compare(app_for(scene), terminal_size=(200, 50), run_before=settled())


def test_empty_state(snap_compare, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    app = make_app(quiet_config([], home=home), clock=lambda: 0.0)
    assert snap_compare(app, terminal_size=(100, 30), run_before=settled())


def test_flooded_room_scrolled_to_the_newest_line(snap_compare, flood: Scene) -> None:
    assert snap_compare(app_for(flood), terminal_size=(120, 36), run_before=settled("tab", "G"))


def test_output_screen(snap_compare, scene: Scene) -> None:
    async def run_before(pilot) -> None:
        await painted(pilot)
        pilot.app.open_output("tests")
        await painted(pilot)

    assert snap_compare(app_for(scene), terminal_size=(120, 30), run_before=run_before)


def test_help_screen(snap_compare, scene: Scene) -> None:
    assert snap_compare(app_for(scene), terminal_size=(120, 44), run_before=settled("?"))


def test_ack_all_confirmation_modal(snap_compare, tmp_path: Path) -> None:
    # Its own scene: opening the dialog reads the room as the owner (a receipt).
    scene = full_scene(tmp_path, time.time())
    assert snap_compare(app_for(scene), terminal_size=(100, 30), run_before=settled("A"))


def test_dismiss_wake_confirmation_modal(snap_compare, scene: Scene) -> None:
    async def run_before(pilot) -> None:
        await painted(pilot)
        pilot.app.main.query_one("#wakes").focus()
        await painted(pilot)
        await pilot.press("x")
        await painted(pilot)

    assert snap_compare(app_for(scene), terminal_size=(100, 30), run_before=run_before)
