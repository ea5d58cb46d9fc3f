"""The tmux nudge against a scripted fake agent in a real tmux server (its own socket, killed in
teardown): one line typed per new thing, none while the agent is busy, none repeated."""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ackdeck.core.monitors import wakes
from ackdeck.core.monitors.monitors import MatchedLine
from ackdeck.core.nudge import IdleWatch
from ackdeck.core.rooms.file.room import Room
from tests.helpers.paths import PATHS, REPO
from tests.helpers.wait import WAIT, eventually

QUIET = 3.0

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

FAKE_AGENT = r"""
import os, select, sys
busy_flag, log = sys.argv[1], sys.argv[2]
prompt_shown = False
n = 0
while True:
    busy = os.path.exists(busy_flag)
    if busy:
        n += 1
        sys.stdout.write(f"\rworking {n} ")  # the pane changes all the time: busy
        sys.stdout.flush()
        prompt_shown = False
    elif not prompt_shown:
        sys.stdout.write("\n> ")
        sys.stdout.flush()
        prompt_shown = True
    ready, _, _ = select.select([sys.stdin], [], [], 0.1)
    if ready:
        line = sys.stdin.readline()
        if not line:
            break
        with open(log, "a") as f:
            f.write(("busy" if os.path.exists(busy_flag) else "idle") + "\t" + line)
        sys.stdout.write("got: " + line)
        prompt_shown = False
"""

# A composer like Codex CLI's (and Claude Code's): raw keys, and paste-burst detection. An Enter
# that arrives with, or within 120 ms of, a fast burst of characters is taken as a newline in
# pasted text, not as "submit" (codex-rs/tui paste_burst.rs). Submitted lines go to the log.
FAKE_COMPOSER = r"""
import os, select, sys, time, tty
_busy_flag, log = sys.argv[1], sys.argv[2]
fd = sys.stdin.fileno()
tty.setraw(fd)
buf, last_chars = "", 0.0
sys.stdout.write("\r\n> ")
sys.stdout.flush()
while True:
    if not select.select([fd], [], [], 0.1)[0]:
        continue
    data = os.read(fd, 4096).decode(errors="replace")
    if not data:
        break
    now = time.monotonic()
    chars = data.replace("\r", "")
    for i, ch in enumerate(data):
        if ch != "\r":
            buf += ch
            sys.stdout.write(ch)
        elif data[:i].replace("\r", "") or now - last_chars < 0.12:
            buf += "\n"  # part of the burst: a newline in the composer
            sys.stdout.write("\r\n")
        else:
            with open(log, "a") as f:
                f.write("idle\t" + buf.replace("\n", "\\n") + "\n")
            buf = ""
            sys.stdout.write("\r\ngot it\r\n> ")
    if chars:
        last_chars = now
    sys.stdout.flush()
"""


class World:
    def __init__(self, tmp: Path, home: Path, agent: str = FAKE_AGENT) -> None:
        self.tmp = tmp
        self.home = home
        self.socket = f"ackdeck-test-{uuid.uuid4().hex[:10]}"
        self.flag = tmp / "busy"
        self.log = tmp / "typed.log"
        self.room = tmp / "inbox.txt"
        self.room.touch()
        self.nudge: subprocess.Popen[bytes] | None = None
        script = tmp / "fake_agent.py"
        script.write_text(agent)
        try:
            self._start(script)
        except BaseException:
            self.close()
            raise

    def _start(self, script: Path) -> None:
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "agent",
            "-x",
            "160",
            "-y",
            "40",
            f"{sys.executable} {script} {self.flag} {self.log}",
        )
        # capture-pane trims trailing blanks: the prompt "> " shows as ">".
        eventually(
            lambda: re.search(r"^>", self.capture(), re.M) is not None,
            what="the fake agent's prompt",
        )

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True
        )
        return out.stdout

    def capture(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "agent")

    def typed(self) -> list[str]:
        if not self.log.exists():
            return []
        return self.log.read_text().splitlines()

    def start_nudge(self, *extra: str) -> None:
        env = dict(os.environ, PYTHONPATH=PATHS)
        self.nudge = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ackdeck.core.cli",
                "--home",
                str(self.home),
                "nudge",
                "--session",
                "agent",
                "--tmux",
                "agent",
                "--tmux-socket",
                self.socket,
                "--room",
                str(self.room),
                "--idle-ms",
                "400",
                *extra,
            ],
            env=env,
            cwd=str(REPO),
            stderr=subprocess.PIPE,
        )
        # It announces itself once it checked the pane; from then on it is watching.
        assert self.nudge.stderr is not None
        first = self.nudge.stderr.readline().decode()
        assert "watching session" in first, first

    def wait_for_log(self, text: str) -> None:
        """Read the nudge's stderr until a line holds `text` (what it says as it works)."""
        assert self.nudge is not None and self.nudge.stderr is not None
        fd = self.nudge.stderr.fileno()
        deadline = time.monotonic() + WAIT
        seen = b""
        while text.encode() not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError(f"the nudge never said {text!r}; it said {seen!r}")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError(f"the nudge ended before saying {text!r}: {seen!r}")
            seen += chunk

    def close(self) -> None:
        if self.nudge is not None and self.nudge.poll() is None:
            self.nudge.terminate()
            try:
                self.nudge.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                self.nudge.kill()
                self.nudge.wait()
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        # tmux may leave its socket file behind; it is ours (a unique name), so remove it.
        sock = Path(f"/tmp/tmux-{os.getuid()}") / self.socket
        sock.unlink(missing_ok=True)


