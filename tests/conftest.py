"""Shared fixtures. Tests write only inside pytest's tmp_path."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ACKDECK = [sys.executable, "-m", "core.cli"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def cli_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ACKDECK_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO)
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
