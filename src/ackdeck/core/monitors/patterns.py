"""User patterns (monitor, exclude, output filter): compiled once, for RE2.

Patterns come from agents and owners, so they run on RE2 (`google-re2`), which matches in time
linear in the text whatever the pattern: `(a+)+$` cannot pin a supervisor. RE2's syntax is
Perl's minus what needs backtracking; a pattern that uses such a construct (backreference,
lookaround, atomic group, possessive quantifier, ...) is refused when it is compiled, with one
line naming the construct, before anything starts.

A `Pattern` matches the *cleaned* bytes of one line as UTF-8 text. It also holds what the chunk
scanner (ackdeck.core.monitors.monitors) needs: the same pattern in multi-line mode, for searching
many complete lines in one buffer, and the literals every match contains
(core.monitors.literals)."""

from __future__ import annotations

from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import InvalidInput
from ackdeck.core.monitors.literals import literal_prefix, required_literals

# On the hot path (tests/test_layering.py): typing and dataclasses are for type
# checkers only, or each monitored run's supervisor would carry them (dataclasses pulls in
# inspect, ast and dis: ~1.3 MiB). Python's `re` too (it brings `enum`: ~0.6 MiB of each
# supervisor): the two checks a supervisor makes on its own patterns are plain string tests
# below, and `re` is imported only to name what RE2 refused.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Buf = bytes | bytearray | memoryview

# Assertions whose meaning differs between "the line alone" and "the line inside a buffer of
# lines": text anchors (\A, \z) and switching multi-line mode off. With them a buffer search
# could miss a true match, so such patterns are only ever matched line by line. So is \C (any
# byte, even a newline, whatever never_nl says), whose matches could run on to the buffer's
# end. Over-matching (an escaped backslash before A) only costs speed.
_UNSAFE_ESCAPES = ("\\A", "\\C", "\\z")
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def chunk_unsafe(pattern: str) -> bool:
    r"""What the regex `\\[ACz]|\(\?[a-zA-Z]*-[a-zA-Z]*m` finds (tests/test_patterns.py
    compares them): one of those escapes, or a flag group that turns multi-line mode off
    (`(?-m)`, `(?s-im:`: an `m` among the letters after its `-`)."""
    if any(e in pattern for e in _UNSAFE_ESCAPES):
        return True
    at = pattern.find("(?")
    while at >= 0:
        i = at + 2
        while i < len(pattern) and pattern[i] in _ASCII_LETTERS:
            i += 1
        if i < len(pattern) and pattern[i] == "-":
            j = i + 1
            while j < len(pattern) and pattern[j] in _ASCII_LETTERS:
                if pattern[j] == "m":
                    return True
                j += 1
        at = pattern.find("(?", at + 1)
    return False


# RE2's parse errors that name a construct it deliberately lacks, mapped to a name a user knows.
_PERL_OPERATORS = {
    "(?=": "lookahead (?=...)",
    "(?!": "negative lookahead (?!...)",
    "(?<=": "lookbehind (?<=...)",
    "(?<!": "negative lookbehind (?<!...)",
    "(?>": "atomic group (?>...)",
    "(?#": "comment group (?#...)",
    "(?|": "branch reset group (?|...)",
    "(?R": "recursion (?R)",
    "(?&": "subroutine call (?&name)",
}
_ESCAPES = {
    "\\Z": "\\Z (RE2 spells the end of text \\z)",
    "\\G": "\\G (end of previous match)",
    "\\K": "\\K (keep out)",
    "\\R": "\\R (any line break)",
    "\\X": "\\X (grapheme cluster)",
}


def _options(re2: Any, *, chunk: bool = False) -> Any:
    opts = re2.Options()
    opts.log_errors = False  # RE2 would print its own copy of every error on stderr
    opts.never_capture = True  # groups are never read back: skip submatch tracking
    # In a buffer of lines no match may cross a newline (a line alone never holds one), so a
    # greedy `[^x]*` stops at its line's end instead of running on through the buffer.
    opts.never_nl = chunk
    return opts


