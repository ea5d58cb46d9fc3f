"""Deterministic settings and helpers shared by the tests, the screenshots and the bench.

`quiet_config()` switches off every source of nondeterminism: the header clock, watchers, the
periodic tick and animations. Events are then fed explicitly (`FilesChanged`) and `settle()`
waits until every worker and follow-up message has been processed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from textual import events

from .config import DashConfig
from .messages import FilesChanged

FIXED_NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def fixed_clock() -> float:
    return FIXED_NOW


def quiet_config(
    rooms: list[Path] | None = None, home: Path | None = None, **extra: Any
) -> DashConfig:
    values: dict[str, Any] = {
        "rooms": rooms or [],
        "home": home,
        "watch": False,
        "tick_seconds": 0,
        "show_clock": False,
        "animations": False,
        "scan_process": False,
    }
    values.update(extra)
    return DashConfig(**values)


async def settle(pilot: Any, timeout: float = 60.0) -> None:
    """Wait until the app has no scan, index or action in flight and the queue is drained.

    The bound is generous: CI shares its two cores, and only a real hang should reach it."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    quiet_rounds = 0
    while time.monotonic() < deadline:
        # The watcher never completes while the app runs; wait for everything else.
        # (An empty list would make wait_for_complete wait for all workers.)
        others = [w for w in app.workers if w.group != "watch" and w.is_running]
        if others:
            await app.workers.wait_for_complete(others)
        await pilot.pause()
        busy = app.busy or any(w.is_running for w in app.workers if w.group not in ("watch",))
        quiet_rounds = 0 if busy else quiet_rounds + 1
        if quiet_rounds >= 2:
            return
        await asyncio.sleep(0.01)
    raise TimeoutError("the dashboard did not settle")


async def feed_change(pilot: Any) -> None:
    """What the watcher would post after a file change, then wait for its effects."""
    pilot.app.post_message(FilesChanged())
    await settle(pilot)


def type_at_once(app: Any, *keys: str) -> None:
    """Keys arriving in one burst, as from a fast typist, a paste or a browser tab: each is
    handed to the driver without waiting for the app in between (`pilot.press` waits after
    every key, so the key after `p` never arrives before the prompt is up)."""
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        app._driver.send_message(event)


def notifications(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


def screen_text(app: Any) -> str:
    """The current screen as plain text (what a user would read)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())
