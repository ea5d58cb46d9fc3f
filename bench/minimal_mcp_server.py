"""The baseline of `python -m bench mcp`: the smallest stdio server on the same `mcp` SDK as
`ackdeck mcp` (one tool), as anyone would write it from the SDK's README.

Usage: python -m bench.minimal_mcp_server
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer(name="minimal")


@server.tool("echo", description="Return the text it is given.")
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    server.run()
