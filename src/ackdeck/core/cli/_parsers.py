"""The argparse side of the `ackdeck` command: ackdeck's parser class (one-line errors, exit 1,
"did you mean"), its formatter, `--version`, the one custom action (`Once`), and the parser
of an invocation (`build_parser`: the built-in commands' table, narrowed to the command
words given, and the entry points' commands).

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

from ackdeck.core.cli import _command_of, _command_path
from ackdeck.core.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    Register = Callable[[Any], None]  # takes the subparsers action


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


# ----- the parser of this invocation (moved from ackdeck.core.cli: the per-turn commands,
# which _fast.py parses, never build one) ------------------------------------------------
# Built-in commands -> the module under ackdeck.core.cli that registers them. Each module exposes
# `register(subparsers) -> None`. A command missing here still works (every module is then
# loaded); tests/test_cli_edges.py checks the table against what the modules register.
BUILTIN_COMMANDS = {
    "room": "rooms_cmd",
    "mcp": "agents_cmd",
    "hooks": "agents_cmd",
    "nudge": "agents_cmd",
    "run": "procs_cmd",
    "output": "procs_cmd",
    "ps": "procs_cmd",
    "kill": "procs_cmd",
    "wakes": "procs_cmd",
    "completion": "completion_cmd",
    "metrics": "metrics_cmd",
    "inspect": "inspect_cmd",
    "team": "teams_cmd",
    "agents": "presence_cmd",
    "handover": "presence_cmd",
    "fleet": "fleet_cmd",
    "tasks": "tasks_cmd",
    "messages": "messages_cmd",
    "claim": "queue_cmd",
    "done": "queue_cmd",
    "extend": "queue_cmd",
    "release": "queue_cmd",
}
ENTRY_POINT_GROUP = "ackdeck.commands"


class _Narrowing:
    """The command words of this invocation (`room`, `push`), so that only their parsers are
    built: a command group's register() adds a parser per subcommand, and each costs start-up
    time (argparse builds a formatter per argument and looks up translations per parser)."""

    def __init__(self, path: list[str]) -> None:
        self.path = path
        self.depth = 0  # how many words of `path` have their real parser so far
        self.actions: list[_NarrowedSubparsers] = []

    def missed(self) -> bool:
        """A wanted word was not among the names registered (a typo): the parser is then built
        whole, so that the error lists every choice as before."""
        return any(not a.found for a in self.actions)


class _NarrowedSubparsers:
    """A subparsers action that really adds only the parser named by the next command word;
    the others get a _Skipped stand-in that takes every call a register() function makes."""

    def __init__(self, action: Any, narrowing: _Narrowing) -> None:
        self._action, self._narrowing = action, narrowing
        self._want = narrowing.path[narrowing.depth]
        self.found = False
        narrowing.actions.append(self)

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self._want not in (name, *kwargs.get("aliases", ())):
            return _Skipped()
        self.found = True
        self._narrowing.depth += 1
        parser = self._action.add_parser(name, **kwargs)
        parser.narrowing = self._narrowing
        return parser

    def __getattr__(self, name: str) -> Any:
        return getattr(self._action, name)


class _Skipped:
    """The parser of a command this invocation does not run: builds nothing."""

    def __getattr__(self, name: str) -> Any:
        return self._absorb

    def _absorb(self, *_args: Any, **_kwargs: Any) -> _Skipped:
        return self


def _show_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The handler of a command group called without its subcommand: list the subcommands."""

    def handler(_args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 1

    return handler


def _help_when_bare(parser: argparse.ArgumentParser) -> None:
    """`ackdeck` and `ackdeck room` (no subcommand) print their help and exit 1 instead of an
    error about a missing argument; a group that acts on its own (`ackdeck tasks` lists)
    keeps its handler."""
    import argparse  # loaded already: the parser is built

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.required = False
            if parser.get_default("handler") is None:
                parser.set_defaults(handler=_show_help(parser))
            for child in set(action.choices.values()):
                _help_when_bare(child)


def _entry_points() -> dict[str, Callable[[], Register]]:
    from importlib.metadata import entry_points

    return {ep.name: ep.load for ep in entry_points(group=ENTRY_POINT_GROUP)}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`'s command only, or for every command when argv names none we know
    (help, no command, a typo: the listing and the error then show every command). Within a
    command group, only the named subcommand's parser is built, unless that name is unknown
    (then the whole group, for the error's list of choices) or help is asked for."""
    path = _command_path(argv) if argv is not None else None
    if path is not None and path[0] in BUILTIN_COMMANDS:
        narrowing = _Narrowing(path)
        parser = _build_parser(argv, narrowing)
        if not narrowing.missed():
            return parser
    return _build_parser(argv, None)


def _build_parser(
    argv: Sequence[str] | None, narrowing: _Narrowing | None
) -> argparse.ArgumentParser:
    from importlib import import_module

    parser = _Parser(
        prog="ackdeck",
        description="Consumed-only acks for agent inboxes, a wake gate for process monitors, "
        "and a live dashboard over both.",
    )
    parser.add_argument("--version", action=_Version, help="print ackdeck's version and exit")
    parser.add_argument(
        "--home",
        default=os.environ.get("ACKDECK_HOME"),
        help="state directory for processes and wakes (env ACKDECK_HOME; default ~/.ackdeck); "
        "before or after the command, as is --json for the commands that have it",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    command = _command_of(argv) if argv is not None else None
    if command in BUILTIN_COMMANDS:
        register = import_module(f"ackdeck.core.cli.{BUILTIN_COMMANDS[command]}").register
        register(sub if narrowing is None else _NarrowedSubparsers(sub, narrowing))
    else:
        extra = _entry_points()
        if command in extra:
            extra[command]()(sub)
        else:
            for module in dict.fromkeys(BUILTIN_COMMANDS.values()):
                import_module(f"ackdeck.core.cli.{module}").register(sub)
            for name in sorted(extra):
                if name not in sub.choices:
                    extra[name]()(sub)
    _help_when_bare(parser)
    return parser
