"""The monitoring engine of one run: tail output.log, scan, batch, gate, merge into wakes.

Used by the live supervisor (core/monitors/supervisor.py) and, after a supervisor died, by the
reconciliation that turns the crash into a `monitor-lost` wake (core/monitors/procs.py): it resumes
from the persisted `resume_offset`, so matches the dead supervisor had not flushed are still
reported."""

from __future__ import annotations

import os
import time

from ackdeck.core.base.diskfull import Backoff, is_no_space
from ackdeck.core.monitors import gate, shown, wakes
from ackdeck.core.monitors.monitors import Batch, LineBuffer, LineMatcher, MatchedLine
from ackdeck.core.monitors.runs import (
    MonitorCounters,
    MonitorsState,
    RunMeta,
    load_monitors_state,
    output_path,
    store_monitors_state,
)

# pathlib and collections.abc for type checkers only: a run's supervisor works on str paths,
# and collections.abc imports collections.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    Clock = Callable[[], float]

CHUNK = 4 << 20  # read size while output streams: large reads scan fastest
# Read size while output is quiet, which is most of a supervisor's life. `bytearray(n)` writes
# every byte, so a CHUNK-sized buffer would be 4 MiB of every supervisor's resident memory: the
# buffer grows to CHUNK when a read fills it and shrinks back when a look finds nothing new.
QUIET_CHUNK = 64 << 10
# Persist progress at least this often while output streams without matches, so a rescan after
# a crash does not start from the beginning of a huge log.
PERSIST_EVERY = 1.0


