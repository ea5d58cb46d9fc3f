"""A monitor that wakes a Claude Code teammate: `ackdeck run NAME --session
claude-team://TEAM/AGENT --monitor RE -- CMD` (docs/how-to/claude-teams.md).

The run's wakes are kept, gated and acked like any session's (core/monitors/wakes.py), under a
session of their own (`mailbox_session`); what delivers them is not a Stop hook but this
module: each drain's snapshot becomes ONE message in the teammate's mailbox, written under
Claude Code's lock in its entry shape, and Claude Code's idle loop hands it to the teammate.

**Exactly once.** The drain acks the snapshot only after the message is in the mailbox, so a
crash between the two (a supervisor killed -9) leaves the wake pending and the next drain
offers it again. Looking in the mailbox cannot tell whether it was written: Claude Code
*removes* an entry once it delivered it, so an entry gone may be one never written or one
already read. ackdeck keeps its own record instead (`.claude-sent.json` in the session's wake
directory), only ever touched under the mailbox's lock:

1. the new mailbox is written to a temp file named by the message's id
   (`locations.team_wake_temp`), fsynced;
2. the intent (that id, the wake items it carries) is recorded;
3. the temp file is renamed over the mailbox;
4. the items are recorded as sent and the intent cleared.

A later writer that finds an intent looks for its temp file: still there, the rename never
happened (it is removed and the items are written again); gone, the rename happened (the items
count as sent, whatever Claude Code did with the entry since). Items already sent are left out
of every later message, so none is written twice; the drain then acks them.

The message's id is derived from the items it carries (`msg_id_of`), so the same wake written
again after a crash before the intent has the same id too.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import atomic, faults, locations
from ackdeck.core.base.names import check_name
from ackdeck.core.base.statefile import load_record, store_record
from ackdeck.core.base.struct import Struct
from ackdeck.core.monitors.results import Delivery, DrainResult

if TYPE_CHECKING:
    from collections.abc import Callable

SCHEME = "claude-team://"
SESSION_PREFIX = "claude-team."
# Who the wake comes from, as the teammate sees it (`<teammate-message teammate_id="ackdeck"`):
# never a name Claude Code verifies by signature (mailbox.RESERVED_SENDERS).
SENDER = "ackdeck"
COLOR = "cyan"
KEEP_SENT = 4096  # newest item keys kept: an item is offered again only until its drain acks it
# uuid5 namespace of wake messages: the same items give the same msg_id on every host.
_NS = uuid.UUID("6f0b6a8e-5d55-4c1b-9a51-3a4bd1a7c0de")


class Target(Struct, kw_only=True):
    """Where a mailbox session's wakes go (written by `bind`)."""

    spec: str  # claude-team://TEAM/AGENT
    teams: str  # Claude Code's teams directory, as the run's caller saw it
    team: str
    agent: str


class Intent(Struct, kw_only=True):
    msg_id: str
    items: list[str]


class Sent(Struct, kw_only=True):
    """The wake items already in the mailbox (newest last), and the write in progress."""

    items: list[str] = []
    intent: Intent | None = None


# ----- names (pure) ---------------------------------------------------------------------------
def is_mailbox(spec: object) -> bool:
    return isinstance(spec, str) and spec.startswith(SCHEME)


def parse_spec(spec: str) -> tuple[str, str]:
    """(TEAM, AGENT) of `claude-team://TEAM/AGENT`; InvalidInput otherwise."""
    from ackdeck.core.errors import InvalidInput

    parts = spec[len(SCHEME) :].split("/") if is_mailbox(spec) else []
    if len(parts) != 2 or not all(p and locations.claude_name(p) == p for p in parts):
        raise InvalidInput(
            f"invalid session {spec[:200]!r}: a teammate's mailbox is {SCHEME}TEAM/AGENT, each "
            "1-128 of A-Z a-z 0-9 _ - (as Claude Code spells them under its teams directory)"
        )
    if max(len(p) for p in parts) > 128:
        raise InvalidInput(f"invalid session {spec[:200]!r}: a name is longer than 128")
    return parts[0], parts[1]


