"""A Claude Code team mailbox's reference (`claude-team://TEAM/AGENT`; see
`core.service.roomref`): imported only for that scheme.

The mailbox is a file Claude Code replaces whole (rename) on every write, so arrivals are
noticed through its directory (`watch_dirs`), as a file room's are. Its lines, for display, are
its entries rendered one per line (`core.rooms.claude_team.room.entry_line`), control messages as
events; they are loaded whole (a mailbox is small: Claude Code prunes delivered entries).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.claude_team.room import SCHEME, ClaudeMailboxRoom, entry_line
from ackdeck.core.service.lines import HeldLines, equal_prefix
from ackdeck.core.service.roomref import RoomRef

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from ackdeck.core.rooms.room_backend import RoomBackend

    Clock = Callable[[], float]
    Home = str | os.PathLike[str] | None
    Cancelled = Callable[[], bool]

# What Claude Code accepts as a team or agent name once spelled on disk (locations.claude_name).
_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")


def is_claude_team(spec: object) -> bool:
    return isinstance(spec, str) and spec.startswith(SCHEME)


class ClaudeTeamRoomRef(RoomRef):
    def __init__(self, team: str, agent: str, env: Mapping[str, str] | None = None) -> None:
        self.team, self.agent = team, agent
        self.teams = locations.claude_teams_dir(os.environ if env is None else env)
        self.inbox = locations.claude_inbox(self.teams, team, agent)
        self.display = f"{SCHEME}{team}/{agent}"
        self.name = f"{team}/{agent}"

    @classmethod
    def parse(cls, spec: str, env: Mapping[str, str] | None = None) -> ClaudeTeamRoomRef:
        parts = spec[len(SCHEME) :].split("/")
        if len(parts) != 2 or not all(_NAME.fullmatch(p) for p in parts):
            raise InvalidInput(
                f"invalid room {spec[:200]!r}: use {SCHEME}TEAM/AGENT, each 1-128 of "
                "A-Z a-z 0-9 _ - (as Claude Code spells them under its teams directory)"
            )
        return cls(parts[0], parts[1], env)

    def open(
        self, *, clock: Clock = time.time, door: str = "api", home: Home = None
    ) -> RoomBackend:
        return ClaudeMailboxRoom(self.teams, self.team, self.agent, clock=clock)

    def lines(self) -> MailboxLines:
        return MailboxLines(ClaudeMailboxRoom(self.teams, self.team, self.agent))

    def watch_dirs(self) -> list[Path]:
        return [self.inbox.parent]

    def watches(self, path: str) -> bool:
        return Path(path) == self.inbox

    def identity(self) -> tuple[int, int, int | None] | None:
        return None  # replaced on every write: its inode tells nothing

    def modified(self) -> float | None:
        try:
            return os.stat(self.inbox).st_mtime
        except FileNotFoundError:
            return None


class MailboxLines(HeldLines):
    """A mailbox's entries as the lines panel pages them (core.service.lines.LineSource). The
    file is replaced whole on each write, so a catch-up that finds the held lines no longer the
    first ones asks for a fresh view, as a file room's does after an ack."""

    def __init__(self, room: ClaudeMailboxRoom) -> None:
        super().__init__(room.close)
        self.room = room

    def _load(self) -> list[bytes]:
        # What waits for the agent, as the room's `pending` counts it (the Pending cell shows
        # this panel's count): a read entry is never delivered again (Claude Code drops it at
        # its next delivery), like an acked line. `team show` lists every entry.
        return [entry_line(e) for e in self.room.entries() if not e.read]

    def first_page(self, cancelled: Cancelled | None = None) -> bool:
        self.lines.extend(self._load()[len(self.lines) :])
        return True

    def next_page(self, cancelled: Cancelled | None = None) -> bool:
        return self.first_page()

    def load_all(self) -> None:
        self.first_page()

    def catch_up(self) -> bool:
        now = self._load()
        if now[: len(self.lines)] != self.lines:
            return False
        self.lines.extend(now[len(self.lines) :])
        return True

    def same_prefix(self, lines: Sequence[bytes], start: int | str, upto: int) -> int:
        return equal_prefix(lines, self.lines[:upto]) if start == 0 else 0