@pytest.fixture
def world(tmp_path: Path, home: Path) -> Iterator[World]:
    w = World(tmp_path, home)
    try:
        yield w
    finally:
        w.close()


def test_one_line_per_new_thing_and_none_repeated(world: World) -> None:
    world.start_nudge("--prompt-regex", r"^> ?$")
    Room(world.room).push("[t1] ops: deploy")
    eventually(lambda: len(world.typed()) == 1, what="the first nudge")
    state, line = world.typed()[0].split("\t", 1)
    assert state == "idle"
    assert line.startswith("ackdeck: new room lines in inbox.txt (1)")
    assert "room_list_new" in line
    time.sleep(QUIET)  # a quiet period: nothing new, nothing typed
    assert len(world.typed()) == 1
    assert Room(world.room).status().pending == 1  # the nudge consumed nothing
    Room(world.room).push("[t2] ops: again")
    eventually(lambda: len(world.typed()) == 2, what="the second nudge")
    assert "inbox.txt (2)" in world.typed()[1]
    time.sleep(QUIET)
    assert len(world.typed()) == 2


def test_never_types_while_the_agent_is_busy(world: World) -> None:
    world.flag.touch()
    eventually(lambda: "working" in world.capture(), what="the agent to be busy")
    world.start_nudge()
    Room(world.room).push("[t1] ops: build failed")
    time.sleep(QUIET * 2)  # busy all along: the pane keeps changing
    assert world.typed() == []
    world.flag.unlink()
    eventually(lambda: len(world.typed()) == 1, what="the nudge once the agent is idle")
    assert world.typed()[0].startswith("idle\t")
    time.sleep(QUIET)
    assert len(world.typed()) == 1


def test_what_the_agent_read_while_busy_is_not_typed_once_it_is_idle(world: World) -> None:
    # The nudge decides, then waits for the busy pane; meanwhile the agent (told by its Stop
    # hook, say) reads and acks the line. Typing about it then would start a turn for nothing.
    world.flag.touch()
    eventually(lambda: "working" in world.capture(), what="the agent to be busy")
    world.start_nudge()
    Room(world.room).push("[t1] ops: handled mid-turn")
    world.wait_for_log("waiting for pane")
    r = Room(world.room)
    r.read("agent")
    r.ack("agent")
    world.flag.unlink()
    eventually(lambda: re.search(r"^>", world.capture(), re.M) is not None, what="the prompt")
    time.sleep(QUIET)  # idle long past --idle-ms: a nudge would have been typed by now
    assert world.typed() == []
    # Not silent either: the next new line is typed.
    Room(world.room).push("[t2] ops: new")
    eventually(lambda: len(world.typed()) == 1, what="the nudge for the new line")
    assert "inbox.txt (1)" in world.typed()[0]


def test_a_pane_in_copy_mode_is_not_idle(world: World) -> None:
    # Someone scrolls back through the agent's pane (copy mode): the content stands still,
    # but keys typed now would drive copy mode (tmux refused them, and the nudge ended with
    # "pane not available"). It waits until the mode is left, then types once.
    world.start_nudge()
    world.tmux("copy-mode", "-t", "agent")
    Room(world.room).push("[t1] ops: while scrolling")
    world.wait_for_log("waiting for pane")
    time.sleep(QUIET)  # idle long past --idle-ms, but in copy mode
    assert world.typed() == []
    assert world.nudge is not None and world.nudge.poll() is None
    assert world.tmux("display-message", "-p", "-t", "agent", "#{pane_in_mode}").strip() == "1"
    world.tmux("send-keys", "-t", "agent", "-X", "cancel")
    eventually(lambda: len(world.typed()) == 1, what="the nudge once copy mode is left")
    assert world.typed()[0].startswith("idle\tackdeck: new room lines in inbox.txt (1)")


