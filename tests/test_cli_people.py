"""Issue 23: the CLI's first minute, as a person meets it, through real subprocesses.

1. a room that does not exist yet is empty and says so, in core's words, on every door;
2. results read as plain sentences, each fact once; a push on a terminal says where it went;
3. did-you-mean for mistyped commands, subcommands and options;
4. --home / --json before or after the command; one default session for every command;
5. `ackdeck completion bash|zsh|fish`, asked for completions by the real shells.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ackdeck.core.rooms.absent import NOT_YET, absent_note
from tests.helpers.cli import ACKDECK, ackdeck, ackdeck_ok

NOTE_TAIL = " (an empty room until the first line is pushed)"


# ----- 1. a room that does not exist yet ------------------------------------------------------
def test_a_mistyped_room_is_an_empty_room_that_names_its_neighbour(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    (tmp_path / "inbox.txt").write_bytes(b"waiting\n")
    typo = str(tmp_path / "inbxo.txt")
    line = f"inbxo.txt {NOT_YET}{NOTE_TAIL}; did you mean inbox.txt?\n"
    for args in (
        ["room", "read", typo, "--session", "a"],
        ["room", "ack", typo, "--session", "a"],
        ["room", "wait", typo, "--session", "a", "--timeout", "0"],
    ):
        out = ackdeck(cli_env, *args)
        # Empty, not an error: exit 0 (wait: its timeout, 124), nothing on stdout, one line.
        assert out.returncode == (124 if "wait" in args else 0), out.stderr
        assert out.stdout == ""
        assert out.stderr.endswith(line) and out.stderr.count("\n") == 1, out.stderr
    out = ackdeck_ok(cli_env, "room", "status", typo)
    assert out.stderr == line and out.stdout.startswith(f"{typo}: 0 pending")
    # Nothing was created by asking: not the room, not a sidecar.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "inbox.txt"]
    assert (tmp_path / "inbox.txt").read_bytes() == b"waiting\n"


def test_json_carries_the_note_as_a_field_and_stderr_stays_quiet(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    (tmp_path / "inbox.txt").touch()
    typo = str(tmp_path / "inbox.tx")
    note = f"inbox.tx {NOT_YET}{NOTE_TAIL}; did you mean inbox.txt?"
    read = ackdeck(cli_env, "room", "read", typo, "--session", "a", "--json")
    ack = ackdeck(cli_env, "room", "ack", typo, "--session", "a", "--json")
    status = ackdeck(cli_env, "room", "status", typo, "--json")
    for out in (read, ack, status):
        assert (out.returncode, out.stderr) == (0, ""), out.stderr
    assert json.loads(read.stdout)["note"] == note
    assert json.loads(ack.stdout)["note"] == note
    row = json.loads(status.stdout)["rooms"][0]
    assert (row["exists"], row["note"]) == (False, note)
    # An existing room, even an empty one, has no note.
    real = ackdeck(cli_env, "room", "read", str(tmp_path / "inbox.txt"), "--session", "a", "--json")
    assert json.loads(real.stdout)["note"] is None and real.stderr == ""


def test_nothing_similar_no_suggestion_and_hidden_files_are_not_rooms(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    (tmp_path / ".inbox.txt").write_text("hidden\n")  # a dot-name: sidecars and temps
    (tmp_path / "unrelated.log").write_text("x\n")
    out = ackdeck_ok(cli_env, "room", "read", str(tmp_path / "inbox.txt"), "--session", "a")
    assert out.stderr == f"inbox.txt {NOT_YET}{NOTE_TAIL}\n"


def test_the_mcp_door_and_core_say_it_in_the_same_words(tmp_path: Path) -> None:
    """MCP room_status and room_list_new, through the official SDK client, use the note; the
    dashboard's words are checked in tests/test_tui_actions.py (room deleted and recreated)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    (tmp_path / "inbox.txt").touch()
    typo = tmp_path / "inbxo.txt"
    note = absent_note("inbxo.txt", typo)
    assert note.endswith("; did you mean inbox.txt?")

    async def go() -> tuple[str, str]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ackdeck.core.cli", "mcp", "--session", "a", "--room", str(typo)],
            env={**os.environ, "ACKDECK_HOME": str(tmp_path / "home")},
        )
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            status = await session.call_tool("room_status", {})
            listed = await session.call_tool("room_list_new", {})
            return status.content[0].text, listed.content[0].text  # type: ignore[union-attr]

    status, listed = anyio.run(go)
    assert status.endswith(note) and listed.endswith(note)


