"""Claude Code agent teams found on this machine: their mailboxes as rooms (`ackdeck tui` lists
them unless told not to) and their members as rows an Agents panel can show.

Read only: listing teams opens no mailbox for writing and sets no `read` flag.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.struct import Struct
from ackdeck.core.clients.claude_code.mailbox import MailEntry as MailEntry
from ackdeck.core.clients.claude_code.mailbox import summarize as summarize  # for the doors
from ackdeck.core.errors import AckdeckError, InvalidInput
from ackdeck.core.rooms.claude_team.room import ClaudeMailboxRoom, spec_of
from ackdeck.core.rooms.claude_team.room import entry_line as entry_line  # for the doors

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path


def _names(directory: Path, *, suffix: str = "") -> list[str]:
    """Entries of `directory` spelled as Claude Code spells names on disk, without `suffix`."""
    try:
        found = sorted(os.listdir(directory))
    except OSError:
        return []
    out = []
    for name in found:
        if suffix and not name.endswith(suffix):
            continue
        stem = name[: len(name) - len(suffix)] if suffix else name
        if stem and locations.claude_name(stem) == stem:
            out.append(stem)
    return out


def teams_dir(env: Mapping[str, str] | None = None) -> Path:
    return locations.claude_teams_dir(os.environ if env is None else env)


def mailbox_specs(env: Mapping[str, str] | None = None) -> list[str]:
    """`claude-team://TEAM/AGENT` for every mailbox of every team, by team then agent."""
    teams = teams_dir(env)
    return [
        spec_of(team, agent)
        for team in _names(teams)
        for agent in _names(locations.claude_inboxes_dir(teams, team), suffix=".json")
    ]


class TeamMember(Struct):
    """A team member as an Agents panel shows it."""

    team: str
    name: str
    agent_id: str | None
    agent_type: str | None
    model: str | None
    pane: str | None  # tmux pane id, "leader" or "in-process"
    cwd: str | None
    room: str  # its mailbox, `claude-team://TEAM/NAME`
    # From its mailboxes: "waiting" (a permission or plan request of its waits for an answer),
    # "idle" (its last notice said so), "active", or "unknown" (nothing said yet).
    state: str
    unread: int  # entries in its own mailbox it has not read
    problem: str | None = None  # a mailbox ackdeck could not read, in one line
    since: float | None = None  # when it sent the notice its state comes from
    # When the oldest of its unread entries was sent (None: nothing unread, or not dated).
    # With `unread`, from its mailbox's room status: what `room status` shows.
    oldest_unread_at: float | None = None
    # Why it is gone (its team's lead process no longer runs: the team folder of a killed
    # session stays behind), else None.
    gone: str | None = None


def _str(doc: dict, key: str) -> str | None:
    value = doc.get(key)
    return value if isinstance(value, str) else None


def members(env: Mapping[str, str] | None = None) -> list[TeamMember]:
    """Every member of every team, with a state read from the team's mailboxes: the newest
    notice a member sent (an idle_notification: idle) or a request of its still waiting for
    an answer (waiting for the owner, who answers for the lead). A source of rows for the
    Agents panel (issue 32); it only reads."""
    teams = teams_dir(env)
    out: list[TeamMember] = []
    for team in _names(teams):
        from ackdeck.core.clients.claude_code.sessions import read_small_json

        doc = read_small_json(locations.claude_team_config(teams, team))
        if not isinstance(doc, dict):
            continue
        listed = doc.get("members")
        if not isinstance(listed, list):
            continue
        from ackdeck.core.clients.claude_code.sessions import lead_liveness, proc_start

        lead = lead_liveness(doc.get("leadProcess"), proc_start)
        gone = lead[1] if lead is not None and lead[0] == "gone" else None
        # What each member sent, newest last, across the team's mailboxes.
        sent: dict[str, list[tuple[float, str, bool]]] = {}
        problems: dict[str, str] = {}
        waiting: dict[str, tuple[int, float | None]] = {}
        for agent in _names(locations.claude_inboxes_dir(teams, team), suffix=".json"):
            room = ClaudeMailboxRoom(teams, team, agent)
            try:
                entries = room.entries()
            except AckdeckError as exc:
                problems[agent] = str(exc)
                continue
            # The agent's counts as its room's status gives them to `room status`: one
            # result, so the Agents panel and `agents` can never disagree with it.
            st = room.status(entries=entries)
            waiting[agent] = (st.counts_of(agent)[1], st.oldest_unread_at)
            for e in entries:
                if e.event is not None and e.at is not None:
                    sent.setdefault(e.sender, []).append((e.at, e.event.kind, e.event.pending))
        for m in listed:
            if not isinstance(m, dict) or not isinstance(m.get("name"), str):
                continue
            name = m["name"]
            notices = sorted(sent.get(name, []))
            if any(pending for _, _, pending in notices):
                state = "waiting"
            elif notices and notices[-1][1] == "idle_notification":
                state = "idle"
            elif notices:
                state = "active"
            else:
                state = "unknown"
            unread, oldest = waiting.get(locations.claude_name(name), (0, None))
            out.append(
                TeamMember(
                    team,
                    name,
                    _str(m, "agentId"),
                    _str(m, "agentType"),
                    _str(m, "model"),
                    _str(m, "tmuxPaneId"),
                    _str(m, "cwd"),
                    spec_of(team, locations.claude_name(name)),
                    state,
                    unread,
                    problems.get(locations.claude_name(name)),
                    since=notices[-1][0] if notices else None,
                    oldest_unread_at=oldest,
                    # A tmux teammate is a process of its own: it may outlive the lead.
                    gone=gone if m.get("backendType") != "tmux" else None,
                )
            )
    return out


# ----- one mailbox, for the owner -----------------------------------------------------------
def open_mailbox(spec: str, env: Mapping[str, str] | None = None) -> ClaudeMailboxRoom:
    """The mailbox `claude-team://TEAM/AGENT` names (InvalidInput for anything else)."""
    from ackdeck.core.service.claude_team_ref import ClaudeTeamRoomRef

    ref = ClaudeTeamRoomRef.parse(spec, env)
    return ClaudeMailboxRoom(ref.teams, ref.team, ref.agent)


def mark_read(
    spec: str,
    shown: set[str],
    keys: list[str],
    env: Mapping[str, str] | None = None,
) -> tuple[int, list[str]]:
    """Mark read, as the owner's explicit act, the entries `keys` names, each of which must
    be among `shown` (the keys of what the owner was shown): never anything else. Returns how
    many were marked, and the keys not marked (already read, or gone meanwhile)."""
    unseen = [k for k in keys if k not in shown]
    if unseen:
        raise InvalidInput(
            f"{spec}: {unseen[0]!r} was not among the entries shown; mark read only what you "
            "saw (nothing marked)"
        )
    room = open_mailbox(spec, env)
    wanted = set(keys)
    before = {e.key for e in room.entries() if not e.read} & wanted
    marked = room.mark_read(before)
    return marked, sorted(wanted - before)
