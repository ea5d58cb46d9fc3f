"""The SessionEnd hook as a gate that starts no Python (issue 43): `hooks install` writes it as a
POSIX sh program of builtins that puts the hook's JSON in the session's end mark
(agents/.SESSION.end); presence reads that mark as the `end` event `ackdeck hooks end` records
(its only job), ordered among the session's other events, also when a restart follows within
the mark's clock grain. What the gate cannot write as a plain file (no presence folder yet, a
FIFO, a symlink or a directory at the mark) it hands to `ackdeck hooks end`, as before."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ackdeck.core import hook_install
from ackdeck.core.base import locations
from ackdeck.core.presence import history, log
from ackdeck.core.presence.model import decide
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.hooks import installed_hooks
from tests.helpers.wait import eventually

SESSION = "agent"
CC = "3f1c0d6e-5b7a-4c1e-9a0b-2d4e6f8a1b3c"  # Claude Code's id of the session's first run
CC2 = "9a0b2d4e-6f8a-4b3c-3f1c-0d6e5b7a4c1e"  # and of a run started after it ended
END = {"session_id": CC, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
HANG_BOUND_S = 30.0  # a gate that waits on a FIFO would hang until Claude Code's timeout


def _settings(tmp_path: Path, env: dict[str, str], room: Path) -> dict[str, Any]:
    return installed_hooks(env, tmp_path / "proj" / ".claude" / "settings.json", room)


def _end_hook(settings: dict[str, Any]) -> dict[str, Any]:
    (group,) = settings["hooks"]["SessionEnd"]
    (hook,) = group["hooks"]
    return dict(hook)


def _run(command: str, env: dict[str, str], payload: dict[str, Any]) -> None:
    """A hook as Claude Code runs it: `/bin/sh -c`, its JSON on stdin (one compact line)."""
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_BOUND_S,
        input=json.dumps(payload, separators=(",", ":")) + "\n",
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done


def _start(env: dict[str, str], room: Path, cc: str) -> None:
    """A session start recorded by ackdeck's own hook (the first start of a session always
    runs it: no stamp yet)."""
    payload = {"session_id": cc, "hook_event_name": "SessionStart", "source": "startup"}
    done = subprocess.run(
        [*ACKDECK, "hooks", "bootstrap", "--session", SESSION, "--room", str(room)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        input=json.dumps(payload),
    )
    assert done.returncode == 0, done.stderr


def _row(env: dict[str, str]) -> dict[str, Any]:
    out = ackdeck(env, "agents", "--json")
    assert out.returncode == 0, out.stderr
    (row,) = [a for a in json.loads(out.stdout)["agents"] if a["session"] == SESSION]
    return dict(row)


def _text_row(env: dict[str, str]) -> list[str]:
    """The session's line of `ackdeck agents`, its SINCE column left out (seconds ago)."""
    out = ackdeck(env, "agents")
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stdout.splitlines() if x.startswith(SESSION + " ")]
    words = line.split()
    return words[:2] + words[3:]


def _logged(home: Path) -> list[str]:
    """The kinds ackdeck's Python wrote in the session's presence log (not the marks)."""
    text = locations.presence_log(home, SESSION).read_text()
    return [json.loads(x)["ev"] for x in text.splitlines()]


def _home(env: dict[str, str]) -> Path:
    return Path(env["ACKDECK_HOME"])


