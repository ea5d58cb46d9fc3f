"""The agents' listing: one row per session with its presence (core/presence) and what waits
for it (unread lines in its rooms, pending wakes), for `ackdeck agents`, the MCP tool
`agents_list`, the dashboard's Agents panel and the metrics, from one result type.

A query: it reads the presence logs, each room's status once (rooms shared by many sessions
are opened once) and the wake records; it writes nothing.

`Agent.origin` says where a row comes from: "ackdeck" for the sessions ackdeck's own doors
record. Another source of agents (another tool's team mailboxes) adds rows of its own with the
same fields and its own `origin` and `evidence`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base.struct import Internal, Struct
from ackdeck.core.errors import AckdeckError
from ackdeck.core.presence import history, log
from ackdeck.core.presence.model import STATES, Facts, decide, is_time, threshold

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from ackdeck.core.rooms.results import RoomStatus


class Agent(Struct):
    session: str
    # Where the row comes from: "ackdeck" (its own doors recorded it); another source of agents
    # names itself.
    origin: str
    state: str  # working | waiting | idle | stalled | gone
    since: float | None  # when it entered that state (epoch seconds)
    evidence: str  # what set the state, in words
    client: str | None  # the MCP client's name (initialize's clientInfo), if one connected
    version: str | None  # and its version
    host: str | None
    rooms: list[str]  # the rooms its hooks or MCP server were given, and those it read or acked
    unread: int  # complete lines in those rooms it has not read
    oldest_unread_age: float | None  # seconds its oldest unread line has waited
    pending_wakes: int  # wake records with something it was not shown
    last_read: float | None
    last_ack: float | None
    last_nudge: float | None
    nudges_unanswered: int  # nudges since its last read
    stall_after: float  # seconds lines may wait unread before it counts as stalled
    stall_basis: str  # how stall_after was found (learned from its reads, or the default)
    last_seen: float | None  # its newest event
    pane: str | None = None  # a Claude Code team member's tmux pane ("leader", "in-process")
    # A Claude Code session: its pid, its name in the registry and its session id (also on an
    # ackdeck row whose hooks reported that id).
    pid: int | None = None
    name: str | None = None
    claude_session: str | None = None
    # When two sources speak of one session and disagree (ackdeck's hooks, Claude Code's
    # registry): what the other one says, in words.
    disagrees: str | None = None


class Agents(Struct):
    checked_at: float
    agents: list[Agent]
    # Files in the presence folder that cannot be a session's log, one line each (a door
    # says them as warnings; the listing goes on without them).
    skipped: Internal[list[str]] = []
    # Outside records that could not be read, one line each (a damaged Claude Code registry
    # file): named, skipped, never fatal.
    problems: list[str] = []

    def counts(self) -> dict[str, int]:
        """How many agents are in each state (every state listed, in STATES order)."""
        out = dict.fromkeys(STATES, 0)
        for a in self.agents:
            out[a.state] = out.get(a.state, 0) + 1
        return out

    def find(self, session: str) -> Agent | None:
        return next((a for a in self.agents if a.session == session), None)


def list_agents(
    home: Path,
    *,
    sessions: Iterable[str] | None = None,
    clock: Callable[[], float] = time.time,
    claude_teams: bool = False,
    env: Mapping[str, str] | None = None,
) -> Agents:
    """Every session with a presence log in `home` (or those named), sorted by name; with
    `claude_teams`, then every member of every Claude Code team (`$CLAUDE_CONFIG_DIR/teams`
    in `env`, else ~/.claude/teams), by team and name."""
    names, skipped = (sorted(set(sessions)), []) if sessions is not None else history.scan(home)
    facts = [history.load(home, s) for s in names]
    statuses = _room_statuses(sorted({r for f in facts for r in f.rooms}), clock)
    now = clock()
    host = log.this_host()
    rows = [_row(home, f, statuses, now, host) for f in facts]
    problems: list[str] = []
    if claude_teams:
        found = _claude_session_rows(sessions, host, env)
        problems = found.problems
        rows = _cross_check(rows, found.rows)
        rows += _team_rows(sessions, now, host, env)
    return Agents(now, rows, skipped, problems)


class _Found(Struct):
    rows: list[Agent]
    problems: list[str]


def _claude_session_rows(
    sessions: Iterable[str] | None, host: str, env: Mapping[str, str] | None
) -> _Found:
    """Each Claude Code session of its registry as an agent (origin "claude-code", session
    `session-ID8` as Claude Code names its team and task list): its state from the registry's
    `status` while its process runs (pid and start time), gone once it does not."""
    from ackdeck.core.clients.claude_code.sessions import STATE_OF_STATUS
    from ackdeck.core.presence.model import DEFAULT_S
    from ackdeck.core.service.claude_sessions import registry

    wanted = None if sessions is None else set(sessions)
    found = registry(env)
    out = []
    for s in found.sessions:
        r = s.record
        if wanted is not None and s.short not in wanted:
            continue
        if s.alive == "gone":
            state, evidence = "gone", s.why
        else:
            state = STATE_OF_STATUS.get(r.status or "", "idle")
            evidence = f"Claude Code's registry says {r.status or 'nothing'}"
            if r.waiting_for:
                evidence += f" (for {r.waiting_for})"
            evidence += f"; {s.why}"
        out.append(
            Agent(
                session=s.short,
                origin="claude-code",
                state=state,
                since=r.status_at if s.alive != "gone" else None,
                evidence=evidence,
                client="claude-code",
                version=r.version,
                host=host,
                rooms=[],
                unread=0,
                oldest_unread_age=None,
                pending_wakes=0,
                last_read=None,
                last_ack=None,
                last_nudge=None,
                nudges_unanswered=0,
                stall_after=DEFAULT_S,
                stall_basis="a Claude Code session seen in its registry: no stall is judged",
                last_seen=r.updated_at,
                pane=r.pane,
                pid=r.pid,
                name=r.name,
                claude_session=r.session_id,
            )
        )
    return _Found(out, found.problems)


def agree(ackdeck_state: str, registry_state: str) -> bool:
    """Do ackdeck's hooks and Claude Code's registry tell the same state? `stalled` is
    ackdeck's own judgement of an idle or working session, so it agrees with either."""
    if ackdeck_state == registry_state:
        return True
    return ackdeck_state == "stalled" and registry_state in ("idle", "working")


