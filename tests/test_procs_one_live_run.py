"""A name has one live run (issue 19): a second start while it runs orphaned the first (out of
reach of `kill NAME`, hidden from listings). Now it is refused with one line naming the running
run; `--replace` / `replace: true` stops it first; `kill` / `process_kill` take a run id; and a
listing shows every live run. Real processes, real supervisors, the CLI and the MCP server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ackdeck.core.errors import InvalidInput
from ackdeck.core.monitors import procs
from ackdeck.core.monitors.runs import load_meta, supervisor_alive
from ackdeck.core.service import procs as service
from tests.helpers.cli import ACKDECK, ackdeck, ackdeck_json
from tests.helpers.mcp import call, connect, text_of
from tests.helpers.runs import start_beside
from tests.helpers.wait import eventually

SLEEPER = [sys.executable, "-c", "import time; time.sleep(300)"]


def alive(pid: int | None) -> bool:
    return pid is not None and procs.pid_alive(pid)


def test_a_second_start_is_refused_naming_the_running_run_and_kill_still_reaches_it(
    phome: Path, cli_env: dict[str, str]
) -> None:
    first = ackdeck_json(cli_env, "run", "dup", "--", *SLEEPER)
    assert isinstance(first, dict)
    again = ackdeck(cli_env, "run", "dup", "--", "true")
    assert again.returncode == 1
    assert again.stderr == (
        f"ackdeck: error: process 'dup' is still running as run {first['run_id']} (pid "
        f"{first['pid']}, running); kill it first, or start again with replace (--replace) to "
        "stop it and start anew\n"
    )
    listed = ackdeck_json(cli_env, "ps")
    assert isinstance(listed, dict)
    assert [r["run_id"] for r in listed["processes"]] == [first["run_id"]]  # nothing started
    killed = ackdeck_json(cli_env, "kill", "dup", "--grace", "0")
    assert isinstance(killed, dict)
    assert (killed["run_id"], killed["was"], killed["status"]) == (
        first["run_id"],
        "running",
        "killed",
    )
    eventually(lambda: not alive(first["pid"]), what="the first run's command to die")
    assert ackdeck(cli_env, "run", "dup", "--", "true").returncode == 0  # the name is free again


def test_replace_stops_the_running_run_before_the_new_one_starts(
    phome: Path, cli_env: dict[str, str], tmp_path: Path
) -> None:
    stopped = tmp_path / "old-was-stopped"
    old = [
        sys.executable,
        "-c",
        "import pathlib, signal, sys, time\n"
        f"def bye(*_): pathlib.Path({str(stopped)!r}).touch(); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('old up', flush=True)\n"
        "while True: time.sleep(0.05)\n",
    ]
    first = ackdeck_json(cli_env, "run", "svc", "--", *old)
    assert isinstance(first, dict)
    run_dir = phome / "procs" / "svc" / first["run_id"]
    eventually(lambda: b"old up" in (run_dir / "output.log").read_bytes(), what="old to be up")
    # The new command looks, the moment it starts, whether the old one was already stopped.
    new = ["sh", "-c", f'test -e {stopped} && echo "old had stopped" || echo "old still ran"']
    second = ackdeck_json(cli_env, "run", "svc", "--replace", "--", *new)
    assert isinstance(second, dict) and second["run_id"] != first["run_id"]
    out = ackdeck(cli_env, "output", "svc", "--timeout", "60")
    assert out.stdout == "old had stopped\n", out.stderr
    assert not alive(first["pid"])
    runs = {r.run_id: r for r in procs.list_runs(phome)}
    assert runs[first["run_id"]].status == "killed"
    ended = runs[first["run_id"]].ended_at
    assert ended is not None and ended <= runs[second["run_id"]].started_at


def test_two_starts_racing_for_one_name_start_one_run(phome: Path, cli_env: dict[str, str]) -> None:
    racers = [
        subprocess.Popen(
            [*ACKDECK, "run", "race", "--", *SLEEPER],
            env=cli_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    done = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in racers]
    assert sorted(code for code, _ in done) == [0, 1], done
    refused = next(err for code, err in done if code == 1)
    live = [r for r in procs.list_runs(phome) if r.status == "running"]
    assert len(live) == 1 and f"still running as run {live[0].run_id}" in refused


def test_a_lost_run_whose_command_lives_blocks_the_name_until_replaced(
    phome: Path, cli_env: dict[str, str]
) -> None:
    info = procs.start(phome, "orphan", SLEEPER)
    meta = load_meta(info.run_dir)
    assert meta is not None and meta.supervisor_pid
    os.kill(meta.supervisor_pid, signal.SIGKILL)
    eventually(lambda: not supervisor_alive(info.run_dir), what="the supervisor to be gone")
    refused = ackdeck(cli_env, "run", "orphan", "--", "true")
    assert refused.returncode == 1
    assert f"still running as run {info.run_id} (pid {info.pid}, lost)" in refused.stderr
    assert alive(info.pid)
    assert ackdeck(cli_env, "run", "orphan", "--replace", "--", "true").returncode == 0
    assert not alive(info.pid)  # stopped before the new run started, not orphaned


def test_kill_names_a_run_by_its_run_id_and_ps_latest_shows_every_live_run(
    phome: Path, cli_env: dict[str, str]
) -> None:
    # Two live runs of one name, as an older ackdeck left them.
    older = procs.start(phome, "pair", SLEEPER)
    newer = start_beside(phome, "pair", SLEEPER)
    latest = ackdeck_json(cli_env, "ps", "--latest")
    assert isinstance(latest, dict)
    assert [r["run_id"] for r in latest["processes"]] == [older.run_id, newer.run_id]
    out = ackdeck(cli_env, "kill", older.run_id, "--grace", "0")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"pair run {older.run_id}: killed")
    eventually(lambda: not alive(older.pid), what="the older run to die")
    assert alive(newer.pid)  # only the named run
    by_option = ackdeck_json(cli_env, "kill", "pair", "--run-id", newer.run_id, "--grace", "0")
    assert isinstance(by_option, dict) and by_option["run_id"] == newer.run_id
    wrong = ackdeck(cli_env, "kill", "other", "--run-id", newer.run_id)
    assert wrong.returncode == 1
    assert wrong.stderr == (
        f"ackdeck: error: run {newer.run_id!r} is a run of 'pair', not of 'other'\n"
    )
    unknown = ackdeck(cli_env, "kill", "--run-id", "20990101T000000000-abcdef")
    assert unknown.returncode == 1 and "unknown run id" in unknown.stderr


async def test_mcp_lists_every_live_run_and_kills_by_name_or_run_id(
    phome: Path, tmp_path: Path
) -> None:
    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        started = await call(client, "process_start", {"name": "svc", "argv": SLEEPER})
        first = started.structured_content
        assert first is not None
        refused = await call(client, "process_start", {"name": "svc", "argv": ["true"]})
        assert refused.is_error and f"still running as run {first['run_id']}" in text_of(refused)
        replaced = await call(
            client, "process_start", {"name": "svc", "argv": SLEEPER, "replace": True}
        )
        second = replaced.structured_content
        assert not replaced.is_error and second is not None
        assert not alive(first["pid"]) and alive(second["pid"])
        # A run an older ackdeck left beside it (same name, same session, still running).
        beside = start_beside(phome, "svc", SLEEPER, session="agent")
        listed = await call(client, "process_list")
        assert listed.structured_content is not None
        rows = [(r["run_id"], r["status"]) for r in listed.structured_content["processes"]]
        assert rows == [(second["run_id"], "running"), (beside.run_id, "running")]
        # By name: the newest live run; by run id: exactly that run.
        by_name = await call(client, "process_kill", {"name": "svc", "grace": 0})
        assert text_of(by_name).startswith(f"svc run {beside.run_id} is now killed")
        by_id = await call(client, "process_kill", {"run_id": second["run_id"], "grace": 0})
        assert text_of(by_id).startswith(f"svc run {second['run_id']} is now killed")
        assert not alive(second["pid"]) and not alive(beside.pid)
        history = await call(client, "process_list", {"history": True})
        assert history.structured_content is not None
        assert [r["status"] for r in history.structured_content["processes"]] == ["killed"] * 3


def test_the_service_refuses_a_kill_that_names_nothing(phome: Path) -> None:
    with pytest.raises(InvalidInput, match="name the process or its run id"):
        service.kill(phome)


def test_a_refused_start_prints_the_cli_error_json_and_keeps_the_running_run(
    phome: Path, cli_env: dict[str, str]
) -> None:
    first = ackdeck_json(cli_env, "run", "keep", "--", *SLEEPER)
    assert isinstance(first, dict)
    out = ackdeck(cli_env, "run", "keep", "--json", "--", "true")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"] == "ProcessError"  # the CLI's {error, message} JSON
    assert procs.get_run(phome, "keep").run_id == first["run_id"]


async def test_mcp_replace_never_stops_another_session_s_run(phome: Path, tmp_path: Path) -> None:
    theirs = procs.start(phome, "shared", SLEEPER, session="someone-else")
    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        res = await call(
            client, "process_start", {"name": "shared", "argv": ["true"], "replace": True}
        )
    assert res.is_error
    assert text_of(res) == (
        f"process 'shared' is running as run {theirs.run_id} of session 'someone-else', not "
        "'agent'; only its owner may replace it here"
    )
    assert alive(theirs.pid)
    assert [r.run_id for r in procs.list_runs(phome)] == [theirs.run_id]
