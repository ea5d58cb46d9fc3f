"""Gemini CLI (npm `@google/gemini-cli`): the facts ackdeck relies on.

Checked offline against `CHECKED` (docs/reference/agent-clients.md has the recipe).
"""

CHECKED = "0.61.0"

# `initialize`'s clientInfo.name starts with this.
CLIENT_NAME = "gemini-cli"

# What of a tool result the model sees, and how much whole: the text content (never the
# structured content), wrapped in <untrusted_context>; above 40,000 characters the middle is
# cut. ackdeck keeps its replies under 32,000 for a margin. Its settings file
# (`~/.gemini/settings.json`) takes the same `mcpServers` entry as Claude Code's .mcp.json.
REPLY_VIEW = "text"
REPLY_CHARS = 32_000
REPLY_UNIT = "utf16"
