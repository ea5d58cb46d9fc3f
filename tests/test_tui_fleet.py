"""The dashboard with a fleet (issue 34): its Agents, Processes and Wakes panels show every
host's rows with a Host column (another host's read-only, a gone host's as last known), it
publishes its own home, and says when the fleet is unreachable. Two homes with distinct host
ids publish to one real redis-server; their runs are real processes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from textual.app import App

from ackdeck.core.presence import log
from ackdeck.core.service import procs, wakes
from ackdeck.core.service.fleet import model as fleet_model
from ackdeck.core.service.fleet.hosts import FleetLink, publish_home
from ackdeck.core.service.fleet.settings import resolve_fleet
from ackdeck.tui.app import make_app
from ackdeck.tui.screens.modals import ConfirmScreen, PromptScreen, TextScreen
from ackdeck.tui.screens.output import OutputScreen
from ackdeck.tui.testing import notifications, quiet_config, screen_text, settle
from ackdeck.tui.widgets.tables import (
    AgentsTable,
    FleetAgentsTable,
    FleetProcsTable,
    FleetWakesTable,
    KeyedTable,
    ProcsTable,
    WakesTable,
)
from tests.helpers.redis_server import RedisServer, free_port
from tests.helpers.wait import eventually, eventually_async


@pytest.fixture(autouse=True)
def _no_fleet_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ACKDECK_FLEET", "ACKDECK_HOST_ID", "ACKDECK_FLEET_TTL"):
        monkeypatch.delenv(name, raising=False)


async def test_the_agents_panel_shows_every_hosts_agents_with_a_host_column(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = f"redis://127.0.0.1:{redis_server.port}/0/tui-{os.urandom(4).hex()}"
    mine, theirs = tmp_path / "alpha", tmp_path / "beta"
    now = time.time()
    log.record(mine, "agent", "prompt", at=now - 30)
    log.record(theirs, "agent", "read", at=now - 20, room="r", lines=1)  # the same name there
    log.record(theirs, "builder", "prompt", at=now - 10)
    beta = FleetLink(resolve_fleet(url, "beta", env={}, config={}))  # type: ignore[arg-type]
    try:
        publish_home(beta, theirs)
        app = make_app(quiet_config(home=mine, fleet=url, host_id="alpha"))
        async with app.run_test(size=(140, 30)) as pilot:
            await settle(pilot)
            table = app.main.query_one(AgentsTable)
            assert isinstance(table, FleetAgentsTable)
            assert sorted(table._keys[1:]) == ["agent", "agent@beta", "builder@beta"]
            assert [c.label for c in table.COLUMNS][:3] == ["Agent", "Host", "State"]
            text = screen_text(app)
            assert "agent@beta" in text and "builder@beta" in text
            # Enter on another host's agent: its events are there, not here.
            await pilot.press("shift+tab")
            keys = table._keys
            for _ in range(keys.index("agent@beta")):
                await pilot.press("j")
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, TextScreen)
            assert "its events are on host beta" in screen_text(app)
        # The dashboard published its own home: beta sees alpha's agent.
        _, pubs = beta.read()
        alpha = next(p for p in pubs if p.host == "alpha")
        assert [a["session"] for a in alpha.rows["agents"]] == ["agent"]
    finally:
        beta.close()


async def test_an_unreachable_fleet_shows_this_host_and_says_so(tmp_path: Path) -> None:
    home = tmp_path / "alpha"
    log.record(home, "agent", "prompt", at=time.time() - 30)
    url = f"redis://127.0.0.1:{free_port()}/0/gone"  # nothing listens there
    app = make_app(quiet_config(home=home, fleet=url, host_id="alpha"))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        table = app.main.query_one(AgentsTable)
        assert table._keys[1:] == ["agent"]
        assert "fleet unreachable: this host only" in str(table.border_title)


def test_a_bad_fleet_in_the_config_is_one_line_naming_it(tmp_path: Path) -> None:
    from ackdeck.tui.config import DashConfig

    with pytest.raises(ValueError, match="^fleet: invalid fleet URL"):
        DashConfig.from_table({"fleet": "http://x/y"})
    with pytest.raises(ValueError, match="^host_id: invalid host id name"):
        DashConfig.from_table({"fleet": "redis://x", "host_id": "a/b"})


async def test_another_home_under_this_host_id_is_said_in_a_notification(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = _url(redis_server)
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    log.record(mine, "agent", "prompt", at=time.time() - 5)
    other = FleetLink(resolve_fleet(url, "devbox", env={}, config={}))  # type: ignore[arg-type]
    try:
        publish_home(other, theirs)  # another home, published as devbox a moment ago
        app = make_app(quiet_config(home=mine, fleet=url, host_id="devbox"))
        async with app.run_test(size=(140, 30), notifications=True) as pilot:
            await settle(pilot)
            await eventually_async(
                lambda: any("host id devbox is published" in n for n in notifications(app)),
                what="the warning",
                pilot=pilot,
            )
            said = [n for n in notifications(app) if "host id devbox" in n]
            assert len(said) == 1 and "by another home too" in said[0]
    finally:
        other.close()


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--fleet", "http://x/y"], "ackdeck: error: --fleet: invalid fleet URL 'http://x/y'"),
        (["--fleet", "redis://x/0/y", "--host-id", "a/b"], "ackdeck: error: --host-id: invalid"),
    ],
)
@pytest.mark.parametrize("command", ["tui", "web"])
def test_the_dashboards_bad_fleet_flag_is_one_line_and_exit_1(
    tmp_path: Path, command: str, flags: list[str], says: str
) -> None:
    from tests.helpers.cli import ackdeck, here_env

    env = {**here_env(), "ACKDECK_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    done = ackdeck(env, command, *flags)
    assert done.returncode == 1
    assert done.stderr.startswith(says) and done.stderr.count("\n") == 1, done.stderr


def test_the_dashboards_fleet_flags_win_over_the_environment_and_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from ackdeck.tui.entry import dashboard_config

    config = tmp_path / "config.toml"
    config.write_text('fleet = "redis://127.0.0.1/0/fromfile"\nhost_id = "file"\n')
    monkeypatch.setenv("ACKDECK_FLEET", "redis://127.0.0.1/0/fromenv")
    monkeypatch.setenv("ACKDECK_HOST_ID", "env")

    def settings(**flags: str | None) -> tuple[str, str]:
        args = argparse.Namespace(
            config=str(config), tui_home=None, home=str(tmp_path / "home"), rooms=[],
            room_dirs=[], session=None, fleet=flags.get("fleet"), host_id=flags.get("host_id"),
        )  # fmt: skip
        got = dashboard_config(args).fleet_settings()
        assert got is not None
        return got.address.name, got.host

    assert settings() == ("fromenv", "env")
    assert settings(fleet="redis://127.0.0.1/0/fromflag") == ("fromflag", "env")
    assert settings(host_id="flag") == ("fromenv", "flag")
    monkeypatch.delenv("ACKDECK_FLEET")
    monkeypatch.delenv("ACKDECK_HOST_ID")
    assert settings() == ("fromfile", "file")
    assert settings(host_id="flag") == ("fromfile", "flag")


# ----- the Processes and Wakes panels ---------------------------------------------------------
def _woken(home: Path, name: str, session: str) -> None:
    """A monitored run of `name` that matched once and ended, and the wake it left `session`."""
    procs.start(
        home, name, ["sh", "-c", "echo FAIL one"], session=session, monitor="FAIL", cooldown_ms=0
    )

    def done() -> bool:
        ended = all(r.status != "running" for r in procs.list_runs(home, latest_only=True).runs)
        return ended and any(
            (w.session, w.name) == (session, name) and w.lines for w in wakes.list_wakes(home).wakes
        )

    eventually(done, what=f"{name} to end and wake {session}")


async def test_a_host_publishing_a_hostile_snapshot_is_left_out_of_the_dashboard_and_said(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Issue 42, class 4: a snapshot with NaN and a 50 MB string (anyone who can write to the
    fleet's Redis can publish one) took the dashboard's fleet read down. Now that host is left
    out, the Agents panel says so in its title, and every other host is shown."""
    import redis

    from ackdeck.core.base import locations

    url = f"redis://127.0.0.1:{redis_server.port}/0/tui-{os.urandom(4).hex()}"
    mine, theirs, evil = tmp_path / "alpha", tmp_path / "beta", tmp_path / "gamma"
    now = time.time()
    log.record(mine, "agent", "prompt", at=now - 30)
    log.record(theirs, "builder", "prompt", at=now - 10)
    log.record(evil, "mole", "prompt", at=now - 10)
    links = [
        FleetLink(resolve_fleet(url, host, env={}, config={}))  # type: ignore[arg-type]
        for host in ("beta", "gamma")
    ]
    try:
        publish_home(links[0], theirs)
        publish_home(links[1], evil)
        fleet = url.rsplit("/", 1)[1]
        client = redis.Redis(port=redis_server.port)
        hostile = (
            '{"v":1,"host":"gamma","clock":NaN,'
            '"agents":[{"session":"mole","state":"idle","evidence":"'
        )
        client.hset(
            locations.fleet_host_key(fleet, "gamma"),
            "payload",
            hostile.encode() + b"E" * (50 << 20) + b'"}],"runs":[],"wakes":[]}',
        )
        app = make_app(quiet_config(home=mine, fleet=url, host_id="alpha"))
        async with app.run_test(size=(140, 30)) as pilot:
            await settle(pilot)
            table = app.main.query_one(AgentsTable)
            await eventually_async(lambda: "builder@beta" in table._keys, what="beta's agent")
            assert sorted(table._keys[1:]) == ["agent", "builder@beta"]
            assert "1 fleet host(s) left out" in str(table.border_title)
            assert "EEEE" not in screen_text(app)
    finally:
        for link in links:
            link.close()


