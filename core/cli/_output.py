"""Shared output helpers for CLI handlers."""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def emit_json(value: Any) -> None:
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        raise BrokenPipeError("standard output is closed")
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()  # a broken pipe surfaces here, inside main's handler, not at exit


def timeout_arg(value: str) -> float:
    """argparse `type=` for --timeout: core's one rule, reported as argparse's one-line error."""
    import argparse

    from core.base.timeouts import parse_timeout
    from core.errors import InvalidInput

    try:
        return parse_timeout(value)
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
