"""MCP tool arguments through the SDK's own client: strict types (a destructive flag must be a
real JSON boolean), one-line errors with structured content, and no empty pushes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import ackdeck
from tests.helpers.mcp import call, connect, error_of, text_of
from tests.helpers.paths import PATHS, REPO


@pytest.mark.parametrize("flag", ["yes", "true", 1, "1"])
async def test_room_ack_all_must_be_a_real_boolean(
    home: Path, tmp_path: Path, flag: object
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\ntwo\n")
    async with connect(home, [room]) as client:
        result = await call(client, "room_ack", {"all": flag})
    assert result.is_error
    assert text_of(result) == "invalid arguments for room_ack: all: Input should be a valid boolean"
    assert error_of(result) == {
        "error": "invalid_arguments",
        "message": text_of(result),
        "problems": [{"argument": "all", "problem": "Input should be a valid boolean"}],
    }
    assert room.read_bytes() == b"one\ntwo\n"  # nothing was cleared


async def test_argument_errors_are_one_line_without_pydantic_dumps(
    home: Path, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    async with connect(home, [room]) as client:
        cases = [
            ("room_push", {"room": "inbox.txt"}),
            ("process_output", {"name": "x", "timeout": "soon"}),
            ("process_start", {"name": "x", "argv": "true"}),
            ("process_start", {"name": "x", "argv": ["true"], "cooldown_ms": "5"}),
        ]
        for tool, args in cases:
            result = await call(client, tool, args)
            text = text_of(result)
            assert result.is_error, (tool, args)
            assert "\n" not in text and "errors.pydantic.dev" not in text, text
            assert text.startswith(f"invalid arguments for {tool}: "), text
            assert error_of(result)["error"] == "invalid_arguments"
    assert not room.exists()


async def test_core_errors_carry_their_json_in_meta(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    async with connect(home, [room]) as client:
        result = await call(client, "process_output", {"name": "x", "timeout": 100000})
    assert result.is_error
    assert text_of(result) == "timeout must be between 0 and 600 seconds, got 100000"
    assert error_of(result) == {"error": "InvalidInput", "message": text_of(result)}


async def test_an_empty_push_is_rejected_over_mcp(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"kept\n")
    async with connect(home, [room]) as client:
        result = await call(client, "room_push", {"room": "inbox.txt", "text": ""})
    assert result.is_error and text_of(result) == "a pushed line must not be empty"
    assert room.read_bytes() == b"kept\n"


def test_an_empty_push_is_rejected_on_the_cli(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"kept\n")
    out = ackdeck(cli_env, "room", "push", str(room), "")
    assert out.returncode == 1
    assert out.stderr == "ackdeck: error: a pushed line must not be empty\n"
    assert room.read_bytes() == b"kept\n"


@pytest.mark.parametrize(
    ("flag", "env", "session"),
    [([], "fromenv", "fromenv"), (["--session", "flag"], "fromenv", "flag")],
)
async def test_mcp_takes_the_session_from_ackdeck_session_like_every_command(
    home: Path, tmp_path: Path, flag: list[str], env: str, session: str
) -> None:
    from mcp import Client, StdioServerParameters

    args = ["-m", "ackdeck.core.cli", "--home", str(home), "mcp", *flag]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*args, "--room", str(tmp_path / "inbox.txt")],
        env={"PYTHONPATH": PATHS, "ACKDECK_SESSION": env},
        cwd=str(REPO),
    )
    async with Client(params, read_timeout_seconds=60) as client:
        res = await client.call_tool("wakes_drain", {})
    assert text_of(res) == f"no wakes for session {session!r}"


def test_mcp_without_any_session_is_one_line_and_exit_1(home: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ACKDECK_SESSION"}
    env["PYTHONPATH"] = PATHS
    out = ackdeck(env, "--home", str(home), "mcp", "--room", str(tmp_path / "inbox.txt"), input="")
    assert out.returncode == 1
    assert out.stderr == (
        "ackdeck: error: ackdeck mcp serves one agent session: give --session S or set "
        "ACKDECK_SESSION\n"
    )
