"""Hypothesis state machine over the real core: output writes, monitor scans, reads by two
sessions (filtered or not), exits, restarts under the same name, and drains.

It drives the same code the supervisor runs (core.monitors.tail.Tail over a real output.log, the
real wake store, read_output and drain on real files) without spawning processes: the test holds
each run's supervisor lock itself, so the run counts as supervised.

Checked: no delivered line had been shown to its owner in that run at delivery time; a line is
never delivered twice; at the end every matched line that was never shown was delivered once.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ackdeck.core.monitors import wakes
from ackdeck.core.monitors.monitors import clean
from ackdeck.core.monitors.output import read_output
from ackdeck.core.monitors.runs import (
    MonitorModel,
    RunMeta,
    load_meta,
    new_run_id,
    output_path,
    run_dir,
    store_meta,
    supervisor_lock_path,
)
from ackdeck.core.monitors.tail import Tail

PATTERN = "ERR"
RX = re.compile(PATTERN.encode())
OWNER, OTHER = "agent", "owner"
TOKENS = ["ERR", "ok", " ", "\n", "\n", "\x1b[1m", "E", "R", "é"]


class Run:
    def __init__(self, home: Path, now: float, cooldown_ms: int, clock) -> None:
        self.run_id = new_run_id(now) + f"-{os.urandom(2).hex()}"
        self.rdir = run_dir(home, "job", self.run_id)
        self.rdir.mkdir(parents=True)
        output_path(self.rdir).touch()
        meta = RunMeta(
            name="job",
            run_id=self.run_id,
            argv=["simulated"],
            cwd=str(home),
            session=OWNER,
            monitors=[MonitorModel(pattern=PATTERN, cooldown_ms=cooldown_ms)],
            supervisor_pid=os.getpid(),
            created_at=now,
            started_at=now,
        )
        store_meta(self.rdir, meta)
        # Hold the supervisor lock like a live supervisor would.
        self.lock_fd = os.open(supervisor_lock_path(self.rdir), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        self.tail = Tail(home, self.rdir, meta, clock=clock)
        self.ended = False

    def matched_lines(self) -> list[tuple[int, int]]:
        data = output_path(self.rdir).read_bytes()
        out, pos = [], 0
        for raw in data.split(b"\n"):
            end = min(pos + len(raw) + 1, len(data))
            if end > pos and RX.search(clean(raw)):
                out.append((pos, end))
            pos = end
        return out


class GateMachine(RuleBasedStateMachine):
    def __init__(self, base: Path) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="example-", dir=base))
        self.home = self.tmp / "home"
        self.home.mkdir()
        self.now = 1_000_000.0
        self.runs: list[Run] = []
        self.shown: dict[tuple[str, str], set[tuple[int, int]]] = {}
        self.delivered: Counter[tuple[str, int, int]] = Counter()
        self._start(0)

    def clock(self) -> float:
        return self.now

    def _start(self, cooldown_ms: int) -> None:
        self.runs.append(Run(self.home, self.now, cooldown_ms, self.clock))

    @property
    def current(self) -> Run:
        return self.runs[-1]

    @rule(parts=st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12))
    def write(self, parts: list[str]) -> None:
        run = self.current
        if run.ended:
            return
        with open(output_path(run.rdir), "ab") as f:
            f.write("".join(parts).encode())

    @rule()
    def scan(self) -> None:
        for run in self.runs:
            if not run.ended:
                run.tail.pump()
                run.tail.flush_due()

    @rule(ms=st.sampled_from([10, 500, 1500]))
    def advance_clock(self, ms: int) -> None:
        self.now += ms / 1000

    @rule(
        session=st.sampled_from([OWNER, OWNER, OTHER]),
        flt=st.sampled_from([None, None, ("ERR", False), ("ok", False), ("ERR", True)]),
        older=st.booleans(),
    )
    def read(self, session: str, flt, older: bool) -> None:
        run_id = self.runs[0].run_id if older else None
        pattern, exclude = flt if flt else (None, False)
        res = read_output(
            self.home,
            "job",
            session,
            filter=pattern,
            exclude=exclude,
            run_id=run_id,
            clock=self.clock,
        )
        self.shown.setdefault((session, res.run_id), set()).update(res.spans)

    @rule()
    def exit(self) -> None:
        run = self.current
        if run.ended:
            return
        self._finish(run)

    def _finish(self, run: Run) -> None:
        # The supervisor's order: scan the rest and flush (wakes), then the final status.
        run.tail.finish(kind="exited", status="exited", exit_code=0)
        meta = load_meta(run.rdir)
        assert meta is not None
        store_meta(
            run.rdir,
            meta.replace(status="exited", exit_code=0, ended_at=self.now),
        )
        run.ended = True
        os.close(run.lock_fd)

    @precondition(lambda self: len(self.runs) < 4)
    @rule(cooldown_ms=st.sampled_from([0, 1000]), finish_old=st.booleans())
    def restart(self, cooldown_ms: int, finish_old: bool) -> None:
        if finish_old and not self.current.ended:
            self._finish(self.current)
        self.now += 0.001
        self._start(cooldown_ms)

    @rule()
    def drain(self) -> None:
        self._drain()

    def _drain(self) -> None:
        res = wakes.drain(self.home, OWNER, settle_timeout=0.5, clock=self.clock)
        assert res.skipped == []
        for d in res.delivered:
            for x in d.lines:
                key = (x.start, x.end)
                assert key not in self.shown.get((OWNER, x.run_id), set()), (
                    f"delivered a line the owner was already shown: {x}"
                )
                self.delivered[(x.run_id, x.start, x.end)] += 1

    @invariant()
    def never_delivered_twice(self) -> None:
        assert all(n == 1 for n in self.delivered.values())

    def teardown(self) -> None:
        try:
            for run in self.runs:
                if not run.ended:
                    self._finish(run)
            self._drain()
            for run in self.runs:
                seen = self.shown.get((OWNER, run.run_id), set())
                for start, end in run.matched_lines():
                    n = self.delivered[(run.run_id, start, end)]
                    assert n == 1 or (start, end) in seen, (
                        f"matched line {run.run_id} [{start}, {end}) was neither shown nor "
                        f"delivered"
                    )
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


def test_gate_state_machine(tmp_path: Path) -> None:
    run_state_machine_as_test(
        lambda: GateMachine(tmp_path),
        settings=settings(max_examples=40, stateful_step_count=30, deadline=None, database=None),
    )


def test_machine_smoke_is_not_vacuous(tmp_path: Path) -> None:
    """The machine's checks would catch a drain that ignores what was shown."""
    m = GateMachine(tmp_path)
    try:
        m.write(["ERR", "\n"])
        m.scan()
        m.read(OWNER, None, False)
        m.drain()
        assert m.delivered == Counter()  # shown inline: superseded, not delivered
        m.write(["ERR", " ", "ok", "\n"])
        m.scan()
        m.drain()
        assert sum(m.delivered.values()) == 1
        t0 = time.monotonic()
        m.exit()
        assert time.monotonic() - t0 < 30
    finally:
        m.teardown()
