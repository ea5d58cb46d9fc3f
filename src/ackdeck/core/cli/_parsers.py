"""The argparse side of the `ackdeck` command: ackdeck's parser class (one-line errors, exit 1,
"did you mean"), its formatter, `--version`, and the one custom action (`Once`).

Apart from `ackdeck.core.cli` itself so that the per-turn commands, which `_fast.py` parses
without argparse, import none of it (argparse with gettext and locale costs a turn ~3 ms,
a quarter of a bare interpreter); it is loaded for every other command, for --help and for any
argument the fast path does not take.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ackdeck.core.errors import UsageError

if TYPE_CHECKING:
    from ackdeck.core.cli import _Narrowing


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter without `import shutil` (zlib, bz2, lzma): argparse builds one per
    `add_argument` to check metavars, and every hook invocation would pay for it."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = _columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal, else 80."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
        return 80


class _Parser(argparse.ArgumentParser):
    """argparse with ackdeck's error contract: one line on stderr and exit 1.

    argparse's default (a usage block and exit 2) would break scripts that read one line, and
    exit 2 means "a wake was delivered" to `wakes drain --hook`: a mistyped Stop hook must not
    look like a wake.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        self.narrowing: _Narrowing | None = None  # set on the parsers of the command words

    def add_subparsers(self, **kwargs: Any) -> Any:
        action = super().add_subparsers(**kwargs)
        narrowing = self.narrowing
        if narrowing is None or narrowing.depth >= len(narrowing.path):
            return action
        from ackdeck.core.cli import _NarrowedSubparsers

        return _NarrowedSubparsers(action, narrowing)

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("ackdeck").strip()
        prefix = f"{where}: " if where else ""
        raise UsageError(f"{prefix}{message} (see --help)")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A mistyped command or choice names the closest ones (`rooom`: did you mean room?)."""
        if action.choices is None or value in action.choices:
            return
        from ackdeck.core.base.suggest import did_you_mean  # only on this error path

        choices = [str(c) for c in action.choices]
        raise argparse.ArgumentError(
            action,
            f"invalid choice: {value!r}{did_you_mean(str(value), choices)} "
            f"(choose from {', '.join(map(repr, choices))})",
        )

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse, and each argument no parser knew remembers the innermost parser it
        reached (a subcommand's), so the error can name that command and its nearest option;
        argparse itself reports them all from the top parser."""
        ns, extras = super().parse_known_args(args, namespace)
        if extras:
            unknown = ns.__dict__.setdefault(_UNKNOWN, {})
            for arg in extras:
                unknown.setdefault(arg, self)
        return ns, extras

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            arg = extras[0]
            parser = vars(ns).get(_UNKNOWN, {}).get(arg, self)
            parser.error(_unknown_argument(parser, arg))
        vars(ns).pop(_UNKNOWN, None)
        return ns


_UNKNOWN = "_ackdeck_unknown"  # namespace key: unknown argument -> the parser it reached


def _unknown_argument(parser: argparse.ArgumentParser, arg: str) -> str:
    """`unknown option --sesion; did you mean --session?` (or an unexpected word)."""
    from ackdeck.core.base.suggest import did_you_mean  # only on this error path

    if arg.startswith("-") and arg != "-":
        name = arg.split("=", 1)[0]
        options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
        return f"unknown option {name}{did_you_mean(name, options)}"
    return f"unexpected argument {arg!r}"


class _Version(argparse.Action):
    """`--version`: the package metadata's version, read only when asked for (importlib.metadata
    costs every command several milliseconds)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        super().__init__(option_strings, argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: Any, *_args: Any, **_kwargs: Any) -> None:
        from ackdeck.core.version import package_version

        print(f"ackdeck {package_version()}")
        parser.exit()


class Once(argparse.Action):
    """An option that may be given once: a repeat is refused instead of silently replacing the
    first value (`--monitor ERROR --monitor WARN` used to watch only WARN)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, f"_seen_{self.dest}", False):
            hint = " (one monitor per run: combine them, e.g. --monitor 'ERROR|WARN')"
            raise argparse.ArgumentError(
                self, "given twice" + (hint if self.dest == "monitor" else "")
            )
        setattr(namespace, f"_seen_{self.dest}", True)
        setattr(namespace, self.dest, values)
