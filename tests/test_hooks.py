"""`ackdeck hooks install` and the hook commands it wires, on real files and real processes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ackdeck.core import hook_install, hooks
from ackdeck.core.errors import ColdAck, InvalidInput
from ackdeck.core.monitors import procs, wakes
from ackdeck.core.rooms.file.room import Room
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.hooks import execs, install_hooks, installed_hooks, waited_for
from tests.helpers.paths import REPO
from tests.helpers.wait import eventually


def commands(tmp_path: Path, session: str = "agent") -> dict[str, str | None]:
    return hook_install.hook_commands(ACKDECK, session, [tmp_path / "inbox.txt"], None)


def ours(settings: dict, event: str) -> list[dict]:
    return [
        h
        for g in settings["hooks"].get(event, [])
        for h in g["hooks"]
        if hook_install.is_ackdeck_hook(event, h.get("command"))
    ]


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if "ackdeck-tmp" in p.name)


def test_missing_file_is_created_with_all_three_hooks(tmp_path: Path) -> None:
    settings = tmp_path / "fresh" / ".claude" / "settings.json"
    result = hook_install.install(settings, commands(tmp_path))
    assert result.changed and result.created and result.backup is None
    data = json.loads(settings.read_text())
    for event in hooks.EVENTS:
        (hook,) = ours(data, event)
        assert hook["type"] == "command" and hook["timeout"] > 0
    # Issue 13: the Stop hook reads its stdin JSON and also reports room lines that arrived
    # during the turn, so it is `hooks stop` with the rooms (it replaces `wakes drain --hook`).
    # Issue 43: behind its gate, which passes the key of its stamp.
    stop = execs(waited_for(data, "Stop")["command"])
    assert stop[-7:-4] == ["stop", "--session", "agent"]
    assert stop[-4:-2] == ["--room", str(tmp_path / "inbox.txt")]
    assert stop[-2] == "--gate"
    assert "--room" in execs(waited_for(data, "UserPromptSubmit")["command"])
    # Settings can hold tokens: a file ackdeck creates is private.
    assert settings.stat().st_mode & 0o777 == 0o600
    assert not (settings.parent / "settings.json.ackdeck-backup").exists()


def test_only_the_presence_hooks_run_async_so_no_output_the_agent_needs_is_lost(
    tmp_path: Path,
) -> None:
    """Issue 43: Notification and SessionEnd only record presence, so Claude Code may run them
    in the background (`"async": true`) instead of making every session wait for one more
    ackdeck start-up; the hooks whose output the agent reads (or that block the stop) must
    stay synchronous. An install made before this is brought up to date, once."""
    settings = tmp_path / "settings.json"
    older = hook_install.merge_hooks({}, commands(tmp_path))
    for event in ("Notification", "SessionEnd"):
        for group in older["hooks"][event]:
            for hook in group["hooks"]:
                hook.pop("async", None)
    settings.write_text(json.dumps(older))
    assert hook_install.install(settings, commands(tmp_path)).changed
    data = json.loads(settings.read_text())
    asynchronous = {e for e in hooks.EVENTS if all(h.get("async") for h in ours(data, e))}
    assert asynchronous == {"Notification", "SessionEnd"}
    # The prompt and Stop hooks are gated (issue 43): Claude Code waits for the gate, which
    # runs the hook when it may have something to say (a skipped turn marks its presence).
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        (hook,) = ours(data, event)
        assert "async" not in hook
    for event, door in (("UserPromptSubmit", "prompt"), ("Stop", "stop")):
        assert f"/agents/.agent.{door}; exit 0; fi" in ours(data, event)[0]["command"]
    assert not hook_install.install(settings, commands(tmp_path)).changed


def test_existing_file_keeps_unrelated_keys_and_other_hooks(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    original = {
        "model": "opus",
        "permissions": {"allow": ["Bash(git log:*)"]},
        "env": {"TOKEN": "x"},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}
            ],
        },
    }
    raw = json.dumps(original, indent=4).encode()
    settings.write_bytes(raw)
    settings.chmod(0o640)

    result = hook_install.install(settings, commands(tmp_path))

    assert result.changed and not result.created
    assert result.backup == tmp_path / "settings.json.ackdeck-backup"
    assert result.backup.read_bytes() == raw
    data = json.loads(settings.read_text())
    for key in ("model", "permissions", "env"):
        assert data[key] == original[key]
    assert data["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    # The user's own Stop hook stays first; ackdeck's is added beside it.
    assert data["hooks"]["Stop"][0] == original["hooks"]["Stop"][0]
    assert (
        len(data["hooks"]["Stop"]) == 2 and ours(data, "Stop") == data["hooks"]["Stop"][1]["hooks"]
    )
    assert settings.stat().st_mode & 0o777 == 0o640
    assert leftovers(tmp_path) == []


def test_installing_twice_changes_nothing_and_keeps_one_pristine_backup(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    raw = b'{"theme": "dark"}\n'
    settings.write_bytes(raw)
    backup = tmp_path / "settings.json.ackdeck-backup"

    first = hook_install.install(settings, commands(tmp_path))
    after_first = settings.read_bytes()
    inode = settings.stat().st_ino
    second = hook_install.install(settings, commands(tmp_path))

    assert first.changed and not second.changed and second.backup is None
    assert settings.read_bytes() == after_first
    assert settings.stat().st_ino == inode  # not even rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json", backup.name]
    assert backup.read_bytes() == raw

    # A new session replaces ackdeck's hooks instead of stacking a second set, and the backup
    # still holds the file as it was before ackdeck ever touched it.
    third = hook_install.install(settings, commands(tmp_path, session="other"))
    data = json.loads(settings.read_text())
    assert third.changed and third.backup is None
    for event in hooks.EVENTS:
        (hook,) = ours(data, event)
        assert "other" in execs(hook["command"])
    assert data["theme"] == "dark"
    assert backup.read_bytes() == raw


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b'{"hooks": {"Stop": [}', "is not valid JSON (line 1 column"),
        (b"[1, 2]", "must hold a JSON object"),
        (b'{"hooks": []}', '"hooks" must be a JSON object'),
        (b'{"hooks": {"Stop": {"command": "x"}}}', '"hooks.Stop" must be a JSON array'),
        (b"\xff\xfe{}", "is not UTF-8"),
    ],
)
def test_malformed_settings_get_a_clear_error_and_stay_untouched(
    tmp_path: Path, content: bytes, needle: str
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_bytes(content)
    with pytest.raises(InvalidInput) as info:
        hook_install.install(settings, commands(tmp_path))
    assert needle in str(info.value)
    assert "\n" not in str(info.value)
    assert settings.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_symlinked_settings_update_the_target_and_keep_the_link(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "claude-settings.json"
    target.parent.mkdir()
    target.write_text('{"model": "opus"}')
    link = tmp_path / "settings.json"
    link.symlink_to(target)
    hook_install.install(link, commands(tmp_path))
    assert link.is_symlink()
    assert ours(json.loads(target.read_text()), "Stop")
    assert (target.parent / "claude-settings.json.ackdeck-backup").read_text() == (
        '{"model": "opus"}'
    )


def test_merge_recognises_only_its_own_hooks() -> None:
    assert hook_install.is_ackdeck_hook(
        "Stop", "/opt/venv/bin/ackdeck wakes drain --session a --hook"
    )
    assert hook_install.is_ackdeck_hook(
        "Stop", "python -m ackdeck.core.cli --home /h wakes drain --session a"
    )
    assert not hook_install.is_ackdeck_hook("Stop", "my-ackdeck-wrapper wakes drain")
    assert not hook_install.is_ackdeck_hook("SessionStart", "ackdeck wakes drain --session a")
    assert not hook_install.is_ackdeck_hook("Stop", "echo 'unterminated")
    assert not hook_install.is_ackdeck_hook("Stop", None)
    # A shape ackdeck does not understand is kept verbatim, never "repaired".
    odd = {"hooks": {"Stop": ["not-a-group", {"matcher": "x"}]}}
    merged = hook_install.merge_hooks(odd, {"Stop": "ackdeck wakes drain --session a --hook"})
    assert merged["hooks"]["Stop"][:2] == ["not-a-group", {"matcher": "x"}]
    assert (
        hook_install.merge_hooks(merged, {"Stop": "ackdeck wakes drain --session a --hook"})
        == merged
    )


def run_hook(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # The agent runner executes the command string through a shell, from the project directory.
    return subprocess.run(
        command, shell=True, capture_output=True, text=True, cwd=REPO, env=env, timeout=60
    )


def test_installed_hooks_run_and_never_ack(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"[t1] [ops] owner: deploy\n[t2] [ops] owner: rollback\n")
    settings = tmp_path / "claude" / "settings.json"
    out = install_hooks(cli_env, settings, room)
    assert out.returncode == 0, out.stderr
    assert "created" in out.stdout
    again = install_hooks(cli_env, settings, room)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    data = json.loads(settings.read_text())

    boot = run_hook(ours(data, "SessionStart")[0]["command"], cli_env)
    assert boot.returncode == 0, boot.stderr
    assert "NEVER truncate" in boot.stdout
    assert "room_list_new" in boot.stdout and "room_ack" in boot.stdout
    assert f"{room} (2 unread)" in boot.stdout

    prompt = run_hook(ours(data, "UserPromptSubmit")[0]["command"], cli_env)
    assert prompt.returncode == 0, prompt.stderr
    assert "2 unread lines" in prompt.stdout
    assert "owner: deploy" in prompt.stdout and "owner: rollback" in prompt.stdout

    # Listing is not reading: nothing was acked and no receipt licenses an ack.
    assert room.read_bytes() == b"[t1] [ops] owner: deploy\n[t2] [ops] owner: rollback\n"
    with pytest.raises(ColdAck):
        Room(room).ack("agent")

    # After the agent reads, only what arrived since is listed.
    Room(room).read("agent")
    Room(room).push("[t3] [ops] owner: send all 3")
    prompt = run_hook(ours(data, "UserPromptSubmit")[0]["command"], cli_env)
    assert "1 unread line " in prompt.stdout
    assert "send all 3" in prompt.stdout and "deploy" not in prompt.stdout

    # Nothing unread: the prompt hook stays silent instead of adding noise to every prompt.
    Room(room).read("agent")
    Room(room).ack("agent")
    prompt = run_hook(ours(data, "UserPromptSubmit")[0]["command"], cli_env)
    assert prompt.returncode == 0 and prompt.stdout == ""


def test_cli_refuses_a_malformed_settings_file(tmp_path: Path, cli_env: dict[str, str]) -> None:
    (tmp_path / "claude").mkdir()
    settings = tmp_path / "claude" / "settings.json"
    settings.write_text('{"model": "opus",}')
    before = settings.stat()
    out = ackdeck(cli_env, "hooks", "install", "--settings", str(settings))
    assert out.returncode == 1
    assert "is not valid JSON" in out.stderr and "left untouched" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert settings.read_text() == '{"model": "opus",}'
    assert settings.stat().st_mtime_ns == before.st_mtime_ns
    assert os.listdir(settings.parent) == ["settings.json"]


def test_installed_stop_hook_delivers_a_wake_once(
    tmp_path: Path, home: Path, cli_env: dict[str, str]
) -> None:
    settings = tmp_path / "claude" / "settings.json"
    # ACKDECK_HOME is set in cli_env, so the installer bakes --home into the commands: hooks
    # run where that variable may not be set. No --session: the hooks get the session every
    # command defaults to (issue 23), the one `ackdeck run` gives its wakes.
    out = ackdeck(
        cli_env, "hooks", "install", "--settings", str(settings), "--ackdeck", shlex.join(ACKDECK)
    )
    assert out.returncode == 0, out.stderr
    stop = ours(json.loads(settings.read_text()), "Stop")[0]["command"]
    assert str(home) in shlex.split(stop)

    procs.start(
        home,
        "build",
        ["sh", "-c", "echo 'ERROR: disk full'"],
        session="default",
        monitors=[procs.MonitorSpec("ERROR", cooldown_ms=0)],
        cwd=str(tmp_path),
    )
    eventually(
        lambda: (
            procs.get_run(home, "build").status != "running" and wakes.list_wakes(home, "default")
        ),
        what="the monitor to record a wake",
    )

    first = run_hook(stop, cli_env)
    assert first.returncode == 2, (first.stdout, first.stderr)
    assert "ERROR: disk full" in first.stderr
    second = run_hook(stop, cli_env)
    assert second.returncode == 0, (second.stdout, second.stderr)
    assert "ERROR" not in second.stderr


# ----- hooks that read their input (issue 13) -----------------------------------------------
def run_hook_with(
    command: str, env: dict[str, str], payload: dict | None
) -> subprocess.CompletedProcess[str]:
    """Run a hook as Claude Code does: the command through a shell, the JSON on stdin."""
    return subprocess.run(
        command,
        shell=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
        input="" if payload is None else json.dumps(payload),
    )


def stop_payload(active: bool) -> dict:
    return {
        "session_id": "3f1c0d6e-5b7a-4c1e-9a0b-2d4e6f8a1b3c",
        "transcript_path": "/home/me/.claude/projects/x/3f1c0d6e.jsonl",
        "cwd": str(REPO),
        "hook_event_name": "Stop",
        "stop_hook_active": active,
    }


def installed(tmp_path: Path, cli_env: dict[str, str], room: Path) -> dict:
    return installed_hooks(cli_env, tmp_path / "proj" / ".claude" / "settings.json", room)


def test_stop_hook_tells_mid_turn_lines_once_and_never_reads_them(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"[t1] ops: before the turn\n")
    data = installed(tmp_path, cli_env, room)
    prompt = ours(data, "UserPromptSubmit")[0]["command"]
    stop = ours(data, "Stop")[0]["command"]
    shown = run_hook_with(
        prompt,
        cli_env,
        {"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "go on"},
    )
    assert "before the turn" in shown.stdout
    # Nothing arrived during the turn: stopping is allowed.
    first = run_hook_with(stop, cli_env, stop_payload(False))
    assert first.returncode == 0, first.stderr
    # A teammate writes while the agent works: the Stop hook mentions it (exit 2, stderr).
    Room(room).push("[t2] ops: arrived mid-turn")
    before = room.read_bytes()
    second = run_hook_with(stop, cli_env, stop_payload(False))
    assert second.returncode == 2, (second.stdout, second.stderr)
    assert "inbox.txt" in second.stderr and "room_list_new" in second.stderr
    assert "2 unread" in second.stderr
    # The agent continued (stop_hook_active) without reading: nothing new, so it may stop.
    third = run_hook_with(stop, cli_env, stop_payload(True))
    assert third.returncode == 0, third.stderr
    assert third.stderr == ""
    # Nothing was read or acked by any hook.
    assert room.read_bytes() == before
    with pytest.raises(ColdAck):
        Room(room).ack("agent")
    # Something new while continuing: one more block, then quiet again.
    Room(room).push("[t3] ops: and another")
    fourth = run_hook_with(stop, cli_env, stop_payload(True))
    assert fourth.returncode == 2 and "3 unread" in fourth.stderr
    fifth = run_hook_with(stop, cli_env, stop_payload(True))
    assert fifth.returncode == 0


def test_stop_hook_never_blocks_twice_for_a_wake_it_delivered(
    tmp_path: Path, home: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    data = installed(tmp_path, cli_env, room)
    stop = ours(data, "Stop")[0]["command"]
    wakes.merge(
        home,
        "agent",
        "build",
        run_id="run1",
        kind="exited",
        filter=None,
        exclude=False,
        status="exited",
        exit_code=1,
    )
    first = run_hook_with(stop, cli_env, stop_payload(False))
    assert first.returncode == 2 and "exit code 1" in first.stderr
    again = run_hook_with(stop, cli_env, stop_payload(True))
    assert again.returncode == 0 and again.stderr == ""


@pytest.mark.parametrize("payload", [None, {"not": "a stop"}, ["a list"]])
def test_hooks_without_usable_input_behave_as_before(
    tmp_path: Path, cli_env: dict[str, str], payload: object
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\n")
    data = installed(tmp_path, cli_env, room)
    command = ours(data, "Stop")[0]["command"]
    res = subprocess.run(
        command,
        shell=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=cli_env,
        timeout=60,
        input="" if payload is None else json.dumps(payload),
    )
    # The room's line was never told by a hook: it is news to the Stop hook.
    assert res.returncode == 2, res.stderr
    assert room.read_bytes() == b"one\n"


@pytest.mark.parametrize(
    "raw",
    [b"not json", b'{"stop_hook_active": true', b"\xff\xfe\x00garbage", b"null", b"   \n"],
    ids=["text", "truncated", "binary", "null", "blank"],
)
def test_hooks_given_odd_stdin_behave_as_without_input(
    tmp_path: Path, cli_env: dict[str, str], raw: bytes
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\n")
    data = installed(tmp_path, cli_env, room)
    for event, code, said in (
        ("UserPromptSubmit", 0, b"new before UserPromptSubmit"),
        ("Stop", 2, b"3 unread"),
    ):
        Room(room).push(f"new before {event}")
        res = subprocess.run(
            ours(data, event)[0]["command"], shell=True, capture_output=True, cwd=REPO,
            env=cli_env, timeout=60, input=raw,
        )  # fmt: skip
        assert res.returncode == code, (event, res.stderr)
        assert b"Traceback" not in res.stderr
        assert said in res.stdout
    assert Room(room).status().pending == 3  # listed and mentioned, never read or acked


def test_session_start_names_its_source_and_marks_lines_told(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"one\n")
    data = installed(tmp_path, cli_env, room)
    boot = run_hook_with(
        ours(data, "SessionStart")[0]["command"],
        cli_env,
        {"session_id": "s", "hook_event_name": "SessionStart", "source": "compact"},
    )
    assert boot.returncode == 0 and "after compact" in boot.stdout and "1 unread" in boot.stdout
    stop = run_hook_with(ours(data, "Stop")[0]["command"], cli_env, stop_payload(False))
    assert stop.returncode == 0, stop.stderr


def test_install_defaults_to_the_project_settings(tmp_path: Path, cli_env: dict[str, str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = dict(cli_env, HOME=str(tmp_path / "userhome"))
    out = ackdeck(
        env, "hooks", "install", "--session", "agent", "--ackdeck", shlex.join(ACKDECK), cwd=project
    )
    assert out.returncode == 0, out.stderr
    assert (project / ".claude" / "settings.json").exists()
    assert not (tmp_path / "userhome" / ".claude").exists()
    user = ackdeck(env, "hooks", "install", "--user", "--ackdeck", shlex.join(ACKDECK), cwd=project)
    assert user.returncode == 0, user.stderr
    assert (tmp_path / "userhome" / ".claude" / "settings.json").exists()


def test_installing_replaces_the_older_wakes_drain_stop_hook(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    old = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": "/v/bin/ackdeck wakes drain --session agent --hook",
                        }
                    ]
                }
            ]
        }
    }
    settings.write_text(json.dumps(old))
    hook_install.install(settings, commands(tmp_path))
    data = json.loads(settings.read_text())
    stop = waited_for(data, "Stop")
    assert "hooks stop" in stop["command"] and "wakes drain" not in stop["command"]
    assert len(data["hooks"]["Stop"]) == 1


def test_hook_input_is_read_even_when_the_runner_keeps_stdin_open() -> None:
    r, w = os.pipe()
    try:
        os.write(w, json.dumps(stop_payload(True)).encode())
        with os.fdopen(r, "r", closefd=False) as f:
            started = time.monotonic()
            got = hooks.read_hook_input(f, wait=30)
        assert got["stop_hook_active"] is True
        # It returned on the complete JSON, not on the 30 s wait.
        assert time.monotonic() - started < 30
        os.write(w, b"{not json")
        os.close(w)
        w = -1
        with os.fdopen(r, "r", closefd=False) as f:
            assert hooks.read_hook_input(f, wait=30) == {}
    finally:
        os.close(r)
        if w != -1:
            os.close(w)


def test_a_runner_that_trickles_its_stdin_cannot_hold_the_hook_forever() -> None:
    """Each chunk restarted the wait for the next one: a runner writing a byte of an object
    now and then and never closing the pipe kept the hook waiting for ever. It now stops at
    `total` and treats what it has as the truncated input it is ({})."""
    import threading

    r, w = os.pipe()
    stop = threading.Event()

    def trickle() -> None:
        # A byte per 0.05 s, well inside `wait`: only the total bound ends the read.
        while not stop.wait(0.05):
            try:
                os.write(w, b" ")
            except OSError:
                return

    os.write(w, b'{"session_id": "s"')
    writer = threading.Thread(target=trickle, daemon=True)
    writer.start()
    got: list[dict[str, object]] = []
    try:
        with os.fdopen(r, "r", closefd=False) as f:
            reader = threading.Thread(
                target=lambda: got.append(hooks.read_hook_input(f, wait=1.0, total=1.0))
            )
            reader.start()
            reader.join(timeout=60)  # only a read that never ends reaches this
            assert not reader.is_alive(), "the trickled read never ended"
    finally:
        stop.set()
        writer.join(timeout=60)
        os.close(w)
        os.close(r)
    assert got == [{}]


def test_hook_commands_name_the_room_the_kernel_resolves(tmp_path: Path) -> None:
    # `link/..` is the parent of the link's target, not the directory holding the link.
    (tmp_path / "elsewhere" / "real").mkdir(parents=True)
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "link").symlink_to(tmp_path / "elsewhere" / "real")
    spelled = tmp_path / "deep" / "link" / ".." / "inbox.txt"
    cmds = hook_install.hook_commands(["ackdeck"], "agent", [spelled])
    prompt = cmds["UserPromptSubmit"]
    assert prompt is not None
    room = execs(prompt)[-3]
    assert os.path.samefile(os.path.dirname(room), tmp_path / "elsewhere")
    assert Path(room).name == "inbox.txt"


def test_a_stop_hook_whose_output_nobody_reads_acks_no_wake(
    home: Path, cli_env: dict[str, str]
) -> None:
    # The wake is acked only once its text reached stderr (what the agent is given on exit 2):
    # a stop hook writing into a closed pipe used to ack the wake and say nothing anywhere.
    from ackdeck.core.monitors.monitors import MatchedLine

    wakes.merge(
        home, "agent", "build", run_id="run1", kind="match",
        lines=[MatchedLine(0, 20, "ERROR: build failed")], filter="ERROR", exclude=False,
        matches=1, status="running",
    )  # fmt: skip
    r, w = os.pipe()
    os.close(r)  # the reader is gone: every write is EPIPE
    try:
        done = subprocess.run(
            [*ACKDECK, "hooks", "stop", "--session", "agent"],
            stdin=subprocess.DEVNULL, stdout=w, stderr=w, env=cli_env, timeout=60,
        )  # fmt: skip
    finally:
        os.close(w)
    assert done.returncode == 1
    assert wakes.list_wakes(home, "agent")[0].pending == 1  # still there for the next stop
    stop = shlex.join([*ACKDECK, "hooks", "stop", "--session", "agent"])
    again = run_hook_with(stop, cli_env, {})
    assert again.returncode == 2 and "ERROR: build failed" in again.stderr
    assert wakes.list_wakes(home, "agent")[0].pending == 0


def _parses_of_a_large_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prompt: str
) -> tuple[dict[str, Any], int]:
    """The hook input read from a file holding `prompt` (8 MB), and how often the reader
    parsed its buffer."""
    from ackdeck.core import hook_input

    path = tmp_path / "in.json"
    path.write_text(json.dumps({"session_id": "s", "prompt": prompt}))
    calls = []
    real_parse = hook_input.parse_json
    monkeypatch.setattr(hook_input, "parse_json", lambda raw: calls.append(1) or real_parse(raw))
    with path.open("rb") as f:
        got = hooks.read_hook_input(f, wait=30)
    return got, len(calls)


def test_a_large_hook_input_is_parsed_once_not_after_every_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 8 MB of JSON: parsing the growing buffer after each 64 KiB read made this quadratic.
    # (This used to count json.loads, which the reader never calls: it counted nothing.)
    got, calls = _parses_of_a_large_input(tmp_path, monkeypatch, "x" * 8_000_000)
    assert got["session_id"] == "s" and len(got["prompt"]) == 8_000_000
    assert 1 <= calls <= 3


def test_a_large_hook_input_of_closing_braces_is_not_parsed_after_every_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every 64 KiB chunk of this prompt ends in `}`, which the reader took for an object's
    # end: it parsed the growing buffer after each one (quadratic: 30-40 s at 30 MB).
    got, calls = _parses_of_a_large_input(tmp_path, monkeypatch, "}" * 8_000_000)
    assert got["session_id"] == "s" and len(got["prompt"]) == 8_000_000
    # 123 chunks: at most one parse per doubling of the buffer, and the last one.
    assert 1 <= calls <= 10, calls


def test_a_line_landing_while_the_prompt_text_is_built_is_never_marked_told_unseen(
    tmp_path: Path,
) -> None:
    # The prompt hook takes the rooms' state before it builds its text: a line that lands in
    # between is at worst told twice, never recorded as told without having been shown.
    home = tmp_path / "home"
    home.mkdir()
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"[t1] ops: before the turn\n")
    told = hooks.rooms_told_marker(home, "s", [room])
    Room(room).push("[t2] ops: landed while the text was built")
    hooks.prompt_text("s", [room])
    told()
    out = hooks.stop_hook(home, "s", [room], stop_payload(False), settle_timeout=0.0)
    assert out.block and "2 unread" in out.text, out.text


def test_hooks_still_work_when_the_notice_state_cannot_be_kept(
    tmp_path: Path, home: Path, cli_env: dict[str, str]
) -> None:
    # HOME/notices unusable (here a file; in life a read-only or full HOME): the hooks' own
    # "already told" record is a convenience. Losing it may repeat a mention; it must not
    # stop the prompt hook from listing lines or the Stop hook from delivering wakes.
    from ackdeck.core.monitors.monitors import MatchedLine

    room = tmp_path / "inbox.txt"
    room.write_bytes(b"[t1] ops: waiting\n")
    (home / "notices").write_text("not a directory\n")
    wakes.merge(
        home, "agent", "build", run_id="run1", kind="match",
        lines=[MatchedLine(0, 20, "ERROR: build failed")], filter="ERROR", exclude=False,
        matches=1, status="running",
    )  # fmt: skip
    data = installed(tmp_path, cli_env, room)
    prompt = run_hook_with(ours(data, "UserPromptSubmit")[0]["command"], cli_env, {})
    assert prompt.returncode == 0, prompt.stderr
    assert "[t1] ops: waiting" in prompt.stdout
    stop = run_hook_with(ours(data, "Stop")[0]["command"], cli_env, stop_payload(False))
    assert stop.returncode == 2, stop.stderr
    assert "ERROR: build failed" in stop.stderr
    assert wakes.list_wakes(home, "agent")[0].pending == 0
    assert room.read_bytes() == b"[t1] ops: waiting\n"
    # Nothing records what the Stop hook told: when the agent continues because of it
    # (stop_hook_active), the same lines must not block again, and again, for ever.
    Room(room).push("[t2] ops: mid-turn")
    told = run_hook_with(ours(data, "Stop")[0]["command"], cli_env, stop_payload(False))
    assert told.returncode == 2 and "2 unread" in told.stderr, told.stderr
    again = run_hook_with(ours(data, "Stop")[0]["command"], cli_env, stop_payload(True))
    assert again.returncode == 0, again.stderr
    assert Room(room).status().pending == 2


def test_a_line_landing_after_the_marker_saw_nothing_unread_is_told_at_the_stop(
    tmp_path: Path,
) -> None:
    # The prompt hook looks at each room once (issue 43): a room the marker saw nothing unread
    # in is not looked at again for the text. A line landing in between is not in the prompt's
    # text, and not recorded as told either: the Stop hook tells it.
    home = tmp_path / "home"
    home.mkdir()
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"")
    unread: dict[str, int] = {}
    told = hooks.rooms_told_marker(home, "s", [room], unread)
    assert unread == {str(room): 0}
    Room(room).push("[t2] ops: landed while the text was built")
    assert hooks.prompt_text("s", [room], unread) == ""
    told()
    out = hooks.stop_hook(home, "s", [room], stop_payload(False), settle_timeout=0.0)
    assert out.block and "1 unread" in out.text, out.text
