"""The agents' door as the official SDK client sees it: a real `ackdeck mcp` process on stdio,
and what its results say."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from tests.helpers.paths import PATHS, REPO


def server_params(
    home: Path, rooms: Sequence[Path], session: str = "agent", extra: Sequence[str] = ()
) -> StdioServerParameters:
    """`ackdeck --home HOME mcp --session SESSION EXTRA --room R...` as a client spawns it."""
    args = ["-m", "ackdeck.core.cli", "--home", str(home), "mcp", "--session", session, *extra]
    for r in rooms:
        args += ["--room", str(r)]
    return StdioServerParameters(
        command=sys.executable, args=args, env={"PYTHONPATH": PATHS}, cwd=str(REPO)
    )


@asynccontextmanager
async def connect(
    home: Path, rooms: Sequence[Path], session: str = "agent"
) -> AsyncIterator[Client]:
    async with Client(server_params(home, rooms, session), read_timeout_seconds=60) as client:
        yield client


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def error_of(result: CallToolResult) -> dict[str, Any]:
    """The JSON of an error that is no tool result (CLI --json prints the same): it travels in
    `_meta`, and the result has no structured content, which would have to match the tool's
    outputSchema (issue 19)."""
    assert result.is_error and result.structured_content is None, result
    assert result.meta is not None, result
    return result.meta["ackdeck/error"]


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> CallToolResult:
    return await client.call_tool(tool, args or {})
