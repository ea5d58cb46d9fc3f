"""The hooks as a user installs them: `ackdeck hooks install` into a settings file, naming this
checkout's `ackdeck` (the hooks' commands run it), for one session and one room."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.helpers.cli import ACKDECK, ackdeck


def install_hooks(
    env: Mapping[str, str], settings: Path, room: Path, session: str = "agent"
) -> subprocess.CompletedProcess[str]:
    """`ackdeck hooks install --settings SETTINGS --session SESSION --room ROOM`, its result
    (a test may install twice: the second run says nothing changed)."""
    return ackdeck(
        env,
        "hooks",
        "install",
        "--settings",
        str(settings),
        "--session",
        session,
        "--room",
        str(room),
        "--ackdeck",
        shlex.join(ACKDECK),
    )


def installed_hooks(
    env: Mapping[str, str], settings: Path, room: Path, session: str = "agent"
) -> dict[str, Any]:
    """The settings after a hooks install that must succeed."""
    out = install_hooks(env, settings, room, session)
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(settings.read_text())
    return data


def waited_for(settings: Mapping[str, Any], event: str) -> dict[str, Any]:
    """The one ackdeck hook of `event` Claude Code waits for (not `"async"`): a gated prompt
    or Stop hook has an async `hooks presence` beside it."""
    from ackdeck.core import hook_install

    (hook,) = [
        h
        for g in settings["hooks"].get(event, [])
        for h in g["hooks"]
        if hook_install.is_ackdeck_hook(event, h.get("command")) and not h.get("async")
    ]
    return hook


def execs(command: str) -> list[str]:
    """The ackdeck command line a hook runs: what a gated hook's prelude `exec`s (without the
    here-document that hands on its JSON), or the command itself."""
    return shlex.split(command.rsplit("; exec ", 1)[-1].split(" <<", 1)[0])
