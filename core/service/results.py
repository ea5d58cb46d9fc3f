"""What every service operation returns: a `Result`, immutable, that knows its JSON.

`SHAPE` names each key of `to_json()` and its JSON type (Python types: `int | None`, `list[str]`,
or another result class for a nested object). The MCP server publishes it as the tool's
`outputSchema`, and tests check that `to_json()` has exactly these keys, so the schema and
the data cannot drift apart.

Errors have one shape too, on both doors: `{"error": KIND, "message": ONE_LINE}`.
"""

from __future__ import annotations

from core.base.record import Struct
from core.base.text import os_error_line
from core.errors import AckdeckError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar


class Result(Struct):
    """Base of the service's results. Subclasses set `SHAPE` and implement `to_json`."""

    SHAPE: ClassVar[dict[str, Any]] = {}

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


def error_json(exc: AckdeckError | OSError) -> dict[str, str]:
    """The error shape: its kind (the exception class) and one line."""
    if isinstance(exc, AckdeckError):
        kind, line = type(exc).__name__, " ".join(str(exc).split()) or "error"
    else:
        # Core maps the failures it anticipates; anything else still deserves a readable line.
        kind, line = "OSError", os_error_line(exc)
    return {"error": kind, "message": line}