class Tail:
    def __init__(
        self,
        home: Path | str,
        rdir: Path | str,
        meta: RunMeta,
        *,
        clock: Clock = time.time,
        patient: bool = False,
    ):
        """`patient` (the supervisor): a full disk never fails a write, it is waited out with
        the unwritten matches kept in memory; otherwise (a reconcile in some command) it raises."""
        # Kept as strings whatever was given: every name is then built without pathlib.
        self.home, self.rdir = os.fspath(home), os.fspath(rdir)
        self.meta, self.clock = meta, clock
        self.patient = patient
        state = load_monitors_state(self.rdir) or MonitorsState()
        n = len(meta.monitors)
        counters = [
            state.monitors[i] if i < len(state.monitors) else MonitorCounters() for i in range(n)
        ]
        self.counters = counters
        self.buf = LineBuffer.at(state.resume_offset)
        self.matchers = [LineMatcher(m.pattern, m.exclude) for m in meta.monitors]
        self.buf.on_window = self._see_window
        self.batches = [
            Batch(m.cooldown_ms / 1000.0, m.max_events, events=c.events, matches=c.matches)
            for m, c in zip(meta.monitors, counters, strict=True)
        ]
        # Each monitor ignores lines it had already flushed before a restart (another monitor's
        # pending line may have pulled the shared resume point further back).
        self.skip_before = [c.resume_offset for c in counters]
        self.unmerged = [0] * n
        self.held: list[list[MatchedLine]] = [[] for _ in range(n)]  # waiting for disk space
        self.merges = 0  # wake merges so far: a teammate's mailbox is written after each
        self.space = Backoff()
        self.done = state.done
        self._fd: int | None = None
        self._chunk: bytearray | None = None
        self._view: memoryview | None = None
        self._persisted_at = 0.0
        self._persisted_seen = (-1, -1)

    # ----- reading ---------------------------------------------------------------------------
    def _open(self) -> int | None:
        if self._fd is None:
            try:
                self._fd = os.open(output_path(self.rdir), os.O_RDONLY)
            except FileNotFoundError:
                return None
        return self._fd

    def close(self) -> None:
        if self._view is not None:
            self._view.release()
            self._view = self._chunk = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def active(self) -> bool:
        return not self.done and any(not b.stopped for b in self.batches)

    def pump(self, max_bytes: int = 64 << 20) -> bool:
        """Scan newly written output (up to max_bytes). True if anything was read."""
        if not self.active():
            return False
        fd = self._open()
        if fd is None:
            return False
        got = 0
        buf, view = self._buffer(QUIET_CHUNK)
        while got < max_bytes:
            # Read into one reused buffer: no per-chunk allocation, and the trailing NUL lets
            # the scanner use strcspn on it directly.
            n = os.preadv(fd, [view], self.buf.offset)
            if n <= 0:
                break
            got += n
            for region in self.buf.feed(buf, n):
                self._add([m.scan(region) for m in self.matchers])
            if n == len(view) < CHUNK:
                buf, view = self._buffer(CHUNK)  # output streams: read it in large chunks
        if got == 0:
            self._buffer(QUIET_CHUNK, shrink=True)
        return got > 0

    def _see_window(self, line_start: int, k: int, window: bytes) -> None:
        # A window of a long line still being written (core.monitors.monitors): matchers remember
        # hits.
        for m in self.matchers:
            m.see_window(line_start, k, window)

    def _buffer(self, size: int, *, shrink: bool = False) -> tuple[bytearray, memoryview]:
        """The read buffer: at least `size` bytes (exactly `size` with `shrink`)."""
        have = -1 if self._chunk is None else len(self._chunk) - 1
        if have < size or (shrink and have != size):
            if self._view is not None:
                self._view.release()
            self._chunk = bytearray(size + 1)  # the last byte stays NUL forever
            self._view = memoryview(self._chunk)[:size]
        assert self._chunk is not None and self._view is not None
        return self._chunk, self._view

    def _add(self, per_monitor: list[list[MatchedLine]]) -> None:
        now = self.clock()
        for i, lines in enumerate(per_monitor):
            if lines and self.skip_before[i]:
                lines = [x for x in lines if x.start >= self.skip_before[i]]
            if lines:
                self.batches[i].add(lines, now)
                self.counters[i] = self.counters[i].replace(seen=self.batches[i].matches)

    # ----- flushing ----------------------------------------------------------------------------
    def next_due(self) -> float | None:
        dues = [d for b in self.batches if (d := b.due_at()) is not None]
        return min(dues) if dues else None

    def flush_due(self, *, force: bool = False, status: str = "running") -> None:
        now = self.clock()
        flushed = False
        for i, b in enumerate(self.batches):
            if b.pending and (force or b.due(now)):
                self._flush(i, b.take(), status)
                flushed = True
        # Progress (offset, matches seen) is saved at most once a second, and only if it moved.
        progress = (self.buf.offset, sum(b.matches for b in self.batches))
        stale = progress != self._persisted_seen and now - self._persisted_at >= PERSIST_EVERY
        if self.matchers and (flushed or stale) and self.space.due():
            try:
                self.persist()
            except OSError as exc:
                if not is_no_space(exc) or not self.patient:
                    raise
                self.space.failed()  # progress is saved again once there is space

    def _flush(self, i: int, lines: list[MatchedLine], status: str) -> None:
        # Fast path of the gate: drop lines the owner was already shown in this run. The
        # authoritative check runs again at delivery (wakes.drain).
        seen = shown.shown_intervals(self.rdir, self.meta.session)
        split = gate.split_lines(
            [(self.meta.run_id, x.start, x.end) for x in lines], {self.meta.run_id: seen}
        )
        keep = [lines[j] for j in split.deliver]
        c = self.counters[i]
        self.counters[i] = c.replace(
            matches=c.matches + len(lines),
            events=self.batches[i].events,
            suppressed=c.suppressed + len(split.suppress),
        )
        self.unmerged[i] += len(lines)
        self._merge_lines(i, keep, status)

    def _merge_lines(self, i: int, keep: list[MatchedLine], status: str) -> None:
        """Merge monitor i's lines (after any held back by a full disk) into the owner's wake
        record. Out of space, they are held in memory and merged by a later retry."""
        keep = self.held[i] + keep
        if not keep:
            return
        spec = self.meta.monitors[i]
        try:
            wakes.merge(
                self.home,
                self.meta.session,
                self.meta.name,
                run_id=self.meta.run_id,
                kind="match",
                lines=keep,
                filter=spec.pattern,
                exclude=spec.exclude,
                matches=self.unmerged[i],
                status=status,
                to_host=self.meta.wake_host,
                clock=self.clock,
            )
        except OSError as exc:
            if not is_no_space(exc) or not self.patient:
                raise
            self.held[i] = keep
            self.space.failed()
            return
        self.held[i] = []
        self.unmerged[i] = 0
        self.merges += 1
        self.space.succeeded()

    def holding(self) -> bool:
        """Matched lines wait in memory for space to write them."""
        return any(self.held)

    def retry_held(self, status: str = "running") -> None:
        """Try the held lines again once their backoff is due."""
        if self.holding() and self.space.due():
            for i in range(len(self.held)):
                self._merge_lines(i, [], status)

    def finish(
        self, *, kind: str, status: str, exit_code: int | None, final_fragment: bool = True
    ) -> None:
        """The process ended (or its supervisor was lost): scan the rest, flush everything at
        once, and leave an `exited` / `monitor-lost` notice for the owner."""
        if self.active():
            while self.pump():
                pass
            if final_fragment:
                frag = self.buf.final()
                self._add([m.scan_final(frag) for m in self.matchers])
            for i, b in enumerate(self.batches):
                if b.pending:
                    self._flush(i, b.take(), status)
        # The end is written whatever it takes: the held lines, the exit notice and the final
        # progress exist only in this process, so a full disk is waited out, never given up.
        while self.holding():
            time.sleep(self.space.due_in())
            self.retry_held(status)
        write = self.space.until_written if self.patient else _at_once
        if self.meta.monitors:
            spec = self.meta.monitors[0]
            write(
                lambda: wakes.merge(
                    self.home,
                    self.meta.session,
                    self.meta.name,
                    run_id=self.meta.run_id,
                    kind=kind,
                    filter=spec.pattern,
                    exclude=spec.exclude,
                    matches=sum(self.unmerged),
                    status=status,
                    exit_code=exit_code,
                    to_host=self.meta.wake_host,
                    clock=self.clock,
                )
            )
            self.unmerged = [0] * len(self.unmerged)
        self.done = True
        write(self.persist)
        self.close()

    def persist(self) -> None:
        resume = self.buf.frag_start
        for i, b in enumerate(self.batches):
            start = b.pending[0].start if b.pending else self.buf.frag_start
            if self.held[i]:  # not in the wake record yet: a rescan must find them again
                start = min(start, self.held[i][0].start)
            self.counters[i] = self.counters[i].replace(resume_offset=start)
            resume = min(resume, start)
        store_monitors_state(
            self.rdir,
            MonitorsState(
                resume_offset=resume,
                scanned_to=self.buf.offset,
                monitors=self.counters,
                done=self.done,
            ),
        )
        self._persisted_at = self.clock()
        self._persisted_seen = (self.buf.offset, sum(b.matches for b in self.batches))


def _at_once(write: Callable[[], object]) -> object:
    return write()


def total_matches(rdir: Path) -> int:
    state = load_monitors_state(rdir)
    return 0 if state is None else sum(c.seen for c in state.monitors)
