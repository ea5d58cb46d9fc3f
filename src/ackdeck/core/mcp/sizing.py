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
    # Where `chars` comes from, and how the owner raises it (no_line_fits says it).
    why: str = "this server's budget; raise it with ackdeck mcp --reply-chars"

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
    """The view and budget for client `name` (`override`: `--reply-chars`).

    A client's own ceiling wins over everything: Claude Code shows its model nothing of a
    result over MAX_MCP_OUTPUT_TOKENS (the server inherits its environment), so neither
    `--reply-chars` nor the 1,000-character floor of that option may lift the budget above
    it, however small it is."""
    client = name or ""
    view, chars, unit = DEFAULT_VIEW, DEFAULT_CHARS, UTF16
    for prefix, known in KNOWN.items():
        if client.lower().startswith(prefix):
            view, chars, unit = known
            break
    why = ClientView.why
    if override is not None:
        chars = override
    chars = max(MIN_CHARS, chars)
    if client.lower().startswith(claude_code.CLIENT_NAME):
        # Claude Code honours MAX_MCP_OUTPUT_TOKENS (the server inherits its environment).
        tokens = _int(env.get(claude_code.MAX_OUTPUT_TOKENS_ENV))
        if tokens is not None and tokens > 0 and tokens * CHARS_PER_TOKEN < chars:
            chars = tokens * CHARS_PER_TOKEN
            why = (
                f"MAX_MCP_OUTPUT_TOKENS={tokens} at {CHARS_PER_TOKEN} a token; raise it in "
                "Claude Code's environment"
            )
    return ClientView(client, view, chars, unit, why)


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


def line_cost(line: str, index: int, view: ClientView, marked: Collection[int] = ()) -> int:
    """What line `index` adds to a reply, as `view` measures it. `marked`: the indexes the
    structured content also lists (lines whose invalid UTF-8 was replaced: `invalid_utf8`),
    each of which costs its number."""
    if view.view == STRUCTURED:
        size = view.size(shown_json(line)) + 1  # the quoted, escaped string and a comma
        return size + (len(str(index)) + 1 if index in marked else 0)
    return view.size(line) + 1


def fit(lines: Sequence[str], view: ClientView, fixed: int, marked: Collection[int] = ()) -> int:
    """How many of `lines` (decoded, from the first) fit in one reply whose other content
    takes `fixed` characters. A line is never cut, and the budget is a ceiling: 0 when even
    the first does not fit (the client would hide or withhold the reply; no_line_fits says
    so instead)."""
    budget = view.chars - fixed
    size = 0
    for i, line in enumerate(lines):
        size += line_cost(line, i, view, marked)
        if size > budget:
            return i
    return len(lines)


def no_line_fits(view: ClientView, need: int) -> str:
    """The one line a door answers with when no line fits a reply (pure): what the reply
    would take, the budget and where it comes from. Short: it is a reply under that budget."""
    return (
        f"no line fits one reply: the first takes {need:,} characters with the reply around "
        f"it, over the {view.chars:,} characters this client shows whole ({view.why}); "
        "nothing was recorded"
    )
