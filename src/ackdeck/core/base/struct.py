"""`Struct`: the one way ackdeck declares a value and its JSON (`ReadResult`, `RoomStatus`,
`Run`, `Delivery`, ...).

A frozen value type: positional or keyword arguments, defaults (mutable ones copied per
instance), equality, a hash, a repr and `replace`, like a `@dataclass(frozen=True)`. The
type a room or a monitor returns is the type every door shows: its JSON (CLI `--json`, MCP
structured content and the tool's outputSchema) is derived from the same declaration.

- Each annotated field is a JSON key, in the order the class declares it, unless its
  annotation is `Internal[...]` (what a door needs but does not show: a read's raw buffer,
  the error of a refused ack).
- A property decorated with `@derived` is a JSON key too, at the place the class declares
  it among the fields (a count, an age, the words saying what to do next).
- `SHAPE` maps each JSON key to its declared type (the annotation's text: PEP 563), and
  `to_json()` gives exactly those keys (a `Sparse[...]` one only when it is not None; an
  `Internal[Sparse[...]]` one is stored only when it is not None, and never shown).
  Nested structs, lists, dicts and paths are encoded on the way; bytes are shown as text
  (invalid UTF-8 replaced, core/base/text.py).
- A state file's record is a Struct too: `dumps` writes every field it declares (its
  `Internal` ones too, not the derived keys) as compact text, and `from_dict` / `loads` read
  them back, each checked as its annotation says (core/base/jsonfields.py, imported only
  then). So one type can be both a file's record and what the doors show of it (a wake).

Why not dataclasses, pydantic or msgspec: the per-turn commands and a run's supervisor (the
hot path, tests/test_layering.py) build these values, and importing dataclasses (and with it
`inspect`) costs 6-16 ms there, a third of Python's own start-up; pydantic about three times
Python's start-up. This module imports nothing. It validates nothing either: values are built
by ackdeck's own code, which mypy checks against the annotations. Only the MCP door turns the
annotations' text into types (`typing.get_type_hints`, off the hot path), for its schema.
"""

from __future__ import annotations

import os

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Annotated, Any, ClassVar, Self, TypeVar, dataclass_transform

    T = TypeVar("T")
    # A field a door needs but does not show: left out of the JSON.
    Internal = Annotated[T, "internal"]
    # A JSON key written only when its value is not None (a state file keeps the bytes it
    # had before the field existed).
    Sparse = Annotated[T, "sparse"]
    # A property that is a JSON key (type checkers see a plain property).
    derived = property
else:

    def dataclass_transform(**_kwargs: object) -> object:
        return lambda cls: cls

    def derived(fget):
        """A property that is a JSON key, at the place the class declares it."""
        fget.__json_key__ = True
        return property(fget)

    class Internal:
        """`Internal[T]`: a field a door needs but does not show (annotations are text here,
        PEP 563: this only lets a module import the name without typing)."""

        def __class_getitem__(cls, item):
            return item

    class Sparse(Internal):
        """`Sparse[T]`: a JSON key written only when its value is not None."""


__all__ = ["Internal", "Sparse", "Struct", "derived", "encoded", "fields_of"]