def _unsupported(pattern: str, message: str) -> str | None:
    """The name of the non-RE2 construct behind an RE2 parse error, if it is one."""
    import re  # only to name what RE2 refused (see the top)

    kind, _, arg = message.partition(": ")
    if kind == "invalid escape sequence":
        if re.fullmatch(r"\\[1-9]", arg):
            return f"backreference {arg}"
        if arg in ("\\g", "\\k"):
            return f"backreference {arg}<name>"
        return _ESCAPES.get(arg)
    if kind == "invalid perl operator":
        if arg == "(?P":  # RE2 knows (?P<name>...) only
            if "(?P=" in pattern:
                return "named backreference (?P=name)"
            return "recursion (?P>name)" if "(?P>" in pattern else None
        if arg.startswith("(?") and len(arg) == 3 and arg[2].isalpha():
            return f"flag (?{arg[2]}) (RE2 has flags i, m, s and U)"
        return _PERL_OPERATORS.get(arg)
    if kind == "bad repetition operator" and len(arg) == 2 and arg[1] == "+":
        return f"possessive quantifier {arg}"
    return None


def _compile(source: bytes, what: str, pattern: str, *, chunk: bool = False) -> Any:
    import re2  # here, not at the top: processes that never compile a pattern skip loading it

    try:
        return re2.compile(source, _options(re2, chunk=chunk))
    except re2.error as exc:
        raw = exc.args[0] if exc.args else ""
        message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        message = " ".join(message.split())  # one line, whatever RE2 quoted
        construct = _unsupported(pattern, message)
        if construct is not None:
            message = f"{construct} is not supported (ackdeck uses RE2 syntax: https://github.com/google/re2/wiki/Syntax)"
        raise InvalidInput(f"invalid {what} regex {pattern!r}: {message}") from None


class Pattern(Struct):
    """A user regex compiled for RE2, with what the chunk scanner derives from it.

    - `line`: matches the cleaned bytes of one line (`^`/`$` are the line's ends).
    - `chunk`: the same pattern in multi-line mode, for a buffer of complete lines; on a line
      inside such a buffer it answers exactly as `line` does on the line alone. None when the
      pattern uses text anchors (see chunk_unsafe).
    - `literals`: byte strings such that every match contains one of them, for the scanner to
      find candidates with; None when there are none.
    - `prefix_literal`: the pattern's only literal is also how every match starts (`ERROR`,
      `ERROR: .*failed`). RE2 finds such a literal by itself, faster than memmem does, so the
      scanner only searches for it separately when a faster search (strstr) is at hand.
    """

    text: str
    line: Any
    chunk: Any | None
    literals: tuple[bytes, ...] | None
    prefix_literal: bool = False

    def search(self, data: Buf, pos: int = 0, endpos: int | None = None) -> Any:
        """The first match in data[pos:endpos] of one line's text, or None."""
        return self.line.search(data, pos, len(data) if endpos is None else endpos)


# A pattern of these characters only is a plain literal: none of them means anything else to
# RE2 (no `\\ . ^ $ | ? * + ( ) [ ] { }`), outside a character class or with any flag it
# takes, and each is one ASCII byte, which in UTF-8 text only ever encodes itself.
_PLAIN_CHARS = _ASCII_LETTERS | frozenset("0123456789 _:;,!\"#%&'<=>@/~`-")


def is_plain(pattern: str) -> bool:
    """Whether `pattern` is a plain literal: `[A-Za-z0-9 _:;,!"#%&'<=>@/~`-]+` in full."""
    return pattern != "" and all(c in _PLAIN_CHARS for c in pattern)


