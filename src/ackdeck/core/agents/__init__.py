"""The agents' door: the MCP server, hooks, notices and the terminal nudge."""
