"""The dashboard with a fleet (issue 34): its Agents panel shows every host's agents with a
Host column, publishes its own home, and says when the fleet is unreachable."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ackdeck.core.presence import log
from ackdeck.core.service.fleet import FleetLink, publish_home
from ackdeck.core.service.fleet_settings import resolve_fleet
from ackdeck.tui.app import make_app
from ackdeck.tui.screens.modals import TextScreen
from ackdeck.tui.testing import quiet_config, screen_text, settle
from ackdeck.tui.widgets.tables import AgentsTable, FleetAgentsTable
from tests.helpers.redis_server import RedisServer, free_port


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
