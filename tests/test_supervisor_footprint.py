"""A run's supervisor stays small (one lives per monitored run) without changing what the
command sees: it is started with posix_spawn and waited for through a pidfd instead of
subprocess and a thread, and the steady state imports none of the start-up-only or heavy
modules. Real supervisors, real commands."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ackdeck.core.monitors import procs, wakes
from ackdeck.core.monitors.runs import (
    MonitorModel,
    RunMeta,
    load_meta,
    load_monitors_state,
    new_run_id,
    output_path,
    run_dir,
    store_meta,
)
from ackdeck.core.monitors.tail import CHUNK, QUIET_CHUNK, Tail
from tests.helpers.runs import PY, release, supervisor_imports, wait_status, waiter
from tests.helpers.wait import eventually

SIGPIPE_BIT = 1 << (13 - 1)  # SigIgn in /proc/PID/status is a mask of signal N at bit N-1
SIGXFSZ_BIT = 1 << (25 - 1)
REGEX = "ERROR: .*failed"  # its literal: `ERROR: ` (core/monitors/literals.py)


def test_the_command_sees_what_popen_gave_it(phome: Path, tmp_path: Path) -> None:
    """Its own session, the asked cwd, stdin from /dev/null and SIGPIPE/SIGXFSZ at their
    defaults (Python ignores them; a `yes | head` in the command must end by SIGPIPE, not
    print "Broken pipe")."""
    work = tmp_path / "work"
    work.mkdir()
    script = (
        "echo pid=$$; echo sid=$(cut -d' ' -f6 /proc/$$/stat); echo cwd=$(pwd);"
        " echo stdin=$(readlink /proc/$$/fd/0);"
        " grep SigIgn /proc/$$/status; yes | head -n 1"
    )
    info = procs.start(phome, "env", ["sh", "-c", script], cwd=str(work))
    end = wait_status(phome, "env")
    assert (end.status, end.exit_code) == ("exited", 0)
    out = (info.run_dir / "output.log").read_text()
    fields = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert fields["sid"] == fields["pid"] == str(end.pid)
    assert fields["cwd"] == str(work)
    assert fields["stdin"] == "/dev/null"
    ignored = int(next(s for s in out.splitlines() if s.startswith("SigIgn:")).split()[1], 16)
    assert ignored & (SIGPIPE_BIT | SIGXFSZ_BIT) == 0
    assert "Broken pipe" not in out and out.endswith("y\n")


def test_the_command_holds_only_stdin_stdout_and_stderr(phome: Path, tmp_path: Path) -> None:
    """No handshake pipe, lock or pidfd of the supervisor leaks into the command (looked at
    from outside, while it waits)."""
    go = tmp_path / "go"
    info = procs.start(phome, "fds", waiter(go, "up\n"))
    eventually(lambda: (info.run_dir / "output.log").read_bytes() == b"up\n", what="up")
    assert sorted(os.listdir(f"/proc/{info.pid}/fd"), key=int) == ["0", "1", "2"]
    assert os.readlink(f"/proc/{info.pid}/fd/1") == str(info.run_dir / "output.log")
    release(go)
    wait_status(phome, "fds")


def test_a_relative_command_runs_from_its_cwd(phome: Path, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho relative ok\nexit 5\n")
    script.chmod(0o755)
    info = procs.start(phome, "rel", ["./job.sh"], cwd=str(tmp_path))
    end = wait_status(phome, "rel")
    assert (end.status, end.exit_code) == ("exited", 5)
    assert (info.run_dir / "output.log").read_bytes() == b"relative ok\n"


# Start-up-only or heavy modules a steady-state supervisor must not hold (docs/performance.md,
# "Supervisor memory"): each costs every monitored run memory for its whole life.
NOT_IN_SUPERVISOR = {
    "argparse": "its formatter pulls in shutil and the compression modules",
    "runpy": "started with python -c, not -m: runpy and importlib.util (~0.1 MiB)",
    "importlib.util": "see runpy",
    "subprocess": "the command is started with posix_spawn",
    "threading": "the command is waited for through a pidfd",
    "dataclasses": "imports inspect, ast and dis (~1.3 MiB)",
    "typing": "annotations are strings; typing is for type checkers",
    "hashlib": "loads OpenSSL's libcrypto (~3.7 MiB); ackdeck.core.base.digest uses CPython's own",
    "ctypes.util": "find_library pulls in shutil, tempfile, bz2, lzma",
    "shutil": "see argparse and ctypes.util",
    "ackdeck.core.rooms.file.ledger": "a run's state files need ackdeck.core.base.statefile only",
    "json": "imports re, enum, functools (~1.1 MiB alone); core/base/jsontext reads and writes",
    "pathlib": "brings re, enum, urllib.parse, ipaddress (~0.9 MiB beside re); str paths here",
    "re": "with enum ~0.6 MiB; loaded only for a line with an escape sequence (clean())",
    "enum": "see re; the two signal numbers come from _signal, not signal's IntEnum",
    "collections": "with functools and contextlib ~0.5 MiB: collections.abc is for type checkers",
    "contextlib": "see collections: the locks and the wake session's block are classes",
    "functools": "see collections: the scan's two caches are dicts",
    "pydantic": "ackdeck's own state files are Records",
    "textual": "the dashboard",
    "mcp": "the MCP server",
}


def test_a_supervisor_imports_only_what_it_needs(
    phome: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its import log (-X importtime, to its stderr: supervisor.log) over a whole life: start,
    a scan with a match, the exit."""
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    imported = supervisor_imports(phome, tmp_path, "lean")
    assert "ackdeck.core.monitors.tail" in imported  # the log is the supervisor's
    held = {m: why for m, why in NOT_IN_SUPERVISOR.items() if m in imported}
    assert held == {}


