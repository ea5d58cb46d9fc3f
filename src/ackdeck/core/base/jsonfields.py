"""Typed reads of ackdeck's own JSON state files (ledger, receipts, audit log, policy, runs,
read states, wakes, notice marks), written the way standard-library-only tools read theirs
(pip's `pip/_internal/models/direct_url.py`), with the getters below. A record is a
`Struct` (core/base/struct.py): its fields are declared once, `to_json`/`dumps` write them,
and `read_fields` reads them back, each checked by the getter its annotation names (`int`,
`str | None`, `list[PrevInode]`, `dict[str, int]`, `tuple[int, int]`, a nested record);
nothing here knows a field.

Why not pydantic, msgspec or dataclasses: the per-turn commands and a run's supervisor read
these files (the hot path, tests/test_layering.py), and importing pydantic costs about three
times Python's start-up, msgspec ~19 ms (typing, re, uuid, datetime), dataclasses 6-16 ms
(inspect). Input a door receives from users (MCP arguments, the dashboard config) is
validated by pydantic, off the hot path.

Rules (a damaged file is refused with RecordError, which the loader turns into CorruptState
or a skip): a required field must be present; `int` takes an int, not a bool, and an
integral float (JSON may write one); `float` takes an int or a float within FLOAT_BOUND
(every float kept is a time or a duration); `str`, `bool`, `list`
and `dict` take only themselves; null only where a getter allows it. Unknown fields are
ignored (a `from_dict` reads only its own), so files written by a newer version stay
readable.

Every JSON text ackdeck reads back from disk or from a peer (its state files, its logs, the
mailboxes of other tools, the fleet's snapshots) is parsed by `parse`, never by `json.loads`
itself: the standard decoder takes `NaN` and `Infinity` (and `1e999` as infinity), which no
JSON writer emits and which crash the arithmetic and printing after it, and a text nested a
few thousand deep raises RecursionError, not ValueError, so every `except ValueError` around
a read let it through as a traceback. `parse` turns both into the ValueError a damaged file
already gets, in the one place.
"""

from __future__ import annotations

from ackdeck.core.base import jsontext
from ackdeck.core.errors import RecordError

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from ackdeck.core.base.struct import Struct

    T = TypeVar("T")
    S = TypeVar("S", bound=Struct)

__all__ = [
    "check",
    "check_tuple",
    "get",
    "get_list",
    "get_map",
    "get_optional",
    "get_required",
    "loads",
    "parse",
    "read_fields",
]

_WANT = {
    int: "an integer",
    float: "a number",
    str: "a string",
    bool: "a boolean",
    list: "a list",
    dict: "an object",
}


# Every float a state file keeps is a time (epoch seconds) or a duration: one past this many
# seconds either way (year 5138) is damage, and would overflow the date formatting that
# shows it (`ps`, `room trace`) instead of being refused here.
FLOAT_BOUND = 1e11


def check(kind: type[T], value: object, name: str) -> T:
    """`value` as `kind` (int, float, str, bool, list or dict), else RecordError naming `name`."""
    if isinstance(value, bool) and kind is not bool:
        pass  # a bool is an int to Python, never to a state file
    elif (
        kind is float and isinstance(value, int | float) and not -FLOAT_BOUND < value < FLOAT_BOUND
    ):
        raise RecordError(f"{name}: {value!r:.20} is out of range for a time")
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


def read_fields(cls: type[Struct], d: dict[str, object]) -> dict[str, Any]:
    """The constructor arguments of `cls` read from `d`, a state file's object: each field the
    class declares as a JSON key, checked as its annotation says (the getters above, with the
    same rules and messages). A field without a default is required; one with a default takes
    it when absent; null only where the annotation allows None."""
    readers = cls.__dict__.get("_readers")
    if readers is None:
        readers = _readers(cls)
        type.__setattr__(cls, "_readers", readers)
    out: dict[str, Any] = {}
    for name, key, required, read in readers:
        if key in d:
            out[name] = read(d[key], key)
        elif required:
            raise RecordError(f"{key}: field required")
    return out


# Deepest nesting `parse` accepts. ackdeck's own records nest four deep at most (a ledger's
# pending identity); a peer's snapshot or another tool's mailbox a few more. The bound keeps
# what comes back shallow enough for any recursive walk after it (json.dumps, `encoded`, the
# readers above), whatever the stack depth of the caller.
DEPTH = 64
# Integers beyond 64 bits: no offset, count or time ackdeck keeps comes near, and one that
# large raises OverflowError (not ValueError) the moment it meets a float or a clock.
_INT_DIGITS = 19


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # inf or nan: a number beyond a double's range, like 1e999
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > _INT_DIGITS:
        raise ValueError(f"integer {text[:20]}... is out of range")
    return int(text)


# Numbers are checked one by one (a call into Python for each: twice the cost of the C decoder
# alone, and `ackdeck agents` parses every presence log) only in a text where one could pass
# the bounds: a run of 20 digits, or an exponent of 3 digits. Found with C-speed byte
# operations (a regular expression costs as much as the checks it saves): every digit mapped
# to 0 and E to e, then a search for the patterns. Letters in strings can match too: they
# only cost the slower, exact path.
_NUMBERS = bytes.maketrans(b"123456789E", b"000000000e")
_MAYBE_BIG = (b"0" * 20, b"e000", b"e+000")
# Only the brackets of a text, all as [ and ]: removing the innermost pairs DEPTH times
# empties it unless the text nests deeper (or a string holds brackets: then it is walked).
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
# Made once: json.loads with any argument builds a decoder per call. jsontext, not json: the
# per-turn commands read JSON on every turn and json's import costs more than their work.
_STRICT = jsontext.decoder(parse_constant=_no_constant)
_CHECKED = jsontext.decoder(parse_constant=_no_constant, parse_float=_finite, parse_int=_int)


