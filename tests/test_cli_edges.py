"""Edges of the `ackdeck` command line a new user hits first: bare commands, exit codes that
tell a timeout from an error, and one rule for every --timeout."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from core.cli import BUILTIN_COMMANDS
from tests.conftest import ACKDECK, REPO

CLI = REPO / "core" / "cli"


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ACKDECK, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )


def test_bare_ackdeck_prints_usage_once_without_a_doubled_prefix(cli_env: dict[str, str]) -> None:
    out = run(cli_env)
    assert out.returncode == 1
    assert "error: ackdeck:" not in out.stderr
    assert out.stderr.count("usage: ackdeck") == 1
    for command in ("room", "run", "output", "wakes", "mcp", "hooks", "tui", "demo", "web"):
        assert f"    {command} " in out.stderr, command


def test_a_bare_command_group_lists_its_subcommands(cli_env: dict[str, str]) -> None:
    out = run(cli_env, "room")
    assert out.returncode == 1
    assert "usage: ackdeck room" in out.stderr and "ackdeck: error" not in out.stderr
    for action in ("push", "read", "ack", "status", "wait"):
        assert f"    {action} " in out.stderr, action


def test_a_subcommand_error_names_the_subcommand_once(cli_env: dict[str, str]) -> None:
    out = run(cli_env, "room", "push")
    assert out.returncode == 1
    assert out.stderr.startswith("ackdeck: error: room push: the following arguments")
    assert out.stderr.count("\n") == 1


def test_wait_timeout_exit_code_differs_from_errors(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"")
    timed_out = run(cli_env, "room", "wait", str(room), "--session", "s", "--timeout", "0")
    assert timed_out.returncode == 124 and timed_out.stderr == ""
    # Permanent errors are 1, so `until ackdeck room wait …` can stop on them.
    a_directory = run(cli_env, "room", "wait", str(tmp_path), "--session", "s", "--timeout", "0")
    assert a_directory.returncode == 1 and a_directory.stderr.count("\n") == 1
    unknown_flag = run(cli_env, "room", "wait", str(room), "--session", "s", "--bogus")
    assert unknown_flag.returncode == 1 and unknown_flag.stderr.count("\n") == 1


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-5", "601", "100000", "soon"])
@pytest.mark.parametrize("command", ["room wait", "output"])
def test_every_timeout_follows_one_rule_with_one_line(
    tmp_path: Path, cli_env: dict[str, str], command: str, value: str
) -> None:
    args = (
        ["room", "wait", str(tmp_path / "inbox.txt"), "--session", "s"]
        if command == "room wait"
        else ["output", "build", "--session", "s"]
    )
    out = run(cli_env, *args, f"--timeout={value}")
    assert out.returncode == 1, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "timeout must be" in out.stderr
    assert not (tmp_path / "inbox.txt").exists()


def test_the_command_table_matches_what_the_modules_register() -> None:
    """main() imports only the module of the named command, so the table must be exact."""
    registered: dict[str, str] = {}
    for module in set(BUILTIN_COMMANDS.values()):
        tree = ast.parse((CLI / f"{module}.py").read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_parser"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "sub"
                and isinstance(node.args[0], ast.Constant)
            ):
                registered[node.args[0].value] = module
    assert registered == BUILTIN_COMMANDS


def test_dashboard_commands_come_from_entry_points(cli_env: dict[str, str]) -> None:
    for command in ("tui", "demo", "web"):
        out = run(cli_env, command, "--help")
        assert out.returncode == 0 and f"usage: ackdeck {command}" in out.stdout, out.stderr
