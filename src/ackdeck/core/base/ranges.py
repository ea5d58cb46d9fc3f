"""Numbers a person or a file sets (settings, policies, options): checked for range as well as
type, in one place, so a value that makes no sense is one line naming the rule, not a busy loop
(a dashboard `tick_seconds: 1e-7`) or a policy that moves lines nobody read (`max_deliveries:
0`). NaN and infinity are never in range; a bool is not a number (JSON and TOML `true` would
pass an `isinstance(v, int)` check)."""

from __future__ import annotations

import math

from ackdeck.core.errors import InvalidInput


def in_range(
    value: object, what: str, low: float, high: float, *, integer: bool = False, unit: str = ""
) -> float:
    """`value` if it is a number (an integer when `integer`) from `low` to `high`, else
    InvalidInput: `what must be ... from LOW to HIGH UNIT, got VALUE`."""
    kind = "an integer" if integer else "a number"
    span = f"{kind} from {low:,g} to {high:,g}{' ' + unit if unit else ''}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{what} must be {span}, got {str(value)[:40]!r}")
    if integer and not (isinstance(value, int) or (math.isfinite(value) and value.is_integer())):
        raise InvalidInput(f"{what} must be {span}, got {value!r}")
    if math.isnan(value) or not low <= value <= high:
        raise InvalidInput(f"{what} must be {span}, got {value!r}"[:200])
    return int(value) if integer else float(value)


def parse_in_range(
    text: str, what: str, low: float, high: float, *, integer: bool = False, unit: str = ""
) -> float:
    """The command-line and environment form: the text of a number, then `in_range`."""
    try:
        value: float = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise InvalidInput(f"{what} must be {kind}, got {text[:40]!r}") from None
    return in_range(value, what, low, high, integer=integer, unit=unit)
