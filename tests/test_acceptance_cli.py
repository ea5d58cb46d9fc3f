"""Black-box acceptance tests: the `ackdeck` command driven exactly as an outside grader would.

Every test runs `ackdeck …` as a real subprocess with its state in pytest's tmp_path
(`--home` or `ACKDECK_HOME`) and checks only what the contracts of issues 2, 3 and 5 promise:
commands, options, JSON keys, exit codes (0 ok, 1 error with ONE line on stderr, 3 refused cold
ack, 2 from `wakes drain --hook` when something was delivered) and the bytes left in files.
Nothing from `core` is imported: a refactor that keeps the contract must keep these green.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import ACKDECK, ackdeck, with_json
from tests.helpers.wait import eventually

# Keys the contracts name. Extra keys are allowed (additive JSON), missing ones are not.
READ_KEYS = {"lines", "start", "end", "epoch"}
ACK_KEYS = {"mode", "acked", "preserved"}
STATUS_KEYS = {"pending", "partial_bytes", "acked_total", "preserved_total", "epoch", "sessions"}
RUN_KEYS = {"name", "run_id", "pid"}
OUTPUT_KEYS = {"name", "run_id", "status", "exit_code", "lines"}
PS_KEYS = {"name", "run_id", "pid", "status", "exit_code", "started_at", "ended_at"}
DRAIN_KEYS = {"delivered", "superseded", "pending"}
DELIVERED_KEYS = {"name", "run_id", "filter", "exclude", "lines", "total_matches"}

# A regex that matches nothing (an empty class; RE2 has no `(?!)`): a filtered long-poll that
# waits for the exit.
NEVER = r"[^\s\S]"


class Cli:
    """One ackdeck installation as a user sees it: a home directory and an environment."""

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.cwd = tmp_path
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")}
        self.env["ACKDECK_HOME"] = str(self.home)

    def __call__(
        self, *args: str, timeout: float = 120, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return ackdeck({**self.env, **(env or {})}, *args, cwd=self.cwd, timeout=timeout)

    def ok(self, *args: str, **kw: Any) -> str:
        out = self(*args, **kw)
        assert out.returncode == 0, (args, out.returncode, out.stderr)
        return out.stdout

    def js(self, *args: str, **kw: Any) -> Any:
        return json.loads(self.ok(*with_json(args), **kw))

    def batch(self, *calls: list[str]) -> list[subprocess.CompletedProcess[str]]:
        """Run independent invocations at the same time (each pays an interpreter start-up)."""
        procs = [
            subprocess.Popen(
                [*ACKDECK, *args],
                env=self.env,
                cwd=self.cwd,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for args in calls
        ]
        results = []
        for args, p in zip(calls, procs, strict=True):
            out, err = p.communicate(timeout=120)
            results.append(subprocess.CompletedProcess(args, p.returncode, out, err))
        return results

    def all_fail(self, *calls: list[str], code: int = 1) -> list[str]:
        """Each call exits with `code` and exactly one non-empty stderr line; return the lines."""
        lines = []
        for out in self.batch(*calls):
            errs = out.stderr.splitlines()
            assert out.returncode == code, (out.args, out.returncode, out.stdout, out.stderr)
            assert len(errs) == 1 and errs[0].strip(), (out.args, out.stderr)
            lines.append(errs[0])
        return lines

    def fails(self, *args: str, code: int = 1, **kw: Any) -> str:
        """Assert the exit code and exactly one non-empty line on stderr; return that line."""
        out = self(*args, **kw)
        assert out.returncode == code, (args, out.returncode, out.stdout, out.stderr)
        lines = out.stderr.splitlines()
        assert len(lines) == 1 and lines[0].strip(), (args, out.stderr)
        return lines[0]

    # -- processes -------------------------------------------------------------------------

    def ps(self) -> list[dict[str, Any]]:
        runs = self.js("ps")["processes"]
        assert isinstance(runs, list)
        return runs

    def status(self, room: Path) -> dict[str, Any]:
        """`room status --json` of one room: the report's only row."""
        report = self.js("room", "status", str(room))
        assert len(report["rooms"]) == 1
        return report["rooms"][0]

    def wakes(self, session: str) -> list[dict[str, Any]]:
        return self.js("wakes", "list", "--session", session)["wakes"]

    def run_of(self, name: str) -> dict[str, Any]:
        mine = [r for r in self.ps() if r["name"] == name]
        assert mine, name
        return mine[-1]

    def wait_ended(self, name: str, deadline: float = 60) -> dict[str, Any]:
        """Block until NAME's latest run is no longer running; return the read's JSON."""
        end = time.monotonic() + deadline
        while True:
            # A filtered long-poll by a throwaway session returns at exit without showing
            # anything to the sessions under test, so it cannot influence their wake gate.
            got = self.js(
                "output",
                name,
                "--session",
                "acceptance-waiter",
                "--filter",
                NEVER,
                "--timeout",
                str(deadline),
            )
            if got["status"] != "running":
                return dict(got)
            assert time.monotonic() < end, got


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only a reaper is missing.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def append_unlocked(path: Path, line: str) -> None:
    # A shell poller that knows nothing about ackdeck: reopens the path for every write.
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$2" >> "$1"', "sh", str(path), line], check=True)


