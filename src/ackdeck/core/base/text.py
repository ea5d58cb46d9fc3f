"""Bytes made readable, and faults made one line: the only places ackdeck decodes for display.

Bytes are the truth (rooms and output logs are stored and acked byte-exactly); they are decoded,
with replacement, only to be shown. Every door (CLI, MCP, hooks, notices, dashboard) uses these,
so a line looks the same whichever door shows it.
"""

from __future__ import annotations

# `re` is imported where a text needs escaping (rare): results.py, which a run's supervisor
# imports, needs this module, and `re` brings `enum` (~0.6 MiB of each supervisor; issue 43).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

# What a terminal obeys rather than shows: C0 controls (ESC starts a sequence: OSC sets the
# window title, CSI clears the screen; CR overwrites the line; BEL rings), DEL, C1 controls
# (U+009B is an 8-bit CSI, U+009D an OSC, U+0085 a next-line), the Unicode line separators
# and the bidirectional overrides that make a line read as another one (U+202E).
_BIDI = "\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
# Patterns, compiled on first use (re caches them): every command imports this module, and
# most text is printable, which `safe` finds without them (compiling the four cost ~1 ms of
# each per-turn command's start; issue 43).
_UNSAFE = {
    "\t": f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}]",
    "\t\n": f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]",
    "": f"[\x00-\x1f\x7f-\x9f{_BIDI}]",
}

# Each `keep`'s characters, deleted by str.translate (for the printable check in `safe`).
_WITHOUT = {keep: dict.fromkeys(map(ord, keep)) for keep in _UNSAFE}


# What json.dumps(ensure_ascii=False) leaves raw of the above (it escapes C0 itself).
_JSON_RAW = f"[\x7f-\x9f{_BIDI}]"


def _escaped(m: re.Match[str]) -> str:
    o = ord(m.group())
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


# A line of text for people is cut after this many characters, with a marker saying how many
# more there were: a field read from a file (a wake's line, a task's subject, a run's command,
# any string a hand edit made 50 MB) reaches a table row or a one-line message through `safe`,
# and a person's terminal must not receive megabytes for it. JSON output keeps the exact value
# (docs/concepts/decisions.md, "Text for people is bounded, JSON is exact").
LINE_CHARS = 4000


_MARKER_ROOM = 64  # characters kept for the marker: a cut line is `limit` long at most


def _cut(line: str, limit: int) -> str:
    """`line`, or its head and a marker, `limit` characters at most: so a cut line is never
    cut again (`safe` of `safe` is the same text)."""
    if len(line) <= limit:
        return line
    keep = max(0, limit - _MARKER_ROOM)
    return f"{line[:keep]} …[{len(line) - keep:,} more characters not shown]"


def safe(text: str, *, keep: str = "\t", limit: int | None = LINE_CHARS) -> str:
    """`text` safe to print for people: every control or escape character a producer put in
    it is shown escaped (`\\x1b`, `\\u202e`) instead of driving the terminal, and each line
    longer than `limit` characters is cut with a marker (None: never cut, for lines a program
    reads whole). The one place ackdeck makes text safe for a person's eyes (CLI text, trace,
    dashboard, notices, hooks); JSON and MCP structured content carry the exact text. `keep`:
    what stays as it is: a tab (the default), also newlines for several lines ackdeck composed
    ("\\t\\n"), nothing for text typed as keys into a terminal (""), where a tab is a key too."""
    if limit is not None and len(text) > limit:
        # Cut before escaping, so the limit counts the producer's characters, not escapes.
        if "\n" in keep:
            text = "\n".join(_cut(line, limit) for line in text.split("\n"))
        else:
            text = _cut(text, limit)
    if text.isprintable() or (keep and text.translate(_WITHOUT[keep]).isprintable()):
        # The common case, in C: every character escaped here is unprintable, and what `keep`
        # keeps is not escaped (a status's several lines, a tab: `re` is not loaded for them).
        return text
    import re

    return re.compile(_UNSAFE[keep]).sub(_escaped, text)


def json_safe(doc: str) -> str:
    """A JSON document with every character `safe` escapes that JSON itself left raw (DEL, C1,
    bidi controls: only inside strings, JSON's own syntax is ASCII) as a `\\uXXXX` escape: the
    same value for a program, nothing a terminal obeys for a person."""
    if doc.isascii():
        return doc
    import re  # see the top: not for every importer

    return re.compile(_JSON_RAW).sub(lambda m: f"\\u{ord(m.group()):04x}", doc)


def shown(raw: bytes) -> str:
    """`raw` as a person sees it: `display`, then `safe`."""
    return safe(display(raw))


def display(raw: bytes) -> str:
    """`raw` as text for a reader: UTF-8, invalid bytes replaced by U+FFFD."""
    return raw.decode("utf-8", errors="replace")


def display_lines(lines: list[bytes]) -> tuple[list[str], list[int]]:
    """Each line as `display` shows it, and the indexes of the lines that were not valid UTF-8
    (their text is not their exact bytes: a reader that needs those uses a text-mode read)."""
    texts: list[str] = []
    invalid: list[int] = []
    for i, raw in enumerate(lines):
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            texts.append(display(raw))
            invalid.append(i)
    return texts, invalid


def os_error_line(exc: OSError) -> str:
    """An unanticipated OSError (read-only home, full disk, ...) as one line: what, and where."""
    where = f": {exc.filename}" if exc.filename else ""
    return " ".join(f"{exc.strerror or exc}{where}".split()) or "error"


def noun(n: int, word: str) -> str:
    """`word` as it goes with `n`: "line" for 1, "lines" otherwise (a noun that takes -s, or
    -es after s, x, ch and sh)."""
    if n == 1:
        return word
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def counted(n: int, word: str) -> str:
    """`n` and `word` as people write it: "1 line", "2 lines", "1,200 matches" (never
    "line(s)")."""
    return f"{n:,} {noun(n, word)}"


def age_text(seconds: float | None) -> str:
    """An age as people read it: `45s`, `14m05s`, `3h02m`, `2d04h` ("unknown" for None)."""
    if seconds is None:
        return "unknown"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
