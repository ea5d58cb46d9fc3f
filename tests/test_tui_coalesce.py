"""The "one running, one queued" helper behind rescans, line syncs and output reads.

Every way a worker can end (a result, a result the owner drops as stale, an exception, a
cancellation) must free the helper, or the panel it feeds freezes (the lines-panel freeze).
The workers block on events the test releases, so the order of events is driven, not raced.
"""

from __future__ import annotations

import threading

from textual import work
from textual.app import App
from textual.message import Message
from textual.worker import Worker, WorkerState

from ackdeck.tui.coalesce import Coalescer
from tests.helpers.wait import WAIT, eventually_async


class Done(Message):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n


class Harness(App[None]):
    """Starts one thread worker per job; job n blocks until gates[n] is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gates: list[threading.Event] = []
        self.fail: set[int] = set()
        self.started: list[int] = []
        self.results: list[int] = []
        self.workers_started: list[Worker[None]] = []
        self.ready = True
        self.jobs = Coalescer(self._start, ready=lambda: self.ready)

    def _start(self) -> Worker[None]:
        n = len(self.started)
        self.started.append(n)
        self.gates.append(threading.Event())
        worker = self._job(n)
        self.workers_started.append(worker)
        return worker

    @work(thread=True, group="job", exit_on_error=False)
    def _job(self, n: int) -> None:
        assert self.gates[n].wait(WAIT)
        if n in self.fail:
            raise RuntimeError(f"job {n} failed")
        self.post_message(Done(n))

    def on_done(self, message: Done) -> None:
        self.results.append(message.n)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.jobs.worker_changed(event)


async def test_requests_while_running_coalesce_into_one_rerun() -> None:
    app = Harness()
    async with app.run_test() as pilot:
        app.jobs.request()
        for _ in range(5):
            app.jobs.request()
        assert app.started == [0]
        assert app.jobs.running and app.jobs.busy
        app.gates[0].set()
        await eventually_async(lambda: len(app.started) == 2, pilot=pilot)
        # The rerun starts only after the first job's result was handled.
        assert app.results == [0]
        app.gates[1].set()
        await eventually_async(lambda: not app.jobs.busy, pilot=pilot)
        assert app.started == [0, 1] and app.results == [0, 1]


async def test_a_result_dropped_as_stale_still_frees_the_helper() -> None:
    # The owner ignores job 0's result (as a view drops a count for a replaced index); the
    # helper must not care whether the result was used.
    app = Harness()
    async with app.run_test() as pilot:
        app.on_done = lambda message: None  # type: ignore[method-assign]
        app.jobs.request()
        app.jobs.request()
        app.gates[0].set()
        await eventually_async(lambda: len(app.started) == 2, pilot=pilot)
        app.gates[1].set()
        await eventually_async(lambda: not app.jobs.busy, pilot=pilot)
        app.jobs.request()
        assert app.started == [0, 1, 2]
        app.gates[2].set()
        await eventually_async(lambda: not app.jobs.busy, pilot=pilot)


async def test_an_exception_in_the_worker_frees_the_helper_and_runs_the_queued_request() -> None:
    app = Harness()
    async with app.run_test() as pilot:
        app.fail.add(0)
        app.jobs.request()
        app.jobs.request()
        app.gates[0].set()
        await eventually_async(lambda: len(app.started) == 2, pilot=pilot)
        assert app.workers_started[0].state == WorkerState.ERROR
        app.gates[1].set()
        await eventually_async(lambda: not app.jobs.busy, pilot=pilot)
        assert app.results == [1]


async def test_a_cancelled_worker_frees_the_helper_and_runs_the_queued_request() -> None:
    app = Harness()
    async with app.run_test() as pilot:
        app.jobs.request()
        await eventually_async(
            lambda: app.workers_started[0].state == WorkerState.RUNNING, pilot=pilot
        )
        await pilot.pause()
        app.jobs.request()
        app.workers_started[0].cancel()
        await eventually_async(lambda: len(app.started) == 2, pilot=pilot)
        assert app.workers_started[0].state == WorkerState.CANCELLED
        app.gates[0].set()  # the cancelled thread still runs to its end; nothing waits on it
        app.gates[1].set()
        await eventually_async(lambda: not app.jobs.busy, pilot=pilot)
        assert 1 in app.results


async def test_a_worker_cancelled_before_it_ran_does_not_block_the_next_request() -> None:
    # Cancelled before its task started, a Textual worker never leaves RUNNING nor posts a
    # state change; the helper must not wait for it.
    app = Harness()
    async with app.run_test() as pilot:
        app.jobs.request()
        app.workers_started[0].cancel()
        assert not app.jobs.running
        app.jobs.request()
        assert app.started == [0, 1]
        app.gates[0].set()
        app.gates[1].set()
        await eventually_async(lambda: not app.jobs.busy, pilot=pilot)
        assert 1 in app.results


async def test_a_request_held_back_until_ready_starts_on_kick() -> None:
    app = Harness()
    async with app.run_test() as pilot:
        app.ready = False
        app.jobs.request()
        assert app.started == [] and app.jobs.busy and not app.jobs.running
        app.ready = True
        app.jobs.kick()
        assert app.started == [0]
        app.gates[0].set()
        await eventually_async(lambda: not app.jobs.busy, pilot=pilot)
        assert app.results == [0]
