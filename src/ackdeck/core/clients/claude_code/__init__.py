"""Claude Code (npm `@anthropic-ai/claude-code`): the facts ackdeck relies on.

Checked offline against `CHECKED` (docs/reference/agent-clients.md has the recipe). Here:

- `lock`: the proper-lockfile protocol Claude Code takes around a team mailbox rewrite;
- `mailbox`: a team mailbox (`~/.claude/teams/TEAM/inboxes/AGENT.json`) as Claude Code reads
  and writes it, pure decisions;
- `sessions`: its registry of running sessions (`~/.claude/sessions/PID.json`), and whether a
  record's process still runs (pid and start time); a team's `leadProcess` likewise;
- `tasks`: a task file (`~/.claude/tasks/LIST/N.json`), how Claude Code gives one back, and
  when a release must be refused;
- below: what it shows its model of an MCP tool result, its hook events and settings files,
  and its project MCP server file.

Where Claude Code keeps its teams on disk is named with every other path in
`core/base/locations.py` (one module names every file ackdeck reads or keeps).
"""

CHECKED = "2.1.328"  # also held on 2.1.332 (2026-12-07)

# `initialize`'s clientInfo.name starts with this.
CLIENT_NAME = "claude-code"

# What of a tool result the model sees, and how much whole: the structuredContent JSON when the
# tool has one (else the text); a result above 50,000 characters (JavaScript string length,
# UTF-16 units) is persisted to a file and the model is shown a 2 KB preview. ackdeck keeps its
# replies under 40,000 for a margin.
REPLY_VIEW = "structured"
REPLY_CHARS = 40_000
REPLY_UNIT = "utf16"
# The user's cap on a tool result, in tokens (the server inherits Claude Code's environment).
# Claude Code estimates about 4 characters a token, asks the API's count_tokens once its guess
# passes half the limit, and refuses (does not cut) a result over it.
MAX_OUTPUT_TOKENS_ENV = "MAX_MCP_OUTPUT_TOKENS"

# The hook events ackdeck installs (settings.json `hooks.EVENT[].hooks[]` of `{"type":
# "command", "command", "timeout"}`); a hook's stdin is one JSON object (with `session_id`
# and `transcript_path`); a Stop hook that exits 2 has its stderr shown to the model, which
# then goes on.
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "Notification", "SessionEnd")
# Settings files, relative to a project directory or the user's home.
SETTINGS_DIR = ".claude"
SETTINGS_FILE = "settings.json"  # `settings.local.json` beside it stays out of version control
# The project's MCP servers: `{"mcpServers": {NAME: {"command", "args", "env"}}}`.
PROJECT_MCP_FILE = ".mcp.json"
