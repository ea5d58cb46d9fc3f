"""The light JSON codec (core/base/jsontext.py) gives json's values, errors and text: the
per-turn commands use it instead of `json`, so any difference would change what they store
or refuse."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ackdeck.core.base import jsontext

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text(), inner, max_size=5)
        | st.tuples(inner, inner)
    ),
    max_leaves=30,
)
_FORMS = [
    {},
    {"separators": (",", ":")},
    {"ensure_ascii": False},
    {"separators": (",", ":"), "ensure_ascii": False},
    {"sort_keys": True},
]


@settings(max_examples=300, deadline=None)
@given(_values)
def test_dumps_writes_what_json_dumps_writes(value: object) -> None:
    for form in _FORMS:
        assert jsontext.dumps(value, **form) == json.dumps(value, **form)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(_values)
def test_the_decoder_reads_what_json_reads(value: object) -> None:
    decode = jsontext.decoder()
    for form in _FORMS:
        text = json.dumps(value, **form)  # type: ignore[arg-type]
        got, want = decode(text), json.loads(text)
        # NaN is not equal to itself: compare the texts of both readings instead.
        assert json.dumps(got) == json.dumps(want)


def test_dict_keys_are_written_as_json_writes_them() -> None:
    value = {1: "a", 2.5: "b", False: "c", None: "d", "e": float("nan")}
    assert jsontext.dumps(value) == json.dumps(value)
    with pytest.raises(TypeError, match="keys must be str"):
        jsontext.dumps({(1, 2): 3})
    with pytest.raises(TypeError, match="not JSON serializable"):
        jsontext.dumps({"a": object()})


_NOT_JSON = [
    "",
    "   ",
    "x",
    "[1,",
    '{"a": 1} x',
    '{"a": 1}\n\n  [',
    '{"a" 1}',
    '"\x01"',
    "[1, 2,]",
    '{"a": 1,}',
    "\n\n  nul",
    '"\\ud800',
    "01",
    "NaN x",
    '{"stop_hook_active": true',
    '["a\\q"]',
    '{"a": "\x00"}',
]


@pytest.mark.parametrize("text", _NOT_JSON)
def test_a_text_that_is_not_json_gets_json_s_error(text: str) -> None:
    with pytest.raises(ValueError) as want:
        json.loads(text)
    with pytest.raises(ValueError) as got:
        jsontext.decoder()(text)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_the_number_hooks_are_called_as_json_calls_them() -> None:
    seen: list[str] = []

    def constant(name: str) -> object:
        seen.append(name)
        raise ValueError(f"{name} is not JSON")

    decode = jsontext.decoder(parse_float=lambda t: ("f", t), parse_int=lambda t: ("i", t))
    assert decode(" [1, 2.50, -3e2]\t") == [("i", "1"), ("f", "2.50"), ("f", "-3e2")]
    with pytest.raises(ValueError, match="NaN is not JSON"):
        jsontext.decoder(parse_constant=constant)("[1, NaN]")
    assert seen == ["NaN"]
    assert math.isinf(jsontext.decoder()("-Infinity"))


def test_deep_nesting_raises_recursion_error_as_json_does() -> None:
    with pytest.raises(RecursionError):
        jsontext.decoder()("[" * 100_000 + "]" * 100_000)


def test_neither_function_imports_json_or_re() -> None:
    """The point of the module: a fresh interpreter that reads and writes JSON through it has
    not imported `json` or `re`."""
    code = (
        "import sys\n"
        "from ackdeck.core.base import jsontext\n"
        'v = jsontext.decoder()(\'{"a": [1, 2.5, "\\\\u00e9", true, null]}\')\n'
        "t = jsontext.dumps(v, separators=(',', ':'), ensure_ascii=False, sort_keys=True)\n"
        "print(t, sorted(m for m in ('json', 're', 'enum') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout == '{"a":[1,2.5,"é",true,null]} []\n'


# Texts the C scanner refuses itself (not by its "no value starts here" StopIteration): a
# control character, a bad escape or an unterminated string, a missing delimiter or key.
_SCANNER_REFUSES = [
    '{"a": "x\x01"}',
    '{"a": "tab\there"}',
    '"\\q"',
    '"\\u12"',
    '{"a": "unterminated',
    '{"a" 1}',
    "[1 2]",
    "{1: 2}",
    '{"a": 1,}',
    '{"session_id": "a"',
]


@pytest.mark.parametrize("text", _NOT_JSON + _SCANNER_REFUSES)
def test_a_fresh_interpreter_gets_json_s_errors_too(text: str) -> None:
    """_json's scanner raises the errors it finds itself as json.decoder.JSONDecodeError,
    which CPython 3.11 looks up in sys.modules without importing it: in a fresh interpreter
    (every per-turn command) such a text raised SystemError, which no `except ValueError`
    catches (a truncated hook input, a torn presence line, a damaged policy file were
    tracebacks). One interpreter per text: the first error imports json, hiding the rest."""
    code = (
        "import sys\n"
        "from ackdeck.core.base import jsontext\n"
        "try:\n"
        "    jsontext.decoder()(sys.stdin.read())\n"
        "except ValueError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    with pytest.raises(ValueError) as want:
        json.loads(text)
    assert out.stdout == f"{type(want.value).__name__} {want.value}\n"
