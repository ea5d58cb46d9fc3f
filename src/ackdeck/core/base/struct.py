"""`Struct`: immutable result objects (`ReadResult`, `RoomStatus`, `Delivery`, ...).

A frozen value type for the results core hands to the doors: positional or keyword
arguments, defaults (mutable ones copied per instance), equality, a hash and a repr, like a
`@dataclass(frozen=True)`. It exists because the per-turn commands and a run's supervisor
(the hot path, tests/test_layering.py) build these results, and importing dataclasses (and
with it `inspect`) costs 6-16 ms there, a third of Python's own start-up. It validates
nothing: results are built by core's own code, which mypy checks against the annotations.
The annotations are also read, in declaration order, by `core.service.results.fields_of`
for the JSON shapes the doors publish.
"""

from __future__ import annotations

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, dataclass_transform
else:

    def dataclass_transform(**_kwargs: object) -> object:
        return lambda cls: cls


__all__ = ["Struct"]


def _copy_default(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
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
