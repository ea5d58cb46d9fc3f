"""The session-start text goes with a session's first prompt (issue 43): `hooks install` puts
SessionStart behind the matcher `resume|clear|compact` (at `startup` Claude Code's start waited
for it, +20-40 ms of every `claude -p` turn), and the UserPromptSubmit hook, installed with or
without rooms, gives the text when the hook's `session_id` is not the one last given it
(notices/SESSION/start-told). The real `hooks install` output through dash and bash as Claude
Code runs it, real files, real ackdeck processes, and real Claude Code against the scripted
model. Each test but the old-install ones failed before the change (no text at the prompt, or
a SessionStart hook at startup); the old-install ones pin that a settings.json the previous
version wrote keeps giving the text once."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ackdeck.core import hooks
from ackdeck.core.base import locations
from ackdeck.core.presence import log
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.hooks import execs, install_hooks, installed_hooks, waited_for
from tests.test_hooks_gate_adversarial import SESSION, SHELLS, Installed, _date_back, _identity

TEXT = f"you are session {SESSION!r}"
CC = "3f1c0d6e-5b7a-4c1d-9e2f-0a1b2c3d4e5f"  # as Claude Code names a session: a UUID


def _prompt(cc: str | None = CC, *, indent: int | None = None) -> str:
    """The UserPromptSubmit JSON Claude Code writes (one compact line, newline-ended), or
    indented as a wrapper might."""
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": "Say done.", "cwd": "/p"}
    if cc is not None:
        payload = {"session_id": cc, "transcript_path": f"/t/{cc}.jsonl", **payload}
    separators = None if indent else (",", ":")
    return json.dumps(payload, indent=indent, separators=separators) + "\n"


@pytest.fixture
def installed(tmp_path: Path, cli_env: dict[str, str]) -> Installed:
    """One session's hooks as `hooks install` writes them, for one empty room."""
    room = tmp_path / "rooms" / "inbox.txt"
    room.parent.mkdir()
    room.touch()
    return Installed(tmp_path, cli_env, room)


def _stamps(inst: Installed) -> list[tuple[int, int] | None]:
    return [_identity(inst.stamp(d)) for d in ("prompt", "bootstrap")]


def _settled_first(inst: Installed, shell: str = "dash") -> str:
    """First prompts of new sessions until the gate serves the text from its stamps (both
    stamps as they were: no ackdeck ran); what it printed."""
    said = None
    for i in range(5):
        done = inst.run("prompt", shell, _prompt(f"settle-{i}"))
        assert done.returncode == 0 and done.stdout.count(TEXT) == 1, done
        assert said is None or done.stdout == said, (said, done.stdout)
        said = done.stdout
        _date_back(inst.root)
        before = _stamps(inst)
        again = inst.run("prompt", shell, _prompt(f"settle-{i}-again"))
        assert again.returncode == 0 and again.stdout == said, again
        if None not in before and _stamps(inst) == before:
            return said
    raise AssertionError("the first prompt was never served from the stamps")


