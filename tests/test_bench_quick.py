"""The benches' `--quick` modes run end to end and print every row of their tables with a
figure (the full runs are `make bench`; the figures themselves are not checked here)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def quick_table(bench: str, header: str, timeout: float) -> list[str]:
    """The lines after the header line (the one starting with `header`) that
    `python -m bench BENCH --quick` prints; it must exit 0."""
    if shutil.which("wc") is None:
        pytest.skip("wc is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "bench", bench, "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    return lines[start + 1 :]


def test_the_dashboard_bench_prints_its_table_in_quick_mode() -> None:
    rows = quick_table("dashboard", "case ", timeout=900)
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


def test_the_status_bench_prints_its_table_in_quick_mode() -> None:
    lines = quick_table("status", "rooms ", 300)
    blank = lines.index("")  # the commands' table, then the scrape's ratio to the status
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[:blank]]
    commands = (
        "room status --json",
        "metrics scrape",
        "wc -l",
        "python -c pass",
        "python count floor",
    )
    assert [(r[0], r[1]) for r in rows] == [(n, c) for n in ("20", "100") for c in commands]
    for row in rows:
        wall, x_wall, *cpu = (float(x) for x in row[2:])
        assert wall > 0 and x_wall > 0, row  # the CPU columns may be 0 or nan for a tiny wc
    assert lines[blank + 1].startswith("rooms ")
    ratios = [re.split(r"\s{2,}", line.strip()) for line in lines[blank + 2 :]]
    assert [r[0] for r in ratios] == ["20", "100"]
    for row in ratios:
        status, scrape, x_wall = (float(x) for x in row[1:4])
        assert status > 0 and scrape > 0 and x_wall > 0, row
    assert not list((REPO / "bench" / "_work").glob("status-*"))  # its rooms are removed


def test_the_mcp_bench_prints_its_table_in_quick_mode() -> None:
    rows = [re.split(r"\s{2,}", line.strip()) for line in quick_table("mcp", "what ", 300)]
    table = [r for r in rows if len(r) == 4]
    assert [r[0] for r in table] == [
        "python -c pass",
        "import mcp.server.mcpserver",
        "minimal server tools/list",
        "ackdeck mcp tools/list",
    ]
    for row in table:
        assert all(float(x) > 0 for x in row[1:]), row
    assert any(line[0].startswith("ackdeck's own share") for line in rows)


def test_bench_help_lists_every_benchmark_and_an_unknown_one_is_one_error() -> None:
    """`python -m bench --help` was a traceback; it lists the benchmarks (without importing
    them), and a mistyped name says so instead of running every bench."""
    helped = subprocess.run(
        [sys.executable, "-m", "bench", "--help"], cwd=REPO, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert helped.returncode == 0 and helped.stderr == ""
    names = sorted(p.stem.removeprefix("bench_") for p in (REPO / "bench").glob("bench_*.py"))
    listed = [line.split()[0] for line in helped.stdout.split("benchmarks:\n")[1].splitlines()]
    assert listed == names
    wrong = subprocess.run(
        [sys.executable, "-m", "bench", "romos"], cwd=REPO, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert wrong.returncode == 2 and "no benchmark 'romos'" in wrong.stderr
    assert wrong.stdout == ""


def test_the_agents_bench_prints_its_table_in_quick_mode() -> None:
    rows = quick_table("agents", "command ", timeout=600)
    assert rows[0].startswith("agents --json") and rows[1].startswith("room status --json")
    assert rows[2].startswith("agents x room status: ")
    for row in rows[:2]:
        assert all(math.isfinite(float(x)) for x in row.split()[-4:])


def test_the_proof_bench_prints_its_table_in_quick_mode() -> None:
    rows = [re.split(r"\s{2,}", line.strip()) for line in quick_table("proof", "ack  ", 300)]
    table = [r for r in rows if len(r) == 4]
    assert [r[0] for r in table] == [
        "without proof (baseline)",
        "proven, from the offset kept at read",
        "proven, searched from the end",
        "proven, from the agent's shell",
    ]
    for row in table:
        assert all(float(x.rstrip("x")) > 0 for x in row[1:]), row
    heaps = [line for line in rows if "MB transcript" in line[0]]
    assert len(heaps) == 2, rows


def test_the_turn_bench_prints_its_table_in_quick_mode() -> None:
    """Real Claude Code against the model stand-in, with and without the hooks (issue 43); the
    warm-up fails the bench if the hooks never ran."""
    from tests.helpers.agent_clients import need_client

    need_client("claude")
    rows = quick_table("turn", "case ", timeout=600)
    assert [re.split(r"\s{2,}", row.strip())[0] for row in rows[:3]] == [
        "claude -p, no hooks",
        # The control: the same hooks doing nothing, so that what Claude Code costs to run a
        # hook at all is told apart from what ackdeck's commands cost.
        "claude -p, hooks doing nothing",
        "claude -p, ackdeck hooks",
    ]
    for row in rows[:3]:
        median, ratio = re.split(r"\s{2,}", row.strip())[1:3]
        assert math.isfinite(float(median)) and math.isfinite(float(ratio)), row
        low, high = row.split()[-1].split("-")  # the range of the rounds
        assert float(low) <= float(median) <= float(high), row
    assert rows[3].startswith("hooks add ") and "ackdeck's commands" in rows[3]


def test_the_queue_bench_prints_its_table_in_quick_mode() -> None:
    rows = quick_table("queue", "operation ", timeout=600)
    text = "\n".join(rows)
    for what in ("claim+done, 0 lines", "flock + append + fsync", "lines held", "ratio"):
        assert what in text, text
    assert re.search(r"ratio \(must stay near 1\)\s+\d+\.\d\d", text), text


def test_the_messages_bench_prints_its_table_in_quick_mode() -> None:
    rows = [re.split(r"\s{2,}", line.strip()) for line in quick_table("messages", "look ", 300)]
    assert [r[0] for r in rows] == [
        "first look (no kept offsets)",
        "kept offsets, nothing new",
        "kept offsets, 5 sessions grew",
        "tails alone (8 MB each, baseline)",
    ]
    for row in rows:
        assert all(math.isfinite(float(x.rstrip("x"))) for x in row[1:]), row
    assert float(rows[1][2]) == 0.0  # nothing new: nothing read


def test_the_turn_timeline_splits_a_debug_log_into_phases_and_skips_a_missing_line() -> None:
    """`bench turn --timeline` reads Claude Code's debug log (2.1.328's wording): each phase
    runs from the previous line found, so a line another release words otherwise leaves its
    phase out without shifting the others; a multi-line entry's continuation is not a time."""
    from bench.bench_turn import TIMELINE, phases

    log = "\n".join(
        [
            "2026-12-07T17:00:00.100Z [DEBUG] MDM settings load completed in 0ms",
            "2026-12-07T17:00:00.150Z [DEBUG] [STARTUP] Running setup()...",
            "2026-12-07T17:00:00.300Z [DEBUG] session.start: raised (surface none)",
            "2026-12-07T17:00:00.420Z [DEBUG] [API:timing] dispatching to firstParty",
            # no "first byte" line: that phase is left out
            "2026-12-07T17:00:00.450Z [DEBUG] [engine] turn 1 end (turns=1)",
            "a continuation line of the entry above",
            "2026-12-07T17:00:00.460Z [DEBUG] [uds-messaging] Shutting down",
            "2026-12-07T17:00:00.470Z [DEBUG] Hooks: Config-based async hook, backgrounding",
        ]
    )
    start = 1796662800000.0  # 2026-12-07T17:00:00.000Z, in ms
    got = phases(log, exit_ms=start + 500, start_ms=start)
    names = [name for name, _ in TIMELINE]
    assert list(got) == [n for n in names if n != "to the reply's first byte"] + ["to the exit"]
    assert [round(v) for v in got.values()] == [150, 150, 120, 30, 10, 10, 30]
