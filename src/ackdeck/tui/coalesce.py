"""One job running, at most one queued: the dashboard's rescans, line syncs and output reads.

A request while a job runs only marks "run again"; the rerun starts when the running worker has
*finished*, whatever way it finished (success, a result the caller dropped as stale, an
exception, cancellation). "Running" is read from the Textual worker's own state, never from a
flag that a result handler has to remember to clear: the lines-panel freeze was such a flag,
left set when a stale result was dropped.

The owner forwards `on_worker_state_changed` events to `worker_changed`, so the queued rerun
starts after every message the finished worker posted has been handled (those were queued
first): the rerun sees the state those results produced, not the state from before them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.worker import Worker


class Coalescer:
    """Start `start()` (which returns the worker it started) once per burst of requests.

    `ready()` may hold requests back (e.g. until a file's first index exists); call `kick()`
    when it may have become true.
    """

    def __init__(
        self, start: Callable[[], Worker[Any]], *, ready: Callable[[], bool] | None = None
    ) -> None:
        self._start = start
        self._ready = ready or (lambda: True)
        self._worker: Worker[Any] | None = None
        self._queued = False

    @property
    def running(self) -> bool:
        # A worker cancelled before its task ran never changes state (it stays "running"),
        # so a cancelled worker counts as ended; a cancelled thread may still post a late
        # result, which owners already treat as possibly stale.
        w = self._worker
        return w is not None and not w.is_finished and not w.is_cancelled

    @property
    def busy(self) -> bool:
        """Running, or a request is waiting to start."""
        return self.running or self._queued

    def request(self) -> None:
        self._queued = True
        self._pump()

    def kick(self) -> None:
        """Start a waiting request if nothing runs and `ready()` now holds."""
        self._pump()

    def worker_changed(self, event: Worker.StateChanged) -> bool:
        """Forward every `Worker.StateChanged` here; True when it was this coalescer's worker."""
        if event.worker is not self._worker:
            return False
        if event.worker.is_finished:
            self._worker = None
            self._pump()
        return True

    def _pump(self) -> None:
        if not self._queued or self.running or not self._ready():
            return
        self._queued = False
        self._worker = self._start()
