"""Literals every match of an RE2 pattern must contain (pure, no I/O).

Searching a buffer for a literal is several times faster than running a regex over it, and a
line can only match if it holds one of these literals, so they make an exact candidate filter
for the chunk scanner (every candidate is still checked by the real regex).

This reads RE2 syntax with a small parser of its own, which only has to be *sound*: whatever it
does not fully understand (classes, escapes other than quoted punctuation, quantified items,
case-insensitive flags, `\\Q...\\E`) contributes no literal, so the answer is at worst None
("no filter"), never a literal some match lacks. It is only called on patterns RE2 accepted.
"""

from __future__ import annotations

from ackdeck.core.errors import UnmodelledPattern

MAX_LITERALS = 8


class _Group:
    # A plain class, not a dataclass: a supervisor compiles patterns, and `dataclasses` would
    # cost it inspect, ast and dis.
    __slots__ = ("branches",)

    def __init__(self) -> None:
        self.branches: list[list[_Item]] = [[]]


# An item of a sequence: a literal character (its UTF-8 bytes), a group, or None for anything
# that gives no literal (a class, an escape, an anchor, a flag group, a quantified item).
_Item = bytes | _Group | None


# The pattern uses something this parser does not model soundly: give no literals.
_Unknown = UnmodelledPattern


_QUANT = "*+?"


def _parse(p: str) -> _Group:
    """Parse into nested groups of branches of items; raise _Unknown where unsure."""
    root = _Group()
    stack = [root]
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        seq = stack[-1].branches[-1]
        if c == "\\":
            if i + 1 >= n:
                raise _Unknown
            e = p[i + 1]
            if e == "Q":
                raise _Unknown
            if e.isascii() and not e.isalnum():
                seq.append(e.encode())  # quoted punctuation is itself
                i += 2
            else:
                seq.append(None)
                i = _skip_escape(p, i)
        elif c == "[":
            seq.append(None)
            i = _skip_class(p, i)
        elif c == "(":
            i = _open_group(p, i, stack)
        elif c == ")":
            if len(stack) == 1:
                raise _Unknown
            group = stack.pop()
            stack[-1].branches[-1].append(group)
            i += 1
        elif c == "|":
            stack[-1].branches.append([])
            i += 1
        elif c in _QUANT or c == "{":
            end = _quantifier_end(p, i)
            if end is None:  # a `{` that is not a repetition is a literal; be careful anyway
                seq.append(None)
                i += 1
                continue
            if not seq:
                raise _Unknown
            seq[-1] = None  # a repeated item may match zero or many times: no literal
            i = end
            if i < n and p[i] == "?":  # non-greedy
                i += 1
        elif c in ".^$":
            seq.append(None)
            i += 1
        else:
            seq.append(c.encode("utf-8", "surrogateescape"))
            i += 1
    if len(stack) != 1:
        raise _Unknown
    return root


def _skip_escape(p: str, i: int) -> int:
    """Index past the escape at p[i] (a backslash and a letter or digit)."""
    e = p[i + 1]
    j = i + 2
    if e in "pPx" and j < len(p) and p[j] == "{":
        close = p.find("}", j)
        if close < 0:
            raise _Unknown
        return close + 1
    if e in "pP":
        return j + 1
    if e == "x":
        return j + 2
    if e in "01234567":
        while j < len(p) and j < i + 4 and p[j] in "01234567":
            j += 1
    return j


def _skip_class(p: str, i: int) -> int:
    """Index past the character class starting at p[i] == '['."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":  # a leading ] is literal
        j += 1
    while j < len(p):
        c = p[j]
        if c == "\\":
            j += 2
        elif c == "[" and p.startswith("[:", j):
            close = p.find(":]", j + 2)
            if close < 0:
                raise _Unknown
            j = close + 2
        elif c == "]":
            return j + 1
        else:
            j += 1
    raise _Unknown


def _open_group(p: str, i: int, stack: list[_Group]) -> int:
    """Handle `(`: push a group, or record a flag group; return the index after its opener."""
    if not p.startswith("(?", i):
        stack.append(_Group())
        return i + 1
    j = i + 2
    if p.startswith("P<", j) or p.startswith("<", j):  # named capture
        close = p.find(">", j)
        if close < 0:
            raise _Unknown
        stack.append(_Group())
        return close + 1
    k = j
    while k < len(p) and (p[k].isalpha() or p[k] == "-"):
        k += 1
    flags = p[j:k]
    if "i" in flags:
        raise _Unknown  # case folding: the literal's bytes need not appear as written
    if k < len(p) and p[k] == ":":
        stack.append(_Group())
        return k + 1
    if k < len(p) and p[k] == ")":
        stack[-1].branches[-1].append(None)
        return k + 1
    raise _Unknown


def _quantifier_end(p: str, i: int) -> int | None:
    """Index past the quantifier at p[i], or None when p[i] is a `{` that is no repetition."""
    if p[i] != "{":
        return i + 1
    close = p.find("}", i)
    if close < 0:
        return None
    body = p[i + 1 : close]
    lo, _, hi = body.partition(",")
    if not lo.isdigit() or (hi and not hi.isdigit()):
        return None
    return close + 1


def _required_seq(items: list[_Item]) -> list[bytes] | None:
    """Every item of a sequence is matched once; pick the best requirement any of them gives."""
    best = b""
    run = bytearray()
    alternatives: list[bytes] | None = None
    for item in items:
        if isinstance(item, bytes):
            run += item
            continue
        best = max(best, bytes(run), key=len)
        run = bytearray()
        if alternatives is None and isinstance(item, _Group):
            alternatives = _required_group(item)
    best = max(best, bytes(run), key=len)
    if len(best) >= 3 or (best and alternatives is None):
        return [best]
    return alternatives


def _required_group(group: _Group) -> list[bytes] | None:
    """A group matches one of its branches: each branch must give a requirement."""
    found: list[bytes] = []
    for branch in group.branches:
        got = _required_seq(branch)
        if got is None:
            return None
        found.extend(got)
    return found


def required_literals(pattern: str) -> tuple[bytes, ...] | None:
    """Literal byte strings such that every match of `pattern` contains one of them.

    The longest run of literals the pattern always contains, or, failing that, an alternation
    (also inside a group) whose every branch contains one, e.g. `ERROR|FAIL(ED)?: `. None when
    there is no such set (then the whole regex scans the chunk).
    """
    try:
        found = _required_group(_parse(pattern))
    except _Unknown:
        return None
    if not found or any(not lit for lit in found) or len(found) > MAX_LITERALS:
        return None
    return tuple(sorted(set(found)))


def literal_prefix(pattern: str) -> bytes:
    """The literal text every match of `pattern` starts with (b"" when unsure or none)."""
    try:
        root = _parse(pattern)
    except _Unknown:
        return b""
    if len(root.branches) != 1:
        return b""
    run = bytearray()
    for item in root.branches[0]:
        if not isinstance(item, bytes):
            break
        run += item
    return bytes(run)