def test_a_gated_session_end_shows_the_session_gone_as_the_python_hook_did(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    hook = _end_hook(_settings(tmp_path, cli_env, room))
    assert hook["async"] is True  # Claude Code still does not wait for it
    # The same session in another home, ended by `ackdeck hooks end` itself: the reference.
    ref_env = {**cli_env, "ACKDECK_HOME": str(tmp_path / "ref-home")}
    for env in (cli_env, ref_env):
        _start(env, room, CC)
    _run(hook["command"], cli_env, END)
    done = subprocess.run(
        [*ACKDECK, "hooks", "end", "--session", SESSION],
        input=json.dumps(END),
        capture_output=True,
        text=True,
        env=ref_env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # No Python ran for the gated end: the log holds the start only, the mark the end.
    assert _logged(_home(cli_env)) == ["start"]
    assert locations.presence_mark(_home(cli_env), SESSION, "end").is_file()
    gated, ref = _row(cli_env), _row(ref_env)
    assert gated["state"] == ref["state"] == "gone"
    assert gated["evidence"] == ref["evidence"] == "SessionEnd hook (prompt_input_exit)"
    assert abs(gated["since"] - ref["since"]) < 5
    same = ("state", "evidence", "claude_session", "rooms", "unread", "host")
    assert {k: gated.get(k) for k in same} == {k: ref.get(k) for k in same}
    assert _text_row(cli_env) == _text_row(ref_env)
    # The timeline names the end with its reason, as the logged event did.
    (end,) = [e for e in history.timeline(_home(cli_env), SESSION) if e["ev"] == "end"]
    assert end["detail"] == "prompt_input_exit" and end["cc"] == CC


def test_a_restart_after_a_gated_end_shows_the_session_live_again(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    hook = _end_hook(_settings(tmp_path, cli_env, room))
    _start(cli_env, room, CC)
    _run(hook["command"], cli_env, END)
    assert _row(cli_env)["state"] == "gone"
    assert locations.presence_mark(_home(cli_env), SESSION, "end").is_file()
    _start(cli_env, room, CC2)  # at once: within a coarse clock's tick of the end, maybe
    row = _row(cli_env)
    assert row["state"] == "idle" and "SessionStart" in row["evidence"], row
    _run(hook["command"], cli_env, {**END, "session_id": CC2, "reason": "other"})
    row = _row(cli_env)
    assert row["state"] == "gone" and row["evidence"] == "SessionEnd hook (other)", row
    assert _logged(_home(cli_env)) == ["start", "start"]


SHELLS = {"dash": ["/bin/sh", "-c"], "bash": ["bash", "-c"]}
# A payload whose text a shell could mangle: `$`, backquotes, backslashes, quotes, a `%`.
AWKWARD = {**END, "cwd": "/srv/$HOME/`id`/a\\nb/'q'/\"d\"/100%s"}
ENCODINGS = {
    "one compact line": lambda v: json.dumps(v, separators=(",", ":")) + "\n",
    "no newline": lambda v: json.dumps(v),
    "indented": lambda v: json.dumps(v, indent=2) + "\n",
}


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_hooks_json_reaches_the_mark_or_ackdeck_unaltered(
    tmp_path: Path, cli_env: dict[str, str], shell: str, encoding: str
) -> None:
    """Read with `read -r` and written with `printf '%s'` (no escape is interpreted), or,
    with something else at the mark, handed to `ackdeck hooks end` in a here-document (its
    body is expanded once: `$p`)."""
    room = tmp_path / "inbox.txt"
    room.touch()
    hook = _end_hook(_settings(tmp_path, cli_env, room))
    _start(cli_env, room, CC)
    mark = locations.presence_mark(_home(cli_env), SESSION, "end")

    def end() -> None:
        done = subprocess.run(
            [*SHELLS[shell], hook["command"]],
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=HANG_BOUND_S,
            input=ENCODINGS[encoding](AWKWARD),
        )
        assert done.returncode == 0 and done.stdout == done.stderr == "", done

    end()
    assert json.loads(mark.read_text()) == AWKWARD
    assert _logged(_home(cli_env)) == ["start"]
    assert oct(mark.stat().st_mode & 0o777) == oct(0o600)  # it holds the project's paths
    mark.unlink()
    mark.mkdir()  # something else at the mark: ackdeck records the end
    end()
    (logged,) = [e for e in history.events(_home(cli_env), SESSION) if e["ev"] == "end"]
    assert "marked" not in logged
    assert (logged["cc"], logged["detail"]) == (CC, "prompt_input_exit")


# ----- an end mark among events within its clock's grain -----------------------------------
def _mark_end(home: Path, at_ns: int, cc: str) -> None:
    """An end mark as the gate leaves it, its mtime set to `at_ns` (a whole second: a
    filesystem that keeps seconds; else a coarse clock's tick)."""
    mark = locations.presence_mark(home, SESSION, "end")
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(json.dumps({**END, "session_id": cc}) + "\n")
    os.utime(mark, ns=(at_ns, at_ns))


def _state(home: Path) -> str:
    facts = history.load(home, SESSION)
    return decide(facts, time.time()).state


SECOND = 1_796_000_000  # a whole second, a while ago


def test_an_end_mark_kept_in_whole_seconds_still_ends_its_own_run_started_that_second(
    tmp_path: Path,
) -> None:
    """A filesystem that keeps whole seconds truncates the mark's time: a run that started at
    .4 s and ended at .9 s has an end mark dated .0, before its own start."""
    log.record(tmp_path, SESSION, "start", at=SECOND + 0.4, detail="startup", cc=CC)
    log.record(tmp_path, SESSION, "stop", at=SECOND + 0.8, cc=CC)
    _mark_end(tmp_path, SECOND * 1_000_000_000, CC)
    assert _state(tmp_path) == "gone"
    assert [e["ev"] for e in history.events(tmp_path, SESSION)] == ["start", "stop", "end"]


def test_a_restart_in_the_same_second_as_a_whole_second_end_mark_is_live(tmp_path: Path) -> None:
    log.record(tmp_path, SESSION, "start", at=SECOND - 5.0, detail="startup", cc=CC)
    log.record(tmp_path, SESSION, "stop", at=SECOND + 0.2, cc=CC)
    _mark_end(tmp_path, SECOND * 1_000_000_000, CC)  # really at .3
    assert _state(tmp_path) == "gone"
    log.record(tmp_path, SESSION, "start", at=SECOND + 0.6, detail="startup", cc=CC2)
    assert _state(tmp_path) == "idle"
    kinds = [e["ev"] for e in history.events(tmp_path, SESSION)]
    assert kinds == ["start", "stop", "end", "start"]


def test_a_gated_restart_marked_in_the_same_second_as_the_end_mark_is_live(tmp_path: Path) -> None:
    """Both marks kept in whole seconds: the start mark names another Claude Code session."""
    log.record(tmp_path, SESSION, "start", at=SECOND - 5.0, detail="startup", cc=CC)
    _mark_end(tmp_path, SECOND * 1_000_000_000, CC)
    assert _state(tmp_path) == "gone"
    start = locations.presence_mark(tmp_path, SESSION, "start")
    start.write_text(CC2 + "\n")
    os.utime(start, ns=(SECOND * 1_000_000_000,) * 2)
    assert _state(tmp_path) == "idle"


def test_an_end_mark_as_old_as_a_logged_start_is_ordered_by_whose_start_it_is(
    tmp_path: Path,
) -> None:
    """A coarse clock's tick: the mark's mtime equals a start logged in that same tick. Its
    own run's start came before it; another run's start is a restart after it."""
    at = SECOND + 0.5
    log.record(tmp_path, SESSION, "start", at=at, detail="startup", cc=CC)
    _mark_end(tmp_path, round(at * 1e9), CC)
    assert _state(tmp_path) == "gone"
    log.record(tmp_path, SESSION, "start", at=at, detail="startup", cc=CC2)
    assert _state(tmp_path) == "idle"


def test_an_end_mark_older_than_a_later_start_is_not_an_end(tmp_path: Path) -> None:
    _mark_end(tmp_path, (SECOND - 60) * 1_000_000_000 + 123_456_789, CC)
    assert _state(tmp_path) == "gone"
    log.record(tmp_path, SESSION, "start", at=SECOND, detail="startup", cc=CC)  # a resume
    assert _state(tmp_path) == "idle"


# ----- what the gate hands to ackdeck ------------------------------------------------------
def _fifo(mark: Path) -> None:
    os.mkfifo(mark)


def _symlink(mark: Path) -> None:
    target = mark.parent.parent / "precious.txt"
    target.write_text("keep me\n")
    mark.symlink_to(target)


def _directory(mark: Path) -> None:
    mark.mkdir()


OBSTACLES = {"a FIFO": _fifo, "a symlink": _symlink, "a directory": _directory}


@pytest.mark.parametrize("obstacle", OBSTACLES)
def test_something_else_at_the_end_mark_hands_the_end_to_ackdeck_without_hanging(
    tmp_path: Path, cli_env: dict[str, str], obstacle: str
) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    hook = _end_hook(_settings(tmp_path, cli_env, room))
    _start(cli_env, room, CC)
    mark = locations.presence_mark(_home(cli_env), SESSION, "end")
    _run(hook["command"], cli_env, END)  # a plain mark: no Python
    assert _logged(_home(cli_env)) == ["start"] and mark.is_file()
    mark.unlink()
    OBSTACLES[obstacle](mark)
    _run(hook["command"], cli_env, END)  # within HANG_BOUND_S: a FIFO is never opened
    assert _logged(_home(cli_env)) == ["start", "end"]  # `ackdeck hooks end` got the JSON
    row = _row(cli_env)
    assert row["state"] == "gone" and row["evidence"] == "SessionEnd hook (prompt_input_exit)"
    if obstacle == "a symlink":
        assert (mark.parent.parent / "precious.txt").read_text() == "keep me\n"
        assert mark.is_symlink()


def test_a_session_end_before_any_presence_is_recorded_by_ackdeck(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """No presence folder yet (the gate writes into it, ackdeck creates it)."""
    room = tmp_path / "inbox.txt"
    room.touch()
    hook = _end_hook(_settings(tmp_path, cli_env, room))
    assert not locations.agents_dir(_home(cli_env)).exists()
    _run(hook["command"], cli_env, END)
    assert _logged(_home(cli_env)) == ["end"]
    assert _row(cli_env)["state"] == "gone"
    # The folder is there now: the next run's end is a mark.
    _start(cli_env, room, CC2)
    _run(hook["command"], cli_env, {**END, "session_id": CC2})
    assert _logged(_home(cli_env)) == ["end", "start"]
    assert _row(cli_env)["state"] == "gone"


def test_hooks_install_upgrades_the_python_session_end_hook_once(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    settings = tmp_path / "proj" / ".claude" / "settings.json"
    new = _end_hook(installed_hooks(cli_env, settings, room))
    # As the previous release installed it: `ackdeck hooks end`, async.
    data = json.loads(settings.read_text())
    old = shlex.join(
        [*ACKDECK, "--home", cli_env["ACKDECK_HOME"], "hooks", "end", "--session", SESSION]
    )
    data["hooks"]["SessionEnd"] = [
        {"hooks": [{"type": "command", "command": old, "timeout": 15, "async": True}]}
    ]
    settings.write_text(json.dumps(data))
    upgraded = installed_hooks(cli_env, settings, room)
    assert _end_hook(upgraded) == new and new["command"] != old
    assert new["command"].startswith("h=")  # the gate, not a Python start
    before = settings.read_bytes()
    assert installed_hooks(cli_env, settings, room) == upgraded
    assert settings.read_bytes() == before  # installing twice is a no-op
    assert hook_install.is_ackdeck_hook("SessionEnd", new["command"])


# ----- through real Claude Code ----------------------------------------------------------------
def test_a_real_claude_p_ends_through_the_gate_and_its_next_run_is_live_again(
    tmp_path: Path,
) -> None:
    """`claude -p` (2.1.x) starts the async SessionEnd gate detached as it exits, the hook's
    JSON on its stdin: the mark names the run's own Claude Code session, no `ackdeck hooks
    end` ran, and `ackdeck agents` says gone by the SessionEnd hook; the next run of the
    session is working mid-turn (the old end mark does not end it) and gone after it."""
    from ackdeck.core.service.agents import list_agents
    from tests.helpers import agent_clients as clients
    from tests.helpers.agent_clients import Setup
    from tests.helpers.model_stub import ModelStub, Say

    clients.need_client("claude")
    s = Setup(tmp_path).make()
    mark = locations.presence_mark(s.home, s.session, "end")
    env = {**s.base_env(), "ACKDECK_HOME": str(s.home)}

    def ended_by(not_of: str | None) -> dict[str, Any] | None:
        """The session's row once gone by a mark of a run other than `not_of`'s."""
        if not mark.is_file():
            return None
        payload = json.loads(mark.read_text() or "{}")
        if not_of is not None and payload.get("session_id") == not_of:
            return None
        row = _row(env)
        return row if row["state"] == "gone" else None

    with ModelStub([Say("done")]) as stub:
        run = clients.claude(s, stub.url, "Say done.")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    row = eventually(lambda: ended_by(None), timeout=HANG_BOUND_S, what="the gated end")
    first = json.loads(mark.read_text())
    assert first["hook_event_name"] == "SessionEnd" and first["session_id"]
    assert row["evidence"] == f"SessionEnd hook ({first['reason']})"
    assert row["claude_session"] == first["session_id"]
    assert "end" not in _logged(s.home)  # no Python started for it
    assert _text_row(env)[1] == "gone"

    seen: dict[str, str] = {}

    def mid_turn() -> None:
        row = list_agents(s.home).find(s.session)
        assert row is not None
        seen["state"], seen["evidence"] = row.state, row.evidence

    with ModelStub([Say("done", before=mid_turn)]) as stub:
        run = clients.claude(s, stub.url, "Say done.")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    assert seen["state"] == "working", seen
    row = eventually(
        lambda: ended_by(first["session_id"]), timeout=HANG_BOUND_S, what="the second end"
    )
    assert row["evidence"].startswith("SessionEnd hook (")
    assert "end" not in _logged(s.home)