# ----- 2. text for people ----------------------------------------------------------------------
def test_ack_leads_with_what_happened(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\ntwo\n")
    ackdeck_ok(cli_env, "room", "read", str(room), "--session", "a")
    with open(room, "ab") as f:
        f.write(b"late\n")  # arrives between the read and the ack
    out = ackdeck_ok(cli_env, "room", "ack", str(room), "--session", "a")
    assert (out.stdout, out.stderr) == (
        "",
        "acked 2 lines of inbox.txt; kept 1 unread\n",
    )
    assert room.read_bytes() == b"late\n"
    out = ackdeck_ok(cli_env, "room", "ack", str(room), "--session", "a", "--all")
    assert (out.stdout, out.stderr) == (
        "late\n",
        "acked 1 line of inbox.txt (every complete line)\n",
    )
    # The JSON of an ack is unchanged apart from the new `note` (null: the room exists),
    # `next` (issue 29: null when nothing remains to read) and what the ack was judged by
    # (issue 41: outside Claude Code, an estimate, saying why; nothing kept unshown).
    ackdeck_ok(cli_env, "room", "push", str(room), "x")
    ackdeck_ok(cli_env, "room", "read", str(room), "--session", "a")
    got = json.loads(
        ackdeck_ok(cli_env, "room", "ack", str(room), "--session", "a", "--json").stdout
    )
    assert got == {
        "room": "inbox.txt",
        "path": str(room),
        "mode": "prefix",
        "acked": 1,
        "preserved": 0,
        "message": "acked 1 line; preserved 0 lines that arrived or remain unread",
        "lines": None,
        "note": None,
        "next": None,
        "proof": "estimate",
        "proof_note": "no client transcript is known (only Claude Code keeps one ackdeck reads: "
        "CLAUDE_CODE_SESSION_ID is not set)",
        "unshown": 0,
    }


def test_an_ack_that_removes_nothing_says_why_once(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\n")
    ackdeck_ok(cli_env, "room", "read", str(room), "--session", "a")
    ackdeck_ok(cli_env, "room", "read", str(room), "--session", "b")
    ackdeck_ok(cli_env, "room", "ack", str(room), "--session", "a")
    out = ackdeck_ok(cli_env, "room", "ack", str(room), "--session", "b")
    assert out.stderr == (
        "nothing acked: already acked (by another session or an interrupted ack)\n"
    )


def test_status_prints_each_session_once(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\ntwo\nhalf")
    ackdeck_ok(cli_env, "room", "read", str(room), "--session", "agent")
    with open(room, "ab") as f:
        f.write(b"\n")
    out = ackdeck_ok(cli_env, "room", "status", str(room), "--session", "agent").stdout
    assert out.count("agent:") == 1, out
    # Ages (issue 24) depend on the clock: compare them as N.
    aged = re.sub(r"\b\d+(m\d+)?s\b", "N", out)
    assert aged == (
        f"{room}: 3 pending, 0 acked, 0 preserved, epoch 0\n"
        "  oldest line waiting N; unread by anyone for N\n"
        "  agent: 2 in flight, 1 unread (read N ago, not acked; oldest unread N)\n"
    )
    # A session that has not read yet is listed once too, and says so.
    out = ackdeck_ok(cli_env, "room", "status", str(room), "--session", "new").stdout
    sessions = [line for line in out.splitlines() if line.startswith(("  agent:", "  new:"))]
    assert [re.sub(r" \(read .*\)$", "", s) for s in sessions] == [
        "  agent: 2 in flight, 1 unread",
        "  new: 0 in flight, 3 unread (no read yet)",
    ]


def _on_a_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run argv with stdout and stderr on a real pseudo-terminal; its exit code and output."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower
    )
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=60), b"".join(chunks).decode()


def test_push_on_a_terminal_says_where_the_line_went_and_is_quiet_when_piped(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    code, shown = _on_a_terminal([*ACKDECK, "room", "push", str(room), "hello"], cli_env)
    assert code == 0
    assert shown.replace("\r\n", "\n") == "pushed 1 line to inbox.txt (stream offset 0)\n"
    piped = ackdeck_ok(cli_env, "room", "push", str(room), "again")
    assert (piped.stdout, piped.stderr) == ("", "")
    assert room.read_bytes() == b"hello\nagain\n"


# ----- 3. did you mean ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["rooom"], "did you mean room?"),
        (["room", "pusj", "r", "x"], "did you mean push?"),
        (["room", "read", "r", "--sesion", "a"], "did you mean --session?"),
        (["room", "read", "r", "--sesion=a"], "did you mean --session?"),
        (["wakes", "drian"], "did you mean drain?"),
        (["completion", "zhs"], "did you mean zsh?"),
    ],
)
def test_a_typo_gets_the_closest_name(
    tmp_path: Path, cli_env: dict[str, str], args: list[str], hint: str
) -> None:
    out = ackdeck(cli_env, *args, cwd=tmp_path)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and hint in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "home"]  # nothing was created


