"""The per-turn commands' arguments, parsed without argparse.

Hooks and producer scripts run `room push/read/ack/status`, `wakes drain` and `hooks EVENT` on
every turn of every agent, and argparse (with gettext and locale, plus building the parser of
the command) costs each of them ~3 ms, a quarter of a bare interpreter. This parser takes only
the plain forms of those commands: the command words, their options spelled out in full
(`--session S` or `--session=S`), positionals in one run, each value-taking option once. Any
other word (help, `--`, an abbreviation, a value that starts with `-`, a repeat, an unknown
option, a missing or extra positional, a value its converter refuses) makes it answer None,
and main() then parses with argparse as before: help, errors and every other command are
exactly argparse's. tests/test_cli_fast.py checks that both give the same namespace for every
per-turn command form, and that bad arguments still give argparse's one-line error.

The options below mirror what `register()` declares in rooms_cmd, procs_cmd and agents_cmd
(names, defaults, converters): an option added there and not here is an unknown word here, so
the command falls back to argparse (slower, still right) and the agreement test names it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any


class Args:
    """What argparse.Namespace is to the handlers: the parsed options as attributes."""

    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)

    def __repr__(self) -> str:
        return f"Args({self.__dict__!r})"


# Option kinds: a flag (store_true), a value (store, once, through a converter) or a
# repeatable value (append).
_FLAG, _VALUE, _APPEND = "flag", "value", "append"
_FOLLOW = ("follow_symlinks", _FLAG, False, None)
_JSON = ("json", _FLAG, False, None)
_SESSION = ("session", _VALUE, None, None)
_ROOMS = ("room", _APPEND, None, None)  # default: a fresh list each time
_SETTLE = ("settle", _VALUE, 2.0, float)
_MAX_BYTES = ("max_bytes", _VALUE, None, "room_turns.page_size")
_HOOK_SESSION = ("session", _VALUE, "<session_of>", None)
_GATE = ("gate", _VALUE, None, None)

# (command, subcommand) -> (the command-word attribute, module, handler, positionals as
# (dest, "1" or "+"), options by their flag: (dest, kind, default, converter)). A converter
# named "module.function" is looked up in ackdeck.core.cli only when the option is given.
_COMMANDS: dict[tuple[str, str], tuple[str, str, str, tuple[tuple[str, str], ...], dict]] = {
    ("room", "push"): (
        "room_command",
        "_push",  # a file room's plain push without the Deck; the rest via rooms_cmd
        "push",
        (("room", "1"), ("text", "1")),
        {
            "--follow-symlinks": _FOLLOW,
            "--json": _JSON,
            "--wait-ack": ("wait_ack", _FLAG, False, None),
            "--session": _SESSION,
            "--timeout": ("timeout", _VALUE, None, "_output.timeout_arg"),
        },
    ),
    ("room", "read"): (
        "room_command",
        "room_turns",
        "read",
        (("room", "1"),),
        {
            "--follow-symlinks": _FOLLOW,
            "--session": _SESSION,
            "--max-bytes": _MAX_BYTES,
            "--json": _JSON,
        },
    ),
    ("room", "ack"): (
        "room_command",
        "room_turns",
        "ack",
        (("room", "1"),),
        {
            "--follow-symlinks": _FOLLOW,
            "--session": _SESSION,
            "--all": ("all", _FLAG, False, None),
            "--max-bytes": _MAX_BYTES,
            "--json": _JSON,
        },
    ),
    ("room", "status"): (
        "room_command",
        "room_turns",
        "status",
        (("room", "+"),),
        {
            "--follow-symlinks": _FOLLOW,
            "--session": _SESSION,
            "--overdue": ("overdue", _VALUE, None, "room_turns.duration"),
            "--json": _JSON,
        },
    ),
    ("wakes", "drain"): (
        "wakes_command",
        "procs_cmd",
        "_wakes_drain",
        (),
        {
            "--session": _SESSION,
            "--json": _JSON,
            "--hook": ("hook", _FLAG, False, None),
            "--settle": _SETTLE,
        },
    ),
    ("hooks", "bootstrap"): (
        "hooks_command",
        "hook_turns",
        "bootstrap",
        (),
        {"--session": _HOOK_SESSION, "--room": _ROOMS, "--gate": _GATE},
    ),
    ("hooks", "prompt"): (
        "hooks_command",
        "hook_turns",
        "prompt",
        (),
        {"--session": _HOOK_SESSION, "--room": _ROOMS, "--gate": _GATE},
    ),
    ("hooks", "stop"): (
        "hooks_command",
        "hook_turns",
        "stop",
        (),
        {"--session": _HOOK_SESSION, "--room": _ROOMS, "--settle": _SETTLE, "--gate": _GATE},
    ),
    # The hooks that only record their event, without hook_turns and the hooks module.
    ("hooks", "notify"): (
        "hooks_command",
        "_hook_events",
        "notify",
        (),
        {"--session": _HOOK_SESSION},
    ),
    ("hooks", "end"): ("hooks_command", "_hook_events", "end", (), {"--session": _HOOK_SESSION}),
}


def parse_turn(argv: Sequence[str]) -> Args | None:
    """The namespace argparse would give `argv` (after hoist_global_options), or None when
    `argv` is not a plain per-turn command line: argparse then parses it, and says any error."""
    words = list(argv)
    home = os.environ.get("ACKDECK_HOME")
    i = 0
    while i < len(words) and words[i].startswith("--home"):  # hoisted to the front
        if words[i] == "--home" and i + 1 < len(words):
            home = words[i + 1]
            i += 2
        elif words[i].startswith("--home="):
            home = words[i][len("--home=") :]
            i += 1
        else:
            return None
        if home.startswith("-"):
            return None  # argparse would take it for an option: its error, not ours
    if len(words) < i + 2:
        return None
    spec = _COMMANDS.get((words[i], words[i + 1]))
    if spec is None:
        return None
    word_dest, module, handler, positionals, options = spec
    values: dict[str, Any] = {"home": home, "command": words[i], word_dest: words[i + 1]}
    given: list[tuple[tuple[str, str, Any, Any], str]] = []
    loose: list[str] = []
    run_ended = False  # positionals must come in one run (argparse's `R --json S` differs)
    rest = iter(words[i + 2 :])
    for word in rest:
        if not word.startswith("-"):
            if run_ended:
                return None
            loose.append(word)
            continue
        if loose:
            run_ended = True
        flag, eq, inline = word.partition("=")
        option = options.get(flag)
        if option is None:
            return None  # help, `--`, an abbreviation, a typo, a negative number, ...
        dest, kind, _default, _convert = option
        if kind == _FLAG:
            if eq:
                return None
            values[dest] = True
            continue
        following = next(rest, None) if not eq else inline
        if following is None or (not eq and following.startswith("-")):
            return None
        value = following
        if kind == _VALUE and any(o[0] == dest for o, _ in given):
            return None  # a repeat: argparse's rules for it, not ours
        given.append((option, value))
    if not _take_positionals(positionals, loose, values):
        return None
    for dest, kind, default, _convert in options.values():
        if dest not in values:
            values[dest] = _default_of(kind, default)
    for (dest, kind, _default, convert), value in given:
        if kind == _APPEND:
            values[dest] = [*values[dest], value]
            continue
        try:
            values[dest] = _converter(convert)(value) if convert is not None else value
        except Exception:
            return None  # argparse converts it again and reports the error its own way
    values["handler"] = _handler(module, handler)
    return Args(**values)


def _take_positionals(
    positionals: tuple[tuple[str, str], ...], loose: list[str], values: dict[str, Any]
) -> bool:
    if not positionals:
        return not loose
    if positionals[-1][1] == "+":  # only ever the last (and only) one
        if len(loose) < len(positionals):
            return False
        for (dest, _n), word in zip(positionals[:-1], loose, strict=False):
            values[dest] = word
        values[positionals[-1][0]] = loose[len(positionals) - 1 :]
        return True
    if len(loose) != len(positionals):
        return False
    for (dest, _n), word in zip(positionals, loose, strict=True):
        values[dest] = word
    return True


def _default_of(kind: str, default: Any) -> Any:
    if kind == _APPEND:
        return []
    if default == "<session_of>":  # the hooks' --session default, as their parser sets it
        from ackdeck.core.cli import session_of

        return session_of(None)
    return default


def _converter(name: str | Callable[[str], Any]) -> Callable[[str], Any]:
    if not isinstance(name, str):
        return name
    module, _, function = name.partition(".")
    from importlib import import_module

    return getattr(import_module(f"ackdeck.core.cli.{module}"), function)


def _handler(module: str, name: str) -> Callable[[Any], int]:
    # The builtin __import__ (with a fromlist it returns the submodule itself): importlib,
    # with warnings, is a tenth of a producer's push (tests/test_push_path.py).
    return getattr(__import__(f"ackdeck.core.cli.{module}", fromlist=[name]), name)
