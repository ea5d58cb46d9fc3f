"""Wakes for a Claude Code teammate (`--session claude-team://TEAM/AGENT`), for the doors:
bind a run's wakes to the mailbox, and deliver what waits (core/monitors/team_wakes.py says
how each wake is written into the mailbox exactly once)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ackdeck.core.base.home import resolve_home
from ackdeck.core.monitors import team_wakes
from ackdeck.core.monitors.results import DrainResult

if TYPE_CHECKING:
    import os
    from pathlib import Path

    HomeArg = str | os.PathLike[str] | Path | None

is_mailbox = team_wakes.is_mailbox
# `claude-team://TEAM/AGENT` -> the session its wakes are kept under (`wakes list`, `dismiss`).
mailbox_session = team_wakes.mailbox_session


def bind(home: HomeArg, spec: str) -> str:
    """The session a run keeps `spec`'s wakes under (where they go is recorded). Raises
    InvalidInput for a bad spec or a teammate the team does not have."""
    return team_wakes.bind(resolve_home(home), spec)


def drain(home: HomeArg, spec: str) -> DrainResult:
    """Write what waits for the teammate `spec` into its mailbox now (a supervisor that died
    left it pending): each wake once, whatever was written before the crash."""
    from ackdeck.core.errors import InvalidInput
    from ackdeck.core.service.wakes import drain as drain_session

    h = resolve_home(home)
    session = team_wakes.mailbox_session(spec)
    wrote: list[DrainResult] = []
    hand = team_wakes.deliverer(h, session, wrote=wrote)
    if hand is None:
        raise InvalidInput(f"{spec}: no run sends its wakes there (`ackdeck run --session {spec}`)")
    done = drain_session(h, session, settle_timeout=0.2, deliver=hand)
    # What went into the mailbox now: an item an interrupted write had put there is acked by
    # this drain but not written again, so it is not reported as written.
    now = [d for w in wrote for d in w.delivered]
    return done.replace(session=spec, delivered=now)