def _cross_check(rows: list[Agent], claude: list[Agent]) -> list[Agent]:
    """ackdeck's rows then Claude Code's, each of a session both know noting what the other
    says when they disagree (both evidences shown, neither trusted over the other)."""
    by_id = {a.claude_session: a for a in claude if a.claude_session}
    out = []
    for a in rows:
        other = by_id.get(a.claude_session) if a.claude_session else None
        if other is not None and not agree(a.state, other.state):
            a = a.replace(
                disagrees=f"Claude Code's registry ({other.session}, pid {other.pid}) says "
                f"{other.state}: {other.evidence}"
            )
        out.append(a)
    mine = {a.claude_session: a for a in rows if a.claude_session}
    for c in claude:
        own = mine.get(c.claude_session) if c.claude_session else None
        if own is not None and not agree(own.state, c.state):
            c = c.replace(
                disagrees=f"ackdeck's hooks (session {own.session}) say {own.state}: {own.evidence}"
            )
        out.append(c)
    return out


# A team member's state as the mailboxes tell it (core.service.claude_teams.members), in the
# states every agent has: "active" is working; "unknown" (it has sent no notice yet) is idle.
_TEAM_STATES = {"waiting": "waiting", "idle": "idle", "active": "working", "unknown": "idle"}
_TEAM_EVIDENCE = {
    "waiting": "a request of its waits for an answer in the team's mailboxes",
    "idle": "its last notice in the team's mailboxes was idle_notification",
    "active": "its last notice in the team's mailboxes was not idle",
    "unknown": "no notice from it in the team's mailboxes yet",
}


def _team_rows(
    sessions: Iterable[str] | None, now: float, host: str, env: Mapping[str, str] | None
) -> list[Agent]:
    """Claude Code team members as agents (origin "claude-team", session `TEAM/NAME`): their
    state from the team's mailboxes, their mailbox as their room. ackdeck records no presence
    for them and judges no stall: Claude Code runs them, not ackdeck's hooks."""
    from ackdeck.core.presence.model import DEFAULT_S
    from ackdeck.core.rooms.results import age
    from ackdeck.core.service.claude_teams import members

    wanted = None if sessions is None else set(sessions)
    out = []
    for m in members(env):
        session = f"{m.team}/{m.name}"
        if wanted is not None and session not in wanted:
            continue
        evidence = _TEAM_EVIDENCE[m.state] if m.problem is None else m.problem
        if m.gone is not None:
            evidence = f"{m.gone}; its mailboxes say: {evidence}"
        out.append(
            Agent(
                session=session,
                origin="claude-team",
                state="gone" if m.gone is not None else _TEAM_STATES[m.state],
                since=m.since,
                evidence=evidence,
                client="claude-code",
                version=None,
                host=host,
                rooms=[m.room],
                unread=m.unread,
                oldest_unread_age=age(m.oldest_unread_at, now) if m.unread else None,
                pending_wakes=0,
                last_read=None,
                last_ack=None,
                last_nudge=None,
                nudges_unanswered=0,
                stall_after=DEFAULT_S,
                stall_basis="a Claude Code team member: no stall is judged",
                last_seen=m.since,
                pane=m.pane,
            )
        )
    return out


