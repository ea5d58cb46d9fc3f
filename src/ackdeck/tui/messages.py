"""Messages that carry results from worker threads (and the watcher) to the UI thread.

Named in the past tense. High-rate ones override `can_replace` so a flood of file events or index
progress collapses into the newest message instead of queueing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message

from ackdeck.core.service.roomref import RoomRef

from .lineindex import LineSource
from .room_counts import ScanDelta


@dataclass
class FilesChanged(Message):
    """Something changed. From a watcher (`known`): what it saw is noted in the app's
    `Changes` (rooms, home) and the flags say which panels care; otherwise (a test, a caller
    that does not know) everything is looked at again."""

    known: bool = False
    rooms_or_home: bool = True
    output: bool = True  # run output may have grown (the output screen follows it)
    rewatch: bool = False  # a room's state directory appeared or went away

    def can_replace(self, message: Message) -> bool:
        # `message` is the newer one, kept when it asks for at least as much as this one.
        if not isinstance(message, FilesChanged):
            return False
        return (
            message.known <= self.known
            and message.rooms_or_home >= self.rooms_or_home
            and message.output >= self.output
            and message.rewatch >= self.rewatch
        )


@dataclass
class StateScanned(Message):
    """A look (or a part of a long first one) came back from the scanner."""

    delta: ScanDelta
    errors: list[str] = field(default_factory=list)  # about the scanner itself
    rooms: list[Path | str] | None = None  # the rooms it counted (room directories change)
    # A look at every room's fingerprint (the safety net's sweep, the first look): slow at
    # thousands of rooms, and its length says nothing about how long the next event's takes.
    swept: bool = False


@dataclass
class IndexBuilt(Message):
    """A fresh index for `key` (new room, or the file was replaced/truncated/rewritten)."""

    key: str
    index: LineSource | None
    count: int
    error: str | None = None


@dataclass
class LinesIndexed(Message):
    """More lines of the current index are ready (growth or background indexing)."""

    key: str
    index: LineSource
    count: int
    done: bool

    def can_replace(self, message: Message) -> bool:
        return (
            isinstance(message, LinesIndexed)
            and message.index is self.index
            and message.count <= self.count
        )


@dataclass
class FilterApplied(Message):
    key: str
    index: LineSource
    needle: str
    rows: object  # array('Q') of line numbers
    upto: int  # lines examined so far


@dataclass
class ActionFinished(Message):
    """An owner action ran through core; `text` is the notification."""

    text: str
    severity: str = "information"
    title: str = ""


@dataclass
class TraceReady(Message):
    """A line's journey (`ackdeck room trace`, the same service result) is ready to show."""

    label: str
    found: Any  # ackdeck.core.service.trace.Trace


@dataclass
class SnapshotRead(Message):
    """The owner read `room` for ack all: the dialog will offer to ack exactly `lines`."""

    room: RoomRef
    lines: int
    committed: threading.Event  # set once the read's receipt is stored (or failed)
    reader: str  # the receipt is bound to this dialog: only its ack may use it


class ReadCommitted(Message):
    """The owner's read receipt is stored: line marks and counters can show it now. (The read's
    notice goes out before the receipt is stored, so a refresh it started may have missed it.)"""


@dataclass
class AgentsListed(Message):
    """The agents' presence (core/service/agents.py), listed by a worker thread."""

    agents: Any  # ackdeck.core.service.agents.Agents, or None without a home
    fleet: Any = None  # ackdeck.core.service.fleet.hosts.FleetNote with a fleet set
    # Every other host's runs and wake records, from the same read of the fleet
    # (core/service/fleet/rows.py RemoteRun, RemoteWake); empty without one or unreachable.
    runs: list[Any] = field(default_factory=list)
    wakes: list[Any] = field(default_factory=list)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, AgentsListed)  # only the newest listing matters
