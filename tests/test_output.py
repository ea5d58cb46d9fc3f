"""The agent's read: per-session cursors, filters, waits, leases, and exact shown ranges."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from ackdeck.core.errors import InvalidInput, ProcessError
from ackdeck.core.monitors import procs, shown, wakes
from ackdeck.core.monitors.output import read_output
from tests.helpers.runs import PY, release, wait_status, waiter
from tests.helpers.wait import eventually


def test_reads_return_new_complete_lines_after_the_cursor(phome: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs.start(phome, "p", waiter(go, "one\ntwo\npart", "ial\nthree"))
    first = read_output(phome, "p", "s", timeout=10)
    assert first.lines == [b"one", b"two"] and first.status == "running"
    assert first.spans == [(0, 4), (4, 8)]
    assert read_output(phome, "p", "s").lines == []  # nothing new; the fragment is held back
    release(go)
    wait_status(phome, "p")
    last = read_output(phome, "p", "s")
    # The final unterminated fragment is returned once the process has exited.
    assert last.lines == [b"partial", b"three"] and last.status == "exited"
    assert last.exit_code == 0
    assert read_output(phome, "p", "s").lines == []


def test_each_session_has_its_own_cursor(phome: Path) -> None:
    procs.start(phome, "p", ["printf", "a\\nb\\n"])
    wait_status(phome, "p")
    assert read_output(phome, "p", "agent").lines == [b"a", b"b"]
    assert read_output(phome, "p", "owner").lines == [b"a", b"b"]
    assert read_output(phome, "p", "agent").lines == []


def test_filter_and_exclude_consume_but_only_show_kept_lines(phome: Path) -> None:
    procs.start(phome, "p", ["printf", "\\033[1mERR\\033[0m x\\nok\\nERR y\\nok2\\n"])
    wait_status(phome, "p")
    got = read_output(phome, "p", "s", filter="^ERR")  # matched on the cleaned text
    assert got.lines == [b"\x1b[1mERR\x1b[0m x", b"ERR y"]  # returned raw
    assert read_output(phome, "p", "s").lines == []  # filtered-out lines were consumed
    state = shown.load_state(procs.get_run(phome, "p").run_dir, "s")
    assert state is not None and state.shown == [(0, 14), (17, 23)]  # not the dropped ones
    excl = read_output(phome, "p", "t", filter="ERR", exclude=True)
    assert excl.lines == [b"ok", b"ok2"]


def test_timeout_waits_for_a_kept_line_or_the_exit(phome: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs.start(phome, "p", waiter(go, "noise\n", "DONE\n"))
    threading.Timer(0.3, release, [go]).start()
    got = read_output(phome, "p", "s", filter="DONE", timeout=60)
    assert got.lines == [b"DONE"]
    # With nothing new, a wait ends when the process exits rather than at the timeout.
    procs.start(phome, "q", waiter(tmp_path / "go2", "", ""))
    threading.Timer(0.3, release, [tmp_path / "go2"]).start()
    t0 = time.monotonic()
    got = read_output(phome, "q", "s", timeout=300)
    assert got.status == "exited" and time.monotonic() - t0 < 120


def test_bad_reads_are_clear_errors(phome: Path) -> None:
    with pytest.raises(ProcessError, match="unknown process"):
        read_output(phome, "ghost", "s")
    procs.start(phome, "p", ["true"])
    with pytest.raises(InvalidInput, match="invalid filter regex"):
        read_output(phome, "p", "s", filter="(")
    with pytest.raises(ProcessError, match="unknown run"):
        read_output(phome, "p", "s", run_id="nope")
    # `exclude` without a filter used to return every line silently on the CLI: core refuses
    # it (every door reads through here), as it refuses a wait it cannot honour.
    with pytest.raises(InvalidInput, match="exclude inverts a filter"):
        read_output(phome, "p", "s", exclude=True)
    for bad in (-5, float("nan"), float("inf"), 601):
        with pytest.raises(InvalidInput, match="timeout must be"):
            read_output(phome, "p", "s", timeout=bad)


def test_concurrent_reads_never_return_a_line_twice(phome: Path, cli_env) -> None:
    code = "import sys, time\nfor i in range(3000):\n    print(f'line {i}', flush=(i % 50 == 0))\n"
    procs.start(phome, "flood", [PY, "-c", code])
    seen: list[bytes] = []
    lock = threading.Lock()

    def reader() -> None:
        while True:
            got = read_output(phome, "flood", "agent", timeout=2)
            with lock:
                seen.extend(got.lines)
            if got.status != "running" and not got.lines:
                return

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    # Plus two reader processes of the same session through the CLI.
    cli_lines: list[str] = []
    for _ in range(6):
        out = subprocess.run(
            [PY, "-m", "ackdeck.core.cli", "output", "flood", "--session", "agent"],
            env=cli_env,
            capture_output=True,
            text=True,
            check=True,
        )
        cli_lines.extend(out.stdout.splitlines())
    for t in threads:
        t.join(60)
    everything = [x.decode() for x in seen] + cli_lines
    assert sorted(everything) == sorted(f"line {i}" for i in range(3000))


def test_utf8_split_across_writes_keeps_offsets_exact(phome: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    code = (
        "import os, sys, time\n"
        "sys.stdout.buffer.write(b'ok\\ncaf\\xc3'); sys.stdout.flush()\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        "sys.stdout.buffer.write(b'\\xa9 ERR\\n'); sys.stdout.flush()\n"
    )
    procs.start(
        phome, "u", [PY, "-c", code], monitors=[procs.MonitorSpec("café ERR", cooldown_ms=0)]
    )
    assert read_output(phome, "u", "default", timeout=10).lines == [b"ok"]
    release(go)
    got = read_output(phome, "u", "default", timeout=10)
    assert got.lines == ["café ERR".encode()] and got.spans == [(3, 3 + len("café ERR\n".encode()))]
    wait_status(phome, "u")
    recs = wakes.list_wakes(phome, "default")
    line_ranges = [(x.start, x.end) for r in recs for x in r.lines]
    assert line_ranges in ([], got.spans)  # the monitor used the very same range
    res = wakes.drain(phome, "default")
    assert [x.text for d in res.delivered for x in d.lines] == []


def test_drain_waits_for_an_in_flight_unfiltered_read(
    phome: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    procs.start(
        phome, "p", ["echo", "ERR boom"], monitors=[procs.MonitorSpec("ERR", cooldown_ms=0)]
    )
    info = wait_status(phome, "p")
    entered = threading.Event()
    real_settle = shown.settle

    def spy(*a, **k):  # the real settle, plus a signal that the drain reached it
        entered.set()
        return real_settle(*a, **k)

    monkeypatch.setattr(shown, "settle", spy)
    result: list[wakes.DrainResult] = []
    with shown.lease(info.run_dir, "default"):  # an unfiltered read of the owner is in flight
        t = threading.Thread(
            target=lambda: result.append(wakes.drain(phome, "default", settle_timeout=300))
        )
        t.start()
        assert entered.wait(60), "drain never reached its settle step"
        # The in-flight read now returns the line (and records it as shown) before finishing.
        assert read_output(phome, "p", "default").lines == [b"ERR boom"]
        assert t.is_alive()  # still waiting for the lease
    t.join(300)
    assert result and [x.text for d in result[0].delivered for x in d.lines] == []
    assert result[0].superseded == 1


def test_drain_does_not_wait_for_a_filtered_long_poll(phome: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    procs.start(
        phome,
        "p",
        waiter(go, "ERR first\n", ""),
        monitors=[procs.MonitorSpec("ERR", cooldown_ms=0)],
    )
    eventually(lambda: wakes.list_wakes(phome, "default"), what="the wake")
    poll = threading.Thread(
        target=read_output, args=(phome, "p", "default"), kwargs={"filter": "NEVER", "timeout": 60}
    )
    poll.start()
    try:
        t0 = time.monotonic()
        res = wakes.drain(phome, "default", settle_timeout=300)
        assert time.monotonic() - t0 < 120  # far below the settle timeout: it did not wait
        assert [x.text for d in res.delivered for x in d.lines] == ["ERR first"]
    finally:
        release(go)
        poll.join(60)


def test_a_lease_of_a_dead_reader_does_not_block(phome: Path) -> None:
    procs.start(phome, "p", ["echo", "ERR x"], monitors=[procs.MonitorSpec("ERR", cooldown_ms=0)])
    info = wait_status(phome, "p")
    dead = subprocess.Popen(["true"])
    dead.wait()
    reads = shown.reads_dir(info.run_dir)
    reads.mkdir(exist_ok=True)
    stale = reads / f"default{shown.LEASE_MARK}{dead.pid}.abcd"
    fd = os.open(stale, os.O_RDWR | os.O_CREAT, 0o600)
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX)  # even a lock someone still holds: its pid is dead
    try:
        t0 = time.monotonic()
        res = wakes.drain(phome, "default", settle_timeout=300)
        assert time.monotonic() - t0 < 120
        assert [x.text for d in res.delivered for x in d.lines] == ["ERR x"]
    finally:
        os.close(fd)


def test_unreadable_read_state_fails_open_and_is_kept(phome: Path) -> None:
    procs.start(phome, "p", ["echo", "ERR x"], monitors=[procs.MonitorSpec("ERR", cooldown_ms=0)])
    info = wait_status(phome, "p")
    eventually(lambda: wakes.list_wakes(phome, "default"), what="the wake")
    assert read_output(phome, "p", "default").lines == [b"ERR x"]
    state = shown.state_path(info.run_dir, "default")
    state.write_text("{ corrupted")
    # The gate cannot tell what was shown: it delivers rather than risk hiding a match.
    res = wakes.drain(phome, "default")
    assert [x.text for d in res.delivered for x in d.lines] == ["ERR x"]
    # The next read starts over (redelivery, never loss) and keeps the bad file aside.
    assert read_output(phome, "p", "default").lines == [b"ERR x"]
    kept = [p for p in state.parent.iterdir() if ".corrupt-" in p.name]
    assert len(kept) == 1 and kept[0].read_text() == "{ corrupted"


def test_more_is_true_while_output_of_an_exited_run_remains(phome: Path, cli_env) -> None:
    """A client looping on `more` gets everything: an exited run with more than one read's
    worth (16 MiB) of output said `more: false` on every piece and the loop stopped early."""
    import json

    line = "x" * 1023  # 1 KiB per line with its newline; 20 MiB in all
    code = f"import sys\nfor i in range(20480):\n    sys.stdout.write(f'{{i:08d}}{line[8:]}\\n')\n"
    procs.start(phome, "big", [PY, "-c", code])
    wait_status(phome, "big")
    pieces: list[dict] = []
    while True:
        out = subprocess.run(
            [PY, "-m", "ackdeck.core.cli", "output", "big", "--session", "s", "--json"],
            env=cli_env,
            capture_output=True,
            text=True,
            check=True,
        )
        pieces.append(json.loads(out.stdout))
        if not pieces[-1]["more"]:
            break
        assert len(pieces) < 10, "more never became false"
    assert len(pieces) == 2 and pieces[0]["more"] is True and pieces[0]["status"] == "exited"
    got = [x for p in pieces for x in p["lines"]]
    assert [int(x[:8]) for x in got] == list(range(20480))
    # and the core result says the same before any door is involved
    assert read_output(phome, "big", "other").more is True