class Literal:
    """A plain literal pattern (`ERROR`, `build failed`), searched with `bytes.find`: what RE2
    finds for it (linear too), without loading RE2 (`_re2` and libstdc++: ~2.3 MiB of every
    supervisor whose monitors are literals, the common case). Answers `search` as an RE2
    pattern does, with a match that knows its `start()` and `end()`."""

    __slots__ = ("needle",)

    def __init__(self, needle: bytes) -> None:
        self.needle = needle

    def search(self, data: Buf, pos: int = 0, endpos: int | None = None) -> LiteralMatch | None:
        end = len(data) if endpos is None else endpos
        if isinstance(data, memoryview):
            data = data.tobytes()
        at = data.find(self.needle, pos, end)
        return None if at < 0 else LiteralMatch(at, at + len(self.needle))


class LiteralMatch:
    __slots__ = ("_start", "_end")

    def __init__(self, start: int, end: int) -> None:
        self._start, self._end = start, end

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


class Deferred:
    """An RE2 regex compiled at its first search that could find something: a supervisor
    whose output never held a line that could match its regex monitor does not load RE2
    (`_re2` and libstdc++: ~2.3 MiB of its memory; issue 43).

    "Could find something" is decided without RE2: every match contains one of `literals`
    (core/monitors/literals.py, sound by construction), so a text lacking them all holds no
    match and the answer is None. A text holding one (a candidate) compiles the regex, and
    from then on RE2 answers every search, exactly as the eager regex would. Without literals
    every text is a candidate. Only for patterns compile_pattern already accepted (a run's
    monitors, checked before the run started): a bad one would only be refused at its first
    candidate."""

    __slots__ = ("source", "literals", "chunk", "what", "pattern", "_rx")

    def __init__(
        self,
        source: bytes,
        literals: tuple[bytes, ...] | None,
        what: str,
        pattern: str,
        *,
        chunk: bool = False,
    ) -> None:
        self.source, self.literals, self.chunk = source, literals, chunk
        self.what, self.pattern = what, pattern
        self._rx: Any = None

    @property
    def loaded(self) -> bool:
        return self._rx is not None

    def search(self, data: Buf, pos: int = 0, endpos: int | None = None) -> Any:
        end = len(data) if endpos is None else endpos
        rx = self._rx
        if rx is None:
            if not could_match(self.literals, data, pos, end):
                return None
            rx = self._rx = _compile(self.source, self.what, self.pattern, chunk=self.chunk)
        return rx.search(data, pos, end)


def could_match(literals: tuple[bytes, ...] | None, data: Buf, pos: int, endpos: int) -> bool:
    """Whether data[pos:endpos] holds one of the literals every match contains (None: there
    are none to rule a text out by, so any text could match)."""
    if literals is None:
        return True
    if isinstance(data, memoryview):
        data, pos, endpos = data[pos:endpos].tobytes(), 0, endpos - pos
    return any(data.find(lit, pos, endpos) >= 0 for lit in literals)


def compile_pattern(pattern: str, what: str = "monitor", *, deferred: bool = False) -> Pattern:
    """Compile a user regex for cleaned line bytes; a bad one is a one-line InvalidInput.

    `deferred`: RE2 compiles it at its first search of a text that could match (Deferred),
    not now; only for a pattern compile_pattern already accepted (a run's monitors)."""
    if not isinstance(pattern, str) or pattern == "":
        raise InvalidInput(f"invalid {what} regex: it must not be empty")
    source = pattern.encode("utf-8", "surrogateescape")
    if is_plain(pattern):
        plain = Literal(source)
        # Its only literal, and how every match starts; the line and chunk searches are one.
        return Pattern(pattern, plain, plain, (source,), True)
    literals = required_literals(pattern)
    chunk_safe = not chunk_unsafe(pattern)
    line: Any
    chunk: Any = None
    if deferred:
        line = Deferred(source, literals, what, pattern)
        if chunk_safe:
            chunk = Deferred(b"(?m)" + source, literals, what, pattern, chunk=True)
    else:
        line = _compile(source, what, pattern)
        if chunk_safe:
            chunk = _compile(b"(?m)" + source, what, pattern, chunk=True)
    prefix = literals is not None and len(literals) == 1 and literal_prefix(pattern) == literals[0]
    return Pattern(pattern, line, chunk, literals, prefix)