# ----- the install ----------------------------------------------------------------------------
def test_the_installed_session_start_hook_skips_startup_and_the_prompt_hook_needs_no_room(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """SessionStart fired at `startup` (Claude Code's start waited for it), and without rooms
    no UserPromptSubmit hook was installed at all (nothing would give the text)."""
    settings = tmp_path / "settings.json"
    out = ackdeck(
        cli_env, "hooks", "install", "--settings", str(settings), "--session", SESSION,
        "--ackdeck", " ".join(ACKDECK),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(settings.read_text())
    (group,) = data["hooks"]["SessionStart"]
    assert group["matcher"] == "resume|clear|compact"
    assert "startup" not in group["matcher"].split("|")
    assert "--session-start" in execs(waited_for(data, "UserPromptSubmit")["command"])


@pytest.mark.parametrize("shell", SHELLS)
def test_a_first_prompt_gets_the_start_text_once_and_the_next_prompt_of_its_session_not(
    installed: Installed, shell: str
) -> None:
    first = installed.run("prompt", shell, _prompt())
    assert first.returncode == 0 and first.stdout.count(TEXT) == 1, first
    assert "(0 unread)" in first.stdout and "NEVER truncate" in first.stdout
    told = locations.start_told(installed.home, SESSION)
    assert told.read_text() == f"{CC}\n"
    for _ in range(2):
        later = installed.run("prompt", shell, _prompt())
        assert later.returncode == 0 and TEXT not in later.stdout, later
    # Another `claude` run (or a /clear): another id, its own first prompt.
    other = installed.run("prompt", shell, _prompt("9a8b7c6d"))
    assert other.returncode == 0 and other.stdout.count(TEXT) == 1, other
    # A hook run by hand (no id): never a first prompt.
    by_hand = installed.run("prompt", shell, _prompt(None))
    assert by_hand.returncode == 0 and TEXT not in by_hand.stdout, by_hand


@pytest.mark.parametrize("shell", SHELLS)
def test_a_quiet_first_prompt_is_the_hooks_own_text_served_without_starting_ackdeck(
    installed: Installed, shell: str
) -> None:
    said = _settled_first(installed, shell)  # byte for byte what ackdeck printed
    # The gate recorded what ackdeck records: the id told, the session's start (with Claude
    # Code's id, for `ackdeck agents`) and its prompt, after the start.
    before = _stamps(installed)
    done = installed.run("prompt", shell, _prompt("fe12ab"))
    assert done.returncode == 0 and done.stdout == said
    assert _stamps(installed) == before  # no ackdeck ran
    assert locations.start_told(installed.home, SESSION).read_text() == "fe12ab\n"
    facts = log.load(installed.home, SESSION)
    assert facts.turn == "prompt" and facts.claude_session == "fe12ab"
    starts = [e for e in log.events(installed.home, SESSION) if e["ev"] == "start"]
    assert starts[-1].get("cc") == "fe12ab"
    # The same session's next prompt is skipped with nothing said.
    again = installed.run("prompt", shell, _prompt("fe12ab"))
    assert again.returncode == 0 and again.stdout == "" and _stamps(installed) == before


@pytest.mark.parametrize("push", ["ackdeck push", "plain >>"])
def test_a_line_waiting_at_the_first_prompt_is_counted_and_listed(
    installed: Installed, push: str
) -> None:
    """The stamped text says `(0 unread)`: a line that landed since must not be served it."""
    _settled_first(installed)
    if push == "ackdeck push":
        out = ackdeck(installed.env, "room", "push", str(installed.room), "[t1] ops: at start")
        assert out.returncode == 0, out.stderr
    else:
        with open(installed.room, "a") as f:
            f.write("[t1] ops: at start\n")
    done = installed.run("prompt", "dash", _prompt("c0ffee"))
    assert done.returncode == 0 and done.stdout.count(TEXT) == 1, done
    assert "(1 unread)" in done.stdout and "at start" in done.stdout


# ----- what the gate is handed ----------------------------------------------------------------
@pytest.mark.parametrize("shell", SHELLS)
def test_a_first_prompt_whose_json_spans_several_lines_still_gets_the_text_once(
    installed: Installed, shell: str
) -> None:
    _settled_first(installed, shell)
    done = installed.run("prompt", shell, _prompt("abc123", indent=2))
    assert done.returncode == 0 and done.stdout.count(TEXT) == 1, done
    again = installed.run("prompt", shell, _prompt("abc123"))
    assert again.returncode == 0 and TEXT not in again.stdout, again


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(
    "cc",
    ['a"quote', "caf\u00e9", "x" * 65, "a b", "a\\b", "'$(touch pwned)'", "-n"],
    ids=["quote", "non-ascii", "long", "space", "backslash", "shell", "dash-n"],
)
def test_an_odd_session_id_gets_the_text_exactly_once(
    installed: Installed, shell: str, cc: str
) -> None:
    """An id the gate cannot compare as a plain word is decided by ackdeck, which keeps a
    digest of it: the text once, never at every prompt, never lost."""
    _settled_first(installed, shell)
    done = installed.run("prompt", shell, _prompt(cc))
    assert done.returncode == 0 and done.stdout.count(TEXT) == 1, done
    again = installed.run("prompt", shell, _prompt(cc))
    assert again.returncode == 0 and TEXT not in again.stdout, again
    assert not (installed.root / "pwned").exists()


@pytest.mark.parametrize("shell", SHELLS)
def test_a_session_id_in_the_prompt_text_is_not_taken_for_the_sessions(
    installed: Installed, shell: str
) -> None:
    """The user's prompt is in the same JSON: a `"session_id":"…"` typed there is escaped,
    so the gate finds the hook's own id (the first key Claude Code writes)."""
    _settled_first(installed, shell)
    assert installed.run("prompt", shell, _prompt()).stdout.count(TEXT) == 1
    payload = json.loads(_prompt("feedbeef"))
    payload["prompt"] = f'"session_id":"{CC}"'
    done = installed.run("prompt", shell, json.dumps(payload, separators=(",", ":")) + "\n")
    assert done.returncode == 0 and done.stdout.count(TEXT) == 1, done


# ----- ackdeck's own file in a hostile state ---------------------------------------------------
@pytest.mark.parametrize("shell", SHELLS)
def test_a_fifo_at_start_told_neither_hangs_the_prompt_nor_loses_the_text(
    installed: Installed, shell: str
) -> None:
    _settled_first(installed, shell)
    told = locations.start_told(installed.home, SESSION)
    told.unlink()
    os.mkfifo(told)
    try:
        done = installed.run("prompt", shell, _prompt("f1f0"), timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError("the prompt hook hung on a FIFO at start-told") from None
    assert done.returncode == 0 and done.stdout.count(TEXT) == 1, done


@pytest.mark.parametrize("shell", SHELLS)
def test_a_symlink_at_start_told_never_truncates_its_target(
    installed: Installed, shell: str
) -> None:
    """Not through the gate's write (a stamp that holds), nor ackdeck's (one that does not)."""
    precious = installed.root / "precious.txt"
    precious.write_text("[t1] ops: keep me\n")
    told = locations.start_told(installed.home, SESSION)
    for settled in (True, False):
        if settled:
            _settled_first(installed, shell)
        else:
            installed.stamp("prompt").unlink()
        told.unlink(missing_ok=True)
        told.symlink_to(precious)
        done = installed.run("prompt", shell, _prompt(f"s{settled}"))
        assert done.returncode == 0 and done.stdout.count(TEXT) == 1, done
        assert precious.read_text() == "[t1] ops: keep me\n"


# ----- an install the previous version wrote ----------------------------------------------------
def _previous_install(settings: Path, room: Path) -> dict[str, object]:
    """What the previous version's `hooks install` wrote: SessionStart with no matcher, and
    the prompt gate without --session-start (as it was then, byte for byte from that code:
    the gate for a command without the flag)."""
    cmds = hooks.hook_commands(ACKDECK, SESSION, [room])
    prompt = execs(cmds["UserPromptSubmit"] or "")
    prompt.remove("--session-start")
    gate = prompt.index("--gate")
    old_prompt = hooks.gate_command("prompt", prompt[:gate], None, SESSION, [str(room)])
    data = hooks.merge_hooks({}, {**cmds, "UserPromptSubmit": old_prompt})
    data["hooks"]["SessionStart"] = [{"hooks": data["hooks"]["SessionStart"][0]["hooks"]}]
    settings.write_text(json.dumps(data, indent=2))
    return data


def test_a_previous_versions_install_still_gives_the_text_once(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """Until `hooks install` is run again, its SessionStart hook gives the text at startup
    and its prompt hook (no --session-start) never repeats it, stamp or not."""
    room = tmp_path / "rooms" / "inbox.txt"
    room.parent.mkdir()
    room.touch()
    data = _previous_install(tmp_path / "settings.json", room)
    commands = {
        d: waited_for(data, e)["command"]
        for d, e in (("bootstrap", "SessionStart"), ("prompt", "UserPromptSubmit"))
    }
    inst = Installed(tmp_path, cli_env, room, {**commands, "stop": commands["prompt"]})
    for _ in range(3):  # through ackdeck, then (once stamped) through the old gates
        start = inst.run("bootstrap", "dash")
        assert start.returncode == 0 and start.stdout.count(TEXT) == 1, start
        prompt = inst.run("prompt", "dash", _prompt())
        assert prompt.returncode == 0 and TEXT not in prompt.stdout, prompt
        _date_back(tmp_path)


def test_hooks_install_rewrites_a_previous_versions_settings_once(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "rooms" / "inbox.txt"
    room.parent.mkdir()
    room.touch()
    settings = tmp_path / "settings.json"
    _previous_install(settings, room)
    data = installed_hooks(cli_env, settings, room, SESSION)
    (group,) = data["hooks"]["SessionStart"]
    assert group["matcher"] == "resume|clear|compact"
    for event in ("UserPromptSubmit", "SessionStart"):
        ours = [h for g in data["hooks"][event] for h in g["hooks"]]
        assert len(ours) == 1, ours
    assert "--session-start" in execs(waited_for(data, "UserPromptSubmit")["command"])
    again = install_hooks(cli_env, settings, room, SESSION)
    assert again.returncode == 0 and "nothing changed" in again.stdout, again.stdout


# ----- through real Claude Code ----------------------------------------------------------------
def test_a_real_claude_turn_gets_the_start_text_once_with_its_first_prompt_and_resumes_with_it(
    tmp_path: Path,
) -> None:
    """What the model receives in its first request: the session-start text once, given by
    the UserPromptSubmit hook (no SessionStart hook ran at startup), through ackdeck and then
    from the gate's stamp; after `--resume` the reminder once, beside the first run's text."""
    from tests.helpers import agent_clients as clients
    from tests.helpers.agent_clients import Setup
    from tests.helpers.model_stub import ModelStub

    clients.need_client("claude")
    s = Setup(tmp_path).make()
    by_prompt = f"UserPromptSubmit hook success: ackdeck: {TEXT}."
    with ModelStub([]) as stub:  # every turn is answered "done"
        before = None
        for _ in range(5):  # until a first prompt is served from the stamps
            seen = len(stub.turns())
            done = clients.claude(s, stub.url, "Say done.", max_turns=1)
            assert done.returncode == 0, done.stderr[-2000:]
            first = json.dumps(stub.turns()[seen])
            assert first.count(TEXT) == 1 and first.count(by_prompt) == 1, first[-3000:]
            assert "SessionStart" not in first
            stamps = sorted(locations.notices_dir(s.home, s.session).glob("quiet-*[0-9a-f]"))
            now = [_identity(p) for p in stamps]
            if len(stamps) == 3 and now == before:
                break
            before = now
            _date_back(s.root)
        else:
            raise AssertionError("the first prompt was never served from the stamps")
        claude_session = json.loads(done.stdout)["session_id"]
        told = locations.start_told(s.home, s.session).read_text()
        assert told == f"{claude_session}\n"
        starts = [e for e in log.events(s.home, s.session) if e["ev"] == "start"]
        assert starts and starts[-1].get("cc") == claude_session

        seen = len(stub.turns())
        done = clients.claude(
            s, stub.url, "Say done.", max_turns=1, extra_args=["--resume", claude_session]
        )
        assert done.returncode == 0, done.stderr[-2000:]
        resumed = json.dumps(stub.turns()[seen])
        assert resumed.count("(ackdeck: reminder after resume)") == 1
        assert resumed.count(TEXT) == 2  # the first run's, in the history, and the reminder


def test_a_real_interactive_session_is_told_at_its_first_prompt_and_once_after_a_clear(
    tmp_path: Path,
) -> None:
    """An interactive `claude` (tmux, AGENT-LOOPS.md) sends nothing to the model and records
    no start before its owner's first words (the premise: nothing needs the text earlier);
    its first prompt carries the text once; `/clear` starts another Claude Code session whose
    SessionStart hook gives the reminder and records the new id, so the prompt after it has
    the text once (the reminder), and the next prompt none again."""
    import shutil
    import uuid

    from tests.helpers import agent_clients as clients
    from tests.helpers.agent_clients import Setup
    from tests.helpers.claude_tmux import API_KEY, Session, _seed, type_line
    from tests.helpers.model_stub import ModelStub
    from tests.helpers.wait import eventually

    exe = clients.need_client("claude")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    s = Setup(tmp_path)
    _seed(s.user_home, s.workdir)
    s.make()
    done = subprocess.run(
        [*s.ackdeck(), "--home", str(s.home), "hooks", "install", "--session", s.session,
         "--room", str(s.room), "--ackdeck", " ".join([*s.ackdeck(), "--home", str(s.home)])],
        cwd=s.workdir, env=s.base_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    told = locations.start_told(s.home, s.session)

    def requests_with(words: str, stub: ModelStub) -> list[str]:
        return [t for t in map(json.dumps, stub.turns()) if words in t and '"messages"' in t]

    def turn_ended() -> bool:
        """A Stop hook ran (or its gate marked it) since the latest prompt: the turn is over."""
        events = log.events(s.home, s.session)
        prompted = max((e["t"] for e in events if e["ev"] == "prompt"), default=None)
        return prompted is not None and any(
            e["ev"] == "stop" and e["t"] >= prompted for e in events
        )

    with ModelStub([]) as stub:  # every request is answered "done"
        env = {
            "HOME": str(s.user_home),
            "PATH": os.environ["PATH"],
            "TERM": "xterm-256color",
            "ANTHROPIC_BASE_URL": stub.url,
            "ANTHROPIC_API_KEY": API_KEY,
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",  # bypass mode as root
            "PYTHONPATH": s.base_env()["PYTHONPATH"],
        }
        tmux = ["tmux", "-L", f"ackdeck-test-{uuid.uuid4().hex[:12]}"]
        argv = [*tmux, "new-session", "-d", "-x", "200", "-y", "50", "-c", str(s.workdir)]
        for k, v in env.items():
            argv += ["-e", f"{k}={v}"]
        argv += [str(exe), "--permission-mode", "bypassPermissions"]  # no prompt: it waits
        subprocess.run(argv, check=True, env={**os.environ, "TMUX": ""})
        pane = Session(tmux, s.user_home, s.user_home / ".claude", s.workdir)
        try:
            eventually(lambda: "bypass permissions on" in pane.screen(), what="the prompt box")
            assert requests_with("you are session", stub) == []
            assert [e["ev"] for e in log.events(s.home, s.session)] == []

            type_line(pane, "Say alpha.")
            first = eventually(lambda: requests_with("Say alpha.", stub), what="alpha")[0]
            by_prompt = f"UserPromptSubmit hook success: ackdeck: {TEXT}"
            assert first.count(TEXT) == 1 and first.count(by_prompt) == 1, first[-3000:]
            first_id = told.read_text()
            eventually(turn_ended, what="alpha's Stop hook")

            type_line(pane, "/clear")
            eventually(lambda: told.read_text() not in ("", first_id), what="the clear's new id")
            type_line(pane, "Say beta.")
            beta = eventually(lambda: requests_with("Say beta.", stub), what="beta")[0]
            assert beta.count("(ackdeck: reminder after clear)") == 1 and beta.count(TEXT) == 1
            eventually(turn_ended, what="beta's Stop hook")

            type_line(pane, "Say gamma.")
            gamma = eventually(lambda: requests_with("Say gamma.", stub), what="gamma")[0]
            assert gamma.count(TEXT) == 1  # beta's reminder, in the history; nothing new
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)
