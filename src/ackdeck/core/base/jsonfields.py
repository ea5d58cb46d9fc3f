"""Typed reads of ackdeck's own JSON state files (ledger, receipts, audit log, policy, runs,
read states, wakes, notice marks), written the way standard-library-only tools read theirs
(pip's `pip/_internal/models/direct_url.py`): each record class reads its fields by name in
`from_dict` with the getters below and writes them back in `to_dict`; nothing here knows a
field. `JsonRecord` adds what those two give for free: JSON in and out, equality, a repr and
`replace`.

Why not pydantic, msgspec or dataclasses: the per-turn commands and a run's supervisor read
these files (the hot path, tests/test_layering.py), and importing pydantic costs about three
times Python's start-up, msgspec ~19 ms (typing, re, uuid, datetime), dataclasses 6-16 ms
(inspect). Input a door receives from users (MCP arguments, the dashboard config) is
validated by pydantic, off the hot path.

Rules (a damaged file is refused with RecordError, which the loader turns into CorruptState
or a skip): a required field must be present; `int` takes an int, not a bool, and an
integral float (JSON may write one); `float` takes an int or a float; `str`, `bool`, `list`
and `dict` take only themselves; null only where a getter allows it. Unknown fields are
ignored (a `from_dict` reads only its own), so files written by a newer version stay
readable.
"""

from __future__ import annotations

import json

from ackdeck.core.errors import RecordError

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Self, TypeVar

    T = TypeVar("T")

__all__ = [
    "JsonRecord",
    "check",
    "check_tuple",
    "get",
    "get_list",
    "get_map",
    "get_optional",
    "get_required",
]

_WANT = {
    int: "an integer",
    float: "a number",
    str: "a string",
    bool: "a boolean",
    list: "a list",
    dict: "an object",
}


def check(kind: type[T], value: object, name: str) -> T:
    """`value` as `kind` (int, float, str, bool, list or dict), else RecordError naming `name`."""
    if isinstance(value, bool) and kind is not bool:
        pass  # a bool is an int to Python, never to a state file
    elif isinstance(value, kind):
        return value
    elif (kind is float and isinstance(value, int)) or (
        kind is int and isinstance(value, float) and value.is_integer()
    ):
        return kind(value)  # type: ignore[call-arg]  # int or float, by the tests just made
    raise RecordError(f"{name}: expected {_WANT[kind]}, got {type(value).__name__}")


def check_tuple(kinds: tuple[type, ...], value: object, name: str) -> tuple[Any, ...]:
    """A JSON list of exactly len(kinds) items as a tuple, each item checked as its kind."""
    if not isinstance(value, list | tuple) or len(value) != len(kinds):
        raise RecordError(f"{name}: expected a list of {len(kinds)}, got {type(value).__name__}")
    return tuple(
        check(k, v, f"{name}[{i}]") for i, (k, v) in enumerate(zip(kinds, value, strict=True))
    )


def get(d: dict[str, object], kind: type[T], key: str, default: T) -> T:
    """`d[key]` as `kind`, or `default` when absent. Not nullable."""
    return default if key not in d else check(kind, d[key], key)


def get_required(d: dict[str, object], kind: type[T], key: str) -> T:
    """`d[key]` as `kind`; RecordError when absent. Not nullable."""
    if key not in d:
        raise RecordError(f"{key}: field required")
    return check(kind, d[key], key)


def get_optional(
    d: dict[str, object], kind: type[T], key: str, *, required: bool = False
) -> T | None:
    """`d[key]` as `kind` or None (null, or absent unless `required`)."""
    if key not in d and required:
        raise RecordError(f"{key}: field required")
    value = d.get(key)
    return None if value is None else check(kind, value, key)


def get_list(d: dict[str, object], kind: type[T], key: str, *, required: bool = False) -> list[T]:
    """`d[key]`, a list whose items are each `kind`; [] when absent unless `required`."""
    items = get_required(d, list, key) if required else get(d, list, key, [])
    return [check(kind, v, f"{key}[{i}]") for i, v in enumerate(items)]


def get_map(d: dict[str, object], kind: type[T], key: str) -> dict[str, T]:
    """`d[key]`, an object whose values are each `kind`; {} when absent."""
    return {k: check(kind, v, f"{key}[{k!r}]") for k, v in get(d, dict, key, {}).items()}


class JsonRecord:
    """A record of a state file. A subclass writes `__init__` (keyword arguments named as its
    attributes), `from_dict` and `to_dict`, field by field, in the file's key order; JSON,
    equality, repr and `replace` follow from those."""

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Self:
        raise NotImplementedError

    def to_dict(self) -> dict[str, object]:
        raise NotImplementedError

    @classmethod
    def from_json(cls, raw: str | bytes | bytearray) -> Self:
        try:
            data = json.loads(raw)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise RecordError(f"{cls.__name__}: invalid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise RecordError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
        try:
            return cls.from_dict(data)
        except RecordError as exc:
            raise RecordError(f"{cls.__name__}.{exc}") from None

    def to_json(self) -> str:
        """Compact, UTF-8 kept as is: the bytes the state files have always held."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    def replace(self, **changes: Any) -> Self:
        """A shallow copy with `changes`, taken as they are (a name the record does not have
        is a TypeError)."""
        unknown = changes.keys() - self.__dict__.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__, **changes)
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JsonRecord) or type(other) is not type(self):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"{type(self).__name__}.from_dict({self.to_dict()!r})"
