"""A stdio MCP server on the `mcp` SDK whose results have an exact size, to find out what an
agent client shows its model (tests/test_agent_client_limits.py).

`blob(n)` returns n characters of 20-character numbered lines as text; `both()` returns a
text and a different structuredContent, so a test sees which one reaches the model.

Usage: python -m tests.helpers.probe_server
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

server = MCPServer(name="probe")
TEXT_SIDE = "only-in-the-text-content"
JSON_SIDE = "only-in-the-structured-content"


def payload(n: int) -> str:
    lines = (f"L{i:06d} xxxxxxxxxxx\n" for i in range(n // 20 + 1))
    return "".join(lines)[:n]


@server.tool("blob", description="Return exactly n characters of text.")
def blob(n: int) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=payload(n))])


@server.tool("both", description="Return a text and a different structured content.")
def both() -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=TEXT_SIDE)], structured_content={"side": JSON_SIDE}
    )


if __name__ == "__main__":
    server.run()
