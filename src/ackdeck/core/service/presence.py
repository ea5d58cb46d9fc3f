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

# Claude Code's older Notification payloads have no `notification_type`: their message says.
_KIND_BY_MESSAGE = (
    ("needs your permission", "permission_prompt"),
    ("waiting for your input", "idle_prompt"),
)


def record(home: Path, session: str, kind: str, **fields: Any) -> bool:
    """Append one presence event of `session` (core/presence/log.py); False if unwritten."""
    return log.record(home, session, kind, **fields)


def hook_event(
    home: Path, session: str, kind: str, payload: Mapping[str, Any], rooms: Sequence[str] = ()
) -> bool:
    """Record the hook event `kind` (start, prompt, stop, notify, end) from its stdin JSON."""
    detail: str | None = None
    fields: dict[str, Any] = {}
    if kind == "start":
        detail = _word(payload.get("source")) or "startup"
        fields = {"host": log.this_host(), "rooms": room_names(rooms) or None}
    elif kind == "notify":
        detail = notification_detail(payload)
    elif kind == "end":
        detail = _word(payload.get("reason")) or "other"
    # Claude Code's own id of the session: `ackdeck agents` matches it with the session's
    # registry record, to show both evidences when they disagree.
    fields["cc"] = _word(payload.get("session_id")) or None
    return log.record(home, session, kind, detail=detail, **fields)


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


def notification_detail(payload: Mapping[str, Any]) -> str:
    """`TYPE: message` of a Notification hook's payload (TYPE inferred from the message of a
    client that does not send it; `other` when neither says)."""
    message = payload.get("message")
    message = " ".join(message.split())[:200] if isinstance(message, str) else ""
    kind = _word(payload.get("notification_type"))
    if not kind:
        low = message.lower()
        kind = next((k for words, k in _KIND_BY_MESSAGE if words in low), "other")
    return f"{kind}: {message}" if message else kind


def _word(value: object) -> str:
    """A short printable word from a payload field (anything else: empty)."""
    if not isinstance(value, str):
        return ""
    return "".join(c for c in value if c.isalnum() or c in "_-.")[:40]


def nudges_unanswered(home: Path, session: str) -> tuple[int, bool]:
    """How many nudges `session` got since its last read, and whether the bound on them was
    already reached (and the owner told)."""
    facts = log.load(home, session)
    return facts.nudges_unanswered, facts.nudges_held
