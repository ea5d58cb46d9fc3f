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
