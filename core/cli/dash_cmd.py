"""`ackdeck tui` and `ackdeck demo`: the dashboard.

Textual is imported inside the handlers only, so importing core (or running any other
subcommand) never loads it.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the live dashboard over rooms, processes and wakes")
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
        help="a room (notification file) to show; repeatable",
    )
    p.add_argument("--config", default=None, metavar="FILE", help="TOML config (rooms, session, …)")
    p.add_argument(
        "--session", default=None, help="session the owner reads and acks as (default: owner)"
    )
    p.set_defaults(handler=_tui)

    p = sub.add_parser(
        "demo",
        help="open the dashboard on a temporary home with simulated pollers, an agent and "
        "monitored processes",
    )
    p.add_argument("--session", default="owner", help="owner session name (default: owner)")
    p.set_defaults(handler=_demo)


def _tui(args: argparse.Namespace) -> int:
    from tui.app import make_app
    from tui.config import DashConfig, load_config

    from ..home import resolve_home

    config = load_config(args.config) if args.config else DashConfig()
    home = args.tui_home or (str(config.home) if config.home else None) or args.home
    config = config.with_overrides(
        home=resolve_home(home),
        rooms=[Path(r) for r in args.rooms],
        session=args.session,
    )
    make_app(config).run()
    return 0


def _demo(args: argparse.Namespace) -> int:
    from tui.demo import run_demo

    return run_demo(session=args.session)
