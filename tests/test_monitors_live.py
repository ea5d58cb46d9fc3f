"""Monitor and gate scenarios end to end: real commands, real supervisors, real files.

Adapted from the seed's review rounds (a wake must never re-report output the agent was shown)
and extended to what a per-line, per-reader shown set and per-start run ids make possible.
"""

from __future__ import annotations

from pathlib import Path

from ackdeck.core.monitors import procs, wakes
from ackdeck.core.monitors.output import read_output
from ackdeck.core.monitors.runs import load_monitors_state
from tests.helpers.cli import ackdeck, ackdeck_json
from tests.helpers.runs import PY, drain_lines, release, wait_status, waiter
from tests.helpers.wait import eventually


def mon(pattern: str, **kw) -> list[procs.MonitorSpec]:
    return [procs.MonitorSpec(pattern, **kw)]


def record_lines(home: Path, session: str = "default") -> list[str]:
    return [x.text for r in wakes.list_wakes(home, session) for x in r.lines]


def test_final_unterminated_line_matches_on_exit(phome: Path, cli_env) -> None:
    ackdeck_json(cli_env, "run", "b", "--monitor", "FAILED", "--", "printf", "ok\\nFAILED: 3 tests")
    wait_status(phome, "b")
    out = ackdeck_json(cli_env, "wakes", "drain", "--session", "default")
    assert isinstance(out, dict)
    assert [d["lines"] for d in out["delivered"]] == [["FAILED: 3 tests"]]
    assert out["superseded"] == 0 and out["pending"] == 0


