"""Typed records for ackdeck's own state files (ledger, receipts, runs, read states, wakes).

Every command an agent or a hook runs on each turn reads one of these files, and importing
pydantic costs about three times Python's own start-up. These files are written by ackdeck
itself, so they need a schema and a check that a damaged file is refused, not pydantic's
coercions: a `Record` subclass declares its fields as annotated class attributes (defaults as
values, mutable defaults copied per instance) and gets the part of pydantic's model API that
core uses (`model_validate_json`, `model_validate`, `model_dump`, `model_dump_json`,
`model_copy`). Input a door receives from users (MCP arguments, the dashboard config) keeps
pydantic.

`Struct` is the same idea without validation, for the result objects core hands to the doors
(`ReadResult`, `RoomStatus`, ...): immutable, positional or keyword arguments, equality and a
repr, like a frozen dataclass, but without importing dataclasses (and with it `inspect`),
which alone costs a third of Python's start-up.

Rules, applied to JSON input and to constructor arguments alike: a required field must be
present; `int` takes an int (not a bool; an integral float is accepted as JSON may write one);
`float` takes an int or a float; `str` and `bool` take only themselves; `X | None`, `list[X]`,
`tuple[X, Y]` and nested records are checked recursively; unknown fields are ignored (files
written by a newer version stay readable).
"""

from __future__ import annotations

import json
import sys

from ackdeck.core.errors import RecordError

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Self, dataclass_transform
else:

    def dataclass_transform(**_kwargs: object) -> object:
        return lambda cls: cls


__all__ = ["Record", "RecordError", "Struct"]

_MISSING = object()


