"""Every MCP client sees ackdeck's answers and its errors (issue 19).

One plan calls every tool on its success and its error paths, and a read -> external push -> ack
cycle. It runs through the official Python SDK client and through the official TypeScript SDK
client (tests/mcp_ts/drive.mjs: the code the MCP Inspector and Gemini CLI use, which validates
structured content against the tool's outputSchema even on errors and turns a mismatch into a
protocol error); the MCP Inspector CLI lists the tools and calls room_push with a bad argument.
Every result is checked the same way: its text is visible, isError is set exactly on errors, an
error's text is one line, and any structured content validates against the tool's published
outputSchema (jsonschema). The TypeScript side needs node and the npm packages that
`make npm-cache` puts under .cache/npm; without them those tests skip with one line. Claude
Code's own CLI (`claude mcp add`, `claude mcp list`) connects to ackdeck as a user would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from tests.helpers.paths import PATHS, REPO

NPM = REPO / ".cache" / "npm" / "node_modules"
TS_SDK = NPM / "@modelcontextprotocol" / "sdk"
INSPECTOR = NPM / ".bin" / "mcp-inspector"
SESSION = "agent"


@dataclass(frozen=True)
class Step:
    tool: str | None  # None: an external producer appends `text` to the room
    args: dict[str, Any]
    error: bool = False
    says: str = ""  # the reply's text contains this


def plan(room: Path) -> list[Step]:
    """Every tool, its success and its error paths. Step indexes are referred to as "$N.key"."""
    job = [sys.executable, "-c", "import time; print('hello', flush=True); time.sleep(120)"]
    return [
        Step("room_status", {}, says="0 unread"),  # 0
        Step("room_push", {"room": room.name, "text": "first"}, says="pushed one line"),  # 1
        Step("room_push", {"room": room.name, "text": "a\nb"}, True, "must not contain a newline"),
        Step("room_push", {"room": "/etc/passwd", "text": "x"}, True, "is not configured"),
        Step("room_ack", {}, True, "room_list_new"),  # 4: a cold ack is refused, with counts
        Step("room_list_new", {}, says="first"),  # 5
        Step(None, {"text": "late line"}),  # 6: an outside producer appends after the read
        Step("room_ack", {}, says="acked 1 line, preserved 1 line"),  # 7
        Step("room_list_new", {}, says="late line"),  # 8: the late line survived the ack
        Step("room_list_new", {"room": "nope"}, True, "is not configured"),
        Step("room_ack", {"bogus": 1}, True, "unknown argument for room_ack: 'bogus'"),  # 10
        Step("room_ack", {"all": "yes"}, True, "all: Input should be a valid boolean"),
        Step("room_status", {"room": "nope"}, True, "is not configured"),
        Step("room_ack", {"all": True}, says="late line"),  # 13
        Step("process_start", {"name": "job", "argv": job, "monitor": "hello", "cooldown_ms": 0}),
        Step("process_start", {"name": "job", "argv": ["true"]}, True, "still running as run"),
        Step("process_start", {"name": "bad", "argv": ["no-such-command-x"]}, True, "not found"),
        Step("process_start", {"name": "job", "argv": job, "replace": True}),  # 17
        Step("process_output", {"name": "job", "timeout": 60}, says="hello"),  # 18
        Step("process_output", {"name": "nope"}, True, "unknown process 'nope'"),
        Step("process_output", {"name": "job", "timeout": 100000}, True, "between 0 and 600"),
        Step("process_list", {}, says="$17.run_id"),  # 21
        Step("process_list", {"history": "yes"}, True, "history: Input should be a valid boolean"),
        Step("wakes_list", {}),  # 23
        Step("wakes_list", {"session": "other"}, True, "wakes_list takes no arguments"),
        Step("wakes_drain", {}),  # 25
        Step("wakes_drain", {"x": 1}, True, "unknown argument for wakes_drain: 'x'"),
        Step("process_kill", {"run_id": "$14.run_id"}, says="was already killed"),  # 27
        Step("process_kill", {"name": "job", "grace": 0}, says="is now killed"),  # 28
        Step("process_kill", {}, True, "name the process or its run id"),
        Step("process_kill", {"run_id": "nosuch"}, True, "unknown run id 'nosuch'"),
        # issue 32: every session's presence (this very server's session is connected)
        Step("agents_list", {}, says="agent: "),
        Step("agents_list", {"x": 1}, True, "unknown argument for agents_list: 'x'"),
        # issue 45: the work-queue tools refuse in one line a room that is not a queue, and a
        # token no claim returned (their success paths: tests/test_queue_rooms.py)
        Step("task_claim", {}, True, "is not a queue; make it one with"),
        Step("task_done", {"token": "1-abc"}, True, "is not a queue"),
        Step("task_extend", {"token": "nonsense"}, True, "invalid token 'nonsense'"),
        Step("task_release", {"token": "1-abc", "x": 1}, True, "unknown argument for task_release"),
        # issue 44: what Claude Code's agents sent each other (this home has no team)
        Step("messages_list", {}, says="no messages in Claude Code's transcripts"),
        Step("messages_list", {"x": 1}, True, "unknown argument for messages_list: 'x'"),
    ]


def check(steps: list[Step], tools: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    """What every client must see, for every result. `results` hold the wire shape
    (`content`, `isError`, `structuredContent`) or `thrown` when the client library raised."""
    schemas = {t["name"]: t.get("outputSchema") for t in tools}
    assert set(schemas) == {s.tool for s in steps if s.tool}  # every tool is exercised
    for i, (step, got) in enumerate(zip(steps, results, strict=True)):
        if step.tool is None:
            continue
        where = (i, step.tool, step.args)
        assert "thrown" not in got, (where, got)  # never an opaque protocol error
        result = got["result"]
        text = "\n".join(c["text"] for c in result["content"] if c["type"] == "text")
        assert text.strip(), where
        assert bool(result.get("isError")) == step.error, (where, text)
        if step.error:
            assert "\n" not in text, (where, text)  # what went wrong, in one line
        says = step.says
        if says.startswith("$"):
            n, key = says[1:].split(".")
            says = results[int(n)]["result"]["structuredContent"][key]
        assert says in text, (where, text)
        data = result.get("structuredContent")
        if not step.error:
            assert data is not None, where
        if data is not None:
            schema = schemas[step.tool]
            assert schema is not None, where
            jsonschema.validate(data, schema)  # valid against the published schema
    # A refused ack carries its own result (counts), which is valid as well.
    assert results[4]["result"]["structuredContent"]["preserved"] == 1
    assert results[7]["result"]["structuredContent"]["preserved"] == 1


def resolve(args: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for k, v in args.items():
        if isinstance(v, str) and v.startswith("$"):
            n, key = v[1:].split(".")
            v = results[int(n)]["result"]["structuredContent"][key]
        out[k] = v
    return out


def server_command(home: Path, room: Path) -> list[str]:
    return [sys.executable, "-m", "ackdeck.core.cli", "--home", str(home), "mcp"] + [
        "--session",
        SESSION,
        "--room",
        str(room),
    ]


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")}
    env["PYTHONPATH"] = PATHS
    # messages_list reads Claude Code's transcripts: the test's own (none), never the user's.
    env["CLAUDE_CONFIG_DIR"] = str(home / "claude")
    return env


def room_in(tmp_path: Path) -> Path:
    rooms = tmp_path / "rooms"
    rooms.mkdir()
    return rooms / "inbox.txt"


# ----- the Python SDK -------------------------------------------------------------------------
async def test_every_tool_through_the_python_sdk_client(phome: Path, tmp_path: Path) -> None:
    room = room_in(tmp_path)
    steps = plan(room)
    cmd = server_command(phome, room)
    params = StdioServerParameters(
        command=cmd[0], args=cmd[1:], env=server_env(phome), cwd=str(REPO)
    )
    results: list[dict[str, Any]] = []
    async with Client(params, read_timeout_seconds=120) as client:
        info = client.server_info
        tools = [
            t.model_dump(by_alias=True, exclude_none=True)
            for t in (await client.list_tools()).tools
        ]
        for step in steps:
            if step.tool is None:
                with open(room, "ab") as f:
                    f.write(step.args["text"].encode() + b"\n")
                results.append({"appended": step.args["text"]})
                continue
            res = await client.call_tool(step.tool, resolve(step.args, results))
            results.append({"result": res.model_dump(by_alias=True, exclude_none=True)})
    assert info is not None and (info.name, info.version) == ("ackdeck", version("ackdeck"))
    check(steps, tools, results)


# ----- the TypeScript SDK and the MCP Inspector ---------------------------------------------------
def need_node(what: Path) -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the TypeScript SDK client tests need it")
    if not what.exists():
        pytest.skip(f"{what.relative_to(REPO)} is missing: run `make npm-cache`")
    return node


def drive_ts(node: str, home: Path, room: Path, steps: list[dict[str, Any]]) -> dict[str, Any]:
    cmd = server_command(home, room)
    doc = {"command": cmd[0], "args": cmd[1:], "env": server_env(home), "cwd": str(REPO)}
    out = subprocess.run(
        [node, str(REPO / "tests" / "mcp_ts" / "drive.mjs"), str(TS_SDK)],
        input=json.dumps({**doc, "steps": steps}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def ts_steps(steps: list[Step], room: Path) -> list[dict[str, Any]]:
    return [
        {"tool": s.tool, "args": s.args} if s.tool else {"append": str(room), **s.args}
        for s in steps
    ]


def test_every_tool_through_the_typescript_sdk_client(phome: Path, tmp_path: Path) -> None:
    node = need_node(TS_SDK)
    room = room_in(tmp_path)
    steps = plan(room)
    got = drive_ts(node, phome, room, ts_steps(steps, room))
    assert got["server"] == {"name": "ackdeck", "version": version("ackdeck")}
    check(steps, got["tools"], got["results"])


def test_read_external_push_ack_keeps_the_late_line_through_the_typescript_sdk(
    phome: Path, tmp_path: Path
) -> None:
    node = need_node(TS_SDK)
    room = room_in(tmp_path)
    room.write_bytes(b"one\ntwo\n")
    steps = [
        {"tool": "room_list_new", "args": {}},
        {"append": str(room), "text": "pushed while the agent worked"},
        {"tool": "room_ack", "args": {}},
        {"tool": "room_list_new", "args": {}},
    ]
    res = [r.get("result") for r in drive_ts(node, phome, room, steps)["results"]]
    assert res[0]["structuredContent"]["lines"] == ["one", "two"]
    assert (res[2]["structuredContent"]["acked"], res[2]["structuredContent"]["preserved"]) == (
        2,
        1,
    )
    assert res[3]["structuredContent"]["lines"] == ["pushed while the agent worked"]
    assert room.read_bytes() == b"pushed while the agent worked\n"


def inspector(home: Path, room: Path, *args: str) -> subprocess.CompletedProcess[str]:
    need_node(INSPECTOR)
    # As a user runs it: the session and the home from the environment (issue 19, item 4).
    env = server_env(home) | {"ACKDECK_HOME": str(home), "ACKDECK_SESSION": SESSION}
    cmd = [sys.executable, "-m", "ackdeck.core.cli", "mcp", "--room", str(room)]
    return subprocess.run(
        [str(INSPECTOR), "--cli", *cmd, *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_inspector_cli_lists_every_tool_with_plain_input_schemas(
    home: Path, tmp_path: Path
) -> None:
    out = inspector(home, room_in(tmp_path), "--method", "tools/list")
    assert out.returncode == 0, out.stderr
    tools = {t["name"]: t for t in json.loads(out.stdout)["tools"]}
    # 11, the work queue's task_claim, _done, _extend, _release, and messages_list (issue 44)
    assert len(tools) == 16
    for name, t in tools.items():
        schema = t["inputSchema"]
        assert schema["title"] == f"{name} arguments"
        assert schema["additionalProperties"] is False
        for prop in schema.get("properties", {}).values():
            assert prop["type"] in ("string", "integer", "number", "boolean", "array"), (name, prop)
            assert prop.get("description"), (name, prop)


def test_the_inspector_cli_shows_a_bad_push_argument_s_message(home: Path, tmp_path: Path) -> None:
    room = room_in(tmp_path)
    out = inspector(
        home,
        room,
        "--method",
        "tools/call",
        "--tool-name",
        "room_push",
        "--tool-arg",
        f"room={room.name}",
        "--tool-arg",
        "text=a\nb",
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["isError"] is True
    assert result["content"][0]["text"] == "a pushed line must not contain a newline"
    assert not room.exists()  # nothing was written


def test_the_inspector_cli_fills_in_integer_arguments(phome: Path, tmp_path: Path) -> None:
    # The Inspector converts `--tool-arg cooldown_ms=500` by the schema's type: with
    # `anyOf [integer, null]` it sent the string "500", which the strict argument rejected.
    out = inspector(
        phome,
        room_in(tmp_path),
        "--method",
        "tools/call",
        "--tool-name",
        "process_start",
        "--tool-arg",
        "name=ticker",
        "--tool-arg",
        'argv=["sleep", "120"]',
        "--tool-arg",
        "monitor=x",
        "--tool-arg",
        "cooldown_ms=500",
        "--tool-arg",
        "max_events=2",
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert not result.get("isError"), result
    monitor = result["structuredContent"]["monitors"][0]
    assert (monitor["cooldown_ms"], monitor["max_events"]) == (500, 2)


# ----- Claude Code ----------------------------------------------------------------------------
CLAUDE = NPM / ".bin" / "claude"


def claude(home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Claude Code's own CLI, offline: a throwaway HOME (its config lands there, nothing
    outside the test's directories is written) and its non-essential traffic off."""
    need_node(CLAUDE)
    env = server_env(home) | {
        "HOME": str(home),  # and its config under it, as a user's (not CLAUDE_CONFIG_DIR)
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    env.pop("CLAUDE_CONFIG_DIR")
    return subprocess.run(
        [str(CLAUDE), *args], env=env, cwd=project, capture_output=True, text=True, timeout=300
    )


def test_claude_code_connects_to_ackdeck_and_reports_a_misconfigured_server(
    tmp_path: Path,
) -> None:
    # `claude mcp list` starts each configured server and runs the MCP handshake with it:
    # ackdeck connects; the same server without a session (none in the environment either)
    # exits with its one-line error, which Claude Code reports as a failed server.
    project, cc_home, home = tmp_path / "project", tmp_path / "cc-home", tmp_path / "home"
    for d in (project, cc_home, home):
        d.mkdir()
    room = room_in(tmp_path)
    base = [sys.executable, "-m", "ackdeck.core.cli", "--home", str(home), "mcp"]
    good = [*base, "--session", SESSION, "--room", str(room)]
    for name, cmd in (("ackdeck", good), ("no-session", [*base, "--room", str(room)])):
        added = claude(cc_home, project, "mcp", "add", name, "--", *cmd)
        assert added.returncode == 0, added.stderr
    listed = claude(cc_home, project, "mcp", "list")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split(":", 1)[0]: line for line in listed.stdout.splitlines() if ":" in line}
    assert "Connected" in rows["ackdeck"], listed.stdout
    assert "Failed" in rows["no-session"], listed.stdout
    assert not room.exists()  # connecting read, acked and created nothing
