"""The MCP server entry a set-up writes beside its hooks (`ackdeck hooks install --mcp-config`).

The hooks and the server of one agent must share its session, its rooms and its home: the Stop
hook drains the wakes of the processes the server started, and tells about the rooms the
server reads. Both are therefore built from the same parts (`hook_install.ackdeck_prefix`,
`hook_install.hook_room`) instead of being written by hand in two places.

`server_entry` and `merge_server` are pure; the file I/O is `hook_install.update_json_file`'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ackdeck.core.base.names import check_name
from ackdeck.core.clients import claude_code
from ackdeck.core.errors import AckdeckError, InvalidInput
from ackdeck.core.hook_install import (
    InstallResult,
    ackdeck_prefix,
    hook_room,
    update_json_file,
)

SERVER_NAME = "ackdeck"
PROJECT_FILE = claude_code.PROJECT_MCP_FILE  # Claude Code's project servers


def server_argv(
    ackdeck: Sequence[str],
    session: str,
    rooms: Sequence[str | os.PathLike[str]],
    home: str | None = None,
) -> list[str]:
    """The command line of the MCP server that goes with the hooks `hook_commands` builds from
    the same arguments: the same ackdeck, home, session and rooms (the first is the default)."""
    check_name(session)
    if not rooms:
        raise InvalidInput("the MCP server needs at least one --room (its first is the default)")
    room_args = [a for r in rooms for a in ("--room", hook_room(r))]
    return [*ackdeck_prefix(ackdeck, home), "mcp", "--session", session, *room_args]


def server_entry(argv: Sequence[str]) -> dict[str, Any]:
    """The `mcpServers` entry of a stdio server (Claude Code's .mcp.json, Gemini CLI's
    settings.json)."""
    return {"command": argv[0], "args": list(argv[1:])}


def merge_server(
    config: Mapping[str, Any], entry: Mapping[str, Any], name: str = SERVER_NAME
) -> dict[str, Any]:
    """`config` with its `mcpServers[name]` running `entry`'s command. Every other server and
    key is kept, and so are the entry's own other keys (`env`, `type`, a client's options)."""
    out = dict(config)
    servers = out.get("mcpServers")
    if servers is None:
        servers = {}
    elif not isinstance(servers, dict):
        raise InvalidInput(f'"mcpServers" must be a JSON object, found {type(servers).__name__}')
    current = servers.get(name)
    kept = dict(current) if isinstance(current, dict) else {}
    out["mcpServers"] = {**servers, name: {**kept, **entry}}
    return out


def install_server(
    path: str | os.PathLike[str], entry: Mapping[str, Any], name: str = SERVER_NAME
) -> InstallResult:
    """Write the server into an `mcpServers` JSON file (created if missing, backed up once,
    unchanged when it is already there)."""
    return update_json_file(path, lambda current: merge_server(current, entry, name))


def _facts(argv: Sequence[str]) -> dict[str, Any]:
    """What must agree between a server and its hooks, read from the server's command line:
    the home before the command (None: the default), the session (None: from the
    environment) and the rooms, in order."""
    facts: dict[str, Any] = {"home": None, "session": None, "rooms": []}
    words = list(argv)
    for i, word in enumerate(words):
        value = words[i + 1] if i + 1 < len(words) else None
        if word.startswith("--home="):
            facts["home"] = word.partition("=")[2]
        elif word == "--home" and value is not None:
            facts["home"] = value
        elif word.startswith("--session="):
            facts["session"] = word.partition("=")[2]
        elif word == "--session" and value is not None:
            facts["session"] = value
        elif word.startswith("--room="):
            facts["rooms"].append(word.partition("=")[2])
        elif word == "--room" and value is not None:
            facts["rooms"].append(value)
    return facts


def disagreement(config: Mapping[str, Any], argv: Sequence[str], name: str = SERVER_NAME) -> str:
    """How the `name` server of an `mcpServers` config differs from the server `argv` in what
    it shares with its hooks (home, session, rooms); empty when it agrees or is not there."""
    servers = config.get("mcpServers")
    entry = servers.get(name) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("args", []), list):
        return ""
    theirs = _facts([str(entry.get("command", "")), *map(str, entry.get("args", []))])
    ours = _facts(argv)
    given = entry.get("env")
    env: dict[str, Any] = given if isinstance(given, dict) else {}
    if theirs["home"] is None and env.get("ACKDECK_HOME"):
        theirs["home"] = env["ACKDECK_HOME"]
    if theirs["session"] is None and env.get("ACKDECK_SESSION"):
        theirs["session"] = env["ACKDECK_SESSION"]
    # Relative paths as the client resolves them: from the project, where this runs.
    if theirs["home"] is not None:
        theirs["home"] = os.path.abspath(os.path.expanduser(theirs["home"]))
    theirs["rooms"] = [_room_or_itself(r) for r in theirs["rooms"]]
    differ = []
    for what in ("home", "session", "rooms"):
        if theirs[what] != ours[what] and not (what == "session" and theirs[what] is None):
            differ.append(f"{what} {_said(theirs[what])} (the hooks: {_said(ours[what])})")
    return "; ".join(differ)


def _said(value: Any) -> str:
    if value is None:
        return "the default"
    if isinstance(value, list):
        return ", ".join(value) if value else "none"
    return str(value)


def _room_or_itself(room: str) -> str:
    try:
        return hook_room(room)
    except (AckdeckError, ValueError, OSError):
        return room  # not a room this ackdeck can name: compared as written


def project_config(project: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The project's `.mcp.json` (the current directory's), {} when it is missing or is no
    JSON object: only read to warn about a server that disagrees with the hooks."""
    from ackdeck.core.base.jsonfields import parse

    try:
        with open(os.path.join(project or os.curdir, PROJECT_FILE), "rb") as f:
            value = parse(f.read())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
