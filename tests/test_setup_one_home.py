"""A set-up done as the docs say gives the hooks and the MCP server one home, one session and
the same rooms: the Stop hook drains the wakes of the processes the server started, so a hook
baked with `--home H` beside a server without it (the README before issue 29) drained an empty
home while the wakes piled up in another.

The commands are taken from the README and the connect-agents how-to as written, run for real
in a temporary project with ACKDECK_HOME set (as a user who keeps state elsewhere has it), and
what they wrote is read back."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from ackdeck.core.mcp import server_config
from tests.helpers.cli import ackdeck
from tests.helpers.hooks import execs
from tests.helpers.paths import REPO

# Where each page tells a Claude Code user how to set up: from its heading to the next client's.
PAGES = [
    ("README.md", "**Claude Code**", "**Codex CLI**"),
    ("docs/how-to/connect-agents.md", "## Claude Code", "## Codex CLI"),
]
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)


def section(page: str, start: str, end: str) -> str:
    text = (REPO / page).read_text()
    return text[text.index(start) : text.index(end)]


def shell_commands(text: str) -> list[list[str]]:
    """The `ackdeck …` commands of the section's shell blocks (continuations joined), and the
    complete ones it gives inline."""
    inline = re.findall(r"(?<!`)`(ackdeck [^`]*)`", FENCE.sub("", text))
    out = [shlex.split(c) for c in inline if "..." not in c]
    for lang, body in FENCE.findall(text):
        if lang not in ("sh", "console", "bash"):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.removeprefix("$ ").split("#", 1)[0].strip()
            if line.startswith("ackdeck "):
                out.append(shlex.split(line))
    return out


def facts(argv: list[str]) -> dict[str, Any]:
    """Home (None: not given), session and rooms of one ackdeck command line."""
    cut = next(i for i, w in enumerate(argv) if w in ("mcp", "hooks"))
    home = argv[argv.index("--home") + 1] if "--home" in argv[:cut] else None
    rest = argv[cut:]
    rooms = [rest[i + 1] for i, w in enumerate(rest) if w == "--room"]
    return {"home": home, "session": rest[rest.index("--session") + 1], "rooms": rooms}


@pytest.mark.parametrize(("page", "start", "end"), PAGES, ids=[p for p, _, _ in PAGES])
def test_a_set_up_as_written_gives_hooks_and_server_one_home(
    page: str, start: str, end: str, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = dict(cli_env, HOME=str(tmp_path / "userhome"))  # cli_env sets ACKDECK_HOME
    text = section(page, start, end)
    commands = [c for c in shell_commands(text) if c[1:3] == ["hooks", "install"]]
    assert commands, f"{page} tells no `ackdeck hooks install` for Claude Code"
    for argv in commands:
        out = ackdeck(env, *argv[1:], cwd=project)
        assert out.returncode == 0, out.stderr
    mcp_json = project / ".mcp.json"
    if not mcp_json.exists():  # the page has the user write it by hand
        blocks = [b for lang, b in FENCE.findall(text) if lang == "json" and "mcpServers" in b]
        assert blocks, f"{page} gives no .mcp.json for Claude Code"
        mcp_json.write_text(blocks[0])
    server = json.loads(mcp_json.read_text())["mcpServers"]["ackdeck"]
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    served = facts([server["command"], *server["args"]])
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        (group,) = settings["hooks"][event]
        hooked = facts(execs(group["hooks"][0]["command"]))  # what a gate runs
        assert hooked == served, (event, hooked, served)
    # The home the user runs with is the one both name, not merely the same absence of one.
    assert served["home"] == env["ACKDECK_HOME"]


def test_install_warns_when_the_projects_server_has_another_home(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    room = str(tmp_path / "inbox.txt")
    by_hand = {"mcpServers": {"ackdeck": {"command": "ackdeck", "args": [
        "mcp", "--session", "agent", "--room", room]}}}  # fmt: skip
    (project / ".mcp.json").write_text(json.dumps(by_hand))
    out = ackdeck(
        dict(cli_env, HOME=str(tmp_path / "userhome")),
        "hooks",
        "install",
        "--session",
        "agent",
        "--room",
        room,
        cwd=project,
    )
    assert out.returncode == 0, out.stderr
    assert "differs from these hooks: home the default" in out.stderr, out.stderr
    assert "--mcp-config .mcp.json" in out.stderr
    # The warning changes nothing: the user's file is theirs to rewrite (or to let us).
    assert json.loads((project / ".mcp.json").read_text()) == by_hand


def test_writing_the_server_keeps_other_servers_and_the_entrys_own_keys() -> None:
    mine = {"command": "/opt/ackdeck", "args": ["--home", "/h", "mcp", "--session", "a"]}
    config = {
        "mcpServers": {
            "other": {"command": "x"},
            "ackdeck": {"command": "ackdeck", "args": [], "env": {"ACKDECK_REDIS_PASSWORD": "p"}},
        },
        "unrelated": 1,
    }
    merged = server_config.merge_server(config, mine)
    assert merged["unrelated"] == 1
    assert merged["mcpServers"]["other"] == {"command": "x"}
    assert merged["mcpServers"]["ackdeck"] == {**mine, "env": {"ACKDECK_REDIS_PASSWORD": "p"}}
    assert server_config.merge_server(merged, mine) == merged


def test_a_server_without_a_room_is_refused_before_anything_is_written(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = ackdeck(
        cli_env, "hooks", "install", "--session", "agent", "--mcp-config", "x.json", cwd=tmp_path
    )
    assert out.returncode != 0
    assert "at least one --room" in out.stderr
    assert not (tmp_path / ".claude").exists() and not (tmp_path / "x.json").exists()


def test_a_server_naming_the_same_home_by_its_env_or_relative_paths_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the project: where the client resolves relative paths
    ours = server_config.server_argv(["ackdeck"], "agent", [tmp_path / "in.txt"], str(tmp_path))
    by_env = {"mcpServers": {"ackdeck": {"command": "ackdeck",
        "args": ["mcp", "--session", "agent", "--room", "in.txt"],
        "env": {"ACKDECK_HOME": str(tmp_path)}}}}  # fmt: skip
    assert server_config.disagreement(by_env, ours) == ""
    args = ["--home", "elsewhere", "mcp", "--session", "bot", "--room", "in.txt"]
    other = {"mcpServers": {"ackdeck": {"command": "ackdeck", "args": args}}}
    said = server_config.disagreement(other, ours)
    assert said.startswith(f"home {tmp_path / 'elsewhere'} (the hooks: {tmp_path})"), said
    assert "session bot (the hooks: agent)" in said and "rooms" not in said
    assert server_config.disagreement({"mcpServers": {"other": {}}}, ours) == ""
