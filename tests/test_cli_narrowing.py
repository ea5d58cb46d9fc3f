"""`ackdeck` builds only the parsers of the command words it was given (start-up time: see
core/cli/_parsers.py, `_Narrowing`), and that changes nothing a user sees: every command line
parses to the same arguments as with the whole parser, and a mistyped subcommand, help or a
bare group still show every choice."""

from __future__ import annotations

import argparse

import pytest

from ackdeck.core.cli import hoist_global_options
from ackdeck.core.cli._parsers import _build_parser, build_parser
from tests.helpers.cli import ackdeck

COMMAND_LINES = [
    ["room", "push", "r.txt", "hello"],
    ["room", "push", "--json", "r.txt", "hello"],
    ["room", "read", "r.txt", "--session", "s"],
    ["room", "ack", "r.txt", "--session", "s", "--all"],
    ["room", "status", "r.txt"],
    ["room", "wait", "r.txt", "--timeout", "5"],
    ["--home", "/tmp/h", "room", "status", "r.txt"],
    ["room", "--home", "/tmp/h", "read", "r.txt"],  # issue 23: global options after the command
    ["room", "read", "r.txt", "--home", "/tmp/h"],
    ["ps", "--home", "/tmp/h", "--json"],
    ["--json", "ps"],
    ["completion", "bash"],
    ["wakes", "drain", "--hook", "--session", "s"],
    ["wakes", "list"],
    ["wakes", "dismiss", "job", "--session", "s"],
    ["hooks", "prompt", "--session", "s", "--room", "r.txt"],
    ["hooks", "stop", "--session", "s", "--room", "r.txt"],
    ["hooks", "bootstrap", "--session", "s", "--room", "r.txt"],
    ["hooks", "install", "--session", "s", "--room", "r.txt"],
    ["run", "job", "--monitor", "ERROR", "--", "sh", "-c", "echo hi"],
    ["output", "job", "--session", "s"],
    ["ps"],
    ["kill", "job"],
    ["mcp", "--session", "s", "--room", "r.txt"],
]


def _comparable(ns: argparse.Namespace) -> dict[str, object]:
    """The namespace, with the handler as the code and the values it closes over (each build
    makes new wrapper functions around the same handlers)."""
    out = dict(vars(ns))
    handler = out.pop("handler")
    cells = [c.cell_contents for c in (handler.__closure__ or ())]
    out["handler"] = (handler.__code__, *(getattr(c, "__code__", c) for c in cells))
    return out


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=" ".join)
def test_a_narrowed_parser_parses_like_the_whole_one(argv: list[str]) -> None:
    argv = hoist_global_options(argv)  # as main does first
    narrowed = build_parser(argv).parse_args(argv)
    whole = _build_parser(argv, None).parse_args(argv)
    assert _comparable(narrowed) == _comparable(whole)


def test_only_the_named_subcommand_is_built() -> None:
    parser = build_parser(["room", "status", "r.txt"])
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    room = groups[0].choices["room"]
    actions = [a for a in room._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(actions[0].choices) == ["status"]


def test_a_mistyped_subcommand_still_lists_every_choice() -> None:
    out = ackdeck(None, "room", "stauts", "r.txt")
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "invalid choice: 'stauts'" in out.stderr
    for action in ("push", "read", "ack", "status", "wait"):
        assert f"'{action}'" in out.stderr, action


def test_help_of_a_subcommand_and_of_its_group_are_whole() -> None:
    sub = ackdeck(None, "room", "status", "--help")
    assert sub.returncode == 0 and "usage: ackdeck room status" in sub.stdout
    group = ackdeck(None, "room", "--help")
    assert group.returncode == 0
    for action in ("push", "read", "ack", "status", "wait"):
        assert f"    {action} " in group.stdout, action


def test_a_global_option_after_the_command_keeps_the_narrowing() -> None:
    """`room --home D read` still builds only `read` (--home D is moved before the command)."""
    parser = build_parser(hoist_global_options(["room", "--home", "/tmp/h", "read", "r.txt"]))
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    room = groups[0].choices["room"]
    actions = [a for a in room._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(actions[0].choices) == ["read"]
