"""`hooks notify` and `hooks end` run without the hooks module or pathlib
(core/cli/_hook_events.py): the same event recorded, the same one-line errors, and the home
made as resolve_home makes it (core/base/home.py `made_home`, which resolve_home wraps)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ackdeck.core.base import home as home_mod
from ackdeck.core.base import locations
from ackdeck.core.errors import InvalidInput
from tests.helpers.cli import ackdeck, clean_env

NOTIFY = {"session_id": "cc-1", "notification_type": "permission_prompt", "message": "Bash?"}


@pytest.mark.parametrize("fast", [True, False])
def test_notify_and_end_record_their_event_through_either_parser(
    tmp_path: Path, fast: bool
) -> None:
    # The fast parser takes a plain command line; `--session=S` (an `=` form it leaves to
    # argparse) goes through agents_cmd's parser: both reach the same handler.
    h = tmp_path / "home"
    session = ["--session", "s1"] if fast else ["--session=s1"]
    for kind, payload in (("notify", NOTIFY), ("end", {"session_id": "cc-1", "reason": "exit"})):
        out = ackdeck(
            clean_env(), "--home", str(h), "hooks", kind, *session, input=json.dumps(payload)
        )
        assert (out.returncode, out.stdout, out.stderr) == (0, "", ""), out
    events = [json.loads(x) for x in (h / "agents" / "s1.jsonl").read_text().splitlines()]
    assert [(e["ev"], e["detail"], e["cc"]) for e in events] == [
        ("notify", "permission_prompt: Bash?", "cc-1"),
        ("end", "exit", "cc-1"),
    ]
    assert oct((h / "agents").stat().st_mode & 0o777) == "0o700"


def test_a_home_that_is_a_file_or_a_bad_session_is_one_line_and_exit_1(tmp_path: Path) -> None:
    afile = tmp_path / "f"
    afile.write_text("")
    cases = [
        (["--home", str(afile), "hooks", "notify", "--session", "s1"], "is not a directory"),
        (
            ["--home", str(tmp_path / "h"), "hooks", "end", "--session", "a/b"],
            "invalid session name",
        ),
    ]
    for args, said in cases:
        out = ackdeck(clean_env(), *args, input="{}")
        assert out.returncode == 1 and out.stdout == "", out
        assert out.stderr.count("\n") == 1 and said in out.stderr, out.stderr
    assert afile.read_text() == "" and not (tmp_path / "h" / "agents").exists()


@pytest.mark.parametrize(
    "given", ["rel", "rel/", "./a//b/.", "a/../b", "~", "~/x/", "/abs//y/", "//net/x", None, ""]
)
def test_made_home_names_and_makes_what_resolve_home_always_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.delenv("ACKDECK_HOME", raising=False)
    if given is not None and given.startswith("//"):
        given = str(tmp_path) + given[1:]  # the two-slash form inside the test's folder
    # The rule resolve_home had with pathlib: Path(home).expanduser().absolute().
    want = Path(given or Path.home() / ".ackdeck").expanduser().absolute()
    got = home_mod.made_home(given)
    assert got == str(want) and os.path.isdir(got)
    assert (os.stat(got).st_mode & 0o777) == 0o700
    assert home_mod.resolve_home(given) == want


def test_no_home_directory_at_all_is_said_never_a_tilde_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No HOME and no passwd entry (a container's arbitrary uid): expanduser leaves `~`.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACKDECK_HOME", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda p: p)
    for home in (None, "~/h", "~"):
        with pytest.raises(InvalidInput, match="cannot expand ~ in the home .*set HOME"):
            home_mod.made_home(home)
    with pytest.raises(InvalidInput, match="Claude Code's directory: set HOME"):
        locations.claude_projects_dir({})
    assert list(tmp_path.iterdir()) == []


def test_a_tilde_user_that_does_not_exist_is_one_line_and_makes_no_folder(
    tmp_path: Path,
) -> None:
    # Bash leaves `~nosuchuser` (and any `~` after `--home=`) to ackdeck; expanduser then
    # leaves it as it is. The pathlib rule raised RuntimeError (a traceback); a folder named
    # `~nosuchuser` in the working directory is worse.
    for args in (["--home", "~nosuchuserxyz/h"], ["--home=~nosuchuserxyz"]):
        out = ackdeck(clean_env(), *args, "hooks", "notify", "--session", "s1", cwd=tmp_path)
        assert out.returncode == 1 and out.stdout == "", out
        assert out.stderr.count("\n") == 1 and "cannot expand ~" in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_home_that_cannot_be_made_leaves_no_parent_folders_behind(tmp_path: Path) -> None:
    # The folder itself is tried first, its parents only when it lacks them (Path.mkdir's
    # order): a path longer than the system takes (PATH_MAX, 4096 on Linux) fails before any
    # parent is made (os.makedirs made each parent it could first).
    deep = tmp_path.joinpath(*["y" * 200] * 25)
    out = ackdeck(clean_env(), "--home", str(deep), "hooks", "end", "--session", "s1")
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out
    assert list(tmp_path.iterdir()) == []


def test_a_lone_surrogate_in_the_hook_json_is_recorded_not_a_traceback(tmp_path: Path) -> None:
    h = tmp_path / "home"
    payload = '{"message": "caf\\ud83d", "session_id": "cc-1"}'  # valid JSON, no UTF-8
    out = ackdeck(clean_env(), "--home", str(h), "hooks", "notify", "--session", "s", input=payload)
    assert (out.returncode, out.stderr) == (0, ""), out
    (event,) = [json.loads(x) for x in (h / "agents" / "s.jsonl").read_text().splitlines()]
    assert event["detail"] == "other: caf?" and event["cc"] == "cc-1"