@dataclass_transform(kw_only_default=True)
class Record:
    """Base class; see the module docstring. Subclasses annotate fields, nothing more."""

    # name -> (annotation text, default or _MISSING), in declaration order, base classes first.
    _fields: dict[str, tuple[str, Any]] = {}
    _checks: dict[str, Any] | None = None  # compiled lazily: the first use pays, not the import

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls._fields)
        for name, text in cls.__dict__.get("__annotations__", {}).items():
            if name.startswith("_") or str(text).startswith("ClassVar"):
                continue
            default = cls.__dict__.get(name, _MISSING)
            if isinstance(default, property):
                continue
            fields[name] = (str(text), default)
            if default is not _MISSING:
                delattr(cls, name)  # the instance attribute is the only copy
        cls._fields = fields
        cls._checks = None

    def __init__(self, **values: Any) -> None:
        checks = type(self)._compiled()
        for name, (_text, default) in type(self)._fields.items():
            if name in values:
                value = checks[name](values[name], name)
            elif default is _MISSING:
                raise RecordError(f"{type(self).__name__}.{name}: Field required")
            else:
                value = _copy_default(default)
            object.__setattr__(self, name, value)

    # ----- pydantic-compatible API -------------------------------------------------------------
    @classmethod
    def model_validate(cls, data: Any) -> Self:
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise RecordError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
        return cls(**{k: v for k, v in data.items() if k in cls._fields})

    @classmethod
    def model_validate_json(cls, raw: str | bytes | bytearray) -> Self:
        try:
            data = json.loads(raw)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise RecordError(f"{cls.__name__}: invalid JSON ({exc})") from None
        return cls.model_validate(data)

    def model_dump(self) -> dict[str, Any]:
        return {name: _dump(getattr(self, name)) for name in self._fields}

    def model_dump_json(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":"))

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        """A shallow copy; like pydantic, `update` values are taken as they are."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        if update:
            new.__dict__.update(update)
        return new

    # ----- value semantics -----------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, like a pydantic model

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"

    @classmethod
    def _compiled(cls) -> dict[str, Any]:
        if cls._checks is None:
            module = sys.modules[cls.__module__].__dict__
            cls._checks = {n: _check_for(t, module) for n, (t, _d) in cls._fields.items()}
        return cls._checks


def _copy_default(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.model_dump()
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


@dataclass_transform(frozen_default=True)
class Struct:
    """An immutable result object; see the module docstring. Subclasses annotate fields."""

    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields, defaults = list(cls._fields), dict(cls._defaults)
        for name, text in cls.__dict__.get("__annotations__", {}).items():
            if name.startswith("_") or str(text).startswith("ClassVar"):
                continue
            if name not in fields:
                fields.append(name)
            if name in cls.__dict__:
                defaults[name] = cls.__dict__[name]
                delattr(cls, name)
        cls._fields, cls._defaults = tuple(fields), defaults

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        if len(args) > len(cls._fields):
            raise TypeError(f"{cls.__name__} takes {len(cls._fields)} arguments")
        values = dict(zip(cls._fields, args, strict=False))
        for name, value in kwargs.items():
            if name not in cls._fields or name in values:
                raise TypeError(f"{cls.__name__}: unexpected or repeated argument {name!r}")
            values[name] = value
        for name in cls._fields:
            if name not in values:
                if name not in cls._defaults:
                    raise TypeError(f"{cls.__name__}: missing argument {name!r}")
                values[name] = _copy_default(cls._defaults[name])
        self.__dict__.update(values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={self.__dict__[n]!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"


# ----- annotation text -> checker ----------------------------------------------------------------
def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _fail(name: str, want: str, value: Any) -> RecordError:
    return RecordError(f"{name}: expected {want}, got {type(value).__name__}")


def _check_for(text: str, module: dict[str, Any]) -> Any:
    options = _split_top(text, "|")
    if len(options) > 1:
        nullable = "None" in options
        rest = [o for o in options if o != "None"]
        if len(rest) != 1:
            raise TypeError(f"unsupported record annotation {text!r}")
        inner = _check_for(rest[0], module)
        if not nullable:
            return inner
        return lambda v, n: None if v is None else inner(v, n)
    if text.endswith("]"):
        head, _, args = text[:-1].partition("[")
        parts = [_check_for(a, module) for a in _split_top(args, ",")]
        if head == "list":
            item = parts[0]

            def check_list(v: Any, n: str) -> list[Any]:
                if not isinstance(v, list | tuple):
                    raise _fail(n, "a list", v)
                return [item(x, f"{n}[{i}]") for i, x in enumerate(v)]

            return check_list
        if head == "dict":
            key, value = parts

            def check_dict(v: Any, n: str) -> dict[Any, Any]:
                if not isinstance(v, dict):
                    raise _fail(n, "an object", v)
                return {key(k, f"{n} key"): value(x, f"{n}[{k!r}]") for k, x in v.items()}

            return check_dict
        if head == "tuple":

            def check_tuple(v: Any, n: str) -> tuple[Any, ...]:
                if not isinstance(v, list | tuple) or len(v) != len(parts):
                    raise _fail(n, f"a list of {len(parts)}", v)
                pairs = enumerate(zip(parts, v, strict=True))
                return tuple(p(x, f"{n}[{i}]") for i, (p, x) in pairs)

            return check_tuple
        raise TypeError(f"unsupported record annotation {text!r}")
    simple = _SIMPLE.get(text)
    if simple is not None:
        return simple
    target = module.get(text)
    if getattr(target, "__origin__", None) is not None:  # an alias such as LineKey = tuple[...]
        return _check_for(str(target), module)
    if isinstance(target, type) and issubclass(target, Record):
        return lambda v, n: target.model_validate(v) if isinstance(v, dict) else _same(v, n, target)
    raise TypeError(f"unsupported record annotation {text!r}")


def _same(v: Any, n: str, target: type) -> Any:
    if isinstance(v, target):
        return v
    raise _fail(n, f"an object ({target.__name__})", v)


def _int(v: Any, n: str) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise _fail(n, "an integer", v)


def _float(v: Any, n: str) -> float:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    raise _fail(n, "a number", v)


def _str(v: Any, n: str) -> str:
    if isinstance(v, str):
        return v
    raise _fail(n, "a string", v)


def _bool(v: Any, n: str) -> bool:
    if isinstance(v, bool):
        return v
    raise _fail(n, "a boolean", v)


_SIMPLE = {"int": _int, "float": _float, "str": _str, "bool": _bool}
