"""Edges of the wake gate found by trying the CLI as a careless user would (real processes)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from ackdeck.core.monitors import procs, wakes
from ackdeck.core.monitors.procs import MonitorSpec
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.runs import PY, wait_status


def test_dropped_lines_the_owner_read_since_do_not_wake(phome: Path, cli_env) -> None:
    # 200 matches overflow the 50-line record; the owner then reads the whole output. Every
    # dropped line was shown, so the drain has nothing left to say (it used to deliver an empty
    # match telling the agent to go and read 150 "dropped" lines it had already read).
    code = "import sys\nfor i in range(200): sys.stdout.write('ERROR %d\\n' % i)\n"
    procs.start(phome, "many", [PY, "-c", code], monitors=[MonitorSpec("ERROR", cooldown_ms=0)])
    wait_status(phome, "many")
    assert wakes.list_wakes(phome, "default")[0].dropped == 150
    out = ackdeck(cli_env, "output", "many", "--json")
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["lines"]) == 200
    res = wakes.drain(phome, "default", settle_timeout=2.0)
    assert res.delivered == []
    assert res.superseded == 200
    hook = ackdeck(cli_env, "wakes", "drain", "--hook")
    assert hook.returncode == 0, hook.stderr


def test_dropped_lines_not_all_read_still_wake(phome: Path, cli_env) -> None:
    # The counterpart: a partial read (`| head`-like) leaves dropped lines unshown.
    code = "import sys\nfor i in range(200): sys.stdout.write('ERROR %d\\n' % i)\n"
    procs.start(phome, "many", [PY, "-c", code], monitors=[MonitorSpec("ERROR", cooldown_ms=0)])
    wait_status(phome, "many")
    from ackdeck.core.monitors import output

    output.read_output(phome, "many", "default", deliver=lambda r: 100)
    res = wakes.drain(phome, "default", settle_timeout=2.0)
    assert [(d.kind, len(d.lines), d.dropped) for d in res.delivered] == [("exited", 50, 150)]


def test_drain_and_output_into_a_closed_stdout_fail_with_one_line(phome: Path, cli_env) -> None:
    procs.start(
        phome, "boom", ["sh", "-c", "echo ERROR x; exit 3"], monitors=[MonitorSpec("ERROR")]
    )
    wait_status(phome, "boom")
    for args in (
        ["wakes", "drain", "--hook"],
        ["wakes", "drain", "--json"],
        ["output", "boom"],
        ["output", "boom", "--json"],
    ):
        # A real closed descriptor 1 (`>&-`), as a careless hook configuration leaves it.
        out = subprocess.run(
            ["sh", "-c", '"$@" >&-', "sh", *ACKDECK, *args],
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 1, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)
        assert "Traceback" not in out.stderr
    # Nothing reached a reader, so nothing was acked or shown.
    res = wakes.drain(phome, "default", settle_timeout=2.0)
    assert [(d.kind, d.exit_code, [x.text for x in d.lines]) for d in res.delivered] == [
        ("exited", 3, ["ERROR x"])
    ]


def _pending(phome: Path) -> list[tuple[int, int]]:
    return [(len(r.lines), r.delivered_total) for r in wakes.list_wakes(phome, "default")]


def test_hook_drain_acks_nothing_when_the_stderr_copy_fails(phome: Path, cli_env) -> None:
    # Stop hooks feed stderr back to the agent on exit 2. The wake used to be acked once the
    # stdout copy was written, before stderr (here a full disk) failed: exit 1, the agent saw
    # nothing, and the wake was gone.
    procs.start(phome, "p5", ["sh", "-c", "echo M1"], monitors=[MonitorSpec("M")])
    wait_status(phome, "p5")
    assert _pending(phome) == [(1, 0)]
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [*ACKDECK, "wakes", "drain", "--hook"],
            env=cli_env,
            stdout=subprocess.PIPE,
            stderr=full,
            text=True,
            timeout=60,
        )
    assert out.returncode == 1
    assert _pending(phome) == [(1, 0)]  # still pending, nothing delivered
    again = ackdeck(cli_env, "wakes", "drain", "--hook")
    assert again.returncode == 2 and "M1" in again.stderr, again.stderr
    assert _pending(phome) == [(0, 1)]


def test_hook_drain_with_stderr_closed_reports_once_and_acks_nothing(phome: Path, cli_env) -> None:
    # With descriptor 2 closed, print(file=sys.stderr) fell back to stdout: the report came
    # twice on stdout and the wake was acked though no agent could have seen it.
    procs.start(phome, "p5", ["sh", "-c", "echo M1"], monitors=[MonitorSpec("M")])
    wait_status(phome, "p5")
    out = subprocess.run(
        ["sh", "-c", '"$@" 2>&-', "sh", *ACKDECK, "wakes", "drain", "--hook"],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert out.stdout.count("M1") == 1, out.stdout
    assert "error" not in out.stdout  # the error line never lands on stdout either
    assert _pending(phome) == [(1, 0)]


def test_a_session_named_like_a_lease_keeps_its_read_state(phome: Path, cli_env) -> None:
    # Session "a"'s read leases are "a.lease.PID.X"; a session called "a.lease.99999" has
    # files with that prefix too. A drain of "a" took them for dead leases and deleted them:
    # the other session lost its cursor and shown set (its next read repeated everything).
    procs.start(
        phome,
        "job",
        ["sh", "-c", "echo ERROR c; echo fine"],
        session="a",
        monitors=[MonitorSpec("ERROR")],
    )
    wait_status(phome, "job")
    first = ackdeck(cli_env, "output", "job", "--session", "a.lease.99999")
    assert first.stdout == "ERROR c\nfine\n", first.stderr
    drained = ackdeck(cli_env, "wakes", "drain", "--session", "a", "--json")
    assert drained.returncode == 0, drained.stderr
    again = ackdeck(cli_env, "output", "job", "--session", "a.lease.99999")
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""


def test_kill_after_the_command_exited_reports_the_recorded_end(
    phome: Path, tmp_path: Path
) -> None:
    # The command has exited but its supervisor has not recorded it yet (busy scanning a
    # backlog; here: stopped). `kill` found nothing to signal and answered the stale `running`
    # ("burst is now running" over MCP), which reads as a failed kill. It now waits for the
    # supervisor's record like any other kill.
    import os
    import signal
    import threading

    from ackdeck.core.monitors.runs import load_meta, supervisor_alive
    from tests.helpers.runs import release, waiter
    from tests.helpers.wait import eventually

    go = tmp_path / "go"
    info = procs.start(phome, "quick", waiter(go, "", "bye\n"))
    meta = load_meta(info.run_dir)
    assert meta is not None and meta.supervisor_pid and info.pid
    os.kill(meta.supervisor_pid, signal.SIGSTOP)
    try:
        release(go)
        # The command is gone (a zombie its stopped supervisor cannot reap yet).
        eventually(lambda: procs.holders.group_members(info.pid) == [], what="command to exit")
        got: list[procs.RunInfo] = []
        t = threading.Thread(target=lambda: got.append(procs.kill(phome, "quick", grace=0)))
        t.start()
        # Not a synchronisation point: however long this takes, the kill's answer must be the
        # supervisor's record, which cannot exist before SIGCONT below.
        t.join(timeout=2)
    finally:
        os.kill(meta.supervisor_pid, signal.SIGCONT)
    t.join(timeout=60)
    assert not t.is_alive()
    assert [(i.status, i.exit_code) for i in got] == [("exited", 0)]
    eventually(lambda: not supervisor_alive(info.run_dir), what="supervisor to finish")


def _occupy_pid(pid: int) -> subprocess.Popen[bytes] | None:
    """An unrelated process group whose leader gets the number `pid` (as the system does when
    pid numbers wrap), or None if this system does not let us choose the next pid."""
    for _ in range(200):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError:
            return None
        decoy = subprocess.Popen(["sleep", "300"], start_new_session=True)
        if decoy.pid == pid:
            return decoy
        decoy.kill()
        decoy.wait()
    return None


def test_kill_spares_a_process_group_that_reused_the_commands_number(
    phome: Path, tmp_path: Path
) -> None:
    # The command exited and its supervisor reaped it, but a setsid'd child still writes the
    # output, so the run is `running`. The command's group is empty, and the system may give
    # its number to an unrelated group (pid numbers wrap; pid_max is often 32768: hours on a
    # busy machine). `kill` used to TERM whatever group bore that number.
    import pytest

    from tests.helpers.wait import eventually

    ready = tmp_path / "ready"
    script = f'setsid sh -c "touch {ready}; exec sleep 300" & echo started'
    info = procs.start(phome, "srv", ["sh", "-c", script])
    assert info.pid
    eventually(ready.exists, what="the daemon")
    eventually(lambda: not procs.holders.group_alive(info.pid), what="command to exit")
    assert procs.get_run(phome, "srv").status == "running"  # the daemon holds the output
    # A reuse happens long after the run started; /proc start times are only about 1 s exact.
    eventually(lambda: time.time() > info.started_at + 2.5, what="the clock to move on")
    decoy = _occupy_pid(info.pid)
    if decoy is None:
        pytest.skip("cannot choose the next pid here (/proc/sys/kernel/ns_last_pid)")
    try:
        end = procs.kill(phome, "srv", grace=30)
        assert decoy.poll() is None, "kill signalled an unrelated process group"
        assert end.status == "killed"  # the daemon writing the output was stopped
    finally:
        decoy.kill()
        decoy.wait()


def test_a_lost_run_does_not_cut_a_line_its_child_is_still_writing(
    phome: Path, tmp_path: Path
) -> None:
    # The supervisor dies after the command exited, while a child it left still writes the
    # output. Reads treated the run as ended (only the command's pid was checked) and returned
    # the unfinished "ERROR part" as a line, then " rest" as another.
    import os
    import signal

    from ackdeck.core.monitors import output
    from ackdeck.core.monitors.runs import load_meta, pid_alive
    from tests.helpers.runs import release
    from tests.helpers.wait import eventually

    go = tmp_path / "go"
    wait = f"while [ ! -e {go} ]; do sleep 0.05; done"
    # "parent" is written before the child starts, so the log's order is fixed.
    script = f'echo parent; (printf "ERROR part"; {wait}; echo " rest") &'
    info = procs.start(phome, "lo", ["bash", "-c", script], monitors=[MonitorSpec("ERROR")])
    log = info.run_dir / "output.log"
    eventually(lambda: log.read_bytes() == b"parent\nERROR part", what="the partial line")
    eventually(lambda: not pid_alive(info.pid), what="the command to exit")
    meta = load_meta(info.run_dir)
    assert meta is not None and meta.supervisor_pid
    os.kill(meta.supervisor_pid, signal.SIGKILL)
    eventually(lambda: procs.get_run(phome, "lo").status == "lost", what="the run to be lost")
    first = output.read_output(phome, "lo", "default")
    assert [bytes(x) for x in first.lines] == [b"parent"]
    release(go)
    eventually(lambda: not procs.holders.writers(log), what="the child to finish")
    rest = output.read_output(phome, "lo", "default")
    assert [bytes(x) for x in rest.lines] == [b"ERROR part rest"]


async def test_mcp_kill_of_an_ended_run_says_it_stopped_its_leftovers(
    phome: Path, tmp_path: Path
) -> None:
    # The tool promised "killing a process that already ended changes nothing" and answered
    # "was already exited" while it did stop the child the run had left running.
    from ackdeck.core.monitors.runs import pid_alive
    from tests.helpers.mcp import call, connect, text_of
    from tests.helpers.wait import eventually

    pidfile = tmp_path / "child"
    # The child lets go of the output, so the run ends while the child lives on in its group.
    script = f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}"
    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "changes nothing" not in (tools["process_kill"].description or "")
        await call(client, "process_start", {"name": "bg", "argv": ["sh", "-c", script]})
        wait_status(phome, "bg")
        child = int(pidfile.read_text())
        assert pid_alive(child)
        killed = await call(client, "process_kill", {"name": "bg", "grace": 1})
        assert not killed.is_error, text_of(killed)
        assert "stopped the processes it left running" in text_of(killed)
    eventually(lambda: not pid_alive(child), what="the child to be stopped")


def test_a_nul_argument_or_a_file_as_cwd_is_refused_before_any_run_exists(
    phome: Path, tmp_path: Path
) -> None:
    import pytest

    from ackdeck.core.errors import AckdeckError

    a_file = tmp_path / "plain.txt"
    a_file.write_text("x")
    with pytest.raises(AckdeckError, match="NUL"):
        procs.start(phome, "nul", [PY, "-c", "pass", "a\0b"])
    with pytest.raises(AckdeckError, match="not a directory"):
        procs.start(phome, "cwdfile", [PY, "-c", "pass"], cwd=str(a_file))
    assert not (phome / "procs" / "nul").exists()
    assert not (phome / "procs" / "cwdfile").exists()


# ----- a Stop hook's drain with nothing to deliver (issue 43) -----------------------------------
def test_a_drain_with_nothing_pending_says_nothing_and_one_with_a_wake_still_delivers(
    phome: Path, cli_env: dict[str, str]
) -> None:
    # Nothing at all, then only the drain's locks in the session's folder (a full drain,
    # --json, made them): quiet, exit 0 (core/service/pending.py lists two folders).
    quiet = ackdeck(cli_env, "wakes", "drain", "--hook")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert ackdeck(cli_env, "wakes", "drain", "--json").returncode == 0
    assert all(p.name.startswith(".") for p in (phome / "wakes" / "default").iterdir())
    quiet = ackdeck(cli_env, "wakes", "drain", "--hook")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    # A record: delivered as before (exit 2, the text on stderr for the agent).
    procs.start(
        phome, "boom", ["sh", "-c", "echo ERROR x; exit 3"], monitors=[MonitorSpec("ERROR")]
    )
    wait_status(phome, "boom")
    told = ackdeck(cli_env, "wakes", "drain", "--hook")
    assert told.returncode == 2 and "ERROR x" in told.stderr, told
    # Bad input is still refused with nothing to deliver.
    for bad in (["--settle", "nan"], ["--settle", "61"], ["--session", "../x"]):
        refused = ackdeck(cli_env, "wakes", "drain", "--hook", *bad)
        assert refused.returncode == 1 and len(refused.stderr.splitlines()) == 1, refused


def test_a_drain_with_no_wake_record_still_tells_a_dead_supervisor(
    phome: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # No wake record exists when a supervisor dies holding a match in its cooldown: only the
    # drain's reconcile turns the run into a monitor-lost wake. A drain that skipped on an
    # empty wake folder alone would never tell it.
    import os
    import signal

    from ackdeck.core.monitors.runs import load_meta, supervisor_alive
    from tests.helpers.runs import release, waiter
    from tests.helpers.wait import eventually

    go = tmp_path / "go"
    info = procs.start(
        phome, "srv", waiter(go, "ERR held\n"), monitors=[MonitorSpec("ERR", cooldown_ms=60_000)]
    )
    eventually(lambda: (info.run_dir / "output.log").read_bytes(), what="the first line")
    meta = load_meta(info.run_dir)
    assert meta is not None and meta.supervisor_pid
    os.kill(meta.supervisor_pid, signal.SIGKILL)
    eventually(lambda: not supervisor_alive(info.run_dir), what="the supervisor to be gone")
    release(go)
    assert not any((phome / "wakes").glob("*/*.json"))
    told = ackdeck(cli_env, "wakes", "drain", "--hook")
    assert told.returncode == 2 and "monitor lost" in told.stderr and "ERR held" in told.stderr
