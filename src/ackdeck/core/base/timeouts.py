"""One rule for every wait a caller asks for (`room wait`, `output --timeout`, MCP
`process_output`): a finite number of seconds from 0 to MAX_WAIT. A longer wait belongs in a
monitor (wakes) or in a loop over `room wait`, which exits EXIT_TIMEOUT when its time is up.
Also the one reading of a number of seconds set in the environment (`seconds_from_env`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ackdeck.core.errors import InvalidInput

MAX_WAIT = 600.0
# `room wait` ran out of time: not an error, so not 1. The code GNU timeout(1) uses.
EXIT_TIMEOUT = 124


def check_timeout(value: float, what: str = "timeout") -> float:
    """`value` if it is a usable wait, else InvalidInput with one line naming the rule."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{what} must be a number of seconds, not {type(value).__name__}")
    if math.isnan(value) or not 0 <= value <= MAX_WAIT:
        raise InvalidInput(f"{what} must be between 0 and {MAX_WAIT:g} seconds, got {value:g}")
    return float(value)


def parse_timeout(text: str, what: str = "timeout") -> float:
    """The command-line form: the text of a number, then the same rule."""
    try:
        value = float(text)
    except ValueError:
        raise InvalidInput(f"{what} must be a number of seconds, got {text[:40]!r}") from None
    return check_timeout(value, what)


def seconds_from_env(
    env: Mapping[str, str], name: str, default: float, low: float, high: float
) -> float:
    """The number of seconds `env[name]` sets (`default` when unset or empty), from `low` to
    `high`; anything else is InvalidInput with one line naming the variable."""
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name}={raw[:40]!r} is not a number of seconds") from None
    if math.isnan(value) or not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low:g} and {high:g} seconds")
    return value
