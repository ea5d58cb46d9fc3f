"""Process lifecycle with real supervisors and real commands, through core and the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from ackdeck.core.errors import InvalidInput, ProcessError
from ackdeck.core.monitors import procs, wakes
from ackdeck.core.monitors.runs import load_meta, supervisor_alive
from tests.helpers.cli import ACKDECK, ackdeck, ackdeck_json
from tests.helpers.runs import PY, release, wait_status, waiter
from tests.helpers.wait import eventually


def test_run_returns_at_once_and_output_survives_in_the_log(phome: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    info = procs.start(phome, "build", waiter(go, "compiling\n", "done\n"))
    assert info.status == "running" and info.pid and info.run_id
    assert (info.run_dir / "output.log").read_bytes() in (b"", b"compiling\n")
    release(go)
    end = wait_status(phome, "build")
    assert (end.status, end.exit_code) == ("exited", 0)
    assert (info.run_dir / "output.log").read_bytes() == b"compiling\ndone\n"
    assert end.ended_at is not None and end.ended_at >= end.started_at


def test_stderr_and_stdout_go_to_the_same_log_in_order(phome: Path) -> None:
    procs.start(phome, "mix", ["sh", "-c", "echo out1; echo err1 >&2; echo out2"])
    info = wait_status(phome, "mix")
    assert (info.run_dir / "output.log").read_bytes() == b"out1\nerr1\nout2\n"


def test_nonzero_exit_code_is_recorded(phome: Path) -> None:
    procs.start(phome, "fail", ["sh", "-c", "exit 7"])
    info = wait_status(phome, "fail")
    assert (info.status, info.exit_code) == ("exited", 7)


def test_signal_exit_reports_128_plus_signal(phome: Path, tmp_path: Path) -> None:
    procs.start(phome, "sig", ["sh", "-c", "kill -USR1 $$; sleep 5"])
    info = wait_status(phome, "sig")
    assert info.exit_code == 128 + signal.SIGUSR1
    assert info.status == "killed"


def test_kill_terms_the_group_and_children_die_with_it(phome: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 300 & echo $! > {pids}; sleep 300 & echo $! >> {pids}; wait"
    info = procs.start(phome, "tree", ["sh", "-c", script])
    eventually(lambda: pids.exists() and len(pids.read_text().split()) == 2, what="children")
    children = [int(x) for x in pids.read_text().split()]
    out = procs.kill(phome, "tree", grace=3.0)
    assert out.status == "killed" and out.exit_code is not None and out.exit_code >= 128
    for pid in [info.pid, *children]:
        assert pid is not None
        eventually(lambda p=pid: not _alive(p), what=f"pid {pid} to die")


def test_kill_escalates_to_sigkill_after_the_grace_period(phome: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    code = (
        "import signal, time, pathlib\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"pathlib.Path({str(ready)!r}).write_text('x')\n"
        "time.sleep(300)\n"
    )
    procs.start(phome, "stubborn", [PY, "-c", code])
    eventually(ready.exists, what="TERM handler installed")
    out = procs.kill(phome, "stubborn", grace=0.3)
    assert (out.status, out.exit_code) == ("killed", 128 + signal.SIGKILL)


def test_invalid_regex_fails_before_anything_starts(phome: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(InvalidInput, match="invalid monitor regex"):
        procs.start(
            phome, "x", ["touch", str(marker)], monitors=[procs.MonitorSpec(pattern="ERR[")]
        )
    assert not marker.exists() and procs.list_runs(phome) == []


def test_unstartable_command_fails_cleanly(phome: Path) -> None:
    with pytest.raises(ProcessError, match="command not found"):
        procs.start(phome, "x", ["definitely-not-a-command-ackdeck"])
    with pytest.raises(ProcessError, match="no such file"):
        procs.start(phome, "x", ["./nope.sh"])
    with pytest.raises(ProcessError, match="no such directory"):
        procs.start(phome, "x", ["true"], cwd="/nonexistent/dir")
    assert procs.list_runs(phome) == []


def test_a_command_that_fails_to_exec_is_reported_and_leaves_nothing(
    phome: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x7fELF garbage that is not a program")
    bad.chmod(0o755)
    with pytest.raises(ProcessError, match="cannot start"):
        procs.start(phome, "x", [str(bad)])
    assert procs.list_runs(phome) == []
    assert not (phome / "procs" / "x").exists()  # nor the name's directory this run made


@pytest.mark.parametrize("closed", ["<&- >&-", "<&- 2>&-", ">&- 2>&-", "<&- >&- 2>&-"])
def test_run_started_with_standard_descriptors_closed_starts_the_command(
    phome: Path, cli_env: dict[str, str], closed: str
) -> None:
    # A caller with two of 0-2 closed (a careless hook) made os.pipe() return them; the
    # launcher's stdio set-up then dup2()ed over the ready pipe: "the supervisor did not start"
    # and an empty procs/d1/ left behind.
    out = subprocess.run(
        ["sh", "-c", f'"$@" {closed}; echo "rc=$?"', "sh", *ACKDECK]
        + ["run", "d1", "--session", "c", "--", "sh", "-c", "echo hi"],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if ">&-" in closed.split():
        # Started, but its report ("started d1 run ...") could not be written: exit 1, and the
        # one line says the run was started (when stderr is open to say it), so no retry.
        assert "rc=1" in out.stdout, out.stdout + out.stderr
        if "2>&-" not in closed.split():
            assert out.stderr.startswith("ackdeck: error: started d1 run "), out.stderr
            assert out.stderr.endswith("report could not be written: stdout is closed\n")
    else:
        assert "rc=0" in out.stdout, out.stdout + out.stderr
    info = wait_status(phome, "d1")
    assert (info.status, info.exit_code) == ("exited", 0)
    assert (info.run_dir / "output.log").read_bytes() == b"hi\n"


def test_reused_name_creates_a_new_run_and_keeps_history(phome: Path) -> None:
    first = procs.start(phome, "job", ["sh", "-c", "echo one"])
    wait_status(phome, "job", first.run_id)
    second = procs.start(phome, "job", ["sh", "-c", "echo two"])
    wait_status(phome, "job", second.run_id)
    assert first.run_id != second.run_id
    assert procs.get_run(phome, "job").run_id == second.run_id
    assert procs.get_run(phome, "job", first.run_id).argv == ["sh", "-c", "echo one"]
    assert [r.run_id for r in procs.list_runs(phome)] == [first.run_id, second.run_id]
    assert [r.run_id for r in procs.list_runs(phome, latest_only=True)] == [second.run_id]


def test_supervisor_crash_becomes_status_lost_and_a_monitor_lost_wake(
    phome: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    info = procs.start(
        phome,
        "srv",
        waiter(go, "ERR before crash\n", "ERR after crash\n"),
        monitors=[procs.MonitorSpec("ERR", cooldown_ms=60_000)],  # still pending at the crash
    )
    eventually(lambda: (info.run_dir / "output.log").read_bytes(), what="first line")
    meta = load_meta(info.run_dir)
    assert meta is not None and meta.supervisor_pid
    os.kill(meta.supervisor_pid, signal.SIGKILL)
    # SIGKILL is asynchronous: under load the supervisor may hold its lock a while longer.
    eventually(lambda: not supervisor_alive(info.run_dir), what="the supervisor to be gone")
    release(go)
    assert info.pid is not None
    eventually(lambda: not _alive(info.pid), what="command to finish")
    lost = eventually(
        lambda: (i := procs.get_run(phome, "srv")).status != "running" and i, what="lost status"
    )
    assert isinstance(lost, procs.RunInfo)
    assert lost.status == "lost" and lost.exit_code is None
    res = wakes.drain(phome, "default")
    assert [d.kind for d in res.delivered] == ["monitor-lost"]
    # Nothing is lost with the supervisor: the unflushed match and the later one are reported.
    assert [x.text for x in res.delivered[0].lines] == ["ERR before crash", "ERR after crash"]
    assert "monitor lost" in wakes.format_wake_text(res)
    assert wakes.drain(phome, "default").delivered == []


def test_kill_still_stops_the_command_of_a_lost_run(phome: Path) -> None:
    info = procs.start(phome, "orphan", ["sleep", "300"])
    meta = load_meta(info.run_dir)
    assert meta is not None and meta.supervisor_pid and info.pid
    os.kill(meta.supervisor_pid, signal.SIGKILL)
    eventually(lambda: procs.get_run(phome, "orphan").status == "lost", what="lost status")
    assert _alive(info.pid)  # the command outlived its supervisor
    out = procs.kill(phome, "orphan", grace=2.0)
    assert out.status == "lost"
    eventually(lambda: not _alive(info.pid), what="the orphan to die")


def test_cli_run_ps_output_kill_contract(phome: Path, cli_env: dict[str, str]) -> None:
    started = ackdeck_json(cli_env, "run", "web", "--", "sh", "-c", "echo up; exec sleep 300")
    run_keys = {
        "name",
        "run_id",
        "pid",
        "status",
        "exit_code",
        "started_at",
        "ended_at",
        "argv",
        "cwd",
        "session",
        "monitors",
        "matches",
        "next",  # what to do next, in words (issue 29); None once the run ended
    }
    # One shape for a run wherever it is shown: run, ps and kill (and MCP's process tools).
    assert set(started) == run_keys and started["name"] == "web"
    listed = ackdeck_json(cli_env, "ps")
    rows = listed["processes"]
    assert listed["session"] is None and rows[0]["status"] == "running"
    assert set(rows[0]) == run_keys
    out = ackdeck_json(cli_env, "output", "web", "--session", "s1", "--timeout", "60")
    assert out["lines"] == ["up"] and out["status"] == "running" and out["exit_code"] is None
    k = ackdeck(cli_env, "kill", "web", "--json")
    assert k.returncode == 0, k.stderr
    killed = json.loads(k.stdout)
    assert killed["status"] == "killed" and killed["was"] == "running"
    assert run_keys <= set(killed)
    rows = ackdeck_json(cli_env, "ps")["processes"]
    assert rows[0]["status"] == "killed" and rows[0]["exit_code"] == 128 + signal.SIGTERM


def test_cli_errors_are_one_line_with_exit_1(phome: Path, cli_env: dict[str, str]) -> None:
    cases = [
        ("run", "../x", "--", "true"),
        ("run", "x", "--monitor", "(", "--", "true"),
        ("run", "x", "--", "no-such-cmd-ackdeck"),
        ("output", "ghost", "--session", "s"),
        ("kill", "ghost"),
        ("output", "x", "--session", "a/b"),
        ("wakes", "drain", "--session", "../s"),
    ]
    for args in cases:
        out = ackdeck(cli_env, *args)
        assert out.returncode == 1, (args, out)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ackdeck: error:"), (args, out.stderr)


def test_cli_session_defaults_to_env(phome: Path, cli_env: dict[str, str]) -> None:
    env = dict(cli_env, ACKDECK_SESSION="agent-7")
    ackdeck_json(env, "run", "j", "--monitor", "HIT", "--cooldown-ms", "0", "--", "echo", "HIT")
    wait_status(phome, "j")
    assert [r.session for r in wakes.list_wakes(phome)] == ["agent-7"]
    assert procs.get_run(phome, "j").session == "agent-7"


def _alive(pid: int) -> bool:
    from ackdeck.core.monitors.runs import pid_alive

    return pid_alive(pid)


def test_a_file_system_fault_is_one_line_not_a_traceback(phome: Path, cli_env) -> None:
    (phome / "procs").write_text("not a directory")  # e.g. a broken or hostile home
    out = ackdeck(cli_env, "run", "x", "--", "true")
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ackdeck: error:") and "procs" in lines[0]
    assert (phome / "procs").read_text() == "not a directory"
