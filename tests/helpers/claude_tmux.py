"""A real interactive Claude Code session in a tmux server of the test's own, offline (the
recipe of shared/AGENT-LOOPS.md: a scripted model on loopback, a throwaway HOME pre-seeded so
no dialog stops it, bypass permissions). `claude -p` keeps no registry record and makes no
team: only an interactive session does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.agent_clients import need_client

API_KEY = "stub-key-0123456789abcdefghij"


@dataclass
class Session:
    tmux: list[str]  # `tmux -L SOCKET`: this test's own server
    home: Path  # the client's HOME
    claude: Path  # its ~/.claude
    cwd: Path

    def pane_id(self) -> str:
        out = subprocess.run(
            [*self.tmux, "display-message", "-p", "#{pane_id}"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()

    def screen(self) -> str:
        out = subprocess.run([*self.tmux, "capture-pane", "-p"], capture_output=True, text=True)
        return out.stdout


def _seed(home: Path, cwd: Path) -> None:
    (home / ".claude").mkdir(parents=True)
    cwd.mkdir(parents=True)
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "theme": "dark",
                "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
                "projects": {str(cwd): {"hasTrustDialogAccepted": True}},
                "bypassPermissionsModeAccepted": True,
            }
        )
    )
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"teammateMode": "in-process", "skipDangerousModePermissionPrompt": True})
    )


@contextmanager
def claude_in_tmux(
    root: Path, url: str, prompt: str, *, extra_env: dict[str, str] | None = None
) -> Iterator[Session]:
    """`claude PROMPT` running in a tmux pane; its server is killed (by its socket, which is
    this test's alone) at the end."""
    exe = need_client("claude")
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    home, cwd = root / "user", root / "project"
    _seed(home, cwd)
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "TERM": "xterm-256color",
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": API_KEY,
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",  # bypass mode as root
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
        **(extra_env or {}),
    }
    tmux = ["tmux", "-L", f"ackdeck-test-{uuid.uuid4().hex[:12]}"]
    argv = [*tmux, "new-session", "-d", "-x", "200", "-y", "50", "-c", str(cwd)]
    for k, v in env.items():
        argv += ["-e", f"{k}={v}"]
    argv += [str(exe), "--permission-mode", "bypassPermissions", prompt]
    subprocess.run(argv, check=True, env={**os.environ, "TMUX": ""})
    try:
        yield Session(tmux, home, home / ".claude", cwd)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


@contextmanager
def claude_again(
    first: Session, url: str, prompt: str, *, extra_env: dict[str, str] | None = None
) -> Iterator[Session]:
    """Another interactive `claude PROMPT` with the same HOME and working directory as
    `first` (a new session after the first was killed: its files stay), in its own tmux
    server, killed at the end."""
    exe = need_client("claude")
    env = {
        "HOME": str(first.home),
        "PATH": os.environ["PATH"],
        "TERM": "xterm-256color",
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": API_KEY,
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1",
        **(extra_env or {}),
    }
    tmux = ["tmux", "-L", f"ackdeck-test-{uuid.uuid4().hex[:12]}"]
    argv = [*tmux, "new-session", "-d", "-x", "200", "-y", "50", "-c", str(first.cwd)]
    for k, v in env.items():
        argv += ["-e", f"{k}={v}"]
    argv += [str(exe), "--permission-mode", "bypassPermissions", prompt]
    subprocess.run(argv, check=True, env={**os.environ, "TMUX": ""})
    try:
        yield Session(tmux, first.home, first.claude, first.cwd)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def type_line(session: Session, text: str) -> None:
    """Type `text` and Enter into the session's pane (a prompt for its lead)."""
    subprocess.run([*session.tmux, "send-keys", "-l", text], check=True)
    subprocess.run([*session.tmux, "send-keys", "Enter"], check=True)
