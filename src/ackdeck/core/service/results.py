"""What every service operation returns: a `Struct` (core/base/struct.py), immutable, that
knows its JSON. Its `SHAPE` (each key of `to_json()` and its declared type) is derived from
its declaration, never written by hand (tests/test_results_declared_once.py); facts a backend
returns are that value type's own fields (`fields_of`). The MCP server publishes it as the
tool's `outputSchema`, and tests check that `to_json()` has exactly these keys, so the schema
and the data cannot drift apart.

Errors have one shape too, on both doors: `{"error": KIND, "message": ONE_LINE}`.
"""

from __future__ import annotations

from ackdeck.core.base.struct import fields_of as fields_of  # a value's own JSON fields
from ackdeck.core.base.text import os_error_line
from ackdeck.core.errors import AckdeckError


def error_json(exc: AckdeckError | OSError) -> dict[str, str]:
    """The error shape: its kind (the exception class) and one line."""
    if isinstance(exc, AckdeckError):
        kind, line = type(exc).__name__, " ".join(str(exc).split()) or "error"
    else:
        # Core maps the failures it anticipates; anything else still deserves a readable line.
        kind, line = "OSError", os_error_line(exc)
    return {"error": kind, "message": line}