def test_an_agent_that_takes_a_fast_enter_as_pasted_text_gets_the_line_submitted(
    tmp_path: Path, home: Path
) -> None:
    # Codex CLI (and Claude Code) treat an Enter right behind a burst of typed characters as a
    # newline inside a paste: a nudge typed and entered at once sat unsent in the composer,
    # recorded as told, and the agent never woke.
    world = World(tmp_path, home, agent=FAKE_COMPOSER)
    try:
        world.start_nudge()
        Room(world.room).push("[t1] ops: deploy")
        eventually(lambda: len(world.typed()) == 1, what="the nudge to be submitted")
        state, line = world.typed()[0].split("\t", 1)
        assert line.startswith("ackdeck: new room lines in inbox.txt (1)") and "\\n" not in line
    finally:
        world.close()


def test_prompt_regex_holds_the_nudge_until_the_prompt_shows(world: World) -> None:
    world.start_nudge("--prompt-regex", r"^READY>$")  # the fake agent never prints this
    Room(world.room).push("[t1] ops: hello")
    time.sleep(QUIET)
    assert world.typed() == []


def test_a_restarted_nudge_does_not_repeat(world: World) -> None:
    world.start_nudge()
    Room(world.room).push("[t1] ops: once")
    eventually(lambda: len(world.typed()) == 1, what="the nudge")
    assert world.nudge is not None
    world.nudge.terminate()
    world.nudge.wait(timeout=WAIT)
    world.start_nudge()
    time.sleep(QUIET)
    assert len(world.typed()) == 1


def test_a_pending_wake_is_one_nudge_and_is_not_drained(world: World) -> None:
    world.start_nudge()
    wakes.merge(
        world.home,
        "agent",
        "build",
        run_id="run1",
        kind="match",
        lines=[MatchedLine(0, 20, "ERROR: build failed")],
        filter="ERROR",
        exclude=False,
        matches=1,
        status="running",
    )
    eventually(lambda: len(world.typed()) == 1, what="the nudge for the wake")
    assert "wakes for build: wakes_drain" in world.typed()[0]
    time.sleep(QUIET)
    assert len(world.typed()) == 1
    assert wakes.list_wakes(world.home, "agent")[0].pending == 1


def test_a_missing_pane_is_a_one_line_error(world: World, home: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ackdeck.core.cli",
            "--home",
            str(home),
            "nudge",
            "--session",
            "agent",
            "--tmux",
            "nosuch:7",
            "--tmux-socket",
            world.socket,
            "--room",
            str(world.room),
        ],
        env=dict(os.environ, PYTHONPATH=PATHS),
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "nosuch:7" in proc.stderr and proc.stderr.startswith("ackdeck: error:")


