"""Overdue alerts: which rooms have a line waiting past their threshold, and one wake per room
per overdue episode for the room's owner session; likewise one wake per stall episode of an
agent (core/service/agents.py) in a room with an owner, for that owner.

`status` (every door) only reports `overdue`; queries do not write. `check` is the explicit
step that alerts (`ackdeck room overdue`, for cron and CI): an episode starts the first time a
check finds the room overdue (the owner gets one wake, a record `room@NAME-ID` drained like
any other wake; ID tells two rooms of one name apart) and ends the first time a check finds it
not overdue, so a room that stays overdue across a thousand checks wakes its owner once.

Episode state: `$ACKDECK_HOME/alerts/OWNER/room@NAME-ID.json`, `{"since": …}`, replaced atomically
under that directory's lock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.home import alerts_dir, resolve_home
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.locks import locked
from ackdeck.core.base.struct import Struct, derived
from ackdeck.core.base.text import age_text
from ackdeck.core.errors import AckdeckError, CorruptState
from ackdeck.core.monitors.room_wakes import tell, wake_name
from ackdeck.core.service.rooms import RoomState, status

if TYPE_CHECKING:
    from ackdeck.core.rooms.room_backend import RoomBackend


class Overdue(Struct):
    @derived
    def overdue(self) -> bool:
        """Whether any room is overdue (the JSON's first key, before the rooms)."""
        return any(r.overdue for r in self.rooms)

    rooms: list[RoomState]
    woke: list[str]  # the rooms whose owner got a wake now (a new episode)


def why(row: RoomState) -> str:
    """One line an owner reads: which room, how long, past which threshold."""
    t = row.overdue_after
    limit = age_text(t) if t is not None else "?"
    return (
        f"room {row.room}: its oldest line has waited {age_text(row.oldest_pending_age)} "
        f"(overdue after {limit}); `ackdeck room status {row.path}` tells which session"
    )


def check(
    rooms: Sequence[tuple[RoomBackend, str]],
    home: str | Path | None,
    *,
    overdue: float | None = None,
    clock: Callable[[], float] = time.time,
) -> Overdue:
    """Each room's status (with `overdue` over the rooms' own thresholds) and, for the rooms
    with an owner, the episode step: a wake when an episode starts. A room whose stored policy
    is refused (core/rooms/policy.py: an owner that is a path, a count of 0) is the error, in
    one line, before anything is written: status alone would read it as no policy at all."""
    for room, _label in rooms:
        try:
            room.policy()
        except CorruptState:
            raise
        except (AckdeckError, OSError):
            pass  # an unreachable room: status says so in its row, as it always has
    found = status(rooms, overdue=overdue)
    woke: list[str] = []
    owned = [r for r in found.rooms if r.owner is not None]
    if owned:
        h = resolve_home(home)
        for row in owned:
            owner = row.owner
            assert owner is not None
            if _episode_step(h, owner, row.room, row.path, row.overdue, why(row), clock):
                woke.append(row.room)
        woke += _stalled_agents(h, owned, clock)
    return Overdue(found.rooms, woke)


def _stalled_agents(home: Path, owned: list[RoomState], clock: Callable[[], float]) -> list[str]:
    """Stalls feed the same alerts (issue 32): an agent stalled in a room with an owner wakes
    that owner once per stall episode (`agent SESSION` in `woke`), as an overdue room does."""
    from ackdeck.core.service.agents import list_agents

    owners: dict[str, set[str]] = {}  # room path -> owners
    for row in owned:
        owners.setdefault(row.path, set()).add(row.owner or "")
    woke = []
    for agent in list_agents(home, clock=clock).agents:
        mine = sorted({o for r in agent.rooms for o in owners.get(r, ())})
        label = f"agent {agent.session}"
        text = f"agent {agent.session} is {agent.state}: {agent.evidence}"
        for owner in mine:
            stalled = agent.state == "stalled"
            ident = f"agent:{agent.session}"
            if _episode_step(home, owner, label, ident, stalled, text, clock, "stalled"):
                woke.append(label)
    return woke


def _episode_step(
    home: Path,
    owner: str,
    label: str,
    identity: str,
    active: bool,
    text: str,
    clock: Callable[[], float],
    event: str = "overdue",
) -> bool:
    """One step of an episode of `identity` for `owner`: a wake when it starts (`active`
    first seen), nothing while it lasts, its end recorded when it is no longer active."""
    # Keyed by the room (its path or URL), not its label: two projects' `inbox.txt` with one
    # owner are two episodes (the second one's wake was swallowed).
    name = wake_name(label, identity)
    d = alerts_dir(home, owner)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    state = locations.alert_state(home, owner, name)
    with locked(locations.alerts_lock(home, owner), shared=False):
        try:
            since = parse_json(state.read_bytes()).get("since")
        except (FileNotFoundError, ValueError, AttributeError):
            since = None
        if not active:
            if since is not None:
                atomic.atomic_write(state, b'{"since": null}', fsync=False)
            return False
        if since is not None:
            return False  # the same episode: told already
        now = clock()
        tell(home, owner, label, identity, event, text, clock=lambda: now)
        atomic.atomic_write(state, json.dumps({"since": now}).encode(), fsync=False)
        return True
