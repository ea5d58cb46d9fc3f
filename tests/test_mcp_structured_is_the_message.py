"""The structured result is the message: Claude Code and Codex show their model a tool's
structuredContent, not its text (docs/concepts/agent-loop.md), so whatever an agent needs to act
must be in the JSON. Before, only the text said that more lines waited, that room_ack comes next,
or what a refusal asked for: those models were never told.

For every tool, in the states where its text says the most (lines cut by the reply's size, a
refusal, a run with a monitor, a wake), every fact of the text is in the structured content:
each number, each quoted name, each step it tells the agent to take ("call …"), and each data
line. A client that shows only the text (Gemini CLI) loses nothing either: the text says the
same, never more.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult

from tests.helpers.mcp import call, text_of
from tests.helpers.paths import PATHS, REPO
from tests.helpers.wait import eventually

NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
QUOTED = re.compile(r"'([^']*)'")
STEP = re.compile(r"call [a-z_]+(?: [^.;:()]*)?")
TOOL = re.compile(r"\b(?:room|process|wakes)_[a-z_]+")


@asynccontextmanager
async def connect(home: Path, rooms: list[Path], reply_chars: int) -> AsyncIterator[Client]:
    args = ["-m", "ackdeck.core.cli", "--home", str(home), "mcp", "--session", "agent"]
    args += ["--reply-chars", str(reply_chars)]
    for r in rooms:
        args += ["--room", str(r)]
    params = StdioServerParameters(
        command=sys.executable, args=args, env={"PYTHONPATH": PATHS}, cwd=str(REPO)
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


def missing_facts(res: CallToolResult) -> list[str]:
    """What the text says that the structured content does not."""
    data: Any = res.structured_content
    if data is None:  # an error that is no tool result: its JSON travels in _meta
        data = (res.meta or {}).get("ackdeck/error")
    assert data is not None, text_of(res)
    dump = json.dumps(data, ensure_ascii=False)
    strings = set(_strings(data))
    missing = []
    for line in text_of(res).splitlines():
        if line in strings:
            continue  # a data line (a room line, an output line) or a whole JSON sentence
        facts = [n.replace(",", "") for n in NUMBER.findall(line)]
        facts += QUOTED.findall(line)
        facts += [m.group(0).strip() for m in STEP.finditer(line)]
        facts += TOOL.findall(line)
        missing += [f"{f!r} (in: {line})" for f in facts if f not in dump]
    return missing


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value, *value.splitlines()]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


async def test_every_tool_says_in_its_structured_content_all_its_text_says(
    home: Path, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_text("".join(f"line {i:04d} {'x' * 60}\n" for i in range(200)))
    results: dict[str, CallToolResult] = {}
    async with connect(home, [room, tmp_path / "alerts.txt"], reply_chars=2_000) as client:
        results["room_ack refused"] = await call(client, "room_ack")
        results["room_list_new cut"] = await call(client, "room_list_new")
        assert results["room_list_new cut"].structured_content["waiting"] > 0
        results["room_ack with lines left"] = await call(client, "room_ack")
        results["room_ack all"] = await call(client, "room_ack", {"all": True})
        results["room_push"] = await call(client, "room_push", {"text": "hello"})
        results["room_status"] = await call(client, "room_status")
        results["process_start"] = await call(
            client,
            "process_start",
            {
                "name": "gen",
                "argv": [sys.executable, "-c", "for i in range(500): print('ERROR', i, 'y' * 40)"],
                "monitor": "ERROR",
            },
        )
        eventually(
            lambda: (
                (home / "wakes" / "agent").is_dir()
                and any((home / "wakes" / "agent").glob("*.json"))
            ),
            timeout=60,
            what="the wake",
        )
        results["process_output cut"] = await call(client, "process_output", {"name": "gen"})
        results["process_list"] = await call(client, "process_list")
        results["process_kill"] = await call(client, "process_kill", {"name": "gen"})
        results["wakes_list"] = await call(client, "wakes_list")
        results["wakes_drain"] = await call(client, "wakes_drain")
        results["room_list_new empty"] = await call(client, "room_list_new", {"room": "alerts.txt"})
    assert results["process_output cut"].structured_content["more"]
    missing = {name: m for name, res in results.items() if (m := missing_facts(res))}
    assert missing == {}
