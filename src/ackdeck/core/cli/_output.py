"""Shared output helpers for CLI handlers."""

from __future__ import annotations

import errno
import os
import sys

from ackdeck.core.base.byteio import write_all

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any


def say(*parts: object, file: Any = None, flush: bool = False) -> None:
    """print() for text people read (reports, errors, traces, hook text): every control or
    escape character in it, a producer's or a file name's, is shown escaped (`text.safe`), so
    a line cannot set the terminal's title or clear its screen, and a line longer than
    `text.LINE_CHARS` is cut with a marker (a field from a file is no 50 MB row). Newlines and
    tabs stay."""
    from ackdeck.core.base.text import safe

    print(safe(" ".join(str(p) for p in parts), keep="\t\n"), file=file, flush=flush)


def stdout_fd() -> int:
    """stdout's descriptor, or -1 when it has none (closed, a stand-in): never a terminal."""
    try:
        return sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return -1


def for_terminal(data: bytes, fd: int) -> bytes:
    """Lines a program reads exactly (`room read`, `output`) as a person at a terminal sees
    them: when `fd` is a terminal, each line's control and escape characters are shown
    escaped; into a pipe or a file the bytes stay exact."""
    if not os.isatty(fd):
        return data
    from ackdeck.core.base.text import display, safe

    # Never cut: these are the lines a read hands over (and may ack), not a report about them.
    return safe(display(data), keep="\t\n", limit=None).encode("utf-8")


def json_text(value: Any) -> str:
    """`value` as the CLI's JSON: UTF-8 kept as is, but every character a terminal would obey
    written as a `\\uXXXX` escape (json.dumps escapes C0 already; DEL, C1 and the bidi
    controls it leaves raw). The same JSON value, safe on a person's terminal."""
    # Here: only --json and hook replies write JSON, not a plain push or read. jsontext, not
    # json: a hook's reply is on the per-turn path, and json's import costs more than it.
    from ackdeck.core.base.jsontext import dumps
    from ackdeck.core.base.text import json_safe

    return json_safe(dumps(value, ensure_ascii=False))


def emit_json(value: Any) -> None:
    emit_text(json_text(value) + "\n")


class JsonParts:
    """One JSON object written in parts: a door streams the bulk first (ack-all's lines, so
    only what was written is removed) and the rest once the operation is done. It knows the
    object's shape (the result's declared keys): each part is the text of some of them, and
    `end` checks that every key was written exactly once. The caller writes the texts, so the
    I/O stays where its errors are handled. The encoding is `json_text`'s."""

    def __init__(self, shape: Iterable[str]) -> None:
        self._shape = list(shape)
        self._written: list[str] = []

    def part(self, values: Mapping[str, Any]) -> str:
        from ackdeck.core.base.jsontext import dumps

        pairs = []
        for key, value in values.items():
            if key not in self._shape or key in self._written:
                raise ValueError(f"{key!r} is not a key of this object, or written twice")
            self._written.append(key)
            pairs.append(f"{dumps(key)}: {json_text(value)}")
        first = len(self._written) == len(pairs)
        return ("{" if first else ", ") + ", ".join(pairs)

    def end(self) -> str:
        missing = [k for k in self._shape if k not in self._written]
        if missing:
            raise ValueError(f"the object lacks {', '.join(missing)}")
        return "}\n"

    def abort(self) -> str:
        """Close an object the operation could not finish (an error shape follows it), so
        each document on stdout stays whole."""
        return "}\n"


def emit_text(text: str) -> None:
    """Write `text` to stdout completely, or raise (OSError) saying why not."""
    out = sys.stdout
    if out is None:  # started with stdout closed (`>&-`) and not through main
        raise OSError(errno.EBADF, "stdout is closed")
    try:
        fd = out.fileno()
    except (OSError, ValueError, AttributeError):
        # A stand-in without a descriptor (a capture, main's closed-stdout stand-in).
        out.write(text)
        out.flush()
        return
    out.flush()
    # os.write on the descriptor until done, not sys.stdout.write: a BufferedWriter that hits
    # EPIPE after a partial write returns the partial count and raises nothing, so `ack --all
    # --json | head -c 100` exited 0 with most of its report lost. A broken pipe surfaces
    # here, inside main's handler.
    write_all(fd, text.encode(out.encoding or "utf-8", out.errors or "strict"))


def timeout_arg(value: str) -> float:
    """argparse `type=` for --timeout: core's one rule. Its InvalidInput is not an error
    argparse catches, so main reports it as the service does (same kind, same message)."""
    from ackdeck.core.base.timeouts import parse_timeout

    return parse_timeout(value)


def report(done: str, write: Callable[[], object]) -> None:
    """Write the report of an operation that already happened (`done`: "pushed 1 line to
    r.txt"). If it cannot be written, the error says the operation was done, so a caller that
    retries on exit 1 does not do it twice."""
    from ackdeck.core.errors import ReportLost

    try:
        write()
    except (OSError, ValueError) as exc:
        _quiet_stdout()
        raise ReportLost(done, exc) from None


def _quiet_stdout() -> None:
    """Point a failed stdout at /dev/null, so the interpreter's final flush of what is still
    buffered cannot print a second error about the same failure."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return  # a closed stand-in (`>&-`): nothing buffered
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def on_a_terminal() -> bool:
    """Is stdout a terminal (a person typed the command)? False when it is closed or gone."""
    try:
        return sys.stdout is not None and sys.stdout.isatty()
    except (OSError, ValueError, AttributeError):
        return False
