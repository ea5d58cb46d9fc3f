"""The hook gate (issue 43) tried as a careless user and a hostile environment would: the
real `ackdeck hooks install` output run through dash (`/bin/sh -c`, as Claude Code runs it)
and bash (`bash -c`), real files and real ackdeck processes. Each test but the real-client
check pins a case that failed before its fix: the gate skipped a hook that had something to
say, served a session-start text that was not the hook's, or broke the user's hook. The cases
tried that held, and what mtimes cannot show, are in docs/how-to/hooks.md."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from tests.helpers.cli import ACKDECK, ackdeck, clean_env
from tests.helpers.hooks import execs, installed_hooks, waited_for
from tests.test_hooks_gate import PAST_S

SESSION = "agent"
SHELLS = {"dash": ["/bin/sh", "-c"], "bash": ["bash", "-c"]}
DOORS = {"bootstrap": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop"}


def _line(source: str = "startup") -> str:
    """The one line of JSON Claude Code writes on a hook's stdin (compact, newline-ended)."""
    payload = {"session_id": "3f1c0d6e", "hook_event_name": "SessionStart", "source": source}
    return json.dumps(payload, separators=(",", ":")) + "\n"


class Installed:
    """One session's gated hooks as `ackdeck hooks install` wrote them into a settings file."""

    def __init__(
        self, root: Path, env: dict[str, str], room: Path, commands: dict[str, str] | None = None
    ) -> None:
        """`commands`: each door's command as given (else `hooks install` writes them)."""
        self.root, self.env, self.room = root, env, room
        self.home = Path(env["ACKDECK_HOME"])
        if commands is None:
            settings = installed_hooks(env, root / "settings.json", room, SESSION)
            commands = {d: waited_for(settings, e)["command"] for d, e in DOORS.items()}
        self.commands = commands
        argv = execs(self.commands["stop"])
        self.key = argv[argv.index("--gate") + 1]

    def stamp(self, door: str) -> Path:
        return locations.quiet_stamp(self.home, SESSION, door, self.key)

    def run(
        self,
        door: str,
        shell: str = "dash",
        stdin: str | bytes | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        if stdin is None:
            stdin = _line() if door == "bootstrap" else json.dumps({"stop_hook_active": False})
        done = subprocess.run(
            [*SHELLS[shell], self.commands[door]],
            capture_output=True,
            cwd=self.root,
            env=self.env,
            timeout=timeout,
            input=stdin.encode() if isinstance(stdin, str) else stdin,
        )
        return subprocess.CompletedProcess(
            done.args,
            done.returncode,
            done.stdout.decode(errors="replace"),
            done.stderr.decode(errors="replace"),
        )

    def settle(self, door: str, shell: str = "dash") -> str:
        """Run `door` until its gate skips on a stamp; what it printed."""
        for _ in range(4):
            done = self.run(door, shell)
            assert done.returncode == 0, done
            _date_back(self.root)
            before = _identity(self.stamp(door))
            again = self.run(door, shell)
            if before is not None and _identity(self.stamp(door)) == before:
                assert again.stdout == done.stdout
                return again.stdout
        raise AssertionError(f"the {door} gate never settled on a stamp")

    def skips(
        self, door: str, shell: str = "dash", stdin: str | bytes | None = None
    ) -> tuple[bool, subprocess.CompletedProcess[str]]:
        """Run `door`; whether its gate skipped (a hook run replaces or removes the stamp)."""
        before = _identity(self.stamp(door))
        done = self.run(door, shell, stdin)
        return before is not None and _identity(self.stamp(door)) == before, done


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def _date_back(root: Path, seconds: int = PAST_S) -> None:
    """Date every file under root back (as a quiet while would), but the gates' stamps."""
    back = seconds * 1_000_000_000
    for path in [root, *root.rglob("*")]:
        if os.path.islink(path) or path.name.startswith("quiet-"):
            continue
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns - back, st.st_mtime_ns - back))


@pytest.fixture
def installed(tmp_path: Path, cli_env: dict[str, str]) -> Installed:
    room = tmp_path / "rooms" / "inbox.txt"
    room.parent.mkdir()
    room.touch()
    return Installed(tmp_path, cli_env, room)


