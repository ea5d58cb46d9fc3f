"""What the screens and the command palette need from the app that hosts them.

A Protocol, so that `tui/screens/*` and `tui/commands.py` never import `tui/app.py` (which
imports them): the dependency goes one way, app -> screens, and a screen can be tested with any
app that provides these few things.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable

    from .config import DashConfig
    from .screens.main import MainScreen
    from .state import RateTracker

# The header's icon on every screen: a glyph Debian's fonts have (Textual's default, ⭘, is in
# none of them and drew an empty box in Chromium; tests/test_tui_web.py checks every glyph).
HEADER_ICON = "◆"


@runtime_checkable
class Host(Protocol):
    config: DashConfig
    rooms: list[Path | str]
    labels: dict[str, str]  # room key -> its label, in the rooms' order
    rates: RateTracker
    clock: Callable[[], float]

    @property
    def main(self) -> MainScreen: ...

    def request_scan(self) -> None: ...

    def first_scan(self) -> None:
        """Scan now unless the first scan already ran or is running."""

    def open_output(self, name: str) -> None: ...

    def action_help(self) -> None: ...

    async def run_action(self, action: str) -> bool: ...


class _HasApp(Protocol):
    @property
    def app(self) -> object: ...


def host_of(node: _HasApp) -> Host:
    """The app hosting a screen, widget or command provider."""
    app = node.app
    assert isinstance(app, Host), f"{type(app).__name__} does not host ackdeck screens"
    return cast(Host, app)
