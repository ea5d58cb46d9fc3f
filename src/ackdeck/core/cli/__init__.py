"""The `ackdeck` command: a thin adapter over core. Each subcommand group lives in its own module
with a `register(subparsers)` function; handlers return an exit code.

Start-up time matters (hooks and producer scripts run ackdeck on every turn), so `main` imports
and builds only the parser of the command named on the command line; `--help`, no command or
an unknown one build them all. The per-turn commands in their plain forms (hooks and producer
scripts write them on every turn) build no parser at all: `_fast.py` parses them without
argparse, and hands anything else to argparse (`_parsers.py`, which builds the parser and
holds the built-in commands' table).

Commands from other packages (the dashboard's `tui` and `demo`) are entry points in the group
`ackdeck.commands`: the entry point's name is the command, its value a function that adds that
one command to the subparsers. core never imports them itself, so it never depends on them.
"""

from __future__ import annotations

import _thread
import os
import sys

from ackdeck.core.errors import AckdeckError, NotDelivered, ReportLost

# On the hot path (tests/test_layering.py): typing is for type checkers only, and argparse
# (_parsers.py) is loaded only when a parser is built: the per-turn commands are parsed
# without it (_fast.py). collections.abc and importlib too (the push path,
# tests/test_push_path.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any, NoReturn

    from ackdeck.core.cli._fast import Args


def _command_path(argv: Sequence[str]) -> list[str] | None:
    """The command word and the next word after it (the subcommand, for a command group), or
    None when the parser must be built whole: help asked for anywhere, or no command word."""
    args = list(argv)
    if "-h" in args or "--help" in args:
        return None
    command = _command_of(args)
    if command is None or command not in args:
        return None
    rest = iter(args[args.index(command) + 1 :])
    for arg in rest:
        if arg == "--":
            break
        if arg in _GLOBAL_WITH_VALUE:
            next(rest, None)  # `room --home D read`: D is not the subcommand
        elif not arg.startswith("-"):
            return [command, arg]
    return [command]


_GLOBAL_WITH_VALUE = ("--home",)  # global options that take a value (the next word)


def _command_of(argv: Sequence[str]) -> str | None:
    """The command word: the first argument that is neither a global option nor its value."""
    it = iter(argv)
    for arg in it:
        if arg in _GLOBAL_WITH_VALUE:
            next(it, None)
        elif arg == "--":
            return next(it, None)
        elif not arg.startswith("-"):
            return arg
    return None


def hoist_global_options(argv: Sequence[str]) -> list[str]:
    """`ackdeck ps --home D` as `ackdeck --home D ps`, and `ackdeck --json ps` as `ackdeck ps
    --json`: the global options may stand before or after the command (up to `--`, after
    which the words belong to the command `run` starts).

    A rewrite of the words rather than `--home` declared on every command's parser: each
    declared argument costs every per-turn command start-up time. It parses as argparse
    would: a word starting with `-` is an option there too, never a value (only `--home D`
    takes the next word, as it does at the front). Repeated, the last `--home` wins, as a
    later option does. `--json` before the command goes right after the command words, so a
    command without --json refuses it as an unknown option.
    """
    words = list(argv)
    end = words.index("--") if "--" in words else len(words)
    homes: list[str] = []
    rest: list[str] = []
    i = 0
    while i < end:
        word = words[i]
        if word == "--home" and i + 1 < end:
            homes += words[i : i + 2]
            i += 2
            continue
        if word.startswith("--home="):
            homes.append(word)
        else:
            rest.append(word)
        i += 1
    rest += words[end:]
    command = _command_of(rest)
    if command is not None and command in rest and "--json" in rest[: rest.index(command)]:
        first = rest.index("--json")
        rest.pop(first)
        path = _command_path(rest) or [command]
        at = rest.index(path[-1], rest.index(command)) + 1
        rest.insert(at, "--json")
    return homes + rest