def test_a_literal_monitors_supervisor_never_maps_re2(
    phome: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 43: RE2 (`_re2` and libstdc++, ~2.3 MiB) took a supervisor to 1.54x a bare
    interpreter's memory. A plain literal monitor (`ERR`, the common case) is searched with
    bytes.find, which finds the same lines (tests/test_patterns.py), so it never loads RE2."""
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    imported = supervisor_imports(phome, tmp_path, "literal")  # monitors "ERR", matches once
    assert "ackdeck.core.monitors.monitors" in imported
    assert sorted(m for m in imported if m == "re2" or m.startswith(("re2.", "_re2"))) == []


def _maps_re2(pid: int) -> bool:
    """Whether process `pid` maps RE2's extension (`_re2...so`): the memory itself, not a
    module name."""
    with open(f"/proc/{pid}/maps") as f:
        return any("/_re2." in line for line in f)


def test_a_regex_monitors_supervisor_maps_re2_only_at_its_first_candidate_line(
    phome: Path, tmp_path: Path
) -> None:
    """Issue 43 item 3: RE2 took a regex monitor's supervisor to 1.54x a bare interpreter.
    Lines without the literal every match holds (`ERROR: `) are ruled out without it; the
    first line holding it (a candidate) loads it, and RE2 decides: a candidate that does not
    match wakes nobody, the one that matches does, with its exact range."""
    steps = [tmp_path / "go1", tmp_path / "go2"]
    lines = [b"info: ERROR without its colon\n", b"ERROR: disk ok\n", b"ERROR: disk failed\n"]
    code = (
        "import os, sys, time\n"
        f"lines, steps = {lines!r}, {[str(s) for s in steps]!r}\n"
        "for i, line in enumerate(lines):\n"
        "    os.write(1, line)\n"
        "    while i < len(steps) and not os.path.exists(steps[i]): time.sleep(0.01)\n"
    )
    info = procs.start(phome, "rx", [PY, "-c", code], monitors=[procs.MonitorSpec(REGEX)])
    meta = eventually(lambda: load_meta(info.run_dir), what="meta")
    sup = meta.supervisor_pid
    assert sup is not None

    def scanned(upto: int) -> bool:
        state = load_monitors_state(info.run_dir)
        return state is not None and state.scanned_to >= upto

    eventually(lambda: scanned(len(lines[0])), what="the first line scanned")
    assert not _maps_re2(sup)  # no candidate yet: RE2 is not in its memory
    release(steps[0])
    eventually(lambda: scanned(len(lines[0]) + len(lines[1])), what="the candidate scanned")
    assert _maps_re2(sup)  # a candidate: RE2 loaded, and it said no (no wake below)
    release(steps[1])
    wait_status(phome, "rx")
    start = len(lines[0]) + len(lines[1])
    res = wakes.drain(phome, "default", settle_timeout=2.0)
    got = [(x.start, x.end, x.text) for d in res.delivered for x in d.lines]
    assert got == [(start, start + len(lines[2]), "ERROR: disk failed")]


def _tail_on(home: Path, data: bytes) -> tuple[Tail, Path]:
    now = time.time()
    rdir = run_dir(home, "job", new_run_id(now))
    rdir.mkdir(parents=True)
    output_path(rdir).write_bytes(data)
    meta = RunMeta(
        name="job",
        run_id=rdir.name,
        argv=["simulated"],
        cwd=str(home),
        session="owner",
        monitors=[MonitorModel(pattern="ERROR", cooldown_ms=10**9)],
        created_at=now,
        started_at=now,
    )
    store_meta(rdir, meta)
    return Tail(home, rdir, meta), rdir


def test_a_quiet_log_is_read_with_a_small_buffer_and_a_streaming_one_in_large_reads(
    tmp_path: Path,
) -> None:
    """`bytearray(n)` makes every byte resident: a CHUNK-sized read buffer held for a whole
    run was 4 MiB of each supervisor. Every line is still matched across the switches."""
    line = b"ERROR at %08d " + b"x" * 40 + b"\n"
    lines = [line % i if i % 1000 == 0 else b"info %08d\n" % i for i in range(200_000)]
    tail, rdir = _tail_on(tmp_path, b"".join(lines[:10]))
    assert tail.pump()
    assert len(tail._chunk or b"") == QUIET_CHUNK + 1  # a few lines: the small buffer
    with output_path(rdir).open("ab") as f:
        f.write(b"".join(lines[10:]))  # several MB at once: grows to CHUNK
    while tail.pump(max_bytes=1 << 30):
        assert len(tail._chunk or b"") == CHUNK + 1
    assert len(tail._chunk or b"") == QUIET_CHUNK + 1  # nothing new: back to small
    starts = [m.start for m in tail.batches[0].pending]
    expected = [sum(map(len, lines[:i])) for i in range(0, 200_000, 1000)]
    assert starts == expected
    tail.close()