@contextmanager
def _two_hosts(
    tmp_path: Path, url: str, *, ttl: str = "30"
) -> Iterator[tuple[Path, Path, FleetLink]]:
    """alpha (the dashboard's home) and beta, each with an agent named `agent` whose run
    `build` woke it; beta also has `builder`, woken by `deploy`. beta has published; its link
    is closed when the test is done."""
    mine, theirs = tmp_path / "alpha", tmp_path / "beta"
    now = time.time()
    log.record(mine, "agent", "prompt", at=now - 30)
    log.record(theirs, "agent", "prompt", at=now - 20)
    log.record(theirs, "builder", "prompt", at=now - 10)
    _woken(mine, "build", "agent")
    _woken(theirs, "build", "agent")  # the same names on both hosts: two rows each
    _woken(theirs, "deploy", "builder")
    env = {"ACKDECK_FLEET_TTL": ttl}
    beta = FleetLink(resolve_fleet(url, "beta", env=env, config={}))  # type: ignore[arg-type]
    try:
        publish_home(beta, theirs)
        yield mine, theirs, beta
    finally:
        beta.close()


def _dashboard(mine: Path, beta: FleetLink) -> App[None]:
    """The dashboard of host alpha on `mine`, on beta's fleet."""
    return make_app(quiet_config(home=mine, fleet=beta.settings.url, host_id="alpha"))