# The session rule, one for every command that acts as a session (README "Sessions").
DEFAULT_SESSION = "default"
SESSION_HELP = "default: env ACKDECK_SESSION, else 'default'"


def session_of(given: str | None) -> str:
    """The session a command acts as: --session, else $ACKDECK_SESSION, else `default`. An
    empty --session is given (and refused by the command as an invalid name), never replaced."""
    if given is not None:
        return given
    return os.environ.get("ACKDECK_SESSION") or DEFAULT_SESSION


class ClosedStream:
    """sys.stdout or sys.stderr when the command started with that descriptor closed (`>&-`):
    Python then sets it to None and print() silently writes nothing, so a command would exit
    0 having reported nothing. Every write here fails as a closed descriptor does, so a lost
    report takes the same error path as a full disk. (Opening /dev/null onto the descriptor
    instead would make writes "succeed", and a read would then commit a receipt.)"""

    def __init__(self, name: str) -> None:
        self.name = name

    def write(self, _text: str) -> int:
        import errno

        raise OSError(errno.EBADF, f"{self.name} is closed")

    def fileno(self) -> int:
        import errno

        raise OSError(errno.EBADF, f"{self.name} is closed")

    def flush(self) -> None:
        pass  # nothing is ever buffered


def _closed_streams_fail() -> None:
    if sys.stdout is None:
        sys.stdout = ClosedStream("stdout")
    if sys.stderr is None:
        sys.stderr = ClosedStream("stderr")


def _json_asked(argv: Sequence[str]) -> bool:
    """`--json` among ackdeck's own arguments (not in a command after `--`)."""
    return "--json" in argv[: argv.index("--")] if "--" in argv else "--json" in argv


# How many new objects the collector's youngest generation waits for while a per-turn
# command runs (Python's default: 700). Loading the ~50 modules of a read or a hook makes some
# 5,000 objects (functions, classes, their dicts) that all live until the process exits: the
# default made 7 young and 1 older collection walk them, ~1.3 ms of a read (a tenth of
# what a read adds to a bare interpreter), and none of them found garbage. A high threshold
# rather than gc.disable(): a command that waits (`room push --wait-ack`, a Stop hook waiting
# for the transcript) still collects, every TURN_GC_THRESHOLD objects, so its memory stays
# bounded. Every other command (the MCP server, a run's supervisor, the dashboard) keeps
# Python's thresholds, and an in-process caller gets them back when main() returns.
TURN_GC_THRESHOLD = 50_000

# The in-process calls of main() running now, and the caller's thresholds the first of them
# found: calls that overlap (threads) share them, and the last to return gives them back (each
# restoring what it found would leave TURN_GC_THRESHOLD behind when an earlier call returns
# first). _thread is built in and loaded by every interpreter at start-up.
_CALLS: list[tuple[int, ...]] = []
_CALLS_LOCK = _thread.allocate_lock()


def main(argv: Sequence[str] | None = None) -> int:
    """The command line `argv` (default: sys.argv's), run in this process; its exit code."""
    import gc  # built in: no file to load

    with _CALLS_LOCK:
        _CALLS.append(_CALLS[0] if _CALLS else gc.get_threshold())
        thresholds = _CALLS[0]
    try:
        return _main(argv, thresholds)
    finally:
        with _CALLS_LOCK:
            _CALLS.pop()
            if not _CALLS:
                gc.set_threshold(*thresholds)  # an in-process caller's collector as it was


