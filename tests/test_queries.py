"""Queries do not write: listing runs or wakes leaves a dead supervisor's run as it is on disk;
`procs.reconcile`, the explicit step a door chooses, is what marks it lost and files the
monitor-lost wake."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from ackdeck.core.monitors import procs, runs, wakes
from tests.helpers.wait import eventually


def _tree(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "lock" not in p.name and p.name != "output.log"
    }


def test_listing_runs_and_wakes_does_not_mark_a_dead_supervisor_lost(phome: Path) -> None:
    info = procs.start(phome, "orphan", ["sleep", "300"], monitors=[procs.MonitorSpec("ERR")])
    meta = runs.load_meta(info.run_dir)
    assert meta is not None and meta.supervisor_pid
    os.kill(meta.supervisor_pid, signal.SIGKILL)
    eventually(lambda: runs.unsupervised(phome), what="the supervisor's lock to be released")
    before = _tree(phome)

    assert [r.status for r in procs.list_runs(phome)] == ["running"]
    assert wakes.scan_wakes(phome) == ([], [])
    assert wakes.list_wakes(phome, "default") == []
    assert _tree(phome) == before  # nothing written by the queries

    procs.reconcile(phome)
    assert [r.status for r in procs.list_runs(phome)] == ["lost"]
    assert [w.kind for w in wakes.list_wakes(phome)] == ["monitor-lost"]
    assert runs.unsupervised(phome) == []
