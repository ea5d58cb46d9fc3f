"""What ackdeck knows about each outside client, in one package per client.

Each package holds the facts ackdeck relies on about that client (file formats, lock protocol,
hook protocol, reply sizes, config files), each with the client version it was checked
against (`CHECKED`). The doors and rooms use them from here, so a client release is one folder
to re-check (docs/reference/agent-clients.md says how). The facts are data and pure decisions:
nothing here reads or writes a file of ackdeck's own, and nothing imports the service.

- `claude_code`: Claude Code (npm `@anthropic-ai/claude-code`): its team mailbox format and
  lock, its hook protocol and settings files, its project MCP file, what it shows its model of
  a tool result.
- `codex`: Codex CLI (npm `@openai/codex`): what it shows its model of a tool result.
- `gemini_cli`: Gemini CLI (npm `@google/gemini-cli`): what it shows its model of a tool result.
"""
