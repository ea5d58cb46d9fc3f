"""`python -m bench dashboard --quick` runs end to end and prints every row of its table with a
figure (the full run is `make bench`; the figures themselves are not checked here)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_the_dashboard_bench_prints_its_table_in_quick_mode() -> None:
    if shutil.which("wc") is None:
        pytest.skip("wc is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "bench", "dashboard", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("case "))
    rows = lines[start + 1 :]
    measures = " ".join(rows)
    for what in (
        "idle CPU",
        "table on screen",
        "push -> Pending p95",
        "key -> screen p95",
        "room status --json",
        "memory per room",
    ):
        assert what in measures, what
    for row in rows:
        if "push -> Pending p95 ratio" in row or "memory per room" in row:
            continue
        # the ackdeck column, third: measured (nan: a probe never reached the screen)
        ours = re.split(r"\s{2,}", row)[2]
        assert not math.isnan(float(ours)), row
