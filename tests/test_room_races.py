"""Real processes racing real acks: unlocked `>>` producers, pushers, and wait()."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from ackdeck.core.rooms.file.room import Room
from tests.helpers.paths import REPO


def _sh_appender(path: Path, tag: str, stop: Path) -> subprocess.Popen[bytes]:
    # dash/sh `>>` reopens the path for every printf: exactly the seed's pollers. Each producer
    # writes until the test says stop, then prints how many lines it wrote: the race lasts as
    # long as the test needs, however fast or slow this machine is.
    script = (
        'i=0; while [ ! -e "$2" ]; do i=$((i+1)); printf "%s-%d\\n" "$3" $i >> "$1"; done; echo $i'
    )
    return subprocess.Popen(
        ["sh", "-c", script, "sh", str(path), str(stop), tag], stdout=subprocess.PIPE
    )


def _py_appender(path: Path, tag: str, stop: Path) -> subprocess.Popen[bytes]:
    code = (
        "import os, sys\n"
        "p, stop, tag, i = sys.argv[1], sys.argv[2], sys.argv[3], 0\n"
        "while not os.path.exists(stop):\n"
        "    i += 1\n"
        "    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)\n"
        "    os.write(fd, f'{tag}-{i}\\n'.encode())\n"
        "    os.close(fd)\n"
        "print(i)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(path), str(stop), tag], stdout=subprocess.PIPE
    )


def _pusher(path: Path, tag: str, stop: Path) -> subprocess.Popen[bytes]:
    code = (
        "import os, sys\n"
        "from ackdeck.core.rooms.file.room import Room\n"
        "r, stop, tag, i = Room(sys.argv[1]), sys.argv[2], sys.argv[3], 0\n"
        "while not os.path.exists(stop):\n"
        "    i += 1\n"
        "    r.push(f'{tag}-{i}')\n"
        "print(i)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(path), str(stop), tag], cwd=REPO, stdout=subprocess.PIPE
    )


def test_unlocked_appenders_racing_acks_lose_nothing(tmp_path: Path) -> None:
    # With only the two in-ack sweeps (no replaced-inode link) this lost about 1 line in 2400
    # on a loaded 2-core machine: a writer preempted between its open and its write lands in
    # the old inode after both sweeps. The link swept by later operations closes that window.
    path = tmp_path / "inbox.txt"
    stop = tmp_path / "stop"
    path.write_bytes(b"")
    room = Room(path)
    tags = ("sh1", "sh2", "py1", "push1")
    makers = (_sh_appender, _sh_appender, _py_appender, _pusher)
    procs = [make(path, tag, stop) for make, tag in zip(makers, tags, strict=True)]
    acked: Counter[bytes] = Counter()
    racing_acks = 0  # acks that removed lines while every producer was still writing
    seen: set[bytes] = set()
    deadline = time.monotonic() + 300  # only a real hang gets here
    try:
        # The race must really happen: keep the producers writing until many acks interleaved
        # with all four of them (a fixed line count ended before 6 acks on a fast CI machine).
        while racing_acks < 40 or len(seen) < len(tags):
            assert time.monotonic() < deadline, "acks and producers did not interleave"
            assert all(p.poll() is None for p in procs), "a producer exited early"
            got = room.read("agent")
            res = room.ack("agent")
            # One acking session: every ack removes exactly what its read returned.
            assert (res.mode, res.acked) == (
                ("prefix", len(got.lines)) if got.lines else ("noop", 0)
            )
            acked.update(got.lines)
            seen.update(line.split(b"-")[0] for line in got.lines)
            racing_acks += bool(got.lines)
    finally:
        stop.touch()
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    got = room.read("agent")
    acked.update(got.lines)
    room.ack("agent")
    counts = [int(out) for out in outs]
    expected = Counter(
        f"{tag}-{i}".encode() for tag, n in zip(tags, counts, strict=True) for i in range(1, n + 1)
    )
    remaining = path.read_bytes()
    lost = expected - acked
    dup = acked - expected
    print(f"acks={racing_acks} written={counts} lost={sum(lost.values())} dup={sum(dup.values())}")
    assert remaining == b""
    assert not lost, f"lost {sum(lost.values())} line(s), e.g. {list(lost)[:5]}"
    assert not dup, f"duplicated or torn: {list(dup)[:5]}"


def test_slow_writer_holding_the_old_path_is_swept_by_a_later_operation(tmp_path: Path) -> None:
    # A writer opened the path before several acks and writes between them: every line reaches
    # the room even though it lands in inodes that are no longer the room.
    path = tmp_path / "inbox.txt"
    room = Room(path)
    room.push("first")
    fds = []
    for i in range(3):
        fds.append(open(path, "ab", buffering=0))  # noqa: SIM115 - held across acks on purpose
        room.read("s")
        room.ack("s")
        room.push(f"pushed-{i}")
    for i, f in enumerate(fds):
        f.write(f"held-{i}\n".encode())
        f.close()
    seen = room.read("s").lines
    assert Counter(seen) == Counter([b"pushed-2", b"held-0", b"held-1", b"held-2"]), seen


def test_wait_returns_when_another_process_appends(tmp_path: Path) -> None:
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"old\n")
    room = Room(path)
    room.read("s")
    assert room.wait("s", timeout=0.3) is False  # read lines are not unread
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time, sys; time.sleep(0.5); open(sys.argv[1], 'ab').write(b'new\\n')",
            str(path),
        ]
    )
    t0 = time.monotonic()
    try:
        assert room.wait("s", timeout=30) is True
    finally:
        writer.wait(timeout=10)
    assert time.monotonic() - t0 < 20
    assert room.read("s").lines == [b"old", b"new"]


def test_wait_times_out_without_new_lines(tmp_path: Path) -> None:
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"partial without newline")
    t0 = time.monotonic()
    assert Room(path).wait("s", timeout=0.4) is False
    assert time.monotonic() - t0 >= 0.4


def test_wait_survives_the_rename_of_an_ack(tmp_path: Path) -> None:
    # A watch on the file would die with the inode an ack replaces; wait watches the directory.
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"a\n")
    room = Room(path)
    room.read("s")
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(room.wait("s", timeout=30)))
    t.start()
    time.sleep(0.3)
    other = Room(path)
    other.read("t")
    other.ack("t")  # rename over the file while s waits
    time.sleep(0.3)
    subprocess.run(["sh", "-c", f"printf 'after\\n' >> '{path}'"], check=True)
    t.join(timeout=30)
    assert result == [True]


def test_status_is_consistent_during_concurrent_acks(tmp_path: Path) -> None:
    """Every snapshot is one moment of the room while another thread pushes, reads and acks.

    The ledger's invariant for a room nobody rewrites: every line pushed (known from
    pushed_total, the bytes ever appended, as every later line is `x\n`) is either still
    pending or acked, and no total goes backwards. Per session, in flight (read, not acked)
    plus unread is exactly pending: an acked receipt counted against a ledger from before
    that ack (or a file from after it) leaves a gap. Each of these fails if status took its
    numbers at different moments (file, ledger, receipts)."""
    path = tmp_path / "inbox.txt"
    room = Room(path)
    for i in range(200):
        room.push(f"m{i}")
    initial = path.stat().st_size
    stop = threading.Event()
    errors: list[BaseException] = []

    def acker() -> None:
        r = Room(path)
        try:
            while not stop.is_set():
                r.push("x")
                r.read("a")
                r.ack("a")
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    t = threading.Thread(target=acker)
    t.start()
    acked_seen: set[int] = set()
    previous = room.status()
    deadline = time.monotonic() + 60
    try:
        # Until the acker has visibly acked many times between snapshots (or a real hang).
        while len(acked_seen) < 20 and time.monotonic() < deadline and not errors:
            st = room.status()
            assert st.partial_bytes == 0 and st.epoch == previous.epoch
            extra = st.pushed_total - initial
            assert extra >= 0 and extra % 2 == 0, st
            assert st.pending + st.acked_total == 200 + extra // 2, st
            assert st.pushed_total >= previous.pushed_total
            assert st.acked_total >= previous.acked_total
            assert st.preserved_total >= previous.preserved_total
            assert st.late_total == 0 and st.held_open == 0, st
            reader = st.sessions.get("a")
            if reader is not None:
                assert reader.in_flight >= 0 and reader.unread >= 0, st
                assert reader.in_flight + reader.unread == st.pending, st
            acked_seen.add(st.acked_total)
            previous = st
    finally:
        stop.set()
        t.join(timeout=30)
    assert errors == []
    assert len(acked_seen) >= 20, "the acks never ran between two snapshots"
