"""Run a real agent client (Claude Code, Codex CLI, Gemini CLI) offline, once, against a
ModelStub, with ackdeck as its stdio MCP server, the way a user configures it.

Every run gets a throwaway HOME (and CODEX_HOME) under the test's temp dir and a working
directory of its own, so nothing is read from or written to the real home. The clients come
from .cache/npm (`make npm-cache`); `need_client` skips a test with one line when one is
missing. The facts these configurations rest on are in the issue-29 notes (each client's
environment, config file and command line).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.paths import PATHS, REPO

# The clients `make npm-cache` pins; `make test-clients-newest` points ACKDECK_NPM_DIR at the
# newest published ones instead.
NPM_DIR = REPO / (os.environ.get("ACKDECK_NPM_DIR") or ".cache/npm")  # relative: to the repo
NPM_BIN = NPM_DIR / "node_modules" / ".bin"
CLIENTS = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
}
# Only a real hang reaches this: a run is a handful of local turns, seconds even when busy.
RUN_BOUND = 300
# Codex defers MCP tools behind tool_search for the models it knows best (gpt-5.5 does;
# gpt-5.4 gets them loaded on the first turn).
CODEX_MODEL = os.environ.get("ACKDECK_TEST_CODEX_MODEL", "gpt-5.5")


def need_client(name: str) -> Path:
    exe = NPM_BIN / name
    if shutil.which("node") is None:
        pytest.skip(f"node is not installed: the {name} agent-loop tests need it")
    if not exe.exists():
        pytest.skip(f"{NPM_DIR} has no {CLIENTS[name]}: run `make npm-cache`")
    return exe


@dataclass
class Setup:
    """One agent session's files: its ackdeck home, its rooms, the client's HOME and cwd."""

    root: Path
    session: str = "agent"

    @property
    def home(self) -> Path:  # ackdeck's
        return self.root / "ackdeck-home"

    @property
    def user_home(self) -> Path:  # the client's HOME
        return self.root / "user"

    @property
    def workdir(self) -> Path:
        return self.root / "project"

    @property
    def room(self) -> Path:
        return self.root / "rooms" / "inbox.txt"

    def make(self) -> Setup:
        for d in (self.home, self.user_home, self.workdir, self.room.parent):
            d.mkdir(parents=True, exist_ok=True)
        self.room.touch()
        return self

    def ackdeck(self) -> list[str]:
        return [sys.executable, "-m", "ackdeck.core.cli"]

    def server(self) -> dict[str, object]:
        """The MCP server entry, as the connect-agents how-to writes it (with a home)."""
        cmd = [
            *self.ackdeck(),
            "--home",
            str(self.home),
            "mcp",
            "--session",
            self.session,
            "--room",
            str(self.room),
        ]
        return {"command": cmd[0], "args": cmd[1:], "env": {"PYTHONPATH": PATHS}}

    def base_env(self) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "TERM")
        env = {k: os.environ[k] for k in keep if k in os.environ}
        env.update(
            HOME=str(self.user_home),
            PYTHONPATH=PATHS,
            XDG_CONFIG_HOME=str(self.user_home / ".config"),
            XDG_CACHE_HOME=str(self.user_home / ".cache"),
            XDG_DATA_HOME=str(self.user_home / ".local" / "share"),
            NO_COLOR="1",
            CI="1",
        )
        return env


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
    done = subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=RUN_BOUND,
    )
    return Run(done.returncode, done.stdout, done.stderr)


# ----- Claude Code -----------------------------------------------------------------------------
def claude(
    s: Setup,
    url: str,
    prompt: str,
    *,
    hooks: bool = True,
    max_turns: int = 12,
    extra_env: dict[str, str] | None = None,
    extra_args: list[str] | None = None,
) -> Run:
    """The server is given with `--mcp-config`: `claude -p` waits for those servers before its
    first request, not for the project's `.mcp.json` or `claude mcp add` ones (a race)."""
    exe = need_client("claude")
    if hooks:  # ackdeck's hooks in the project's .claude/settings.json, as docs/how-to/hooks.md
        subprocess.run(
            [
                *s.ackdeck(),
                "--home",
                str(s.home),
                "hooks",
                "install",
                "--session",
                s.session,
                "--room",
                str(s.room),
                "--ackdeck",
                " ".join([*s.ackdeck(), "--home", str(s.home)]),
            ],
            cwd=s.workdir,
            env=s.base_env(),
            check=True,
            capture_output=True,
            timeout=RUN_BOUND,
        )
    config = s.root / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ackdeck": s.server()}}))
    env = s.base_env() | {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "stub-key",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        **(extra_env or {}),
    }
    return _run(
        [
            str(exe),
            "-p",
            prompt,
            "--mcp-config",
            str(config),
            "--strict-mcp-config",
            "--allowedTools",
            "mcp__ackdeck",
            "--output-format",
            "json",
            "--max-turns",
            str(max_turns),
            *(extra_args or []),
        ],
        env,
        s.workdir,
    )


# ----- Codex CLI -------------------------------------------------------------------------------
def codex(
    s: Setup,
    url: str,
    prompt: str,
    *,
    server_keys: dict[str, object] | None = None,
    model: str = CODEX_MODEL,
) -> Run:
    """`server_keys`: the `[mcp_servers.ackdeck]` keys beside command, args and env (default:
    `required = true`, so the first turn never races the server's start). `model` matters:
    Codex defers tools and cuts tool output by the model's name."""
    exe = need_client("codex")
    codex_home = s.user_home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    server = s.server()
    lines = [
        f'model = "{model}"',
        'model_provider = "stub"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        "check_for_update_on_startup = false",
        "",
        "[features]",
        "plugins = false",
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[model_providers.stub]",
        'name = "stub"',
        f'base_url = "{url}/v1"',
        'wire_api = "responses"',
        'env_key = "STUB_API_KEY"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
        "[mcp_servers.ackdeck]",
        f"command = {json.dumps(server['command'])}",
        f"args = {json.dumps(server['args'])}",
        *(
            f"{k} = {json.dumps(v)}"
            for k, v in ({"required": True} if server_keys is None else server_keys).items()
        ),
        "",
        "[mcp_servers.ackdeck.env]",
        f"PYTHONPATH = {json.dumps(PATHS)}",
        "",
        f"[projects.{json.dumps(str(s.workdir))}]",
        'trust_level = "trusted"',
        "",
    ]
    (codex_home / "config.toml").write_text("\n".join(lines))
    env = s.base_env() | {"CODEX_HOME": str(codex_home), "STUB_API_KEY": "stub-key"}
    return _run(
        [
            str(exe),
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            prompt,
        ],
        env,
        s.workdir,
    )


# ----- Gemini CLI ------------------------------------------------------------------------------
def gemini(s: Setup, url: str, prompt: str) -> Run:
    exe = need_client("gemini")
    settings = {
        "mcpServers": {"ackdeck": s.server()},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    gdir = s.user_home / ".gemini"
    gdir.mkdir(parents=True, exist_ok=True)
    (gdir / "settings.json").write_text(json.dumps(settings))
    env = s.base_env() | {
        "GEMINI_API_KEY": "stub-key",
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    return _run(
        [str(exe), "-p", prompt, "--approval-mode", "yolo", "--output-format", "json"],
        env,
        s.workdir,
    )
