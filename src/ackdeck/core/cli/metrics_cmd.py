"""`ackdeck metrics`: Prometheus metrics of rooms, runs and wakes, once or served."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ackdeck.core.cli._output import emit_text, say
from ackdeck.core.errors import InvalidInput

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "metrics",
        help="Prometheus text metrics of rooms, runs and wakes (once, or --serve PORT)",
    )
    p.add_argument(
        "--room",
        action="append",
        default=[],
        dest="rooms",
        metavar="ROOM",
        help="a room (path or redis:// URL); repeatable",
    )
    p.add_argument(
        "--config", metavar="FILE", help="take the rooms (and home) from a dashboard TOML config"
    )
    p.add_argument(
        "--no-runs", action="store_true", help="rooms only: leave out runs and wake records"
    )
    p.add_argument("--serve", metavar="PORT", type=int, help="serve /metrics on PORT instead")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to serve on (default: 127.0.0.1, loopback)"
    )
    p.set_defaults(handler=_metrics)


def _metrics(args: argparse.Namespace) -> int:
    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.service import metrics

    rooms = list(args.rooms)
    home = args.home
    if args.config:
        more, config_home = metrics.rooms_of_config(args.config)
        rooms += more
        home = home or config_home
    if not rooms and args.no_runs:
        raise InvalidInput("no rooms: pass --room ROOM or --config FILE")
    h = None if args.no_runs else resolve_home(home)
    if args.serve is None:
        emit_text(metrics.exposition(rooms, h).decode())
        return 0
    return _serve(metrics, rooms, h, args.host, args.serve)


def _serve(metrics: Any, rooms: list[str], home: Path | None, host: str, port: int) -> int:
    if not 0 <= port <= 65535:
        raise InvalidInput(f"cannot serve on port {port}: ports are 0-65535")
    try:
        server = metrics.server(host, port, rooms, home)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot serve on {host} port {port}: {exc.strerror}") from None
    where = server.server_address[1]
    say(f"ackdeck metrics: serving http://{host}:{where}/metrics", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
