"""The owner's actions run one after another, in the order their keys were pressed.

Each action is a thread worker; started side by side, `r` then `a` pressed quickly could ack
before the read had stored its receipt ("ack refused: no read") or ack an older read. A turn
is taken on the UI thread when the key is handled, so turns follow the key order; the worker
waits for the previous turn to end, acts, and ends its own turn however it ends (returned,
raised, or cancelled while waiting: the app closing skips actions that have not started, and
since it cancels every later action too, a cancelled turn ends at once).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from textual.worker import get_current_worker

POLL = 0.1  # how often a waiting worker checks whether it was cancelled (the app closing)


class Turn:
    def __init__(self, turns: Turns, previous: threading.Event) -> None:
        self._turns = turns
        self._previous = previous
        self.done = threading.Event()

    def run(self, job: Callable[..., None], *args: Any) -> None:
        """In the worker: wait for the previous turn, run `job(*args)`, end this turn.

        A worker cancelled before its thread ran never calls this, so waiting also checks for
        cancellation: a closing app must not wait forever on a turn that will never end."""
        try:
            with self._turns.lock:
                self._turns.waiting += 1
            try:
                while not self._previous.wait(POLL):
                    if get_current_worker().is_cancelled:
                        return
            finally:
                with self._turns.lock:
                    self._turns.waiting -= 1
            if not get_current_worker().is_cancelled:
                job(*args)
        finally:
            self.done.set()


class Turns:
    def __init__(self) -> None:
        self._last = threading.Event()
        self._last.set()
        self.lock = threading.Lock()
        self.waiting = 0  # workers waiting for an earlier action (tests drive the order with it)

    def take(self) -> Turn:
        """The next turn (on the UI thread, when the key is handled)."""
        turn = Turn(self, self._last)
        self._last = turn.done
        return turn
