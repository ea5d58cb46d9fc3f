"""A producer's plain `ackdeck room push ROOM LINE` to a file room (issue 43): pollers run it
for every line they deliver, so it runs the file room's own append (core/cli/_push.py ->
core/service/push.py -> core/rooms/file/append.py) without the Deck and its modules.

Two promises are pinned here: that path imports none of the modules a bare push never needed
(pathlib with `re`, json, enum, contextlib, functools, typing, dataclasses: each alone a large
share of a bare interpreter), and it is the same push as the Deck's, which every other door
and form runs: for every fault of a push (a missing directory, a FIFO, a directory or a
symlink in the room's place, a replaced sidecar or ledger, a bad line) the same one line on
stderr and the same exit code, and the same room afterwards (a first push, a room truncated
behind ackdeck's back, a symlink followed on request). The Deck's side is the same command
with `--json` (which the fast path hands to the Deck): its line on stderr is the plain one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.paths import PATHS

# What a push never needs (tests/test_layering.py's HEAVY_FOR_A_TURN covers every per-turn
# command; these are the standard modules the push path in particular leaves out).
HEAVY_FOR_A_PUSH = (
    "pathlib",
    "re",
    "enum",
    "json",
    "contextlib",
    "functools",
    "typing",
    "dataclasses",
)
# What the fast path exists to skip: the Deck, and the Room of every other operation (built
# only for a room's rare moments: its first push writes the ledger, a truncated room gets a
# new epoch).
DECK, ROOM = "ackdeck.core.service.deck", "ackdeck.core.rooms.file.room"

# `ackdeck ARGS` through main(), as the console script runs it, reporting what it loaded (the
# console script itself is pip's, which imports `re` before ackdeck starts).
_PROBE = (
    "import sys\n"
    "from ackdeck.core.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('loaded:' + ','.join(sorted(sys.modules)), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


class Pushed:
    def __init__(self, done: subprocess.CompletedProcess[str], where: Path) -> None:
        self.code = done.returncode
        *lines, last = done.stderr.splitlines() or [""]
        assert last.startswith("loaded:"), done.stderr
        self.loaded = set(last.removeprefix("loaded:").split(","))
        # The error line, with the test's directory named the same in both runs.
        self.err = "\n".join(lines).replace(str(where), "<D>")


def _run(where: Path, *args: str) -> Pushed:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(where),
        "ACKDECK_HOME": str(where / "home"),
        "PYTHONPATH": PATHS,
    }
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Pushed(done, where)


def _status(where: Path, room: Path) -> dict[str, object]:
    """The counters a push moves, as `room status --json` gives them."""
    env = {**os.environ, "PYTHONPATH": PATHS, "ACKDECK_HOME": str(where / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "ackdeck.core.cli", "room", "status", str(room), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)["rooms"][0]
    return {k: row[k] for k in ("exists", "pending", "partial_bytes", "pushed_total", "epoch")}


def test_a_producers_push_to_a_set_up_room_loads_no_pathlib_re_json_or_the_like(
    tmp_path: Path,
) -> None:
    """Issue 43: `room push` imported 75 modules beyond a bare interpreter, pathlib and `re`
    among them (~2x `python -c pass` before any work): a push needs os and fcntl."""
    room = tmp_path / "inbox.txt"
    assert _run(tmp_path, "room", "push", str(room), "first").code == 0  # writes the ledger
    steady = _run(tmp_path, "room", "push", str(room), "second")
    assert steady.code == 0, steady.err
    assert sorted(steady.loaded & {*HEAVY_FOR_A_PUSH, DECK, ROOM}) == []
    # After an ack the ledger's base moved: still read from its slots, nothing more loaded.
    env = {**os.environ, "PYTHONPATH": PATHS, "ACKDECK_HOME": str(tmp_path / "home")}
    for verb in ("read", "ack"):
        subprocess.run(
            [sys.executable, "-m", "ackdeck.core.cli", "room", verb, str(room), "--session", "s"],
            env=env,
            capture_output=True,
            check=True,
            timeout=60,
        )
    after_ack = _run(tmp_path, "room", "push", str(room), "third")
    assert after_ack.code == 0, after_ack.err
    assert sorted(after_ack.loaded & {*HEAVY_FOR_A_PUSH, DECK, ROOM}) == []
    assert room.read_bytes() == b"third\n"
    assert _status(tmp_path, room)["pushed_total"] == len(b"first\nsecond\nthird\n")


# ----- the same push as the Deck's ----------------------------------------------------------
# Each case builds the same scene in a directory and returns the push's arguments in it.
Scene = Callable[[Path], list[str]]


def _missing_directory(d: Path) -> list[str]:
    return [str(d / "no-such-dir" / "r.txt"), "x"]


def _directory(d: Path) -> list[str]:
    (d / "r.txt").mkdir()
    return [str(d / "r.txt"), "x"]


def _trailing_slash(d: Path) -> list[str]:
    return [str(d / "r.txt") + "/", "x"]


def _fifo(d: Path) -> list[str]:
    os.mkfifo(d / "r.txt")
    return [str(d / "r.txt"), "x"]


def _device(d: Path) -> list[str]:
    return ["/dev/null", "x"]  # refused before anything is created beside it


def _symlink(d: Path) -> list[str]:
    (d / "target.txt").write_bytes(b"kept\n")
    (d / "r.txt").symlink_to(d / "target.txt")
    return [str(d / "r.txt"), "x"]


def _empty_line(d: Path) -> list[str]:
    return [str(d / "r.txt"), ""]


def _newline_in_line(d: Path) -> list[str]:
    return [str(d / "r.txt"), "two\nlines"]


def _sidecar_symlink(d: Path) -> list[str]:
    (d / "elsewhere").mkdir()
    (d / ".r.txt.ackdeck").symlink_to(d / "elsewhere")
    return [str(d / "r.txt"), "x"]


def _sidecar_a_file(d: Path) -> list[str]:
    (d / ".r.txt.ackdeck").write_bytes(b"")
    return [str(d / "r.txt"), "x"]


def _pushed_once(d: Path) -> Path:
    assert _run(d, "room", "push", str(d / "r.txt"), "before").code == 0
    return d / ".r.txt.ackdeck" / "ledger"


def _ledger_a_fifo(d: Path) -> list[str]:
    ledger = _pushed_once(d)
    ledger.unlink()
    os.mkfifo(ledger)
    return [str(d / "r.txt"), "x"]


def _ledger_garbage(d: Path) -> list[str]:
    _pushed_once(d).write_bytes(b"not a ledger at all\n" * 10)
    return [str(d / "r.txt"), "x"]


def _ledger_torn_body(d: Path) -> list[str]:
    """A slot whose checksum holds but whose body is not a store's: the slow reader names it."""
    from ackdeck.core.rooms.file import ledger_slots

    ledger = _pushed_once(d)
    body = b'{"base":1}'
    digest = ledger_slots.sha256_hex(body).encode()
    slot = ledger_slots.SLOT_MAGIC + b"99 %d %s " % (len(body), digest) + body
    raw = bytearray(ledger.read_bytes())
    raw[ledger_slots.LEDGER_SLOT : ledger_slots.LEDGER_SLOT + len(slot)] = slot
    ledger.write_bytes(bytes(raw))
    return [str(d / "r.txt"), "x"]