def parse(raw: str | bytes | bytearray) -> Any:
    """The value of a JSON text, strictly: ValueError (never RecursionError) for a text that
    is not JSON, holds NaN/Infinity, a number beyond a float's range or an integer beyond 64
    bits, or nests deeper than DEPTH. Linear in the text."""
    # UnicodeError is a ValueError: a text that is not UTF-8 is as damaged as one not JSON.
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    text = raw if isinstance(raw, str) else data.decode()
    numbers = data.translate(_NUMBERS)
    checked = any(p in numbers for p in _MAYBE_BIG)
    try:
        value = (_CHECKED if checked else _STRICT)(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {DEPTH} levels") from None
    if isinstance(value, list | dict) and not _shallow(data) and _too_deep(value):
        raise ValueError(f"nested deeper than {DEPTH} levels")
    return value


def _shallow(data: bytes) -> bool:
    """True when the brackets of `data` surely nest at most DEPTH deep (False: not sure)."""
    pairs = data.translate(_BRACKETS, _NOT_BRACKETS)
    for _ in range(DEPTH):
        if not pairs:
            return True
        pairs = pairs.replace(b"[]", b"")
    return not pairs


def _too_deep(value: list[Any] | dict[str, Any]) -> bool:
    """Is `value` nested deeper than DEPTH? Iterative, so the walk itself cannot overflow."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > DEPTH:
            return True
        items = v.values() if isinstance(v, dict) else v
        stack.extend((x, depth + 1) for x in items if isinstance(x, list | dict))
    return False


def loads(cls: type[S], raw: str | bytes | bytearray) -> S:
    """`cls.from_dict` of a JSON text; RecordError naming the class and the first bad field."""
    try:
        data = parse(raw)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, and parse's refusals
        raise RecordError(f"{cls.__name__}: invalid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    try:
        return cls.from_dict(data)
    except RecordError as exc:
        raise RecordError(f"{cls.__name__}.{exc}") from None


# ----- a field's reader, from its annotation's text (PEP 563: annotations stay text) -------
_KINDS: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}


def _readers(cls: type[Struct]) -> tuple[tuple[str, str, bool, Any], ...]:
    """(field, its key in the file, required, reader) for every field `cls` declares, as
    struct.py's `_stored` writes them."""
    import sys

    names = vars(sys.modules[cls.__module__])
    texts: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        texts.update({k: str(v) for k, v in vars(klass).get("__annotations__", {}).items()})
    out = []
    for name in cls._fields:
        key = cls._file_keys.get(name, name)
        out.append(
            (name, key, name not in cls._defaults, _reader(_unwrap(texts[name]), names, key))
        )
    return tuple(out)


def _unwrap(text: str) -> str:
    """The type inside `Internal[...]` / `Sparse[...]` (struct.py's markers)."""
    for marker in ("Internal[", "Sparse["):
        if text.startswith(marker):
            return _unwrap(text[len(marker) : -1])
    return text


def _split(text: str, sep: str) -> list[str]:
    """`text` split on `sep` outside brackets."""
    parts, depth, last = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[last:i].strip())
            last = i + 1
    parts.append(text[last:].strip())
    return parts


def _reader(text: str, names: dict[str, Any], field: str) -> Any:
    """A function (value, name) -> the value checked (and converted) as `text` declares."""
    alts = _split(text, "|")
    if "None" in alts:
        inner = _reader(" | ".join(a for a in alts if a != "None"), names, field)
        return lambda v, n: None if v is None else inner(v, n)
    if len(alts) > 1:
        raise TypeError(f"{field}: no reader for a union {text!r}")
    if text in _KINDS:
        kind = _KINDS[text]
        return lambda v, n: check(kind, v, n)
    head, _, rest = text.partition("[")
    args = _split(rest[:-1], ",") if rest else []
    if head == "list" and len(args) == 1:
        item = _reader(args[0], names, field)
        return lambda v, n: [item(x, f"{n}[{i}]") for i, x in enumerate(check(list, v, n))]
    if head == "dict" and len(args) == 2 and args[0] == "str":
        item = _reader(args[1], names, field)
        return lambda v, n: {k: item(x, f"{n}[{k!r}]") for k, x in check(dict, v, n).items()}
    if head == "tuple" and args and "..." not in args:
        items = [_reader(a, names, field) for a in args]

        def read_tuple(v: object, n: str) -> tuple[Any, ...]:
            if not isinstance(v, list | tuple) or len(v) != len(items):
                got = type(v).__name__
                raise RecordError(f"{n}: expected a list of {len(items)}, got {got}")
            return tuple(r(x, f"{n}[{i}]") for i, (r, x) in enumerate(zip(items, v, strict=True)))

        return read_tuple
    nested = names.get(text)
    if isinstance(nested, type) and hasattr(nested, "from_dict"):
        return lambda v, n: nested.from_dict(check(dict, v, n))
    raise TypeError(f"{field}: no reader for {text!r}")
