"""Race windows with unlocked writers, measured (issue 8, items 3 and 7).

- appends are never taken for a rewrite (no `stale` ack, no redelivery without a crash);
- a writer that holds its descriptor open across acks (or opens, pauses, then writes) loses
  nothing: replaced inodes are collected for as long as a process holds them open.

`make test` runs short versions; `make soak` (ACKDECK_SOAK=long, `-m soak`) runs each for
ACKDECK_SOAK_SECONDS (default 30).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from tests.helpers.mounts import mounted
from tests.helpers.wait import eventually

LONG = os.environ.get("ACKDECK_SOAK") == "long"
SOAK_SECONDS = float(os.environ.get("ACKDECK_SOAK_SECONDS", "30"))


def _big_appender(path: Path, seconds: float, tag: str) -> subprocess.Popen[bytes]:
    # Biggish lines widen the moment where ext4 has updated mtime but not yet the size; the
    # short pause (load shaping, not synchronisation) keeps the room small so acks stay fast.
    code = (
        "import os, sys, time\n"
        "p, end, tag = sys.argv[1], time.monotonic() + float(sys.argv[2]), sys.argv[3]\n"
        "i = 0\n"
        "while time.monotonic() < end:\n"
        "    i += 1\n"
        "    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)\n"
        "    os.write(fd, (f'{tag}-{i} ' + 'x' * 8000 + '\\n').encode())\n"
        "    os.close(fd)\n"
        "    time.sleep(0.0005)\n"
        "print(i)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(path), str(seconds), tag], stdout=subprocess.PIPE
    )


def _whole(line: bytes) -> bytes:
    """A big appender's line as its name, or marked torn (the test keeps names, not lines)."""
    name, _, rest = line.partition(b" ")
    return name if rest == b"x" * 8000 else b"torn:" + line[:40]


def _appends_are_never_a_rewrite(tmp_path: Path, seconds: float) -> dict[str, int]:
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"")
    room = Room(path)
    writers = [_big_appender(path, seconds, f"big{k}") for k in range(2)]
    got: Counter[bytes] = Counter()
    modes: Counter[str] = Counter()
    deadline = time.monotonic() + seconds + 120
    while any(w.poll() is None for w in writers):
        assert time.monotonic() < deadline, "writers did not finish"
        res = room.read("agent")
        ack = room.ack("agent")
        modes[ack.mode] += 1
        if ack.mode == "prefix":
            got.update(map(_whole, res.lines))
    counts = [int(w.communicate()[0]) for w in writers]
    while True:  # a read returns a page (1 MiB by default): drain what is left page by page
        res = room.read("agent")
        if not res.lines:
            break
        room.ack("agent")
        got.update(map(_whole, res.lines))
    # Each line exactly once and whole (a torn line is one lost and one foreign line).
    expected = Counter(
        f"big{k}-{i}".encode() for k, n in enumerate(counts) for i in range(1, n + 1)
    )
    stats = {
        "written": sum(counts),
        "acked": sum(got.values()),
        "lost": sum((expected - got).values()),
        "foreign": sum((got - expected).values()),
        "stale": modes["stale"],
        "acks": sum(modes.values()),
    }
    print("\nappends-vs-rewrite: " + " ".join(f"{k}={v}" for k, v in stats.items()))
    return stats


def test_concurrent_appends_are_never_mistaken_for_a_rewrite(tmp_path: Path) -> None:
    stats = _appends_are_never_a_rewrite(tmp_path, 6.0)
    assert stats["stale"] == 0, stats
    assert (stats["lost"], stats["foreign"]) == (0, 0), stats  # nothing lost, torn, repeated


@pytest.mark.soak
def test_concurrent_appends_are_never_mistaken_for_a_rewrite_long(tmp_path: Path) -> None:
    if not LONG:
        pytest.skip("long version: run `make soak` (ACKDECK_SOAK=long)")
    stats = _appends_are_never_a_rewrite(tmp_path, SOAK_SECONDS)
    assert (stats["stale"], stats["lost"], stats["foreign"]) == (0, 0, 0), stats


