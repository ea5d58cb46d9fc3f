"""Bytes made readable, and faults made one line: the only places ackdeck decodes for display.

Bytes are the truth (rooms and output logs are stored and acked byte-exactly); they are decoded,
with replacement, only to be shown. Every door (CLI, MCP, hooks, notices, dashboard) uses these,
so a line looks the same whichever door shows it.
"""

from __future__ import annotations


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
