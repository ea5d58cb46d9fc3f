"""Issue 20 in a real terminal: `ackdeck tui` in a tmux pane (its own server socket), driven with
real keys. A read is what was on screen; a resize never moves the keys to another room."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from tests.helpers.wait import eventually

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

REPO = Path(__file__).resolve().parent.parent


class Pane:
    """One tmux server (a unique socket) running the dashboard in one pane."""

    def __init__(self, tmp: Path, args: list[str], width: int, height: int) -> None:
        self.socket = f"ackdeck-tui-{uuid.uuid4().hex[:10]}"
        # The dashboard reads the default config: point it at empty temporary places.
        env = {
            "XDG_CONFIG_HOME": str(tmp / "xdg"),
            "HOME": str(tmp / "home"),
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
            "TERM": "xterm-256color",
        }
        assigns = " ".join(f"{k}={v}" for k, v in env.items())
        # COLUMNS and LINES (the test run may export them) would override the pane's size.
        command = f"env -u COLUMNS -u LINES {assigns} {sys.executable} -m ackdeck.core.cli tui "
        command += " ".join(args)
        # The pane gets its size first (a placeholder that waits), then the dashboard replaces
        # the placeholder: started in a pane still being sized, a program can miss the resize.
        size = ("-x", str(width), "-y", str(height))
        self.tmux("new-session", "-d", "-s", "dash", *size, "sh -c 'read never'")
        eventually(lambda: self.size() == (width, height), what="the pane's size")
        self.tmux("respawn-pane", "-k", "-t", "dash", command)

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], check=True, capture_output=True, text=True
        )
        return out.stdout

    def capture(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "dash")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "dash", *keys)

    def resize(self, width: int, height: int) -> None:
        self.tmux("resize-window", "-t", "dash", "-x", str(width), "-y", str(height))

    def size(self) -> tuple[int, int]:
        got = self.tmux("display-message", "-p", "-t", "dash", "#{pane_width} #{pane_height}")
        width, height = got.split()
        return int(width), int(height)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        sock = Path(f"/tmp/tmux-{os.getuid()}") / self.socket
        sock.unlink(missing_ok=True)


@contextmanager
def dashboard(tmp: Path, args: list[str], width: int, height: int) -> Iterator[Pane]:
    (tmp / "home").mkdir(exist_ok=True)
    pane = Pane(tmp, args, width, height)
    try:
        yield pane
    finally:
        pane.close()


GUTTER = re.compile(r"^[│ ]*?(\d+) │ line (\d+)\b", re.M)


ROW_400 = re.compile(r"│ inbox\.txt +400 ")


def settled(pane: Pane) -> str:
    """The screen once two captures in a row show the same lines in the lines panel."""
    seen: list[list[int]] = [[]]

    def same() -> bool:
        now = numbered_lines(pane.capture())
        same, seen[0] = bool(now) and now == seen[0], now
        return same

    eventually(same, what="the lines panel to settle")
    return pane.capture()


def numbered_lines(screen: str) -> list[int]:
    """The line numbers the lines panel shows (its gutter: "  12 │ text")."""
    return [int(m.group(1)) for m in GUTTER.finditer(screen)]


def test_r_then_a_in_a_real_terminal_removes_at_most_what_was_on_screen(tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"".join(f"line {i}\n".encode() for i in range(400)))
    before = room.read_bytes().split(b"\n")
    home = tmp_path / "state"
    home.mkdir()
    with dashboard(tmp_path, ["--home", str(home), "--room", str(room)], 120, 35) as pane:
        eventually(lambda: "400 lines" in pane.capture(), what="the lines panel's title")
        eventually(lambda: "Preserved" in pane.capture(), what="the 120-column layout")
        # The first scan's row settles the layout (empty processes and wakes panels shrink and
        # the lines panel grows): what is on screen before that is not what `r` will see.
        eventually(lambda: ROW_400.search(pane.capture()), what="the room's row with its count")
        screen = settled(pane)
        shown = numbered_lines(screen)
        assert shown == list(range(1, len(shown) + 1)), screen  # the oldest lines, in order
        pane.keys("r")
        eventually(lambda: "owner" in Room(room).status().sessions, what="the owner's receipt")
        in_flight = Room(room).status().sessions["owner"].in_flight
        pane.keys("a")
        eventually(lambda: Room(room).status().acked_total > 0, what="the ack")
        eventually(lambda: "acked" in pane.capture(), what="the ack's message")
    acked = Room(room).status().acked_total
    assert acked == in_flight
    assert 0 < acked <= len(shown), (acked, shown)
    # The file lost exactly its first `acked` lines, all of which were on screen.
    assert room.read_bytes() == b"\n".join(before[acked:])


def test_four_resizes_keep_the_chosen_room_for_the_keys(tmp_path: Path) -> None:
    rooms = []
    for i in range(3):
        path = tmp_path / f"room{i}.txt"
        path.write_bytes(b"".join(f"room {i} line {n}\n".encode() for n in range(3 + i)))
        rooms.append(path)
    home = tmp_path / "state"
    home.mkdir()
    args = ["--home", str(home)] + [a for r in rooms for a in ("--room", str(r))]
    with dashboard(tmp_path, args, 120, 35) as pane:
        eventually(lambda: "room2.txt" in pane.capture(), what="the rooms table")
        eventually(lambda: "· room0.txt" in pane.capture(), what="the first room's lines")
        pane.keys("Down")  # the rooms table has the focus: choose the second room
        eventually(lambda: "· room1.txt" in pane.capture(), what="the second room's lines")
        receipt = Room(rooms[1]).receipt_file("owner")
        last = 0
        for width in (80, 110, 120, 100):
            pane.resize(width, 35)
            eventually(lambda w=width: pane.size() == (w, 35), what=f"the pane at {width} columns")
            # `r` is handled after the resize: the receipt shows which room the keys act on.
            pane.keys("r")
            eventually(
                lambda last=last: receipt.exists() and receipt.stat().st_mtime_ns > last,
                what=f"the read of room1 at {width} columns",
            )
            last = receipt.stat().st_mtime_ns
            screen = pane.capture()
            assert "· room1.txt" in screen, (width, screen)
            assert "· room0.txt" not in screen and "· room2.txt" not in screen
            for other in (rooms[0], rooms[2]):
                assert "owner" not in Room(other).status().sessions, (width, other)
