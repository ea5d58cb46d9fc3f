"""What `ackdeck tui`, `ackdeck demo` and `ackdeck web` run (the CLI imports this lazily)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ackdeck.core.base.home import resolve_home
from ackdeck.core.inbox.room_url import is_url

from .config import DashConfig, load_config


def dashboard_config(args: argparse.Namespace) -> DashConfig:
    config = load_config(args.config) if args.config else DashConfig()
    home = args.tui_home or (str(config.home) if config.home else None) or args.home
    return config.with_overrides(
        home=resolve_home(home),
        rooms=[r if is_url(r) else Path(r) for r in args.rooms],
        session=args.session,
    )


def run_tui(args: argparse.Namespace) -> int:
    from .app import make_app

    make_app(dashboard_config(args)).run()
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo as demo

    return demo(session=args.session)


def run_web(args: argparse.Namespace) -> int:
    from .web import serve

    dashboard_config(args)  # bad options fail here, once, not in every browser tab
    # Each browser tab runs `ackdeck tui` with the same options, paths made absolute.
    tui_args: list[str] = []
    home = args.tui_home or args.home
    if home:
        tui_args += ["--home", os.fspath(Path(home).expanduser().absolute())]
    if args.config:
        tui_args += ["--config", os.fspath(Path(args.config).absolute())]
    for room in args.rooms:
        spec = room if is_url(room) else os.fspath(Path(room).expanduser().absolute())
        tui_args += ["--room", spec]
    if args.session:
        tui_args += ["--session", args.session]
    return serve(args.host, args.port, tui_args)
