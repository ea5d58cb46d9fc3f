"""The MCP server: the agents' door over stdio (official `mcp` SDK)."""