def test_an_unknown_option_names_the_command_it_was_given_to(cli_env: dict[str, str]) -> None:
    out = ackdeck(cli_env, "ps", "--lateest")
    assert (
        out.stderr
        == "ackdeck: error: ps: unknown option --lateest; did you mean --latest? (see --help)\n"
    )
    far = ackdeck(cli_env, "ps", "--zzzzzz")
    assert far.stderr == "ackdeck: error: ps: unknown option --zzzzzz (see --help)\n"


# ----- 4. global options and the session rule -----------------------------------------------
def test_home_and_json_before_or_after_the_command(tmp_path: Path, cli_env: dict[str, str]) -> None:
    env = {k: v for k, v in cli_env.items() if k != "ACKDECK_HOME"}
    env["HOME"] = str(tmp_path / "user")  # were --home ignored, ~/.ackdeck would be used
    a, b = tmp_path / "a", tmp_path / "b"
    ackdeck_ok(env, "--home", str(a), "run", "job", "--", "true")
    ackdeck_ok(env, "run", "job2", "--home", str(b), "--", "true")
    assert [
        r["name"]
        for r in json.loads(ackdeck_ok(env, "ps", "--home", str(a), "--json").stdout)["processes"]
    ] == ["job"]
    assert [
        r["name"]
        for r in json.loads(ackdeck_ok(env, "--json", "ps", "--home", str(b)).stdout)["processes"]
    ] == ["job2"]
    assert [
        r["name"]
        for r in json.loads(ackdeck_ok(env, "--home", str(a), "--json", "ps").stdout)["processes"]
    ] == ["job"]
    # After the command, --home wins over the one before it, as a later option does.
    assert (
        json.loads(ackdeck_ok(env, "--home", str(a), "ps", "--home", str(b), "--json").stdout)[
            "processes"
        ][0]["name"]
        == "job2"
    )
    assert not (tmp_path / "user").exists()
    # A command without --json says so instead of ignoring it.
    out = ackdeck(env, "--json", "room", "wait", str(tmp_path / "r"), "--timeout", "0")
    assert out.returncode == 1
    assert "room wait: unknown option --json" in out.stderr


def test_one_default_session_for_room_commands_and_run(
    tmp_path: Path, cli_env: dict[str, str], phome: Path
) -> None:
    """Neither --session nor ACKDECK_SESSION: every command acts as session `default`."""
    env = {k: v for k, v in cli_env.items() if k != "ACKDECK_SESSION"}
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"hello\n")
    assert ackdeck_ok(env, "room", "read", str(room)).stdout == "hello\n"
    status = json.loads(ackdeck_ok(env, "room", "status", str(room), "--json").stdout)
    assert list(status["rooms"][0]["sessions"]) == ["default"]
    ackdeck_ok(env, "room", "ack", str(room))
    assert room.read_bytes() == b""
    run_doc = json.loads(ackdeck_ok(env, "run", "job", "--json", "--", "true").stdout)
    assert run_doc["session"] == "default"
    # ACKDECK_SESSION moves every command alike.
    env["ACKDECK_SESSION"] = "agent7"
    room.write_bytes(b"again\n")
    ackdeck_ok(env, "room", "read", str(room))
    status = json.loads(ackdeck_ok(env, "room", "status", str(room), "--json").stdout)
    assert status["session"] == "agent7" and "agent7" in status["rooms"][0]["sessions"]
    assert (
        json.loads(ackdeck_ok(env, "run", "job", "--json", "--", "true").stdout)["session"]
        == "agent7"
    )


