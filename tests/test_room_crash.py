"""kill -9 of an acking process at every step of the ack.

The acker is a real `ackdeck room ack` subprocess started with ACKDECK_TEST_PAUSE_AT=<step> (see
core/rooms/file/room.py `_pause`): it writes the step name to a marker file and sleeps there, so the
test can act as a producer at exactly that point and then SIGKILL it. The room must then be the old
file or the new one, never torn, and the next read/ack must recover with nothing lost."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from ackdeck.core.base import atomic
from ackdeck.core.errors import ColdAck
from ackdeck.core.rooms.file.room import Room
from tests.helpers.pauses import kill9, start_paused_ack, wait_for_step

STEPS = [
    "before-size",
    "before-temp",
    "mid-temp",
    "after-temp",
    "after-link",
    "after-pending",
    "before-rename",
    "after-rename",
    "after-sweep",
    "after-fsync-dir",
    "after-audit",
    "after-commit",
    "after-receipt",
]
RENAMED = STEPS.index("after-rename")


def _lines(data: bytes) -> list[bytes]:
    assert data == b"" or data.endswith(b"\n"), f"torn room: {data!r}"
    return data[:-1].split(b"\n") if data else []


@pytest.mark.parametrize("step", STEPS)
def test_kill9_at_each_ack_step_leaves_old_or_new_and_recovers(
    tmp_path: Path, cli_env: dict[str, str], step: str
) -> None:
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"a\nb\n")
    room = Room(path)
    assert room.read("s").lines == [b"a", b"b"]
    with open(path, "ab") as f:
        f.write(b"late\n")  # arrived after the read: must be kept
    # An unlocked writer that opened the path before the ack and writes only after the
    # kill: if the rename happened, its bytes land in the replaced inode.
    held = os.open(path, os.O_WRONLY | os.O_APPEND)
    marker = tmp_path / "paused-at"
    proc = start_paused_ack(path, marker, [step], cli_env)
    try:
        wait_for_step(proc, marker, step)
        # At the pause the room is the old file or the new one, complete lines only.
        at_pause = _lines(path.read_bytes())
        if STEPS.index(step) < RENAMED:
            assert at_pause == [b"a", b"b", b"late"]
        else:
            assert at_pause == [b"late"]
        with open(path, "ab") as f:
            f.write(b"during\n")  # a `>>` producer at exactly this point
        kill9(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    os.write(held, b"held\n")
    os.close(held)
    _lines(path.read_bytes())  # still not torn after the kill

    # Recovery: the next read sees everything unread; the killed session's ack completes.
    got = Room(path).read("s2").lines
    if step == "after-receipt":
        # The ack had finished, receipt included: acking again without a read is refused.
        with pytest.raises(ColdAck):
            Room(path).ack("s")
    else:
        assert Room(path).ack("s").mode in ("prefix", "noop")
    final = _lines(path.read_bytes())
    assert Counter(final) == Counter([b"late", b"during", b"held"]), (step, got, final)
    assert Counter(got) >= Counter([b"late", b"during", b"held"])
    # The counters tell the same story as the file: exactly a and b were acked.
    st = Room(path).status()
    assert (st.acked_total, st.pending, st.epoch) == (2, 3, 0)
    # No temps or orphan links survive the next exclusive operation.
    Room(path).ack("s2")
    leftovers = [n for n in os.listdir(tmp_path) if atomic.TEMP_MARK in n]
    links = [n for n in os.listdir(room.sidecar) if n.startswith("prev-")]
    assert leftovers == []
    ledger_links = [p.name for p in room._ledger().prev]
    assert sorted(links) == sorted(ledger_links)


def test_kill9_after_rename_before_sweep_keeps_late_unlocked_append(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # The race the replaced-inode link exists for: a `>>` writer appends to the old inode after
    # the acker copied it, and the acker dies after its rename, before it could sweep.
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"a\n")
    Room(path).read("s")
    marker = tmp_path / "paused-at"
    proc = start_paused_ack(path, marker, ["before-rename", "after-rename"], cli_env)
    try:
        # The old inode, once the temp copy and its catch-up (core/rooms/file/carry_over.py) are
        # done.
        wait_for_step(proc, marker, "before-rename")
        with open(path, "ab") as f:
            f.write(b"slipped in\n")
        marker.unlink()  # let the acker continue to its rename
        wait_for_step(proc, marker, "after-rename")
        assert path.read_bytes() == b""  # renamed; the late line is only in the old inode
        kill9(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert Room(path).read("s").lines == [b"slipped in"]
    assert path.read_bytes() == b"slipped in\n"


def test_kill9_twice_in_a_row_still_loses_nothing(tmp_path: Path, cli_env: dict[str, str]) -> None:
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"a\nb\n")
    Room(path).read("s")
    for step in ("after-pending", "after-rename"):
        marker = tmp_path / f"paused-{step}"
        proc = start_paused_ack(path, marker, [step], cli_env)
        try:
            wait_for_step(proc, marker, step)
            with open(path, "ab") as f:
                f.write(f"{step}\n".encode())
            kill9(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    res = Room(path).ack("s")
    assert res.mode == "noop"  # the second killed ack had already removed a and b
    assert _lines(path.read_bytes()) == [b"after-pending", b"after-rename"]
    assert Room(path).status().acked_total == 2


@pytest.mark.parametrize("step", STEPS)
def test_kill9_at_each_ack_step_of_an_old_format_receipt_leaves_no_text_once_recovered(
    tmp_path: Path, cli_env: dict[str, str], step: str
) -> None:
    # A receipt written before line digests holds the consumed text (core/rooms/file/receipts.py).
    # Wherever its ack dies, the next ack completes it, and then no acked text is left in it.
    import json

    path = tmp_path / "inbox.txt"
    path.write_bytes(b"secret-a\nsecret-b\n")
    room = Room(path)
    room.read("s")
    receipt = room.receipt_file("s")
    header = json.loads(receipt.read_bytes().partition(b"\n")[0])
    del header["digests_sha256"]  # the previous format: the header, then the bytes read
    receipt.write_bytes(
        json.dumps(header, separators=(",", ":")).encode() + b"\n" + b"secret-a\nsecret-b\n"
    )
    path.write_bytes(path.read_bytes() + b"late\n")
    marker = tmp_path / "paused-at"
    proc = start_paused_ack(path, marker, [step], cli_env)
    try:
        wait_for_step(proc, marker, step)
        kill9(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if step == "after-receipt":
        with pytest.raises(ColdAck):
            Room(path).ack("s")
    else:
        assert Room(path).ack("s").mode in ("prefix", "noop")
    assert path.read_bytes() == b"late\n"
    assert b"secret" not in receipt.read_bytes()
    assert Room(path).status().acked_total == 2


@pytest.mark.parametrize(
    "write_at", ["before-size", "after-temp", "after-pending", "before-rename"]
)
def test_a_held_open_producers_line_written_during_an_ack_killed_after_its_rename_arrives_once(
    tmp_path: Path, cli_env: dict[str, str], write_at: str
) -> None:
    # Issue 42, class 1: a producer that keeps its O_APPEND descriptor across writes writes a
    # line while the ack is in flight; the ack's catch-up hands it to the new file, and the
    # ack is killed right after its rename. The recovery carried it out of the replaced inode
    # a second time (the catch-up's offset was not stored yet).
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"a\nb\n")
    Room(path).read("s")
    held = os.open(path, os.O_WRONLY | os.O_APPEND)
    marker = tmp_path / "paused-at"
    proc = start_paused_ack(path, marker, [write_at, "after-rename"], cli_env)
    try:
        wait_for_step(proc, marker, write_at)
        os.write(held, b"during\n")
        marker.unlink()
        wait_for_step(proc, marker, "after-rename")
        kill9(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    os.write(held, b"after\n")  # the same writer, still on the replaced inode
    os.close(held)
    got = Room(path).read("s2").lines
    assert Counter(got) == Counter([b"during", b"after"]), (write_at, got)
    assert Counter(_lines(path.read_bytes())) == Counter([b"during", b"after"])
    st = Room(path).status()
    assert (st.acked_total, st.pending) == (2, 2)