@pytest.mark.parametrize(
    ("regex", "why"), [("(?<=> )$", "lookbehind"), ("(", "missing )"), (r"^\> (\d+", "missing )")]
)
def test_a_prompt_regex_re2_cannot_run_is_a_one_line_error(
    home: Path, tmp_path: Path, regex: str, why: str
) -> None:
    # The regex is the user's: RE2 (linear time), and refused before any pane is looked at.
    proc = subprocess.run(
        [
            sys.executable, "-m", "ackdeck.core.cli", "--home", str(home),
            "nudge", "--session", "agent",
            "--tmux", "agent", "--tmux-socket", f"ackdeck-none-{uuid.uuid4().hex[:8]}",
            "--room", str(tmp_path / "inbox.txt"), "--prompt-regex", regex,
        ],
        env=dict(os.environ, PYTHONPATH=PATHS),
        cwd=str(REPO), capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.startswith("ackdeck: error: invalid prompt regex"), proc.stderr
    assert why in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""


# ----- the pure idle decision -------------------------------------------------------------------
def test_idle_needs_unchanged_content_for_the_whole_period() -> None:
    w = IdleWatch(500)
    assert not w.observe("a", 0.0)
    assert not w.observe("a", 0.4)
    assert w.observe("a", 0.5)
    assert not w.observe("b", 0.6)  # changed: the clock starts over
    assert not w.observe("b", 1.0)
    assert w.observe("b", 1.1)
    w.reset()
    assert not w.observe("b", 5.0)  # after typing, a fresh quiet period is needed


def test_idle_with_a_prompt_regex_checks_the_last_non_blank_line() -> None:
    w = IdleWatch(0, re.compile(rb"^> ?$"))
    assert not w.observe("> \nworking 3\n\n", 0.0)
    assert not w.observe("> \nworking 3\n\n", 1.0)
    w2 = IdleWatch(0, re.compile(rb"^> ?$"))
    w2.observe("got: x\n> \n\n", 0.0)
    assert w2.observe("got: x\n> \n\n", 0.1)


def test_a_closed_pane_is_never_replaced_by_its_neighbour(world: World) -> None:
    # `--tmux agent:0.0` names a pane by its index. When that pane closes tmux renumbers, and
    # index 0 then names the neighbour (here a second agent; in life often a shell, where the
    # nudge's Enter runs the line as a command). The nudge must keep to the pane it checked.
    neighbour_log = world.tmp / "neighbour.log"
    script = world.tmp / "fake_agent.py"
    world.tmux(
        "split-window",
        "-t",
        "agent:0",
        f"{sys.executable} {script} {world.tmp / 'neighbour-busy'} {neighbour_log}",
    )
    world.start_nudge("--tmux", "agent:0.0")
    world.tmux("kill-pane", "-t", "agent:0.0")
    Room(world.room).push("[t1] ops: for the closed pane")
    assert world.nudge is not None
    assert world.nudge.wait(timeout=WAIT) == 1  # the pane it watched is gone: an error exit
    assert world.nudge.stderr is not None
    err = world.nudge.stderr.read().decode()
    assert len(err.strip().splitlines()) == 1 and err.startswith("ackdeck: error:"), err
    assert not neighbour_log.exists() or neighbour_log.read_text() == ""


def test_control_characters_in_a_room_name_are_never_typed(world: World) -> None:
    # The nudge names the room; a basename may hold anything but '/' and NUL. ESC, CR and LF
    # would drive the agent's terminal or press Enter early; C1 controls (U+009B is an 8-bit
    # CSI) and the Unicode line separators end lines for some input parsers too.
    import unicodedata

    odd = world.tmp / "in\x1b[31m\nrm -rf x\r\u009b2J\u0085\u2028\u2029box.txt"
    Room(odd).push("hello")
    pane = world.tmux("display-message", "-p", "-t", "agent", "#{pane_id}").strip()
    world.start_nudge("--tmux", pane, "--room", str(odd), "--prompt-regex", ".*")
    eventually(
        lambda: world.log.exists() and world.log.read_text().endswith("\n"), what="the nudge"
    )
    world.wait_for_log("typed:")
    typed = world.log.read_text().split("\n")[:-1]  # str.splitlines would split at U+2028
    assert len(typed) == 1, typed
    line = typed[0].split("\t", 1)[1]
    assert "room_list_new then room_ack" in line
    assert not [c for c in line if unicodedata.category(c) in ("Cc", "Zl", "Zp")], repr(line)


@pytest.mark.parametrize(
    "target",
    [
        "agent:0.5",  # a pane index the window does not have (a stale or mistyped index)
        "agent:9",  # a window the session does not have
        "",  # `--tmux "$TMUX_PANE"` run outside tmux: the variable is empty
    ],
)
def test_a_target_that_names_no_pane_never_falls_back_to_another_pane(
    world: World, home: Path, target: str
) -> None:
    # tmux's display-message resolves a target that names nothing to the current pane and
    # exits 0 (tmux 3.3), so the nudge pinned some other pane and typed into it.
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "ackdeck.core.cli", "--home", str(home), "nudge"),
            *("--session", "agent", "--tmux", target, "--tmux-socket", world.socket),
            *("--room", str(world.room)),
        ],
        env=dict(os.environ, PYTHONPATH=PATHS),
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert proc.returncode == 1, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("ackdeck: error:") and "pane" in proc.stderr, proc.stderr
    assert world.typed() == []


def test_nudges_are_bounded_counted_and_answered_only_by_a_read(world: World) -> None:
    """Issue 32: each nudge is counted in the session's presence until a read follows; after
    --max-unanswered of them no more is typed and the owner is told, once; a read answers
    them, and what arrives after it is nudged again."""
    import json

    from ackdeck.core.base import locations
    from ackdeck.core.service.deck import Deck

    def kinds() -> list[str]:
        path = locations.presence_log(world.home, "agent")
        return [json.loads(x)["ev"] for x in path.read_text().splitlines()] if path.exists() else []

    world.start_nudge("--max-unanswered", "2")
    Room(world.room).push("[t1] ops: one")
    eventually(lambda: len(world.typed()) == 1, what="the first nudge")
    Room(world.room).push("[t2] ops: two")
    eventually(lambda: len(world.typed()) == 2, what="the second nudge")
    Room(world.room).push("[t3] ops: three")
    world.wait_for_log("2 nudges unanswered")
    time.sleep(QUIET)
    assert len(world.typed()) == 2  # the bound: none typed for the third line
    assert kinds() == ["nudge", "nudge", "nudge-held"]
    # The agent reads: the nudges are answered, and a new line is nudged again.
    deck = Deck(world.home, "agent", [world.room])
    assert deck.read(deck.room()).count == 3
    Room(world.room).push("[t4] ops: four")
    eventually(lambda: len(world.typed()) == 3, what="a nudge after the read")
    # Typed, then recorded: the event follows the keys it counts.
    want = ["nudge", "nudge", "nudge-held", "read", "nudge"]
    eventually(lambda: kinds() == want, what="the nudge after the read recorded")
