"""Edges of the `ackdeck` command line a new user hits first: bare commands, exit codes that
tell a timeout from an error, and one rule for every --timeout."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from ackdeck.core.cli._parsers import BUILTIN_COMMANDS
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.paths import PKG, REPO

CLI = PKG / "core" / "cli"


def test_bare_ackdeck_prints_usage_once_without_a_doubled_prefix(cli_env: dict[str, str]) -> None:
    out = ackdeck(cli_env)
    assert out.returncode == 1
    assert "error: ackdeck:" not in out.stderr
    assert out.stderr.count("usage: ackdeck") == 1
    for command in ("room", "run", "output", "wakes", "mcp", "hooks", "tui", "demo", "web"):
        assert f"    {command} " in out.stderr, command


def test_a_bare_command_group_lists_its_subcommands(cli_env: dict[str, str]) -> None:
    out = ackdeck(cli_env, "room")
    assert out.returncode == 1
    assert "usage: ackdeck room" in out.stderr and "ackdeck: error" not in out.stderr
    for action in ("push", "read", "ack", "status", "wait"):
        assert f"    {action} " in out.stderr, action


def test_a_subcommand_error_names_the_subcommand_once(cli_env: dict[str, str]) -> None:
    out = ackdeck(cli_env, "room", "push")
    assert out.returncode == 1
    assert out.stderr.startswith("ackdeck: error: room push: the following arguments")
    assert out.stderr.count("\n") == 1


def test_wait_timeout_exit_code_differs_from_errors(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"")
    timed_out = ackdeck(cli_env, "room", "wait", str(room), "--session", "s", "--timeout", "0")
    assert timed_out.returncode == 124 and timed_out.stderr == ""
    # Permanent errors are 1, so `until ackdeck room wait …` can stop on them.
    a_directory = ackdeck(
        cli_env, "room", "wait", str(tmp_path), "--session", "s", "--timeout", "0"
    )
    assert a_directory.returncode == 1 and a_directory.stderr.count("\n") == 1
    unknown_flag = ackdeck(cli_env, "room", "wait", str(room), "--session", "s", "--bogus")
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
    out = ackdeck(cli_env, *args, f"--timeout={value}")
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
        out = ackdeck(cli_env, command, "--help")
        assert out.returncode == 0 and f"usage: ackdeck {command}" in out.stdout, out.stderr


def test_a_push_whose_json_report_cannot_be_written_says_so_in_one_line(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    # `>&-`: the push lands (it is the producer's write), but its report cannot be written.
    room = tmp_path / "r.txt"
    proc = ackdeck(cli_env, "room", "push", str(room), "hello", "--json", stdout="closed")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("ackdeck: error:")
    # It says the push happened (a producer retrying on exit 1 would duplicate the line).
    assert f"pushed 1 line to {room}, but its report could not be written" in proc.stderr
    assert proc.stderr.endswith(": stdout is closed\n"), proc.stderr
    assert room.read_bytes() == b"hello\n"


def test_a_json_ack_all_into_a_reader_that_left_is_not_silent(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    room = tmp_path / "r.txt"
    room.write_bytes(b"".join(b"note %d\n" % i for i in range(20000)))
    proc = subprocess.run(
        ["sh", "-c", f'{" ".join(ACKDECK)} room ack "{room}" --session s --all --json | true'],
        env=cli_env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # 20,000 lines of JSON do not fit a pipe buffer, so the writer always meets the closed end.
    assert proc.stderr.count("\n") == 1 and "broken pipe" in proc.stderr, proc.stderr


def test_seconds_set_in_the_environment_follow_one_rule() -> None:
    """ACKDECK_REDIS_TIMEOUT and ACKDECK_NOTICE_RESCAN_S are read by one function: unset is the
    default, and text, nan, inf or a value out of range is one line naming the variable."""
    import pytest

    from ackdeck.core.errors import InvalidInput
    from ackdeck.core.service.noticer import RESCAN_ENV, RESCAN_S, rescan_interval

    assert rescan_interval({}) == RESCAN_S
    assert rescan_interval({RESCAN_ENV: "2.5"}) == 2.5
    for bad in ("soon", "nan", "inf", "0", "-1", "1e9"):
        with pytest.raises(InvalidInput) as err:
            rescan_interval({RESCAN_ENV: bad})
        assert RESCAN_ENV in str(err.value) and "\n" not in str(err.value)
