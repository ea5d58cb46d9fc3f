"""What an agent is told about ackdeck, written once: the MCP server's `instructions` and the
SessionStart hook's text (`hooks bootstrap`) both say exactly this, each in its own frame."""

from __future__ import annotations


def rules(session: str) -> list[str]:
    """The consumed-only sequence, the one thing never to do, and where wakes come from."""
    return [
        "To handle notifications, always read then ack through ackdeck:",
        "  1. room_list_new (MCP tool), or `ackdeck room read ROOM --session "
        f"{session}` without MCP;",
        "  2. act on every line;",
        f"  3. room_ack, or `ackdeck room ack ROOM --session {session}`. It removes exactly the",
        "     lines you read and keeps anything that arrived in between.",
        "A read returns at most what you can be shown at once: when its `waiting` is above 0,",
        "read again after the ack. Each result's `next` says what to call next.",
        "NEVER truncate, overwrite, edit or delete a notification file yourself (no `> file`,",
        "`truncate`, `: >`, rewriting it): lines appended between your read and your write",
        "would be lost unseen.",
        "Background commands: process_start (with a monitor regex to be woken), then",
        "process_output to read; pending wakes are delivered when you stop (wakes_drain).",
    ]


# What a channel notice is, for a client that shows them (Claude Code's <channel> blocks): the
# model reads the server's instructions to know what such an event is and how to answer it.
CHANNEL_NOTE = (
    'New room lines and wakes may also arrive as <channel source="ackdeck"> notices. A notice '
    "only says what waits and which tool takes it; it read, acked and drained nothing, so act "
    "on it with that tool (room_list_new then room_ack, or wakes_drain)."
)


def mcp_instructions(session: str, rooms: list[str], *, channel: bool = False) -> str:
    """The MCP server's `instructions`: one paragraph (with `channel`, what its notices are)."""
    head = (
        f"ackdeck inbox for session {session!r}. Rooms: {', '.join(rooms)} (the first is the "
        "default)."
    )
    tail = [CHANNEL_NOTE] if channel else []
    return " ".join([head, *(line.strip() for line in rules(session)), *tail])
