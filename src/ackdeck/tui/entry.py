"""What `ackdeck tui`, `ackdeck demo` and `ackdeck web` run (the CLI imports this lazily)."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

from ackdeck.core.base.home import resolve_home
from ackdeck.core.service.refs import absolute_spec, room_spec

from .config import DashConfig, default_config_path, load_config, settings_path


def config_file(args: argparse.Namespace) -> Path | None:
    """The config the dashboard reads: --config FILE, else the default one if it exists."""
    return Path(args.config) if args.config else default_config_path(os.environ)


def dashboard_config(args: argparse.Namespace) -> DashConfig:
    path = config_file(args)
    config = load_config(path) if path is not None else DashConfig()
    home = args.tui_home or (str(config.home) if config.home else None) or args.home
    if getattr(args, "claude_teams", None) is False or config.claude_teams is None:
        # The dashboard lists Claude Code's teams unless the config or --no-claude-teams says not.
        config = replace(config, claude_teams=getattr(args, "claude_teams", None) is not False)
    return config.with_overrides(
        home=resolve_home(home),
        rooms=[room_spec(r) for r in args.rooms],
        room_dirs=[Path(d) for d in getattr(args, "room_dirs", [])],
        session=args.session,
        fleet=getattr(args, "fleet", None),
        host_id=getattr(args, "host_id", None),
    )


def run_tui(args: argparse.Namespace) -> int:
    from .app import make_app

    # The theme picked in the palette is remembered in the config that was read, else in
    # the default config's place.
    settings = config_file(args) or settings_path(os.environ)
    make_app(dashboard_config(args), settings=settings, freeze_gc=True).run()
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo as demo

    return demo(session=args.session)


def run_web(args: argparse.Namespace) -> int:
    from .web import serve

    # Bad options fail here, once, not in every browser tab.
    config = dashboard_config(args)
    # Each browser tab runs `ackdeck tui` with the same options, paths made absolute.
    tui_args: list[str] = []
    home = args.tui_home or args.home
    if home:
        tui_args += ["--home", os.fspath(Path(home).expanduser().absolute())]
    if args.config:
        tui_args += ["--config", os.fspath(Path(args.config).absolute())]
    for room in args.rooms:
        tui_args += ["--room", absolute_spec(room)]
    for d in args.room_dirs:
        tui_args += ["--rooms", os.fspath(Path(d).expanduser().absolute())]
    if args.session:
        tui_args += ["--session", args.session]
    if getattr(args, "claude_teams", None) is False:
        tui_args.append("--no-claude-teams")
    # The fleet's flags reach each tab through its environment, where they win over the
    # config as the flags do here: a URL may carry a password, which a command line shows
    # to every user of the machine (`ps`).
    from ackdeck.core.service.fleet.settings import FLEET_ENV, HOST_ENV

    for env_name, value in ((FLEET_ENV, args.fleet), (HOST_ENV, args.host_id)):
        if value:
            os.environ[env_name] = value
    specs = [str(r) for r in config.rooms]

    def metrics() -> bytes:
        from ackdeck.core.service.metrics import exposition

        return exposition(specs, config.home)

    return serve(args.host, args.port, tui_args, metrics)