# ----- the session-start gate's input ----------------------------------------------------------
@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("source", ["compact", "clear", "resume"])
def test_a_start_whose_json_spans_several_lines_still_gets_its_reminder(
    installed: Installed, shell: str, source: str
) -> None:
    """The gate read one line and handed only that on: a pretty-printed JSON (a client or a
    wrapper that indents it) reached the hook as `{`, which it took for no input, so the
    reminder after compact, clear or resume was lost. Claude Code writes one line; the hook
    behind the gate read any JSON before the gate."""
    installed.settle("bootstrap", shell)
    pretty = json.dumps({"session_id": "3f1c0d6e", "source": source}, indent=2) + "\n"
    done = installed.run("bootstrap", shell, pretty)
    assert done.returncode == 0, done
    assert f"(ackdeck: reminder after {source})" in done.stdout, done.stdout


@pytest.mark.parametrize("shell", SHELLS)
def test_a_pretty_printed_startup_is_served_from_the_stamp_and_marks_its_session(
    installed: Installed, shell: str
) -> None:
    said = installed.settle("bootstrap", shell)
    pretty = json.dumps({"session_id": "9a8b7c", "source": "startup"}, indent=2) + "\n"
    skipped, done = installed.skips("bootstrap", shell, pretty)
    assert skipped and done.stdout == said, done
    mark = locations.presence_mark(installed.home, SESSION, "start")
    assert mark.read_text() == "9a8b7c\n"


# ----- an upgrade that keeps the files' mtimes -------------------------------------------------
def _replaced_keeping_mtime(path: Path, at_ns: int) -> None:
    """An installer that puts a new file in place with the mtime it came with (dpkg keeps the
    package's build time; uv and conda hard-link a cache unpacked days ago): written beside,
    dated, renamed over the old one."""
    new = path.with_name(path.name + ".new")
    new.write_bytes(path.read_bytes() + b"\n# the next version\n")
    os.utime(new, ns=(at_ns, at_ns))
    os.replace(new, path)