def _copy_default(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


class _Annotations(dict):
    """A class body's `__annotations__`, noting each field's place among its names."""

    def __init__(self, order: list[tuple[str, str]]) -> None:
        super().__init__()
        self.order = order

    def __setitem__(self, key: str, value: Any) -> None:
        self.order.append(("field", key))
        super().__setitem__(key, value)


class _Namespace(dict):
    """A class body's namespace, noting each name's place among its fields."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[tuple[str, str]] = []
        dict.__setitem__(self, "__annotations__", _Annotations(self.order))

    def __setitem__(self, key: str, value: Any) -> None:
        self.order.append(("name", key))
        super().__setitem__(key, value)


def _is_json_key(value: object) -> bool:
    return isinstance(value, property) and getattr(value.fget, "__json_key__", False)


class _StructMeta(type):
    """Records the order of a class body (fields and `@derived` properties interleaved),
    which `__annotations__` and the class dict each keep only for their own kind."""

    @classmethod
    def __prepare__(mcs, name: str, bases: tuple[type, ...], /, **kw: Any) -> _Namespace:
        return _Namespace()

    def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kw: Any) -> Any:
        order = getattr(ns, "order", [])
        plain = dict(ns)
        plain["__annotations__"] = dict(ns.get("__annotations__", {}))
        plain["_order"] = tuple(order)
        return super().__new__(mcs, name, bases, plain, **kw)


@dataclass_transform(frozen_default=True)
class Struct(metaclass=_StructMeta):
    """An immutable value that knows its JSON; see the module docstring. Subclasses annotate
    fields and mark derived JSON keys with `@derived`."""

    _fields: ClassVar[tuple[str, ...]] = ()  # every field, in constructor order
    _defaults: ClassVar[dict[str, Any]] = {}
    _keys: ClassVar[tuple[str, ...]] = ()  # the JSON keys, in order
    _derived: ClassVar[frozenset[str]] = frozenset()  # the JSON keys that are properties
    _sparse: ClassVar[frozenset[str]] = frozenset()  # keys left out while None
    # A field stored under another key than its name (a state file's key kept when the name
    # went to a derived JSON key): {field: key}.
    _file_keys: ClassVar[dict[str, str]] = {}
    # The JSON keys and their declared types (annotation text), for schemas and streamed JSON.
    SHAPE: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, *, kw_only: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # kw_only: type checkers take arguments by name only (as a dataclass's), so the fields
        # can be declared in the order of their JSON, defaults first where it wants them. At
        # run time, as for every Struct, positions follow the declaration.
        fields, defaults = list(cls._fields), dict(cls._defaults)
        keys, shape, derived_keys = list(cls._keys), dict(cls.SHAPE), set(cls._derived)
        sparse = set(cls._sparse)
        own = cls.__dict__
        annotations = own.get("__annotations__", {})
        order = own.get("_order") or [("field", n) for n in annotations]
        for kind, name in order:
            if name.startswith("_"):
                continue
            if kind == "field":
                text = str(annotations[name])
                if text.startswith(("ClassVar", "typing.ClassVar")) or name == "SHAPE":
                    continue
                if name not in fields:
                    fields.append(name)
                if name in own:
                    defaults[name] = own[name]
                    delattr(cls, name)
                if text.startswith("Internal["):
                    if text.startswith("Internal[Sparse["):
                        sparse.add(name)  # stored only when not None
                    continue  # stored (dumps, from_dict), not shown
                if text.startswith("Sparse["):
                    sparse.add(name)
                shape[name] = annotations[name]
            elif _is_json_key(own[name]):
                derived_keys.add(name)
                shape[name] = own[name].fget.__annotations__.get("return")
            else:
                continue
            if name not in keys:
                keys.append(name)
        cls._fields, cls._defaults = tuple(fields), defaults
        cls._keys, cls._derived = tuple(keys), frozenset(derived_keys)
        cls._sparse = frozenset(sparse)
        cls.SHAPE = {k: shape[k] for k in keys}

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

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (a name the value does not have is a TypeError)."""
        unknown = changes.keys() - self.__dict__.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__, **changes)
        return new

    def to_json(self) -> dict[str, Any]:
        """Exactly the keys of `SHAPE`, each a field or a `@derived` property, encoded."""
        return self._json(encoded)

    def _json(self, encode: Callable[[Any], Any]) -> dict[str, Any]:
        mine, derived_keys, sparse = self.__dict__, self._derived, self._sparse
        out: dict[str, Any] = {}
        for key in self._keys:
            value = getattr(self, key) if key in derived_keys else mine[key]
            if value is None and sparse and key in sparse:
                continue
            out[key] = value if type(value) in _SCALARS else encode(value)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Self:
        """The value `to_json()` gave, read back from a state file: each declared field
        checked as its annotation says; RecordError names the first that is not."""
        from ackdeck.core.base.jsonfields import read_fields

        return cls(**read_fields(cls, d))

    @classmethod
    def loads(cls, raw: str | bytes | bytearray) -> Self:
        """`from_dict` of a JSON text; RecordError (naming the class) if it is not one."""
        from ackdeck.core.base.jsonfields import loads

        return loads(cls, raw)

    def dumps(self) -> str:
        """`to_json()` as compact text, UTF-8 kept as is: the bytes the state files hold."""
        from ackdeck.core.base.jsontext import dumps  # json's import costs more than a write

        return dumps(_stored(self), ensure_ascii=False, separators=(",", ":"))

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


def fields_of(cls: type[Struct]) -> dict[str, Any]:
    """The JSON keys `cls` declares as fields (not its derived ones), with their declared
    types: the facts a value carries as it was built."""
    return {k: t for k, t in cls.SHAPE.items() if k not in cls._derived}


_SCALARS = frozenset({int, float, str, bool, type(None)})  # encoded as they are


def encoded(value: Any) -> Any:
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Struct):
        shown = getattr(value, "__json__", None)  # a value shown as one plain JSON value
        return value.to_json() if shown is None else shown()
    if isinstance(value, list | tuple):
        return [encoded(v) for v in value]
    if isinstance(value, dict):
        return {k: encoded(v) for k, v in value.items()}
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:  # shown as core/base/text.py's display_lines shows it
            from ackdeck.core.base.text import display

            return display(value)
    if isinstance(value, os.PathLike):  # a path (not PurePath: pathlib stays unimported)
        return os.fspath(value)
    shown = getattr(value, "__json__", None)  # a value shown as one plain JSON value
    return value if shown is None else shown()


def _stored(value: Any) -> Any:
    """`value` as a state file keeps it: a struct as every field it declares, `Internal` ones
    too (not its derived keys), in declaration order, nested structs always as objects (a
    wake's line is shown as its text, and stored with its offsets)."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Struct):
        mine, sparse, keys = value.__dict__, value._sparse, value._file_keys
        out: dict[str, Any] = {}
        for name in value._fields:
            v = mine[name]
            if v is None and name in sparse:
                continue
            out[keys.get(name, name)] = _stored(v)
        return out
    if isinstance(value, list | tuple):
        return [_stored(v) for v in value]
    if isinstance(value, dict):
        return {k: _stored(v) for k, v in value.items()}
    return encoded(value)