def mailbox_session(spec: str) -> str:
    """The ackdeck session that keeps the wakes for mailbox `spec`: `claude-team.TEAM.AGENT`
    (a digest when that is longer than a session name may be). TEAM and AGENT hold no dot, so
    the name is unambiguous."""
    team, agent = parse_spec(spec)
    name = f"{SESSION_PREFIX}{team}.{agent}"
    if len(name) > 128:
        name = SESSION_PREFIX + hashlib.sha256(spec.encode()).hexdigest()[:40]
    return check_name(name)


def item_keys(d: Delivery) -> list[str]:
    """What a delivery carries, one key per item: each line by its bytes in its run, the exit
    or monitor-lost notice, the count of lines the cap dropped."""
    head = f"{d.name}|{d.run_id}"
    keys = [f"{head}|line|{x.start}|{x.end}" for x in d.lines]
    if d.kind != "match":
        keys.append(f"{head}|{d.kind}")
    if d.dropped:
        keys.append(f"{head}|dropped|{d.dropped}")
    return keys


def unsent(res: DrainResult, sent: set[str]) -> DrainResult:
    """`res` without the items already in the mailbox (a delivery left with nothing goes)."""
    out = []
    for d in res.delivered:
        head = f"{d.name}|{d.run_id}"
        lines = [x for x in d.lines if f"{head}|line|{x.start}|{x.end}" not in sent]
        kind = d.kind if d.kind == "match" or f"{head}|{d.kind}" not in sent else "match"
        dropped = d.dropped if f"{head}|dropped|{d.dropped}" not in sent else 0
        if lines or kind != "match" or dropped:
            out.append(d.replace(lines=lines, kind=kind, dropped=dropped))
    return res.replace(delivered=out, superseded=res.superseded if out else 0)


def msg_id_of(session: str, keys: list[str]) -> str:
    """The id of the message carrying `keys`: the same items, the same id."""
    return str(uuid.uuid5(_NS, session + "\0\0" + "\0\0".join(sorted(keys))))


def summary_of(res: DrainResult) -> str:
    """The one-line summary Claude Code shows beside a message."""
    names = sorted({d.name for d in res.delivered})
    lines = sum(len(d.lines) for d in res.delivered)
    ended = [d for d in res.delivered if d.kind != "match"]
    what = f"{lines} matched line{'s' if lines != 1 else ''}" if lines else ""
    if ended:
        what += (", " if what else "") + ", ".join(f"{d.name} {d.kind}" for d in ended)
    return f"ackdeck wake: {', '.join(names)}: {what}"[:200]


def resolved(intent: Intent | None, temp_left: bool, in_inbox: bool) -> list[str]:
    """The items an interrupted write put in the mailbox: all of them once its rename happened
    (its temp file is gone, or its entry is there), none if the temp file is still there."""
    if intent is None:
        return []
    return list(intent.items) if (in_inbox or not temp_left) else []


def kept(items: list[str], new: list[str]) -> list[str]:
    out = [k for k in items if k not in set(new)] + new
    return out[-KEEP_SENT:]


# ----- I/O ------------------------------------------------------------------------------------
def bind(home: Path, spec: str, env: dict[str, str] | None = None) -> str:
    """Record where `spec`'s wakes go and return its session. Refused in one line when the
    team has no such member or mailbox (a typo would leave every wake waiting for no one)."""
    from ackdeck.core.errors import InvalidInput

    team, agent = parse_spec(spec)
    teams = locations.claude_teams_dir(os.environ if env is None else env)
    inbox = locations.claude_inbox(teams, team, agent)
    if not inbox.is_file() and agent not in _members(teams, team):
        raise InvalidInput(
            f"{spec}: no mailbox {inbox} and no member {agent!r} in team {team!r} "
            f"({locations.claude_team_config(teams, team)}); nothing started"
        )
    session = mailbox_session(spec)
    d = locations.wake_session_dir(home, session)
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = Target(spec=spec, teams=str(teams), team=team, agent=agent)
    store_record(locations.team_wake_target(home, session), target, fsync=True)
    return session


def _members(teams: Path, team: str) -> list[str]:
    from ackdeck.core.base.jsonfields import parse

    try:
        doc = parse(locations.claude_team_config(teams, team).read_bytes())
    except (OSError, ValueError):
        return []
    members = doc.get("members") if isinstance(doc, dict) else None
    if not isinstance(members, list):
        return []
    return [m["name"] for m in members if isinstance(m, dict) and isinstance(m.get("name"), str)]


