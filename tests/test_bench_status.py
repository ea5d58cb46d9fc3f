"""`python -m bench status --quick` runs end to end and prints a figure for every command at
each size (the full run is `make bench`; the figures themselves are not checked here)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_the_status_bench_prints_its_table_in_quick_mode() -> None:
    if shutil.which("wc") is None:
        pytest.skip("wc is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "bench", "status", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("rooms "))
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[start + 1 :]]
    commands = ("room status --json", "wc -l", "python -c pass", "python count floor")
    assert [(r[0], r[1]) for r in rows] == [(n, c) for n in ("20", "100") for c in commands]
    for row in rows:
        wall, x_wall, *cpu = (float(x) for x in row[2:])
        assert wall > 0 and x_wall > 0, row  # the CPU columns may be 0 or nan for a tiny wc
    assert not list((REPO / "bench" / "_work").glob("status-*"))  # its rooms are removed
