"""The owner's actions run one at a time, in the order their keys were pressed (tui/turns.py).

Every way an action can end (returned, raised, its worker cancelled while waiting or before it
ran) must end its turn, or every later action waits for good. The jobs block on events the
test releases, so the order is driven, not raced.
"""

from __future__ import annotations

import threading

from textual import work
from textual.app import App
from textual.worker import Worker, WorkerState

from ackdeck.tui.turns import Turn, Turns
from tests.helpers.wait import WAIT, eventually_async


class Harness(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.turns = Turns()
        self.gates: dict[int, threading.Event] = {}
        self.fail: set[int] = set()
        self.ran: list[int] = []
        self.workers_started: list[Worker[None]] = []

    def press(self, n: int) -> None:
        """What an action key does: take a turn now, act in a worker."""
        self.gates[n] = threading.Event()
        self.workers_started.append(self._act(self.turns.take(), n))

    @work(thread=True, group="owner-action", exit_on_error=False)
    def _act(self, turn: Turn, n: int) -> None:
        turn.run(self._job, n)

    def _job(self, n: int) -> None:
        self.ran.append(n)
        assert self.gates[n].wait(WAIT)
        if n in self.fail:
            raise RuntimeError(f"action {n} failed")


async def test_actions_run_one_at_a_time_in_key_order() -> None:
    app = Harness()
    async with app.run_test() as pilot:
        for n in range(3):
            app.press(n)
        await eventually_async(
            lambda: app.ran == [0] and app.turns.waiting == 2, what="0 runs, 1-2 wait", pilot=pilot
        )
        # Released out of order: 2 still waits for 1, which waits for 0.
        app.gates[2].set()
        app.gates[1].set()
        await eventually_async(
            lambda: app.workers_started[2].state == WorkerState.RUNNING, what="2 up", pilot=pilot
        )
        assert app.ran == [0]
        app.gates[0].set()
        await app.workers.wait_for_complete(app.workers_started)
        assert app.ran == [0, 1, 2]


async def test_an_action_that_raises_ends_its_turn() -> None:
    app = Harness()
    async with app.run_test() as pilot:
        app.fail.add(0)
        app.press(0)
        app.press(1)
        await eventually_async(lambda: app.turns.waiting == 1, what="1 waits", pilot=pilot)
        app.gates[0].set()
        app.gates[1].set()
        await eventually_async(
            lambda: all(w.is_finished for w in app.workers_started), what="done", pilot=pilot
        )
        assert app.workers_started[0].state == WorkerState.ERROR
        assert app.ran == [0, 1]


async def test_an_action_cancelled_while_waiting_is_skipped_and_ends_its_turn() -> None:
    # Only a closing app cancels the owner's actions; every later one is cancelled with it,
    # so a cancelled turn ends at once rather than after the one before it.
    app = Harness()
    async with app.run_test() as pilot:
        app.press(0)
        app.press(1)
        await eventually_async(lambda: app.turns.waiting == 1, what="1 waits", pilot=pilot)
        app.workers_started[1].cancel()
        await eventually_async(
            lambda: app.turns.waiting == 0, what="1 to stop waiting", pilot=pilot
        )
        app.press(2)
        app.gates[0].set()
        app.gates[2].set()
        await eventually_async(lambda: 2 in app.ran, what="2 ran", pilot=pilot)
        await eventually_async(
            lambda: all(w.is_finished for w in app.workers_started), what="done", pilot=pilot
        )
        assert sorted(app.ran) == [0, 2]


async def test_a_turn_that_never_ends_does_not_hold_a_closing_app() -> None:
    # A worker cancelled before its thread started never calls Turn.run, so its turn never
    # ends. The next action waits for it; when the app closes (its worker cancelled) it must
    # stop waiting, or the thread would keep the process from exiting.
    app = Harness()
    async with app.run_test() as pilot:
        app.turns.take()  # the turn of an action whose worker never ran
        app.press(1)
        await eventually_async(lambda: app.turns.waiting == 1, what="1 waits", pilot=pilot)
        app.workers_started[0].cancel()
        await eventually_async(
            lambda: app.turns.waiting == 0, what="1 to stop waiting", pilot=pilot
        )
        app.gates[1].set()
        assert app.ran == []
