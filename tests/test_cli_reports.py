"""What `ackdeck` says when its report cannot reach the caller (stdout closed with `>&-`, a
full device), and errors found before any handler runs (a command line argparse refuses, a
session name): one line on stderr, exit 1, with --json the error shape on stdout. Real
processes running `python -m ackdeck.core.cli`, real closed descriptors and /dev/full."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ackdeck.core.base.timeouts import check_timeout
from ackdeck.core.errors import InvalidInput
from tests.helpers.cli import ackdeck
from tests.helpers.wait import eventually

FULL = "/dev/full"


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("ackdeck: error: "), proc.stderr
    return proc.stderr.removeprefix("ackdeck: error: ").rstrip("\n")


def _wake_listed(env: dict[str, str]) -> bool:
    listed = json.loads(ackdeck(env, "wakes", "list", "--session", "s", "--json").stdout)
    return any(w["lines"] for w in listed["wakes"])


@pytest.mark.parametrize("command", ["ps", "room status", "run", "wakes list"])
def test_a_text_report_into_a_closed_stdout_is_an_error(
    cli_env: dict[str, str], tmp_path: Path, command: str
) -> None:
    # With descriptor 1 closed at start, Python has no sys.stdout and print() wrote nothing:
    # these exited 0 having reported nothing.
    room = tmp_path / "r.txt"
    room.write_bytes(b"one\n")
    args = {
        "ps": ["ps"],
        "room status": ["room", "status", str(room)],
        "run": ["run", "q", "--session", "s", "--", "true"],
        "wakes list": ["wakes", "list", "--session", "s"],
    }[command]
    if command in ("ps", "wakes list"):
        # Something to list: a run whose monitor matched (a wake with a pending line).
        started = ackdeck(
            cli_env, "run", "w", "--session", "s", "--monitor", "HIT", "--", "echo", "HIT"
        )
        assert started.returncode == 0, started.stderr
        eventually(lambda: _wake_listed(cli_env), what="a wake for run w")
    line = one_error_line(ackdeck(cli_env, *args, stdout="closed"))
    assert line.endswith("stdout is closed"), line
    if command == "run":
        assert line.startswith("started q run "), line  # it did start: do not start it again


def test_a_read_into_a_closed_stdout_still_records_no_receipt(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    room = tmp_path / "r.txt"
    room.write_bytes(b"one\ntwo\n")
    for extra in ([], ["--json"]):
        proc = ackdeck(
            cli_env, "room", "read", str(room), "--session", "s", *extra, stdout="closed"
        )
        assert "no receipt was recorded" in one_error_line(proc)
        # A full disk behind the redirect, the same.
        proc = ackdeck(cli_env, "room", "read", str(room), "--session", "s", *extra, stdout=FULL)
        assert "(No space left on device); no receipt was recorded" in one_error_line(proc)
    ack = ackdeck(cli_env, "room", "ack", str(room), "--session", "s")
    assert ack.returncode == 3, ack.stderr  # refused: nothing was read
    assert room.read_bytes() == b"one\ntwo\n"


def test_a_report_lost_after_the_act_says_the_act_was_done(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    room = tmp_path / "r.txt"
    line = one_error_line(ackdeck(cli_env, "room", "push", str(room), "hi", "--json", stdout=FULL))
    assert line == (
        f"pushed 1 line to {room}, but its report could not be written: No space left on device"
    )
    assert room.read_bytes() == b"hi\n"  # appended once: a retry would duplicate it

    line = one_error_line(
        ackdeck(cli_env, "run", "sl", "--session", "s", "--", "sleep", "60", stdout=FULL)
    )
    assert line.startswith("started sl run ") and line.endswith(
        ", but its report could not be written: No space left on device"
    ), line
    listed = json.loads(ackdeck(cli_env, "ps", "--json").stdout)
    assert "running" in json.dumps(listed), listed  # the process runs

    line = one_error_line(ackdeck(cli_env, "kill", "sl", stdout=FULL))
    assert line.startswith("sl run ") and "is killed, but its report could not be written" in line
    assert "running" not in json.dumps(json.loads(ackdeck(cli_env, "ps", "--json").stdout))

    room.write_bytes(b"a\nb\n")
    assert ackdeck(cli_env, "room", "read", str(room), "--session", "s").returncode == 0
    line = one_error_line(
        ackdeck(cli_env, "room", "ack", str(room), "--session", "s", "--json", stdout=FULL)
    )
    assert line.startswith(f"acked 2 lines of {room}, but its report could not be written")
    assert room.read_bytes() == b""

    # ack --all writes its lines first (--json too): nothing written, nothing removed.
    room.write_bytes(b"a\nb\n")
    line = one_error_line(
        ackdeck(cli_env, "room", "ack", str(room), "--session", "s", "--all", "--json", stdout=FULL)
    )
    assert line.startswith("could not deliver the lines to stdout (No space left on device)")
    assert room.read_bytes() == b"a\nb\n"


def _timeout_message(value: float) -> str:
    with pytest.raises(InvalidInput) as caught:
        check_timeout(value)
    return str(caught.value)


@pytest.mark.parametrize("value", ["nan", "-1", "1e9", "inf"])
def test_a_refused_timeout_with_json_prints_the_services_error(
    cli_env: dict[str, str], value: str
) -> None:
    proc = ackdeck(cli_env, "output", "p1", "--session", "s", "--timeout", value, "--json")
    line = one_error_line(proc)
    # The message the service (and so MCP process_output) gives for the same value.
    assert line == _timeout_message(float(value))
    assert json.loads(proc.stdout) == {"error": "InvalidInput", "message": line}


def test_a_usage_error_with_json_prints_the_error_shape(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    proc = ackdeck(cli_env, "room", "wait", str(tmp_path / "r.txt"), "--bogus", "--json")
    line = one_error_line(proc)
    assert "--bogus" in line
    assert json.loads(proc.stdout) == {"error": "UsageError", "message": line}
    # Without --json: the line only. After `--` a `--json` belongs to the command run.
    plain = ackdeck(cli_env, "room", "wait", str(tmp_path / "r.txt"), "--bogus")
    assert one_error_line(plain) and plain.stdout == ""


@pytest.mark.parametrize("name", ["../x", "a/b", "n" * 300, "env:../x"])
def test_room_status_refuses_a_session_name_every_other_command_refuses(
    cli_env: dict[str, str], tmp_path: Path, name: str
) -> None:
    room = tmp_path / "r.txt"
    room.write_bytes(b"one\n")
    env = dict(cli_env)
    args = ["room", "status", str(room), "--json"]
    if name.startswith("env:"):
        env["ACKDECK_SESSION"] = name.removeprefix("env:")
    else:
        args += ["--session", name]
    proc = ackdeck(env, *args)
    line = one_error_line(proc)
    assert line.startswith("invalid session name"), line
    assert json.loads(proc.stdout) == {"error": "InvalidName", "message": line}
    # The same name is refused by read: one rule.
    read = ackdeck(env, "room", "read", str(room), *args[4:])
    assert read.returncode == 1
