"""Did-you-mean: the known names closest to a mistyped one, by edit distance (as git and kubectl
suggest commands). Used by the CLI for commands and options and by the missing-room note for
files beside the one named. Imported only when something was not found: never on the path of
a command that works."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


def distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`: the
    optimal-string-alignment distance, so `inbxo` is one edit from `inbox`, as a typo is."""
    if a == b:
        return 0
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def _limit(word: str) -> int:
    """How many edits still count as a typo of `word`: one in a short word, about a third of a
    longer one (`ps` must not suggest `kill`; `--sesion` should find `--session`)."""
    return max(1, len(word) // 3)


def closest(word: str, names: Iterable[str]) -> list[str]:
    """The names nearest to `word` within a typo's reach, best first (ties in the order given),
    at most three. A name `word` is the start of counts as one edit away (`stat` -> `status`)."""
    limit = _limit(word)
    scored: list[tuple[int, int, str]] = []
    for order, name in enumerate(dict.fromkeys(names)):
        if name == word or abs(len(name) - len(word)) > limit and not name.startswith(word):
            continue
        d = 1 if len(word) >= 2 and name.startswith(word) else distance(word, name)
        if d <= limit:
            scored.append((d, order, name))
    scored.sort()
    best = [name for d, _, name in scored if d == scored[0][0]] if scored else []
    return best[:3]


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """`"; did you mean push?"` (or `"...mean a or b?"`), or "" when nothing is close."""
    found = closest(word, names)
    if not found:
        return ""
    return f"; did you mean {' or '.join(found)}?"
