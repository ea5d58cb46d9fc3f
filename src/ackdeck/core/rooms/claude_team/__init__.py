"""A Claude Code team mailbox as a room (`claude-team://TEAM/AGENT`)."""
