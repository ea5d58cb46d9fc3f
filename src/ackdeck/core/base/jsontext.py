"""JSON text read and written without importing the `json` package (issue 43).

The per-turn commands and a run's supervisor start a fresh interpreter each time, and
`import json` costs more than the rest of a hook's work: json.decoder imports `re` (which
imports `enum`, `functools` and `collections`) for two patterns only its pure-Python fallback
and its whitespace skip use. The decoding itself is done by the C scanner in `_json`, the
module `json` is a wrapper around; this module drives that scanner directly and skips
whitespace with `str` methods, so it gives the same values and the same errors
(json.JSONDecodeError) as `json.JSONDecoder.decode` without the imports; only a text that is
not JSON imports json, to raise its error. `_json` is CPython's accelerator and is private:
where it is missing or its API changed, both functions fall back to `json` itself (slower to
start, same results), so nothing breaks, it only costs the import again.

`dumps` writes what `json.dumps` writes for the values ackdeck stores (dict, list, tuple, str,
int, float, bool, None; the same separators, `ensure_ascii` and `sort_keys`), byte for byte
(tests/test_jsontext.py compares them on generated values). Strings are escaped by the same C
functions `json` uses. Records ackdeck writes are small; a large value (a page of a room for
`--json`) is a list of short strings, which this encodes at a few microseconds each.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["decoder", "dumps"]

# JSON's whitespace (RFC 8259 section 2), exactly what json.decoder's WHITESPACE matches.
_WS = " \t\n\r"


class _Options:
    """The attributes `_json.make_scanner` reads from its context (a `json.JSONDecoder` in
    the standard library): the same names, set once."""

    def __init__(
        self,
        parse_float: Callable[[str], Any],
        parse_int: Callable[[str], Any],
        parse_constant: Callable[[str], Any],
    ) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = parse_float
        self.parse_int = parse_int
        self.parse_constant = parse_constant
        self.memo: dict[str, str] = {}


def _error(message: str, text: str, pos: int) -> ValueError:
    """json.JSONDecodeError (a ValueError carrying line and column), as json.loads raises
    it. Importing json here costs only a text that is not JSON; the C scanner's own errors
    need it imported too (_scan)."""
    from json import JSONDecodeError

    return JSONDecodeError(message, text, pos)


def decoder(
    parse_float: Callable[[str], Any] = float,
    parse_int: Callable[[str], Any] = int,
    parse_constant: Callable[[str], Any] | None = None,
) -> Callable[[str], Any]:
    """`json.JSONDecoder(parse_float=…, parse_int=…, parse_constant=…).decode`, made once and
    called per text: ValueError for a text that is not JSON, RecursionError for one nested
    beyond the interpreter's stack (as the standard decoder; jsonfields.parse bounds both)."""
    try:
        from _json import make_scanner

        constant = parse_constant or _CONSTANTS.__getitem__
        # typeshed types the context as the scanner class; the C code only reads the
        # attributes _Options has (as it does from a json.JSONDecoder).
        scan = make_scanner(_Options(parse_float, parse_int, constant))  # type: ignore[arg-type]
    except (ImportError, AttributeError, TypeError):  # no C accelerator: json's own decoder
        import json

        return json.JSONDecoder(
            parse_float=parse_float, parse_int=parse_int, parse_constant=parse_constant
        ).decode

    def decode(text: str) -> Any:
        start = len(text) - len(text.lstrip(_WS))
        try:
            value, end = _scan(scan, text, start)
        except StopIteration as stop:  # the scanner's "no value starts here"
            raise _error("Expecting value", text, stop.value) from None
        if end != len(text):
            rest = text[end:].lstrip(_WS)
            if rest:
                raise _error("Extra data", text, len(text) - len(rest))
        return value

    return decode


def _scan(scan: Callable[[str, int], tuple[Any, int]], text: str, start: int) -> tuple[Any, int]:
    """`scan(text, start)`, with the scanner's own errors as json's.

    The errors the C scanner finds itself (a control character or a bad escape in a string,
    one cut short, a missing delimiter) it raises as json.decoder.JSONDecodeError, which
    CPython 3.11 looks up in sys.modules without importing it: before json is imported, the
    lookup fails and the call raises SystemError, which no `except ValueError` catches (a
    torn presence line was a traceback from `ackdeck agents`). Such a text is not JSON, so it
    may cost json's import: import it and scan again, which raises json's error."""
    try:
        return scan(text, start)
    except SystemError:
        pass  # scanned again below, with json imported: any other fault raises again there
    # Outside the handler, so json's error does not carry the SystemError as its context.
    import json.decoder  # noqa: F401  (the scanner reads its error class from sys.modules)

    return scan(text, start)


_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


def dumps(
    value: Any,
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """`json.dumps(value, ensure_ascii=…, separators=…, sort_keys=…)`, the same text. TypeError
    for a value JSON cannot hold, as json.dumps."""
    try:
        from _json import encode_basestring, encode_basestring_ascii
    except ImportError:  # no C accelerator: json itself
        import json

        return json.dumps(
            value, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys
        )
    item_sep, key_sep = separators or (", ", ": ")
    quote = encode_basestring_ascii if ensure_ascii else encode_basestring
    out: list[str] = []
    _encode(value, out, quote, item_sep, key_sep, sort_keys)
    return "".join(out)


def _float(value: float) -> str:
    """A float as json writes it (allow_nan=True, its default): repr, or the constants."""
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str | None:
    """A dict key as json writes it (before quoting), or None for a key json refuses."""
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return _float(key)
    return None


def _encode(
    value: Any,
    out: list[str],
    quote: Callable[[str], str],
    item_sep: str,
    key_sep: str,
    sort_keys: bool,
) -> None:
    # The order of the checks is json's (encoder.py _iterencode): bool before int, since a
    # bool is an int; subclasses of str, int and float are written as their base type.
    if isinstance(value, str):
        out.append(quote(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(item_sep)
            _encode(item, out, quote, item_sep, key_sep, sort_keys)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        items = sorted(value.items()) if sort_keys else value.items()
        for i, (key, item) in enumerate(items):
            name = _key(key)
            if name is None:
                raise TypeError(
                    f"keys must be str, int, float, bool or None, not {type(key).__name__}"
                )
            if i:
                out.append(item_sep)
            out.append(quote(name))
            out.append(key_sep)
            _encode(item, out, quote, item_sep, key_sep, sort_keys)
        out.append("}")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
