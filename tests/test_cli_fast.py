"""The per-turn commands are parsed without argparse (core/cli/_fast.py, issue 43): argparse
with gettext and locale cost every hook and producer ~3 ms, a quarter of a bare interpreter.
Nothing a user sees may change: every per-turn command form the fast path takes parses to the
namespace argparse gives; every form it does not take (help, errors, abbreviations, repeats)
goes to argparse, so errors stay its one line and exit 1; and its table of options is the one
argparse declares, so an option added to a command cannot be silently dropped."""

from __future__ import annotations

import argparse

import pytest

from ackdeck.core.cli import hoist_global_options
from ackdeck.core.cli._fast import _COMMANDS, parse_turn
from ackdeck.core.cli._parsers import build_parser
from tests.helpers.cli import ackdeck, clean_env

# Every per-turn command, in the forms hooks, producer scripts and agents write.
FAST_FORMS = [
    ["room", "push", "r.txt", "hello"],
    ["room", "push", "r.txt", ""],
    ["room", "push", "r.txt", "two words", "--json"],
    ["room", "push", "--json", "r.txt", "hello"],
    ["room", "push", "--follow-symlinks", "r.txt", "hello"],
    ["room", "push", "r.txt", "hello", "--wait-ack", "--session", "s", "--timeout", "5"],
    ["room", "push", "r.txt", "hello", "--wait-ack", "--timeout=0.5"],
    ["room", "push", "redis://127.0.0.1:6379/0/inbox", "hello"],
    ["room", "read", "r.txt"],
    ["room", "read", "r.txt", "--session", "s"],
    ["room", "read", "--session=s", "r.txt", "--json"],
    ["room", "read", "r.txt", "--session", ""],
    ["room", "read", "r.txt", "--max-bytes", "512K", "--follow-symlinks"],
    ["room", "read", "r.txt", "--json", "--json"],
    ["room", "ack", "r.txt"],
    ["room", "ack", "r.txt", "--session", "s", "--json"],
    ["room", "ack", "r.txt", "--all", "--max-bytes=4M"],
    ["room", "status", "r.txt"],
    ["room", "status", "a.txt", "b.txt", "c.txt", "--json"],
    ["room", "status", "--session", "s", "a.txt", "b.txt"],
    ["room", "status", "r.txt", "--overdue", "10m"],
    ["wakes", "drain"],
    ["wakes", "drain", "--hook", "--session", "s"],
    ["wakes", "drain", "--json", "--settle", "0.5"],
    ["hooks", "bootstrap"],
    ["hooks", "bootstrap", "--session", "s", "--room", "a.txt", "--room", "b.txt"],
    ["hooks", "prompt", "--session", "s", "--room", "r.txt"],
    ["hooks", "prompt", "--room=r.txt", "--session=s"],
    ["hooks", "stop", "--session", "s", "--room", "r.txt", "--settle", "1"],
    ["hooks", "stop"],
    ["hooks", "notify", "--session", "s"],
    ["hooks", "end"],
    ["--home", "/tmp/h", "room", "push", "r.txt", "hello"],
    ["--home=/tmp/h", "hooks", "stop", "--session", "s"],
    ["room", "read", "r.txt", "--home", "/tmp/h"],  # after the command: hoisted to the front
    ["--json", "room", "ack", "r.txt"],  # before the command: moved after it
]

