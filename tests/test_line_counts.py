"""Kept line counts (core/rooms/line_counts.py): a status with them equals a status without,
whatever happens to the room in between, and only appended bytes are read."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ackdeck.core.errors import AckdeckError
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.line_counts import LineCounts

STEPS = st.lists(
    st.sampled_from(
        [
            "push",
            "append_raw",
            "append_partial",
            "read_a",
            "read_b",
            "ack_a",
            "ack_b",
            "rewrite_same_size",
            "rewrite_longer_same_head",
            "truncate",
            "recreate",
            "remove",
        ]
    ),
    max_size=25,
)


def _apply(step: str, room: Room, path: Path, n: int) -> None:
    if step == "push":
        room.push(f"line {n}")
    elif step == "append_raw":  # an unlocked producer
        with path.open("ab") as f:
            f.write(b"raw %d\nraw2\n" % n)
    elif step == "append_partial":
        with path.open("ab") as f:
            f.write(b"part")
    elif step[:4] in ("read", "ack_"):
        try:
            room.read(step[-1]) if step.startswith("read") else room.ack(step[-1])
        except AckdeckError:
            pass  # refused (no read, stale read): the room is as it was, which is the point
    elif step == "rewrite_same_size" and path.exists():
        data = path.read_bytes()
        # Same size, same head where the file is long enough: only the mtime tells.
        keep = data[:4096]
        rest = data[4096:].replace(b"\n", b"x").replace(b"x", b"\n", 1)
        mtime = os.stat(path).st_mtime_ns
        with path.open("r+b") as f:
            f.write(keep + rest)
        os.utime(path, ns=(mtime + 1_000_000, mtime + 1_000_000))
    elif step == "rewrite_longer_same_head" and path.exists():
        data = path.read_bytes()
        # The middle changes, the file grows, and so does its last byte: a rewrite that keeps
        # the head and the last bytes counted is indistinguishable from an append without
        # reading the whole file (core/rooms/line_counts.py says so), so none is generated.
        body = data[1:].replace(b"\n", b"-")
        body = body[:-1] + (b"*" if body[-1:] == b"+" else b"+")
        with path.open("r+b") as f:
            f.write(data[:1] + body + b"\nnew\n")
    elif step == "truncate" and path.exists():
        with path.open("r+b") as f:
            f.truncate(len(path.read_bytes()) // 2)
    elif step == "recreate":
        path.unlink(missing_ok=True)
        path.write_bytes(b"fresh\n" * (n % 3))
    elif step == "remove":
        path.unlink(missing_ok=True)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=STEPS, lines=st.integers(0, 3000))
def test_kept_counts_equal_a_full_count_after_any_history(
    tmp_path_factory, steps: list[str], lines: int
) -> None:
    path = tmp_path_factory.mktemp("room") / "inbox.txt"
    path.write_bytes(b"".join(b"seed %d\n" % i for i in range(lines)))
    room = Room(path, clock=lambda: 1_000.0)  # one clock reading: statuses compare whole
    counts = LineCounts()
    assert room.status(counts) == room.status()
    for n, step in enumerate(steps):
        _apply(step, room, path, n)
        assert room.status(counts) == room.status(), (n, step)


def test_a_push_reads_only_the_appended_bytes(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"".join(b"%063d\n" % i for i in range(20_000)))  # 1.28 MB
    room = Room(path)
    counts = LineCounts()
    room.status(counts)
    room.push("one more")
    read: list[int] = []
    real = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        data = real(fd, n, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counting)
    st = room.status(counts)
    monkeypatch.undo()
    assert st.pending == 20_001
    assert counts.recounts == 1  # the first look only
    # The head fingerprint, the ledger, the checked tail and the new line; never the room.
    assert sum(read) < 64 * 1024, read


def test_a_rewrite_that_keeps_head_and_size_is_recounted(tmp_path: Path) -> None:
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"same head\n" + b"a\n" * 5000)
    room = Room(path)
    counts = LineCounts()
    assert room.status(counts).pending == 5001
    mtime = os.stat(path).st_mtime_ns
    path.write_bytes(b"same head\n" + b"aa" * 5000)  # one line now, same size
    os.utime(path, ns=(mtime + 5_000_000, mtime + 5_000_000))
    assert room.status(counts).pending == 1 == room.status().pending
    assert counts.recounts == 2


def test_the_services_scan_of_a_room_reads_only_what_was_appended(tmp_path: Path) -> None:
    # core.service.scan.scan_room is how a door scans a room through the service (#18): it
    # takes the scanner's kept counts and the status equals one counted from scratch.
    from ackdeck.core.service.refs import parse_room
    from ackdeck.core.service.scan import scan_room

    path = tmp_path / "inbox.txt"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1000)))
    ref = parse_room(str(path))
    counts = LineCounts()
    first = scan_room(ref, "inbox.txt", counts).status
    assert first is not None and first.pending == 1000
    Room(path).push("one more")
    kept = scan_room(ref, "inbox.txt", counts).status
    assert kept is not None and kept.pending == 1001
    assert counts.recounts == 1  # the second look read only the appended bytes
    plain = scan_room(ref, "inbox.txt").status
    assert plain is not None and plain.pending == kept.pending