def target_of(home: Path, session: str) -> Target | None:
    """Where `session`'s wakes go (None: it is not a mailbox session)."""
    if not session.startswith(SESSION_PREFIX):
        return None
    return load_record(locations.team_wake_target(home, session), Target)


def deliverer(
    home: Path,
    session: str,
    *,
    clock: Callable[[], float] = time.time,
    wrote: list[DrainResult] | None = None,
) -> Callable[[DrainResult], bool] | None:
    """The drain's `deliver` for a mailbox session (None: not one). `wrote` collects what was
    written now (a drain's own result also counts what an earlier write had put there)."""
    target = target_of(home, session)
    if target is None:
        return None
    return lambda res: write(home, session, target, res, clock=clock, wrote=wrote)


def drain(home: Path, session: str, *, clock: Callable[[], float] = time.time) -> DrainResult:
    """Deliver what waits for a mailbox session (the supervisor's call after each flush). The
    gate's settle is short: a teammate reads no run output through ackdeck."""
    from ackdeck.core.monitors import wakes

    hand = deliverer(home, session, clock=clock)
    if hand is None:
        return DrainResult(delivered=[], superseded=0, pending=0, skipped=[])
    return wakes.drain(home, session, settle_timeout=0.2, clock=clock, deliver=hand)


def write(
    home: Path,
    session: str,
    target: Target,
    res: DrainResult,
    *,
    clock: Callable[[], float] = time.time,
    wrote: list[DrainResult] | None = None,
) -> bool:
    """Put `res` in the mailbox as one message, under Claude Code's lock, each item at most
    once (see the module). True: every item of `res` is in the mailbox (now or before)."""
    from ackdeck.core.clients.claude_code import mailbox as mb
    from ackdeck.core.clients.claude_code.lock import MailboxLock

    inbox = locations.claude_inbox(Path(target.teams), target.team, target.agent)
    sent_path = locations.team_wake_sent(home, session)
    with MailboxLock(inbox) as lock:
        try:
            raw = inbox.read_bytes()
        except FileNotFoundError:
            raw = b"[]"  # Claude Code makes it when it first writes; it reads `[]` the same
        docs = mb.load(raw, str(inbox))
        sent = load_record(sent_path, Sent) or Sent()
        if sent.intent is not None:  # an earlier write stopped between its intent and its end
            temp = locations.team_wake_temp(inbox, sent.intent.msg_id)
            there = any(d.get("msg_id") == sent.intent.msg_id for d in docs)
            done = resolved(sent.intent, temp.exists(), there)
            atomic.unlink_quietly(temp)
            sent = Sent(items=kept(sent.items, done), intent=None)
            store_record(sent_path, sent, fsync=True)
        todo = unsent(res, set(sent.items))
        keys = [k for d in todo.delivered for k in item_keys(d)]
        if not keys:
            return True  # all of it is in the mailbox already: the drain may ack it
        msg_id = msg_id_of(session, keys)
        entry = mb.new_entry(
            SENDER, todo.text(), clock(), summary=summary_of(todo), msg_id=msg_id, color=COLOR
        )
        temp = locations.team_wake_temp(inbox, msg_id)
        atomic.unlink_quietly(temp)  # left by a crash before its intent was recorded
        _write_new(temp, mb.dump([*docs, entry]), inbox)
        store_record(sent_path, sent.replace(intent=Intent(msg_id=msg_id, items=keys)), fsync=True)
        faults.pause("team-wake-intent")
        try:
            lock.check()
        except BaseException:
            # Not written: the intent goes first (a temp gone with the intent still recorded
            # would read as "renamed"), then the temp file.
            store_record(sent_path, sent, fsync=True)
            atomic.unlink_quietly(temp)
            raise
        os.replace(temp, inbox)
        atomic.fsync_dir(inbox.parent)
        faults.pause("team-wake-written")
        store_record(sent_path, Sent(items=kept(sent.items, keys), intent=None), fsync=True)
    if wrote is not None:
        wrote.append(todo)
    return True


def _write_new(temp: Path, data: bytes, inbox: Path) -> None:
    """The new mailbox at `temp`, with the mailbox's mode, fsynced (a rename after a power cut
    must not expose an empty file)."""
    try:
        mode = os.stat(inbox).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        atomic.unlink_quietly(temp)
        raise
    os.close(fd)
