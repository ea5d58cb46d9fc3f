"""The README is short, its tour runs as written and prints what it says, and no relative link
in the README or the docs points at nothing.

The tour is every ```console block of the README's tour section: lines starting with `$ ` are
commands, the lines after one (up to the next command) are what it prints, stdout and stderr
together. The commands run in one bash on a terminal (a pseudo-terminal: what a command prints
only to a person shows too), in an empty directory, with a fresh ACKDECK_HOME and this
checkout's `ackdeck` first on PATH, exactly as a newcomer pastes them. Run ids and pids differ
from run to run, so both sides have them replaced by placeholders; nothing else is.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 250
TOUR_HEADING = "## A one-minute tour"

RUN_ID = re.compile(r"\b\d{8}T\d{9}-[0-9a-f]{6}\b")
PID = re.compile(r"\bpid \d+\b")
MARK = "@@ackdeck-readme-step@@"


def tour_steps(text: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for every command of the tour's console blocks."""
    section = text.split(TOUR_HEADING, 1)[1].split("\n## ", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
    return steps


def on_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run argv with a pseudo-terminal as its stdin, stdout and stderr; (exit code, output)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + 300  # the tour takes seconds; only a hang gets here
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal is gone
                break
            if not chunk:
                break
            out += chunk
        else:
            proc.kill()
            raise AssertionError(f"the tour hung; so far:\n{out.decode(errors='replace')}")
    finally:
        os.close(master)
    return proc.wait(timeout=60), out.decode(errors="replace").replace("\r\n", "\n")


def normalise(lines: list[str]) -> list[str]:
    return [PID.sub("pid PID", RUN_ID.sub("RUN_ID", line)).rstrip() for line in lines]


def test_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"


def test_tour_runs_as_written_and_prints_what_the_readme_says(tmp_path: Path) -> None:
    steps = tour_steps(README.read_text())
    commands = [c for c, _ in steps]
    # Both ideas are in it: a read, a late line and the ack that keeps it; a monitored run,
    # its wake delivered once.
    assert any(" room read " in c for c in commands) and any(" room ack " in c for c in commands)
    assert any(c.startswith("ackdeck run ") for c in commands)
    assert sum(c.startswith("ackdeck wakes drain") for c in commands) >= 2

    work = tmp_path / "tour"
    work.mkdir()
    script = "stty -echo -onlcr\n" + "".join(f"{c}\nprintf '\\n{MARK}\\n'\n" for c in commands)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")}
    env["ACKDECK_HOME"] = str(tmp_path / "home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("COLUMNS", None)
    env["TERM"] = "dumb"
    code, printed = on_terminal(["bash", "--noprofile", "--norc", "-e", "-c", script], work, env)
    assert code == 0, printed
    chunks = printed.split(f"\n{MARK}\n")
    assert chunks[-1] == "", printed
    assert len(chunks) - 1 == len(steps)
    for (command, expected), got in zip(steps, chunks, strict=False):
        printed = got.splitlines()
        assert normalise(printed) == normalise(expected), f"$ {command}"


# ----- links -------------------------------------------------------------------------------
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _gen_ref() -> Any:
    """The docs build's hook (docs/hooks/gen_ref.py): the pages it generates from the code and
    the repository folders it shows under the site resolve there, though not under docs/."""
    spec = importlib.util.spec_from_file_location("gen_ref", DOCS / "hooks" / "gen_ref.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_site(resolved: Path) -> bool:
    """Whether a path under docs/ that is not a file there exists in the built site."""
    if not resolved.is_relative_to(DOCS):
        return False
    hook = _gen_ref()
    inside = resolved.relative_to(DOCS)
    if str(inside) in hook.GENERATED_PAGES:
        return True
    mount = hook.MOUNTS.get(inside.parts[0]) if len(inside.parts) > 1 else None
    return mount is not None and (mount / Path(*inside.parts[1:])).is_file()


def _markdown_files() -> list[Path]:
    return [README, ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # code is not a link
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    broken = []
    for target in _links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page (mkdocs --strict checks those)
        file = target.split("#", 1)[0]
        resolved = (path.parent / file).resolve()
        if resolved.exists():
            continue
        if _in_site(resolved):
            continue
        broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)}: links to nothing: {broken}"


def test_the_readme_links_into_the_docs() -> None:
    targets = _links(README)
    assert any(t.startswith("docs/") for t in targets)
    assert "CHANGELOG.md" in targets


# ----- the hand-written reference keeps up with the code -------------------------------------
def test_every_environment_variable_is_documented() -> None:
    names = set()
    for folder in ("src", "bench", "tests"):
        for source in (ROOT / folder).rglob("*.py"):
            names |= set(re.findall(r"\bACKDECK_[A-Z0-9_]+\b", source.read_text()))
    page = (DOCS / "reference" / "configuration.md").read_text()
    missing = sorted(n for n in names if f"`{n}`" not in page)
    assert not missing, f"docs/reference/configuration.md does not mention {missing}"


def test_every_dashboard_config_key_is_documented() -> None:
    from ackdeck.tui.config import DashConfig

    page = (DOCS / "reference" / "configuration.md").read_text()
    toml = page.split("## The dashboard's config file", 1)[1].split("\n## ", 1)[0]
    # Every key the file may hold (a field set by the command's flags only is not one).
    keys = [f.name for f in dataclasses.fields(DashConfig) if not f.metadata.get("flags_only")]
    missing = [k for k in keys if not re.search(rf"^{k} = ", toml, re.M)]
    assert not missing, f"the config example in configuration.md lacks {missing}"
    with pytest.raises(ValueError, match="^fleet_flags: not a setting"):
        DashConfig.from_table({"fleet_flags": ["redis://x/0/y", None]})


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    """`make docs` in a test: every page in the nav, every link and anchor resolving, and the
    reference generated from this code (the MCP server started, the commands run)."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (the `docs` extra: make docs)")
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "ackdeck room push" in cli and "ackdeck tui" in cli
    tools = (tmp_path / "site" / "reference" / "mcp-tools" / "index.html").read_text()
    assert "room_list_new" in tools and "wakes_drain" in tools
