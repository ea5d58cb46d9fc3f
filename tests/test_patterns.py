"""User patterns on RE2: refusal of what RE2 cannot run, the literal prefilter's soundness, and
the chunk scanner against per-line matching on generated patterns."""

from __future__ import annotations

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from ackdeck.core.errors import InvalidInput
from ackdeck.core.monitors.literals import required_literals
from ackdeck.core.monitors.patterns import chunk_unsafe, compile_pattern, is_plain
from tests.helpers.scanning import naive, scan_pieces, scan_reused_buffer


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"(a)\1", r"backreference \1"),
        ("(?=x)", "lookahead (?=...)"),
        ("ERR(?!x)", "negative lookahead (?!...)"),
        ("(?<=a)b", "lookbehind (?<=...)"),
        ("(?<!a)b", "negative lookbehind (?<!...)"),
        ("(?P<n>a)(?P=n)", "named backreference (?P=name)"),
        ("(?>a+)b", "atomic group (?>...)"),
        ("a++", "possessive quantifier ++"),
        (r"done\Z", r"\Z (RE2 spells the end of text \z)"),
        (r"\k<n>", r"backreference \k<name>"),
    ],
)
def test_unsupported_construct_is_one_line_naming_it(pattern: str, construct: str) -> None:
    with pytest.raises(InvalidInput) as info:
        compile_pattern(pattern)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg == (
        f"invalid monitor regex {pattern!r}: {construct} is not supported "
        "(ackdeck uses RE2 syntax: https://github.com/google/re2/wiki/Syntax)"
    )


def test_other_errors_keep_re2s_own_words_on_one_line() -> None:
    with pytest.raises(InvalidInput, match=r"^invalid filter regex 'ERR\(': missing \)"):
        compile_pattern("ERR(", "filter")
    with pytest.raises(InvalidInput, match="invalid repetition size"):
        compile_pattern("a{1001}")


def test_re2_syntax_beyond_pythons_is_accepted() -> None:
    p = compile_pattern(r"\pL+ [[:digit:]]+ \x{e9}")
    assert p.search("Done 42 é".encode()) is not None
    assert compile_pattern(r"ab\z").chunk is None  # text anchors: matched line by line
    assert compile_pattern("ERROR").chunk is not None


def test_refused_pattern_prints_nothing_else_on_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    # RE2 logs its own copy of every parse error unless told not to.
    with pytest.raises(InvalidInput):
        compile_pattern(r"(a)\1")
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        ("ERROR", (b"ERROR",)),
        ("ERROR: .*failed", (b"ERROR: ",)),
        ("ERROR|Traceback|FATAL", (b"ERROR", b"FATAL", b"Traceback")),
        ("[Ee]rror", (b"rror",)),
        ("ERRORS?", (b"ERROR",)),
        ("x(ab|cd)y", (b"ab", b"cd")),
        ("FAIL(ED)?: ", (b"FAIL",)),
        ("(?P<lvl>WARN|ERROR) code", (b" code",)),
        (r"v1\.2", (b"v1.2",)),
        ("é+x", (b"x",)),
        (r"a{,3}", (b",3}",)),  # not a repetition in RE2: literal text
        ("(?i)error", None),
        ("x(?i:ab)", None),  # any case flag: no literal at all
        (r"\Qa.b\E", None),
        ("(a+)+$|DONE", None),
        ("a|", None),
        (".*", None),
    ],
)
def test_required_literals_examples(pattern: str, literals: tuple[bytes, ...] | None) -> None:
    assert required_literals(pattern) == literals


# A small grammar of RE2 patterns over the alphabet the texts use.
ATOMS = [
    "a", "b", "E", "R", " ", "é", r"\.", ".", "[aE]", "[^a]", r"\w", r"\s", r"\b", "^", "$",
    r"\x{e9}", "{", "}", r"\pL", "[[:upper:]]",
]  # fmt: skip
QUANTS = ["", "", "", "*", "+", "?", "{2}", "{1,2}", "{,2}", "*?"]


