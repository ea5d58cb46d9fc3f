"""The one way the tests run the `ackdeck` command.

`ackdeck(env, *args)` runs it as a user does, in its own process (exit code, streams, signals
and the start-up path all real); `env` carries the throwaway home (the `cli_env` fixture).
`ackdeck_ok` and `ackdeck_json` are the same run when the test is about the output of a
command that must succeed. The `ackdeck_here` fixture (tests/conftest.py) runs `main` in the
test's own process, for tests about what the process keeps (its collector, its imports), not
about the exit code alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from tests.helpers.paths import PATHS, REPO

ACKDECK = [sys.executable, "-m", "ackdeck.core.cli"]


def here_env(**extra: str) -> dict[str, str]:
    """This process's environment with this checkout's package on the path (what `env=None`
    gives a run): for a run that must see the caller's own settings."""
    return {**os.environ, "PYTHONPATH": PATHS, **extra}


def clean_env() -> dict[str, str]:
    """This process's environment without any `ACKDECK_` setting, with this checkout's package
    on the path: for a run that names its home with `--home` and nothing else."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACKDECK_")}
    env["PYTHONPATH"] = PATHS
    return env


def ackdeck(
    env: Mapping[str, str] | None,
    *args: str,
    cwd: Path | str | None = REPO,
    timeout: float = 60.0,
    input: str | None = None,
    stdout: str | Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`ackdeck ARGS` with `env` (None: `here_env()`), its output captured as text; the bound
    only catches a hang. `stdout`: a file to write it to instead (such as /dev/full), or
    "closed" to start the command with no stdout at all."""
    closed = stdout == "closed"
    with contextlib.ExitStack() as stack:
        out: IO[str] | int | None = subprocess.PIPE
        if closed:
            out = None
        elif stdout is not None:
            out = stack.enter_context(open(stdout, "w"))  # noqa: SIM115 - the stack closes it
        return subprocess.run(
            [*ACKDECK, *args],
            env=here_env() if env is None else env,
            cwd=cwd,
            input=input,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
            preexec_fn=(lambda: os.close(1)) if closed else None,
        )


def ackdeck_ok(
    env: Mapping[str, str] | None, *args: str, **kw: Any
) -> subprocess.CompletedProcess[str]:
    """`ackdeck ARGS`, which must succeed (the failure shows its streams)."""
    out = ackdeck(env, *args, **kw)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out


def with_json(args: tuple[str, ...] | list[str]) -> list[str]:
    """`args` with `--json`, which goes before a command separator (`run NAME -- CMD`)."""
    a = list(args)
    at = a.index("--") if "--" in a else len(a)
    return [*a[:at], "--json", *a[at:]]


def ackdeck_json(env: Mapping[str, str] | None, *args: str, **kw: Any) -> Any:
    """What `ackdeck ARGS --json` prints, which must succeed."""
    out = ackdeck(env, *with_json(args), **kw)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
