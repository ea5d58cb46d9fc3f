"""Real filesystems for the tests that need one: a small or read-only tmpfs, a loop image."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


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


def fill(directory: Path) -> Path:
    """A file that takes every free block of `directory`'s filesystem (a small tmpfs)."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 512)
        except OSError:
            pass
    return filler