def _patterns() -> st.SearchStrategy[str]:
    atom = st.builds(lambda a, q: a + q, st.sampled_from(ATOMS), st.sampled_from(QUANTS))
    seq = st.lists(atom, min_size=1, max_size=5).map("".join)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        group = st.builds(
            lambda opener, body, q: f"{opener}{body}){q}",
            st.sampled_from(["(", "(?:", "(?s:", "(?i:", "(?P<g>"]),
            inner,
            st.sampled_from(QUANTS),
        )
        alt = st.lists(inner, min_size=2, max_size=3).map("|".join)
        cat = st.lists(st.one_of(inner, group), min_size=1, max_size=3).map("".join)
        return st.one_of(group, alt, cat)

    return st.recursive(seq, extend, max_leaves=8).filter(_valid)


def _valid(pattern: str) -> bool:
    try:
        compile_pattern(pattern)
    except InvalidInput:
        return False
    return True


TEXT = st.lists(
    st.sampled_from([b"a", b"b", b"E", b"R", b" ", b".", b"{", b"}", b"\xc3\xa9", b"\xff", b"Z"]),
    max_size=30,
).map(b"".join)


@settings(max_examples=400, deadline=None, database=None)
@given(_patterns(), st.lists(TEXT, min_size=1, max_size=10))
def test_every_match_contains_a_required_literal(pattern: str, texts: list[bytes]) -> None:
    literals = required_literals(pattern)
    if literals is None:
        return
    rx = re2.compile(pattern.encode())
    for text in texts:
        if rx.search(text) is not None:
            assert any(lit in text for lit in literals), (pattern, literals, text)


LINE_PARTS = [
    b"a", b"b", b"E", b"R", b" ", b".", b"\n", b"\x1b[1m", b"\r", b"\xc3\xa9", b"\xff", b"\x00",
]  # fmt: skip


@settings(max_examples=300, deadline=None, database=None)
@given(
    _patterns(),
    st.lists(st.sampled_from(LINE_PARTS), max_size=60),
    st.lists(st.integers(1, 12), min_size=1, max_size=8),
    st.booleans(),
)
def test_chunked_scan_equals_line_by_line_on_generated_patterns(
    pattern: str, parts: list[bytes], cuts: list[int], exclude: bool
) -> None:
    data = b"".join(parts)
    pieces, pos, i = [], 0, 0
    while pos < len(data):
        n = cuts[i % len(cuts)]
        pieces.append(data[pos : pos + n])
        pos += n
        i += 1
    want = naive(pattern, data, exclude)
    got, _ = scan_pieces(pattern, pieces, exclude=exclude)
    assert [(m.start, m.end) for m in got] == want
    got = scan_reused_buffer(pattern, pieces, exclude)
    assert [(m.start, m.end) for m in got] == want


@pytest.mark.parametrize(
    "construct",
    [r"\D", r"\W", r"\S", r"\PL", "[^[:alpha:]]", "[[:^alpha:]]", r"[\x00-\x{10FFFF}]", "(?s:.)",
     r"\n", "[\\n]", r"\x{0a}", r"[\d\D]", r"[^\x00]", "[[:space:]]", "\n", r"\012", r"[^\t]"],
)  # fmt: skip
def test_the_buffer_pattern_never_matches_across_a_newline(construct: str) -> None:
    # The scanner takes a hit in a buffer of lines as its line's match without a second look:
    # that is only right if no match can run into the next line.
    p = compile_pattern(f"a{construct}b")
    assert p.chunk is not None
    assert p.chunk.search(b"xa\nbx") is None
    assert compile_pattern(r"a\Cb").chunk is None  # \C ignores never_nl: line by line instead


PLAIN_TEXT = st.text(alphabet="aAE R:-_#'\"/", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None, database=None)
@given(
    PLAIN_TEXT,
    st.lists(st.sampled_from([*LINE_PARTS, b"R", b"E:", b"-a", b"#", b"'"]), max_size=60),
    st.lists(st.integers(1, 12), min_size=1, max_size=8),
    st.booleans(),
    st.integers(0, 70),
    st.integers(0, 70),
)
def test_a_plain_literal_finds_what_re2_finds_without_loading_it(
    pattern: str, parts: list[bytes], cuts: list[int], exclude: bool, pos: int, endpos: int
) -> None:
    # A literal monitor (the common case) is searched with bytes.find, so a supervisor need not
    # map RE2 (issue 43: ~2.3 MiB of each). It must answer exactly as RE2 does: every search,
    # at every pos/endpos, on invalid UTF-8 and control bytes, line by line and chunked.
    p = compile_pattern(pattern)
    assert type(p.line).__name__ == "Literal" and p.chunk is p.line
    assert p.literals == (pattern.encode(),) and p.prefix_literal
    data = b"".join(parts)
    ref = re2.compile(pattern.encode())
    for rx in (p.line, p.chunk):
        got, want = rx.search(data, pos, endpos), ref.search(data, pos, endpos)
        assert (got is None) == (want is None), (pattern, data, pos, endpos)
        if got is not None:
            assert (got.start(), got.end()) == (want.start(), want.end())
    pieces, at, i = [], 0, 0
    while at < len(data):
        pieces.append(data[at : at + cuts[i % len(cuts)]])
        at += cuts[i % len(cuts)]
        i += 1
    got_lines, _ = scan_pieces(pattern, pieces, exclude=exclude)
    assert [(m.start, m.end) for m in got_lines] == naive(pattern, data, exclude)


