"""`ackdeck fleet publish | hosts`: this host's rows on the fleet's Redis, and who is on it."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from ackdeck.core.cli._fleet import add_fleet_options, fleet_of
from ackdeck.core.cli._output import emit_json, say

if TYPE_CHECKING:
    from ackdeck.core.service.fleet.settings import FleetSettings


def register(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser(
        "fleet",
        help="publish this host's agents, runs and wakes to the fleet's Redis; list its hosts",
    )
    fsub = f.add_subparsers(dest="fleet_command", metavar="SUBCOMMAND")
    p = fsub.add_parser(
        "publish",
        help="publish this host's snapshot (once, or every --every seconds until stopped)",
        description="Publishes this host's agents, runs (each name's newest and every live "
        "one) and wake records under its host id, stamped by the server, expiring: a host "
        "that stops publishing shows as gone after the TTL (ACKDECK_FLEET_TTL, default 30 s). "
        "Each publish also forwards wakes for other hosts' sessions and imports the ones "
        "forwarded to this host's. With --every, an unreachable fleet is one line, and it "
        "publishes again as soon as the fleet answers.",
    )
    add_fleet_options(p, filter_hosts=False)
    p.add_argument(
        "--every",
        type=float,
        default=None,
        metavar="SECS",
        help="publish every SECS seconds until stopped (default: once; a third of the TTL "
        "keeps a host live through one lost publish)",
    )
    p.set_defaults(handler=_publish)
    p = fsub.add_parser("hosts", help="the fleet's hosts: live or gone, and their row counts")
    add_fleet_options(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_hosts)


def _settings(args: argparse.Namespace) -> FleetSettings:
    from ackdeck.core.errors import InvalidInput

    settings = fleet_of(args)
    if settings is None:
        raise InvalidInput("no fleet: give --fleet URL, set ACKDECK_FLEET or fleet in the config")
    return settings


def _publish(args: argparse.Namespace) -> int:
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.errors import InvalidInput
    from ackdeck.core.service.fleet.hosts import FleetLink, Publisher, exchange_wakes, publish_home

    settings = _settings(args)
    if args.every is not None and not 0.05 <= args.every <= 3600:
        raise InvalidInput("--every must be from 0.05 to 3600 seconds")
    home = resolve_home(args.home)
    link = FleetLink(settings)
    try:
        if args.every is None:
            moved = exchange_wakes(link, home)
            rows = publish_home(link, home)
            say(
                f"published host {settings.host} to fleet {settings.url}: "
                f"{len(rows['agents'])} agents, {len(rows['runs'])} runs, "
                f"{len(rows['wakes'])} wake records"
            )
            if moved.forwarded or moved.imported:
                say(
                    f"wakes: {moved.forwarded} forwarded to other hosts, {moved.imported} "
                    "imported for this host's sessions"
                )
            if link.shared:
                say(f"ackdeck: warning: {link.shared_id_note()}", file=sys.stderr)
            for line in moved.held:
                say(f"ackdeck: warning: {line}", file=sys.stderr)
            if moved.unreadable:
                say(
                    f"ackdeck: warning: {moved.unreadable} incoming wakes this version cannot "
                    "read were deleted",
                    file=sys.stderr,
                )
            return 0

        def say_it(line: str) -> None:
            say(f"ackdeck: {line}", file=sys.stderr, flush=True)

        Publisher(link, home, every=args.every, say=say_it).run(_sleep)
        return 0
    finally:
        link.close()


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False  # until stopped by a signal


def _hosts(args: argparse.Namespace) -> int:
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.base.text import age_text
    from ackdeck.core.cli._fleet import fleet_rows

    settings = _settings(args)
    listed = fleet_rows(args, settings, resolve_home(args.home), "agents", [])
    if args.json:
        emit_json(listed.fleet.to_json())
        return 0
    say(f"{'HOST':<24} {'STATE':<6} {'PUBLISHED':>9} {'AGENTS':>6} {'RUNS':>5} {'WAKES':>5}")
    for h in listed.fleet.hosts:
        age = "now" if h.this else ("-" if h.age is None else age_text(h.age) + " ago")
        state = "live" if h.live else "gone"
        say(f"{h.host:<24} {state:<6} {age:>9} {h.agents:>6} {h.runs:>5} {h.wakes:>5}")
    return 0
