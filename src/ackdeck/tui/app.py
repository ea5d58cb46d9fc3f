"""The dashboard app and its factory. Screens and widgets live in their own modules.

`make_app(config, clock=…)` is the one way to build the app: the CLI, the demo, the screenshots
and the tests all use it, so a test config can switch off every source of nondeterminism
(clock, watchers, periodic ticks, animations).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from textual import events, work
from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.timer import Timer
from textual.worker import Worker, get_current_worker

from ackdeck.core.base.text import safe
from ackdeck.core.errors import AckdeckError, InvalidInput
from ackdeck.core.service.refs import parse_room
from ackdeck.core.service.roomref import RoomRef

from .coalesce import Coalescer
from .commands import DashboardCommands
from .config import DashConfig
from .messages import FilesChanged, StateScanned
from .room_counts import RoomCounter, ScanDelta, ScanRequest, scan_at
from .scanner import Scanner, ScannerGone
from .screens.main import MainScreen
from .screens.modals import HelpScreen, PromptScreen
from .screens.output import OutputScreen
from .state import RateTracker, RoomList, RoomRow, Snapshot, room_labels
from .watch_map import Changes, WatchMap, home_event
from .watching import watch
from .widgets.line_view import LineView
from .widgets.tables import AgentsTable, KeyedTable, ProcsTable, RoomsTable, WakesTable

Clock = Callable[[], float]

# Watch settings: short debounce for interactivity; each event is routed to the room or panel it
# concerns (watch_map.py). watchfiles' Rust loop wakes Python every `step` ms to hand over what
# inotify collected, so the step is what a watch costs while nothing happens (about 50 us of a
# core per wake-up on this VM) and what it adds to an event's latency (one to two steps). Rooms
# are what an owner watches lines arrive in: 25 ms. The home (runs, wakes, run output): 250 ms.
DEBOUNCE_MS = 30
ROOMS_STEP_MS = 25
HOME_STEP_MS = 250
# Looks at the counters after file events are at least this far apart (a flood of events is
# one look per SCAN_DELAY, not one per event); an event in the room whose lines are shown
# waits this long after it, so the lines panel's read of the new lines goes first.
SCAN_DELAY = 0.05
# The safety net: every SWEEP_TICKS ticks the home while a run is running (a supervisor that
# died leaves no file event: its run becomes lost); at every ROOM_SWEEPS-th of those the home
# and every room's fingerprint (for an event inotify never delivered: a full queue, a network
# filesystem), which at 3,000 rooms is 9,000 stats.
SWEEP_TICKS = 10
ROOM_SWEEPS = 3
# Ages, overdue marks and arrival sparklines (5 s buckets) are repainted at most this often;
# an age shows at most this late (ages step in tens of seconds at the finest).
AGES_EVERY = 5.0
THEME_SETTLE_S = 1.0  # a theme shown this long in the palette's list is the one picked


def recount_wait(cpu: float, since: float, *, lines_first: bool) -> float:
    """Seconds to wait, after a file event, before the counters look again. `cpu`: the CPU
    time of the last look (not a sweep); `since`: seconds since it ended; `lines_first`: the
    event is about the room whose lines are shown.

    Looks are spaced by SCAN_DELAY, or twice the last one's CPU time when that is longer (a
    flooded room counted in full: counting then takes at most about a third of a core, and
    new lines stay snappy), capped at a second. The spacing runs from the end of the last
    look, not from the event: a push after a quiet moment is counted at once, while a flood
    of events still makes one look per spacing. (A delay after every event cost each push
    SCAN_DELAY, half of the median push-to-row latency at 1,000 rooms; issue 43.) An event
    in the shown room waits the whole spacing: its lines panel reads the new lines first."""
    spacing = min(1.0, max(SCAN_DELAY, 2 * cpu))
    return spacing if lines_first else max(0.0, spacing - since)


class AckdeckApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "ackdeck"
    COMMANDS = App.COMMANDS | {DashboardCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Leave the dashboard"),
        Binding("question_mark", "help", "Help", id="app.help", tooltip="Show every key binding"),
        Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            id="app.palette",
            priority=True,
            tooltip="Commands for the rooms, processes and wakes on screen",
        ),
    ]

    def __init__(
        self,
        config: DashConfig,
        *,
        clock: Clock = time.time,
        settings: Path | None = None,
        freeze_gc: bool = False,
    ) -> None:
        super().__init__()
        self.config = config
        self._freeze_gc = freeze_gc  # see _freeze_start_up
        self.settings = settings  # where a theme picked in the palette is remembered
        self.clock = clock
        self.rates = RateTracker()
        self.title = config.title
        self.snapshot: Snapshot | None = None
        self._scans = Coalescer(self._scan)
        self._scan_soon = False
        self._last_scan_cpu = 0.0  # CPU seconds of the last look that was not a sweep
        self._look_ended = float("-inf")  # when the last look's final part was shown (monotonic)
        self._looked = False  # the first look (every room counted) has finished
        self._ticks = 0  # sweeps so far
        self._ages_timer: Timer | None = None
        self._ages_at: float | None = None  # when the armed ages timer is due
        # What the watchers saw since the last look; the rows of the last looks merged.
        self._changes = Changes()
        self._room_rows: dict[str, RoomRow] = {}
        self._home_errors: list[str] = []
        self._counter = RoomCounter()  # counting in-process (no scanner process)
        self._counted_here = True
        self._set_rooms(config.room_paths())
        # Counting a flooded room holds the interpreter for long stretches; a scanner process
        # does it without stalling the UI thread (started by the first scan).
        self._scanner: Scanner | None = None
        self._shut_down = False
        self._watch_stop: threading.Event | None = None  # the rooms' watch
        self._home_stop: threading.Event | None = None  # the home's watch
        self._watch_dirs: tuple[str, ...] | None = None
        self._follow_stop: threading.Event | None = None  # ends the rooms' follow loops
        self._main = MainScreen()
        if not config.animations:
            self.animation_level = "none"

    @property
    def main(self) -> MainScreen:
        return self._main

    def get_default_screen(self) -> MainScreen:
        return self._main

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast (any screen's or widget's notify comes here): its text may quote a
        file name or a producer's line, so control and escape characters are shown escaped."""
        super().notify(
            safe(message, keep="\t\n"),
            title=safe(title),
            severity=severity,
            timeout=timeout,
            markup=markup,
        )

    def on_key(self, event: events.Key) -> None:
        # Keys typed right after the one that opens a prompt (`p`, `h`, `/`, `t` and then the
        # text at once: a fast typist, a paste, keys a browser tab sends together) were
        # forwarded to the widget focused before the prompt, and reach the app only once the
        # prompt is up, where nothing takes them: the text was lost and the enter after it
        # submitted an empty prompt. They are the prompt's.
        if isinstance(self.screen, PromptScreen) and self.screen.take_key(event):
            event.prevent_default()
            event.stop()

    def on_mount(self) -> None:
        if self.config.theme in self.available_themes:
            self.theme = self.config.theme
        elif self.config.theme is not None:
            self.notify(
                f"unknown theme {self.config.theme!r} in the config",
                severity="warning",
                markup=False,
            )
        self._theme_ready = True
        if self.config.scan_process and (self.rooms or self.config.room_dirs):
            # Started now, so its imports overlap the app's start-up instead of delaying the
            # first count.
            try:
                self._scanner = Scanner()
            except OSError:
                self._scanner = None  # the first scan says so, and counts in-process
        if self.rooms:
            # The first room's lines paint first (MainScreen indexes it on mount); counting a
            # flooded room for the table would compete with that, so the first scan waits for
            # the first page of lines (or a short timeout).
            self.set_timer(0.5, self.first_scan)
        else:
            self.request_scan()
        if self.config.tick_seconds > 0:
            # Without watches (config `watch = false`) the sweep is all there is: every tick.
            every = SWEEP_TICKS if self.config.watch else 1
            self.set_interval(self.config.tick_seconds * every, self._sweep)

    def on_unmount(self) -> None:
        if self._theme_timer is not None:  # a theme picked just before quitting
            self._theme_timer.stop()
            self._remember_theme()
        self._shut_down = True
        self._stop_watching()
        if self._follow_stop is not None:
            self._follow_stop.set()
        if self._scanner is not None:
            self._scanner.close()
            self._scanner = None

    _theme_ready = False
    _theme_timer: Timer | None = None

    def watch_theme(self, theme: str) -> None:
        # Remembered where the config lives, so the next start opens with it. The palette's
        # theme list previews each theme it passes over: write once it rests (or at exit).
        if not self._theme_ready or self.settings is None:
            return
        if self._theme_timer is not None:
            self._theme_timer.stop()
        self._theme_timer = self.set_timer(THEME_SETTLE_S, self._remember_theme)

    def _remember_theme(self) -> None:
        self._theme_timer = None
        theme = self.theme
        if self.settings is None or theme == self.config.theme:
            return
        from .config import remember_theme

        try:
            remember_theme(self.settings, theme)
        except InvalidInput as exc:
            self.notify(str(exc), title="theme not remembered", severity="error", markup=False)
            return
        self.config = replace(self.config, theme=theme)

    # ----- the room list (room directories make it change) ----------------------------------
    def _set_rooms(self, rooms: list[Path | str]) -> None:
        """Make `rooms` the dashboard's rooms: their order and labels, the parsed rooms and
        the map from watched paths to rooms are rebuilt; rows of rooms that went are dropped
        (the scanner drops its own memory of them when it gets the new list)."""
        self.rooms = rooms
        self._order = [str(r) for r in rooms]
        self.labels = room_labels(rooms)
        # The rooms parsed once, by key (a spec that names no room shows its error row), for
        # the watch map; only followed (redis) rooms are kept parsed, for their follow loops
        # (a parsed file room is a few paths: kept for thousands of rooms, that added up).
        refs: list[tuple[str, RoomRef]] = []
        for room in rooms:
            try:
                refs.append((str(room), parse_room(room)))
            except AckdeckError:
                pass
        self._followed = [(key, ref) for key, ref in refs if ref.FOLLOWS]
        self._watch_map = WatchMap(refs, self.config.dir_paths())
        for gone in set(self._room_rows) - set(self.labels):
            del self._room_rows[gone]
            self.rates.forget(gone)

    # ----- scanning (coalesced: at most one scan running, at most one queued) ---------------
    def first_scan(self) -> None:
        if self.snapshot is None and not self._scans.busy:
            self.request_scan()

    def request_scan(self) -> None:
        """Look again at everything (after an owner action, or when nobody knows what changed):
        every room's fingerprint is checked and changed rooms are counted (room_counts.py)."""
        self._changes.note(unknown=True)
        self._scans.request()

    @property
    def scanning(self) -> bool:
        return self._scans.busy

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self._scans.worker_changed(event)

    @property
    def busy(self) -> bool:
        """True while a scan or a line index update is in flight (tests wait on this)."""
        views = [v for s in self.screen_stack for v in s.query(LineView)]
        first_scan_pending = self.snapshot is None
        return (
            first_scan_pending
            or self._scans.busy
            or self._scan_soon
            or any(v.busy for v in views)
            or any(isinstance(s, OutputScreen) and s.busy for s in self.screen_stack)
        )

    @work(thread=True, group="scan", exit_on_error=False)
    def _scan(self) -> None:
        now = self.clock()
        taken = self._changes.take()
        first = self.snapshot is None
        # Room directories are listed on every look: a file created in one is a room now.
        # (The same list is passed on as the same object: the UI compares it cheaply.)
        rooms = self.rooms
        if self.config.room_dirs:
            listed = self.config.room_paths()
            rooms = rooms if listed == rooms else listed
        req = ScanRequest(
            self.config.home,
            rooms,
            now,
            keys=taken.keys,
            sweep=taken.unknown,
            home_too=taken.home or first,
            first=self._main.selected_room,
            run_dirs=taken.run_dirs,
            wakes_too=taken.wakes,
        )
        errors: list[str] = []

        def emit(part: ScanDelta) -> None:
            self.post_message(StateScanned(part, errors, rooms, swept=req.sweep))

        if self._scanner is None and self.config.scan_process and not self._shut_down:
            try:
                self._scanner = Scanner()
            except OSError as exc:
                errors.append(f"scanner process: {exc.strerror}; counting in-process")
        try:
            scanner = self._scanner
            if scanner is not None:
                try:
                    scanner.scan(req, emit)
                    self._counted_here = False
                    return
                except ScannerGone:
                    # The scanner died (killed, out of memory): count here this time; the
                    # next scan starts a new scanner.
                    self._scanner = None
            if not self._counted_here:
                # This process's memory of the rooms is older than what the scanner process
                # reported since: start afresh (every room counted once), never from it.
                self._counter = RoomCounter()
                self._counted_here = True
            scan_at(self._counter, req, emit)
        except Exception as exc:  # noqa: BLE001 - reported on screen; the next scan retries
            self._changes.note(unknown=True)  # nothing was taken into account: next time
            emit(ScanDelta(now, errors=[f"scan failed: {exc}"]))

    def on_state_scanned(self, message: StateScanned) -> None:
        if self._main.closed:
            return  # closing: the watcher and scan threads may still post for a moment
        part = message.delta
        listed = message.rooms is not None and message.rooms is not self.rooms
        if message.rooms is not None and listed:
            self._set_rooms(message.rooms)  # a room directory gained or lost a file
        rows = self._room_rows
        for row in part.rows:
            rows[row.key] = row
            self.rates.observe(row.key, part.taken_at, row.arrived)
        old = self.snapshot
        if part.errors is not None:
            self._home_errors = part.errors
        snap = Snapshot(
            part.taken_at,
            RoomList(self._order, rows),
            part.runs if part.runs is not None else (old.runs if old else []),
            part.wakes if part.wakes is not None else (old.wakes if old else []),
            [*self._home_errors, *message.errors],
        )
        self.snapshot = snap
        if part.final:
            # (The first look counts every room, a sweep looks at every room's fingerprint:
            # their length says nothing about the next event's look. Counted, a sweep over
            # 1,000 rooms put the next push's recount off by twice its length, the dashboard's
            # worst push-to-row latency: 0.59-0.75 s against a median of 0.11 s, issue 43.)
            # The back-off is the look's CPU time in the counting process, not its wall
            # time: on a busy machine a one-room look waits for a core (the scanner's turn,
            # the reply's), and doubling that wait put off the next push's recount by twice
            # the machine's contention, however little counting it needed (issue 43).
            if self._looked and not message.swept:
                self._last_scan_cpu = part.cpu
            elif not self._looked and self._freeze_gc:
                self.call_after_refresh(_freeze_start_up)
            self._looked = True
            self._look_ended = time.monotonic()
        changed = {r.key for r in part.rows}
        full = old is None or listed  # a new room list: every row is placed again
        self._main.apply_snapshot(snap, None if full else changed, rows)
        self._arm_ages()
        if self.config.watch:
            self._ensure_watching(force=listed)
            self._ensure_following()

    def on_files_changed(self, message: FilesChanged) -> None:
        # New lines first: the line views pick up appends at once (a small pread), while the
        # counters look again once `recount_wait` says (a look that counts a flooded room
        # takes longer and would compete with them for the interpreter).
        if self._main.closed:
            return  # closing: the watcher and scan threads may still post for a moment
        if not message.known:
            self._changes.note(unknown=True)  # not from a watcher: check everything
        if message.output and isinstance(self.screen, OutputScreen):
            self.screen.files_changed()
        if not message.rooms_or_home:
            return  # run output only: no table shows it
        sync, lines_first = self._changes.take_for_lines(self._main.selected_room)
        if sync:
            self._main.files_changed()
        if message.rewatch:
            self._ensure_watching(force=True)
        if not self._scan_soon:
            since = time.monotonic() - self._look_ended
            wait = recount_wait(self._last_scan_cpu, since, lines_first=lines_first)
            if wait > 0:
                self._scan_soon = True
                self.set_timer(wait, self._delayed_scan)
            else:
                self._scans.request()  # at once (one look runs, one more may be queued)

    def _sweep(self) -> None:
        # The safety net (nothing else runs while nothing happens): the home at every sweep
        # while a run is running, and at every ROOM_SWEEPS-th the home, every room's
        # fingerprint and the lines panel.
        if self._main.closed:
            return
        self._ticks += 1
        rooms = not self.config.watch or self._ticks % ROOM_SWEEPS == 0
        # The home's own net is for runs whose supervisor died: with none running, it waits
        # for the rooms' sweep (every look costs the UI thread a few ms even when nothing is
        # new).
        runs = self.snapshot.runs if self.snapshot is not None else []
        if not rooms and not any(r.status == "running" for r in runs):
            return
        self._changes.note(home=True, unknown=rooms)
        self._scans.request()
        if rooms:
            self._main.files_changed()
            watched = self._watch_dirs
            if watched is not None and self._watch_map.parents_appeared(watched):
                self._ensure_watching(force=True)  # a room's directory was made since

    def _arm_ages(self) -> None:
        """Wake when the rooms table's next time-driven text (an age, an overdue mark, a
        sparkline) is due, not every second: an idle table of old rooms wakes for nothing."""
        if self.config.tick_seconds <= 0 or self._main.closed:
            return
        due = self._main.ages_due
        if due == self._ages_at:
            return
        if self._ages_timer is not None:
            self._ages_timer.stop()
        self._ages_at, self._ages_timer = due, None
        if due != float("inf"):
            # Each repaint redraws every visible row (DataTable's update_cell), and rooms that
            # became active together step at moments a few ms apart: the rows due within the
            # same AGES_EVERY seconds are repainted together, at a multiple of it.
            at = math.ceil(due / AGES_EVERY) * AGES_EVERY
            delay = max(self.config.tick_seconds / 10, at - self.clock())
            self._ages_timer = self.set_timer(delay, self._ages_due, name="ages")

    def _ages_due(self) -> None:
        self._ages_at, self._ages_timer = None, None
        if self._main.closed:
            return
        if self.snapshot is not None and not self._scans.busy:
            self._main.refresh_ages(self.clock())  # (else the look's snapshot arms it again)
        self._arm_ages()

    def _delayed_scan(self) -> None:
        self._scan_soon = False
        self._scans.request()

    # ----- watching ---------------------------------------------------------------------------
    def _ensure_watching(self, *, force: bool = False) -> None:
        """Watch the rooms' directories (flat) and the home (recursively, minus run output).

        Targets are computed when the watch starts and again only when a room's state
        directory appeared or went away (`force`), not on every refresh. A new watch starts
        before the old one stops, and once it is running every room it adds is counted again,
        so nothing that happened while switching is missed (the old code stopped first: a line
        appended in between went unseen until the next tick, and with no tick forever)."""
        if self._shut_down:
            return
        home = self.config.home
        if self._home_stop is None and home is not None and home.is_dir():
            self._home_stop = threading.Event()
            self._watch_home(str(home), self._home_stop)
        if self._watch_dirs is not None and not force:
            return
        flat = self._watch_map.targets()
        if flat == self._watch_dirs:
            return
        added = frozenset(flat) - frozenset(self._watch_dirs or ())
        old_stop, self._watch_stop = self._watch_stop, threading.Event()
        self._watch_dirs = flat
        if flat:
            self._watch_rooms(flat, added, self._watch_stop, old_stop)
        elif old_stop is not None:
            old_stop.set()

    def _ensure_following(self) -> None:
        if self._follow_stop is not None or self._shut_down:
            return
        self._follow_stop = threading.Event()
        for key, ref in self._followed:
            self._follow(key, ref, self._follow_stop)

    def _changed(
        self,
        keys: set[str] | frozenset[str] = frozenset(),
        *,
        home: bool = False,
        output: bool = False,
        rewatch: bool = False,
        unknown: bool = False,
    ) -> None:
        """From a watcher thread: note what changed, then wake the UI (collapsible)."""
        self._changes.note(keys, home=home, unknown=unknown)
        touched = bool(keys) or home or unknown
        self.post_message(FilesChanged(True, touched, output, rewatch))

    @work(thread=True, group="watch", exit_on_error=False)
    def _follow(self, key: str, ref: RoomRef, stop: threading.Event) -> None:
        """New entries of a followed (redis) room by its own blocking follow loop, never by
        polling. While its server is unreachable the scan shows the room's error row; the
        loop reports the change either way, and counting that room shows or clears it."""

        def arrived() -> None:
            self._changed({key})

        ref.follow(arrived, stop)

    def _stop_watching(self) -> None:
        for stop in (self._watch_stop, self._home_stop):
            if stop is not None:
                stop.set()
        self._watch_stop = self._home_stop = None
        self._watch_dirs = None

    @work(thread=True, group="watch", exit_on_error=False)
    def _watch_rooms(
        self,
        dirs: tuple[str, ...],
        added: frozenset[str],
        stop: threading.Event,
        previous: threading.Event | None,
    ) -> None:
        def ready() -> None:
            # The new watch is in place: the old one may stop, and what happened before this
            # is looked at once more (the rooms it adds are counted; every other room's
            # fingerprint is checked), so nothing that changed while switching is missed.
            if previous is not None:
                previous.set()
            wmap = self._watch_map
            self._changed({wmap.dirs[d] for d in added if d in wmap.dirs}, unknown=True)

        worker = get_current_worker()
        for changes in watch(
            dirs,
            recursive=False,
            stop=stop,
            debounce_ms=DEBOUNCE_MS,
            step_ms=ROOMS_STEP_MS,
            ready=ready,
        ):
            if stop.is_set() or worker.is_cancelled:
                return
            keys: set[str] = set()
            rewatch = False
            # The app's map as it is now: a room directory's new file becomes a room (a new
            # map) without a new watch when nothing else needs watching.
            wmap = self._watch_map
            for _change, path in changes:
                # Room directories may hold unrelated busy files: only rooms and their state.
                key, is_dir = wmap.room_of(path)
                if key is not None:
                    keys.add(key)
                    rewatch |= is_dir
            if keys:
                self._changed(keys, rewatch=rewatch)

    @work(thread=True, group="watch", exit_on_error=False)
    def _watch_home(self, home: str, stop: threading.Event) -> None:
        worker = get_current_worker()
        for changes in watch(
            (home,), recursive=True, stop=stop, debounce_ms=DEBOUNCE_MS, step_ms=HOME_STEP_MS
        ):
            if stop.is_set() or worker.is_cancelled:
                return
            kinds = [home_event(home, p) for _c, p in changes]
            run_dirs = {rdir for kind, rdir in kinds if kind == "run" and rdir is not None}
            everything = any(kind == "home" for kind, _ in kinds)
            wakes = any(kind == "wakes" for kind, _ in kinds)
            output = any(kind == "output" for kind, _ in kinds)
            if run_dirs or everything or wakes:
                self._changes.note(run_dirs=run_dirs, wakes=wakes, home=everything)
            if run_dirs or everything or wakes or output:
                self.post_message(FilesChanged(True, bool(run_dirs or everything or wakes), output))

    # ----- screens ----------------------------------------------------------------------------
    def open_output(self, name: str) -> None:
        if self.config.home is None:
            self.notify("no home directory: processes are unavailable", severity="error")
            return
        self.push_screen(OutputScreen(name))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_sections(), self.legend()))

    @staticmethod
    def legend() -> list[tuple[str, str]]:
        """Every counter column, with its short header and meaning (also the tooltips)."""
        out = []
        for title, table in (
            ("Agents", AgentsTable),
            ("Rooms", RoomsTable),
            ("Processes", ProcsTable),
            ("Wakes", WakesTable),
        ):
            for col in table.COLUMNS:
                name = col.label if col.short == col.label else f"{col.label} ({col.short})"
                out.append((f"{title} · {name}", col.tip))
        return out

    def help_sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        def rows(bindings: list[Binding]) -> list[tuple[str, str, str]]:
            out = []
            for b in bindings:
                keys = " ".join(
                    self.get_key_display(Binding(k, b.action)) for k in b.key.split(",")
                )
                out.append((keys, b.description, b.tooltip))
            return out

        def own(cls: type) -> list[Binding]:
            # The app's keys the main screen repeats for its footer are listed once, as the
            # app's.
            return [
                b
                for b in cls.__dict__.get("BINDINGS", [])
                if isinstance(b, Binding) and b.id not in MainScreen.APP_KEYS
            ]

        return [
            ("Owner actions (as session " + self.config.session + ")", rows(own(MainScreen))),
            ("Lines panel", rows(own(LineView))),
            ("Tables", rows(own(KeyedTable))),
            ("Output screen", rows(own(OutputScreen))),
            ("App", rows(own(AckdeckApp))),
        ]


def make_app(
    config: DashConfig,
    *,
    clock: Clock = time.time,
    settings: Path | None = None,
    freeze_gc: bool = False,
) -> AckdeckApp:
    """The dashboard for `config`. `clock` feeds every age and rate shown; a theme picked in
    the palette is written to the config file `settings` (None: not remembered). `freeze_gc`:
    the dashboard's own process (`ackdeck tui`) freezes its start-up objects (_freeze_start_up);
    a test running the app inside its own process leaves the process's collector alone."""
    if config.home is not None:
        config = replace(config, home=Path(os.fspath(config.home)).absolute())
    return AckdeckApp(config, clock=clock, settings=settings, freeze_gc=freeze_gc)


def _freeze_start_up() -> None:
    """Once the first look is on screen: collect, then move every object alive (Textual's, the
    table's rows and cells, the counters) out of the garbage collector's reach. They live as
    long as the dashboard, yet each full collection walked them all: at 1,000 rooms one took
    up to 150-180 ms of the UI thread in the middle of a push's repaint, the tail of the
    push-to-row latency (issue 43). Frozen objects are still freed by reference counting; only
    a cycle among them would outlive its use, and the collection just before leaves none."""
    import gc

    gc.collect()
    gc.freeze()
