"""Memory is bounded by a page, not by the room: a read (and an ack-all) returns at most a
page of whole lines and says how many more wait; its receipt covers only that page; a line
longer than the page comes alone and whole; running out of memory is one line and records
nothing. On both backends, and through the CLI under a real address-space limit."""

from __future__ import annotations

import json
import random
import resource
import subprocess
from pathlib import Path

import pytest

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.results import PAGE_BYTES
from ackdeck.core.service.refs import open_room
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.paths import REPO

LIMIT_AS = 450 << 20  # the address space the reads ran out of
BIG = 200 << 20  # a room much bigger than a page, well inside the disk


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def _read_under_limit(room: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ACKDECK, "room", "read", str(room), "--session", "agent", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        preexec_fn=_limited,
        timeout=600,
    )


def _receipts(room: Path) -> list[Path]:
    side = room.parent / f".{room.name}.ackdeck" / "receipts"
    return [p for p in side.iterdir() if not p.name.startswith(".")] if side.exists() else []


def test_a_read_of_a_room_bigger_than_memory_allows_returns_a_page_and_says_what_waits(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """A 200 MB room read under a 450 MB address-space limit ended in a 29-line MemoryError
    traceback (and a 5 GB room took 12.4 GB and wrote a 5 GB receipt): the whole room was
    read, split, hashed and recorded at once. Now it returns one page and counts the rest."""
    room = tmp_path / "big.txt"
    line = b"[07:00:00] [big] poller: an event that waits for its agent #%09d\n"
    block = b"".join(line % i for i in range(10_000))
    with open(room, "wb") as f:
        while f.tell() < BIG:
            f.write(block)
    total = room.stat().st_size // len(line % 0)
    done = _read_under_limit(room, cli_env, "--json")
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    got = json.loads(done.stdout)
    assert 0 < sum(len(x) + 1 for x in got["lines"]) <= PAGE_BYTES
    assert got["count"] + got["waiting"] == total
    assert got["lines"][0] == (line % 0).decode().rstrip("\n")
    (receipt,) = _receipts(room)
    assert receipt.stat().st_size < PAGE_BYTES + 4096  # the page, not the room
    # Text mode says it on stderr in one line; stdout holds exactly the page's bytes.
    done = _read_under_limit(room, cli_env)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert done.stdout == room.read_bytes()[: len(done.stdout)]
    assert done.stdout.endswith(b"\n") and len(done.stdout) <= PAGE_BYTES
    left = total - done.stdout.count(b"\n")
    assert done.stderr.decode().splitlines() == [
        f"{left:,} lines more wait in big.txt: ack these, then read again"
    ]


def test_one_line_bigger_than_memory_allows_is_one_error_line_and_records_nothing(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    """A single line (sparse: 200 MB of NULs, then its newline) is never cut: delivered
    whole, or, when it cannot fit in memory, one line of error and no receipt."""
    room = tmp_path / "sparse.txt"
    with open(room, "wb") as f:
        f.truncate(BIG)
        f.seek(BIG)
        f.write(b"\nafter\n")
    done = _read_under_limit(room, cli_env)
    err = done.stderr.decode()
    if done.returncode == 0:  # it fitted: the whole line, alone, and the rest waits
        assert done.stdout == b"\0" * BIG + b"\n"
        assert err.splitlines() == ["1 line more wait in sparse.txt: ack these, then read again"]
    else:
        assert done.returncode == 1 and len(err.splitlines()) == 1, err[-3000:]
        assert "out of memory" in err and "no receipt was recorded" in err, err
        assert done.stdout == b""
        assert _receipts(room) == []


@pytest.fixture(params=["file", "redis"])
def room_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        return str(tmp_path / "inbox.txt")
    server = request.getfixturevalue("redis_server")
    return str(server.url())


def _lines(n: int, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    return [b"L%04d " % i + b"x" * rnd.randint(0, 60) for i in range(n)]


def test_repeated_reads_page_through_the_whole_room_and_each_ack_removes_its_page(
    room_spec: str,
) -> None:
    room = open_room(room_spec)
    try:
        pushed = _lines(120, seed=1)
        for line in pushed:
            room.push(line)
        seen: list[bytes] = []
        page = 256
        while True:
            got = room.read("agent", max_bytes=page)
            if not got.lines:
                assert got.waiting == 0
                break
            assert sum(len(x) + 1 for x in got.lines) <= page
            assert got.waiting == len(pushed) - len(seen) - len(got.lines)
            acked = room.ack("agent")
            assert (acked.mode, acked.acked, acked.preserved) == (
                "prefix",
                len(got.lines),
                got.waiting,
            )
            seen += got.lines
        assert seen == pushed
        assert room.status().pending == 0
    finally:
        room.close()


def test_ack_all_removes_one_page_and_returns_exactly_its_lines(room_spec: str) -> None:
    room = open_room(room_spec)
    try:
        pushed = _lines(50, seed=2)
        for line in pushed:
            room.push(line)
        removed: list[bytes] = []
        while True:
            res = room.ack("owner", all=True, max_bytes=300)
            if not res.acked:
                break
            assert res.lines is not None and len(res.lines) == res.acked
            assert sum(len(x) + 1 for x in res.lines) <= 300
            assert res.preserved == len(pushed) - len(removed) - res.acked
            removed += res.lines
        assert removed == pushed
    finally:
        room.close()


def test_a_line_longer_than_the_page_is_delivered_whole_and_alone(room_spec: str) -> None:
    room = open_room(room_spec)
    try:
        long = b"B" * 10_000
        for line in (long, b"short one", b"short two"):
            room.push(line)
        got = room.read("agent", max_bytes=100)
        assert got.lines == [long] and got.waiting == 2
        assert room.ack("agent").acked == 1
        got = room.read("agent", max_bytes=100)
        assert got.lines == [b"short one", b"short two"] and got.waiting == 0
        res = room.ack("agent", all=True, max_bytes=1)  # ack-all: the same rule
        assert res.lines == [b"short one"] and res.preserved == 1
    finally:
        room.close()


def test_a_page_cut_by_the_door_counts_the_cut_lines_as_waiting(tmp_path: Path) -> None:
    """The MCP door delivers fewer lines than the page when its reply is full: the receipt
    and `waiting` follow what was delivered."""
    room = Room(tmp_path / "inbox.txt")
    for i in range(10):
        room.push(f"line {i}")
    got = room.read("agent", max_bytes=40, deliver=lambda page: 2)
    assert [x.decode() for x in got.lines] == ["line 0", "line 1"]
    assert got.waiting == 8
    assert room.ack("agent").acked == 2


def test_a_page_size_that_makes_no_sense_is_refused_in_one_line(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "inbox.txt"
    Room(room).push("x")
    for bad in ("0", "-1", "1x", "K"):
        done = ackdeck(cli_env, "room", "read", str(room), "--session", "a", f"--max-bytes={bad}")
        assert done.returncode != 0 and len(done.stderr.splitlines()) == 1, (bad, done.stderr)
        assert done.stdout == ""
    assert _receipts(room) == []
