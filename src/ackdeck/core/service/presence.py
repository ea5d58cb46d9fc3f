"""What the doors record about a session's presence (core/presence), and the words of the
hook events: light on purpose, the hooks call it on every turn (the hot path).

Every recording answers nothing and raises nothing: presence is a hint about the session and
must never stop the hook, read or ack that records it."""

from __future__ import annotations

from ackdeck.core.presence import log

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

this_host = log.this_host


def record(home: Path | str, session: str, kind: str, **fields: Any) -> bool:
    """Append one presence event of `session` (core/presence/log.py); False if unwritten."""
    return log.record(home, session, kind, **fields)


def hook_event(
    home: Path | str,
    session: str,
    kind: str,
    payload: Mapping[str, Any],
    rooms: Sequence[str] = (),
) -> bool:
    """Record the hook event `kind` (start, prompt, stop, notify, end) from its stdin JSON."""
    # The words of the hook events, read where a gate's mark is read too: the hook that calls
    # this read its stdin with the same module (a read or an ack records presence without it).
    from ackdeck.core.hook_input import hook_fields

    fields: dict[str, Any] = hook_fields(kind, dict(payload))
    if kind == "start":
        fields.update(host=log.this_host(), rooms=room_names(rooms) or None)
    return log.record(home, session, kind, **fields)


def room_names(rooms: Sequence[str]) -> list[str]:
    """Rooms as presence names them (absolute paths, URLs without passwords); a room that does
    not parse is left out (the hook that records it reports it its own way)."""
    from ackdeck.core.errors import AckdeckError
    from ackdeck.core.service.refs import parse_room

    out = []
    for r in rooms:
        try:
            out.append(parse_room(r, env={}).display)
        except (AckdeckError, OSError, ValueError):
            continue
    return out


def nudges_unanswered(home: Path, session: str) -> tuple[int, bool]:
    """How many nudges `session` got since its last read, and whether the bound on them was
    already reached (and the owner told)."""
    from ackdeck.core.presence import history  # reading the log back: not on a hook's path

    facts = history.load(home, session)
    return facts.nudges_unanswered, facts.nudges_held
