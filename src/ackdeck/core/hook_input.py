"""A hook's stdin: the JSON object its client writes there (Claude Code, Codex and Gemini CLI
each write one object and close the pipe).

Apart from core/hooks.py because every hook reads it first, and the hooks that only record
their event (`hooks notify`, `hooks end`: core/cli/_hook_events.py) need nothing else of it:
os, select, sys and the JSON reader, no pathlib."""

from __future__ import annotations

import os

from ackdeck.core.base.jsonfields import parse as parse_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# How long a hook waits for its stdin JSON to start arriving (and for each next chunk); Claude
# Code writes it at once and closes the pipe, a hand-run hook may have nothing there.
STDIN_WAIT_S = 2.0
# How long the whole input may take, however it trickles: a runner that writes a byte now and
# then and never closes the pipe would otherwise keep the hook (and its agent's turn) waiting
# forever, each chunk restarting STDIN_WAIT_S.
STDIN_TOTAL_S = 10.0


def read_hook_input(
    stream: Any = None, wait: float = STDIN_WAIT_S, total: float = STDIN_TOTAL_S
) -> dict[str, Any]:
    """The JSON object Claude Code writes on a hook's stdin; {} when there is none (a terminal,
    an empty or closed stdin, nothing within `wait` seconds, no whole object within `total`
    seconds, or not a JSON object).

    Reads until EOF or until the bytes so far parse as one JSON value, so a runner that keeps
    the pipe open after writing cannot hang the hook."""
    import select
    import sys
    import time

    f = stream if stream is not None else sys.stdin
    try:
        if f is None or f.isatty():
            return {}
        fd = f.fileno()
        raw = bytearray()
        tried = 0  # the buffer's size at the last parse that found it incomplete
        deadline = time.monotonic() + total
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break  # what arrived is parsed below: a truncated object gives {}
            ready, _, _ = select.select([fd], [], [], min(wait, left))
            if not ready:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            raw += chunk
            end = len(raw)
            while end and raw[end - 1] in b" \t\r\n":
                end -= 1
            if not end or raw[end - 1] != ord("}") or len(raw) < 2 * tried:
                # An object is complete only after its closing brace, and the buffer is parsed
                # again only once it has doubled since it was last found incomplete: parsing
                # it after every chunk made a large input quadratic (after every chunk that
                # ends in `}` too: a prompt of braces). EOF, or the wait for a next chunk,
                # ends the read in any case, and what arrived is parsed below.
                continue
            try:
                value = parse_json(raw)
                break
            except ValueError:
                tried = len(raw)
                continue  # incomplete so far
    except (OSError, ValueError):
        return {}
    try:
        value = parse_json(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# The fields presence records of a hook's input (core/service/presence.py), and of the end mark
# a gate leaves instead (core/presence/history.py): one reading for both.
# Claude Code's older Notification payloads have no `notification_type`: their message says.
_KIND_BY_MESSAGE = (
    ("needs your permission", "permission_prompt"),
    ("waiting for your input", "idle_prompt"),
)


def hook_fields(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`detail` and `cc` of the hook event `kind` from its stdin JSON, as the hook records
    them and as a mark is read (one reading for both, so a mark reads as the event)."""
    detail: str | None = None
    if kind == "start":
        detail = _word(payload.get("source")) or "startup"
    elif kind == "notify":
        detail = notification_detail(payload)
    elif kind == "end":
        detail = _word(payload.get("reason")) or "other"
    # Claude Code's own id of the session: `ackdeck agents` matches it with the session's
    # registry record, to show both evidences when they disagree.
    fields = {"detail": detail, "cc": _word(payload.get("session_id")) or None}
    return {k: v for k, v in fields.items() if v is not None}


def notification_detail(payload: dict[str, Any]) -> str:
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
