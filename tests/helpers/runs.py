"""Helpers for the tests of runs: processes, their monitors and wakes.

Processes are real: each test starts short commands through `core.monitors.procs.start` (or the
CLI) and the `phome` fixture (tests/conftest.py) kills whatever is still running when the test
ends. Synchronisation is by files the commands wait for (`go`), never by sleeping for a fixed
time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ackdeck.core.monitors import procs, wakes
from tests.helpers.wait import eventually

PY = sys.executable


def wait_status(home: Path, name: str, run_id: str | None = None) -> procs.RunInfo:
    """Wait until the run is no longer running and its supervisor has finished its work."""
    info = eventually(
        lambda: (i := procs.get_run(home, name, run_id)).status != "running" and i,
        what=f"{name} to end",
    )
    assert isinstance(info, procs.RunInfo)
    from ackdeck.core.monitors.runs import load_monitors_state, supervisor_alive

    # The supervisor writes the final status, then flushes; wait for it to let go.
    eventually(lambda: not supervisor_alive(info.run_dir), what="supervisor to finish")
    st = load_monitors_state(info.run_dir)
    assert not info.monitors or (st is not None and st.done)
    return info


def waiter(go: Path, before: str = "", after: str = "") -> list[str]:
    """A command that prints `before`, waits for file `go`, prints `after`, exits 0."""
    code = (
        "import os, sys, time\n"
        f"sys.stdout.write({before!r}); sys.stdout.flush()\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        f"sys.stdout.write({after!r}); sys.stdout.flush()\n"
    )
    return [PY, "-c", code]


def release(go: Path) -> None:
    go.write_text("go")


def supervisor_imports(home: Path, tmp_path: Path, name: str) -> set[str]:
    """Every module a run's supervisor imports over a whole life (start, a scan with a match,
    the exit), from its -X importtime log (its stderr: supervisor.log). The caller sets
    PYTHONPROFILEIMPORTTIME=1 in the environment the supervisor inherits."""
    from ackdeck.core.monitors.runs import load_monitors_state

    go = tmp_path / "go"
    info = procs.start(
        home, name, waiter(go, "ERROR one\n", "done\n"), monitors=[procs.MonitorSpec("ERR")]
    )
    eventually(lambda: load_monitors_state(info.run_dir), what="a first scan")
    release(go)
    wait_status(home, name)
    log = (info.run_dir / "supervisor.log").read_text()
    return {
        line.rsplit("|", 1)[1].strip() for line in log.splitlines() if line.startswith("import")
    }


def drain_lines(home: Path, session: str = "default") -> list[str]:
    res = wakes.drain(home, session, settle_timeout=2.0)
    return [x.text for d in res.delivered for x in d.lines]


def start_beside(
    home: Path,
    name: str,
    argv: list[str],
    *,
    session: str = "default",
    monitors: list[procs.MonitorSpec] | None = None,
) -> procs.RunInfo:
    """A second run of `name` while another is live, as ackdeck made them before a start
    while a run lives was refused (issue 19): state a home may still hold, which every reader
    must still keep apart. `procs.start` itself refuses it."""
    models = [procs._check_monitor(m) for m in monitors or []]
    return procs._start_run(home, name, argv, session, models, Path.cwd(), time.time)


def run_and_cleanup(home: Path) -> Iterator[Path]:
    """Body of each test module's `phome` fixture: yield the home, then leave no process behind."""
    yield home
    for info in procs.list_runs(home):
        if info.pid is not None and info.status in ("running", "lost"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(info.pid, signal.SIGKILL)
        if info.pid is not None:
            # Children an ended run left behind (recognised by the run's mark).
            procs._signal_run(info, info.pid, signal.SIGKILL)
        sup = _supervisor_pid(info.run_dir)
        if sup:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(sup, signal.SIGKILL)


def _supervisor_pid(rdir: Path) -> int | None:
    from ackdeck.core.monitors.runs import load_meta, supervisor_alive

    meta = load_meta(rdir)
    if meta is None or not supervisor_alive(rdir):
        return None
    return meta.supervisor_pid
