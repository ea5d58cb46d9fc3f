"""A supervisor on a full disk (a real small tmpfs as ACKDECK_HOME, filled and freed): matches
found while no wake record can be written are kept in memory and recorded once space is
back, and an exit while the disk is full is recorded late, never dropped (no `lost` run).

The monitored command reserves space for its own output first (fallocate with KEEP_SIZE on
its stdout), so it can keep printing while the test holds the filesystem full: only the
supervisor's own writes (wake records, monitor state, run meta) meet ENOSPC."""

from __future__ import annotations

import os
from pathlib import Path

from ackdeck.core.monitors import procs, wakes
from ackdeck.core.monitors.runs import load_meta, output_path, supervisor_alive
from tests.helpers.cli import ackdeck
from tests.helpers.mounts import fill, mounted
from tests.helpers.runs import PY, release, wait_status
from tests.helpers.wait import eventually

COMMAND = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
# FALLOC_FL_KEEP_SIZE: blocks for the output to come, without changing what the log holds.
if libc.fallocate(1, 1, 0, 1 << 20) != 0:
    raise SystemExit("fallocate: errno %d" % ctypes.get_errno())
def wait(p):
    while not os.path.exists(p):
        time.sleep(0.01)
print("ready", flush=True)
wait(sys.argv[1])
for i in range(5):
    print(f"ERR during {i}", flush=True)
wait(sys.argv[2])
print("ERR after", flush=True)
sys.exit(3)
"""


def _writes(pid: int) -> int:
    """write(2) calls the process made, failed ones included (/proc/PID/io syscw)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    raise AssertionError("no syscw in /proc/PID/io")


def _log_has(home: Path, text: str) -> bool:
    rdir = procs.get_run(home, "p").run_dir
    return text.encode() in output_path(rdir).read_bytes()


def _pending_lines(home: Path) -> list[str]:
    try:
        records = wakes.list_wakes(home, "s")
    except OSError:
        return []
    return [x.text for r in records for x in r.lines]


def test_a_supervisor_waits_out_a_full_disk_and_loses_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    go1, go2 = tmp_path / "go1", tmp_path / "go2"
    with mounted(home, "-t", "tmpfs", "-o", "size=2m", "tmpfs"):
        env = {**os.environ, "ACKDECK_HOME": str(home)}
        started = ackdeck(
            env,
            "run",
            "p",
            "--session",
            "s",
            "--monitor",
            "ERR",
            "--cooldown-ms",
            "0",
            "--",
            PY,
            "-c",
            COMMAND,
            str(go1),
            str(go2),
        )
        assert started.returncode == 0, started.stderr
        eventually(lambda: _log_has(home, "ready"), what="the command to start")
        run = procs.get_run(home, "p")
        meta = load_meta(run.run_dir)
        assert meta is not None and meta.supervisor_pid is not None
        sup = meta.supervisor_pid

        # 1. Matches while the disk is full: the supervisor's writes fail, it lives on.
        filler = fill(home)
        before = _writes(sup)
        release(go1)
        eventually(lambda: _log_has(home, "ERR during 4"), what="the matches in the log")
        eventually(
            lambda: _writes(sup) >= before + 3,
            what="the supervisor to try (and fail) to write the matches",
        )
        assert supervisor_alive(run.run_dir) and _pending_lines(home) == []
        # Space comes back: the matches are recorded while the command still runs.
        filler.unlink()
        eventually(lambda: len(_pending_lines(home)) == 5, what="the held matches recorded")
        assert procs.get_run(home, "p").status == "running"

        # 2. The command exits while the disk is full: its status is recorded late.
        filler = fill(home)
        before = _writes(sup)
        release(go2)
        eventually(lambda: _log_has(home, "ERR after"), what="the last line in the log")
        eventually(
            lambda: _writes(sup) >= before + 3, what="the supervisor to try to record the end"
        )
        assert supervisor_alive(run.run_dir)
        assert procs.get_run(home, "p").status == "running"  # not lost: the end is pending
        filler.unlink()
        info = wait_status(home, "p")
        assert (info.status, info.exit_code) == ("exited", 3)
        res = wakes.drain(home, "s")
        texts = [x.text for d in res.delivered for x in d.lines]
        assert texts == [f"ERR during {i}" for i in range(5)] + ["ERR after"]
        assert [(d.kind, d.exit_code) for d in res.delivered] == [("exited", 3)]


def test_an_exhausted_quota_is_waited_out_like_a_full_disk_and_other_errors_raise() -> None:
    """EDQUOT cannot be produced on this kernel's tmpfs (no quota support): the rule that
    treats it as ENOSPC is checked on the write wrapper the supervisor uses."""
    import errno

    import pytest

    from ackdeck.core.base.diskfull import Backoff

    now = [0.0]
    tries: list[int] = []

    def write() -> str:
        tries.append(1)
        if len(tries) < 4:
            raise OSError(errno.EDQUOT if len(tries) % 2 else errno.ENOSPC, "no space")
        return "written"

    space = Backoff(clock=lambda: now[0])
    assert space.until_written(write) == "written" and len(tries) == 4
    assert not space.waiting

    def broken() -> None:
        raise OSError(errno.EIO, "I/O error")

    with pytest.raises(OSError, match="I/O error"):
        Backoff().until_written(broken)
