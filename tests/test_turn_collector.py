"""A per-turn command's cyclic garbage collector (issue 43, ackdeck.core.cli.TURN_GC_THRESHOLD):
loading a read's or a hook's ~50 modules made Python's default thresholds run 7-8 collections
that walked objects living until exit and found nothing (~1.3 ms of a read). A per-turn
command now raises the youngest generation's threshold; every other command (the MCP server,
a run's supervisor: long-lived) keeps Python's, and an in-process caller gets its own back.
Real interpreters, real rooms."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ackdeck.core.cli import TURN_GC_THRESHOLD, main

# Counts the collections made from the moment the console script's run() starts (what site
# and ackdeck's own package import before it are not the command's), printed at exit by an
# atexit handler, which exit_now runs.
_PROBE = (
    "import atexit, gc, sys\n"
    "from ackdeck.core.cli import run\n"
    "made = []\n"
    "gc.callbacks.append(lambda phase, info: phase == 'start' and made.append(info))\n"
    "atexit.register(lambda: print('collections:', len(made), file=sys.stderr))\n"
    "sys.argv = ['ackdeck', *sys.argv[1:]]\n"
    "run()\n"
)


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "ACKDECK_HOME": str(tmp_path / "home"),
        "ACKDECK_SESSION": "s1",
    }


def _collections(args: list[str], tmp_path: Path, stdin: str = "") -> int:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=tmp_path,
        env=_env(tmp_path),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [x for x in out.stderr.splitlines() if x.startswith("collections:")]
    assert lines, out.stderr[-2000:]
    return int(lines[-1].split()[1])


def test_a_per_turn_command_runs_no_collection_while_it_loads_and_runs(tmp_path: Path) -> None:
    """A read, an ack, a status and the hooks that read rooms, each in its own interpreter:
    no collection from run() to the exit (7-8 of them before, one a generation-1 walk)."""
    room = str(tmp_path / "r.txt")
    Path(room).write_text("a line\n")
    hooks = ["--room", room, "--session", "s1"]
    commands = [
        (["room", "read", room], ""),
        (["room", "ack", room], ""),
        (["room", "status", room], ""),
        (["hooks", "prompt", *hooks], "{}"),
        (["hooks", "stop", *hooks], "{}"),
        (["hooks", "bootstrap", *hooks], "{}"),
    ]
    made = {" ".join(args[:2]): _collections(args, tmp_path, stdin) for args, stdin in commands}
    assert made == {name: 0 for name in made}


def _threshold_at_open(argv: list[str], path: str) -> tuple[tuple[int, ...], bool]:
    """main(argv) in this process; the collector's threshold and state when the command
    opened `path` (an audit hook: the real open of the real room)."""
    seen: list[tuple[tuple[int, ...], bool]] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "open" and not seen and os.fsdecode(args[0]) == path:  # type: ignore[arg-type]
            seen.append((gc.get_threshold(), gc.isenabled()))

    sys.addaudithook(hook)  # cannot be removed: it stops looking after its first sight
    assert main(argv) == 0
    assert seen, f"{argv} never opened {path}"
    return seen[0]


@pytest.fixture
def own_thresholds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The caller's collector with thresholds of its own (not Python's defaults), restored
    after the test whatever main() did."""
    before = gc.get_threshold()
    monkeypatch.setenv("ACKDECK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ACKDECK_SESSION", "s1")
    gc.set_threshold(1234, 5, 6)
    yield (1234, 5, 6)
    gc.set_threshold(*before)


def test_only_a_per_turn_command_raises_the_threshold_and_the_caller_gets_its_own_back(
    tmp_path: Path, own_thresholds: tuple[int, int, int], capfd: pytest.CaptureFixture[str]
) -> None:
    """The plain `room read` (the per-turn parser) runs with the raised threshold, collector
    still on; the same read spelled so that argparse parses it (`--jso`, an abbreviation: the
    path of every long-lived command) runs with the caller's thresholds; after each, and after
    an error, the caller has its own thresholds back."""
    room = str(tmp_path / "r.txt")
    Path(room).write_text("one\ntwo\n")
    turn = _threshold_at_open(["room", "read", room], room)
    assert turn == ((TURN_GC_THRESHOLD, 5, 6), True)
    assert gc.get_threshold() == own_thresholds
    Path(room).write_text("three\n")
    parsed = _threshold_at_open(["room", "read", "--jso", room], room)
    assert parsed == (own_thresholds, True)
    assert gc.get_threshold() == own_thresholds
    assert main(["room", "ack", str(tmp_path / "missing" / "r.txt")]) != 0  # an error
    assert main(["room", "read", "--no-such-option", room]) != 0  # argparse's error
    assert gc.get_threshold() == own_thresholds
    capfd.readouterr()


@pytest.mark.parametrize("given", [TURN_GC_THRESHOLD * 2, 0], ids=["higher", "off"])
def test_a_callers_higher_threshold_or_automatic_collection_off_is_kept(
    given: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The raise never lowers a threshold a caller set above it, and never turns automatic
    collection back on where a caller switched it off with a threshold of 0."""
    before = gc.get_threshold()
    monkeypatch.setenv("ACKDECK_HOME", str(tmp_path / "home"))
    room = str(tmp_path / "r.txt")
    Path(room).write_text("one\n")
    try:
        gc.set_threshold(given, 10, 10)
        assert _threshold_at_open(["room", "read", room], room) == ((given, 10, 10), True)
        assert gc.get_threshold() == (given, 10, 10)
    finally:
        gc.set_threshold(*before)
    capfd.readouterr()


def _until(condition: Callable[[], bool], what: str, bound: float = 60.0) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


def test_overlapping_in_process_calls_give_the_caller_its_thresholds_back(
    tmp_path: Path, own_thresholds: tuple[int, int, int], capfd: pytest.CaptureFixture[str]
) -> None:
    """Two per-turn commands run by main() in two threads of one caller, the first returning
    while the second still waits: the second found the first's raised threshold when it
    started, and must not hand that back as the caller's (it did: the caller was left with
    TURN_GC_THRESHOLD). Each waits for its line's ack (`room push --wait-ack`), which another
    interpreter gives, in this order."""
    rooms = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    codes: list[int] = []

    def push(room: str) -> None:
        argv = ["room", "push", room, "line", "--wait-ack", "--session", "q", "--timeout", "60"]
        codes.append(main(argv))

    threads = [threading.Thread(target=push, args=(room,)) for room in rooms]
    for thread, room in zip(threads, rooms, strict=True):
        thread.start()  # the second starts while the first waits inside main()
        _until(lambda room=room: os.path.exists(room) and os.path.getsize(room) > 0, room)
    env = {**_env(tmp_path), "ACKDECK_SESSION": "q"}
    for thread, room in zip(threads, rooms, strict=True):
        for action in ("read", "ack"):
            subprocess.run(
                [sys.executable, "-m", "ackdeck.core.cli", "room", action, room],
                env=env,
                cwd=tmp_path,
                check=True,
                capture_output=True,
                timeout=120,
            )
        thread.join(timeout=120)
        assert not thread.is_alive()
    assert codes == [0, 0]
    assert gc.get_threshold() == own_thresholds
    capfd.readouterr()