@pytest.mark.parametrize("pattern", ["a.b", "ERR(", r"\d", "a{2}", "x|y", "é", "^ERROR", "a\tb"])
def test_a_pattern_with_anything_but_plain_characters_stays_on_re2(pattern: str) -> None:
    try:
        p = compile_pattern(pattern)
    except InvalidInput:
        return  # refused by RE2 itself, as before
    assert type(p.line).__name__ != "Literal"


@settings(max_examples=300, deadline=None, database=None)
@given(_patterns(), st.lists(TEXT, min_size=1, max_size=6), st.integers(0, 30), st.integers(0, 30))
def test_a_deferred_pattern_answers_as_re2_and_compiles_only_for_a_candidate(
    pattern: str, texts: list[bytes], pos: int, endpos: int
) -> None:
    # Issue 43: a supervisor's regex monitor compiles (and loads) RE2 at the first text that
    # holds one of the literals every match contains; before that it answers "no match"
    # without RE2. Every answer, before and after the compile, is RE2's own.
    eager, lazy = compile_pattern(pattern), compile_pattern(pattern, deferred=True)
    assert lazy.literals == eager.literals
    assert (lazy.chunk is None) == (eager.chunk is None)
    if type(lazy.line).__name__ == "Literal":
        return  # a plain literal never loads RE2 (test_a_plain_literal_finds_what_re2_finds...)
    for text in texts:
        for mine, ref in ((lazy.line, eager.line), (lazy.chunk, eager.chunk)):
            if mine is None:
                continue
            was_loaded = mine.loaded
            got, want = mine.search(text, pos, endpos), ref.search(text, pos, endpos)
            assert (got is None) == (want is None), (pattern, text, pos, endpos)
            if got is not None:
                assert (got.start(), got.end()) == (want.start(), want.end())
            window = text[pos:endpos]
            candidate = lazy.literals is None or any(lit in window for lit in lazy.literals)
            assert mine.loaded == (was_loaded or candidate), (pattern, text, pos, endpos)


def test_a_deferred_pattern_is_not_checked_until_a_candidate() -> None:
    # What deferring gives up: a bad pattern is only refused when a candidate compiles it, so
    # only patterns compile_pattern already accepted may be deferred (a run's monitors, checked
    # before the run starts: tests/test_monitors.py::test_invalid_regex_is_one_clear_error).
    p = compile_pattern("ERROR a++", deferred=True)  # RE2 refuses a possessive a++
    assert p.line.search(b"all well") is None
    with pytest.raises(InvalidInput, match="invalid monitor regex"):
        p.line.search(b"ERROR here")


PATTERN_CHARS = st.text(alphabet="\\ACzm-(?):sixaA _#'\"`~é\t.[", max_size=12)


@settings(max_examples=500, deadline=None, database=None)
@given(st.one_of(PATTERN_CHARS, _patterns(), st.text(max_size=8)))
def test_the_supervisors_checks_of_a_pattern_answer_as_the_regexes_they_replace(
    pattern: str,
) -> None:
    # A supervisor decides "plain literal" and "matched line by line" without Python's `re`
    # (it brings enum: issue 43 item 3); the answers are those of the regexes used before.
    import re

    unsafe = re.compile(r"\\[ACz]|\(\?[a-zA-Z]*-[a-zA-Z]*m")
    plain = re.compile(r"[A-Za-z0-9 _:;,!\"#%&'<=>@/~`-]+")
    assert chunk_unsafe(pattern) == bool(unsafe.search(pattern)), pattern
    assert is_plain(pattern) == bool(plain.fullmatch(pattern)), pattern
