"""Shared fixtures. Tests write only inside pytest's tmp_path."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import PATHS


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def cli_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ACKDECK_HOME"] = str(home)
    env["PYTHONPATH"] = PATHS
    # No Claude Code teams but the test's own (`ackdeck agents` and the dashboard list them).
    env["CLAUDE_CONFIG_DIR"] = str(home / "claude")
    return env


@pytest.fixture
def phome(home: Path) -> Iterator[Path]:
    """A home for tests that start real processes; whatever still runs is killed afterwards."""
    from tests.helpers.runs import run_and_cleanup

    yield from run_and_cleanup(home)


@pytest.fixture
def ackdeck_here(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`ackdeck ARGS` run by `main` in this process, with the test's home: for what the process
    keeps after a command (tests/helpers/cli.py runs it in its own process otherwise). The
    result has the subprocess runner's shape."""
    from ackdeck.core.cli import main

    monkeypatch.setenv("ACKDECK_HOME", str(home))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()  # what came before is not this command's
        code = main(list(args))
        out = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out.out, out.err)

    return run


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One real redis-server on loopback for the whole test session (skips if not installed)."""
    from tests.helpers.redis_server import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
