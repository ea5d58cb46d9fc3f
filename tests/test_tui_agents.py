"""The dashboard's Agents panel (issue 32): first on screen, narrowing the rooms, processes and
wakes to the highlighted agent, enter opening its timeline, and new presence shown."""

from __future__ import annotations

import time
from pathlib import Path

from ackdeck.core.service import presence
from ackdeck.tui.app import make_app
from ackdeck.tui.scenes import apply_rates, full_scene
from ackdeck.tui.screens.modals import TextScreen
from ackdeck.tui.testing import quiet_config, screen_text, settle
from ackdeck.tui.widgets.tables import ALL_AGENTS, AgentsTable, ProcsTable, RoomsTable, WakesTable


async def test_highlighting_an_agent_narrows_the_panels_and_enter_opens_its_timeline(
    tmp_path: Path,
) -> None:
    scene = full_scene(tmp_path, time.time())
    app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
    apply_rates(app, scene)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        await settle(pilot)
        main = app.main
        agents, rooms = main.query_one(AgentsTable), main.query_one(RoomsTable)
        # The agents are listed above the rooms; what needs the owner first.
        assert agents.region.y < rooms.region.y
        assert agents._keys == [ALL_AGENTS, "reviewer", "nightly", "agent", "old-run"]
        assert main.focused is rooms  # the keys (r, a, ...) still act on the rooms first
        snap = main.snapshot
        assert rooms.row_count == 3
        assert main.query_one(ProcsTable).row_count == len(snap.runs)
        mine = [r for r in snap.runs if r.session == "agent"]
        my_wakes = [w for w in snap.wakes if w.session == "agent"]
        assert mine and my_wakes  # all the scene's runs are `agent`'s: `nightly` has none
        # Up to the agents, down to `nightly`: its one room, none of `agent`'s runs or wakes.
        await pilot.press("shift+tab", "j", "j")
        await settle(pilot)
        assert main.selected_agent == "nightly"
        assert rooms._keys == [str(scene.rooms[0])]
        assert main.query_one(ProcsTable).row_count == 0
        assert main.query_one(WakesTable).row_count == 0
        # `agent`: every room it was given, its run and its wake.
        await pilot.press("j")
        await settle(pilot)
        assert main.selected_agent == "agent" and rooms.row_count == 3
        assert main.query_one(ProcsTable).row_count == len(mine)
        assert main.query_one(WakesTable).row_count == len(my_wakes)
        # Enter: its last events, newest first.
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TextScreen)
        text = screen_text(app)
        assert "agent: its last events, newest first" in text
        assert text.index("  prompt") < text.index("  start  detail=startup")  # newest first
        assert "UserPromptSubmit hook" in text
        await pilot.press("escape")
        await settle(pilot)
        # Back to all: nothing narrowed.
        await pilot.press("g")
        await settle(pilot)
        assert main.selected_agent is None and rooms.row_count == 3


async def test_a_new_session_appears_when_the_dashboard_looks_again(tmp_path: Path) -> None:
    scene = full_scene(tmp_path, time.time())
    app = make_app(quiet_config(scene.rooms, home=scene.home), clock=scene.clock)
    async with app.run_test(size=(120, 35)) as pilot:
        await settle(pilot)
        assert "late" not in app.main.query_one(AgentsTable)._keys
        assert scene.home is not None
        presence.record(scene.home, "late", "prompt", at=scene.now - 5)
        app.main._list_agents()
        await settle(pilot)
        assert "late" in app.main.query_one(AgentsTable)._keys
        assert "2 working" in str(app.main.query_one(AgentsTable).border_title)


async def test_evidence_from_a_hook_is_shown_as_written_never_as_markup(tmp_path: Path) -> None:
    # A Notification hook's message is the client's text: read as markup, `[/b]` stopped the
    # dashboard (a MarkupError) and `[@click=...]` or `[link=...]` became live in the table.
    home = tmp_path / "home"
    said = "needs you [/b] [@click=app.quit]here[/] [link=http:x]l[/link]"
    presence.hook_event(
        home, "agent", "notify", {"message": said, "notification_type": "permission_prompt"}
    )
    app = make_app(quiet_config(home=home))
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        assert f"permission_prompt: {said}" in screen_text(app)
    assert app.return_code in (None, 0)


def test_an_ack_no_client_record_proved_is_marked_an_estimate_in_the_agents_panel(
    tmp_path: Path,
) -> None:
    # Two agents ack the same way, one proven by its client's transcript, one not (no client
    # record: what was handed over): the Agents panel's Why and the timeline tell them apart.
    from ackdeck.core.rooms.results import Shown
    from ackdeck.core.service.agents import list_agents, timeline, timeline_line
    from ackdeck.core.service.deck import Deck

    home, room = tmp_path / "home", tmp_path / "inbox.txt"
    room.write_text("a\nb\n")
    for session, shown in (("guessed", None), ("proven", Shown(len, "test record"))):
        deck = Deck(home, session, [str(room)])
        ref = deck.rooms[0]
        assert len(deck.read(ref).lines) == 2
        assert deck.ack(ref, shown=shown).acked == 2
        deck.push(ref, "a")
        deck.push(ref, "b")
    listed = list_agents(home)
    rows = dict(AgentsTable.rows_for(listed.agents, listed.checked_at))
    why = {s: str(rows[s][-1]) for s in ("guessed", "proven")}
    assert "acked 2 lines of inbox.txt (estimate)" in why["guessed"], why
    assert "acked 2 lines of inbox.txt" in why["proven"] and "estimate" not in why["proven"], why
    (ack,) = [e for e in timeline(home, "guessed") if e["ev"] == "ack"]
    assert "proof=estimate" in timeline_line(ack)