# ----- the filesystems the windows depend on ---------------------------------------------------
FILESYSTEMS = ["tmp", "tmpfs", "xfs", "btrfs"]


@pytest.fixture
def fs_dir(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A directory on the filesystem named by the test's parameter: `tmp` (the test's own,
    ext4 here), a real tmpfs, or xfs / btrfs on a loop-mounted image (root and mkfs.xfs /
    mkfs.btrfs needed; skipped with the reason otherwise). Unmounted in teardown."""
    kind = request.param
    if kind == "tmp":
        yield tmp_path
        return
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if kind == "tmpfs":
        args = ["-t", "tmpfs", "-o", "size=16m", "tmpfs"]
    else:
        image = tmp_path / f"{kind}.img"
        with open(image, "wb") as f:
            f.truncate(320 << 20)  # sparse; xfs wants at least 300 MB
        made = subprocess.run([f"mkfs.{kind}", "-q", str(image)], capture_output=True)
        if made.returncode != 0:
            pytest.skip(f"no {kind} here: mkfs.{kind} {made.stderr.decode().strip()[:80]}")
        args = ["-o", "loop", str(image)]
    with mounted(mnt, *args, what=kind):
        yield mnt


@pytest.mark.parametrize("fs_dir", FILESYSTEMS, indirect=True)
def test_a_room_removed_and_recreated_is_a_new_room_on_every_filesystem(fs_dir: Path) -> None:
    """Item 2 on each filesystem docs/concepts/decisions.md names: statx birth time tells the
    files apart (tests/test_room_habits.py drives the same through the CLI where ext4 reuses
    the inode)."""
    from ackdeck.core.base.fileid import birth_ns

    path = fs_dir / "r"
    path.write_bytes(b"build failed\ndeploy failed\n")
    room = Room(path)
    room.read("s")
    fd = os.open(path, os.O_RDONLY)
    first = birth_ns(fd)
    os.close(fd)
    path.unlink()
    path.write_bytes(b"build failed\ndeploy failed\nnew-3\n")
    fd = os.open(path, os.O_RDONLY)
    second = birth_ns(fd)
    os.close(fd)
    assert first is not None and second is not None and first != second
    res = room.ack("s")
    assert (res.mode, res.acked) == ("stale", 0), res
    assert path.read_bytes() == b"build failed\ndeploy failed\nnew-3\n"


# ----- the exact window, made to stand still with userfaultfd ---------------------------------
class _StalledWrite:
    """An O_APPEND write that stops inside the kernel after ext4 updated mtime and before it
    changed the size: its source page is registered with userfaultfd, so the copy faults and
    waits until `release()` supplies the page. x86_64 Linux, root or vm.unprivileged_userfaultfd.

    With `copied`, those bytes come first from an ordinary page: the kernel copies them (and
    grows the file by them) before it faults, so the write stands still half done, holding the
    inode lock, with a fragment of its line visible to every reader.
    """

    def __init__(self, path: Path, data: bytes, copied: bytes = b"") -> None:
        import ctypes
        import fcntl
        import mmap
        import struct
        import threading

        if os.uname().machine != "x86_64":
            pytest.skip("userfaultfd numbers are x86_64's")
        self._ctypes, self._fcntl, self._struct = ctypes, fcntl, struct
        libc = ctypes.CDLL(None, use_errno=True)
        uffd = libc.syscall(323, os.O_CLOEXEC | os.O_NONBLOCK)  # userfaultfd(2)
        if uffd < 0:
            pytest.skip(f"userfaultfd unavailable: {os.strerror(ctypes.get_errno())}")
        self.uffd = uffd
        api = bytearray(struct.pack("QQQ", 0xAA, 0, 0))
        fcntl.ioctl(uffd, 0xC018AA3F, api)  # UFFDIO_API
        size = mmap.PAGESIZE
        assert len(copied) <= size
        self.pages = mmap.mmap(-1, 2 * size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self.pages[size - len(copied) : size] = copied  # the first page is present
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self.pages)) + size
        reg = bytearray(struct.pack("QQQQ", self.addr, size, 1, 0))
        fcntl.ioctl(uffd, 0xC020AA00, reg)  # UFFDIO_REGISTER, mode MISSING
        self.src = ctypes.create_string_buffer(data.ljust(mmap.PAGESIZE, b"\0"), mmap.PAGESIZE)
        self.source = memoryview(self.pages)[size - len(copied) : size + len(data)]
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self.thread = threading.Thread(target=self._write)
        self.thread.start()
        import select

        ready, _, _ = select.select([uffd], [], [], 60)  # the fault: the write is stalled
        assert ready, "the write never faulted"
        os.read(uffd, 32)

    def _write(self) -> None:
        os.write(self.fd, self.source)

    def release(self) -> None:
        copy = bytearray(
            self._struct.pack(
                "QQQQq", self.addr, self._ctypes.addressof(self.src), len(self.src), 0, 0
            )
        )
        self._fcntl.ioctl(self.uffd, 0xC028AA03, copy)  # UFFDIO_COPY: the write goes on
        self.thread.join(60)
        os.close(self.fd)
        os.close(self.uffd)


def _blocked_in(tid: int, pid: int | str = "self") -> int | None:
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            first = f.read().split()[0]
    except (FileNotFoundError, IndexError):
        return None
    return int(first) if first.lstrip("-").isdigit() else None


@pytest.mark.parametrize("fs_dir", FILESYSTEMS, indirect=True)
def test_an_append_caught_between_its_mtime_and_its_size_is_not_a_rewrite(fs_dir: Path) -> None:
    import threading

    path = fs_dir / "inbox.txt"
    path.write_bytes(b"a\n")
    os.utime(path, ns=(0, 1_000_000_000))  # so the append's mtime surely differs
    room = Room(path)
    assert room.read("s").lines == [b"a"]
    writer = _StalledWrite(path, b"late\n")
    try:
        st = os.stat(path)
        # The window itself: the same size as read, a newer mtime, and a write in progress.
        assert (st.st_size, st.st_mtime_ns != 1_000_000_000) == (2, True)
        results: list[object] = []
        acker = threading.Thread(target=lambda: results.append(room.ack("s")))
        acker.start()
        # Until it waits for the append's inode lock: lseek (8), or pread (17) on xfs.
        eventually(
            lambda: not acker.is_alive() or _blocked_in(acker.native_id or 0) in (8, 17),
            what="the ack to finish or wait",
            every=0.001,
        )
    finally:
        writer.release()
    acker.join(60)
    res = results[0]
    assert (res.mode, res.acked) == ("prefix", 1), res  # type: ignore[attr-defined]
    assert path.read_bytes() == b"late\n"


@pytest.mark.parametrize("fs_dir", FILESYSTEMS, indirect=True)
def test_an_append_caught_half_written_is_not_torn_by_an_ack(
    tmp_path: Path, fs_dir: Path, cli_env: dict[str, str]
) -> None:
    """ext4 and tmpfs grow the file page by page while an append copies, so an ack can see the
    first part of an unlocked producer's line. Copied into the new room, that fragment got the
    next producer's line glued onto it and the rest of the line carried in later on its own:
    two lines torn (seen ~1 in 60,000 lines with two `printf >> room` loops racing acks)."""
    from tests.helpers.pauses import start_paused_ack, wait_for_step

    path = fs_dir / "inbox.txt"
    path.write_bytes(b"x" * 3095 + b"\n")  # the append starts 1000 bytes before a page ends
    Room(path).read("s")
    marker = tmp_path / "pause"
    acker = start_paused_ack(path, marker, ["before-size", "after-rename"], cli_env)
    wait_for_step(acker, marker, "before-size")
    head, tail = b"A" * 1000, b"B" * 99 + b"\n"
    writer = _StalledWrite(path, tail, copied=head)
    try:
        if os.stat(path).st_size != 4096:
            pytest.skip("this filesystem does not show a half-done append")
        marker.unlink()  # the ack goes on while the append stands half done

        # Until it waits for the append's inode lock: lseek (8), pread (17), link (86) or
        # rename (82).
        def went_on_or_waits() -> bool:
            if _blocked_in(acker.pid, acker.pid) in (8, 17, 82, 86) or marker.exists():
                return True
            assert acker.poll() is None, acker.stderr.read() if acker.stderr else ""
            return False

        eventually(went_on_or_waits, what="the ack to go on or wait", every=0.001)
    finally:
        writer.release()
    wait_for_step(acker, marker, "after-rename")
    with open(path, "ab") as other:
        other.write(b"other\n")  # a producer that opens the path per line, into the new room
    marker.unlink()
    assert acker.wait(60) == 0, acker.stderr.read() if acker.stderr else ""
    lines = Room(path).read("t").lines  # also carries late lines out of the replaced inode
    assert sorted(lines) == [head + tail[:-1], b"other"], [x[:12] + b"..." for x in lines]


# ----- 7. writers that hold a descriptor across acks -----------------------------------------
_HOLDER = """
import os, sys, time
p, end, gap = sys.argv[1], time.monotonic() + float(sys.argv[2]), float(sys.argv[3])
fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)  # held for the whole run
i = 0
while time.monotonic() < end:
    i += 1
    os.write(fd, f"hold-{i}\\n".encode())
    time.sleep(gap)
