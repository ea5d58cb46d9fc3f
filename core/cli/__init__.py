"""The `ackdeck` command: a thin adapter over core. Each subcommand group lives in its own module
with a `register(subparsers)` function; handlers return an exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import NoReturn

from ..errors import AckdeckError

# Modules that add subcommands. Each exposes `register(subparsers) -> None`.
COMMAND_MODULES = ("rooms_cmd", "agents_cmd", "dash_cmd", "procs_cmd")


class _Parser(argparse.ArgumentParser):
    """argparse with ackdeck's error contract: one line on stderr and exit 1.

    argparse's default (a usage block and exit 2) would break scripts that read one line, and
    exit 2 means "a wake was delivered" to `wakes drain --hook`: a mistyped Stop hook must not
    look like a wake.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"ackdeck: error: {self.prog}: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ackdeck",
        description="Consumed-only acks for agent inboxes, a wake gate for process monitors, "
        "and a live dashboard over both.",
    )
    parser.add_argument(
        "--home",
        default=os.environ.get("ACKDECK_HOME"),
        help="state directory for processes and wakes (env ACKDECK_HOME; default ~/.ackdeck)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.handler(args)
    except AckdeckError as exc:
        print(f"ackdeck: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 1
    return int(code or 0)


def run() -> None:
    sys.exit(main())
