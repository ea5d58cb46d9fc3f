"""How much one MCP reply may carry so that the client shows all of it to its model.

Clients do not show a model every tool result whole: Claude Code persists a result above about
50,000 characters (or above `MAX_MCP_OUTPUT_TOKENS`) to a file and shows the model a short
preview; Codex cuts the middle out of a long output; both show the model the structured
content (JSON) when a tool has one, while Gemini CLI shows the text. An ack after such a read
would remove lines the model never saw. So a read carries at most what the client shows whole,
measured the way that client shows it, and only that is recorded as read (the rest waits for
the next read, and the result says how many wait).

The client is known from `initialize` (`clientInfo.name`); `ackdeck mcp --reply-chars N`
overrides the budget for every client. The figures and how they were found are in
docs/concepts/agent-loop.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ackdeck.core.clients import claude_code, codex, gemini_cli

# A view: what of a tool result the client shows its model.
STRUCTURED = "structured"  # the structuredContent JSON (Claude Code, Codex)
TEXT = "text"  # the text content (Gemini CLI; the default for clients we do not know)


# How a client measures what it shows: JavaScript string length (Claude Code, Gemini CLI),
# or bytes of UTF-8 (Codex).
UTF16 = "utf16"
UTF8 = "utf8"


@dataclass(frozen=True)
class ClientView:
    """What a client shows its model of a tool result, and how much of it, whole."""

    client: str  # clientInfo.name, or "" before the client said it
    view: str  # STRUCTURED | TEXT
    chars: int  # the largest result it shows whole, in `unit`s of that view
    unit: str = UTF16

    def size(self, text: str) -> int:
        if self.unit == UTF8:
            return len(text.encode("utf-8", "surrogatepass"))
        return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)  # astral: two UTF-16 units


# What each known client shows whole, measured by experiment against the client itself
# (docs/concepts/agent-loop.md; the facts and the version they were checked against are in
# core/clients/), and the budget kept under it. Keys are prefixes of clientInfo.name.
KNOWN: dict[str, tuple[str, int, str]] = {
    c.CLIENT_NAME: (c.REPLY_VIEW, c.REPLY_CHARS, c.REPLY_UNIT)
    for c in (claude_code, codex, gemini_cli)
}
DEFAULT_VIEW = TEXT
DEFAULT_CHARS = 20_000
MIN_CHARS = 1_000
MAX_CHARS = 500_000
# Claude Code's own estimate of a result's tokens is about 4 characters each; 3 keeps a
# margin for text that tokenises densely.
CHARS_PER_TOKEN = 3


def client_view(
    name: str | None, override: int | None = None, env: Mapping[str, str] = os.environ
) -> ClientView:
    """The view and budget for client `name` (`override`: `--reply-chars`)."""
    client = name or ""
    view, chars, unit = DEFAULT_VIEW, DEFAULT_CHARS, UTF16
    for prefix, known in KNOWN.items():
        if client.lower().startswith(prefix):
            view, chars, unit = known
            break
    if client.lower().startswith(claude_code.CLIENT_NAME):
        # Claude Code honours MAX_MCP_OUTPUT_TOKENS (the server inherits its environment).
        tokens = _int(env.get(claude_code.MAX_OUTPUT_TOKENS_ENV))
        if tokens is not None and tokens > 0:
            chars = min(chars, tokens * CHARS_PER_TOKEN)
    if override is not None:
        chars = override
    return ClientView(client, view, max(MIN_CHARS, chars), unit)


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def check_reply_chars(value: int) -> int:
    """`--reply-chars`: a range check, so a typo cannot make every reply one line or 1 GB."""
    from ackdeck.core.errors import InvalidInput

    if isinstance(value, bool) or not MIN_CHARS <= value <= MAX_CHARS:
        raise InvalidInput(
            f"invalid --reply-chars {value!r}: between {MIN_CHARS:,} and {MAX_CHARS:,} characters"
        )
    return value


def shown_json(value: object) -> str:
    """`value` as clients serialise structured content for their model (compact JSON, as
    JavaScript's JSON.stringify writes it)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def fit(lines: Sequence[str], view: ClientView, fixed: int, marked: Collection[int] = ()) -> int:
    """How many of `lines` (decoded, from the first) fit in one reply whose other content
    takes `fixed` characters: always at least one, so a single long line still gets through
    (a line is never cut). `marked`: the indexes the structured content also lists (lines
    whose invalid UTF-8 was replaced: `invalid_utf8`), each of which costs its number."""
    budget = view.chars - fixed
    size = 0
    for i, line in enumerate(lines):
        if view.view == STRUCTURED:
            size += view.size(shown_json(line)) + 1  # the quoted, escaped string and a comma
            if i in marked:
                size += len(str(i)) + 1
        else:
            size += view.size(line) + 1
        if size > budget and i > 0:
            return i
    return len(lines)
