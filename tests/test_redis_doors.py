"""Every door on a redis room: the MCP server (through the SDK's own stdio client), hooks and
the dashboard's room scan, next to a file room."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from ackdeck.core.service.refs import open_room
from tests.helpers.mcp import call, text_of
from tests.helpers.paths import PATHS, REPO
from tests.helpers.redis_server import RedisServer, new_room_name
from tests.helpers.wait import eventually_async

SECRET = "mcp-Pa55-w0rd"


async def test_mcp_serves_a_redis_room_next_to_a_file_room(
    home: Path, tmp_path: Path, redis_server: RedisServer
) -> None:
    name = new_room_name()
    url = redis_server.url(name)
    file_room = tmp_path / "inbox.txt"
    file_room.write_bytes(b"from a file\n")
    r = open_room(url)
    r.push("one")
    r.push("two")
    args = ["-m", "ackdeck.core.cli", "--home", str(home), "mcp", "--session", "agent"]
    args += ["--room", url, "--room", str(file_room)]
    params = StdioServerParameters(
        command=sys.executable, args=args, env={"PYTHONPATH": PATHS}, cwd=str(REPO)
    )
    async with Client(params, read_timeout_seconds=60) as client:
        first = await call(client, "room_list_new")  # the first room is the default
        assert not first.is_error, text_of(first)
        assert first.structured_content["lines"] == ["one", "two"]
        open_room(url).push("late")  # another connection appends between read and ack
        ack = await call(client, "room_ack", {"room": name})
        assert not ack.is_error, text_of(ack)
        assert (ack.structured_content["acked"], ack.structured_content["preserved"]) == (2, 1)
        pushed = await call(client, "room_push", {"room": url, "text": "by agent"})
        assert not pushed.is_error, text_of(pushed)
        assert "-" in pushed.structured_content["offset"]  # an entry ID
        status = await call(client, "room_status")
        rows = {row["room"]: row for row in status.structured_content["rooms"]}
        assert rows[name]["pending"] == 2 and rows[name]["unread"] == 2
        assert rows["inbox.txt"]["pending"] == 1
        cold = await call(client, "room_ack", {"room": name})
        assert cold.is_error and "refused" in text_of(cold)
        other = await call(client, "room_list_new", {"room": "redis://127.0.0.1:1/0/elsewhere"})
        assert other.is_error and "not configured" in text_of(other)
    assert [x for x in open_room(url).read("check").lines] == [b"late", b"by agent"]


def test_hooks_report_unread_lines_of_a_redis_room(redis_server: RedisServer) -> None:
    from ackdeck.core.hooks import bootstrap_text, prompt_text

    url = redis_server.url()
    r = open_room(url)
    r.push("needs attention")
    r.push("second")
    r.read("agent")
    r.push("third")
    text = prompt_text("agent", [url])
    assert "1 unread line " in text and "third" in text and "needs attention" not in text
    assert "(1 unread)" in bootstrap_text("agent", [url])
    assert r.status().sessions["agent"].in_flight == 2  # the hooks never read or ack


def test_dashboard_scan_shows_redis_and_file_rooms_and_marks_unreachable(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    from ackdeck.tui.state import scan_room

    url = redis_server.url()
    open_room(url).push("x")
    row = scan_room(url, "r")
    assert row.error is None and row.status is not None and row.status.pending == 1
    down = scan_room("redis://127.0.0.1:1/0/gone", "gone")
    assert down.status is None and down.error is not None and "unreachable" in down.error
    f = tmp_path / "inbox.txt"
    f.write_bytes(b"a\n")
    assert scan_room(f, "inbox.txt").status.pending == 1


async def test_dashboard_shows_redis_and_file_rooms_live_and_survives_an_outage(
    tmp_path: Path,
) -> None:
    """No periodic tick: every update of the redis row comes from its blocking reads."""
    from ackdeck.tui.app import make_app
    from ackdeck.tui.testing import fixed_clock, notifications, quiet_config, settle

    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        url = server.url(new_room_name())
        open_room(url).push("first")
        f = tmp_path / "inbox.txt"
        f.write_bytes(b"a\nb\n")
        config = quiet_config([f, url], watch=True)
        app = make_app(config, clock=fixed_clock)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)

            def row(key: str) -> object:
                snap = app.snapshot
                return next((r for r in snap.rooms if r.key == key), None) if snap else None

            def pending(key: str) -> int | None:
                r = row(key)
                return r.status.pending if r is not None and r.status is not None else None

            assert pending(str(f)) == 2 and pending(url) == 1
            open_room(url).push("second")  # another connection, as another host would
            await eventually_async(
                lambda: pending(url) == 2, what="the pushed line on screen", pilot=pilot
            )

            server.kill9()
            await eventually_async(
                lambda: row(url) is not None and "unreachable" in (row(url).error or ""),
                what="the room marked unreachable",
                pilot=pilot,
            )
            assert pending(str(f)) == 2  # the file room is unaffected
            server.start()  # same port, same append-only file
            await eventually_async(
                lambda: pending(url) == 2, what="the room back after the restart", pilot=pilot
            )

            # As the palette selects it: the table's cursor moves too. (Selecting behind the
            # table's back raced with a highlight the table's rebuild after the outage had
            # queued: it switched the lines panel back to the highlighted room.)
            app.main.select_room(url)
            await settle(pilot)
            await eventually_async(
                lambda: "2 lines" in str(app.main.query_one("#lines").border_title),
                what="the redis room's lines in the lines panel",
                pilot=pilot,
            )
            await pilot.press("r")
            await settle(pilot)
            assert any("owner read 2 lines" in n for n in notifications(app))
            open_room(url).push("late")
            await pilot.press("a")
            await settle(pilot)
            assert any("acked 2 lines, preserved 1 line " in n for n in notifications(app))
        assert open_room(url).read("check").lines == [b"late"]
    finally:
        server.stop()


async def test_lines_panel_shows_a_redis_rooms_lines_live_and_drops_what_the_owner_acked(
    redis_server: RedisServer,
) -> None:
    """The lines panel shows a redis room like a file room: entries pushed from another
    connection appear (by the room's blocking reads, no tick), the owner's read marks them in
    flight, and the owner's ack removes exactly those, keeping a line that came meanwhile."""
    from ackdeck.tui.app import make_app
    from ackdeck.tui.testing import fixed_clock, notifications, quiet_config, settle
    from ackdeck.tui.widgets.line_view import LineView

    url = redis_server.url(new_room_name())
    producer = open_room(url)
    producer.push("first")
    producer.push("second \x1b[31mred\x1b[0m")  # shown escaped, never interpreted
    app = make_app(quiet_config([url], watch=True), clock=fixed_clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        view = app.main.query_one("#lines", LineView)
        await eventually_async(
            lambda: view.visible_text() == ["first", "second \\x1b[31mred\\x1b[0m"],
            what="the room's entries in the lines panel",
            pilot=pilot,
        )
        open_room(url).push("third")  # another connection, as another host would
        await eventually_async(
            lambda: len(view.visible_text()) == 3, what="the pushed entry shown", pilot=pilot
        )
        assert view.visible_text()[2] == "third"
        await pilot.press("r")
        await settle(pilot)
        await eventually_async(
            lambda: view.in_flight == 3, what="the owner's read marked in flight", pilot=pilot
        )
        open_room(url).push("late")
        await eventually_async(
            lambda: len(view.visible_text()) == 4, what="the late entry shown", pilot=pilot
        )
        await pilot.press("a")
        await settle(pilot)
        assert any("acked 3 lines, preserved 1 line " in n for n in notifications(app))
        await eventually_async(
            lambda: view.visible_text() == ["late"], what="acked entries gone", pilot=pilot
        )
        assert "1 line" in str(view.border_title)
        # A filter runs over a redis room's lines too.
        view.set_filter("LAT")
        await settle(pilot)
        await eventually_async(
            lambda: view.visible_text() == ["late"], what="the filtered line", pilot=pilot
        )
    assert open_room(url).read("check").lines == [b"late"]


def test_hook_commands_never_carry_the_password(tmp_path: Path) -> None:
    from ackdeck.core.hook_install import hook_commands

    cmds = hook_commands(
        ["ackdeck"], "agent", [f"redis://me:{SECRET}@db.example:6380/2/inbox", tmp_path / "f.txt"]
    )
    for cmd in cmds.values():
        assert cmd is None or SECRET not in cmd
    assert "redis://me@db.example:6380/2/inbox" in (cmds["UserPromptSubmit"] or "")


def test_dashboard_config_takes_redis_urls_and_rejects_bad_ones(tmp_path: Path) -> None:
    import pytest

    from ackdeck.core.errors import InvalidInput
    from ackdeck.tui.config import load_config
    from ackdeck.tui.state import room_labels

    cfg = tmp_path / "dash.toml"
    cfg.write_text('rooms = ["inbox.txt", "redis://h:7000/1/alerts"]\n')
    rooms = load_config(cfg).room_paths()
    assert rooms == [tmp_path / "inbox.txt", "redis://h:7000/1/alerts"]
    assert room_labels(rooms) == {str(tmp_path / "inbox.txt"): "inbox.txt", rooms[1]: "alerts"}
    cfg.write_text(f'rooms = ["redis://u:{SECRET}@h/bad name"]\n')
    with pytest.raises(InvalidInput) as err:
        load_config(cfg)
    assert "\n" not in str(err.value) and SECRET not in str(err.value)


def test_channel_noticer_tells_of_a_redis_room_without_reading_it(
    home: Path, redis_server: RedisServer
) -> None:
    from ackdeck.core.service.noticer import Noticer

    name = new_room_name()
    url = redis_server.url(name)
    r = open_room(url)
    r.push("deploy failed")
    noticer = Noticer(home, "agent", [url], "channel")
    notices, state = noticer.due()
    assert len(notices) == 1 and "deploy failed" in notices[0].content
    assert notices[0].meta.get("room") == name
    noticer.commit(state)
    assert noticer.due()[0] == []  # noticed once
    assert r.status().sessions == {}  # notices never read or ack


def test_stop_hook_notices_a_redis_room_line_that_arrived_during_the_turn(
    home: Path, redis_server: RedisServer
) -> None:
    from ackdeck.core.hooks import rooms_told_marker

    url = redis_server.url()
    r = open_room(url)
    r.push("before the turn")
    rooms_told_marker(home, "agent", [url])()  # what the prompt hook showed
    r.push("during the turn")
    from ackdeck.core.service.noticer import Noticer

    notices, _ = Noticer(home, "agent", [url], "hooks", wakes=False).due()
    assert len(notices) == 1 and "during the turn" in notices[0].content


async def test_noticer_follows_a_redis_room_live_not_by_the_rescan(
    home: Path, redis_server: RedisServer, monkeypatch: object
) -> None:
    """With the periodic rescan pushed out to a day, a line pushed to a redis room still makes
    a notice: the room's blocking read pokes the loop (the old loop only rescanned)."""
    import anyio
    import pytest

    from ackdeck.core.service import noticer as noticer_mod
    from ackdeck.core.service.noticer import Noticer
    from ackdeck.core.service.notices import Notice

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(noticer_mod, "RESCAN_S", 86_400.0)
    monkeypatch.delenv(noticer_mod.RESCAN_ENV, raising=False)
    name = new_room_name()
    url = redis_server.url(name)
    producer = open_room(url)
    producer.push("one")  # waiting before the start: the first look tells of it
    got: list[Notice] = []

    async def send(notices: list[Notice]) -> bool:
        got.extend(notices)
        return True

    async def until(n: int) -> None:
        await eventually_async(lambda: len(got) >= n, what=f"{n} notifications")

    stop = anyio.Event()
    noticer = Noticer(home, "agent", [url], "channel", wakes=False)
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            await noticer.run(send, window=0.05, stop_event=stop)

        tg.start_soon(run)
        await until(1)
        open_room(url).push("two")  # another connection, as another host would
        await until(2)
        stop.set()
    assert "two" in got[1].content and got[1].meta["room"] == name
    assert producer.status().sessions == {}  # noticed, never read


async def test_a_push_to_a_redis_room_reaches_the_mcp_channel_live(
    home: Path, tmp_path: Path, redis_server: RedisServer
) -> None:
    """End to end through the SDK's own client, with the server's rescan set to a day
    (ACKDECK_NOTICE_RESCAN_S): only the live path can deliver these notices."""
    from tests.helpers.channel import ChannelListener, Recorder

    name = new_room_name()
    url = redis_server.url(name)
    inbox = tmp_path / "inbox.txt"
    inbox.touch()
    args = ["-m", "ackdeck.core.cli", "--home", str(home), "mcp", "--session", "agent"]
    args += ["--room", url, "--room", str(inbox)]
    env = {"PYTHONPATH": PATHS, "ACKDECK_NOTICE_RESCAN_S": "86400"}
    rec = Recorder()
    async with Client(
        StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(REPO)),
        read_timeout_seconds=60,
        mode="legacy",  # type: ignore[arg-type]
        extensions=[ChannelListener(rec)],
        message_handler=rec.on_message,
    ) as client:
        for i, text in enumerate(["[t1] [ci] build 4512 failed", "[t2] [ci] 4513 failed"], 1):
            open_room(url).push(text)  # another connection, as another host would
            await rec.wait_for(i)
            n = rec.channel[-1]
            assert n.meta["room"] == name and n.meta["kind"] == "room"
            assert text in n.content and "room_list_new" in n.content
        # The notices consumed nothing: the lines are there for the authoritative read.
        listed = await client.call_tool("room_list_new", {"room": name})
        assert listed.structured_content["lines"] == [
            "[t1] [ci] build 4512 failed",
            "[t2] [ci] 4513 failed",
        ]
