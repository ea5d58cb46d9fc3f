"""The main screen: agents, rooms, the selected room's lines, processes and wake records.

Agents come first: highlighting one narrows the rooms, processes and wakes to it (its rooms,
the runs it started, the wakes for it); enter opens its timeline.

Owner actions run in thread workers that call core as the owner session (the same functions the
CLI and the MCP server use) and report back with `ActionFinished`.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import DataTable, Footer
from textual.worker import Worker, WorkerState

from ackdeck.core.base.text import counted, safe
from ackdeck.core.errors import AckdeckError, InvalidInput
from ackdeck.core.service import rooms as room_service
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.trace import looks_like_offset

from ..highlight import FILTER_SYNTAX, monitor_patterns
from ..host import HEADER_ICON, Host, host_of
from ..lineindex import LineSource, display_name
from ..messages import ActionFinished, AgentsListed, ReadCommitted, SnapshotRead, TraceReady
from ..state import RoomRow, Snapshot
from ..turns import Turn, Turns
from ..widgets.header import DeckHeader
from ..widgets.line_view import LineView
from ..widgets.tables import (
    ALL_AGENTS,
    AgentsTable,
    FleetAgentsTable,
    FleetProcsTable,
    FleetWakesTable,
    ProcsTable,
    RoomsTable,
    WakesTable,
    pending_cell,
    split_fleet_key,
)
from .modals import AckAllScreen, ConfirmScreen, PromptScreen, TextScreen

if TYPE_CHECKING:
    from ackdeck.core.service.roomref import RoomRef


def read_message(session: str, name: str, taken: int, total: int, seen: int) -> str:
    """What the owner is told after `r`: how much of the room the receipt covers, and why
    not all of it."""
    if taken == total:
        return f"{session} read {counted(taken, 'line')} of {name}; press a to ack them"
    rest = total - taken
    why = f"the {rest:,} below were not on screen"
    if taken < min(seen, total):
        why = f"{why} (the room changed after it was shown: look again, then r)"
    return f"{session} read {taken:,} of {total:,} lines of {name}: {why}; a acks the {taken:,}"


class MainScreen(Screen[None]):
    # Below 150 columns the processes and wakes tables go under the lines (side by side);
    # below 100 they stack. See app.tcss.
    HORIZONTAL_BREAKPOINTS = [(0, "-stacked"), (100, "-narrow"), (150, "-wide")]
    # Under 30 rows the panels around the lines shrink (see app.tcss).
    VERTICAL_BREAKPOINTS = [(0, "-short"), (30, "-tall")]
    APP_KEYS = frozenset({"main.quit", "main.help"})  # the app's keys, repeated for the footer
    # The rooms have the keys (r, a, A, p, t); the agents above them are one shift+tab away.
    AUTO_FOCUS = "#rooms"
    # While the dashboard watches, the agents are looked at this often (their states and ages
    # move with the clock, and hooks write where no room or run changes) and listed again
    # only if a presence log changed or AGENTS_AGE_S passed; and never more often than
    # AGENTS_MIN_S, however fast the scans come (300 agents cost a listing ~0.2 s of CPU).
    AGENTS_EVERY_S = 5.0
    AGENTS_AGE_S = 30.0
    AGENTS_MIN_S = 2.0

    BINDINGS = [
        # The app's own keys, first here: the footer lists the screen's keys before the app's
        # and cuts what does not fit, and at 80 columns quitting and help must still show.
        Binding("q", "app.quit", "Quit", id="main.quit", tooltip="Leave the dashboard"),
        Binding(
            "question_mark", "app.help", "Help", id="main.help", tooltip="Show every key binding"
        ),
        Binding(
            "r",
            "read",
            "Read",
            id="room.read",
            tooltip="Read the selected room as the owner (records a receipt)",
        ),
        Binding(
            "a",
            "ack",
            "Ack",
            id="room.ack",
            tooltip="Ack exactly what the owner read; later lines are preserved",
        ),
        Binding(
            "A",
            "ack_all",
            "Ack all",
            id="room.ack_all",
            tooltip="Ack every complete line of the room (asks first)",
        ),
        Binding(
            "p", "push", "Push", id="room.push", tooltip="Append one line to the selected room"
        ),
        Binding(
            "t",
            "trace",
            "Trace",
            id="room.trace",
            tooltip="A line's journey: pushed, each read (who, door, when), acked",
        ),
        Binding(
            "Q",
            "queue",
            "Queue",
            show=False,  # in the help and the palette: the footer is full at 80 columns
            id="room.queue",
            tooltip="A queue room's claims: unclaimed, claimed by whom, expired, dead; release",
        ),
        Binding(
            "slash",
            "filter",
            "Filter",
            id="lines.filter",
            tooltip="Show only lines containing some text, or matching /regex/ (RE2)",
        ),
        Binding(
            "escape",
            "clear_filter",
            "Clear filter",
            show=False,
            id="lines.clear_filter",
            tooltip="Show every line again (Esc first restores a maximized panel)",
        ),
        Binding(
            "m",
            "toggle_maximize",
            "Maximize",
            id="panel.maximize",
            tooltip="Maximize the focused panel, or restore it (Esc restores too)",
        ),
        Binding(
            "o",
            "output",
            "Output",
            id="proc.output",
            tooltip="Open the selected process's output (read as the owner)",
        ),
        Binding(
            "x",
            "dismiss_wake",
            "Dismiss",
            id="wake.dismiss",
            tooltip="Dismiss the selected wake record (asks first)",
        ),
        Binding(
            "tab",
            "app.focus_next",
            "Next panel",
            show=False,
            id="focus.next",
            tooltip="Move focus to the next panel",
        ),
        Binding(
            "shift+tab",
            "app.focus_previous",
            "Prev panel",
            show=False,
            id="focus.previous",
            tooltip="Move focus to the previous panel",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.snapshot: Snapshot | None = None
        self._rows_by_key: dict[str, RoomRow] = {}  # the snapshot's rooms by key
        self.selected_room: str | None = None
        self._ready = False
        self._turns = Turns()  # owner actions run in the order their keys were pressed
        self.agents: Any = None  # ackdeck.core.service.agents.Agents, once listed
        self.selected_agent: str | None = None  # None: every agent, nothing narrowed
        self._agent_rooms: set[str] | None = None  # the narrowed agent's rooms (absolute)
        self._agent_problems: set[str] = set()  # the listing's problems already told
        self._agents_at = float("-inf")  # when the agents were last listed (monotonic)
        self._agents_sig: object = None  # the presence logs then (logs_signature)
        self._agents_pending = False  # a listing is already due (_agents_soon)
        # The fleet (docs/how-to/fleet.md), resolved at compose: its settings, or the one line
        # saying why they could not be read; the link and publisher, made by the first listing.
        self._fleet: Any = None
        self._fleet_error: str | None = None
        self._fleet_lock = threading.Lock()  # a worker replaced mid-call may still be in it
        self._fleet_link: Any = None
        self._publisher: Any = None
        # Every other host's runs and wake records, from the agents' read of the fleet
        # (RemoteRun, RemoteWake): the Processes and Wakes panels show them after this host's.
        self._remote_runs: list[Any] = []
        self._remote_wakes: list[Any] = []

    @property
    def dash(self) -> Host:
        return host_of(self)

    def compose(self) -> ComposeResult:
        yield DeckHeader(show_clock=self.dash.config.show_clock, icon=HEADER_ICON)
        try:
            self._fleet = self.dash.config.fleet_settings()
        except AckdeckError as exc:
            self._fleet_error = f"fleet: {exc}"
        agents = (AgentsTable if self._fleet is None else FleetAgentsTable)(id="agents")
        agents.set_border_title("Agents")
        yield agents
        rooms = RoomsTable(id="rooms")
        rooms.set_border_title("Rooms")
        yield rooms
        with Horizontal(id="lower"):
            lines = LineView(id="lines", empty_text="no room selected")
            lines.set_border_title("Lines")
            yield lines
            with Vertical(id="side"):
                fleet = self._fleet is not None
                procs = (FleetProcsTable if fleet else ProcsTable)(id="procs")
                procs.set_border_title("Processes")
                yield procs
                wakes = (FleetWakesTable if fleet else WakesTable)(id="wakes")
                wakes.set_border_title("Wakes")
                yield wakes
        yield Footer(show_command_palette=False)

    # ----- rendering a snapshot -------------------------------------------------------------
    def on_mount(self) -> None:
        self._ready = True
        if self._fleet_error is not None:
            self.post_message(ActionFinished(self._fleet_error, "error", "agents"))
        self.query_one(RoomsTable).clock = self.dash.clock
        if self.dash.config.watch:
            self.set_interval(self.AGENTS_EVERY_S, self._agents_tick)
        if self.snapshot is not None:
            self.apply_snapshot(self.snapshot)
        elif self.dash.rooms:
            # Start indexing the first room now rather than after the first scan: counting a
            # flooded room's lines for its status takes longer than painting its first page.
            # The rooms are listed now too (their names are known before any count), each
            # "counting…", the first one highlighted: the lines panel then never shows a room
            # the table does not name (it said "scanning…" beside a full lines panel), and
            # the keys act on the room the owner sees highlighted. (After the first layout:
            # rows given to a table with no width yet take their natural widths, and the
            # horizontal scrollbar that brings stays after they are fitted.)
            self.call_after_refresh(self._list_rooms_uncounted)

    def _list_rooms_uncounted(self) -> None:
        """The rooms before their first count, the first one's lines loading."""
        if not self.live or self.snapshot is not None:
            return
        rooms = self.query_one(RoomsTable)
        if rooms.size.width <= 0:
            self.call_after_refresh(self._list_rooms_uncounted)  # not laid out yet
            return
        rooms.show_rooms(self._labels(), {}, self.dash.clock(), self.dash.rates)
        self._select_room(rooms.selected_key)

    @property
    def live(self) -> bool:
        # Mounted and not closing. While the app shuts down, a screen's children are removed
        # after its message loop stops and before it unmounts; a watcher or scan message that
        # arrives in between would find no widgets to update.
        return self._ready and self.is_running

    @property
    def closed(self) -> bool:
        """Mounted once and closing now: nothing more to show."""
        return self._ready and not self.is_running

    def apply_snapshot(
        self,
        snap: Snapshot,
        changed: set[str] | None = None,
        rows: dict[str, RoomRow] | None = None,
    ) -> None:
        """Show `snap`; `changed`: the rooms whose rows changed since the last one (None: any),
        so a refresh costs what changed, not the number of rooms; `rows`: `snap.rooms` by key
        (the app keeps it)."""
        self.snapshot = snap
        self._rows_by_key = rows if rows is not None else {r.key: r for r in snap.rooms}
        if not self.live:
            return  # on_mount applies it (or the screen is closing)
        now = snap.taken_at
        rooms = self.query_one(RoomsTable)
        labels = self._labels()
        if labels is not self.dash.labels:
            changed = None  # narrowed to an agent: its rooms only, placed again
        rooms.show_rooms(labels, self._rows_by_key, now, self.dash.rates, changed)
        self._show_runs_and_wakes(snap)
        self._agents_soon()
        self.query_one(LineView).set_monitors(monitor_patterns(snap.runs))
        if self.selected_room is None or self.selected_room not in labels:
            self._select_room(rooms.selected_key)
        self._update_lines_header()
        self.sub_title = "  ".join(snap.errors)

    def _show_runs_and_wakes(self, snap: Snapshot) -> None:
        """The Processes and Wakes panels: this host's runs and wakes (from the scan), then,
        with a fleet, every other host's (from the agents' read of it); narrowed to the
        highlighted agent: a local agent's rows, or `SESSION@HOST`'s rows on HOST."""
        now = snap.taken_at
        runs, wakes = snap.runs, snap.wakes
        remote_runs, remote_wakes = self._remote_runs, self._remote_wakes
        if self.selected_agent is not None:
            session, host = self.selected_agent, None
            row = None if self.agents is None else self.agents.find(session)
            if self._fleet is not None and row is not None and row.host != self._fleet.host:
                host, session = row.host, session.removesuffix(f"@{row.host}")
            if host is None:  # this host's agent: a namesake on another host is another one
                runs = [r for r in runs if r.session == session]
                wakes = [w for w in wakes if w.session == session]
                remote_runs = remote_wakes = []
            else:
                runs = wakes = []
                remote_runs = [r for r in remote_runs if (r.host, r.session) == (host, session)]
                remote_wakes = [w for w in remote_wakes if (w.host, w.session) == (host, session)]
        # Every name's current run, narrowed or not: a wake about an earlier run says so.
        current = {r.name: r.run_id for r in snap.runs}
        procs, wake_table = self.query_one(ProcsTable), self.query_one(WakesTable)
        if isinstance(procs, FleetProcsTable) and isinstance(wake_table, FleetWakesTable):
            me = self._fleet.host
            procs.set_rows(procs.fleet_rows(me, runs, remote_runs, now))
            wake_table.set_rows(wake_table.fleet_rows(me, wakes, remote_wakes, now, current))
            return
        procs.set_rows(ProcsTable.rows_for(runs, now))
        wake_table.set_rows(WakesTable.rows_for(wakes, now, current))

    def _shown_count(self) -> tuple[str, Any] | None:
        """The selected room's line count as the lines panel has it: the table shows the
        same number, so the two never disagree while lines arrive (the scan lags), nor
        before the first count (the panel pages the first room before the scan answers)."""
        view = self.query_one(LineView)
        if view.index is None or view.key is None or view.key != self.selected_room:
            return None
        row = self._room_row()
        if row is None:
            # Not counted yet: the lines panel's read is the one count known (an error row
            # or an absent room, once counted, keeps the scan's own text).
            return None if view.error is not None else (view.key, pending_cell(view.count))
        if row.status is None or not row.status.exists:
            return None
        return view.key, pending_cell(view.count)

    @property
    def ages_due(self) -> float:
        """When the rooms table's next time-driven text changes (infinity: never, or no
        table yet)."""
        if not self.live or self.snapshot is None:
            return float("inf")
        return self.query_one(RoomsTable).due

    def refresh_ages(self, now: float) -> None:
        """Ages, overdue marks and arrival sparklines move with the clock: refresh the cells
        whose text changed (the table knows when the next one is due), nothing else."""
        if not self.live or self.snapshot is None:
            return
        rooms = self.query_one(RoomsTable)
        if now < rooms.due:
            return
        rooms.show_rooms(self._labels(), self._rows_by_key, now, self.dash.rates, set())
        self._update_lines_header()  # the selected room's Pending is the panel's count

    def files_changed(self) -> None:
        if self.live:
            self.query_one(LineView).sync()

    def _select_room(self, key: str | None) -> None:
        self.selected_room = key
        view = self.query_one(LineView)
        # The room pages its lines, whatever its backend (RoomRef.lines).
        view.show_file(key, None if key is None else self.deck().parse(key))
        self._update_lines_header()

    def _room_row(self) -> Any:
        if self.selected_room is None:
            return None
        return self._rows_by_key.get(self.selected_room)

    def _room_label(self) -> str | None:
        """The selected room's label for the lines panel's title: the scan's, or before
        the first count the table's, once the panel shows the room's lines."""
        row = self._room_row()
        if row is not None:
            return str(row.label)
        view = self.query_one(LineView)
        if view.index is None or view.key != self.selected_room or self.selected_room is None:
            return None
        return self.dash.labels.get(self.selected_room)

    def _update_lines_header(self) -> None:
        view = self.query_one(LineView)
        row = self._room_row()
        owner = self.dash.config.session
        in_flight = 0
        if row is not None and row.status is not None and owner in row.status.sessions:
            in_flight = row.status.sessions[owner].in_flight
        view.in_flight = in_flight
        # Everything in the title: toasts pop up over the bottom right, where a subtitle is,
        # and stacked they reach the title's right half: the count comes before the label.
        parts = ["Lines"]
        if (label := self._room_label()) is not None:
            parts += [counted(view.count, "line"), escape(label)]  # the title is markup
        if view.line_filter is not None:
            parts.append(escape(f"filter {view.line_filter.describe()}: {view.row_count:,}"))
        if view.following:
            parts.append("following")
        if in_flight:
            parts.append(f"{owner} read {in_flight:,} (▌), not acked")
        view.set_border_title(" · ".join(parts))
        view.set_border_subtitle("")
        if (shown := self._shown_count()) is not None:
            self.query_one(RoomsTable).set_cell(shown[0], "pending", shown[1])

    def select_room(self, key: str) -> None:
        """Move the rooms cursor to `key` (the palette's room commands)."""
        self.query_one(RoomsTable).select_key(key)
        self._select_room(key)

    def run_action_now(self, action: str) -> None:
        getattr(self, f"action_{action}")()

    def dismiss_wake(self, session: str, name: str) -> None:
        self.confirm_dismiss(session, name)

    @on(DataTable.RowHighlighted, "#rooms")
    def _room_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # The row under the cursor now, not the event's: rebuilding the table (a resize, a
        # room appearing) passes through other rows on its way back to the chosen one, and
        # those events arrive after it is back: the lines panel must not flip through them.
        key = self.query_one(RoomsTable).selected_key
        if key != self.selected_room:
            self._select_room(key)

    def on_line_view_changed(self) -> None:
        self._update_lines_header()
        if self.snapshot is None:
            self.dash.first_scan()

    # ----- agents -------------------------------------------------------------------------------
    def _labels(self) -> dict[str, str]:
        """The rooms to show: every room, or the narrowed agent's (in the same order)."""
        labels = self.dash.labels
        if self._agent_rooms is None:
            return labels
        return {k: v for k, v in labels.items() if os.path.abspath(k) in self._agent_rooms}

    def _agents_soon(self) -> None:
        """List the agents now, or once AGENTS_MIN_S after the last listing (one call for
        any number of scans in between)."""
        wait = self._agents_at + self.AGENTS_MIN_S - time.monotonic()
        if wait <= 0:
            self._agents_at = time.monotonic()  # here, not in the worker: the next call knows
            self._list_agents()
        elif not self._agents_pending:
            self._agents_pending = True
            self.set_timer(wait, self._agents_deferred)

    def _agents_deferred(self) -> None:
        self._agents_pending = False
        self._agents_at = time.monotonic()
        self._list_agents()

    def _agents_tick(self) -> None:
        """The clock's part: list again if a presence log changed (a stat of each: cheap) or
        the ages on screen are AGENTS_AGE_S old."""
        home = self.dash.config.home
        if home is None:
            return
        from ackdeck.core.service.agents import logs_signature

        sig = logs_signature(home, claude=bool(self.dash.config.claude_teams))
        if sig != self._agents_sig or time.monotonic() - self._agents_at >= self.AGENTS_AGE_S:
            self._agents_soon()

    # Not exclusive: a listing is never cancelled half-way (a cancelled worker fails whoever
    # waits for it); _agents_soon keeps them at most one per AGENTS_MIN_S, and AgentsListed
    # replaces an older one still queued.
    @work(thread=True, group="agents")
    def _list_agents(self) -> None:
        """List the agents (reads presence logs and the agents' rooms: off the UI thread)."""
        from ackdeck.core.service.agents import list_agents

        home = self.dash.config.home
        if home is None:
            self.post_message(AgentsListed(None))  # no home, no agents: the panel says so
            return
        from ackdeck.core.service.agents import logs_signature

        self._agents_sig = logs_signature(home, claude=bool(self.dash.config.claude_teams))
        try:
            listed = list_agents(
                home, clock=self.dash.clock, claude_teams=bool(self.dash.config.claude_teams)
            )
        except (AckdeckError, OSError) as exc:
            self.post_message(ActionFinished(str(exc), "error", "agents"))
            return
        if self._fleet is None:
            self.post_message(AgentsListed(listed))
            return
        with self._fleet_lock:
            self.post_message(self._fleet_agents(home, listed))

    def _fleet_agents(self, home: Any, listed: Any) -> AgentsListed:
        """Publish this home when due (every TTL/3), then every host's agents, runs and wake
        records: one read of the fleet for the three panels."""
        from pathlib import Path

        from ackdeck.core.service.fleet.hosts import FleetLink, Publisher, fleet_agents
        from ackdeck.core.service.fleet.rows import remote_runs, remote_wakes

        if self._fleet_link is None:
            self._fleet_link = FleetLink(self._fleet)
            # What a publisher says (an outage once, its end, another home publishing under
            # this host id, a session's wakes held up) is a notification, as on a terminal.
            self._publisher = Publisher(self._fleet_link, Path(home), say=self._fleet_said)
        if self._publisher.due():
            self._publisher.tick(have={"agents": listed.to_json()["agents"]})
        agents, note, rows = fleet_agents(self._fleet_link, listed, clock=self.dash.clock)
        live = {h.host: h.live for h in note.hosts}
        runs = remote_runs(rows.get("runs", []), live)
        return AgentsListed(agents, note, runs, remote_wakes(rows.get("wakes", []), live))

    def _fleet_said(self, line: str) -> None:
        """A publisher's line (from its worker thread): a notification."""
        warning = line.startswith("warning: ") or "unreachable" in line
        self.post_message(
            ActionFinished(line.removeprefix("warning: "), "warning" if warning else "information")
        )

    def on_unmount(self) -> None:
        if self._fleet_link is not None:
            self._fleet_link.close()

    def on_agents_listed(self, message: AgentsListed) -> None:
        if not self.live:
            return
        self.agents = message.agents
        table = self.query_one(AgentsTable)
        listed = [] if self.agents is None else self.agents.agents
        now = self.dash.clock() if self.agents is None else self.agents.checked_at
        table.set_rows(type(table).rows_for(listed, now))
        title = AgentsTable.title_for(listed)
        if message.fleet is not None and not message.fleet.reachable:
            title += " · fleet unreachable: this host only"
        elif message.fleet is not None and message.fleet.dropped:
            # A host whose snapshot cannot be shown (core/service/fleet_model.read_host) is
            # left out; `ackdeck fleet hosts` names it and says why.
            title += f" · {len(message.fleet.dropped)} fleet host(s) left out: see fleet hosts"
        table.set_border_title(title)
        self._say_new_problems([] if self.agents is None else self.agents.problems)
        if (message.runs, message.wakes) != (self._remote_runs, self._remote_wakes):
            self._remote_runs, self._remote_wakes = message.runs, message.wakes
            if self.snapshot is not None:
                self._show_runs_and_wakes(self.snapshot)
        self._narrow_to(table.selected_key)

    def _say_new_problems(self, problems: list[str]) -> None:
        """A source of agents that could not be read (a damaged Claude Code registry file):
        one notice per file, once, never a failure of the panel."""
        new = [p for p in problems if p not in self._agent_problems]
        self._agent_problems = set(problems)
        for problem in new[:3]:
            self.notify(safe(problem), title="Agents", severity="warning")
        if len(new) > 3:
            self.notify(f"{len(new) - 3} more: see `ackdeck agents`", severity="warning")

    @on(DataTable.RowHighlighted, "#agents")
    def _agent_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._narrow_to(self.query_one(AgentsTable).selected_key)

    def _narrow_to(self, key: str | None) -> None:
        """Show the rooms, runs and wakes of the agent `key` (None or the all row: all)."""
        agent = None if key in (None, ALL_AGENTS) else key
        row = None if agent is None or self.agents is None else self.agents.find(agent)
        rooms = None if row is None else {os.path.abspath(r) for r in row.rooms}
        if agent == self.selected_agent and rooms == self._agent_rooms:
            return
        self.selected_agent, self._agent_rooms = agent, rooms
        suffix = "" if agent is None else f" · {escape(agent)}'s"
        self.query_one(RoomsTable).set_border_title(f"Rooms{suffix}")
        self.query_one(ProcsTable).set_border_title(f"Processes{suffix}")
        self.query_one(WakesTable).set_border_title(f"Wakes{suffix}")
        if self.snapshot is not None:
            self.apply_snapshot(self.snapshot, None, self._rows_by_key)

    @on(DataTable.RowSelected, "#agents")
    def _agent_chosen(self, event: DataTable.RowSelected) -> None:
        key = self.query_one(AgentsTable).selected_key
        home = self.dash.config.home
        if key in (None, ALL_AGENTS) or home is None:
            return
        title = f"{key}: its last events, newest first"
        self.app.push_screen(TextScreen(title, self._timeline(home, key)))

    def _timeline(self, home: Any, session: str) -> str:
        from ackdeck.core.service.agents import timeline, timeline_line

        row = None if self.agents is None else self.agents.find(session)
        head = []
        if row is not None:
            head = [
                f"{row.state} — {row.evidence}",
                f"client {row.client or '-'} {row.version or ''}  host {row.host or '-'}",
                f"stalled after {row.stall_after:.0f}s ({row.stall_basis})",
                "",
            ]
        if row is not None and self._fleet is not None and row.host != self._fleet.host:
            where = f"its events are on host {row.host}: `ackdeck agents` there has its timeline"
            return "\n".join([*head, where])
        events = timeline(home, session)
        lines = [timeline_line(e) for e in events] or ["no events recorded"]
        return "\n".join(head + lines)

    # ----- owner actions ----------------------------------------------------------------------
    def deck(self) -> Deck:
        """The service, for the owner's actions (the read log names this door `dashboard`)."""
        config = self.dash.config
        return Deck(config.home, config.session, door="dashboard")

    def _room_or_warn(self) -> RoomRef | None:
        if self.selected_room is None:
            self.notify("select a room first", severity="warning")
            return None
        return self.deck().parse(self.selected_room)

    def action_read(self) -> None:
        # What the owner saw is taken now, when the key is pressed, on the UI thread.
        if (path := self._room_or_warn()) is not None:
            view = self.query_one(LineView)
            shown = (view.index, view.seen) if view.key == self.selected_room else (None, 0)
            self._in_turn(self._owner_read, path, *shown)

    def action_ack(self) -> None:
        if (path := self._room_or_warn()) is not None:
            self._in_turn(self._owner_ack, path)

    def action_ack_all(self) -> None:
        # The dialog shows a snapshot: the owner reads the room first (a receipt), and yes
        # acks exactly that receipt; lines arriving while the dialog is open stay.
        if (path := self._room_or_warn()) is not None:
            self._in_turn(self._read_for_ack_all, path)

    def _read_for_ack_all(self, room: RoomRef) -> None:
        # The receipt is stored only once the dialog's number reached the screen (core
        # commits after `deliver` returns); the dialog's ack waits for that commit.
        committed = threading.Event()
        # Bound to this dialog: if the session reads again meanwhile (`r` just after `A`, the
        # owner's shell), the receipt is no longer the dialog's snapshot and core refuses the
        # dialog's ack instead of removing lines the dialog never counted.
        reader = f"dashboard-ack-all:{os.getpid()}:{secrets.token_hex(8)}"

        def deliver(res: room_service.Lines) -> None:
            shown = SnapshotRead(room, len(res.lines), committed, reader)
            if not self.post_message(shown):
                raise AckdeckError("the dashboard closed before the snapshot was shown")

        try:
            self.deck().read(room, deliver=deliver, reader=reader)
        except AckdeckError as exc:
            self.post_message(ActionFinished(str(exc), "error", "ack all: read failed"))
        else:
            self.post_message(ReadCommitted())
        finally:
            committed.set()

    def on_snapshot_read(self, message: SnapshotRead) -> None:
        room, shown = message.room, message.lines
        row = self._room_row()
        label = row.label if row is not None else room.name
        session = self.dash.config.session
        self.query_one(LineView).sync()
        self.dash.request_scan()
        if shown == 0:
            self.notify(f"{label} has no complete line to ack", title="ack all", markup=False)
            return

        def answered(res: room_service.Acked | None) -> None:
            if res is None:
                # The dialog's receipt is bound to the dialog, so `a` cannot use it.
                self.notify(
                    "ack all cancelled; nothing was removed (r, then a, acks what you read)"
                )
            else:
                self.notify(
                    f"acked {counted(res.acked, 'line')} of {label} (all that was shown), "
                    f"preserved {counted(res.preserved, 'line')} that arrived meanwhile",
                    title="ack all",
                    markup=False,
                )
            self.dash.request_scan()
            self.query_one(LineView).sync()

        self.app.push_screen(  # AckAllScreen answers with the ack's result (see modals.py)
            AckAllScreen(
                room,
                label,
                session,
                shown,
                committed=message.committed,
                reader=message.reader,
                needle=self.query_one(LineView).needle,
            ),
            answered,  # type: ignore[arg-type]
        )

    def action_queue(self) -> None:
        """The selected queue room's claims, on their own screen (tui/screens/queue.py)."""
        if self.selected_room is None:
            self.notify("select a queue room first", severity="warning")
            return
        from .queue import QueueScreen

        self.app.push_screen(QueueScreen(self.selected_room))

    def action_tasks(self) -> None:
        """Claude Code's task lists, on their own screen (tui/screens/tasks.py)."""
        from .tasks import TasksScreen

        self.app.push_screen(TasksScreen())

    def action_messages(self) -> None:
        """Claude Code's messages between agents, on their own screen
        (tui/screens/messages.py)."""
        from .messages import MessagesScreen

        self.app.push_screen(MessagesScreen())

    def action_handover(self) -> None:
        """`h` on the Agents panel: ask which session takes over the highlighted agent's
        unacked lines, then hand them over (core/service/handover.py, as `ackdeck handover`)."""
        source = self.query_one(AgentsTable).selected_key
        if source in (None, ALL_AGENTS):
            self.notify("highlight an agent first", severity="warning")
            return
        assert source is not None
        row = None if self.agents is None else self.agents.find(source)
        if row is not None and self._fleet is not None and row.host != self._fleet.host:
            # Its rooms and journal are on its host (read-only here, as its runs and wakes):
            # say where to run it rather than ask for a target the hand-over then refuses.
            name = source.removesuffix(f"@{row.host}")
            there = f"ackdeck handover --from {name} --to SESSION"
            self._elsewhere(f"agent {name}", row.host, there)
            return

        def submitted(text: str | None) -> None:
            if text and text.strip():
                self._in_turn(self._handover, source, text.strip())

        self.app.push_screen(
            PromptScreen(
                f"Hand the lines {source} has not acked over to session",
                placeholder="the session that takes them (as `ackdeck agents` names it)",
            ),
            submitted,
        )

    def _handover(self, source: str, target: str) -> None:
        try:
            done = self.deck().handover(source, target)
        except (AckdeckError, OSError) as exc:
            self.post_message(ActionFinished(str(exc), "error", "hand-over failed"))
            return
        text = "\n".join([*done.notes, done.summary])
        severity = "warning" if done.both else "information"
        self.post_message(ActionFinished(text, severity, "hand-over"))

    def action_push(self) -> None:
        path = self._room_or_warn()
        if path is None:
            return
        row = self._room_row()
        label = row.label if row is not None else path.name

        def submitted(text: str | None) -> None:
            if text:
                self._in_turn(self._owner_push, path, text)

        self.app.push_screen(
            PromptScreen(f"Push a line into {label}", placeholder="one line of text"), submitted
        )

    def action_trace(self) -> None:
        path = self._room_or_warn()
        if path is None:
            return
        row = self._room_row()
        label = row.label if row is not None else path.name

        def submitted(text: str | None) -> None:
            if text:
                self._in_turn(self._trace, path, label, text)

        self.app.push_screen(
            PromptScreen(
                f"Trace a line of {label}",
                placeholder="its offset (as push --json printed it) or text it holds",
            ),
            submitted,
        )

    def _trace(self, room: RoomRef, label: str, wanted: str) -> None:
        try:
            if looks_like_offset(wanted):
                found = self.deck().trace(room, offset=wanted)
            else:
                found = self.deck().trace(room, match=wanted)
        except AckdeckError as exc:
            self.post_message(ActionFinished(str(exc), "error", "trace failed"))
            return
        self.post_message(TraceReady(label, found))

    def on_trace_ready(self, message: TraceReady) -> None:
        found = message.found
        if not found.lines:
            self.notify(
                f"no line of {message.label} holds that text now", title="trace", markup=False
            )
            return
        head = (
            f"{found.matched} lines match; the newest {len(found.lines)}:"
            if found.matched > len(found.lines)
            else ""
        )
        body = [head] if head else []
        for line in found.lines:
            body.extend(line.report())
        self.app.push_screen(TextScreen(f"Journey in {message.label}", "\n".join(body)))

    def action_filter(self) -> None:
        view = self.query_one(LineView)

        def submitted(text: str | None) -> None:
            if text is not None:
                try:
                    view.set_filter(text)
                except InvalidInput as exc:
                    self.notify(str(exc), title="filter", severity="error", markup=False)
                self._update_lines_header()

        self.app.push_screen(
            PromptScreen(f"Filter lines: {FILTER_SYNTAX}", value=view.needle),
            submitted,
        )

    def action_clear_filter(self) -> None:
        view = self.query_one(LineView)
        if view.line_filter is None:
            return
        view.set_filter("")
        self._update_lines_header()

    def action_toggle_maximize(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif self.focused is not None:
            self.maximize(self.focused)

    def action_output(self) -> None:
        key = self.query_one(ProcsTable).selected_key
        if key is None:
            self.notify("no process selected", severity="warning")
            return
        host, name = split_fleet_key(key)
        if host is not None:
            self.output_elsewhere(host, name)
            return
        self.dash.open_output(name)

    def action_dismiss_wake(self) -> None:
        key = self.query_one(WakesTable).selected_key
        if key is None:
            self.notify("no wake record selected", severity="warning")
            return
        host, key = split_fleet_key(key)
        session, _, name = key.partition("/")
        if host is not None:
            self.dismiss_elsewhere(host, session, name)
            return
        self.confirm_dismiss(session, name)

    # Another host's row is read-only here (its files are on that host): the key, or the
    # command palette, says which host and what to run there.
    def output_elsewhere(self, host: str, name: str) -> None:
        self._elsewhere(f"process {name}", host, f"ackdeck output {name}")

    def dismiss_elsewhere(self, host: str, session: str, name: str) -> None:
        what = f"the wake record of {session} for {name}"
        self._elsewhere(what, host, f"ackdeck wakes dismiss {name} --session {session}")

    @property
    def remote_rows(self) -> tuple[list[Any], list[Any]]:
        """Every other host's runs and wake records (RemoteRun, RemoteWake), as the Processes
        and Wakes panels list them."""
        return self._remote_runs, self._remote_wakes

    def _elsewhere(self, what: str, host: str, there: str) -> None:
        self.notify(
            f"{what} lives on host {host}: nothing done here (on {host}: {there})",
            title=f"on {host}",
            severity="warning",
            markup=False,
        )

    def confirm_dismiss(self, session: str, name: str) -> None:
        """Dismissing drops the record's pending lines unseen: ask first, as ack all does."""
        pending = 0
        if self.snapshot is not None:
            for w in self.snapshot.wakes:
                if (w.session, w.name) == (session, name):
                    pending = w.pending

        def answered(yes: bool | None) -> None:
            if yes:
                self._in_turn(self._dismiss_wake, session, name)
            else:
                self.notify("dismiss cancelled; the wake record is kept")

        self.app.push_screen(
            ConfirmScreen(
                f"Dismiss the wake of {session} for {name}?",
                f"Its {counted(pending, 'pending item')} will not be delivered to {session}. "
                "The process and its output are not touched.",
                yes="Dismiss",
            ),
            answered,
        )

    # Blocking core calls: threads, results by message only; one at a time, in key order.
    def _in_turn(self, job: Callable[..., None], *args: Any) -> None:
        """Run `job(*args)` in a thread once every action pressed before it has finished."""
        self._owner_action(self._turns.take(), job, args)

    @work(thread=True, group="owner-action", exit_on_error=False)
    def _owner_action(self, turn: Turn, job: Callable[..., None], args: tuple[Any, ...]) -> None:
        turn.run(job, *args)

    def _owner_read(self, path: RoomRef, index: LineSource | None, seen: int) -> None:
        """A person's read is what was put in front of their eyes: the receipt covers the
        prefix of the room that has been on screen (`seen` lines of the panel's `index`), cut
        further to the lines the room still holds unchanged. `a` then acks exactly those."""
        session = self.dash.config.session

        def deliver(res: room_service.Lines) -> int:
            total = len(res.lines)
            taken = 0 if index is None else index.same_prefix(res.lines, res.start, seen)
            # The receipt is stored only after the owner was shown the result (core commits
            # after this returns); a closed app records nothing.
            shown = self.post_message(
                ActionFinished(read_message(session, path.name, taken, total, seen), title="read")
            )
            if not shown:
                raise AckdeckError("the dashboard closed before the read was shown")
            return taken

        try:
            self.deck().read(path, deliver=deliver)
        except AckdeckError as exc:
            self.post_message(ActionFinished(str(exc), "error", "read failed"))
            return
        self.post_message(ReadCommitted())

    def _owner_ack(self, path: RoomRef) -> None:
        try:
            res = self.deck().ack(path)
        except AckdeckError as exc:
            self.post_message(ActionFinished(str(exc), "error", "ack failed"))
            return
        if res.refusal is not None:
            self.post_message(ActionFinished(str(res.refusal), "warning", "ack refused"))
            return
        severity = "warning" if res.must_reread else "information"
        self.post_message(
            ActionFinished(
                f"{res.mode}: acked {counted(res.acked, 'line')}, preserved "
                f"{counted(res.preserved, 'line')} in {path.name}"
                + (f" ({res.message})" if res.mode != "prefix" else ""),
                severity,
                "ack",
            )
        )

    def _owner_push(self, path: RoomRef, text: str) -> None:
        try:
            self.deck().push(path, text)
        except AckdeckError as exc:
            self.post_message(ActionFinished(str(exc), "error", "push failed"))
            return
        self.post_message(ActionFinished(f"pushed 1 line into {path.name}", title="push"))

    def _dismiss_wake(self, session: str, name: str) -> None:
        from ackdeck.core.service import wakes

        home = self.dash.config.home
        if home is None:
            self.post_message(ActionFinished("no home directory", "error"))
            return
        try:
            done = wakes.dismiss(home, session, name).dismissed
        except (AckdeckError, OSError) as exc:
            self.post_message(ActionFinished(str(exc), "error", "dismiss failed"))
            return
        text = (
            f"dismissed the wake of {session} for {name}"
            if done
            else (f"no wake of {session} for {name} to dismiss")
        )
        self.post_message(ActionFinished(text, title="dismiss"))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Core reports what it expects as AckdeckError (a toast from the action itself);
        # anything else ended the worker silently: say so, and show the room as it is now.
        if event.worker.group == "owner-action" and event.state == WorkerState.ERROR:
            self.post_message(
                ActionFinished(f"{event.worker.error!r}", "error", "the action failed")
            )

    def on_read_committed(self, message: ReadCommitted) -> None:
        self.dash.request_scan()
        self.query_one(LineView).sync()

    def on_action_finished(self, message: ActionFinished) -> None:
        # Messages carry file names and core's errors (paths): plain text, never markup or
        # control characters.
        self.notify(
            display_name(message.text),
            title=message.title,
            severity=message.severity,  # type: ignore[arg-type]
            markup=False,
        )
        # The watcher will also notice, but refresh now so the counters match the notification.
        self.dash.request_scan()
        self.query_one(LineView).sync()