def _room_statuses(rooms: list[str], clock: Callable[[], float]) -> dict[str, RoomStatus | None]:
    """Each room's status, once; None for a room that cannot be read now (it is skipped in the
    counts, never an error: one broken room must not hide every agent)."""
    from ackdeck.core.base.digest import use_openssl
    from ackdeck.core.rooms.file.ledger import HEAD_BYTES
    from ackdeck.core.service.refs import parse_room

    use_openssl(len(rooms) * HEAD_BYTES)  # as `room status` decides over as many rooms
    out: dict[str, RoomStatus | None] = {}
    for spec in rooms:
        try:
            room = parse_room(spec).open(clock=clock)
            try:
                out[spec] = room.status()
            finally:
                room.close()
        except (AckdeckError, OSError):
            out[spec] = None
    return out


def _row(
    home: Path, f: Facts, statuses: dict[str, RoomStatus | None], now: float, host: str
) -> Agent:
    unread, oldest = 0, None
    for r in f.rooms:
        st = statuses.get(r)
        if st is None:
            continue
        unread += st.counts_of(f.session)[1]
        age = st.ages_of(f.session)[1]
        if age is not None and (oldest is None or age > oldest):
            oldest = age
    if not unread:
        oldest = None
    presence = decide(
        f, now, dead=history.dead_servers(f, host), unread=unread, oldest_unread_age=oldest
    )
    limit, basis = threshold(f.waited)
    return Agent(
        f.session,
        f.origin,
        presence.state,
        presence.since,
        presence.evidence,
        f.client,
        f.version,
        f.host,
        list(f.rooms),
        unread,
        oldest,
        _pending_wakes(home, f.session),
        f.last_read,
        f.last_ack,
        f.last_nudge,
        f.nudges_unanswered,
        limit,
        basis,
        f.last_at,
        claude_session=f.claude_session,
    )


def _pending_wakes(home: Path, session: str) -> int:
    from ackdeck.core.service.views import view_wakes

    return sum(1 for w in view_wakes(home, session) if w.lines or w.notice_pending)


def timeline(home: Path, session: str, limit: int = 50) -> list[dict[str, object]]:
    """The session's last `limit` presence events, newest first (the dashboard's timeline)."""
    return history.timeline(home, session, limit)


def timeline_line(event: dict[str, object]) -> str:
    """One presence event as a person reads it: its time, kind and details."""
    t = event.get("t")
    when = time.strftime("%H:%M:%S", time.localtime(t)) if is_time(t) else "?"
    rest = "  ".join(
        f"{k}={v}" for k, v in event.items() if k not in ("t", "ev") and v not in (None, "")
    )
    return f"{when}  {event.get('ev')}  {rest}".rstrip()


def logs_signature(home: Path, *, claude: bool = False) -> frozenset[tuple[str, int, int]]:
    """What the presence logs look like now (name, size, mtime of each): equal to an earlier
    one when no event was recorded since. A stat per session, no read: the dashboard asks it
    every few seconds. With `claude`, Claude Code's session registry too (a status it
    rewrote; a session that died without a write is found by the periodic listing)."""
    sig = history.signature(home)
    if not claude:
        return sig
    import os

    from ackdeck.core.base import locations

    out = set(sig)
    try:
        entries = list(os.scandir(locations.claude_sessions_dir(os.environ)))
    except OSError:
        return sig
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        out.add(("claude:" + e.name, st.st_size, st.st_mtime_ns))
    return frozenset(out)


def evidence_line(a: Agent) -> str:
    """An agent's evidence as every door shows it in one line: who (a Claude Code session's
    name and pid, its pane), why, and what another source of the same session says when it
    disagrees."""
    who = []
    if a.name is not None:
        who.append(repr(a.name))
    if a.pid is not None:
        who.append(f"pid {a.pid}")
    if a.pane is not None:
        who.append(f"pane {a.pane}")
    text = f"{' '.join(who)}: {a.evidence}" if who else a.evidence
    if a.disagrees is not None:
        text += f"; but {a.disagrees}"
    return text
