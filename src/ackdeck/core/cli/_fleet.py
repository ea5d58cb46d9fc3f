"""The fleet's options and the lines every listing says of it (`agents`, `ps`, `wakes list`).

Off the hot path: `ps` and `wakes list` import it when their parser is built (never `wakes
drain`), and nothing here imports redis until a fleet is set.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ackdeck.core.cli._output import say

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from ackdeck.core.service.fleet.hosts import FleetListing
    from ackdeck.core.service.fleet.settings import FleetSettings


def add_fleet_options(p: argparse.ArgumentParser, *, filter_hosts: bool = True) -> None:
    p.add_argument(
        "--fleet",
        metavar="URL",
        default=None,
        help="the fleet's redis://HOST[:PORT][/DB]/NAME: every host's rows (env ACKDECK_FLEET, "
        "or fleet in the config file)",
    )
    p.add_argument(
        "--host-id",
        default=None,
        metavar="ID",
        help="this host's id in the fleet (env ACKDECK_HOST_ID, config host_id; default the "
        "host name)",
    )
    if filter_hosts:
        p.add_argument(
            "--host",
            action="append",
            default=None,
            metavar="ID",
            help="only these hosts' rows (repeatable; needs a fleet)",
        )


def fleet_of(args: argparse.Namespace) -> FleetSettings | None:
    """The fleet the command works with (None: none set), its --host names checked."""
    from ackdeck.core.errors import InvalidInput
    from ackdeck.core.service.fleet.settings import host_id, resolve_fleet

    settings = resolve_fleet(args.fleet, args.host_id)
    hosts = getattr(args, "host", None)
    if hosts:
        for h in hosts:
            host_id(h, "--host")
        if settings is None:
            raise InvalidInput(
                "--host needs a fleet: give --fleet URL, set ACKDECK_FLEET or fleet in the config"
            )
    return settings


def wake_owner_of(args: argparse.Namespace, session: str) -> tuple[str, str | None]:
    """`ackdeck run --session`: the session as the run keeps it, and its host when it is on
    another host of the fleet (a note, such as the fleet unreachable, said on stderr)."""
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.base.names import check_name
    from ackdeck.core.service.fleet.hosts import wake_owner
    from ackdeck.core.service.fleet.settings import this_host

    settings = fleet_of(args)
    this = settings.host if settings is not None else this_host(args.host_id)
    owner = wake_owner(resolve_home(args.home), session, settings, this)
    if owner.note:
        say(f"ackdeck: {owner.note}", file=sys.stderr)
    if owner.host is not None:
        # The record there is NAME@THIS-HOST: refused now if that is no name, rather than
        # an import there that cannot take it.
        check_name(f"{args.name}@{this}", "process")
    return owner.session, owner.host


def fleet_rows(
    args: argparse.Namespace,
    settings: FleetSettings,
    home: Path,
    kind: str,
    local: list[dict[str, Any]],
    *,
    snapshot: dict[str, list[dict[str, Any]]] | None = None,
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> FleetListing:
    """Every host's rows of `kind` (this host's `local` ones first); the fleet unreachable is
    one line on stderr, and the listing goes on with this host's rows."""
    from ackdeck.core.service.fleet.hosts import FleetLink, fleet_listing

    link = FleetLink(settings)
    try:
        listed = fleet_listing(
            link, home, kind, local, snapshot=snapshot, hosts=args.host, keep=keep
        )
    finally:
        link.close()
    if listed.fleet.note:
        say(f"ackdeck: {listed.fleet.note}", file=sys.stderr)
    for line in listed.fleet.dropped:
        say(f"ackdeck: warning: fleet host {line}; its rows are left out", file=sys.stderr)
    return listed


def cell(value: object) -> str:
    """A value of a row another host published, as text (whatever type it holds), its control
    characters escaped: another host's text reaches this terminal."""
    from ackdeck.core.base.text import safe

    return "-" if value is None or value == "" else safe(str(value))


def number(value: object) -> float | None:
    """A number of a row another host published, or None when it holds none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
