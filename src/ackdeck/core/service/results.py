"""What every service operation returns: a `Result`, immutable, that knows its JSON.

`SHAPE` names each key of `to_json()` and its JSON type (Python types: `int | None`, `list[str]`,
or another result class for a nested object). A result whose fields are exactly its JSON
declares no SHAPE: it is its fields. Facts a backend returns are taken from that value type's
declaration (`fields_of`), never spelled out again. The MCP server publishes it as the tool's
`outputSchema`, and tests check that `to_json()` has exactly these keys, so the schema and
the data cannot drift apart.

Errors have one shape too, on both doors: `{"error": KIND, "message": ONE_LINE}`.
"""

from __future__ import annotations

from ackdeck.core.base.struct import Struct, encoded
from ackdeck.core.base.struct import fields_of as fields_of  # a value's own JSON fields
from ackdeck.core.base.text import os_error_line
from ackdeck.core.errors import AckdeckError

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar


class Result(Struct):
    """Base of the service's results: `to_json()` has exactly the keys of `SHAPE`.

    Each key's value is the result's own field of that name, else its property of that name
    (a derived number, a decoded line), else the attribute of `source()`, the core object the
    result wraps (a run, a wake record, a room's status). Nested results, lists and paths are
    encoded on the way."""

    SHAPE: ClassVar[dict[str, Any]] = {}
    # The keys of SHAPE that are properties of the class, found once per class (a status over
    # 3,000 rooms encodes ~100,000 keys).
    _PROPERTIES: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        explicit = cls.__dict__.get("SHAPE")
        super().__init_subclass__(**kwargs)
        if explicit is not None:
            cls.SHAPE = explicit
            cls._keys = tuple(explicit)
        cls._PROPERTIES = frozenset(
            key for key in cls.SHAPE if isinstance(getattr(cls, key, None), property)
        )

    def source(self) -> Any:
        return self

    def to_json(self) -> dict[str, Any]:
        mine, src, properties = self.__dict__, self.source(), self._PROPERTIES
        out: dict[str, Any] = {}
        for key in self.SHAPE:
            if key in mine:
                value = mine[key]
            elif key in properties:
                value = getattr(self, key)
            else:
                value = getattr(src, key)
            out[key] = encoded(value)
        return out


def error_json(exc: AckdeckError | OSError) -> dict[str, str]:
    """The error shape: its kind (the exception class) and one line."""
    if isinstance(exc, AckdeckError):
        kind, line = type(exc).__name__, " ".join(str(exc).split()) or "error"
    else:
        # Core maps the failures it anticipates; anything else still deserves a readable line.
        kind, line = "OSError", os_error_line(exc)
    return {"error": kind, "message": line}
