"""A real `ackdeck` process held at a named step of its work (ACKDECK_TEST_PAUSE_AT, see
`_pause` in core/rooms/file/room.py): it writes the step's name to a marker file and sleeps there,
so a test can act at exactly that point (append as a producer, SIGKILL it) and then look at
what it left."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.cli import ACKDECK
from tests.helpers.paths import REPO
from tests.helpers.wait import eventually


def start_paused(
    env: dict[str, str], marker: Path, steps: Sequence[str], *args: str, stdout: int | None = None
) -> subprocess.Popen[bytes]:
    """`ackdeck ARGS`, which pauses at each of `steps` (`stdout`: None for a pipe; a command
    whose output the test never reads gets DEVNULL)."""
    env = {**env, "ACKDECK_TEST_PAUSE_AT": ",".join(steps), "ACKDECK_TEST_PAUSE_FILE": str(marker)}
    return subprocess.Popen(
        [*ACKDECK, *args],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
    )


def start_paused_ack(
    room: Path, marker: Path, steps: list[str], env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """`ackdeck room ack ROOM --session s --json`, paused at each of `steps`."""
    return start_paused(
        env, marker, steps, "room", "ack", str(room), "--session", "s", "--json",
        stdout=subprocess.DEVNULL,
    )  # fmt: skip


def wait_for_step(proc: subprocess.Popen[bytes], marker: Path, step: str) -> None:
    """Until `proc` pauses at `step`; it must not exit first."""

    def there() -> bool:
        try:
            if marker.read_text() == step:
                return True
        except FileNotFoundError:
            pass
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"ackdeck exited ({proc.returncode}) before {step}: {err}")
        return False

    eventually(there, what=f"ackdeck to reach {step}", every=0.005)


def kill9(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL


@contextmanager
def paused(
    env: dict[str, str], marker: Path, steps: Sequence[str], *args: str, stdout: int | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """`start_paused`, and the process never outlives the test: killed with -9 if the test
    leaves it running (a failed assertion, a hang)."""
    proc = start_paused(env, marker, steps, *args, stdout=stdout)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            kill9(proc)


def killed_at(env: dict[str, str], marker: Path, step: str, *args: str) -> None:
    """`ackdeck ARGS` killed with -9 at the named fault point `step` (a crash exactly there)."""
    with paused(env, marker, [step], *args, stdout=subprocess.DEVNULL) as proc:
        wait_for_step(proc, marker, step)
        kill9(proc)