def _main(argv: Sequence[str] | None, thresholds: tuple[int, ...]) -> int:
    import gc

    if thresholds[0]:  # 0: automatic collection is off, and stays off
        gc.set_threshold(max(thresholds[0], TURN_GC_THRESHOLD), *thresholds[1:])
    argv = hoist_global_options(sys.argv[1:] if argv is None else argv)
    _closed_streams_fail()
    from ackdeck.core.cli._fast import parse_turn

    args: Any = parse_turn(argv)  # a per-turn command in a plain form, parsed without argparse
    if args is None:  # anything else, and any error, help or doubt: argparse says it
        gc.set_threshold(*thresholds)  # not a per-turn command: Python's own collection
        from ackdeck.core.cli._parsers import build_parser

        try:
            args = build_parser(argv).parse_args(argv)
        except AckdeckError as exc:
            # UsageError, or a value core's own rule refused (--timeout: InvalidInput with the
            # message MCP gives for the same value).
            from ackdeck.core.cli._fast import Args

            _fail(Args(json=_json_asked(argv)), exc)
            return exc.exit_code
    try:
        code = args.handler(args)
    except ReportLost as exc:
        _error_line(f"ackdeck: error: {exc}")  # no JSON error: stdout is what failed
        return 1
    except AckdeckError as exc:
        _fail(args, exc)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        # Anywhere core did not name it (a room operation says which and what it left):
        # one line, not a traceback that needs memory of its own.
        _error_line("ackdeck: error: out of memory; the command stopped where it was")
        return 1
    except BrokenPipeError:
        # The reader went away (`| head`, `>&-`). Reads never commit what was not written; a
        # command that already acted (a push, a JSON ack) could not report it: say so.
        _error_line("ackdeck: error: output closed before the result was written (broken pipe)")
        return 1
    except OSError as exc:
        # File-system faults core did not anticipate (read-only home, full disk, ...).
        _fail(args, exc)
        return 1
    return int(code or 0)


def _fail(args: argparse.Namespace | Args, exc: AckdeckError | OSError) -> None:
    """One line on stderr; with --json also the error shape on stdout (`{"error": KIND,
    "message": LINE}`, what MCP returns as structured content for the same error)."""
    from ackdeck.core.cli._output import emit_json
    from ackdeck.core.service.results import error_json

    shape = error_json(exc)
    _error_line(f"ackdeck: error: {shape['message']}")
    if getattr(args, "json", False) and not isinstance(exc, NotDelivered):
        try:
            emit_json(shape)
        except (OSError, ValueError):
            # stdout is gone: the line on stderr and the exit code say it. Point it at
            # /dev/null so the interpreter's final flush cannot print a second error.
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            except OSError:
                pass


def _error_line(line: str) -> None:
    """One line on stderr, or nothing when stderr is gone: never on stdout (print falls back to
    stdout when stderr was closed at start) and never a second error about the first."""
    if sys.stderr is None:
        return  # the exit code is all that is left to say it
    from ackdeck.core.cli._output import say  # a room's or a file's name may hold escapes

    try:
        say(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def run() -> None:
    """The `ackdeck` console script: main() in a process of its own, which ends here."""
    import gc

    # Not main(): its collector's thresholds, given back, would start a collection of
    # everything a per-turn command loaded on the way out (TURN_GC_THRESHOLD).
    exit_now(_main(None, gc.get_threshold()))


def exit_now(code: int) -> NoReturn:
    """Exit with `code` without tearing the interpreter down.

    Freeing every module and object one by one at exit costs a per-turn command ~7 ms, a fifth
    of `python -c pass`, and nothing a finished command needs: its state files are written
    (os-level, never through a buffered file left open) and the kernel closes its descriptors
    and releases its locks. What a normal exit does that matters still happens, in the same
    order: waiting for other non-daemon threads (while one is left, this takes the normal
    exit), atexit handlers (weakref finalizers among them), flushing stdout and stderr (a
    failure there also takes the normal exit, which reports it as Python does).

    The cyclic collector is off on that way out: a collection there would walk memory the
    kernel is about to take back whole.
    """
    threading = sys.modules.get("threading")
    if threading is not None and any(
        t is not threading.main_thread() and not t.daemon and t.is_alive()
        for t in threading.enumerate()
    ):
        sys.exit(code)
    import atexit
    import gc

    gc.disable()
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)
