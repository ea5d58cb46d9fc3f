"""Claude Code's own lock library (npm's proper-lockfile, from .cache/npm) run by node, for the
tests that race ackdeck against it: a holder that keeps a lock until told to let go."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

SCRIPTS = REPO / "tests" / "claude_teams"
NPM = Path(os.environ.get("ACKDECK_NPM_MODULES") or REPO / ".cache" / "npm" / "node_modules")
WAIT = 120.0  # only a real hang reaches this


def need_node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: the proper-lockfile interop tests skip")
    if not (NPM / "proper-lockfile").is_dir():
        pytest.skip(f"{NPM} has no proper-lockfile: run `make npm-cache`")
    return node


def node_env() -> dict[str, str]:
    return {**os.environ, "NODE_PATH": str(NPM)}


def next_line(proc: subprocess.Popen[str], want: str) -> None:
    """The next line `proc` prints, which must be `want`."""
    assert proc.stdout is not None
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(WAIT)
    assert got and got[0].strip() == want, got


@contextmanager
def held(path: Path, script: str = "hold_lock.js", *args: str) -> Iterator[subprocess.Popen[str]]:
    """node holding Claude Code's lock on `path` (a mailbox, or a task file with
    `hold_task_lock.js`) from "locked" until its stdin is closed (`let_go`)."""
    holder = subprocess.Popen(
        [need_node(), str(SCRIPTS / script), str(path), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=node_env(),
    )
    try:
        next_line(holder, "locked")
        yield holder
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def let_go(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    next_line(holder, "released")  # never "compromised": nobody took it over
    assert holder.wait(WAIT) == 0
