"""A line a producer that does not lock writes in two appends, reopening the path for each
(`printf 'L%d' $i >> room; printf '\\n' >> room`), stays whole across an ack, whenever its
rename happens: its first half may land in the inode the ack replaces, its second in the new
file (core/rooms/file/carry_over.py). The ack is held at its named fault points; the halves are
written by a real shell, as a poller would."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from tests.helpers.pauses import start_paused_ack, wait_for_step


def _half(path: Path, text: str) -> None:
    """One `printf >> room` of a shell poller: opens the path, appends, closes."""
    subprocess.run(["sh", "-c", 'printf "$1" >> "$2"', "sh", text, str(path)], check=True)


def _room_with_a_read(tmp_path: Path) -> Path:
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"a\n")
    Room(path).read("s")
    with open(path, "ab") as f:
        f.write(b"b\n")  # arrived after the read: the ack keeps it
    return path


def _ack_through(path: Path, cli_env: dict[str, str], steps: dict[str, str]) -> None:
    """Run `room ack` held at each of `steps` in turn, writing that step's half there."""
    marker = path.with_name("paused-at")
    proc = start_paused_ack(path, marker, list(steps), cli_env)
    try:
        for step, half in steps.items():
            wait_for_step(proc, marker, step)
            _half(path, half)
            marker.unlink()  # let the acker go on
        _finish(proc, marker)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _finish(proc: subprocess.Popen[bytes], marker: Path) -> None:
    """Let the acker run to its end, past any later pause at the same steps (a second
    splice pauses where the first did)."""
    deadline = time.monotonic() + 120
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the acker never finished"
        marker.unlink(missing_ok=True)
        time.sleep(0.01)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 0, err


def _settled_lines(path: Path) -> list[bytes]:
    """The room's lines once every replaced inode was retired (grace 0): whatever a later
    sweep would carry is in by then, so a half left behind would show (glued or alone)."""
    room = Room(path, grace=0.0)
    got = room.read("s").lines
    assert path.read_bytes().endswith(b"\n")
    return got


@pytest.mark.parametrize("step", ["after-temp", "after-link", "after-pending", "before-rename"])
def test_a_line_begun_in_the_old_inode_between_copy_and_rename_is_whole_in_the_new(
    tmp_path: Path, cli_env: dict[str, str], step: str
) -> None:
    path = _room_with_a_read(tmp_path)
    _ack_through(path, cli_env, {step: "L1"})  # the first half: into the inode being replaced
    _half(path, "\\n")  # the second half: through the path, into the new file
    _half(path, "L2")
    _half(path, "\\n")
    assert _settled_lines(path) == [b"b", b"L1", b"L2"]
    assert Room(path).status().pending == 3


def test_a_second_half_that_reached_the_new_file_before_the_splice_follows_its_first(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    path = _room_with_a_read(tmp_path)
    # First half after the catch-up, in the old inode; second half right after the rename, in
    # the new file, before the ack looked at the old inode again.
    _ack_through(path, cli_env, {"before-rename": "L1", "after-rename": "\\n"})
    _half(path, "L2")
    _half(path, "\\n")
    assert _settled_lines(path) == [b"b", b"L1", b"L2"]


def test_a_half_line_that_lands_during_the_splice_is_placed_by_the_next_one(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    path = _room_with_a_read(tmp_path)
    steps = {
        "before-rename": "L1",
        "after-rename": "\\n",
        "before-splice-rename": "L2",  # into the file the splice is replacing, after its catch-up
        "after-splice-rename": "\\n",
    }
    _ack_through(path, cli_env, steps)
    _half(path, "L3")
    _half(path, "\\n")
    assert _settled_lines(path) == [b"b", b"L1", b"L2", b"L3"]
    st = Room(path).status()
    assert (st.pending, st.acked_total, st.partial_bytes) == (4, 1, 0)


def test_a_writer_holding_the_old_inode_finishes_its_line_there(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # The other write pattern: one descriptor, several writes. Its rest goes to the old
    # inode, so the new file must not start the line (the sweeps carry it whole).
    path = _room_with_a_read(tmp_path)
    held = open(path, "ab", buffering=0)  # noqa: SIM115 (closed below, after the ack)
    try:
        marker = path.with_name("paused-at")
        proc = start_paused_ack(path, marker, ["before-rename"], cli_env)
        wait_for_step(proc, marker, "before-rename")
        held.write(b"H1")
        marker.unlink()
        _finish(proc, marker)
        _half(path, "L2")
        _half(path, "\\n")
        held.write(b"\n")
    finally:
        held.close()
    assert sorted(_settled_lines(path)) == [b"H1", b"L2", b"b"]


def test_a_tail_is_spliced_at_its_byte_whatever_the_chunking() -> None:
    from ackdeck.core.rooms.file.carry_over import spliced

    data = b"b\nL1"
    for at in range(len(data) + 1):
        for size in (1, 2, 3, len(data) + 1):
            chunks = [data[i : i + size] for i in range(0, len(data), size)]
            assert b"".join(spliced(chunks, at, b"XY")) == data[:at] + b"XY" + data[at:]


@pytest.mark.parametrize("tail", ["L1\\n", "L1"])
def test_a_tail_spliced_by_an_ack_killed_right_after_the_splice_is_in_the_room_once(
    tmp_path: Path, cli_env: dict[str, str], tail: str
) -> None:
    # Issue 42, class 1: the splice put the replaced inode's tail into the room by a rename,
    # and a kill right after it made the recovery carry that tail out of the inode again (a
    # duplicate line, or a duplicated half glued onto the next one).
    from tests.helpers.pauses import kill9

    path = _room_with_a_read(tmp_path)
    marker = path.with_name("paused-at")
    proc = start_paused_ack(path, marker, ["before-rename", "after-splice-rename"], cli_env)
    try:
        wait_for_step(proc, marker, "before-rename")
        _half(path, tail)  # after the catch-up, into the inode being replaced
        marker.unlink()
        wait_for_step(proc, marker, "after-splice-rename")
        kill9(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not tail.endswith("\\n"):
        _half(path, "\\n")  # the line's second half, through the path
    _half(path, "L2\\n")
    assert _settled_lines(path) == [b"b", b"L1", b"L2"]
    assert Room(path).status().acked_total == 1


def test_a_line_being_written_into_the_new_file_during_the_splice_is_never_torn(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # Seen in CI (tests/test_room_windows.py, two producers appending 8 KB lines, 2 of 19,772
    # torn): a producer opened the new file after the ack's rename and was inside its write
    # when the splice copied that file, partial last line included. Its rest went into the
    # file the splice replaced, and the sweeps carried it after another producer's line: one
    # line glued to another, and a stray rest. A write in progress is a writer holding its
    # descriptor with part of its line out; here it is held across two writes.
    path = _room_with_a_read(tmp_path)
    marker = path.with_name("paused-at")
    proc = start_paused_ack(path, marker, ["before-rename", "after-rename"], cli_env)
    held = None
    try:
        wait_for_step(proc, marker, "before-rename")
        _half(path, "X1\\n")  # into the inode being replaced, after the catch-up: a splice
        marker.unlink()
        wait_for_step(proc, marker, "after-rename")
        held = open(path, "ab", buffering=0)  # noqa: SIM115 (closed below)
        held.write(b"H1")  # the new file, its line half out when the splice copies it
        marker.unlink()
        _finish(proc, marker)
        _half(path, "Y1\\n")  # another producer, through the path
        held.write(b"\n")
    finally:
        if held is not None:
            held.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sorted(_settled_lines(path)) == [b"H1", b"X1", b"Y1", b"b"]
