"""What every MCP tool of the agents' door returns: a `Reply` (text for the model, structured
data for programs, whether it is an error) and its conversion to the SDK's result. Shared by
core/mcp/server.py and core/mcp/manage.py, so neither imports the other for it.

Structured content is a service result's `to_json()` (the shape CLI `--json` prints too), and
each tool's `outputSchema` is built from that result's `SHAPE` (`output_model`): one place says
what the JSON holds. Every error is one line of text. Structured content must validate against
the tool's outputSchema even on an error (the TypeScript SDK checks it and otherwise replaces the
whole result by a protocol error, so the client never sees the message), so an error carries it
only when it is the tool's own result (a refused ack's counts). Any other error's JSON, the
`{"error": KIND, "message": LINE}` that CLI --json prints (`core.service.results.error_json`),
travels in the result's `_meta` under `ERROR_META`, which no schema constrains.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Union, get_args, get_origin, get_type_hints

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field, create_model

from ackdeck.core.base.struct import Struct as Result
from ackdeck.core.errors import AckdeckError
from ackdeck.core.service.results import error_json

# The `_meta` key that carries an error's JSON (prefixed: it cannot clash with MCP's own keys).
ERROR_META = "ackdeck/error"


@dataclass(frozen=True)
class Reply:
    text: str
    data: dict[str, Any] = field(default_factory=dict)  # structured content: a result's JSON
    error: bool = False
    error_json: dict[str, Any] | None = None  # an error that is no result: `_meta[ERROR_META]`


def result(reply: Reply) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=reply.text)],
        structured_content=reply.data or None,
        is_error=reply.error,
        _meta=None if reply.error_json is None else {ERROR_META: reply.error_json},
    )


def guard(call: Callable[[], Reply]) -> CallToolResult:
    """Run one tool body; expected failures become isError results with one line of text."""
    try:
        return result(call())
    except (AckdeckError, OSError) as exc:
        return result(failure(exc))


async def guard_async(call: Callable[[], Awaitable[Reply]]) -> CallToolResult:
    """`guard` for tool bodies that await."""
    try:
        return result(await call())
    except (AckdeckError, OSError) as exc:
        return result(failure(exc))


def failure(exc: AckdeckError | OSError) -> Reply:
    shape = error_json(exc)
    return Reply(shape["message"], error=True, error_json=shape)


def error_reply(kind: str, message: str, **extra: Any) -> Reply:
    """An error result: one line of text, and for programs the same line with its kind
    (`{"error": "InvalidInput", "message": ..., **extra}`) in `_meta`."""
    line = one_line(message)
    return Reply(line, error=True, error_json={"error": kind, "message": line, **extra})


def one_line(text: str) -> str:
    return " ".join(text.split()) or "error"


def reply(result: Result, text: str, *, error: bool = False) -> Reply:
    """A result for the model (`text`) and for programs (its JSON, as CLI --json prints it).
    An error's text is one line, whatever the message it quotes."""
    return Reply(one_line(text) if error else text, result.to_json(), error=error)


def arg(description: str) -> Any:
    """A tool argument: described, and strict (no coercion of "yes" into true)."""
    return Field(strict=True, description=description)


def output_model(cls: type[Result]) -> type[BaseModel]:
    """The pydantic model the SDK publishes as a tool's outputSchema, built from `cls.SHAPE`
    (once per class: a nested result is one model wherever it appears)."""
    model = _MODELS.get(cls)
    if model is None:
        # A Sparse key is left out while None (core/base/struct.py): not required.
        fields: dict[str, Any] = {
            name: (_field_type(_declared_type(cls, name, t)), None if name in cls._sparse else ...)
            for name, t in cls.SHAPE.items()
        }
        model = _MODELS[cls] = create_model(cls.__name__, **fields)
    return model


def _declared_type(cls: type[Result], name: str, t: Any) -> Any:
    """The type a value declares for its JSON key `name`: the annotation's text (PEP 563,
    core/base/struct.py) resolved by typing in the module of the class that declares it."""
    if not isinstance(t, str):
        return t
    owner = next(
        k
        for k in cls.__mro__
        if name in k.__dict__.get("__annotations__", {}) or name in k.__dict__
    )
    holder = types.SimpleNamespace(__annotations__={name: t})
    # `Path` too where the module names it for type checkers only (core/monitors/results.py:
    # a run's supervisor imports it and must not import pathlib).
    names = {"Path": Path, **vars(sys.modules[owner.__module__])}
    return get_type_hints(holder, names)[name]


# Derived from class constants only, so a cache, not state: the same SHAPE, the same model.
_MODELS: dict[type[Result], type[BaseModel]] = {}


def _field_type(t: Any) -> Any:
    if isinstance(t, type) and hasattr(t, "__json__"):  # shown as one plain value
        return get_type_hints(t.__json__)["return"]
    if isinstance(t, type) and issubclass(t, Result):
        return output_model(t)
    args = get_args(t)
    origin = get_origin(t)
    if origin is list:
        return list[_field_type(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[args[0], _field_type(args[1])]  # type: ignore[misc,valid-type]
    if t is bytes or (isinstance(t, type) and issubclass(t, PurePath)):
        return str  # raw bytes and paths are shown as text (core/base/struct.py)
    if origin in (Union, types.UnionType):
        return Union[tuple(_field_type(a) for a in args)]  # noqa: UP007
    return t
