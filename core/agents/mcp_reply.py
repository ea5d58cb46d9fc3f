"""What every MCP tool of the agents' door returns: a `Reply` (text for the model, structured
data for programs, whether it is an error) and its conversion to the SDK's result. Shared by
core/agents/mcp_server.py and core/agents/mcp_manage.py, so neither imports the other for it.

Every error is one line of text with structured content `{"error": KIND, "message": LINE}`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.types import CallToolResult, TextContent

from core.errors import AckdeckError


@dataclass(frozen=True)
class Reply:
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    error: bool = False


def result(reply: Reply) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=reply.text)],
        structured_content=reply.data or None,
        is_error=reply.error,
    )


def guard(call: Callable[[], Reply]) -> CallToolResult:
    """Run one tool body; expected failures become isError results with one line of text."""
    try:
        return result(call())
    except (AckdeckError, OSError) as exc:
        return result(failure(exc))


async def guard_async(call: Callable[[], Awaitable[Reply]]) -> CallToolResult:
    """`guard` for tool bodies that await."""
    try:
        return result(await call())
    except (AckdeckError, OSError) as exc:
        return result(failure(exc))


def failure(exc: AckdeckError | OSError) -> Reply:
    if isinstance(exc, AckdeckError):
        return error_reply(type(exc).__name__, str(exc))
    # Core maps the failures it anticipates; anything else still deserves a readable line.
    where = f" ({exc.filename})" if exc.filename else ""
    return error_reply("OSError", f"{exc.strerror or exc}{where}")


def error_reply(kind: str, message: str) -> Reply:
    """An error result: one line of text, and the same line with its kind as structured
    content (`{"error": "InvalidInput", "message": ...}`) for programs."""
    line = one_line(message)
    return Reply(line, {"error": kind, "message": line}, error=True)


def one_line(text: str) -> str:
    return " ".join(text.split()) or "error"
