"""Issue 20: the owner's dashboard. A read means what the owner saw; the room acted on is the one
chosen; the lines panel can be enlarged and scanned; the config is found by default.

Pilot tests on real room files (and a real redis-server): assertions look at the files and at
what the owner is told.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service.refs import open_room
from ackdeck.tui.app import make_app
from ackdeck.tui.config import (
    DashConfig,
    default_config_path,
    load_config,
    remember_theme,
    rooms_in,
    with_theme,
)
from ackdeck.tui.highlight import LineFilter, cut_by_marks, marks, monitor_pattern
from ackdeck.tui.testing import (
    feed_change,
    fixed_clock,
    notifications,
    quiet_config,
    screen_text,
    settle,
)
from ackdeck.tui.widgets.line_view import LineView
from ackdeck.tui.widgets.tables import RoomsTable
from tests.helpers.redis_server import RedisServer, new_room_name

SIZE = (120, 35)


def make_room(path: Path, count: int, word: str = "line") -> Path:
    path.write_bytes(b"".join(f"{word} {i}\n".encode() for i in range(count)))
    return path


@asynccontextmanager
async def dashboard(rooms: list, size: tuple[int, int] = SIZE) -> AsyncIterator[tuple]:
    """The dashboard on `rooms`, settled after its first scan and paint."""
    app = make_app(quiet_config(rooms), clock=fixed_clock)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        yield app, pilot


def view(app) -> LineView:
    return app.main.query_one("#lines", LineView)


def rooms_table(app) -> RoomsTable:
    return app.main.query_one(RoomsTable)


def on_screen(app) -> int:
    return view(app).scrollable_content_region.height


# ----- 1. the owner's read is what the owner saw ---------------------------------------------
async def test_r_reads_only_the_lines_on_screen_and_a_acks_only_those(tmp_path: Path) -> None:
    room = make_room(tmp_path / "inbox.txt", 400)
    before = room.read_bytes().split(b"\n")
    async with dashboard([room]) as (app, pilot):
        shown = on_screen(app)
        assert 5 < shown < 400
        await pilot.press("r")
        await settle(pilot)
        rest = 400 - shown
        expected = f"owner read {shown} of 400 lines of inbox.txt: the {rest} below were not"
        assert any(expected in n for n in notifications(app)), notifications(app)
        assert Room(room).status().sessions["owner"].in_flight == shown
        await pilot.press("a")
        await settle(pilot)
    # Exactly the lines that were on screen are gone; every other line is kept, in order.
    assert room.read_bytes() == b"\n".join(before[shown:])
    assert Room(room).status().acked_total == shown


async def test_scrolling_down_extends_the_read_and_a_jump_to_the_end_does_not(
    tmp_path: Path,
) -> None:
    room = make_room(tmp_path / "inbox.txt", 400)
    async with dashboard([room]) as (app, pilot):
        lines = view(app)
        lines.focus()
        shown = on_screen(app)
        await pilot.press("pagedown", "pagedown", "j")
        await settle(pilot)
        # The window moved down two pages and a line, each step touching what was seen.
        assert lines.seen == int(lines.scroll_offset.y) + shown
        seen = lines.seen
        assert seen == 2 * shown + 1 + shown
        await pilot.press("G")  # jump to the newest: the lines jumped over were not shown
        await settle(pilot)
        assert lines.seen == seen
        await pilot.press("r")
        await settle(pilot)
        assert Room(room).status().sessions["owner"].in_flight == seen
        await pilot.press("g", "r")  # back at the top: still the same prefix
        await settle(pilot)
        assert Room(room).status().sessions["owner"].in_flight == seen


async def test_a_room_that_changed_since_it_was_shown_is_not_read_past_what_still_matches(
    tmp_path: Path,
) -> None:
    # An agent acks the first 5 lines after the panel painted them and before the owner's
    # `r` (the panel has not caught up: no watcher in this test). The lines on screen are
    # no longer the room's first lines; the owner's read must not cover lines never shown.
    room = make_room(tmp_path / "inbox.txt", 400)
    async with dashboard([room]) as (app, pilot):
        agent = Room(room)
        agent.read("agent", deliver=lambda _res: 5)
        assert agent.ack("agent").acked == 5
        await pilot.press("r")
        await settle(pilot)
        assert any("the room changed after it was shown" in n for n in notifications(app))
        assert Room(room).status().sessions["owner"].in_flight == 0
        await pilot.press("a")
        await settle(pilot)
        assert Room(room).status().pending == 395  # nothing of the owner's was removed
        # Once the panel shows the room as it is, the read covers what is on screen again.
        await feed_change(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert Room(room).status().sessions["owner"].in_flight == on_screen(app)


async def test_with_a_filter_lines_it_hides_were_not_seen(tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(
        b"".join((b"ERROR %d\n" if i % 50 == 10 else b"ok %d\n") % i for i in range(400))
    )
    async with dashboard([room]) as (app, pilot):
        shown = on_screen(app)
        view(app).set_filter("ERROR")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        # Only the first screenful (before the filter) is the seen prefix: the filtered view
        # skipped the lines between ERRORs.
        assert Room(room).status().sessions["owner"].in_flight == shown


async def test_a_redis_room_reads_only_the_entries_on_screen(redis_server: RedisServer) -> None:
    url = redis_server.url(new_room_name())
    r = open_room(url)
    for i in range(400):
        r.push(f"entry {i}")
    app = make_app(quiet_config([url]), clock=fixed_clock)  # type: ignore[list-item]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = on_screen(app)
        await pilot.press("r")
        await settle(pilot)
        assert any(f"read {shown} of 400 lines" in n for n in notifications(app))
        await pilot.press("a")
        await settle(pilot)
    st = open_room(url).status()
    assert (st.pending, st.acked_total) == (400 - shown, shown)
    assert open_room(url).tail(1) == [b"entry 399"]


# ----- 2. selection by key ------------------------------------------------------------------
async def assert_selected(app, room: Path) -> None:
    table, screen = rooms_table(app), app.main
    assert table.selected_key == str(room)
    assert screen.selected_room == str(room)
    assert view(app).key == str(room)
    assert room.name in str(view(app).border_title)


async def test_resizing_keeps_the_chosen_room_and_r_acts_on_it(tmp_path: Path) -> None:
    rooms = [make_room(tmp_path / f"room{i}.txt", 3 + i) for i in range(3)]
    app = make_app(quiet_config(rooms), clock=fixed_clock)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        rooms_table(app).focus()
        await pilot.press("down")
        await settle(pilot)
        await assert_selected(app, rooms[1])
        for width in (80, 110, 120, 90):
            await pilot.resize_terminal(width, 35)
            await settle(pilot)
            await assert_selected(app, rooms[1])
        await pilot.press("r")
        await settle(pilot)
    assert "owner" in Room(rooms[1]).status().sessions
    assert "owner" not in Room(rooms[0]).status().sessions


async def test_rooms_appearing_and_going_keep_the_chosen_room(tmp_path: Path) -> None:
    d = tmp_path / "rooms"
    d.mkdir()
    b = make_room(d / "b.txt", 2)
    c = make_room(d / "c.txt", 2)
    app = make_app(quiet_config(room_dirs=[d]), clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rooms_table(app).focus()
        await pilot.press("down")
        await settle(pilot)
        await assert_selected(app, c)
        make_room(d / "a.txt", 1)  # sorts before: c moves down a row
        await feed_change(pilot)
        assert rooms_table(app)._keys == [str(d / n) for n in ("a.txt", "b.txt", "c.txt")]
        await assert_selected(app, c)
        b.unlink()  # the room above goes: c moves up a row
        await feed_change(pilot)
        assert rooms_table(app)._keys == [str(d / "a.txt"), str(c)]
        await assert_selected(app, c)
        c.unlink()  # the chosen room goes: the one now in its place is shown, and named
        await feed_change(pilot)
        await assert_selected(app, d / "a.txt")


# ----- 3. maximise -------------------------------------------------------------------------
async def test_m_maximizes_the_focused_panel_and_m_or_esc_restores_it(tmp_path: Path) -> None:
    room = make_room(tmp_path / "inbox.txt", 400)
    async with dashboard([room], size=(80, 24)) as (app, pilot):
        lines = view(app)
        lines.focus()
        before = on_screen(app)
        await pilot.press("m")
        await settle(pilot)
        assert app.main.maximized is lines
        assert on_screen(app) > before + 5
        await pilot.press("m")
        await settle(pilot)
        assert app.main.maximized is None
        rooms_table(app).focus()
        await pilot.press("m")
        await settle(pilot)
        assert app.main.maximized is rooms_table(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.main.maximized is None
        footer = screen_text(app).splitlines()[-1]
        assert "m Maximize" in footer
        rows = [row for _, section in app.help_sections() for row in section]
        assert any(keys == "m" and "Maximize the focused panel" in tip for keys, _, tip in rows)


async def test_at_80x24_the_lines_panel_shows_10_lines_and_every_panel_its_first_row(
    tmp_path: Path,
) -> None:
    """With processes and wakes: the lines keep ten rows, every other panel its first row
    (the agents panel in its title line), and the footer `q Quit` and `? Help` (issue 32)."""
    import time

    from ackdeck.tui.scenes import apply_rates, full_scene

    scene = full_scene(tmp_path, time.time())
    app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
    apply_rates(app, scene)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        await settle(pilot)
        from ackdeck.tui.widgets.tables import AgentsTable, ProcsTable, WakesTable

        assert on_screen(app) >= 10
        assert len(view(app).visible_text()) >= 10
        text = screen_text(app)
        footer = text.splitlines()[-1]
        assert "q Quit" in footer and "? Help" in footer, footer
        main = app.main
        # Under 30 rows the agents panel is its title line, which carries its summary row.
        summary = AgentsTable.summary(main.agents.agents)
        assert summary and summary in str(main.query_one(AgentsTable).border_title)
        for cls in (RoomsTable, ProcsTable, WakesTable):
            table = main.query_one(cls)
            assert table.row_count > 0, cls.__name__
            first = table._display(table._rows[0])[0]
            assert str(getattr(first, "plain", first)) in text, cls.__name__
            assert table.region.height >= 3, (cls.__name__, table.region)  # header and row


# ----- 5. lines people can scan -------------------------------------------------------------
def test_a_filter_is_text_or_a_slashed_re2_regex() -> None:
    text = LineFilter("fail")
    assert text.keeps(b"test FAILED") and not text.keeps(b"ok")
    assert text.spans("FAIL then fail") == [(0, 4), (10, 14)]
    literal = LineFilter("[ERROR]")  # not a character class: plain text
    assert literal.keeps(b"x [ERROR] y") and not literal.keeps(b"E")
    regex = LineFilter("/FA[I]L|ERR(OR)?/")
    assert regex.is_regex and regex.keeps(b"an ERROR") and not regex.keeps(b"fail")
    assert regex.spans("é FAIL ERROR") == [(2, 6), (7, 12)]  # characters, not bytes
    with pytest.raises(Exception, match="invalid filter regex"):
        LineFilter("/(?=x)/")  # RE2: lookahead is refused with one line


def test_marks_show_the_match_itself_and_the_filter_wins_over_a_monitor() -> None:
    fail = monitor_pattern("FAIL")
    assert fail is not None
    spans = marks("x FAIL test_cart", [fail], LineFilter("cart"))
    assert cut_by_marks("x FAIL test_cart", spans) == [
        ("x ", None),
        ("FAIL", "monitor"),
        (" test_", None),
        ("cart", "match"),
    ]


def styled(app, y: int) -> list[tuple[str, object]]:
    return [(seg.text, seg.style) for seg in view(app).render_line(y)]


async def test_filter_by_regex_marks_matches_and_esc_clears_it(tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"ok 1\nERROR disk full\nok 2\nFAIL cart\nok 3\n")
    async with dashboard([room]) as (app, pilot):
        await pilot.press("slash")
        await pilot.press(*"/ERROR|FAIL/")
        await pilot.press("enter")
        await settle(pilot)
        assert view(app).visible_text() == ["ERROR disk full", "FAIL cart"]
        title = str(view(app).border_title)
        assert "filter regex /ERROR|FAIL/: 2" in title
        segments = styled(app, 0)
        plain = next(s for t, s in segments if t.startswith(" disk"))
        marked = next(s for t, s in segments if t == "ERROR")
        assert marked != plain  # the match itself is marked, the rest of the line is not
        await pilot.press("escape")
        await settle(pilot)
        assert view(app).line_filter is None
        assert len(view(app).visible_text()) == 5
        # A regex RE2 refuses: one line, and the filter stays as it was.
        await pilot.press("slash", *"/(?<=x)y/", "enter")
        await settle(pilot)
        assert any("invalid filter regex" in n for n in notifications(app))
        assert view(app).line_filter is None


async def test_monitor_patterns_are_marked_in_the_rooms_lines(tmp_path: Path) -> None:
    import time

    from ackdeck.tui.scenes import full_scene

    scene = full_scene(tmp_path, time.time())  # its `tests` process monitors /FAIL/
    room = tmp_path / "ci.txt"
    room.write_bytes(b"all good\nFAIL test_cart_total\n")
    app = make_app(quiet_config([room], home=scene.home), clock=scene.clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert any(p.text == "FAIL" for p in view(app).monitors)
        segments = styled(app, 1)
        fail = next(s for t, s in segments if t == "FAIL")
        rest = next(s for t, s in segments if t.startswith(" test_cart"))
        assert fail != rest


async def test_the_title_says_following_while_the_panel_follows_the_tail(tmp_path: Path) -> None:
    room = make_room(tmp_path / "inbox.txt", 400)
    async with dashboard([room]) as (app, pilot):
        view(app).focus()
        assert "following" not in str(view(app).border_title)
        await pilot.press("G")
        await settle(pilot)
        assert "following" in str(view(app).border_title)
        await pilot.press("k")
        await settle(pilot)
        assert "following" not in str(view(app).border_title)


async def test_the_tables_count_and_the_panels_title_agree_while_lines_arrive(
    tmp_path: Path,
) -> None:
    room = make_room(tmp_path / "inbox.txt", 48)
    async with dashboard([room]) as (app, pilot):
        with room.open("ab") as f:
            f.write(b"line 48\n")
        # The panel picks up the new line before any rescan of the counters.
        app.main.files_changed()
        await settle(pilot)
        title = str(view(app).border_title)
        cell = rooms_table(app)._rows[0][RoomsTable.column_index("pending")]
        assert view(app).count == 49
        assert "49 lines" in title
        assert cell.plain == "49"
        await feed_change(pilot)  # then the rescan: still the same number
        cell = rooms_table(app)._rows[0][RoomsTable.column_index("pending")]
        assert cell.plain == "49" and "49 lines" in str(view(app).border_title)


# ----- 6. the default configuration ---------------------------------------------------------
def test_the_default_config_is_xdg_then_dot_config(tmp_path: Path) -> None:
    xdg, home = tmp_path / "xdg", tmp_path / "home"
    env = {"XDG_CONFIG_HOME": str(xdg), "HOME": str(home)}
    assert default_config_path(env) is None
    (home / ".config/ackdeck").mkdir(parents=True)
    (home / ".config/ackdeck/config.toml").write_text('session = "me"\n')
    assert default_config_path(env) == home / ".config/ackdeck/config.toml"
    (xdg / "ackdeck").mkdir(parents=True)
    (xdg / "ackdeck/config.toml").write_text('session = "xdg"\n')
    assert default_config_path(env) == xdg / "ackdeck/config.toml"
    # A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    assert default_config_path({"XDG_CONFIG_HOME": "rel", "HOME": str(home)}) == (
        home / ".config/ackdeck/config.toml"
    )


def test_room_dirs_list_regular_visible_files(tmp_path: Path) -> None:
    d = tmp_path / "rooms"
    d.mkdir()
    for name in ("b.txt", "a.txt", ".hidden", ".a.txt.ackdeck-tmp-1"):
        (d / name).write_text("x\n")
    (d / "sub").mkdir()
    (d / "link.txt").symlink_to(d / "a.txt")
    assert rooms_in([d, tmp_path / "missing"]) == [d / "a.txt", d / "b.txt"]
    cfg = tmp_path / "config.toml"
    cfg.write_text('room_dirs = ["rooms"]\nrooms = ["rooms/a.txt"]\n')
    config = load_config(cfg)
    assert config.room_dirs == [d]
    assert config.room_paths() == [d / "a.txt", d / "b.txt"]  # de-duplicated


def test_with_theme_sets_one_line_and_keeps_the_rest() -> None:
    assert with_theme("", "nord") == 'theme = "nord"\n'
    text = '# mine\nsession = "me"\ntheme = "old"  # picked\n'
    assert with_theme(text, "nord") == '# mine\nsession = "me"\ntheme = "nord"\n'
    assert with_theme('session = "me"\n[extra]\nx = 1\n', "a") == (
        'session = "me"\ntheme = "a"\n[extra]\nx = 1\n'
    )


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(XDG_CONFIG_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"))
    return env


def test_a_bad_default_config_is_one_clear_line(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    cfg = tmp_path / "xdg/ackdeck/config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("session = 3\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ackdeck.core.cli", "tui"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(cfg) in lines[0] and "session" in lines[0], proc.stderr


async def test_the_palettes_theme_is_remembered_in_the_config(tmp_path: Path) -> None:
    cfg = tmp_path / "xdg/ackdeck/config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('# my dashboard\nsession = "owner"\n')
    room = make_room(tmp_path / "inbox.txt", 3)
    app = make_app(quiet_config([room]), clock=fixed_clock, settings=cfg)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.theme = "nord"  # what the palette's "Change theme" does
        await settle(pilot)
    assert cfg.read_text() == '# my dashboard\nsession = "owner"\ntheme = "nord"\n'
    again = make_app(
        quiet_config([room], theme=load_config(cfg).theme), clock=fixed_clock, settings=cfg
    )
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.theme == "nord"


def test_remember_theme_refuses_a_config_it_cannot_edit_plainly(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('theme = """\nmulti"""\n')
    before = cfg.read_text()
    with pytest.raises(Exception, match="not changed"):
        remember_theme(cfg, "nord")
    assert cfg.read_text() == before
    link = tmp_path / "link.toml"
    real = tmp_path / "dotfiles.toml"
    real.write_text('session = "me"\n')
    link.symlink_to(real)
    remember_theme(link, "nord")
    assert link.is_symlink() and real.read_text() == 'session = "me"\ntheme = "nord"\n'


def test_rooms_dir_option_reaches_the_config(tmp_path: Path, monkeypatch) -> None:
    import argparse

    from ackdeck.tui.entry import dashboard_config

    d = tmp_path / "rooms"
    d.mkdir()
    make_room(d / "x.txt", 1)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    args = argparse.Namespace(
        config=None, tui_home=None, home=None, rooms=[], room_dirs=[str(d)], session=None
    )
    config = dashboard_config(args)
    assert isinstance(config, DashConfig)
    assert config.room_paths() == [d / "x.txt"]
