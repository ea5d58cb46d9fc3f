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
