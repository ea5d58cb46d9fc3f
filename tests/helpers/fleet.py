"""Hosts of a fleet for the tests: each a home of its own with its host id, run as separate
`ackdeck` processes against one real redis-server (tests/test_fleet.py,
tests/test_fleet_wakes.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.helpers.cli import ackdeck
from tests.helpers.paths import PATHS


def host_env(home: Path, host: str, url: str, **extra: str) -> dict[str, str]:
    """The environment of host `host`: its home, its id, the fleet at `url`, and no setting
    of the person running the tests (their config file included)."""
    env = dict(os.environ)
    for k in ("ACKDECK_FLEET", "ACKDECK_HOST_ID", "ACKDECK_SESSION", "XDG_CONFIG_HOME"):
        env.pop(k, None)
    env.update(
        ACKDECK_HOME=str(home),
        PYTHONPATH=PATHS,
        ACKDECK_FLEET=url,
        ACKDECK_HOST_ID=host,
        HOME=str(home),  # no config file of the person running the tests
        **extra,
    )
    return env


def json_of(env: dict[str, str], *args: str) -> dict:
    """What `ackdeck ARGS --json` prints, which must succeed."""
    done = ackdeck(env, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