def _marks_a_fifo(d: Path) -> list[str]:
    _pushed_once(d)
    marks = d / ".r.txt.ackdeck" / "journey" / "seen"
    marks.unlink()
    os.mkfifo(marks)
    return [str(d / "r.txt"), "x"]


def _absent_room(d: Path) -> list[str]:
    return [str(d / "r.txt"), "first line"]


def _truncated_room(d: Path) -> list[str]:
    _pushed_once(d)
    assert _run(d, "room", "push", str(d / "r.txt"), "and more").code == 0
    (d / "r.txt").write_bytes(b"")  # behind ackdeck's back: a new epoch
    return [str(d / "r.txt"), "after"]


def _ledger_moved_aside(d: Path) -> list[str]:
    ledger = _pushed_once(d)
    ledger.rename(ledger.with_name("ledger.aside"))
    return [str(d / "r.txt"), "after"]


def _followed_symlink(d: Path) -> list[str]:
    (d / "target.txt").write_bytes(b"kept\n")
    (d / "r.txt").symlink_to(d / "target.txt")
    return ["--follow-symlinks", str(d / "r.txt"), "x"]


SCENES: dict[str, Scene] = {
    "missing directory": _missing_directory,
    "a directory": _directory,
    "a trailing slash": _trailing_slash,
    "a FIFO": _fifo,
    "a device": _device,
    "a symlink": _symlink,
    "an empty line": _empty_line,
    "a newline in the line": _newline_in_line,
    "the sidecar a symlink": _sidecar_symlink,
    "the sidecar a file": _sidecar_a_file,
    "the ledger a FIFO": _ledger_a_fifo,
    "the ledger garbage": _ledger_garbage,
    "the ledger's body not a store's": _ledger_torn_body,
    "the marks a FIFO": _marks_a_fifo,
    "an absent room": _absent_room,
    "a room truncated behind ackdeck's back": _truncated_room,
    "the ledger moved aside": _ledger_moved_aside,
    "a symlink followed on request": _followed_symlink,
}


def _files(d: Path) -> dict[str, bytes | str]:
    """What the scene's directory holds after the push: each regular file's bytes, and the
    kind of everything else (the sidecar's own changing files only by name)."""
    out: dict[str, bytes | str] = {}
    for p in sorted(d.rglob("*")):
        name = str(p.relative_to(d))
        if name.startswith("home") or name.startswith("pycache"):
            continue
        if p.is_symlink():
            out[name] = "symlink"
        elif p.is_dir():
            out[name] = "dir"
        elif not p.is_file():
            out[name] = "special"
        elif ".ackdeck" in name and p.name in ("ledger", "seen", "lock"):
            out[name] = "file"  # a ledger, marks and lock hold times and inode numbers
        else:
            out[name] = p.read_bytes()
    return out


@pytest.mark.parametrize("scene", SCENES.values(), ids=SCENES.keys())
def test_every_push_through_the_fast_path_says_and_leaves_what_the_decks_push_does(
    scene: Scene, tmp_path: Path
) -> None:
    fast_dir, deck_dir = tmp_path / "fast", tmp_path / "deck"
    fast_dir.mkdir()
    deck_dir.mkdir()
    fast = _run(fast_dir, "room", "push", *scene(fast_dir))
    deck = _run(deck_dir, "room", "push", *scene(deck_dir), "--json")
    assert DECK not in fast.loaded, "the plain push went through the Deck"
    assert DECK in deck.loaded
    assert (fast.code, fast.err) == (deck.code, deck.err)
    if fast.code:
        assert fast.err.startswith("ackdeck: error: ") and "\n" not in fast.err
    assert _files(fast_dir) == _files(deck_dir)
    room = fast_dir / "r.txt"
    if fast.code == 0 and room.is_file() and not room.is_symlink():
        assert _status(fast_dir, room) == _status(deck_dir, deck_dir / "r.txt")