def test_servers_never_guess_a_session(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """The one exception to the rule, and why: an unattended `mcp` or `nudge` that guessed
    `default` would read and ack another agent's inbox. Flag or environment, else one line."""
    env = {k: v for k, v in cli_env.items() if k != "ACKDECK_SESSION"}
    room = str(tmp_path / "inbox.txt")
    for command, args in (
        ("mcp", ["--room", room]),
        ("nudge", ["--tmux", "nowhere:0.0", "--room", room]),
    ):
        out = ackdeck(env, command, *args, input="")
        assert out.returncode == 1 and out.stdout == ""
        assert out.stderr == (
            f"ackdeck: error: ackdeck {command} serves one agent session: give --session S or "
            "set ACKDECK_SESSION\n"
        )
    assert not (tmp_path / "inbox.txt").exists()


# ----- 5. completion -----------------------------------------------------------------------
BASH_ASK = r"""
ackdeck() { "$TEST_PYTHON" -m ackdeck.core.cli "$@"; }
eval "$(ackdeck completion bash)"
ask() {
  COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
  _ackdeck
  printf '%s\n' "${COMPREPLY[@]}" | sort -u | paste -sd' '
}
"""


@pytest.fixture
def completion_place(
    tmp_path: Path, cli_env: dict[str, str], phome: Path
) -> tuple[Path, dict[str, str]]:
    """A directory with two rooms and a home with one finished run, `build`."""
    place = tmp_path / "work"
    place.mkdir()
    (place / "inbox.txt").touch()
    (place / "inbox-ops.txt").touch()
    env = {**cli_env, "TEST_PYTHON": sys.executable}
    ackdeck_ok(env, "run", "build", "--", "true")
    return place, env


def _in_shell(argv: list[str], place: Path, env: dict[str, str]) -> list[str]:
    """Run a real shell in `place`; the lines it printed (it must succeed, silently on stderr)."""
    out = subprocess.run(argv, cwd=place, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return out.stdout.splitlines()


def _bash(place: Path, env: dict[str, str], *asks: str) -> list[str]:
    return _in_shell(["bash", "-c", BASH_ASK + "\n".join(f"ask {a}" for a in asks)], place, env)


def test_bash_completes_commands_options_rooms_and_run_names(
    completion_place: tuple[Path, dict[str, str]], home: Path
) -> None:
    place, env = completion_place
    assert complete_from_bash(place, env) == [
        "room",
        "ack overdue policy push read status trace wait",  # sorted by the probe
        "--session",
        "inbox-ops.txt inbox.txt",
        "build",
        "build",
        "bash fish zsh",
        "status",
        "",
    ]


def complete_from_bash(place: Path, env: dict[str, str]) -> list[str]:
    return _bash(
        place,
        env,
        "ackdeck roo",
        "ackdeck room ''",
        "ackdeck room read inbox.txt --sess",
        "ackdeck room read inb",
        "ackdeck kill ''",
        f"ackdeck --home {env['ACKDECK_HOME']} output b",
        "ackdeck completion ''",
        "ackdeck --home /nowhere room st",
        "ackdeck room push inbox.txt ''",  # TEXT: free text, nothing offered
    )


def test_bash_run_names_follow_a_home_typed_on_the_line(
    completion_place: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    place, env = completion_place
    other = tmp_path / "other"
    ackdeck_ok(env, "--home", str(other), "run", "deploy", "--", "true")
    assert _bash(place, env, f"ackdeck kill --home {other} ''", "ackdeck kill ''") == [
        "deploy",
        "build",
    ]


def test_zsh_script_parses_registers_and_completes(
    completion_place: tuple[Path, dict[str, str]],
) -> None:
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed (make redis-server installs it as root)")
    place, env = completion_place
    script = ackdeck_ok(env, "completion", "zsh").stdout
    (place / "_ackdeck").write_text(script)
    assert (
        subprocess.run(["zsh", "-n", str(place / "_ackdeck")], capture_output=True).returncode == 0
    )
    # Loaded into a real completion system it registers itself for `ackdeck`; called as the
    # completion system calls it (words, CURRENT; compadd shows what it was handed).
    probe = (
        "autoload -U compinit && compinit -u -D\n"
        f"source {place / '_ackdeck'}\n"
        "print -r -- ${_comps[ackdeck]}\n"
        'ackdeck() { "$TEST_PYTHON" -m ackdeck.core.cli "$@"; }\n'
        'compadd() { [[ $1 == -- ]] && shift; print -r -- "$*"; }\n'
        "words=(ackdeck room ''); CURRENT=3; _ackdeck\n"
        "words=(ackdeck room read x --se); CURRENT=5; _ackdeck\n"
        "words=(ackdeck kill ''); CURRENT=3; _ackdeck\n"
    )
    shown = _in_shell(["zsh", "-fc", probe], place, env)
    assert shown == [
        "_ackdeck",
        "push read ack status overdue policy trace wait",
        "-h --help --follow-symlinks --session --max-bytes --json --home",
        "build",
    ]


def test_fish_script_parses_and_completes(completion_place: tuple[Path, dict[str, str]]) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (make redis-server installs it as root)")
    place, env = completion_place
    script = ackdeck_ok(env, "completion", "fish").stdout
    (place / "ackdeck.fish").write_text(script)
    assert subprocess.run(["fish", "--no-execute", str(place / "ackdeck.fish")]).returncode == 0
    probe = (
        'function ackdeck; "$TEST_PYTHON" -m ackdeck.core.cli $argv; end\n'
        f"source {place / 'ackdeck.fish'}\n"
        "for line in 'ackdeck roo' 'ackdeck room ' 'ackdeck room read inb' 'ackdeck kill '"
        " 'ackdeck room ack x --al'\n"
        "  complete -C\"$line\" | string replace -r '\\t.*' '' | sort | string join ' '\n"
        "end\n"
        "true  # string join fails when it had only one word to join\n"
    )
    shown = _in_shell(["fish", "--no-config", "-c", probe], place, env)
    assert shown == [
        "room",
        "ack overdue policy push read status trace wait",
        "inbox-ops.txt inbox.txt",
        "build",
        "--all",
    ]
