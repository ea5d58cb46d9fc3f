"""The dashboard app and its factory. Screens and widgets live in their own modules.

`make_app(config, clock=…)` is the one way to build the app: the CLI, the demo, the screenshots
and the tests all use it, so a test config can switch off every source of nondeterminism
(clock, watchers, periodic ticks, animations).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.timer import Timer
from textual.worker import Worker, get_current_worker

from ackdeck.core.errors import AckdeckError, InvalidInput
from ackdeck.core.service.refs import parse_room
from ackdeck.core.service.roomref import RoomRef

from .coalesce import Coalescer
from .commands import DashboardCommands
from .config import DashConfig
from .messages import FilesChanged, StateScanned
from .scanner import Scanner, ScannerGone
from .screens.main import MainScreen
from .screens.modals import HelpScreen
from .screens.output import OutputScreen
from .state import RateTracker, Snapshot, scan_at
from .widgets.line_view import LineView
from .widgets.tables import KeyedTable, ProcsTable, RoomsTable, WakesTable

Clock = Callable[[], float]

# Watch settings: short debounce for interactivity; any event just means "rescan".
DEBOUNCE_MS = 30
STEP_MS = 10
SCAN_DELAY = 0.05  # seconds between a file event and the counters' rescan
THEME_SETTLE_S = 1.0  # a theme shown this long in the palette's list is the one picked


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
        self, config: DashConfig, *, clock: Clock = time.time, settings: Path | None = None
    ) -> None:
        super().__init__()
        self.config = config
        self.settings = settings  # where a theme picked in the palette is remembered
        self.clock = clock
        self.rates = RateTracker()
        self.title = config.title
        self.rooms = config.room_paths()
        self._refs: list[RoomRef] | None = None  # the rooms parsed, for watching them
        self.snapshot: Snapshot | None = None
        self._scans = Coalescer(self._scan)
        self._scan_soon = False
        self._last_scan_seconds = 0.0
        # Counting a flooded room holds the interpreter for long stretches; a scanner process
        # does it without stalling the UI thread (started by the first scan).
        self._scanner: Scanner | None = None
        self._shut_down = False
        self._watch_stop: threading.Event | None = None
        self._watch_dirs: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        self._follow_stop: threading.Event | None = None  # ends the rooms' follow loops
        self._main = MainScreen()
        if not config.animations:
            self.animation_level = "none"

    @property
    def main(self) -> MainScreen:
        return self._main

    def get_default_screen(self) -> MainScreen:
        return self._main

    def on_mount(self) -> None:
        if self.config.theme in self.available_themes:
            self.theme = self.config.theme
        elif self.config.theme is not None:
            self.notify(f"unknown theme {self.config.theme!r} in the config", severity="warning")
        self._theme_ready = True
        if self.rooms:
            # The first room's lines paint first (MainScreen indexes it on mount); counting a
            # flooded room for the table would compete with that, so the first scan waits for
            # the first page of lines (or a short timeout).
            self.set_timer(0.5, self.first_scan)
        else:
            self.request_scan()
        if self.config.tick_seconds > 0:
            self.set_interval(self.config.tick_seconds, self._tick)

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
        self.config = self.config.model_copy(update={"theme": theme})

    # ----- scanning (coalesced: at most one scan running, at most one queued) ---------------
    def first_scan(self) -> None:
        if self.snapshot is None and not self._scans.busy:
            self.request_scan()

    def request_scan(self) -> None:
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
        started = time.perf_counter()
        now = self.clock()
        errors: list[str] = []
        # Room directories are listed on every scan: a file created in one is a room now.
        rooms = self.config.room_paths() if self.config.room_dirs else self.rooms
        if self._scanner is None and self.config.scan_process and not self._shut_down:
            try:
                self._scanner = Scanner()
            except OSError as exc:
                errors.append(f"scanner process: {exc.strerror}; counting in-process")
        try:
            scanner = self._scanner
            if scanner is not None:
                try:
                    snap = scanner.scan(self.config.home, rooms, now)
                except ScannerGone:
                    # The scanner died (killed, out of memory): count here this time; the
                    # next scan starts a new scanner.
                    self._scanner = None
                    snap = scan_at(self.config.home, rooms, now)
            else:
                snap = scan_at(self.config.home, rooms, now)
        except Exception as exc:  # noqa: BLE001 - reported on screen; the next scan retries
            snap = Snapshot(now, errors=[f"scan failed: {exc}"])
        snap.errors.extend(errors)
        self.post_message(StateScanned(snap, time.perf_counter() - started, rooms))

    def on_state_scanned(self, message: StateScanned) -> None:
        if self._main.closed:
            return  # closing: the watcher and scan threads may still post for a moment
        snap = message.snapshot
        self.snapshot = snap
        if message.rooms is not None and message.rooms != self.rooms:
            self.rooms = message.rooms  # a room directory gained or lost a file
            self._refs = None
        self._last_scan_seconds = message.seconds
        for row in snap.rooms:
            self.rates.observe(row.key, snap.taken_at, row.arrived)
        self._main.apply_snapshot(snap)
        if self.config.watch:
            self._ensure_watching()
            self._ensure_following()

    def on_files_changed(self, message: FilesChanged) -> None:
        # New lines first: the line views pick up appends at once (a small pread), while the
        # counters rescan a moment later, since counting a flooded room takes longer and would
        # compete with them for the interpreter.
        if self._main.closed:
            return  # closing: the watcher and scan threads may still post for a moment
        self._main.files_changed()
        if isinstance(self.screen, OutputScreen):
            self.screen.files_changed()
        if not self._scan_soon:
            self._scan_soon = True
            # A slow scan (a flooded room is counted in full) waits longer, so during a flood
            # counting takes at most about a third of the time and new lines stay snappy.
            delay = min(1.0, max(SCAN_DELAY, 2 * self._last_scan_seconds))
            self.set_timer(delay, self._delayed_scan)

    def _tick(self) -> None:
        # A safety net for events a watcher can miss (and ages that change with time).
        if self._main.closed:
            return
        self.request_scan()
        self._main.files_changed()

    def _delayed_scan(self) -> None:
        self._scan_soon = False
        self.request_scan()

    # ----- watching ---------------------------------------------------------------------------
    def _room_refs(self) -> list[RoomRef]:
        if self._refs is None:
            refs = []
            for room in self.rooms:
                try:
                    refs.append(parse_room(room))
                except AckdeckError:
                    pass  # the scan shows the room's error row
            self._refs = refs
        return self._refs

    def _watch_targets(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(directories watched flat, directories watched recursively) that exist now."""
        flat: set[str] = set()
        for ref in self._room_refs():
            # The directories, not the file: an ack renames a new inode over the file. A
            # followed room (redis) has none: its own follow loop reports arrivals.
            for d in ref.watch_dirs():
                if d.is_dir():
                    flat.add(str(d))
        # Room directories: a new file in one is a new room.
        flat.update(str(d) for d in self.config.dir_paths() if d.is_dir())
        deep: set[str] = set()
        home = self.config.home
        if home is not None and home.is_dir():
            deep.add(str(home))
        return tuple(sorted(flat)), tuple(sorted(deep))

    def _ensure_watching(self) -> None:
        targets = self._watch_targets()
        if targets == self._watch_dirs:
            return
        self._stop_watching()
        self._watch_dirs = targets
        stop = threading.Event()
        self._watch_stop = stop
        flat, deep = targets
        room_dirs = {str(d) for d in self.config.dir_paths()}
        if flat:
            self._watch(flat, False, stop, self._room_refs(), room_dirs)
        if deep:
            self._watch(deep, True, stop, None, set())

    def _ensure_following(self) -> None:
        if self._follow_stop is not None or self._shut_down:
            return
        self._follow_stop = threading.Event()
        for ref in self._room_refs():
            if ref.FOLLOWS:
                self._follow(ref, self._follow_stop)

    @work(thread=True, group="watch", exit_on_error=False)
    def _follow(self, ref: RoomRef, stop: threading.Event) -> None:
        """New entries of a followed (redis) room by its own blocking follow loop, never by
        polling. While its server is unreachable the scan shows the room's error row; the
        loop reports the change either way, and the rescan shows or clears it."""

        def arrived() -> None:
            self.post_message(FilesChanged())

        ref.follow(arrived, stop)

    def _stop_watching(self) -> None:
        if self._watch_stop is not None:
            self._watch_stop.set()
            self._watch_stop = None
        self._watch_dirs = None

    @work(thread=True, group="watch", exit_on_error=False)
    def _watch(
        self,
        dirs: tuple[str, ...],
        recursive: bool,
        stop: threading.Event,
        refs: list[RoomRef] | None,
        room_dirs: set[str],
    ) -> None:
        import watchfiles

        def wanted(_change: object, path: str) -> bool:
            if refs is None:
                return True
            # Room directories may hold unrelated busy files; keep rooms and their sidecars
            # (and any file of a directory of rooms: it is a room, perhaps a new one).
            return str(Path(path).parent) in room_dirs or any(ref.watches(path) for ref in refs)

        worker = get_current_worker()
        # A new watch replaces the old one whenever the targets change (a sidecar directory
        # appears with a room's first push), and nothing watches in between: a line appended
        # then would go unseen until the next change. watchfiles registers its watches before
        # its first yield (a change, or the first timeout), so that first yield also reports
        # a change: the rescan it causes sees whatever the gap let through.
        first = True
        for changes in watchfiles.watch(
            *dirs,
            watch_filter=wanted,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=stop,
            rust_timeout=500,
            yield_on_timeout=True,
            recursive=recursive,
            raise_interrupt=False,
            ignore_permission_denied=True,
        ):
            if stop.is_set() or worker.is_cancelled:
                return
            if changes or first:
                self.post_message(FilesChanged())
            first = False

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
            return [b for b in cls.__dict__.get("BINDINGS", []) if isinstance(b, Binding)]

        return [
            ("Owner actions (as session " + self.config.session + ")", rows(own(MainScreen))),
            ("Lines panel", rows(own(LineView))),
            ("Tables", rows(own(KeyedTable))),
            ("Output screen", rows(own(OutputScreen))),
            ("App", rows(own(AckdeckApp))),
        ]


def make_app(
    config: DashConfig, *, clock: Clock = time.time, settings: Path | None = None
) -> AckdeckApp:
    """The dashboard for `config`. `clock` feeds every age and rate shown; a theme picked in
    the palette is written to the config file `settings` (None: not remembered)."""
    if config.home is not None:
        config = config.model_copy(update={"home": Path(os.fspath(config.home)).absolute()})
    return AckdeckApp(config, clock=clock, settings=settings)
