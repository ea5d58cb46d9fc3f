"""Text for people is safe to print: a producer's control and escape sequences (an OSC window
title, a clear screen, colours, an 8-bit CSI, a bidi override, a carriage return) are shown
escaped in every human output: `room trace`, CLI text and errors, hook text, notices, the
dashboard. Data for programs (`room read` into a pipe, JSON) keeps the exact bytes."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import tty
from pathlib import Path

from ackdeck.core.base.text import safe
from ackdeck.core.cli._output import for_terminal
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service import notices as N
from ackdeck.tui.app import make_app
from ackdeck.tui.screens.modals import PromptScreen, TextScreen
from ackdeck.tui.testing import fixed_clock, notifications, quiet_config, screen_text, settle
from tests.helpers.cli import ACKDECK, ackdeck, ackdeck_json
from tests.helpers.paths import PKG
from tests.helpers.wait import eventually

HOSTILE = "job \x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m \u009b2J \u202eevil\rdone"
# The escaped form a person sees (a sample of it).
ESCAPED = "\\x1b]0;pwned\\x07\\x1b[2J"

# What a terminal would obey: C0 but newline and tab, DEL, C1, line separators, bidi controls.
_OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def obeyed(text: str) -> list[str]:
    return _OBEYED.findall(text)


def test_safe_escapes_what_a_terminal_obeys_and_keeps_the_rest() -> None:
    assert safe(HOSTILE) == (
        "job \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\x1b[0m \\x9b2J \\u202eevil\\x0ddone"
    )
    assert safe("é ü ½ 日本 a\tb") == "é ü ½ 日本 a\tb"
    assert safe("a\nb", keep="\t\n") == "a\nb" and safe("a\nb") == "a\\x0ab"
    assert safe("a\tb", keep="") == "a\\x09b"  # typed into a pane, a tab is a key


def test_room_trace_shows_a_producers_escape_sequences_escaped(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    Room(room).push(HOSTILE)
    for args in (["room", "trace", str(room), "0"], ["room", "trace", str(room), "--match", "job"]):
        out = ackdeck(cli_env, *args)
        assert out.returncode == 0, out
        assert obeyed(out.stdout + out.stderr) == [], out.stdout
        assert ESCAPED in out.stdout
    # JSON carries the exact text (a program decodes it).
    out = ackdeck(cli_env, "room", "trace", str(room), "0", "--json")
    assert HOSTILE in strings(json.loads(out.stdout))


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def _read_through_a_terminal(env: dict[str, str], *args: str) -> bytes:
    master, slave = pty.openpty()
    tty.setraw(slave)  # no newline translation: the bytes as written
    try:
        proc = subprocess.Popen([*ACKDECK, *args], env=env, stdout=slave, stderr=subprocess.PIPE)
        os.close(slave)
        got = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            got += chunk
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        return got
    finally:
        os.close(master)


def test_room_read_is_exact_into_a_pipe_and_escaped_on_a_terminal(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    r = Room(room)
    r.push(HOSTILE)
    piped = subprocess.run(
        [*ACKDECK, "room", "read", str(room), "--session", "prog"],
        env=cli_env,
        capture_output=True,
        timeout=60,
    )
    assert piped.stdout == HOSTILE.encode() + b"\n"  # a program gets the bytes
    seen = _read_through_a_terminal(cli_env, "room", "read", str(room), "--session", "person")
    text = seen.decode()
    assert obeyed(text) == [] and ESCAPED in text and text.endswith("done\n"), repr(text)


def test_for_terminal_leaves_a_pipe_exact() -> None:
    r, w = os.pipe()
    try:
        assert for_terminal(HOSTILE.encode(), w) == HOSTILE.encode()
    finally:
        os.close(r)
        os.close(w)


def test_cli_text_and_errors_name_a_hostile_file_escaped(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    name = "in\x1b]0;pwned\x07box\u202e.txt"
    room = tmp_path / name
    Room(room).push(HOSTILE)
    for args in (
        ["room", "status", str(room)],
        ["room", "push", str(room), "x", "--wait-ack", "--session", "s", "--timeout", "0"],
        ["room", "overdue", str(room)],
        ["room", "policy", str(room)],
        ["room", "push", str(tmp_path / ("gone\x1b[2J") / "r.txt"), "x"],  # an error line
    ):
        out = ackdeck(cli_env, *args)
        assert obeyed(out.stdout + out.stderr) == [], (args, out)
        assert "\\x1b" in out.stdout + out.stderr, (args, out)


def test_hook_text_quotes_a_hostile_line_escaped(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "r.txt"
    Room(room).push(HOSTILE)
    out = ackdeck(cli_env, "hooks", "prompt", "--session", "agent", "--room", str(room), input="{}")
    assert out.returncode == 0 and "r.txt" in out.stdout, out
    assert obeyed(out.stdout + out.stderr) == [], out.stdout


def test_notices_show_a_hostile_name_and_line_escaped() -> None:
    view = N.RoomView("/r/x", "in\x1b[2Jbox\u202e", True, 1, 10, 1, HOSTILE)
    n = N.room_notice(view, "agent")
    assert obeyed(n.content) == [] and "\\x1b[2J" in n.content
    line = N.nudge_line([n])
    assert obeyed(line) == [] and "\t" not in line and "\\x1b" in line


async def test_the_dashboard_shows_a_hostile_line_escaped(tmp_path: Path) -> None:
    room = tmp_path / "r.txt"
    Room(room, clock=fixed_clock).push(HOSTILE)
    app = make_app(quiet_config([room]), clock=fixed_clock)
    async with app.run_test(size=(140, 36)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert obeyed(text) == [] and ESCAPED in text, text
        # The line's journey quotes it.
        await pilot.press("t")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("0", "enter")
        await settle(pilot)
        assert isinstance(app.screen, TextScreen)
        body = str(app.screen.query_one("#text-body").render())
        assert obeyed(body) == [] and ESCAPED in body, body
        assert obeyed(screen_text(app)) == []
        await pilot.press("escape")
        # A toast quoting it (any screen's notify goes through the app's).
        app.screen.notify(f"about {HOSTILE}", title=HOSTILE, markup=False)
        await settle(pilot)
        assert all(obeyed(n) == [] for n in notifications(app)), notifications(app)
        assert obeyed(screen_text(app)) == []


def test_a_processs_output_and_its_wakes_show_escapes_escaped(
    phome: Path, cli_env: dict[str, str]
) -> None:

    script = "printf 'job \\033]0;pwned\\007 \\302\\2332J done\\n'"
    started = ackdeck(
        cli_env, "run", "hostile", "--session", "s", "--monitor", "job", "--", "sh", "-c", script
    )
    assert started.returncode == 0, started
    eventually(
        lambda: (
            (runs := ackdeck_json(cli_env, "ps")["processes"]) and runs[0]["status"] == "exited"
        ),
        timeout=120,  # generous: both cores may be busy
        what="the run to exit",
    )
    # Into a pipe a program gets the bytes; on a terminal a person sees them escaped.
    piped = subprocess.run(
        [*ACKDECK, "output", "hostile", "--session", "prog"], env=cli_env, capture_output=True
    )
    assert b"\x1b]0;pwned\x07" in piped.stdout
    seen = _read_through_a_terminal(cli_env, "output", "hostile", "--session", "person").decode()
    assert obeyed(seen) == [] and "\\x1b]0;pwned\\x07" in seen, repr(seen)
    drained = ackdeck(cli_env, "wakes", "drain", "--session", "s")
    assert drained.returncode == 0 and "job" in drained.stdout, drained
    assert obeyed(drained.stdout + drained.stderr) == [], drained.stdout
    assert "\\x9b2J" in drained.stdout  # the 8-bit CSI the monitor's cleaning kept


def test_json_output_is_the_exact_text_and_safe_on_a_terminal(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    Room(room).push(HOSTILE)
    for args in (
        ["room", "read", str(room), "--session", "a", "--json"],
        ["room", "trace", str(room), "0", "--json"],
        ["room", "status", str(room), "--json"],
    ):
        out = ackdeck(cli_env, *args)
        assert out.returncode == 0, out
        assert obeyed(out.stdout) == [], (args, out.stdout)  # \u009b, not the raw CSI
    out = ackdeck(cli_env, "room", "read", str(room), "--session", "b", "--json")
    assert json.loads(out.stdout)["lines"] == [HOSTILE]  # a program decodes the exact text


def test_every_cli_line_for_people_goes_through_say() -> None:
    # The class, not the example: a new print() in a command would print a producer's escapes
    # raw again. Only `say` itself and the version line (ackdeck's own text) call print.
    import ast

    bare = []
    for path in sorted((PKG / "core" / "cli").glob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or fn.name == "say":
                continue
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "print"
                    and "package_version" not in ast.unparse(node)
                ):
                    bare.append(f"{path.name}:{node.lineno}")
    assert bare == [], bare
