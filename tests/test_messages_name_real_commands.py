"""A message that tells a person what to run names a command that exists: the lost-push error
of a redis room said `room tail`, which is not a command. Every backquoted `ackdeck ...` or
`room ...` in ackdeck's own code (errors, hints, help, docstrings) is checked against the
parser."""

from __future__ import annotations

import argparse
import re

from ackdeck.core.cli._parsers import build_parser
from tests.helpers.paths import PKG, REPO

# `ackdeck room trace ROOM`, `room policy`, `ackdeck ps`: the words after the program name
# that are commands (lowercase words; placeholders, options and values end the command).
_NAMED = re.compile(r"`(?:ackdeck\s+|(?=room\s))([a-z][a-z-]*(?:\s+[a-z][a-z-]*)?)")


def _commands() -> dict[str, set[str]]:
    parser = build_parser(None)
    out: dict[str, set[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                subs: set[str] = set()
                for a in sub._actions:
                    if isinstance(a, argparse._SubParsersAction):
                        subs |= set(a.choices)
                out[name] = subs
    return out


def test_every_command_a_message_names_exists() -> None:
    commands = _commands()
    assert "room" in commands and "trace" in commands["room"]
    wrong: list[str] = []
    for path in [*(PKG / "core").rglob("*.py"), *(PKG / "tui").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        for m in _NAMED.finditer(text):
            words = m.group(1).split()
            top = words[0]
            if top not in commands:
                wrong.append(f"{path.relative_to(REPO)}: `{m.group(1)}`")
            elif commands[top] and len(words) > 1 and words[1] not in commands[top]:
                wrong.append(f"{path.relative_to(REPO)}: `{m.group(1)}`")
    assert wrong == [], wrong
