"""Shared fixtures. Tests write only inside pytest's tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The package's source (a src/ layout: no `ackdeck` at the top of the repository) and what a
# subprocess a test starts needs on its path: this checkout's package, and `tests` itself.
SRC = REPO / "src"
PKG = SRC / "ackdeck"
PATHS = os.pathsep.join([str(SRC), str(REPO)])
ACKDECK = [sys.executable, "-m", "ackdeck.core.cli"]


@contextmanager
def mounted(mnt: Path, *args: str, what: str = "a tmpfs") -> Iterator[Path]:
    """`mount ARGS MNT` for the test's duration (a real filesystem: a small or read-only
    tmpfs, a loop image), lazily unmounted after; skipped with mount's reason if refused."""
    done = subprocess.run(["mount", *args, str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount {what} here: {done.stderr.decode().strip()[:80]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


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
    return env


@pytest.fixture
def phome(home: Path) -> Iterator[Path]:
    """A home for tests that start real processes; whatever still runs is killed afterwards."""
    from tests.test_procs_support import run_and_cleanup  # it imports this module

    yield from run_and_cleanup(home)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One real redis-server on loopback for the whole test session (skips if not installed)."""
    from tests.redis_server import RedisServer

    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
