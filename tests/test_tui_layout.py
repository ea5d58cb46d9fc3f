"""Every column of every table is visible at common terminal sizes (issue 10)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ackdeck.core.rooms.absent import ABSENT_CELL
from ackdeck.tui.app import make_app
from ackdeck.tui.scenes import Scene, apply_rates, full_scene
from ackdeck.tui.testing import feed_change, fixed_clock, quiet_config, screen_text, settle
from ackdeck.tui.widgets.tables import (
    Cell,
    KeyedTable,
    ProcsTable,
    RoomsTable,
    WakesTable,
    _cut,
    fit_widths,
)
from tests.helpers.wait import eventually_async


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    return full_scene(tmp_path_factory.mktemp("scene"), time.time())


def test_fit_widths_cuts_the_widest_cuttable_columns_first() -> None:
    assert fit_widths([10, 4, 20], [3, 0, 5], 30) == [10, 4, 16]
    assert fit_widths([10, 4, 20], [3, 0, 5], 20) == [7, 4, 9]
    # Numbers (minimum 0) are never cut; the cut stops at the minimums.
    assert fit_widths([10, 4, 20], [3, 0, 5], 5) == [3, 4, 5]
    assert fit_widths([5, 5], [2, 2], 100) == [5, 5]


def test_a_cell_renders_as_the_text_it_stands_for_and_is_cut_with_its_style() -> None:
    from rich.console import Console
    from rich.measure import Measurement
    from rich.segment import Segment
    from rich.text import Text

    def shown(renderable: object) -> list[list[object]]:
        # As DataTable draws a cell: its lines at the column's width.
        console = Console(width=12, color_system="truecolor", force_terminal=True)
        lines = console.render_lines(renderable, console.options)  # type: ignore[arg-type]
        return [list(Segment.simplify(line)) for line in lines]

    cell = Cell("1,234", "bold red", "right")
    assert shown(cell) == shown(Text("1,234", style="bold red", justify="right"))
    assert cell.plain == str(cell) == "1,234"
    # A style of its own is a change (a Text compares its text and spans only, so the Oldest
    # cell turning red at the same text was not repainted).
    assert cell != Cell("1,234", "", "right") and cell == Cell("1,234", "bold red", "right")
    cut = _cut(Cell("a-long-room-name.txt", "yellow"), 8)
    assert isinstance(cut, Text) and cut.plain == "a-long-…" and str(cut.style) == "yellow"
    assert shown(Cell("[b]x.txt")) == shown(Text("[b]x.txt"))  # never read as markup
    for text in ("", "a b", "wide 漢字", "two\nlines"):
        console = Console(width=40)
        assert Measurement.get(console, console.options, Cell(text)) == Measurement.get(
            console, console.options, Text(text)
        )


@pytest.mark.parametrize("size", [(120, 35), (80, 24), (100, 30), (200, 50)])
async def test_every_column_of_every_table_is_visible(scene: Scene, size) -> None:
    app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
    apply_rates(app, scene)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        await settle(pilot)
        text = screen_text(app)
        for cls in (RoomsTable, ProcsTable, WakesTable):
            table: KeyedTable = app.main.query_one(cls)
            assert table.row_count > 0
            # Nothing to scroll sideways: all columns fit inside the border.
            assert table.max_scroll_x == 0, (cls.__name__, size)
            headers = [str(c.label) for c in table.columns.values()]
            assert len(headers) == len(cls.COLUMNS)
            for header in headers:
                assert header in text, (cls.__name__, header, size)
            assert table.region.right <= size[0]


async def test_more_rooms_than_fit_at_80x24_keep_every_column_and_every_first_row(
    scene: Scene, tmp_path: Path
) -> None:
    # Seven rooms at 80x24: the rooms table scrolls, and its vertical scrollbar (2 columns)
    # was counted as 1, so a horizontal scrollbar came on too; with four rooms in view the
    # panels also overflowed the screen by a row. Either way the wakes' first row was under
    # the footer: the wakes table looked empty while records were pending.
    extra = []
    for i in range(4):
        extra.append(tmp_path / f"extra-{i}.txt")
        extra[-1].write_text("hello\n")
    app = make_app(quiet_config([*scene.rooms, *extra], home=scene.home), clock=scene.clock)
    apply_rates(app, scene)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        await settle(pilot)
        rooms = app.main.query_one(RoomsTable)
        assert rooms.row_count == 7 and rooms.max_scroll_x == 0
        assert not rooms.show_horizontal_scrollbar
        footer = app.screen.size.height - 1
        for cls in (ProcsTable, WakesTable):
            table: KeyedTable = app.main.query_one(cls)
            assert table.row_count > 0 and table.max_scroll_x == 0, cls.__name__
            # Its header and first row are above the footer.
            assert table.region.y + table.region.height <= footer, (cls.__name__, table.region)
        text = screen_text(app).splitlines()
        first_wake = app.main.query_one(WakesTable)._keys[0].split("/")[0]
        assert any(line.split()[:1] == [first_wake] for line in text[-4:-1]), text


async def test_a_deleted_room_at_80_columns_leaves_the_room_names_readable(
    scene: Scene, tmp_path: Path
) -> None:
    # A missing room's Pending cell is never cut; "does not exist yet" took so many of the 80
    # columns that the names beside it were cut to `esc.t…` and `doome…`.
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("soon gone\n")
    rooms = [*scene.rooms, doomed]
    app = make_app(quiet_config(rooms, home=scene.home), clock=scene.clock)
    apply_rates(app, scene)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        doomed.unlink()
        await feed_change(pilot)
        table = app.main.query_one(RoomsTable)

        def pending_of_doomed() -> str:
            row = table._rows[table._keys.index(str(doomed))]
            return str(getattr(row[1], "plain", row[1]))

        await eventually_async(
            lambda: pending_of_doomed() == ABSENT_CELL, what="the deleted room's cell", pilot=pilot
        )
        table.move_cursor(row=table._keys.index(str(doomed)))  # its row in view
        await settle(pilot)
        text = screen_text(app).splitlines()
        top = next(i for i, line in enumerate(text) if line.startswith("─Rooms"))
        shown = text[top + 2 : top + 1 + table.region.height - 1]  # under its header
        assert any(ABSENT_CELL in line for line in shown), shown
        # Every row in view names its room in full.
        firsts = [line.split()[0] for line in shown if line.strip()]
        assert firsts and all(name in {p.name for p in rooms} for name in firsts), shown


async def test_column_headers_explain_their_numbers(scene: Scene) -> None:
    app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        table = app.main.query_one(WakesTable)
        table.hover_coordinate = table.hover_coordinate._replace(row=-1, column=3)
        assert table.tooltip is not None and str(table.tooltip).startswith("Pending: items")
        table.hover_coordinate = table.hover_coordinate._replace(row=0, column=3)
        assert table.tooltip is None


async def test_help_has_a_legend_of_the_counters(scene: Scene) -> None:
    app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
    async with app.run_test(size=(160, 120)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        help_text = screen_text(app)
        assert "What the numbers mean" in help_text
        for word in ("Pending", "In-flight", "Unread", "Acked", "Preserved", "Superseded"):
            assert word in help_text, word


async def test_toasts_do_not_cover_the_lines_count(scene: Scene) -> None:
    for size in ((120, 35), (80, 24)):
        app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
        # run_test turns notifications off unless asked: without this no toast is drawn.
        async with app.run_test(size=size, notifications=True) as pilot:
            await settle(pilot)
            for i in range(3):
                app.notify(f"a long notification number {i} " + "x" * 40, timeout=60)
            # Once the toasts are drawn (not after a fixed pause), the count must still show.
            await eventually_async(
                lambda: "notification number 2" in screen_text(app),  # noqa: B023 - awaited here
                what="the toasts to be drawn",
                pilot=pilot,
            )
            assert "36 lines" in screen_text(app), size


async def test_toasts_do_not_cover_the_lines_count_of_a_room_with_a_long_name(
    tmp_path: Path,
) -> None:
    room = tmp_path / "production-incident-alerts.txt"
    room.write_bytes(b"".join(b"alert %d\n" % i for i in range(1234)))
    for size in ((120, 35), (80, 24)):
        app = make_app(quiet_config([room]), clock=fixed_clock)
        async with app.run_test(size=size, notifications=True) as pilot:
            await settle(pilot)
            for i in range(3):
                app.notify(f"a long notification number {i} " + "x" * 40, timeout=60)
            await eventually_async(
                lambda: "notification number 2" in screen_text(app),  # noqa: B023 - awaited here
                what="the toasts to be drawn",
                pilot=pilot,
            )
            assert "1,234 lines" in screen_text(app), (size, screen_text(app))