@pytest.mark.parametrize("module", ["hooks", "instructions"])
def test_an_upgrade_that_keeps_older_mtimes_is_not_served_the_older_text(
    tmp_path: Path, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    """The gate compared the stamp with the mtimes of hooks.py and instructions.py only: a
    new version put in place with an mtime older than the stamp (its build time) served the
    text the older version wrote. The directory that holds them changes as it happens."""
    from ackdeck.core import hook_install, hooks
    from ackdeck.core.service import instructions

    pkg = tmp_path / "site-packages" / "ackdeck"
    copies = {}
    for name, mod in (("hooks", hooks), ("instructions", instructions)):
        copy = pkg / name / Path(mod.__file__ or "").name  # each in its own package folder
        copy.parent.mkdir(parents=True)
        shutil.copy(mod.__file__ or "", copy)
        monkeypatch.setattr(mod, "__file__", str(copy))  # what the gate compares
        copies[name] = copy
    room = tmp_path / "rooms" / "inbox.txt"
    room.parent.mkdir()
    room.touch()
    _date_back(tmp_path)
    cmds = hook_install.hook_commands(ACKDECK, SESSION, [room])  # the installer, with the copies
    inst = Installed(tmp_path, cli_env, room, {d: cmds[e] or "" for d, e in DOORS.items()})
    inst.settle("bootstrap")
    stamp = inst.stamp("bootstrap").stat().st_mtime_ns
    _replaced_keeping_mtime(copies[module], stamp - 3600 * 1_000_000_000)  # built an hour ago
    skipped, done = inst.skips("bootstrap")
    assert done.returncode == 0, done
    assert not skipped  # ackdeck ran: the text is the new version's


@pytest.mark.parametrize("shell", SHELLS)
def test_a_runner_that_keeps_stdin_open_without_a_newline_does_not_hang_the_start(
    installed: Installed, shell: str
) -> None:
    """The gate read its input before anything else, and `read` waits for a newline or EOF:
    a runner that wrote its JSON without a newline and kept the pipe open (or wrote nothing)
    hung the session-start hook until the client killed it. Without a stamp that holds there
    is nothing to serve, so the input goes to ackdeck untouched, which waits at most
    hooks.STDIN_WAIT_S for it."""
    from ackdeck.core import hooks

    for written in (b'{"session_id":"3f1c0d6e","source":"startup"}', b""):
        proc = subprocess.Popen(
            [*SHELLS[shell], installed.commands["bootstrap"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=installed.root,
            env=installed.env,
        )
        assert proc.stdin is not None
        try:
            proc.stdin.write(written)
            proc.stdin.flush()
            # stdin stays open: the hook must end on its own (its output fits in the pipe).
            code = proc.wait(timeout=30 + hooks.STDIN_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("the session-start hook hung on an open stdin") from None
        finally:
            out, err = proc.communicate()
        assert code == 0, err
        assert b"you are session 'agent'" in out


# ----- the home the gate looks in --------------------------------------------------------------
def test_a_relative_home_in_the_ackdeck_command_is_not_gated_on_another_projects_stamp(
    tmp_path: Path,
) -> None:
    """`--ackdeck "ackdeck --home .deck"`: ackdeck finds that home from the directory the
    hook runs in, the gate named it from the directory the installer ran in. A user-wide
    install used by two projects then skipped the Stop hook in the second project on the
    first one's stamp, with a wake pending in the second project's home."""
    from ackdeck.core.monitors import wakes

    env = clean_env()
    room = tmp_path / "rooms" / "inbox.txt"
    room.parent.mkdir()
    room.touch()
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    settings = tmp_path / "settings.json"
    out = ackdeck(
        env,
        "hooks",
        "install",
        "--settings",
        str(settings),
        "--session",
        SESSION,
        "--room",
        str(room),
        "--ackdeck",
        shlex.join([*ACKDECK, "--home", ".deck"]),
        cwd=first,
    )
    assert out.returncode == 0, out.stderr
    stop = waited_for(json.loads(settings.read_text()), "Stop")["command"]

    def gate(where: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["/bin/sh", "-c", stop],
            capture_output=True,
            text=True,
            cwd=where,
            env=env,
            timeout=60,
            input=json.dumps({"stop_hook_active": False}),
        )

    for _ in range(3):  # the first project's Stop hook settles on a stamp
        assert gate(first).returncode == 0
        _date_back(tmp_path)
    wakes.merge(
        second / ".deck",
        SESSION,
        "build",
        run_id="run1",
        kind="exited",
        filter=None,
        exclude=False,
        status="exited",
        exit_code=1,
    )
    _date_back(second)
    done = gate(second)
    assert done.returncode == 2 and "exit code 1" in done.stderr, done


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("door", DOORS)
def test_a_home_spelled_with_a_trailing_slash_still_gets_its_stamp(
    tmp_path: Path, shell: str, door: str
) -> None:
    """No ACKDECK_HOME and `HOME=/home/me/`: the gate looks in `/home/me//.ackdeck`, ackdeck
    in `/home/me/.ackdeck`, the same folder; the hook took the two spellings for two homes
    and never wrote a stamp (every turn started ackdeck)."""
    user = tmp_path / "user"
    user.mkdir()
    env = {**clean_env(), "HOME": f"{user}/", "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    room = tmp_path / "rooms" / "inbox.txt"
    room.parent.mkdir()
    room.touch()
    settings = installed_hooks(env, tmp_path / "settings.json", room, SESSION)
    commands = {d: waited_for(settings, e)["command"] for d, e in DOORS.items()}
    inst = Installed(tmp_path, {**env, "ACKDECK_HOME": ""}, room, commands)
    inst.home = user / ".ackdeck"
    inst.settle(door, shell)


# ----- through real Claude Code ----------------------------------------------------------------
def test_a_real_claude_resume_after_a_quiet_start_gets_the_reminder_not_the_stamp(
    tmp_path: Path,
) -> None:
    """Claude Code's own JSON through the gate: once the start is served from the stamp
    (ackdeck's text, no Python), `claude -p --resume` starts with `source: resume`, and the
    model is told the context was reset rather than handed the stamp's startup text."""
    from tests.helpers import agent_clients as clients
    from tests.helpers.agent_clients import Setup
    from tests.helpers.model_stub import ModelStub

    clients.need_client("claude")
    s = Setup(tmp_path).make()
    with ModelStub([]) as stub:  # every turn is answered "done"
        stamp = None
        for _ in range(4):  # until a start is served from the stamp (it stays as it was)
            done = clients.claude(s, stub.url, "Say done.", max_turns=1)
            assert done.returncode == 0, done.stderr[-2000:]
            stamps = list(
                locations.notices_dir(s.home, s.session).glob("quiet-bootstrap-*[0-9a-f]")
            )
            now = _identity(stamps[0]) if stamps else None
            if now is not None and now == stamp:
                break
            stamp = now
            _date_back(s.root)
        else:
            raise AssertionError("the session-start gate never settled on its stamp")
        assert "reminder after" not in json.dumps(stub.turns()[-1])
        claude_session = json.loads(done.stdout)["session_id"]
        done = clients.claude(
            s, stub.url, "Say done.", max_turns=1, extra_args=["--resume", claude_session]
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "(ackdeck: reminder after resume)" in json.dumps(stub.turns()[-1])


# ----- the command line itself -----------------------------------------------------------------
def test_many_long_room_paths_never_make_a_hook_command_too_long_to_start(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """The gate names each room's path eight times (the room, its folder, its sidecar and
    receipts, each tested twice): 40 rooms under a 1000-character folder made a gated
    command of 420-470 KB, past what Linux takes as one argument (MAX_ARG_STRLEN, 128 KiB), so
    `/bin/sh -c COMMAND` could not even start ("Argument list too long"): every turn's hook
    failed. The same hooks without the gate are ~42 KB (installed so now)."""
    deep = tmp_path
    while len(str(deep)) < 1000:
        deep = deep / ("d" * 200)
    deep.mkdir(parents=True)
    rooms = [deep / f"room{i:02}.txt" for i in range(40)]
    for r in rooms:
        r.touch()
    room_args = [a for r in rooms for a in ("--room", str(r))]
    settings = tmp_path / "settings.json"
    out = ackdeck(
        cli_env,
        "hooks",
        "install",
        "--settings",
        str(settings),
        "--session",
        SESSION,
        *room_args,
        "--ackdeck",
        shlex.join(ACKDECK),
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(settings.read_text())
    for door, event in DOORS.items():
        command = waited_for(data, event)["command"]
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=cli_env,
            timeout=60,
            input=_line() if door == "bootstrap" else "{}",
        )
        assert done.returncode == 0, (door, done.stderr[-500:])


# ----- ackdeck's own files in a hostile state ---------------------------------------------------
@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("place", ["the presence mark", "the clock file"])
def test_a_fifo_where_the_gate_writes_does_not_hang_the_hook(
    installed: Installed, shell: str, door: str, place: str
) -> None:
    """The gate truncates two files of its own (the turn's presence mark, the clock file it
    reads the time from): a FIFO put in either place blocked the open for writing until a
    reader came, so the hook hung until the client killed it (presence's reader already
    refuses to block on one). It neither writes through a FIFO nor through a symlink (which
    would truncate whatever it points to)."""
    installed.settle(door, shell)
    kind = "start" if door == "bootstrap" else door
    path = {
        "the presence mark": locations.presence_mark(installed.home, SESSION, kind),
        "the clock file": locations.quiet_now(installed.home, SESSION),
    }[place]
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    try:
        done = installed.run(door, shell, timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the {door} hook hung on a FIFO at {place}") from None
    assert done.returncode == 0, done


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("place", ["the presence mark", "the clock file"])
def test_a_symlink_where_the_gate_writes_never_truncates_its_target(
    installed: Installed, door: str, place: str
) -> None:
    """A symlink in place of the mark or the clock file: truncating it emptied the file it
    named (a room, had someone linked one there)."""
    installed.settle(door)
    kind = "start" if door == "bootstrap" else door
    path = {
        "the presence mark": locations.presence_mark(installed.home, SESSION, kind),
        "the clock file": locations.quiet_now(installed.home, SESSION),
    }[place]
    precious = installed.root / "precious.txt"
    precious.write_text("[t1] ops: keep me\n")
    path.unlink(missing_ok=True)
    os.symlink(precious, path)
    done = installed.run(door)
    assert done.returncode == 0, done
    assert precious.read_text() == "[t1] ops: keep me\n"
