"""What the dashboard watches, and which room a file event is about. No Textual, no threads.

Each panel is watched for what it shows: a room's directory (pushes; an ack renames a new inode
over the file), its sidecar (ledger) and the sidecar's receipts (reads), all flat; the home
recursively for the process and wake tables, minus run output (a run printing must not make
the dashboard recount rooms: only the output screen follows it). An event names the room it
touches, so only that room is counted again.

`Changes` collects what the watcher threads saw until the next look takes it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ackdeck.core.service.roomref import RoomRef

# Run output (core/monitors/runs.py output_path): followed by the output screen, not the tables;
# the supervisor's own log is shown nowhere.
OUTPUT_NAME = "output.log"
UNSHOWN = frozenset({"supervisor.log"})


def home_event(home: str, path: str) -> tuple[str, str | None]:
    """What an event under the home is about (core/monitors/runs.py's layout):
    ("output", run dir) for run output, ("run", run dir) for a run's state (meta, monitors),
    ("wakes", None), ("none", None) for files no panel shows (temp files before their rename,
    the supervisor's log), ("home", None) for anything else (look at the whole home)."""
    rel = os.path.relpath(path, home).split(os.sep)
    if rel[0] == "wakes":
        return "wakes", None
    if rel[0] != "procs" or len(rel) < 3:
        return "home", None
    rdir = os.path.join(home, *rel[:3])
    if len(rel) == 3:
        return "run", rdir  # a run directory appeared (a new run) or went away
    name = rel[3]
    if name == OUTPUT_NAME:
        return "output", rdir
    if name.startswith(".") or name in UNSHOWN:
        return "none", None
    return "run", rdir


class WatchMap:
    """Room file and state directories -> room key, for the rooms of one dashboard (built
    again whenever its room list changes: room directories make rooms come and go)."""

    def __init__(
        self, rooms: Sequence[tuple[str, RoomRef]], room_dirs: Iterable[os.PathLike[str]] = ()
    ) -> None:
        """`rooms`: (the dashboard's key, the parsed room) for each room; `room_dirs`:
        directories whose every (visible) file is a room, watched even while empty."""
        self.files: dict[str, str] = {}  # a room's path -> its key
        self.dirs: dict[str, str] = {}  # its sidecar and receipts directories -> its key
        self.room_dirs = frozenset(os.fspath(d) for d in room_dirs)
        self.parents: set[str] = set(self.room_dirs)
        # Rooms without state directories, by their directory: the ref says which file is its.
        self.single: dict[str, list[tuple[str, RoomRef]]] = {}
        for key, ref in rooms:
            found = ref.watch_dirs()  # (its directory, its sidecar, its receipts); redis: none
            if not found:
                continue  # a followed room: its own loop reports arrivals
            parent, *state = (str(d) for d in found)
            self.parents.add(parent)
            if not state:  # one file among others in a directory (a Claude Code mailbox)
                self.single.setdefault(parent, []).append((key, ref))
            self.files[key] = key
            self.files[ref.display] = key
            for d in state:
                self.dirs[d] = key

    def targets(self) -> tuple[str, ...]:
        """The directories to watch (flat) that exist now. Costs a stat per directory: call it
        when the watch starts or a state directory appeared, not on every refresh."""
        return tuple(sorted(d for d in (*self.parents, *self.dirs) if os.path.isdir(d)))

    def parents_appeared(self, watched: Iterable[str]) -> bool:
        """Has a directory holding rooms (or a room directory) been made since `watched`
        was? A state directory that appears is seen by the watch on its parent; a parent
        has no watched parent, so the safety-net sweep asks (a stat per parent, not per
        room)."""
        have = frozenset(watched)
        return any(p not in have and os.path.isdir(p) for p in self.parents)

    def room_of(self, path: str) -> tuple[str | None, bool]:
        """(the room `path` belongs to or None, whether it is a state directory itself: one
        that appeared or went away changes what must be watched)."""
        key = self.files.get(path)
        if key is not None:
            return key, False
        key = self.dirs.get(path)
        if key is not None:
            return key, True
        parent = os.path.dirname(path)
        for single, ref in self.single.get(parent, ()):
            if ref.watches(path):
                return single, False
        key = self.dirs.get(parent) or self.dirs.get(os.path.dirname(parent))
        if key is None and parent in self.room_dirs and not os.path.basename(path).startswith("."):
            # A file of a room directory that is no room yet: a new room. Its path is the key
            # it will have once the directory is listed again (the look that follows does).
            return path, False
        return key, False  # a ledger, receipt or replaced-inode file of the room


@dataclass(frozen=True)
class Taken:
    keys: frozenset[str]
    unknown: bool  # something changed, nobody knows what: check every room
    home: bool  # look at the whole home (reconcile, every run, the wakes)
    run_dirs: frozenset[str]  # runs whose state changed
    wakes: bool


class Changes:
    """What the watchers saw since the last look. Watcher threads `note`; two readers take
    their own copy: the scan (`take`) and the UI thread (`take_for_lines`: is the selected
    room among them, so the lines panel syncs). One shared copy would race: a scan starting
    between a note and the UI's handling of it would take the key the panel was waiting for.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._unknown = False
        self._home = False
        self._ui_keys: set[str] = set()
        self._ui_unknown = False
        self._run_dirs: set[str] = set()
        self._wakes = False

    def note(
        self,
        keys: Iterable[str] = (),
        *,
        home: bool = False,
        unknown: bool = False,
        run_dirs: Iterable[str] = (),
        wakes: bool = False,
    ) -> None:
        with self._lock:
            keys = set(keys)
            self._keys |= keys
            self._ui_keys |= keys
            self._home |= home or unknown
            self._unknown |= unknown
            self._ui_unknown |= unknown
            self._run_dirs.update(run_dirs)
            self._wakes |= wakes

    def take_for_lines(self, key: str | None) -> tuple[bool, bool]:
        """(did `key` or anything unknown change since the UI last asked, did a watcher name
        `key` itself). An unknown change (a look every room gets: a sweep, an owner action)
        makes the lines panel read again, yet is no new line of its room."""
        with self._lock:
            named = key is not None and key in self._ui_keys
            hit = self._ui_unknown or named
            self._ui_keys, self._ui_unknown = set(), False
        return hit, named

    def take(self) -> Taken:
        with self._lock:
            out = Taken(
                frozenset(self._keys),
                self._unknown,
                self._home,
                frozenset(self._run_dirs),
                self._wakes,
            )
            self._keys, self._unknown, self._home = set(), False, False
            self._run_dirs, self._wakes = set(), False
        return out