# Forms the fast path leaves to argparse: help, errors, and spellings whose meaning is
# argparse's to decide (abbreviations, repeats, a value that looks like an option).
ARGPARSE_FORMS = [
    ["room", "push", "r.txt"],
    ["room", "push", "r.txt", "a", "b"],
    ["room", "push", "r.txt", "-5"],
    ["room", "push", "r.txt", "hello", "--jsn"],
    ["room", "push", "r.txt", "hello", "--js"],
    ["room", "push", "r.txt", "hello", "--json=yes"],
    ["room", "push", "r.txt", "hello", "--timeout", "601"],
    ["room", "push", "r.txt", "hello", "--timeout"],
    ["room", "push", "--", "r.txt", "hello"],
    ["room", "read"],
    ["room", "read", "r.txt", "--help"],
    ["room", "read", "r.txt", "-h"],
    ["room", "read", "r.txt", "--session", "--json"],
    ["room", "read", "r.txt", "--session", "a", "--session", "b"],
    ["room", "read", "r.txt", "--max-bytes", "lots"],
    ["room", "ack", "a.txt", "b.txt"],
    ["room", "status"],
    ["room", "status", "a.txt", "--json", "b.txt"],
    ["room", "status", "r.txt", "--overdue", "soon"],
    ["wakes", "drain", "--settle", "x"],
    ["wakes", "drain", "extra"],
    ["hooks", "stop", "--session"],
    ["hooks", "notify", "--room", "r.txt"],
    ["hooks", "prompt", "--roo", "r.txt"],
    ["room", "wait", "r.txt"],
    ["room"],
    ["--home"],
    ["--version"],
    ["ps"],
]


def _argparse_namespace(argv: list[str]) -> dict[str, object]:
    return vars(build_parser(argv).parse_args(argv))


@pytest.mark.parametrize("argv", FAST_FORMS, ids=" ".join)
def test_the_fast_path_parses_every_per_turn_form_as_argparse_does(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = hoist_global_options(argv)  # as main does first
    for env in ({}, {"ACKDECK_SESSION": "from-env", "ACKDECK_HOME": "/tmp/env-home"}):
        for name in ("ACKDECK_SESSION", "ACKDECK_HOME"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        fast = parse_turn(argv)
        assert fast is not None, f"{argv} went to argparse"
        assert vars(fast) == _argparse_namespace(argv)


@pytest.mark.parametrize("argv", ARGPARSE_FORMS, ids=" ".join)
def test_what_the_fast_path_does_not_take_goes_to_argparse(argv: list[str]) -> None:
    assert parse_turn(hoist_global_options(argv)) is None


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["room", "push", "r.txt"],
            "ackdeck: error: room push: the following arguments are required: TEXT (see --help)",
        ),
        (
            ["room", "read", "r.txt", "--sesion", "s"],
            "ackdeck: error: room read: unknown option --sesion; did you mean --session? "
            "(see --help)",
        ),
        (
            ["room", "push", "r.txt", "hello", "--timeout", "601"],
            "ackdeck: error: timeout must be between 0 and 600 seconds, got 601",
        ),
        (
            ["hooks", "stop", "--settle", "soon"],
            "ackdeck: error: hooks stop: argument --settle: invalid float value: 'soon' "
            "(see --help)",
        ),
        (
            ["room", "status", "a.txt", "--session", "s", "b.txt"],
            "ackdeck: error: room status: unexpected argument 'b.txt' (see --help)",
        ),
    ],
)
def test_bad_per_turn_arguments_still_give_argparse_one_line_error(
    argv: list[str], line: str, tmp_path: object
) -> None:
    out = ackdeck(clean_env(), "--home", str(tmp_path), *argv, input="{}")
    assert (out.returncode, out.stdout, out.stderr) == (1, "", line + "\n")


def _declared(parser: argparse.ArgumentParser, words: tuple[str, str]) -> argparse.ArgumentParser:
    """The subparser of `words` (`room push`) inside the whole parser."""
    for word in words:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


@pytest.mark.parametrize("words", sorted(_COMMANDS), ids=" ".join)
def test_the_fast_table_declares_exactly_the_options_argparse_declares(
    words: tuple[str, str],
) -> None:
    """An option added to a per-turn command's parser and not to _fast.py would make every use
    of it take argparse (slower, still right): this names it."""
    parser = _declared(build_parser(list(words)), words)
    _dest, _module, _handler, positionals, options = _COMMANDS[words]
    declared_options = {
        o: a.dest for a in parser._actions for o in a.option_strings if o.startswith("--")
    }
    declared_options.pop("--help")
    assert {o: spec[0] for o, spec in options.items()} == declared_options
    declared_positionals = tuple(
        (a.dest, "+" if a.nargs == "+" else "1") for a in parser._actions if not a.option_strings
    )
    assert positionals == declared_positionals
