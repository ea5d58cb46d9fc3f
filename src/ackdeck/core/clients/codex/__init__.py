"""Codex CLI (npm `@openai/codex`): the facts ackdeck relies on.

Checked offline against `CHECKED` (docs/reference/agent-clients.md has the recipe).
"""

CHECKED = "0.169.0"  # also held on 0.171.0 (2026-12-07)

# `initialize`'s clientInfo.name starts with this.
CLIENT_NAME = "codex"

# What of a tool result the model sees, and how much whole: the structured JSON, after a
# "Wall time…Output:" header; above 11,997 bytes of UTF-8 the middle is cut ("…N tokens
# truncated…") for gpt-5.4 and models it does not know, above 47,997 for gpt-5.5. The server
# cannot see the model, so the smaller, with a margin.
REPLY_VIEW = "structured"
REPLY_CHARS = 10_000
REPLY_UNIT = "utf8"