def _cells(table: KeyedTable, key: str) -> list[str]:
    return [str(getattr(c, "plain", c)) for c in table._rows[table._keys.index(key)]]


async def _highlight(pilot: object, table: KeyedTable, key: str) -> None:
    table.focus()
    table.move_cursor(row=table._keys.index(key))
    await settle(pilot)
    assert table.selected_key == key


def _url(redis_server: RedisServer) -> str:
    return f"redis://127.0.0.1:{redis_server.port}/0/tui-{os.urandom(4).hex()}"


async def test_processes_and_wakes_show_every_hosts_rows_with_a_host_column(
    tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The dashboard publishes every TTL/3: with the default 30 s, a slow run (a loaded
    # machine) reached its second publish before the command count below, which counts a
    # listing alone. An hour's TTL keeps that publish away for the whole test.
    monkeypatch.setenv("ACKDECK_FLEET_TTL", "3600")
    with _two_hosts(tmp_path, _url(redis_server)) as (mine, theirs, beta):
        app = _dashboard(mine, beta)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            main = app.main
            ps, wk = main.query_one(ProcsTable), main.query_one(WakesTable)
            assert isinstance(ps, FleetProcsTable) and isinstance(wk, FleetWakesTable)
            assert [c.label for c in ps.COLUMNS][:3] == ["Process", "Host", "Status"]
            assert [c.label for c in wk.COLUMNS][:3] == ["Owner", "Host", "Process"]
            # This host's rows first, then beta's, keyed apart although the names are the same.
            assert ps._keys == ["build", "beta:build", "beta:deploy"]
            assert wk._keys == ["agent/build", "beta:agent/build", "beta:builder/deploy"]
            assert _cells(ps, "build")[:3] == ["build", "alpha", "exited"]
            assert _cells(ps, "beta:deploy")[:3] == ["deploy", "beta", "exited"]
            assert _cells(ps, "beta:deploy")[-1] == "builder"
            # Pending as beta counts it: its matched line and its exit notice (the notices
            # themselves are not published).
            (theirs_wake,) = wakes.list_wakes(theirs, "builder").wakes
            assert theirs_wake.pending == 2
            row = _cells(wk, "beta:builder/deploy")
            assert row[:5] == ["builder", "beta", "deploy", theirs_wake.kind, "2"]
            assert "builder" in screen_text(app) and "deploy" in screen_text(app)

            # agent@beta narrows to beta's rows of beta's agent; alpha's agent to alpha's.
            agents = main.query_one(AgentsTable)
            await _highlight(pilot, agents, "agent@beta")
            assert (ps._keys, wk._keys) == (["beta:build"], ["beta:agent/build"])
            assert "Processes · agent@beta's" in str(ps.border_title)
            await _highlight(pilot, agents, "builder@beta")
            assert (ps._keys, wk._keys) == (["beta:deploy"], ["beta:builder/deploy"])
            await _highlight(pilot, agents, "agent")
            assert (ps._keys, wk._keys) == (["build"], ["agent/build"])
            await _highlight(pilot, agents, "*")
            assert len(ps._keys) == 3

            # The three panels share the agents' one read of the fleet: a listing (its
            # publish not due yet) is the read's commands (TIME, the registry, a hash per
            # host), nothing more for the runs and wakes. Counted with no other listing in
            # between: the clock lists again once AGENTS_AGE_S passed since the last (a busy
            # CI reached it during this test: 8 commands, two listings), and one the
            # highlights above deferred may still be due.
            main.AGENTS_AGE_S = float("inf")
            await eventually_async(
                lambda: not main._agents_pending, pilot=pilot, what="the deferred listing"
            )
            await settle(pilot)
            sent = main._fleet_link.commands
            main._list_agents()
            await settle(pilot)
            assert main._fleet_link.commands - sent == 2 + 2


async def test_another_hosts_process_and_wake_are_read_only_here(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    with _two_hosts(tmp_path, _url(redis_server)) as (mine, theirs, beta):
        app = _dashboard(mine, beta)
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await settle(pilot)
            main = app.main
            ps, wk = main.query_one(ProcsTable), main.query_one(WakesTable)
            await _highlight(pilot, ps, "beta:build")
            await pilot.press("o")
            await settle(pilot)
            assert not isinstance(app.screen, OutputScreen)
            said = notifications(app)[-1]
            assert "process build lives on host beta: nothing done here" in said
            assert "ackdeck output build" in said

            await _highlight(pilot, wk, "beta:builder/deploy")
            await pilot.press("x")
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmScreen)
            said = notifications(app)[-1]
            assert "the wake record of builder for deploy lives on host beta" in said
            assert "ackdeck wakes dismiss deploy --session builder" in said
            assert [w.name for w in wakes.list_wakes(theirs, "builder").wakes] == ["deploy"]

            # This host's own row still acts: x asks to dismiss alpha's wake.
            await _highlight(pilot, wk, "agent/build")
            await pilot.press("x")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)


async def test_h_on_another_hosts_agent_says_where_to_hand_it_over(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    # Its rooms are on its host: h opened the prompt, and the hand-over then failed on a
    # session this host does not know (`agent@beta`), after the owner had typed a target.
    with _two_hosts(tmp_path, _url(redis_server)) as (mine, theirs, beta):
        app = _dashboard(mine, beta)
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await settle(pilot)
            await _highlight(pilot, app.main.query_one(AgentsTable), "builder@beta")
            await pilot.press("h")
            await settle(pilot)
            assert not isinstance(app.screen, PromptScreen)
            said = notifications(app)[-1]
            assert "agent builder lives on host beta: nothing done here" in said, said
            assert "ackdeck handover --from builder --to SESSION" in said
            # This host's own agent still asks whom to hand over to.
            await _highlight(pilot, app.main.query_one(AgentsTable), "agent")
            await pilot.press("h")
            await settle(pilot)
            assert isinstance(app.screen, PromptScreen)


async def _palette(app: object, pilot: object, query: str) -> list[str]:
    """The command palette's prompts for `query`, once its search has finished."""
    from textual.command import CommandList, CommandPalette

    await pilot.press("ctrl+p")  # type: ignore[attr-defined]
    await pilot.press(*query)  # type: ignore[attr-defined]
    listing = app.screen.query_one(CommandList)  # type: ignore[attr-defined]
    gathering = CommandPalette._GATHER_COMMANDS_GROUP
    await eventually_async(
        lambda: (
            listing.option_count > 0
            and not any(w.group == gathering and not w.is_finished for w in app.workers)
        ),  # type: ignore[attr-defined]
        what="the palette's search to finish",
        pilot=pilot,
    )
    return [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]


async def test_the_command_palette_lists_another_hosts_rows_read_only(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    with _two_hosts(tmp_path, _url(redis_server)) as (mine, theirs, beta):
        app = _dashboard(mine, beta)
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await settle(pilot)
            await eventually_async(
                lambda: len(app.main.query_one(ProcsTable)._keys) == 3,
                what="beta's rows",
                pilot=pilot,
            )
            prompts = await _palette(app, pilot, "output of deploy")
            assert prompts[0].splitlines() == [
                "Output of deploy on beta",
                "exited; read it on beta",
            ]
            await pilot.press("enter")
            await settle(pilot)
            assert not isinstance(app.screen, OutputScreen)
            said = notifications(app)[-1]
            assert "process deploy lives on host beta: nothing done here" in said
            assert "ackdeck output deploy" in said

            prompts = await _palette(app, pilot, "dismiss wake builder/deploy")
            assert prompts[0].startswith("Dismiss wake builder/deploy on beta\n"), prompts
            await pilot.press("enter")
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmScreen)
            assert "ackdeck wakes dismiss deploy --session builder" in notifications(app)[-1]
            assert [w.name for w in wakes.list_wakes(theirs, "builder").wakes] == ["deploy"]


async def test_a_gone_hosts_processes_and_wakes_show_as_last_known(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    with _two_hosts(tmp_path, _url(redis_server), ttl="1") as (mine, theirs, beta):

        def beta_gone() -> bool:
            server_now, pubs = beta.read()
            return not any(fleet_model.live(p, server_now) for p in pubs if p.host == "beta")

        eventually(beta_gone, what="beta to be past its TTL")
        app = _dashboard(mine, beta)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            ps, wk = app.main.query_one(ProcsTable), app.main.query_one(WakesTable)
            assert ps._keys == ["build", "beta:build", "beta:deploy"]
            assert _cells(ps, "build")[1] == "alpha"
            assert _cells(ps, "beta:build")[1] == "beta (last known)"
            assert _cells(wk, "beta:agent/build")[1] == "beta (last known)"


async def test_an_unreachable_fleet_shows_this_hosts_processes_and_wakes(tmp_path: Path) -> None:
    home = tmp_path / "alpha"
    _woken(home, "build", "agent")
    url = f"redis://127.0.0.1:{free_port()}/0/gone"  # nothing listens there
    app = make_app(quiet_config(home=home, fleet=url, host_id="alpha"))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        ps, wk = app.main.query_one(ProcsTable), app.main.query_one(WakesTable)
        assert isinstance(ps, FleetProcsTable)
        assert (ps._keys, wk._keys) == (["build"], ["agent/build"])
        assert _cells(ps, "build")[1] == "alpha"


async def test_the_fleets_panels_fit_80x24_and_wider_with_their_first_rows_quit_and_help(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_text("hello\n")
    with _two_hosts(tmp_path, _url(redis_server)) as (mine, theirs, beta):
        config = quiet_config([room], home=mine, fleet=beta.settings.url, host_id="alpha")
        for size in ((80, 24), (100, 30), (120, 35), (200, 50)):
            app = make_app(config)
            async with app.run_test(size=size) as pilot:
                await settle(pilot)
                text = screen_text(app)
                for table in app.main.query(KeyedTable):
                    assert table.row_count > 0, (table.id, size)
                    # Every column inside the border: nothing to scroll sideways.
                    assert table.max_scroll_x == 0, (table.id, size, text)
                    assert table.region.right <= size[0]
                # A short terminal shows the agents as their panel's title (its summary), as
                # without a fleet: every host's agents are counted in it.
                assert "Agents · 3 working" in text, size
                assert "inbox.txt" in text  # the rooms' first row
                for table in (app.main.query_one(ProcsTable), app.main.query_one(WakesTable)):
                    # Its header and first row in view.
                    assert table.scroll_y == 0 and table.scrollable_content_region.height >= 2
                if size == (80, 24):  # stacked: a row is a whole line
                    rows = [ln.split()[:3] for ln in text.splitlines()]
                    assert ["build", "alpha", "exited"] in rows, text  # the processes'
                    assert ["agent", "alpha", "build"] in rows, text  # the wakes'
                assert "q Quit" in text and "? Help" in text, size


def test_another_hosts_rows_this_version_cannot_show_are_left_out() -> None:
    from ackdeck.core.service.fleet.rows import remote_runs, remote_wakes

    run = {
        "host": "beta", "name": "build", "status": "exited", "exit_code": 1,
        "session": "agent", "monitors": [{"pattern": "FAIL", "exclude": False}], "matches": 2,
    }  # fmt: skip
    wake = {
        "host": "beta", "session": "agent", "name": "build", "kind": "match", "pending": 3,
        "delivered_total": 1, "superseded_total": 0, "status": "running",
    }  # fmt: skip
    (got,) = remote_runs([run], {"beta": True})
    assert (got.host, got.live, got.name, got.exit_code, got.matches) == (
        "beta",
        True,
        "build",
        1,
        2,
    )
    assert [m.pattern for m in got.monitors] == ["FAIL"]
    (w,) = remote_wakes([wake], {})  # a host the listing does not know of counts as gone
    assert (w.live, w.pending, w.delivered_total) == (False, 3, 1)
    bad_runs = [
        {**run, "name": "a/b"},  # not a name: it would be a row key
        {**run, "status": "\x1b[2J"},  # not a printable word: a cell shows it as it is
        {**run, "matches": -1},
        {**run, "exit_code": "1"},
        {k: v for k, v in run.items() if k != "session"},
    ]
    assert remote_runs(bad_runs, {"beta": True}) == []
    bad_wakes = [{**wake, "pending": True}, {**wake, "host": 3}, {**wake, "kind": ""}]
    assert remote_wakes(bad_wakes, {"beta": True}) == []
