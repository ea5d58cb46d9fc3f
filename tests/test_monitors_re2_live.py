"""A pattern that backtracks catastrophically in Python's `re` cannot stall a real supervisor."""

from __future__ import annotations

import os
from pathlib import Path

from ackdeck.core.monitors import procs, wakes
from ackdeck.core.monitors.runs import load_meta
from tests.helpers.runs import release, wait_status, waiter
from tests.helpers.wait import eventually


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process, from /proc (not wall time: a busy machine
    slows the supervisor down but does not make it burn more CPU)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def test_catastrophic_pattern_for_backtracking_still_wakes_cheaply(
    phome: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    # `(a+)+$` against 100,000 `a`s that do not reach the line's end: Python's `re` takes time
    # exponential in the run of `a`s (about 11 s for 27 of them); RE2 is linear.
    before = "a" * 100_000 + "!\n" + "DONE\n"
    info = procs.start(
        phome, "p", waiter(go, before), monitors=[procs.MonitorSpec("(a+)+$|DONE", cooldown_ms=0)]
    )
    try:
        # The command is still running: the wake must not wait for its exit.
        eventually(
            lambda: any(
                x.text == "DONE" for r in wakes.list_wakes(phome, "default") for x in r.lines
            ),
            timeout=60,
            what="the DONE wake",
        )
        meta = load_meta(info.run_dir)
        assert meta is not None and meta.supervisor_pid is not None
        assert procs.get_run(phome, "p").status == "running"
        used = cpu_seconds(meta.supervisor_pid)
        assert used < 1.0, f"supervisor used {used:.2f} s of CPU"
    finally:
        release(go)
    wait_status(phome, "p")
    res = wakes.drain(phome, "default")
    assert [x.text for d in res.delivered for x in d.lines] == ["DONE"]