os.close(fd)
print(i)
"""

_PAUSER = """
import os, random, sys, time
p, end = sys.argv[1], time.monotonic() + float(sys.argv[2])
rng = random.Random(7)
i = 0
while time.monotonic() < end:
    i += 1
    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    time.sleep(rng.uniform(0, 0.5))  # opened before an ack's rename, writes after it
    os.write(fd, f"pause-{i}\\n".encode())
    os.close(fd)
print(i)
"""


def _held_writers_race(tmp_path: Path, seconds: float, grace: float) -> dict[str, int]:
    path = tmp_path / "inbox.txt"
    path.write_bytes(b"")
    room = Room(path, grace=grace)
    writers = {
        "hold": subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path), str(seconds), "0.05"],
            stdout=subprocess.PIPE,
        ),
        "pause": [
            subprocess.Popen(
                [sys.executable, "-c", _PAUSER, str(path), str(seconds)], stdout=subprocess.PIPE
            )
            for _ in range(4)
        ],
    }
    procs = [writers["hold"], *writers["pause"]]  # type: ignore[list-item]
    got: Counter[bytes] = Counter()
    acks = 0
    max_held = 0
    deadline = time.monotonic() + seconds + 120
    while any(p.poll() is None for p in procs):
        assert time.monotonic() < deadline, "writers did not finish"
        res = room.read("agent")
        ack = room.ack("agent")
        assert ack.mode in ("prefix", "noop"), ack
        got.update(res.lines)
        acks += 1
        max_held = max(max_held, getattr(room.status(), "held_open", 0))
    expected: Counter[bytes] = Counter()
    n_hold = int(writers["hold"].communicate()[0])  # type: ignore[union-attr]
    expected.update(f"hold-{i}".encode() for i in range(1, n_hold + 1))
    for w in writers["pause"]:  # type: ignore[union-attr]
        n = int(w.communicate()[0])
        expected.update(f"pause-{i}".encode() for i in range(1, n + 1))
    # Every writer has exited: replaced inodes are retired at their next sweep (after the
    # grace period), carrying whatever is left. Wait for that, bounded.
    drain_deadline = time.monotonic() + grace + 60
    while got != expected and time.monotonic() < drain_deadline:
        res = room.read("agent")
        room.ack("agent")
        got.update(res.lines)
        if not res.lines:
            room.wait("agent", timeout=0.2)
    lost = expected - got
    dup = got - expected
    st = room.status()
    stats = {
        "written": sum(expected.values()),
        "acks": acks,
        "lost": sum(lost.values()),
        "dup": sum(dup.values()),
        "late_total": getattr(st, "late_total", 0),
        "max_held_open": max_held,
    }
    print("\nheld-writers: " + " ".join(f"{k}={v}" for k, v in stats.items()))
    assert not lost, f"lost {sum(lost.values())} line(s), e.g. {sorted(lost)[:5]}"
    assert not dup, f"duplicated: {sorted(dup)[:5]}"
    return stats


def test_writers_holding_replaced_inodes_lose_nothing(tmp_path: Path) -> None:
    # A short grace period so the held-open rule (not the timer) is what saves the lines.
    stats = _held_writers_race(tmp_path, seconds=8.0, grace=1.0)
    assert stats["max_held_open"] >= 1 and stats["late_total"] > 0, stats


@pytest.mark.soak
def test_writers_holding_replaced_inodes_lose_nothing_long(tmp_path: Path) -> None:
    if not LONG:
        pytest.skip("long version: run `make soak` (ACKDECK_SOAK=long)")
    _held_writers_race(tmp_path, seconds=max(30.0, SOAK_SECONDS), grace=1.0)


def test_the_kernel_and_proc_both_tell_a_replaced_inode_held_by_a_writer(tmp_path: Path) -> None:
    from ackdeck.core.rooms.file.prev_inodes import held_open, open_for_writing

    path = tmp_path / "old-inode"
    path.write_bytes(b"")
    st = os.stat(path)
    key = (st.st_dev, st.st_ino)
    assert open_for_writing(path) is False and held_open([key]) == set()
    writer = subprocess.Popen(
        ["sh", "-c", 'exec 3>>"$1"; echo ready; read _', "sh", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
        assert open_for_writing(path) is True
        assert held_open([key]) == {key}
    finally:
        writer.communicate(b"\n", timeout=60)
    assert open_for_writing(path) is False and held_open([key]) == set()


async def test_late_writers_show_in_status_json_and_the_dashboard(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """The owner sees when a room had late writers: `room status`, its JSON (also MCP's
    room_status) and the dashboard's room row."""
    import json

    from ackdeck.tui.app import make_app
    from ackdeck.tui.testing import fixed_clock, quiet_config, screen_text, settle
    from tests.helpers.cli import ackdeck

    path = tmp_path / "inbox.txt"
    path.write_bytes(b"a\n")
    # A writer that opens the room, keeps its descriptor, and writes after an ack replaced it.
    writer = subprocess.Popen(
        [
            "sh",
            "-c",
            'exec 3>>"$1"; echo ready; read _; echo late >&3; echo wrote; read _',
            "sh",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert writer.stdin is not None and writer.stdout is not None
    try:
        assert writer.stdout.readline() == b"ready\n"
        room = Room(path, grace=0.0)  # retirement is due at once: only the writer keeps it
        room.read("s")
        assert room.ack("s").acked == 1
        writer.stdin.write(b"go\n")
        writer.stdin.flush()
        assert writer.stdout.readline() == b"wrote\n"
        assert room.read("s").lines == [b"late"]  # carried in; the inode is kept, held open
        out = ackdeck(cli_env, "room", "status", str(path))
        assert out.returncode == 0, out.stderr
        assert (
            "  late writers: 1 line carried in from replaced files; 1 replaced file "
            "still held open by a writer" in out.stdout.splitlines()
        )
        out = ackdeck(cli_env, "room", "status", str(path), "--json")
        got = json.loads(out.stdout)["rooms"][0]
        assert (got["late_total"], got["held_open"]) == (1, 1), got
        app = make_app(quiet_config([path]), clock=fixed_clock)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            row = next(line for line in screen_text(app).splitlines() if "inbox.txt" in line)
            assert "late 1" in row and "held 1" in row, row
    finally:
        writer.kill()
        writer.wait(60)
