"""`ackdeck tui`, `ackdeck demo` and `ackdeck web`: the dashboard.

Textual is imported inside the handlers only, so importing core (or running any other
subcommand) never loads it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def _dashboard_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--home",
        dest="tui_home",
        default=None,
        metavar="DIR",
        help="state directory for processes and wakes (default: config, $ACKDECK_HOME, ~/.ackdeck)",
    )
    p.add_argument(
        "--room",
        dest="rooms",
        action="append",
        default=[],
        metavar="PATH",
        help="a room to show (a notification file or a redis:// URL); repeatable",
    )
    p.add_argument("--config", default=None, metavar="FILE", help="TOML config (rooms, session, …)")
    p.add_argument(
        "--session", default=None, help="session the owner reads and acks as (default: owner)"
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the live dashboard over rooms, processes and wakes")
    _dashboard_options(p)
    p.set_defaults(handler=_entry("run_tui"))

    p = sub.add_parser(
        "demo",
        help="open the dashboard on a temporary home with simulated pollers, an agent and "
        "monitored processes",
    )
    p.add_argument("--session", default="owner", help="owner session name (default: owner)")
    p.set_defaults(handler=_entry("run_demo"))

    p = sub.add_parser(
        "web",
        help="serve the dashboard to a browser (textual-serve); loopback only unless --host",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback)"
    )
    p.add_argument("--port", type=int, default=8080, help="port (default: 8080)")
    _dashboard_options(p)
    p.set_defaults(handler=_entry("run_web"))


def _entry(name: str) -> Callable[[argparse.Namespace], int]:
    """The one place the CLI reaches into tui/, lazily: only a dashboard command loads it."""

    def handler(args: argparse.Namespace) -> int:
        import importlib

        run: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module("tui.entry"), name
        )
        return run(args)

    return handler