def test_burst_inside_the_cooldown_is_one_event_flushed_at_exit(
    phome: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    info = procs.start(
        phome,
        "b",
        waiter(go, "ERR 1\n", "ERR 2\nERR 3\nfine\n"),
        monitors=mon("ERR", cooldown_ms=600_000),
    )
    eventually(lambda: (info.run_dir / "output.log").read_bytes(), what="first line")
    release(go)
    wait_status(phome, "b")  # the 10-minute window is cut short by the exit
    st = load_monitors_state(info.run_dir)
    assert st is not None and st.monitors[0].events == 1 and st.monitors[0].matches == 3
    res = wakes.drain(phome, "default")
    assert len(res.delivered) == 1
    assert [x.text for x in res.delivered[0].lines] == ["ERR 1", "ERR 2", "ERR 3"]
    assert res.delivered[0].total_matches == 3


def test_inverted_filter_wakes_on_lines_not_matching(phome: Path) -> None:
    procs.start(
        phome,
        "b",
        ["printf", "ok 1\\nok 2\\nsurprise\\nok 3\\n"],
        monitors=mon("^ok", exclude=True),
    )
    wait_status(phome, "b")
    res = wakes.drain(phome, "default")
    assert [x.text for d in res.delivered for x in d.lines] == ["surprise"]
    assert res.delivered[0].exclude is True and "not matching" in wakes.format_wake_text(res)


def test_max_events_stops_the_monitor_not_the_process(phome: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    info = procs.start(
        phome,
        "b",
        waiter(go, "ERR a\n", "ERR b\nstill running\n"),
        monitors=mon("ERR", cooldown_ms=0, max_events=1),
    )
    eventually(lambda: record_lines(phome), what="first event")
    release(go)
    end = wait_status(phome, "b")
    assert (end.status, end.exit_code) == ("exited", 0)
    assert (info.run_dir / "output.log").read_bytes().endswith(b"still running\n")
    assert drain_lines(phome) == ["ERR a"]


def test_the_monitor_never_moves_a_readers_cursor(phome: Path) -> None:
    procs.start(phome, "b", ["printf", "ERR 1\\nok\\nERR 2\\n"], monitors=mon("ERR", cooldown_ms=0))
    wait_status(phome, "b")
    assert record_lines(phome) == ["ERR 1", "ERR 2"]
    assert read_output(phome, "b", "default").lines == [b"ERR 1", b"ok", b"ERR 2"]


def test_a_deferred_wake_is_dropped_once_the_agent_reads_past_it(
    phome: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    info = procs.start(
        phome,
        "b",
        waiter(go, "ERR seen inline\n", "more\n"),
        monitors=mon("ERR", cooldown_ms=600_000),
    )
    assert read_output(phome, "b", "default", timeout=60).lines == [b"ERR seen inline"]
    release(go)
    wait_status(phome, "b")
    st = load_monitors_state(info.run_dir)
    assert st is not None and st.monitors[0].suppressed == 1  # dropped at match time
    assert drain_lines(phome) == []


def test_a_wake_already_recorded_is_superseded_at_delivery(phome: Path) -> None:
    procs.start(phome, "b", ["echo", "ERR x"], monitors=mon("ERR", cooldown_ms=0))
    wait_status(phome, "b")
    assert record_lines(phome) == ["ERR x"]  # recorded before any read
    assert read_output(phome, "b", "default").lines == [b"ERR x"]
    res = wakes.drain(phome, "default")
    assert res.delivered == [] and res.superseded == 1  # the read also saw the exit


def test_a_matched_line_only_buffered_unterminated_still_wakes(phome: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs.start(phome, "b", waiter(go, "ok\nERR partial", ""), monitors=mon("ERR", cooldown_ms=0))
    assert read_output(phome, "b", "default", timeout=60).lines == [b"ok"]
    release(go)
    wait_status(phome, "b")
    assert drain_lines(phome) == ["ERR partial"]


def test_a_trailing_fragment_after_a_matched_line_does_not_block_suppression(
    phome: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    procs.start(
        phome,
        "b",
        waiter(go, "ERR line\npartial", " rest\n"),
        monitors=mon("ERR", cooldown_ms=600_000),
    )
    assert read_output(phome, "b", "default", timeout=60).lines == [b"ERR line"]
    release(go)
    wait_status(phome, "b")
    assert drain_lines(phome) == []


def test_the_matched_offset_is_the_matched_lines_end_not_the_chunks(
    phome: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    procs.start(
        phome,
        "b",
        waiter(go, "ERR a\n", "unmatched 1\nunmatched 2\n"),
        monitors=mon("ERR", cooldown_ms=600_000),
    )
    assert read_output(phome, "b", "default", timeout=60).lines == [b"ERR a"]
    release(go)  # later lines land in the monitor's same chunk; the agent never read them
    wait_status(phome, "b")
    assert drain_lines(phome) == []


def test_a_filtered_read_that_skipped_the_matched_line_does_not_suppress_it(
    phome: Path,
) -> None:
    procs.start(phome, "b", ["printf", "ERR hidden\\nDONE\\n"], monitors=mon("ERR", cooldown_ms=0))
    wait_status(phome, "b")
    assert read_output(phome, "b", "default", filter="DONE").lines == [b"DONE"]
    assert drain_lines(phome) == ["ERR hidden"]


def test_ansi_is_stripped_before_matching(phome: Path) -> None:
    procs.start(
        phome, "b", ["printf", "\\033[31mER\\033[0mROR: red\\n"], monitors=mon("ERROR: red")
    )
    wait_status(phome, "b")
    assert drain_lines(phome) == ["ERROR: red"]


def test_an_ansi_sequence_split_across_writes_is_still_stripped(
    phome: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    info = procs.start(
        phome,
        "b",
        waiter(go, "ok\n\x1b[3", "1mERROR\x1b[0m\n"),
        monitors=mon("^ERROR$", cooldown_ms=0),
    )
    # Let the supervisor scan the first half (it persists its progress within a second).
    eventually(
        lambda: (s := load_monitors_state(info.run_dir)) is not None and s.scanned_to >= 6,
        what="first half scanned",
    )
    release(go)
    wait_status(phome, "b")
    assert drain_lines(phome) == ["ERROR"]


def test_a_token_after_16kb_of_a_long_line_still_matches(phome: Path) -> None:
    code = "import sys; sys.stdout.write('x' * 16500 + ' NEEDLE ' + 'y' * 10 + '\\n')"
    procs.start(phome, "b", [PY, "-c", code], monitors=mon("NEEDLE"))
    wait_status(phome, "b")
    (text,) = drain_lines(phome)
    assert text.startswith("xxx") and text.endswith("y" * 10) and len(text.encode()) <= 1024


def test_an_unterminated_flood_stays_bounded_in_memory(phome: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    code = (
        "import os, sys, time\n"
        "for _ in range(48): sys.stdout.write('z' * (1 << 20))\n"
        "sys.stdout.flush()\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        "sys.stdout.write(' FLOOD-END\\n'); sys.stdout.flush()\n"
    )
    info = procs.start(phome, "b", [PY, "-c", code], monitors=mon("FLOOD-END", cooldown_ms=0))
    from ackdeck.core.monitors.runs import load_meta

    meta = load_meta(info.run_dir)
    assert meta is not None and meta.supervisor_pid
    st_path = Path(f"/proc/{meta.supervisor_pid}/status")
    eventually(lambda: (info.run_dir / "output.log").stat().st_size >= 48 << 20, what="flood")
    eventually(
        lambda: (s := load_monitors_state(info.run_dir)) is not None and s.scanned_to >= 48 << 20,
        what="supervisor to scan the flood",
    )
    rss_kb = int(
        next(x for x in st_path.read_text().splitlines() if x.startswith("VmRSS")).split()[1]
    )
    assert rss_kb < 40 * 1024  # 48 MB of one line, a few MB kept
    release(go)
    wait_status(phome, "b")
    (text,) = drain_lines(phome)
    assert text.endswith("FLOOD-END")


def test_two_sessions_read_independently_and_each_gate_uses_its_own_shown_set(
    phome: Path,
) -> None:
    procs.start(phome, "a", ["echo", "ERR for agent"], session="agent", monitors=mon("ERR"))
    procs.start(phome, "o", ["echo", "ERR for owner"], session="owner", monitors=mon("ERR"))
    wait_status(phome, "a")
    wait_status(phome, "o")
    # The owner looks at both processes in the dashboard; the agent reads nothing.
    assert read_output(phome, "a", "owner").lines == [b"ERR for agent"]
    assert read_output(phome, "o", "owner").lines == [b"ERR for owner"]
    assert drain_lines(phome, "agent") == ["ERR for agent"]  # the owner's read never suppresses
    assert drain_lines(phome, "owner") == []  # but the owner's own wake is superseded


def test_a_merged_record_with_one_shown_line_delivers_only_the_unshown_one(
    phome: Path,
) -> None:
    procs.start(phome, "b", ["printf", "ERR 1\\nERR 2\\n"], monitors=mon("ERR", cooldown_ms=0))
    wait_status(phome, "b")
    assert record_lines(phome) == ["ERR 1", "ERR 2"]
    assert read_output(phome, "b", "default", filter="1").lines == [b"ERR 1"]
    res = wakes.drain(phome, "default")
    assert [x.text for d in res.delivered for x in d.lines] == ["ERR 2"]
    assert res.superseded == 1


def test_a_reused_name_never_lets_a_new_runs_reads_suppress_an_old_runs_wake(
    phome: Path,
) -> None:
    old = procs.start(phome, "job", ["echo", "ERR same bytes"], monitors=mon("ERR"))
    wait_status(phome, "job", old.run_id)
    new = procs.start(phome, "job", ["echo", "ERR same bytes"], monitors=mon("ERR"))
    wait_status(phome, "job", new.run_id)
    # Same name, same bytes, same offsets: only the run id tells them apart.
    got = read_output(phome, "job", "default")
    assert got.run_id == new.run_id and got.lines == [b"ERR same bytes"]
    res = wakes.drain(phome, "default")
    delivered = [(x.run_id, x.text) for d in res.delivered for x in d.lines]
    assert delivered == [(old.run_id, "ERR same bytes")]
    assert res.superseded == 1


def test_hook_mode_exits_2_with_the_text_then_0(phome: Path, cli_env) -> None:
    ackdeck_json(cli_env, "run", "b", "--monitor", "ERROR", "--", "echo", "ERROR: disk full")
    wait_status(phome, "b")
    first = ackdeck(cli_env, "wakes", "drain", "--session", "default", "--hook")
    assert first.returncode == 2 and "ERROR: disk full" in first.stderr
    assert "ERROR: disk full" in first.stdout
    second = ackdeck(cli_env, "wakes", "drain", "--session", "default", "--hook")
    assert second.returncode == 0 and second.stdout == "" and "ERROR" not in second.stderr


def test_exit_notice_is_delivered_unless_a_read_reported_the_exit(phome: Path) -> None:
    procs.start(phome, "quiet", ["sh", "-c", "exit 3"], monitors=mon("ERR"))
    procs.start(phome, "seen", ["true"], monitors=mon("ERR"))
    wait_status(phome, "quiet")
    wait_status(phome, "seen")
    assert read_output(phome, "seen", "default").status == "exited"
    res = wakes.drain(phome, "default")
    assert [(d.name, d.kind, d.exit_code) for d in res.delivered] == [("quiet", "exited", 3)]
    assert "exit code 3" in wakes.format_wake_text(res)


def test_two_monitors_on_one_run_each_report_their_lines(phome: Path) -> None:
    info = procs.start(
        phome,
        "b",
        ["printf", "ERR one\\nWARN two\\nfine\\nERR three\\n"],
        monitors=[
            procs.MonitorSpec("ERR", cooldown_ms=0),
            procs.MonitorSpec("WARN", cooldown_ms=0),
        ],
    )
    wait_status(phome, "b")
    assert sorted(drain_lines(phome)) == ["ERR one", "ERR three", "WARN two"]
    assert procs.get_run(phome, "b", info.run_id).matches == 3