def snapshot(directory: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every regular file under a directory with inode, mtime and content."""
    result = {}
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            st = p.stat()
            result[str(p.relative_to(directory))] = (st.st_ino, st.st_mtime_ns, p.read_bytes())
    return result


# ---------------------------------------------------------------------------------------------
# Help
# ---------------------------------------------------------------------------------------------

HELP_COMMANDS = [
    [],
    ["room"],
    ["room", "push"],
    ["room", "read"],
    ["room", "ack"],
    ["room", "status"],
    ["room", "wait"],
    ["run"],
    ["output"],
    ["ps"],
    ["kill"],
    ["wakes"],
    ["wakes", "list"],
    ["wakes", "drain"],
    ["wakes", "dismiss"],
    ["mcp"],
    ["hooks"],
    ["hooks", "install"],
    ["hooks", "bootstrap"],
    ["hooks", "prompt"],
    ["hooks", "stop"],
    ["nudge"],
    ["completion"],
    ["tui"],
    ["demo"],
]


def test_help_of_every_command_exits_0_and_names_its_options(cli: Cli) -> None:
    # Started together: each is a separate interpreter start-up, so this keeps the test short.
    procs = [
        (
            cmd,
            subprocess.Popen(
                [*ACKDECK, *cmd, "--help"],
                env=cli.env,
                cwd=cli.cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
        for cmd in HELP_COMMANDS
    ]
    helps = {}
    for cmd, p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, (cmd, err)
        assert out.startswith("usage:"), (cmd, out)
        helps[" ".join(cmd)] = out
    for word in ("room", "run", "output", "ps", "kill", "wakes", "mcp", "hooks", "--home"):
        assert word in helps[""]
    expected = {
        "room push": ["--json"],
        "room read": ["--session", "--json"],
        "room ack": ["--session", "--all", "--json"],
        "room status": ["--json"],
        "room wait": ["--session", "--timeout"],
        "run": [
            "--session",
            "--monitor",
            "--exclude",
            "--cooldown-ms",
            "--max-events",
            "--cwd",
            "--json",
        ],
        "output": ["--session", "--filter", "--exclude", "--timeout", "--json"],
        "ps": ["--json"],
        "wakes drain": ["--session", "--json", "--hook"],
        "wakes list": ["--session", "--json"],
        "wakes dismiss": ["--session"],
        "hooks install": ["--settings", "--user", "--mcp-config"],
        "hooks stop": ["--session", "--room"],
        "mcp": ["--session", "--room", "--no-channel", "--notice-window-ms"],
        "nudge": [
            "--session",
            "--tmux",
            "--room",
            "--idle-ms",
            "--prompt-regex",
            "--tmux-socket",
        ],
    }
    for cmd, options in expected.items():
        for option in options:
            assert option in helps[cmd], (cmd, option)


# ---------------------------------------------------------------------------------------------
# Rooms (issue 2)
# ---------------------------------------------------------------------------------------------


def test_append_between_read_and_ack_survives(cli: Cli, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    assert cli.js("room", "push", str(room), "first")["offset"] == 0
    assert cli.js("room", "push", str(room), "second")["offset"] == 6
    got = cli.js("room", "read", str(room), "--session", "agent")
    assert READ_KEYS <= set(got)
    assert (got["lines"], got["start"], got["end"], got["epoch"]) == (["first", "second"], 0, 13, 0)
    append_unlocked(room, "late one")
    acked = cli.js("room", "ack", str(room), "--session", "agent")
    assert ACK_KEYS <= set(acked) and acked["lines"] is None
    assert (acked["mode"], acked["acked"], acked["preserved"]) == ("prefix", 2, 1)
    assert room.read_bytes() == b"late one\n"
    # Logical offsets keep growing across acks: the next push starts after everything so far.
    assert cli.js("room", "push", str(room), "pushed")["offset"] == 22
    got = cli.js("room", "read", str(room), "--session", "agent")
    assert (got["lines"], got["start"], got["end"]) == (["late one", "pushed"], 13, 29)
    acked = cli.js("room", "ack", str(room), "--session", "agent")
    assert (acked["mode"], acked["acked"], acked["preserved"]) == ("prefix", 2, 0)
    assert room.read_bytes() == b""
    st = cli.status(room)
    assert STATUS_KEYS <= set(st)
    assert (st["pending"], st["acked_total"], st["preserved_total"]) == (0, 4, 1)


def test_read_without_json_prints_the_lines_as_text(cli: Cli, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    assert cli.ok("room", "push", str(room), "hello world") == ""
    cli.ok("room", "push", str(room), "tab\there")
    assert cli.ok("room", "read", str(room), "--session", "s") == "hello world\ntab\there\n"
    # The plain read records a receipt: both lines are now in flight for session s.
    status = cli.ok("room", "status", str(room))
    assert "2 pending" in status and "s: 2 in flight, 0 unread" in status


def test_cold_ack_exits_3_writes_nothing_and_all_returns_the_lines(
    cli: Cli, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"a\nb \xff\npartial")
    before = room.stat()
    err = cli.fails("room", "ack", str(room), "--session", "s", code=3)
    assert "read" in err and "2 unread" in err  # names read-then-ack and the count
    after = room.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert room.read_bytes() == b"a\nb \xff\npartial"
    # A repeated refusal writes nothing anywhere, sidecar state included.
    settled = snapshot(tmp_path)
    cli.fails("room", "ack", str(room), "--session", "s", "--json", code=3)
    assert snapshot(tmp_path) == settled
    got = cli.js("room", "ack", str(room), "--session", "s", "--all")
    assert (got["mode"], got["acked"], got["lines"]) == ("all", 2, ["a", "b \ufffd"])
    # --all takes complete lines only: the write in progress stays.
    assert room.read_bytes() == b"partial"


def test_an_empty_read_acks_nothing_and_a_missing_room_is_never_created(
    cli: Cli, tmp_path: Path
) -> None:
    room = tmp_path / "empty.txt"
    room.write_bytes(b"")
    assert cli.js("room", "read", str(room), "--session", "s")["lines"] == []
    got = cli.js("room", "ack", str(room), "--session", "s")
    assert (got["acked"], got["preserved"]) == (0, 0)
    assert got["mode"] in {"noop", "prefix"}

    missing = tmp_path / "missing.txt"
    got = cli.js("room", "read", str(missing), "--session", "s")
    assert (got["lines"], got["start"], got["end"]) == ([], 0, 0)
    assert cli.js("room", "ack", str(missing), "--session", "s")["acked"] == 0
    assert cli.js("room", "ack", str(missing), "--session", "s", "--all")["acked"] == 0
    assert cli.status(missing)["pending"] == 0
    assert cli("room", "wait", str(missing), "--session", "s", "--timeout", "0.2").returncode == 124
    assert not missing.exists()


def test_two_sessions_with_overlapping_reads_ack_in_either_order_and_lose_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    cli.ok("room", "push", str(room), "one")
    assert cli.js("room", "read", str(room), "--session", "a")["lines"] == ["one"]
    cli.ok("room", "push", str(room), "two")
    assert cli.js("room", "read", str(room), "--session", "b")["lines"] == ["one", "two"]
    cli.ok("room", "push", str(room), "three")
    st = cli.status(room)
    counts = {n: (s["in_flight"], s["unread"]) for n, s in st["sessions"].items()}
    assert counts == {"a": (1, 2), "b": (2, 1)}
    # Each session's counts come with their ages (seconds since its read, its oldest unread).
    assert all(s["in_flight_age"] >= 0 and s["unread_age"] >= 0 for s in st["sessions"].values())
    got = cli.js("room", "ack", str(room), "--session", "b")
    assert (got["mode"], got["acked"], got["preserved"]) == ("prefix", 2, 1)
    got = cli.js("room", "ack", str(room), "--session", "a")
    assert (got["mode"], got["acked"]) == ("noop", 0)
    assert room.read_bytes() == b"three\n"
    # The other order: the shorter read acks first, the longer one drops only what remains.
    cli.ok("room", "push", str(room), "four")
    cli.js("room", "read", str(room), "--session", "a")
    cli.ok("room", "push", str(room), "five")
    cli.js("room", "read", str(room), "--session", "b")
    cli.ok("room", "push", str(room), "six")
    assert cli.js("room", "ack", str(room), "--session", "a")["acked"] == 2
    assert cli.js("room", "ack", str(room), "--session", "b")["acked"] == 1
    assert room.read_bytes() == b"six\n"


def test_foreign_rewrite_makes_the_ack_stale_and_an_identical_late_line_survives(
    cli: Cli, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    cli.ok("room", "push", str(room), "old")
    cli.ok("room", "read", str(room), "--session", "a")
    cli.ok("room", "ack", str(room), "--session", "a")
    cli.ok("room", "push", str(room), "ping")
    assert cli.js("room", "read", str(room), "--session", "a")["lines"] == ["ping"]
    # Someone else replaces the file; a new, identical "ping" is now the only line.
    tmp = tmp_path / "rewrite.tmp"
    tmp.write_bytes(b"ping\n")
    os.replace(tmp, room)
    got = cli.js("room", "ack", str(room), "--session", "a")
    assert (got["mode"], got["acked"]) == ("stale", 0)
    assert room.read_bytes() == b"ping\n"
    st = cli.status(room)
    assert st["epoch"] == 1 and st["acked_total"] == 1 and st["pending"] == 1
    got = cli.js("room", "read", str(room), "--session", "a")
    assert (got["lines"], got["epoch"]) == (["ping"], 1)
    assert cli.js("room", "ack", str(room), "--session", "a")["mode"] == "prefix"
    assert room.read_bytes() == b""


def test_partial_line_bytes_and_mode_are_kept_exactly(cli: Cli, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"x\r\ty\n\xff\xfe\nnext\nparti")
    room.chmod(0o640)
    got = cli.js("room", "read", str(room), "--session", "s")
    assert got["lines"] == ["x\r\ty", "\ufffd\ufffd", "next"]
    st = cli.status(room)
    assert (st["pending"], st["partial_bytes"]) == (3, 5)
    room.write_bytes(room.read_bytes() + b"al\nlate \xc3")  # the partial line completes
    got = cli.js("room", "ack", str(room), "--session", "s")
    assert (got["mode"], got["acked"], got["preserved"]) == ("prefix", 3, 1)
    assert room.read_bytes() == b"partial\nlate \xc3"
    assert room.stat().st_mode & 0o777 == 0o640


def test_a_symlinked_sidecar_is_refused_and_nothing_is_written(cli: Cli, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".inbox.txt.ackdeck").symlink_to(elsewhere)
    for line in cli.all_fail(
        ["room", "read", str(room), "--session", "s"],
        ["room", "push", str(room), "two"],
        ["room", "ack", str(room), "--session", "s", "--all"],
    ):
        assert "symlink" in line, line
    assert list(elsewhere.iterdir()) == [] and room.read_bytes() == b"one\n"


BAD_SESSIONS = ["a/b", "..", "", "x" * 129, "a b", "nul\x01", "caf\u00e9"]


def test_invalid_session_names_fail_with_one_line_and_touch_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"keep\n")
    before = snapshot(tmp_path)
    calls = [["room", "read", str(room), "--session", bad] for bad in BAD_SESSIONS]
    calls += [
        ["room", *action[:1], str(room), "--session", "a/b", *action[1:]]
        for action in (["ack"], ["ack", "--all"], ["wait", "--timeout", "0"])
    ]
    for line in cli.all_fail(*calls):
        assert "session" in line, line
    assert snapshot(tmp_path) == before
    assert room.read_bytes() == b"keep\n"
    # The longest valid name and every allowed character class work.
    good = cli.batch(
        *[
            ["room", "read", str(room), "--session", name, "--json"]
            for name in ["x" * 128, "A-z_0.9@host"]
        ]
    )
    assert [json.loads(g.stdout)["lines"] for g in good] == [["keep"], ["keep"]]


def test_push_rejects_newlines_and_bad_rooms_with_one_line(cli: Cli, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    cli.ok("room", "push", str(room), "fine")
    lines = cli.all_fail(
        *[["room", "push", str(room), bad] for bad in ["two\nlines", "trailing\n", "cr\r\nlf"]],
        # NUL cannot travel in argv (the OS refuses it); the MCP test below covers it.
        ["room", "push", str(tmp_path / "no-such-dir" / "r.txt"), "x"],
        ["room", "read", str(tmp_path), "--session", "s"],
        ["room", "push", str(tmp_path), "x"],
    )
    for line in lines[:3]:
        assert "newline" in line.lower(), line
    assert room.read_bytes() == b"fine\n"
    assert not (tmp_path / "no-such-dir").exists()


def test_wait_exits_0_on_unread_lines_and_124_on_timeout(cli: Cli, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    cli.ok("room", "push", str(room), "one")
    assert cli("room", "wait", str(room), "--session", "s", "--timeout", "5").returncode == 0
    cli.ok("room", "read", str(room), "--session", "s")
    started = time.monotonic()
    out = cli("room", "wait", str(room), "--session", "s", "--timeout", "0.3")
    assert out.returncode == 124 and time.monotonic() - started >= 0.3
    # A blocked wait returns as soon as another process pushes, well before its timeout.
    waiter = subprocess.Popen(
        [*ACKDECK, "room", "wait", str(room), "--session", "s", "--timeout", "30"],
        env=cli.env,
        cwd=cli.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(0.5)  # let it start watching; correctness does not depend on this
        assert waiter.poll() is None
        started = time.monotonic()
        append_unlocked(room, "two")
        assert waiter.wait(timeout=60) == 0
        assert time.monotonic() - started < 20
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    # An ack renames over the file; a wait started afterwards still sees new lines.
    cli.ok("room", "read", str(room), "--session", "s")
    cli.ok("room", "ack", str(room), "--session", "s")
    cli.ok("room", "push", str(room), "three")
    assert cli("room", "wait", str(room), "--session", "s", "--timeout", "5").returncode == 0


# ---------------------------------------------------------------------------------------------
# Processes, output reads and wakes (issue 3)
# ---------------------------------------------------------------------------------------------


def test_run_output_ps_shapes_exit_code_and_final_fragment(cli: Cli, tmp_path: Path) -> None:
    started = cli.js("run", "p", "--", "sh", "-c", "echo one; echo two >&2; printf tail; exit 3")
    assert set(started) >= RUN_KEYS and started["name"] == "p"
    assert isinstance(started["pid"], int) and started["run_id"]
    cli.wait_ended("p")
    row = cli.run_of("p")
    assert set(row) >= PS_KEYS
    assert (row["run_id"], row["status"], row["exit_code"]) == (started["run_id"], "exited", 3)
    assert row["ended_at"] >= row["started_at"]
    got = cli.js("output", "p", "--session", "s")
    assert set(got) >= OUTPUT_KEYS
    assert (got["name"], got["run_id"], got["status"], got["exit_code"]) == (
        "p",
        started["run_id"],
        "exited",
        3,
    )
    # stdout and stderr both land in the log; the unterminated tail becomes a line at exit.
    assert got["lines"] == ["one", "two", "tail"]
    assert cli.js("output", "p", "--session", "s")["lines"] == []  # its cursor moved
    assert cli.js("output", "p", "--session", "other")["lines"] == ["one", "two", "tail"]
    text = cli("output", "p", "--session", "third")
    assert text.returncode == 0 and text.stdout == "one\ntwo\ntail\n"


def test_cwd_and_home_flag(cli: Cli, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    other_home = tmp_path / "other-home"
    cli.ok("--home", str(other_home), "run", "w", "--cwd", str(workdir), "--", "pwd")
    # --home wins over ACKDECK_HOME: the default home has no runs.
    assert cli.ps() == []
    eventually(
        lambda: (
            (rows := json.loads(cli.ok("--home", str(other_home), "ps", "--json"))["processes"])
            and rows[0]["status"] != "running"
        ),
        what="the run in the other home to end",
    )
    got = json.loads(cli.ok("--home", str(other_home), "output", "w", "--session", "s", "--json"))
    assert got["lines"] == [str(workdir)]


def test_invalid_regex_and_unstartable_commands_start_nothing(cli: Cli, tmp_path: Path) -> None:
    cases = [
        ["run", "r1", "--monitor", "(", "--", "sh", "-c", f"touch {tmp_path}/ran1"],
        ["run", "r2", "--", str(tmp_path / "no-such-program")],
        [
            "run",
            "r3",
            "--cwd",
            str(tmp_path / "no-such-dir"),
            "--",
            "sh",
            "-c",
            f"touch {tmp_path}/ran3",
        ],
        ["run", "bad/name", "--", "sh", "-c", f"touch {tmp_path}/ran4"],
        ["run", "r5", "--session", "bad/session", "--", "sh", "-c", f"touch {tmp_path}/ran5"],
    ]
    (tmp_path / "not-executable").write_text("#!/bin/sh\ntouch ran6\n")
    cases.append(["run", "r6", "--", str(tmp_path / "not-executable")])
    # Reads and kills of unknown processes are clear errors too.
    cases += [["output", "nope", "--session", "s"], ["kill", "nope"]]
    cli.all_fail(*cases)
    assert cli.ps() == []
    assert not list(tmp_path.glob("ran*"))
    cli.ok("run", "ok", "--", "true")
    cli.all_fail(
        ["output", "ok", "--session", "s", "--filter", "("],
        ["output", "ok", "--session", "bad/session"],
    )


def test_patterns_re2_cannot_run_are_refused_by_name_and_start_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    cmd = ["--", "sh", "-c", f"touch {marker}"]
    backref, lookahead = cli.all_fail(
        ["run", "b", "--monitor", r"(a)\1", *cmd],
        ["run", "l", "--monitor", "(?=x)", *cmd],
    )
    assert r"backreference \1 is not supported" in backref, backref
    assert "lookahead (?=...) is not supported" in lookahead, lookahead
    assert cli.ps() == [] and not marker.exists()
    cli.ok("run", "ok", "--", "echo", "hello")
    cli.wait_ended("ok")
    (refused,) = cli.all_fail(["output", "ok", "--session", "s", "--filter", "(?<=a)b"])
    assert "lookbehind (?<=...) is not supported" in refused, refused
    # The refused read consumed nothing: the session's next read still gets the line.
    assert cli.js("output", "ok", "--session", "s")["lines"] == ["hello"]


def test_signal_exits_report_128_plus_n_and_kill_takes_the_group(cli: Cli) -> None:
    # Four runs started at the same time also check that concurrent starts do not collide.
    started = cli.batch(
        ["run", "selfkill", "--", "sh", "-c", "kill -KILL $$"],
        ["run", "selfterm", "--", "sh", "-c", "kill -TERM $$"],
        # A command with a background child: kill must reach the whole process group.
        ["run", "group", "--", "sh", "-c", "sleep 30 & echo child $!; wait"],
        # A command that ignores TERM gets KILL after the grace period.
        ["run", "stubborn", "--", "sh", "-c", "trap '' TERM; echo ready; sleep 30"],
    )
    assert [s.returncode for s in started] == [0, 0, 0, 0], [s.stderr for s in started]
    reads = cli.batch(
        *[
            ["output", n, "--session", "w", "--filter", NEVER, "--timeout", "60", "--json"]
            for n in ("selfkill", "selfterm")
        ],
        *[
            ["output", n, "--session", "s", "--timeout", "60", "--json"]
            for n in ("group", "stubborn")
        ],
    )
    selfkill, selfterm, group, stubborn = (json.loads(r.stdout) for r in reads)
    assert (selfkill["status"], selfkill["exit_code"]) == ("killed", 128 + signal.SIGKILL)
    assert (selfterm["status"], selfterm["exit_code"]) == ("killed", 128 + signal.SIGTERM)
    assert stubborn["lines"] == ["ready"]
    child = int(group["lines"][0].split()[1])
    assert pid_alive(child)
    kills = cli.batch(["kill", "group", "--json"], ["kill", "stubborn", "--grace", "0.3", "--json"])
    assert [json.loads(k.stdout)["status"] for k in kills] == ["killed", "killed"]
    rows = {r["name"]: r for r in cli.ps()}
    assert (rows["group"]["status"], rows["group"]["exit_code"]) == (
        "killed",
        128 + signal.SIGTERM,
    )
    assert (rows["stubborn"]["status"], rows["stubborn"]["exit_code"]) == (
        "killed",
        128 + signal.SIGKILL,
    )
    assert not pid_alive(rows["stubborn"]["pid"])
    eventually(lambda: not pid_alive(child))


def test_output_filter_exclude_and_timeout(cli: Cli, tmp_path: Path) -> None:
    go = tmp_path / "go"
    cli.ok(
        "run",
        "srv",
        "--cwd",
        str(tmp_path),
        "--",
        "sh",
        "-c",
        "echo boot; echo MATCH one; echo noise; "
        "while [ ! -e go ]; do sleep 0.05; done; echo late; sleep 30",
    )
    try:
        # A filtered read waits until a kept line exists, then returns only kept lines.
        got = cli.js("output", "srv", "--session", "f", "--filter", "MATCH", "--timeout", "60")
        assert (got["lines"], got["status"], got["exit_code"]) == (["MATCH one"], "running", None)
        got, text = cli.batch(
            [
                "output",
                "srv",
                "--session",
                "x",
                "--filter",
                "MATCH",
                "--exclude",
                "--json",
                "--timeout",
                "60",
            ],
            ["output", "srv", "--session", "t", "--timeout", "60"],
        )
        assert json.loads(got.stdout)["lines"] == ["boot", "noise"]
        assert text.stdout == "boot\nMATCH one\nnoise\n"
        # With nothing new, a read waits for its timeout and returns no lines; lines a filtered
        # read dropped are consumed by that reader's cursor, so they do not come back.
        started = time.monotonic()
        got = cli.js("output", "srv", "--session", "f", "--timeout", "0.5")
        assert (got["lines"], got["status"]) == ([], "running")
        assert time.monotonic() - started >= 0.5
        # A long-poll returns as soon as new output arrives, long before its timeout.
        poller = subprocess.Popen(
            [*ACKDECK, "output", "srv", "--session", "t", "--timeout", "240", "--json"],
            env=cli.env,
            cwd=cli.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        go.touch()
        started = time.monotonic()
        out, err = poller.communicate(timeout=280)
        assert poller.returncode == 0, err
        assert json.loads(out)["lines"] == ["late"] and time.monotonic() - started < 120
    finally:
        cli.ok("kill", "srv", "--grace", "0.5")
    # Once the process has ended, a long-poll returns at once, with the status.
    started = time.monotonic()
    got = cli.js("output", "srv", "--session", "t", "--timeout", "240", timeout=280)
    assert got["status"] == "killed" and time.monotonic() - started < 120


def test_a_monitor_wake_is_gated_by_what_the_session_was_shown(cli: Cli) -> None:
    monitored = ["--session", "ag", "--monitor", "ERROR", "--cooldown-ms", "50"]
    cli.ok("run", "shown", *monitored, "--", "sh", "-c", "echo ok; echo ERROR one; echo fine")
    cli.ok("run", "skipped", *monitored, "--", "sh", "-c", "echo ok; echo ERROR two; echo fine")
    cli.ok("run", "unread", *monitored, "--", "sh", "-c", "echo ERROR three; echo ERROR four")
    cli.batch(
        *[
            ["output", name, "--session", "waiter", "--filter", NEVER, "--timeout", "60"]
            for name in ("shown", "skipped", "unread")
        ]
    )
    assert {r["status"] for r in cli.ps()} == {"exited"}
    # The agent reads all of "shown" and only non-matching lines of "skipped".
    assert "ERROR one" in cli.js("output", "shown", "--session", "ag")["lines"]
    assert cli.js("output", "skipped", "--session", "ag", "--filter", "fine")["lines"] == ["fine"]
    # Another session reading "unread" does not suppress ag's wake.
    assert "ERROR three" in cli.js("output", "unread", "--session", "owner")["lines"]

    got = cli.js("wakes", "drain", "--session", "ag")
    assert set(got) >= DRAIN_KEYS
    by_name = {d["name"]: d for d in got["delivered"]}
    assert "shown" not in by_name
    for d in got["delivered"]:
        assert set(d) >= DELIVERED_KEYS
    assert by_name["skipped"]["lines"] == ["ERROR two"]
    assert (by_name["skipped"]["filter"], by_name["skipped"]["exclude"]) == ("ERROR", False)
    assert by_name["skipped"]["total_matches"] == 1
    assert by_name["unread"]["lines"] == ["ERROR three", "ERROR four"]
    assert by_name["unread"]["run_id"] == cli.run_of("unread")["run_id"]
    assert got["superseded"] >= 1 and got["pending"] == 0
    # Delivered exactly once.
    again = cli.js("wakes", "drain", "--session", "ag")
    assert again["delivered"] == [] and again["pending"] == 0


def test_drain_hook_exits_2_with_the_text_then_0(cli: Cli) -> None:
    assert cli("wakes", "drain", "--session", "ag", "--hook").returncode == 0
    cli.ok(
        "run",
        "job",
        "--session",
        "ag",
        "--monitor",
        "FAIL",
        "--",
        "sh",
        "-c",
        "echo FAIL: disk full",
    )
    cli.wait_ended("job")
    out = cli("wakes", "drain", "--session", "ag", "--hook")
    assert out.returncode == 2, out.stderr
    assert "FAIL: disk full" in out.stdout + out.stderr
    again = cli("wakes", "drain", "--session", "ag", "--hook")
    assert again.returncode == 0 and "FAIL" not in again.stdout + again.stderr


def test_inverted_monitor_burst_coalescing_and_max_events(cli: Cli) -> None:
    cli.ok(
        "run",
        "inv",
        "--session",
        "ag",
        "--monitor",
        "^ok",
        "--exclude",
        "--",
        "sh",
        "-c",
        "echo ok 1; echo broken; echo ok 2",
    )
    # Three matches in one burst form one event; max-events 1 then stops the monitor, not the
    # process, which goes on to print "done" and exit 0.
    cli.ok(
        "run",
        "burst",
        "--session",
        "ag",
        "--monitor",
        "E",
        "--cooldown-ms",
        "300",
        "--max-events",
        "1",
        "--",
        "sh",
        "-c",
        # One write: the burst cannot be split across cooldown windows by a slow scheduler.
        "printf 'E1\\nE2\\nE3\\n'; while [ ! -e burst-go ]; do sleep 0.05; done; "
        "echo E4; echo done",
    )
    # E4 comes only once the first event (E1-E3) was flushed, however slow the machine is.
    eventually(lambda: any(r["name"] == "burst" for r in cli.wakes("ag")))
    (cli.cwd / "burst-go").touch()
    assert cli.wait_ended("inv")["exit_code"] == 0
    row = cli.wait_ended("burst")
    assert (row["status"], row["exit_code"]) == ("exited", 0)
    assert cli.js("output", "burst", "--session", "owner")["lines"][-1] == "done"
    by_name = {d["name"]: d for d in cli.js("wakes", "drain", "--session", "ag")["delivered"]}
    assert by_name["inv"]["lines"] == ["broken"] and by_name["inv"]["exclude"] is True
    assert by_name["burst"]["lines"] == ["E1", "E2", "E3"]


def test_wakes_list_and_dismiss(cli: Cli) -> None:
    cli.ok("run", "job", "--session", "ag", "--monitor", "WARN", "--", "sh", "-c", "echo WARN x")
    cli.wait_ended("job")
    records = cli.wakes("ag")
    assert isinstance(records, list) and len(records) == 1
    assert "WARN x" in json.dumps(records[0])
    assert cli.wakes("someone-else") == []
    cli.ok("wakes", "dismiss", "--session", "ag", "job")
    assert cli.wakes("ag") == []
    assert cli.js("wakes", "drain", "--session", "ag")["delivered"] == []
    line = cli.fails("wakes", "dismiss", "--session", "ag", "job")
    assert "job" in line
    for action in (["list"], ["drain"], ["dismiss", "job"]):
        cli.fails("wakes", *action, "--session", "bad/session")


def is_wake_of(path: Path, name: str) -> bool:
    try:
        data = json.loads(path.read_bytes())
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("name") == name and "total_matches" in data


def test_a_corrupted_wake_file_is_skipped_kept_and_reported(cli: Cli) -> None:
    cli.ok("run", "good", "--session", "ag", "--monitor", "HIT", "--", "sh", "-c", "echo HIT")
    cli.ok("run", "bad", "--session", "ag", "--monitor", "HIT", "--", "sh", "-c", "echo HIT")
    cli.batch(
        *[
            ["output", n, "--session", "w", "--filter", NEVER, "--timeout", "60"]
            for n in ("good", "bad")
        ]
    )
    # Found by content, not by path: the layout under the home is not part of the contract.
    records = [p for p in cli.home.rglob("*.json") if is_wake_of(p, "bad")]
    assert len(records) == 1, records
    records[0].write_bytes(b"{ not json")
    listed = cli("wakes", "list", "--session", "ag", "--json")
    names = [r["name"] for r in json.loads(listed.stdout)["wakes"]]
    assert listed.returncode == 0 and names == ["good"]
    assert json.loads(listed.stdout)["skipped"] == [str(records[0])]  # named in the JSON too
    assert str(records[0]) in listed.stderr or "bad" in listed.stderr
    drained = cli("wakes", "drain", "--session", "ag", "--json")
    assert drained.returncode == 0 and drained.stderr.strip()
    assert [d["name"] for d in json.loads(drained.stdout)["delivered"]] == ["good"]
    assert records[0].read_bytes() == b"{ not json"


def test_a_corrupted_ledger_gives_one_line_and_loses_nothing(cli: Cli, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    cli.ok("room", "push", str(room), "one")
    cli.ok("room", "read", str(room), "--session", "s")
    sidecar = tmp_path / ".inbox.txt.ackdeck"
    state = [p for p in sidecar.iterdir() if p.is_file() and p.stat().st_size > 0]
    assert state, list(sidecar.iterdir())
    for p in state:
        p.write_bytes(b"garbage")
    cli.all_fail(["room", "ack", str(room), "--session", "s"], ["room", "status", str(room)])
    assert room.read_bytes() == b"one\n"
    assert all(p.read_bytes() == b"garbage" for p in state)  # left in place for the owner


def test_default_session_comes_from_the_environment(cli: Cli) -> None:
    env = {"ACKDECK_SESSION": "from-env"}
    cli.ok("run", "job", "--monitor", "HIT", "--", "sh", "-c", "echo HIT", env=env)
    cli.wait_ended("job")
    assert len(cli.wakes("from-env")) == 1
    got = json.loads(cli.ok("wakes", "drain", "--json", env=env))
    assert [d["lines"] for d in got["delivered"]] == [["HIT"]]


def test_a_reused_name_keeps_runs_apart(cli: Cli) -> None:
    monitored = ["--session", "ag", "--monitor", "ERR"]
    first = cli.js("run", "job", *monitored, "--", "sh", "-c", "echo ERR old")
    cli.wait_ended("job")
    second = cli.js("run", "job", *monitored, "--", "sh", "-c", "echo ERR new")
    cli.wait_ended("job")
    assert first["run_id"] != second["run_id"]
    assert [r["run_id"] for r in cli.ps() if r["name"] == "job"] == [
        first["run_id"],
        second["run_id"],
    ]
    # Reading the new run (the default) never suppresses the old run's wake.
    assert cli.js("output", "job", "--session", "ag")["lines"] == ["ERR new"]
    # The earlier run stays addressable by its run id.
    older = cli.js("output", "job", "--session", "owner", "--run-id", first["run_id"])
    assert (older["run_id"], older["lines"]) == (first["run_id"], ["ERR old"])
    got = cli.js("wakes", "drain", "--session", "ag")
    lines = [x for d in got["delivered"] for x in d["lines"]]
    assert "ERR old" in lines and "ERR new" not in lines


def test_a_lost_supervisor_is_reported_and_kill_still_reaches_the_command(cli: Cli) -> None:
    started = cli.js("run", "orphan", "--session", "ag", "--monitor", "X", "--", "sleep", "30")
    pid = started["pid"]
    assert cli.run_of("orphan")["status"] == "running"
    supervisor = int(Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[1])
    assert supervisor != os.getpid()
    os.kill(supervisor, signal.SIGKILL)
    eventually(lambda: cli.run_of("orphan")["status"] == "lost")
    got = cli.js("wakes", "drain", "--session", "ag")
    assert [d["name"] for d in got["delivered"]] == ["orphan"]
    assert got["delivered"][0].get("kind", "monitor-lost") == "monitor-lost"
    cli.ok("kill", "orphan", "--grace", "0.5")
    eventually(lambda: not pid_alive(pid))


# ---------------------------------------------------------------------------------------------
# Hooks and MCP (issue 5)
# ---------------------------------------------------------------------------------------------


def test_hooks_install_creates_keeps_other_keys_is_idempotent_and_backs_up(
    cli: Cli, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh" / "settings.json"
    fresh.parent.mkdir()
    cli.ok("hooks", "install", "--settings", str(fresh), "--session", "agent")
    data = json.loads(fresh.read_text())
    commands = json.dumps(data["hooks"])
    # Issue 13: the Stop hook is `hooks stop` (it reads the hook JSON and also reports room
    # lines that arrived mid-turn); it replaces the older `wakes drain --hook`.
    assert "hooks stop" in commands and "--session agent" in commands
    assert set(data["hooks"]) >= {"SessionStart", "Stop"}
    settled = fresh.read_bytes()
    cli.ok("hooks", "install", "--settings", str(fresh), "--session", "agent")
    assert fresh.read_bytes() == settled

    existing = tmp_path / "settings.json"
    other_hook = {"type": "command", "command": "echo mine"}
    original = {"model": "x", "hooks": {"Stop": [{"hooks": [other_hook]}]}}
    existing.write_text(json.dumps(original))
    cli.ok("hooks", "install", "--settings", str(existing), "--session", "agent")
    data = json.loads(existing.read_text())
    assert data["model"] == "x" and "echo mine" in json.dumps(data["hooks"]["Stop"])
    assert "hooks stop" in json.dumps(data["hooks"]["Stop"])
    backups = [
        p for p in tmp_path.iterdir() if p.name.startswith("settings.json") and p != existing
    ]
    assert backups and json.loads(backups[0].read_text()) == original
    cli.fails("hooks", "install", "--settings", str(existing), "--session", "bad/session")


async def test_mcp_server_over_stdio_keeps_the_consumed_only_contract(
    cli: Cli, tmp_path: Path
) -> None:
    from mcp import Client, StdioServerParameters

    room = tmp_path / "inbox.txt"
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret\n")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "ackdeck.core.cli",
            "--home",
            str(cli.home),
            "mcp",
            "--session",
            "agent",
            "--room",
            str(room),
        ],
        env=cli.env,
        cwd=str(tmp_path),
    )

    def text(result: Any) -> str:
        return " ".join(getattr(block, "text", "") for block in result.content)

    async with Client(params, read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names >= {
            "room_list_new",
            "room_ack",
            "room_push",
            "room_status",
            "process_start",
            "process_output",
            "wakes_drain",
        }
        pushed = await client.call_tool("room_push", {"room": str(room), "text": "hello"})
        assert not pushed.is_error, text(pushed)
        bad = await client.call_tool("room_push", {"room": str(room), "text": "a\x00b"})
        assert bad.is_error and "\n" not in text(bad).strip()
        cold = await client.call_tool("room_ack", {})
        assert "1 unread" in text(cold) and "room_list_new" in text(cold)
        assert room.read_bytes() == b"hello\n"
        listed = await client.call_tool("room_list_new", {})
        assert "hello" in text(listed)
        append_unlocked(room, "late")
        acked = await client.call_tool("room_ack", {})
        assert not acked.is_error, text(acked)
        assert room.read_bytes() == b"late\n"
        foreign = await client.call_tool("room_list_new", {"room": str(outside)})
        assert foreign.is_error
    assert outside.read_bytes() == b"secret\n"


def test_usage_errors_exit_1_with_one_line(cli: Cli, tmp_path: Path) -> None:
    # Issue 2: "Exit codes: 0 ok, 1 error (one clear line on stderr)"; DESIGN "Bad input and
    # faults": every bad input gets a clear one-line error. argparse's own errors would exit 2
    # with a usage block, and exit 2 is what `wakes drain --hook` uses for "a wake was delivered".
    room = str(tmp_path / "inbox.txt")
    cli.all_fail(
        ["room", "read"],  # missing ROOM (a missing --session is the `default` session now)
        ["room", "read", room, "--sesion", "s"],  # a mistyped option (issue 23: did you mean)
        ["room", "wait", room, "--session", "s", "--timeout", "abc"],
        ["wakes", "drain", "--hook", "--session"],  # a broken Stop hook must not look like a wake
        ["output"],
        ["no-such-command"],
        ["run", "n", "--cooldown-ms", "x", "--", "true"],
    )
