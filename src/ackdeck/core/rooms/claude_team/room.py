"""A Claude Code team mailbox as a room (`claude-team://TEAM/AGENT`): what the doors may do
with it, through the room interface (core/rooms/room_backend.py) where its words apply.

- **Looking is not reading.** status, tail, find and trace only read the file; nothing ackdeck
  does while showing a mailbox changes it. `read` and `ack` are refused: the mailbox is read
  by its agent, and an entry's `read` flag is the agent's (Claude Code's) to set.
- **status** counts in the room's own words, one set of numbers for the room and its agent
  (the one reading session): what waits is the entries not yet read (`read` false or
  missing), and only those: Claude Code 2.1.328 delivers only unread entries, removes each
  once delivered, and drops the read ones with it, so a read entry still in the file waits for
  nothing. So `pending`, the room's `unread` and the agent's `unread` are those entries, and
  every age is the oldest one's (`timestamp`); `pushed_total` is every entry in the file;
  nothing is ever acked by ackdeck (`acked_total` 0).
- **push** appends one entry in Claude Code's shape under Claude Code's own lock
  (core/clients/claude_code/lock.py) and replaces the file atomically (temp, fsync, rename, fsync of
  the directory), so nothing Claude Code writes meanwhile is lost.
- **mark_read** is the owner's explicit act: only the entries named (those the owner was
  shown), only if still unread, under the same lock.

A file in another shape is refused in one line (`BadMailbox`, core/clients/claude_code/mailbox.py)
and never written.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.atomic import replace, write_temp
from ackdeck.core.clients.claude_code import mailbox as mb
from ackdeck.core.clients.claude_code.lock import MailboxLock
from ackdeck.core.errors import InvalidInput, RoomUnavailable
from ackdeck.core.rooms.journey import Journey
from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.rooms.results import RoomStatus, SessionStatus

if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.line_counts import LineCounts
    from ackdeck.core.rooms.results import AckResult, ReadResult

    Clock = Callable[[], float]

SCHEME = "claude-team://"
# Who the owner's pushes come from unless a door says otherwise (never a name Claude Code
# verifies by signature: claude_mailbox.RESERVED_SENDERS).
DEFAULT_SENDER = "owner"
# A mailbox larger than this is refused rather than loaded (Claude Code keeps them small: it
# prunes delivered entries).
MAX_BYTES = 64 << 20


def spec_of(team: str, agent: str) -> str:
    return f"{SCHEME}{team}/{agent}"


def _refused(what: str) -> InvalidInput:
    return InvalidInput(
        f"a Claude Code team mailbox cannot be {what}: its agent reads it, and ackdeck only "
        "shows it (push to write to it; `ackdeck team mark-read` marks entries you saw)"
    )


def entry_line(e: mb.MailEntry) -> bytes:
    """One entry as a line the dashboard and `team show` show (text with its newlines shown
    as `\\n`; escapes are shown escaped by the doors)."""
    flag = "" if e.read else "● "
    if e.event is not None:
        mark = "⚑ WAITING " if e.event.pending else "⚑ "
        body = f"{mark}{e.event.kind}: {e.event.text}"
    else:
        body = f"{e.sender}: {e.text}"
    return f"{e.timestamp} {flag}{body}".replace("\n", "\\n").encode()


class ClaudeMailboxRoom:
    """One agent's mailbox in a Claude Code team."""

    PROVES_SHOWN = False  # never acked by ackdeck

    def __init__(
        self,
        teams: Path,
        team: str,
        agent: str,
        *,
        clock: Clock = time.time,
        sender: str = DEFAULT_SENDER,
    ) -> None:
        self.teams = teams
        self.team = team
        self.agent = agent
        self.inbox = locations.claude_inbox(teams, team, agent)
        self.spec = spec_of(team, agent)
        self._clock = clock
        self.sender = sender

    @property
    def path(self) -> Path:
        return self.inbox

    @property
    def path_text(self) -> str:
        return str(self.inbox)

    # ----- reading (never changes the file) ------------------------------------------------
    def _raw(self, path: Path | None = None) -> bytes | None:
        path = self.inbox if path is None else path
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise RoomUnavailable(f"{path}: {exc.strerror}") from None
        try:
            if os.fstat(fd).st_size > MAX_BYTES:
                raise InvalidInput(f"{path}: larger than {MAX_BYTES >> 20} MiB; {mb.EXPECTED}")
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def docs(self) -> list[dict]:
        """The entries as stored ([] when the file is not there). Raises BadMailbox."""
        raw = self._raw()
        return [] if raw is None else mb.load(raw, str(self.inbox))

    def answered(self) -> set[str]:
        """Request ids answered in any mailbox of the team (an answer goes to the asker)."""
        out: set[str] = set()
        try:
            names = os.listdir(locations.claude_inboxes_dir(self.teams, self.team))
        except OSError:
            return out
        for name in names:
            if not name.endswith(".json"):
                continue
            path = locations.claude_inboxes_dir(self.teams, self.team) / name
            try:
                raw = self._raw(path)
                out |= mb.answered_ids(mb.load(raw or b"", str(path)))
            except (InvalidInput, RoomUnavailable):
                continue  # that mailbox's own view says what is wrong with it
        return out

    def entries(self) -> list[mb.MailEntry]:
        return mb.entries_of(self.docs(), self.answered())

    def summary(self) -> mb.Summary:
        return mb.summarize(self.entries())

    def exists(self) -> bool:
        return self.inbox.is_file()

    def status(
        self, counts: LineCounts | None = None, *, entries: list[mb.MailEntry] | None = None
    ) -> RoomStatus:
        """The mailbox's counts (see the module); `entries`: as entries() just returned them
        (a caller that needs them too reads the file once)."""
        now = self._clock()
        s = mb.summarize(self.entries() if entries is None else entries)
        return RoomStatus(
            path=str(self.inbox),
            exists=self.exists(),
            pending=s.unread,
            partial_bytes=0,
            acked_total=0,
            preserved_total=0,
            pushed_total=s.total,
            epoch=0,
            last_ack_at=None,
            # The agent is the mailbox's one reader: its unread entries, as a session's.
            sessions={
                self.agent: SessionStatus(0, s.unread, None, s.oldest_unread_at),
            },
            checked_at=now,
            oldest_pending_at=s.oldest_unread_at,
            oldest_unread_at=s.oldest_unread_at,
            reader=self.agent,
        )

    def first_seen(self, start: int | str, length: int) -> float | None:
        return None  # ackdeck never reads a mailbox for its agent, so no read is dated

    def tail(self, count: int) -> list[bytes]:
        return [entry_line(e) for e in self.entries()[-count:]] if count > 0 else []

    def find(self, text: str | bytes) -> tuple[list[int | str], int]:
        needle = text.decode(errors="replace") if isinstance(text, bytes) else text
        found: list[int | str] = [e.index for e in self.entries() if needle in e.text]
        return found[-20:], len(found)

    def trace(self, offset: int | str) -> Journey:
        """An entry by its index in the file or its key (msg_id): when it was sent, whether
        its agent has read it. A mailbox keeps no read log, so no hops."""
        for e in self.entries():
            if offset in (e.index, e.key, str(e.index)):
                return Journey(e.index, True, entry_line(e), e.at, True, [])
        raise InvalidInput(f"{self.spec} holds no entry {offset!r} (an index or a msg_id)")

    def policy(self) -> RoomPolicy:
        return RoomPolicy()

    # ----- what belongs to the agent --------------------------------------------------------
    def read(self, session: str, **_kw: object) -> ReadResult:
        raise _refused("read by ackdeck")

    def ack(self, session: str, **_kw: object) -> AckResult:
        raise _refused("acked by ackdeck")

    def wait(self, session: str, timeout: float | None = None, stop: object = None) -> bool:
        raise _refused("waited on by a session")

    def wait_acked(
        self, offset: int | str, timeout: float | None = None, stop: object = None
    ) -> Journey:
        raise _refused("waited on for an ack")

    def set_policy(self, policy: RoomPolicy) -> None:
        raise InvalidInput("a Claude Code team mailbox has no ackdeck policy")

    def close(self) -> None:
        pass

    # ----- the owner's writes, under Claude Code's lock ---------------------------------------
    def _ensure_file(self) -> None:
        """Create the mailbox as Claude Code does (`[]`, exclusively) for a member of the team
        that has none yet; refuse a name the team does not have."""
        if self.inbox.exists():
            return
        if self.agent not in members_of(self.teams, self.team):
            raise InvalidInput(
                f"{self.spec}: no such mailbox, and {self.agent!r} is not a member in "
                f"{locations.claude_team_config(self.teams, self.team)}; nothing written"
            )
        self.inbox.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.inbox, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            return
        try:
            os.write(fd, b"[]")
        finally:
            os.close(fd)

    def _rewrite(self, change: Callable[[list[dict]], list[dict]]) -> None:
        """Read, change, replace: under the lock, the file checked whole before anything is
        written, the lock checked still ours just before the rename."""
        with MailboxLock(self.inbox) as lock:
            raw = self._raw()
            if raw is None:
                raise RoomUnavailable(f"{self.inbox}: removed meanwhile; nothing written")
            docs = change(mb.load(raw, str(self.inbox)))
            mode = os.stat(self.inbox).st_mode & 0o7777
            tmp = write_temp(self.inbox, [mb.dump(docs)], mode=mode)
            try:
                lock.check()
            except BaseException:
                os.unlink(tmp)
                raise
            replace(tmp, self.inbox)

    def push(self, line: str | bytes, *, summary: str | None = None) -> str:
        """Append one message from `sender`; returns its msg_id."""
        text = line.decode() if isinstance(line, bytes) else line
        entry = mb.new_entry(self.sender, text.rstrip("\n"), self._clock(), summary=summary)
        self._ensure_file()
        self._rewrite(lambda docs: [*docs, entry])
        return str(entry["msg_id"])

    def mark_read(self, keys: set[str]) -> int:
        """Mark read the still-unread entries among `keys` (entry keys the owner was shown);
        how many were marked. The caller confirmed it with the owner."""
        marked = 0

        def change(docs: list[dict]) -> list[dict]:
            nonlocal marked
            out, marked = mb.mark_read(docs, keys)
            return out

        if keys:
            self._rewrite(change)
        return marked


def members_of(teams: Path, team: str) -> list[str]:
    """The member names a team's config.json lists ([] when it cannot be read)."""
    from ackdeck.core.clients.claude_code.sessions import read_small_json

    doc = read_small_json(locations.claude_team_config(teams, team))
    members = doc.get("members") if isinstance(doc, dict) else None
    if not isinstance(members, list):
        return []
    return [m["name"] for m in members if isinstance(m, dict) and isinstance(m.get("name"), str)]
