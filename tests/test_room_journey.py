"""Ages, the read log and first-seen marks of a room (core/rooms/file/readlog.py, seen_marks.py,
ages.py): what they say, and that they survive kill -9 at every write and a full disk."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.rooms.file import readlog, seen_marks
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.redis.room import RedisRoom
from ackdeck.core.service import rooms as service
from ackdeck.core.service.refs import open_room
from tests.helpers.cli import ackdeck, ackdeck_ok
from tests.helpers.clock import Clock
from tests.helpers.mounts import mounted
from tests.helpers.pauses import start_paused, wait_for_step


def journey(room: Room) -> Path:
    return room.sidecar / "journey"


# ----- ages ------------------------------------------------------------------------------
def test_pushed_lines_age_from_their_push_and_unlocked_ones_from_the_first_look(
    tmp_path: Path,
) -> None:
    clock = Clock()
    r = Room(tmp_path / "r.txt", clock=clock)
    r.push("pushed")
    clock.t += 60
    with open(tmp_path / "r.txt", "ab") as f:
        f.write(b"printf line\n")  # a producer that does not lock: nobody saw it yet
    clock.t += 30
    first = r.status()  # the first ackdeck process to look dates it now
    assert first.oldest_pending_at == 1_000_000.0  # exact: the push time
    assert first.oldest_unread_at == 1_000_000.0  # nobody read anything
    clock.t += 100
    r.read("agent")
    clock.t += 5
    r.push("after the read")
    clock.t += 10
    st = r.status()
    assert st.checked_at == clock.t
    assert st.oldest_pending_at == 1_000_000.0
    # The line nobody read is the one pushed after the read, 10 s ago.
    assert st.oldest_unread_at == clock.t - 10
    mine = st.sessions["agent"]
    assert (mine.in_flight, mine.unread) == (2, 1)
    assert mine.read_at == clock.t - 15  # the in-flight read waits for its ack
    assert mine.oldest_unread_at == clock.t - 10
    # The service turns them into ages against the status's own clock.
    row = service.status([(r, "r.txt")], "agent").rooms[0]
    assert (row.in_flight_age, row.unread_age) == (15.0, 10.0)
    assert row.oldest_pending_age == 205.0 and row.oldest_unread_age == 10.0
    # The unlocked line's mark says when the status saw it, not the append (a lower bound).
    marks = seen_marks.Marks(str(journey(r) / "seen"))
    assert marks.first_seen([len(b"pushed\nprintf line\n")]) == {19: 1_000_090.0}


def test_after_an_ack_nothing_is_in_flight_and_the_rest_keeps_its_age(tmp_path: Path) -> None:
    clock = Clock()
    r = Room(tmp_path / "r.txt", clock=clock)
    r.push("one")
    r.read("agent")
    clock.t += 7
    r.push("two")
    clock.t += 3
    r.ack("agent")
    st = r.status()
    mine = st.sessions["agent"]
    assert (mine.in_flight, mine.read_at, mine.unread) == (0, None, 1)
    assert mine.oldest_unread_at == st.oldest_pending_at == 1_000_007.0
    assert st.deliveries == 0  # "two" was never handed out


def test_a_session_without_a_receipt_has_every_line_unread_since_the_oldest(
    tmp_path: Path,
) -> None:
    clock = Clock()
    r = Room(tmp_path / "r.txt", clock=clock)
    r.push("x")
    clock.t += 42
    row = service.status([(r, "r.txt")], "newcomer").rooms[0]
    assert (row.in_flight_age, row.unread_age) == (None, 42.0)
    assert row.to_json()["unread_age"] == 42.0


def test_an_empty_room_has_no_ages(tmp_path: Path) -> None:
    r = Room(tmp_path / "r.txt")
    (tmp_path / "r.txt").write_bytes(b"half")
    st = r.status()
    assert (st.oldest_pending_at, st.oldest_unread_at, st.deliveries) == (None, None, 0)


# ----- the read log -----------------------------------------------------------------------
def test_every_delivered_read_is_logged_with_session_reader_door_range_and_time(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    r = Room(room, clock=Clock(), door="dashboard")
    r.push("a")
    r.read("owner", reader="pane-1")
    ackdeck_ok(cli_env, "room", "read", str(room), "--session", "agent")
    got = readlog.load(journey(r))
    assert [(e.session, e.reader, e.door, e.start, e.end, e.lines) for e in got] == [
        ("owner", "pane-1", "dashboard", 0, 2, 1),
        ("agent", None, "cli", 0, 2, 1),
    ]
    assert got[0].at == 1_000_000.0
    # Each receipt names its entry: no receipt without its log entry.
    assert r._receipts.header("owner").read_id == got[0].id  # type: ignore[union-attr]


def test_a_read_that_was_not_delivered_is_not_logged(tmp_path: Path) -> None:
    r = Room(tmp_path / "r.txt")
    r.push("a")

    def broken_pipe(_view: object) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        r.read("agent", deliver=broken_pipe)
    assert readlog.load(journey(r)) == []
    assert r.status().deliveries == 0


def test_each_read_without_an_ack_between_is_one_more_delivery(tmp_path: Path) -> None:
    """A session that reads, dies, restarts and reads again re-delivers the same lines."""
    r = Room(tmp_path / "r.txt")
    r.push("crashes the agent")
    for n in (1, 2, 3):
        r.read("agent")
        assert r.status().deliveries == n
    r.ack("agent")
    r.push("next")
    assert r.status().deliveries == 0  # the new oldest line was never handed out


def test_rotation_keeps_the_log_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readlog, "LIMIT", 4096)
    r = Room(tmp_path / "r.txt")
    for i in range(200):  # ~130 bytes per logged read: many times the limit in all
        r.push(f"line {i}")
        r.read("b")
        r.ack("b")
    names = sorted(os.listdir(journey(r)))
    assert readlog.OLD in names
    for name in (readlog.LOG, readlog.OLD):
        assert os.path.getsize(journey(r) / name) <= 4096 + 200
    r.push("unread")
    assert r.status().deliveries == 0


def test_a_rotation_never_drops_the_reads_of_a_line_still_in_the_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readlog, "LIMIT", 2048)
    r = Room(tmp_path / "r.txt")
    r.push("poison")
    for _ in range(60):  # several rotations, by the reads themselves (nobody acks)
        r.read("agent")
    assert readlog.OLD in os.listdir(journey(r))
    assert r.status().deliveries == 60
    # Once acked, the next rotation may let them go.
    r.ack("agent")
    r.push("fresh")
    assert r.status().deliveries == 0


def test_a_status_counts_the_reads_of_a_log_left_rotated_only(tmp_path: Path) -> None:
    # A rotation killed between its two renames leaves reads.1.jsonl without reads.jsonl: a
    # status still counts the deliveries it holds; a room nobody read has neither file.
    r = Room(tmp_path / "r.txt")
    r.push("a")
    assert r.status().deliveries == 0
    assert not (journey(r) / readlog.LOG).exists()
    r.read("one")
    r.read("two")
    os.replace(journey(r) / readlog.LOG, journey(r) / readlog.OLD)
    assert r.status().deliveries == 2
    os.unlink(journey(r) / readlog.OLD)
    assert r.status().deliveries == 0


def test_a_torn_entry_is_skipped_and_the_whole_one_glued_on_it_is_recovered(
    tmp_path: Path,
) -> None:
    r = Room(tmp_path / "r.txt")
    r.push("a")
    r.read("one")
    log = journey(r) / readlog.LOG
    whole = log.read_bytes()
    with open(log, "ab") as f:
        f.write(whole[:40])  # what a short write on a full disk leaves
    r.read("two")
    got = readlog.load(journey(r))
    assert [e.session for e in got] == ["one", "two"]
    assert r.status().deliveries == 2


def _bytes_read() -> int:
    """Bytes this process has read through read(2) and pread(2) so far (Linux's rchar)."""
    with open("/proc/self/io") as f:
        return next(int(v) for k, v in (line.split(":") for line in f) if k == "rchar")


def test_a_sparse_read_log_costs_a_status_its_data_not_its_size(tmp_path: Path) -> None:
    """Issue 42, class 5: `room status` (and `agents`, which asks it) read the log backwards,
    decoding the whole tail again at each 64 KiB step: quadratic (81 s at 100 MB, minutes at
    a gigabyte grown by `truncate -s`). Now each byte is read once and a sparse file's holes
    not at all: the bytes a status reads do not grow with the hole."""
    r = Room(tmp_path / "r.txt")
    r.push("never acked")
    for _ in range(3):
        r.read("agent")
    log = journey(r) / readlog.LOG
    entry = json.loads(log.read_bytes().split(b"\n")[0])
    os.truncate(log, 16 << 20)  # `truncate -s 16M`: a hole after the entries
    with open(log, "ab") as f:  # and two reads logged after it (no read here: it would rotate)
        f.write(
            b"\n" + b"".join(readlog.encode(readlog.ReadEntry(**{**entry, "id": i})) for i in "ab")
        )
    before = _bytes_read()
    assert r.status().deliveries == 5  # every read of the line, before and after the hole
    assert _bytes_read() - before < 1 << 20


def test_sparse_first_seen_marks_cost_a_status_their_data_not_their_size(tmp_path: Path) -> None:
    """Issue 42, class 5: marks out of alignment (a torn record, or a `truncate -s` to a size
    no record width divides) are read record by record; that read took the whole file into
    memory (28 s for a status over a 1 GB sparse file). Now only its data is read, in steps."""
    clock = Clock(1_000_000.0)
    r = Room(tmp_path / "r.txt", clock=clock)
    r.push("dated")
    marks = journey(r) / seen_marks.NAME
    os.truncate(marks, (16 << 20) + 1)  # a hole, and out of the records' alignment
    clock.t += 30
    before = _bytes_read()
    st = r.status()
    assert _bytes_read() - before < 1 << 20
    assert st.oldest_pending_age == pytest.approx(30.0)  # still dated by the mark before the hole


def test_a_trace_reads_sparse_logs_for_their_data_not_their_size(tmp_path: Path) -> None:
    """Issue 42, class 5: `room trace` read the read log and the audit of acks whole (a
    gigabyte grown by `truncate -s` was a gigabyte in memory). Now their data only, in steps;
    the line's journey is the same."""
    r = Room(tmp_path / "r.txt")
    r.push("one")
    r.read("agent")
    r.ack("agent")
    r.push("two")
    r.read("agent")
    for path in (locations.audit(r.sidecar), journey(r) / readlog.LOG):
        assert path.exists(), path
        os.truncate(path, path.stat().st_size + (16 << 20))  # a hole after its entries
    before = _bytes_read()
    gone, present = r.trace(0), r.trace(4)
    assert _bytes_read() - before < 1 << 20
    assert gone.acked_by == "agent" and [h.session for h in gone.reads] == ["agent"]
    assert present.present and [h.session for h in present.reads] == ["agent"]


def test_the_backwards_scan_finds_what_a_whole_read_finds_at_any_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan that reads the log from its end in steps decodes exactly what decoding the
    whole log gives, whatever the step, for torn entries, glued ones and long lines."""
    r = Room(tmp_path / "r.txt")
    r.push("x")
    for _ in range(5):
        r.read("agent")
    log = journey(r) / readlog.LOG
    whole = log.read_bytes()
    one = whole.split(b"\n")[0] + b"\n"
    log.write_bytes(
        whole + one[:30] + one + b"garbage without an entry " * 20 + b"\n" + one + one[:17]
    )
    expected = readlog.decode(log.read_bytes())
    assert len(expected) == 7
    for step in (1, 5, 64, 200, 1 << 16):
        monkeypatch.setattr(readlog, "_STEP", step)
        fd = os.open(log, os.O_RDONLY)
        try:
            assert readlog._backwards(fd, 0, dead_margin=None) == expected, step
        finally:
            os.close(fd)


def test_marks_bisect_a_long_file_despite_concurrent_pushers_disorder(tmp_path: Path) -> None:
    path = tmp_path / "seen"
    recs = []
    for i in range(1, 20_001):
        recs.append((i * 10, 1000.0 + i))
    # Concurrent pushers: neighbours swapped here and there.
    for i in range(5, len(recs) - 1, 37):
        recs[i], recs[i + 1] = recs[i + 1], recs[i]
    path.write_bytes(b"".join(seen_marks.record(o, t) for o, t in recs))
    marks = seen_marks.Marks(str(path))
    for end in (10, 55, 60, 12_345, 200_000):
        want = min(t for o, t in recs if o >= end)
        assert marks.first_seen([end])[end] == want
    assert marks.first_seen([200_001]) == {200_001: None}
    assert marks.newest_end() == 200_000
    # A torn record (a full disk) misaligns the rest: read record by record instead.
    with open(path, "ab") as f:
        f.write(seen_marks.record(1, 1)[:10])
        f.write(seen_marks.record(300_000, 5000.0))
    assert marks.first_seen([250_000]) == {250_000: 5000.0}
    assert marks.first_seen([55]) == {55: 1006.0}


# ----- kill -9 at every write ------------------------------------------------------------
@pytest.mark.parametrize("step", ["read-after-log", "read-after-receipt"])
def test_kill9_in_a_read_leaves_no_receipt_without_its_log_entry(
    tmp_path: Path, cli_env: dict[str, str], step: str
) -> None:
    room = tmp_path / "r.txt"
    r = Room(room)
    r.push("one")
    r.push("two")
    marker = tmp_path / "marker"
    proc = start_paused(cli_env, marker, [step], "room", "read", str(room), "--session", "agent")
    wait_for_step(proc, marker, step)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    got = readlog.load(journey(r))
    # The lines were handed out before either write: the entry is there, whole.
    assert [(e.session, e.lines) for e in got] == [("agent", 2)]
    header = r._receipts.header("agent")
    if step == "read-after-log":
        assert header is None  # killed before the receipt: the ack is refused (cold)
    else:
        assert header is not None and header.read_id == got[0].id
    assert r.status().deliveries == 1
    # And the room goes on: the next read logs its own entry, the ack works.
    r.read("agent")
    assert r.ack("agent").acked == 2
    assert [e.session for e in readlog.load(journey(r))] == ["agent", "agent"]


def test_kill9_between_a_push_and_its_mark_only_dates_the_line_later(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    Room(room).push("first")
    marker = tmp_path / "marker"
    proc = start_paused(cli_env, marker, ["push-after-append"], "room", "push", str(room), "second")
    wait_for_step(proc, marker, "push-after-append")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert room.read_bytes() == b"first\nsecond\n"  # the line is there
    later = time.time()
    st = Room(room).status()  # dates it now: never older than it is
    assert st.pending == 2
    marks = seen_marks.Marks(str(journey(Room(room)) / "seen"))
    assert marks.first_seen([13])[13] >= later - 1
    raw = (journey(Room(room)) / "seen").read_bytes()
    assert len(raw) % seen_marks.WIDTH == 0  # no torn record


# ----- a full disk for the log -------------------------------------------------------------
def test_a_full_disk_for_the_log_never_blocks_a_read_or_an_ack_and_is_counted(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = tmp_path / "r.txt"
    r = Room(room)
    r.push("one")
    r.read("warmup")  # creates journey/
    r.ack("warmup")
    r.push("two")
    jd = journey(r)
    for f in jd.iterdir():
        f.unlink()
    with mounted(jd, "-t", "tmpfs", "-o", "size=4k,mode=0700", "tmpfs"):
        (jd / "filler").write_bytes(b"x" * 4096)  # the filesystem is full now
        with pytest.raises(OSError):
            (jd / "more").write_bytes(b"y" * 4096)
        out = ackdeck(cli_env, "room", "read", str(room), "--session", "agent")
        assert (out.returncode, out.stdout) == (0, "two\n"), out.stderr
        st = r.status()
        assert st.reads_unlogged == 1  # the count says the log is incomplete
        out = ackdeck(cli_env, "room", "status", str(room))
        assert "read log incomplete: 1 read not logged" in out.stdout
        assert r.ack("agent").acked == 1
        r.push("three")
        r.read("agent")
        assert r.status().reads_unlogged == 2  # a running count per session
    assert room.read_bytes() == b"three\n"


# ----- redis rooms -----------------------------------------------------------------------
@pytest.fixture
def url(redis_server: object) -> str:
    return redis_server.url()  # type: ignore[attr-defined]


def test_redis_ages_come_from_entry_ids_and_reads_are_logged_with_the_receipt(url: str) -> None:
    clock = Clock(time.time())
    r = open_room(url, clock=clock, door="mcp")
    assert isinstance(r, RedisRoom)
    first = r.push("one")
    r.read("agent", reader="srv-1")
    second = r.push("two")
    r.read("agent", reader="srv-1")
    r.read("other")
    clock.t = time.time() + 30
    st = r.status()
    assert st.oldest_pending_at == int(first.split("-")[0]) / 1000
    assert st.oldest_unread_at is None  # every session read everything
    assert st.deliveries == 3
    mine = st.sessions["agent"]
    assert (mine.in_flight, mine.unread, mine.oldest_unread_at) == (2, 0, None)
    assert mine.read_at is not None and st.checked_at - mine.read_at >= 30
    r.push("three")
    st = r.status()
    assert st.oldest_unread_at is not None and st.oldest_unread_at >= int(second[:13]) / 1000
    assert r.ack("agent", reader="srv-1").acked == 2
    st = r.status()
    assert st.deliveries == 0  # "three" was never handed out
    entries = r._redis().xrange(r.key + ":reads")
    # Raw entries ([id, [field, value, ...]]): the room reads streams the way its scripts do.
    fields = [{f[i].decode(): f[i + 1].decode() for i in range(0, len(f), 2)} for _, f in entries]
    assert [(f["session"], f["door"], f["reader"], f["count"]) for f in fields] == [
        ("agent", "mcp", "srv-1", "1"),
        ("agent", "mcp", "srv-1", "2"),
        ("other", "mcp", "", "2"),
    ]
    r.close()


def test_status_json_carries_the_ages_on_both_backends(
    tmp_path: Path, url: str, cli_env: dict[str, str]
) -> None:
    for spec in (str(tmp_path / "r.txt"), url):
        open_room(spec).push("x")
        out = ackdeck_ok(cli_env, "room", "status", spec, "--session", "s", "--json")
        row = json.loads(out.stdout)["rooms"][0]
        assert row["oldest_pending_age"] is not None and row["oldest_pending_age"] >= 0
        assert row["unread_age"] == row["oldest_unread_age"]
        assert (row["in_flight_age"], row["deliveries"], row["reads_unlogged"]) == (None, 0, 0)
