"""The dashboard's header: Textual's, with a clock that changes once a minute.

Textual's header clock shows seconds and repaints every second; on an idle dashboard that
repaint was most of the UI thread's work (0.7% of a core of 1.3%). An owner reads the time of
day from it, not a stopwatch (ages in the tables say how long ago things happened), so this
clock shows hours and minutes and wakes once a minute, at the minute.
"""

from __future__ import annotations

import time
from datetime import datetime

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Header


class MinuteClock(Widget):
    """The time of day as HH:MM, repainted when the minute changes."""

    DEFAULT_CSS = """
    MinuteClock {
        dock: right;
        width: 10;
        padding: 0 1;
        background: $foreground-darken-1 5%;
        color: $foreground;
        text-opacity: 85%;
        content-align: center middle;
    }
    """

    def on_mount(self) -> None:
        self._arm()

    def _arm(self) -> None:
        # A little after the minute starts, so the new minute is the one shown.
        self.set_timer(60.05 - time.time() % 60, self._next_minute, name="minute clock")

    def _next_minute(self) -> None:
        self.refresh()
        self._arm()

    def render(self) -> str:
        return datetime.now().strftime("%H:%M")


class DeckHeader(Header):
    """Textual's header (icon, title) with `MinuteClock` in the clock's place."""

    DEFAULT_CSS = """
    DeckHeader.-minute-clock HeaderClockSpace {
        display: none;
    }
    """

    def __init__(self, *, show_clock: bool, icon: str) -> None:
        super().__init__(show_clock=False, icon=icon, classes="-minute-clock" if show_clock else "")
        self._minute_clock = show_clock

    def compose(self) -> ComposeResult:
        yield from super().compose()
        if self._minute_clock:
            yield MinuteClock()
