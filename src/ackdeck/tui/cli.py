"""`ackdeck tui`, `ackdeck demo` and `ackdeck web`: the dashboard's commands.

core's CLI finds them through the entry points `ackdeck.commands` in pyproject.toml (the name
is the command, the value the function that registers it), so core never imports tui. Textual
is imported inside the handlers only: registering a command (for `ackdeck --help`) stays cheap.
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
    p.add_argument(
        "--rooms",
        dest="room_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory whose files are rooms (new files appear live); repeatable",
    )
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="TOML config (rooms, session, …); default: $XDG_CONFIG_HOME/ackdeck/config.toml, "
        "else ~/.config/ackdeck/config.toml, if it exists",
    )
    p.add_argument(
        "--session", default=None, help="session the owner reads and acks as (default: owner)"
    )
    p.add_argument(
        "--no-claude-teams",
        dest="claude_teams",
        action="store_false",
        default=None,
        help="do not list Claude Code teams' mailboxes (found under $CLAUDE_CONFIG_DIR/teams or "
        "~/.claude/teams; config: claude_teams = false)",
    )
    from ackdeck.core.cli._fleet import add_fleet_options

    add_fleet_options(p, filter_hosts=False)  # --fleet URL, --host-id ID


def register_tui(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="open the live dashboard over rooms, processes and wakes")
    _dashboard_options(p)
    p.set_defaults(handler=_entry("run_tui"))


def register_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="open the dashboard on a temporary home with simulated pollers, an agent and "
        "monitored processes",
    )
    p.add_argument("--session", default="owner", help="owner session name (default: owner)")
    p.set_defaults(handler=_entry("run_demo"))


def register_web(sub: argparse._SubParsersAction) -> None:
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
    """The handler runs tui/entry.py's `name`, imported only when a dashboard command runs."""

    def handler(args: argparse.Namespace) -> int:
        from ackdeck.tui import entry

        run: Callable[[argparse.Namespace], int] = getattr(entry, name)
        return run(args)

    return handler
