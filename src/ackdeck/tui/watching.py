"""File events for the dashboard's watcher threads, from watchfiles' Rust backend.

`watchfiles.watch()` wraps the same `RustNotify`, but it cannot say when its watches are in
place (only its first yield proves it, up to `rust_timeout` later), and a short timeout wakes
Python several times a second for nothing. Here the watches exist once `RustNotify` is built,
so `watch` calls `ready()` right then; and Python wakes only for events or every
`IDLE_WAKE_MS` (the stop event is checked by the Rust loop every `step` ms, so stopping stays
prompt).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from watchfiles._rust_notify import RustNotify  # watchfiles' documented Rust backend

IDLE_WAKE_MS = 10_000


def watch(
    dirs: tuple[str, ...],
    *,
    recursive: bool,
    stop: threading.Event,
    debounce_ms: int,
    step_ms: int,
    ready: Callable[[], None] = lambda: None,
) -> Iterator[set[tuple[int, str]]]:
    """Yield sets of (change, path) until `stop` is set."""
    # debug, force_polling (None: the platform's default, inotify here), poll delay (unused),
    # recursive, ignore_permission_denied
    with RustNotify(list(dirs), False, False, 300, recursive, True) as notify:
        ready()
        while not stop.is_set():
            raw = notify.watch(debounce_ms, step_ms, IDLE_WAKE_MS, stop)
            if raw == "timeout":
                continue
            if isinstance(raw, str):  # "stop" or "signal"
                return
            yield raw
