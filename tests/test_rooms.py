"""Room read → ack on real files: the source document's cases and the ones beyond it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ackdeck.core.errors import ColdAck
from ackdeck.core.rooms.file import ledger as L
from ackdeck.core.rooms.file.room import Room, format_poller_line


def _room(tmp_path: Path, content: bytes | None = None) -> Room:
    path = tmp_path / "inbox.txt"
    if content is not None:
        path.write_bytes(content)
    return Room(path)


def _leftovers(room: Room) -> list[str]:
    """Temp files next to the room or in its sidecar (there must be none after an op)."""
    names = os.listdir(room.path.parent)
    if room.sidecar.is_dir():
        names += os.listdir(room.sidecar) + os.listdir(room.sidecar / "receipts")
    return [n for n in names if "ackdeck-tmp" in n]


# ----- the source document's cases -------------------------------------------------------
def test_prefix_drop_keeps_late_line(tmp_path: Path) -> None:
    room = _room(tmp_path, b"one\ntwo\n")
    assert room.read("s").lines == [b"one", b"two"]
    with open(room.path, "ab") as f:  # a poller appends between read and ack
        f.write(b"late\n")
    res = room.ack("s")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 2, 1)
    assert room.path.read_bytes() == b"late\n"
    assert _leftovers(room) == []


def test_drain_to_empty(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\nb\nc\n")
    room.read("s")
    res = room.ack("s")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 3, 0)
    assert room.path.read_bytes() == b""
    assert room.path.exists()


def test_empty_read_acks_nothing(tmp_path: Path) -> None:
    room = _room(tmp_path, b"")
    assert room.read("s").lines == []
    with open(room.path, "ab") as f:
        f.write(b"arrived after the empty read\n")
    res = room.ack("s")
    assert (res.mode, res.acked) == ("noop", 0)
    assert room.path.read_bytes() == b"arrived after the empty read\n"


def test_missing_file_is_a_noop_and_never_created(tmp_path: Path) -> None:
    room = _room(tmp_path)
    assert room.read("s").lines == []
    res = room.ack("s")
    assert (res.mode, res.acked) == ("noop", 0)
    assert room.ack("s", all=True).mode == "noop"
    assert not room.path.exists()
    st = room.status()
    assert (st.exists, st.pending) == (False, 0)
    assert not room.path.exists()


def test_missing_file_with_existing_sidecar_is_never_created(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s")
    room.ack("s")
    room.path.unlink()
    assert room.read("s").lines == []
    assert room.ack("s", all=True).mode == "noop"
    assert not room.path.exists()


def test_append_between_read_and_ack_survives(tmp_path: Path) -> None:
    room = _room(tmp_path)
    room.push("first")
    room.read("agent")
    room.push("owner instruction: send all 3")
    res = room.ack("agent")
    assert (res.acked, res.preserved) == (1, 1)
    assert room.read("agent").lines == [b"owner instruction: send all 3"]


# ----- beyond it ---------------------------------------------------------------------------
@pytest.mark.parametrize("order", [("s1", "s2"), ("s2", "s1")])
def test_overlapping_reads_ack_in_either_order_lose_nothing(
    tmp_path: Path, order: tuple[str, str]
) -> None:
    room = _room(tmp_path, b"a\nb\n")
    assert room.read("s1").lines == [b"a", b"b"]
    room.push("c")
    assert room.read("s2").lines == [b"a", b"b", b"c"]
    room.push("d")
    first, second = (room.ack(s) for s in order)
    if order == ("s1", "s2"):
        assert (first.mode, first.acked) == ("prefix", 2)
        assert (second.mode, second.acked) == ("prefix", 1)
    else:
        assert (first.mode, first.acked) == ("prefix", 3)
        assert (second.mode, second.acked) == ("noop", 0)
    assert room.path.read_bytes() == b"d\n"
    assert room.status().acked_total == 3


def test_late_identical_line_survives_ack_after_foreign_rewrite(tmp_path: Path) -> None:
    room = _room(tmp_path, b"dup\n")
    room.read("s")
    # Another tool consumed the line and rewrote the file (temp + rename); then the poller
    # appended a byte-identical notification. It is unread and must survive.
    tmp = tmp_path / "other.tmp"
    tmp.write_bytes(b"")
    os.replace(tmp, room.path)
    with open(room.path, "ab") as f:
        f.write(b"dup\n")
    res = room.ack("s")
    assert (res.mode, res.acked, res.preserved) == ("stale", 0, 1)
    assert room.path.read_bytes() == b"dup\n"
    assert room.read("s").epoch == 1


def _rewrite_in_place_later(path: Path, data: bytes) -> None:
    """Truncate and refill the same inode, at a visibly later mtime (the coarse kernel clock
    can give two writes within a few ms the same timestamp)."""
    before = path.stat().st_mtime_ns
    while True:
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(data)
        if path.stat().st_mtime_ns != before:
            return
        time.sleep(0.002)


def test_late_identical_line_survives_in_place_rewrite(tmp_path: Path) -> None:
    # The seed's review comment: the consumed copy is gone and a byte-identical late line sits
    # where it was. Same inode, same size: only the mtime reveals the rewrite.
    room = _room(tmp_path, b"[12:00:01] [r] bob: ping\n")
    room.read("s")
    _rewrite_in_place_later(room.path, b"[12:00:01] [r] bob: ping\n")
    res = room.ack("s")
    assert (res.mode, res.acked) == ("stale", 0)
    assert room.path.read_bytes() == b"[12:00:01] [r] bob: ping\n"


def test_in_place_rewrite_that_shrinks_is_stale_for_other_sessions_too(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\nb\nc\n")
    room.read("s1")
    room.read("s2")
    _rewrite_in_place_later(room.path, b"a\n")
    assert room.ack("s1").mode == "stale"
    assert room.ack("s2").mode == "stale"
    assert room.path.read_bytes() == b"a\n"


def test_partial_line_survives_read_and_ack(tmp_path: Path) -> None:
    room = _room(tmp_path, b"done\nhalf-writ")
    assert room.read("s").lines == [b"done"]
    res = room.ack("s")
    assert (res.acked, res.preserved) == (1, 0)
    assert room.path.read_bytes() == b"half-writ"
    with open(room.path, "ab") as f:
        f.write(b"ten\n")
    assert room.read("s").lines == [b"half-written"]
    st = room.status()
    assert (st.pending, st.partial_bytes) == (1, 0)


def test_ack_all_keeps_partial_line(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\nb\npart")
    res = room.ack("s", all=True)
    assert (res.mode, res.acked, res.lines) == ("all", 2, [b"a", b"b"])
    assert room.path.read_bytes() == b"part"


def test_bytes_are_kept_exactly(tmp_path: Path) -> None:
    raw = b"bad \xff\xfe utf8\n" + b"cr\rinside\n" + b"crlf\r\n" + b"tab\there\n" + b"\x00nul\n"
    room = _room(tmp_path, raw + b"part \xc3")
    got = room.read("s")
    assert got.lines == [b"bad \xff\xfe utf8", b"cr\rinside", b"crlf\r", b"tab\there", b"\x00nul"]
    with open(room.path, "ab") as f:
        f.write(b"ial \r\xff\n")
    # Only the exact consumed prefix goes; every other byte stays.
    assert room.ack("s").acked == 5
    assert room.path.read_bytes() == b"part \xc3ial \r\xff\n"
    assert room.ack("s2", all=True).lines == [b"part \xc3ial \r\xff"]


def test_mode_and_owner_preserved(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\nb\n")
    os.chmod(room.path, 0o640)
    if os.geteuid() == 0:
        os.chown(room.path, 4242, 4343)  # as root we can give it away and check it comes back
    before = room.path.stat()
    room.read("s")
    room.ack("s")
    after = room.path.stat()
    assert after.st_ino != before.st_ino  # it really was replaced
    assert (after.st_mode, after.st_uid, after.st_gid) == (
        before.st_mode,
        before.st_uid,
        before.st_gid,
    )


def test_cold_ack_refused_with_nothing_written(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\nb\n")
    room.status()
    before = room.path.stat()
    with pytest.raises(ColdAck, match=r"2 unread.*read the room first") as exc:
        room.ack("s")
    assert exc.value.exit_code == 3
    after = room.path.stat()
    assert room.path.read_bytes() == b"a\nb\n"
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )


def test_ack_twice_without_new_read_is_refused(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s")
    room.ack("s")
    room.push("b")
    with pytest.raises(ColdAck):
        room.ack("s")
    assert room.path.read_bytes() == b"b\n"


def test_ack_all_returns_the_lines_it_removed(tmp_path: Path) -> None:
    room = _room(tmp_path, b"x\ny\n")
    res = room.ack("s", all=True)
    assert (res.mode, res.acked, res.lines) == ("all", 2, [b"x", b"y"])
    assert room.path.read_bytes() == b""
    assert room.ack("s", all=True).lines == []


def test_a_new_read_replaces_the_receipt(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s")
    room.push("b")
    room.read("s")
    room.push("c")
    assert room.ack("s").acked == 2
    assert room.path.read_bytes() == b"c\n"


def test_receipt_survives_reader_restart(tmp_path: Path) -> None:
    Room(tmp_path / "inbox.txt").push("a")
    Room(tmp_path / "inbox.txt").read("s")
    # A fresh Room object (another process in real life) acks from the receipt on disk.
    assert Room(tmp_path / "inbox.txt").ack("s").acked == 1


def test_status_counts_unread_and_in_flight(tmp_path: Path) -> None:
    room = _room(tmp_path)
    for i in range(3):
        room.push(f"m{i}")
    room.read("s1")
    room.push("m3")
    with open(room.path, "ab") as f:
        f.write(b"partial")
    st = room.status()
    assert (st.pending, st.partial_bytes, st.epoch) == (4, 7, 0)
    assert (st.sessions["s1"].in_flight, st.sessions["s1"].unread) == (3, 1)
    room.read("s2")
    room.ack("s1")
    st = room.status()
    assert (st.pending, st.acked_total, st.preserved_total) == (1, 3, 1)
    assert (st.sessions["s1"].in_flight, st.sessions["s1"].unread) == (0, 1)
    assert (st.sessions["s2"].in_flight, st.sessions["s2"].unread) == (1, 0)
    assert st.pushed_total == len(b"m0\nm1\nm2\nm3\npartial")  # base + size, in bytes


def test_push_returns_logical_offsets_across_acks(tmp_path: Path) -> None:
    room = _room(tmp_path)
    assert room.push("aaa") == 0
    assert room.push("bb") == 4
    room.read("s")
    room.ack("s")
    assert room.push("c") == 7
    assert room.read("s").start == 7


def test_audit_log_records_every_ack(tmp_path: Path) -> None:
    import json

    room = _room(tmp_path, b"a\nb\n")
    room.read("s")
    room.ack("s")
    room.push("c")
    room.ack("t", all=True)
    entries = [json.loads(x) for x in room.audit_file.read_text().splitlines()]
    assert [(e["session"], e["mode"], e["acked"]) for e in entries] == [
        ("s", "prefix", 2),
        ("t", "all", 1),
    ]
    assert entries[0]["sha256"] == L.sha256(b"a\nb\n")


def test_stale_temp_files_are_cleaned_by_next_ack(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s")
    (tmp_path / ".inbox.txt.ackdeck-tmp-99999-deadbeef").write_bytes(b"half")
    (room.sidecar / ".audit.jsonl.ackdeck-tmp-99999-beef").write_bytes(b"{")
    (room.sidecar / "receipts" / ".s.rcpt.ackdeck-tmp-99999-beef").write_bytes(b"{")
    room.ack("s")
    assert _leftovers(room) == []


def test_format_poller_line_flattens_body() -> None:
    line = format_poller_line("ops", "alice", "deploy\ndone\r\nok", 0.0)
    assert line == "[1970-01-01T00:00:00Z] [ops] alice: deploy done ok"
    assert "\n" not in line


def test_late_unlocked_append_into_replaced_inode_is_carried(tmp_path: Path) -> None:
    # A `>>` writer opened the path before the ack's rename and writes after it: its line lands
    # in the old inode, which the sidecar keeps linked and later operations sweep.
    room = _room(tmp_path, b"a\n")
    room.read("s")
    slow_writer = os.open(room.path, os.O_WRONLY | os.O_APPEND)
    try:
        room.ack("s")
        os.write(slow_writer, b"slow\n")
    finally:
        os.close(slow_writer)
    assert room.read("s").lines == [b"slow"]
    assert room.path.read_bytes() == b"slow\n"


def test_replaced_inode_link_expires_after_grace(tmp_path: Path) -> None:
    now = [1000.0]
    room = Room(tmp_path / "inbox.txt", clock=lambda: now[0], grace=5.0)
    room.push("a")
    room.read("s")
    room.ack("s")
    links = [n for n in os.listdir(room.sidecar) if n.startswith("prev-")]
    assert len(links) == 1
    now[0] += 6.0
    room.read("s")  # escalates to the exclusive lock to drop the expired link
    assert [n for n in os.listdir(room.sidecar) if n.startswith("prev-")] == []
    assert room._ledger().prev == []


def test_in_place_shrink_seen_by_one_session_stales_the_other_with_duplicates(
    tmp_path: Path,
) -> None:
    # s1 reads x,x,x; a foreign tool truncates the file in place to x,x; s2 reads and acks that;
    # a new, unread x arrives. s1's ack must not take the new x for the third x it read: the
    # ledger keeps the largest size any read saw, so the shrink starts a new epoch.
    room = _room(tmp_path)
    room.push("seed")
    room.read("s0")
    room.ack("s0")  # the ledger now describes an empty file
    for _ in range(3):
        room.push("x")
    assert room.read("s1").lines == [b"x", b"x", b"x"]
    _rewrite_in_place_later(room.path, b"x\nx\n")
    assert room.read("s2").epoch == 1
    assert room.ack("s2").acked == 2
    room.push("x")  # new and unread by s1
    res = room.ack("s1")
    assert (res.mode, res.acked) == ("stale", 0)
    assert room.path.read_bytes() == b"x\n"


@pytest.mark.parametrize("lines", [10, 40_000])  # small (inline) and >1 MB (threaded) check
def test_bytes_changed_in_place_beyond_the_fingerprint_make_the_ack_stale(
    tmp_path: Path, lines: int
) -> None:
    # Same inode, same first 4 KiB, and an append so the file grew: only the content check of
    # the consumed bytes can tell that line k was rewritten in place.
    body = b"".join(b"line %06d %s\n" % (i, b"x" * 20) for i in range(lines))
    room = _room(tmp_path, body)
    room.read("s", max_bytes=len(body))  # the whole room in one page: line k was consumed
    k = lines - 2
    with open(room.path, "r+b") as f:
        f.seek(body.index(b"line %06d" % k))
        f.write(b"LINE")
        f.seek(0, 2)
        f.write(b"late\n")
    res = room.ack("s")
    assert (res.mode, res.acked) == ("stale", 0)
    assert room.path.read_bytes().endswith(b"late\n")
    assert len(room.path.read_bytes()) == len(body) + 5


# small, >128 KiB, and >4 MiB kept (counted in a worker thread while it is written)
@pytest.mark.parametrize("late", [3, 50_000, 300_000])
def test_big_ack_counts_and_keeps_every_late_line(tmp_path: Path, late: int) -> None:
    room = _room(tmp_path, b"".join(b"read %d\n" % i for i in range(1000)))
    room.read("s")
    tail = b"".join(b"late %06d \t\r\xff\n" % i for i in range(late)) + b"partial"
    with open(room.path, "ab") as f:
        f.write(tail)
    res = room.ack("s")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 1000, late)
    assert room.path.read_bytes() == tail
    assert room.status().preserved_total == late


def test_symlinked_room_is_rewritten_through_its_target(tmp_path: Path) -> None:
    # A producer writing to the real file and an agent using a symlink must see one room: an
    # ack must not replace the symlink with a copy (the producer's next line would be lost).
    # Symlinked rooms are refused unless the owner opts in (issue 8; test_room_habits.py).
    real = tmp_path / "real.txt"
    real.write_bytes(b"a\n")
    link = tmp_path / "inbox.txt"
    link.symlink_to(real)
    room = Room(link, follow_symlinks=True)
    room.read("s")
    with open(real, "ab") as f:
        f.write(b"late\n")
    assert room.ack("s").acked == 1
    assert link.is_symlink()
    with open(real, "ab") as f:
        f.write(b"after\n")
    assert Room(link, follow_symlinks=True).read("s").lines == [b"late", b"after"]


def _tree(root: Path) -> dict[str, tuple[str, bytes | None]]:
    """Every entry under `root`: kind and content (files), for exact before/after comparison."""
    out: dict[str, tuple[str, bytes | None]] = {}
    for p in sorted(root.rglob("*")):
        kind = "dir" if p.is_dir() else "link" if p.is_symlink() else "file"
        out[str(p.relative_to(root))] = (kind, p.read_bytes() if kind == "file" else None)
    return out


def test_cold_ack_on_an_untouched_room_creates_nothing(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\nb\npartial")
    before = _tree(tmp_path)
    with pytest.raises(ColdAck, match="2 unread"):
        room.ack("s")
    assert _tree(tmp_path) == before
    assert not room.sidecar.exists()
    # --all may create the sidecar: it acks under the lock and returns the lines.
    assert room.ack("s", all=True).lines == [b"a", b"b"]
    assert room.sidecar.is_dir()


def test_cold_ack_with_a_sidecar_records_nothing(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s")
    with open(room.path, "ab") as f:
        f.write(b"b\n")  # grown since the last ledger store: an ack would record it
    before = _tree(tmp_path)
    with pytest.raises(ColdAck, match="no read by session 't'"):
        room.ack("t")
    assert _tree(tmp_path) == before


def test_ledger_moved_aside_makes_every_older_receipt_stale(tmp_path: Path) -> None:
    room = _room(tmp_path, b"a\n")
    room.read("s")
    # Rewritten behind ackdeck's back by a rename: the new "a" is a late duplicate nobody read.
    fresh = tmp_path / "new.txt"
    fresh.write_bytes(b"a\n")
    os.replace(fresh, room.path)
    # The owner moves the ledger aside (as the corrupt-ledger error suggests).
    os.replace(room.ledger_file, tmp_path / "ledger.old")
    res = room.ack("s")
    assert (res.mode, res.acked) == ("stale", 0)
    assert room.path.read_bytes() == b"a\n"
    # The new epoch and offsets continue past everything the receipts named.
    got = room.read("s")
    assert (got.lines, got.epoch, got.start) == ([b"a"], 1, 2)
    assert room.push("b") == 4
    assert room.ack("s").acked == 1
    assert room.path.read_bytes() == b"b\n"


def test_status_without_a_ledger_starts_past_every_receipt_as_read_would(tmp_path: Path) -> None:
    # A status reads the receipts once, before the ledger; with the ledger moved aside they
    # also start the ledger it reports (the epoch and offsets a read would then use).
    room = _room(tmp_path, b"a\nb\n")
    room.read("s")
    room.read("t")
    os.replace(room.ledger_file, tmp_path / "ledger.old")
    st = room.status()
    assert (st.epoch, st.pending, st.pushed_total) == (1, 2, 4 + 4)
    # Both receipts belong to epoch 0: stale, so everything is unread and nothing in flight.
    assert {n: (s.in_flight, s.unread) for n, s in st.sessions.items()} == {
        "s": (0, 2),
        "t": (0, 2),
    }
    assert not room.ledger_file.exists()  # a status never stores the ledger
    got = room.read("s")
    assert (got.epoch, got.start) == (st.epoch, st.pushed_total - 4)


def test_push_after_an_unterminated_fragment_completes_that_line(tmp_path: Path) -> None:
    # Documented behaviour: an unlocked writer left "frag" without its newline; push appends
    # after it, so the two form one line, and push reports where its own bytes start.
    room = _room(tmp_path, b"a\nfrag")
    assert room.push("pushed") == 6
    assert room.read("s").lines == [b"a", b"fragpushed"]


def test_receipt_body_damaged_on_disk_is_a_clear_error_and_removes_nothing(
    tmp_path: Path,
) -> None:
    from ackdeck.core.errors import CorruptState

    room = _room(tmp_path, b"one\ntwo\n")
    room.read("s")
    rcpt = room.receipt_file("s")
    raw = rcpt.read_bytes()
    rcpt.write_bytes(raw[:-4] + b"TWO\n")  # the header is intact, the consumed bytes are not
    with pytest.raises(CorruptState, match="corrupt receipt .*read the room again"):
        room.ack("s")
    assert room.path.read_bytes() == b"one\ntwo\n"
    room.read("s")
    assert room.ack("s").acked == 2


def test_push_follows_acks_and_a_replaced_sidecar(tmp_path: Path) -> None:
    import fcntl
    import shutil
    import threading

    room = _room(tmp_path)
    assert room.push("a") == 0
    other = Room(room.path)  # another process in real life
    other.read("s")
    other.ack("s")
    assert room.push("b") == 2  # the descriptors kept open see the ack's new base
    shutil.rmtree(room.sidecar)  # the owner removes all state: offsets start again
    assert room.push("c") == 2
    # The push locks the new sidecar's lock file, not the removed one it had open.
    lock = os.open(room.lock_file, os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    got: list[int] = []
    pusher = threading.Thread(target=lambda: got.append(room.push("d")))
    pusher.start()
    pusher.join(0.3)
    assert pusher.is_alive() and room.path.read_bytes() == b"b\nc\n"
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.close(lock)
    pusher.join(10)
    assert got == [4] and room.path.read_bytes() == b"b\nc\nd\n"
    room.close()


def test_a_forked_child_never_releases_the_parents_push_lock(tmp_path: Path) -> None:
    import fcntl

    room = _room(tmp_path)
    assert room.push("parent 1") == 0
    assert room._handles is not None
    # The parent is in the middle of a push: it holds the shared lock on its kept descriptor.
    fcntl.flock(room._handles.lock_fd, fcntl.LOCK_SH)
    pid = os.fork()
    if pid == 0:  # the child pushes through the inherited Room object, then leaves at once
        code = 0
        try:
            room.push("child")
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # Had the child unlocked the descriptor it inherited, an acker could now lock exclusively.
    probe = os.open(room.lock_file, os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(probe)
    fcntl.flock(room._handles.lock_fd, fcntl.LOCK_UN)
    assert room.push("parent 2") == len(b"parent 1\nchild\n")
    assert room.read("s").lines == [b"parent 1", b"child", b"parent 2"]
    room.close()


def test_forget_drops_a_reader_only_when_nothing_of_it_can_still_be_acked(tmp_path: Path) -> None:
    path = tmp_path / "inbox.txt"
    room = Room(path)
    room.push("one")
    room.push("two")
    assert room.read("s", reader="r1").lines == [b"one", b"two"]
    # An unacked read by another reader than the caller's is kept, and still acks.
    assert room.forget("s") is False and room.forget("s", {"other"}) is False
    assert room.ack("s", reader="r1").acked == 2
    room.push("three")
    assert room.status().sessions["s"].unread == 1
    assert room.forget("s") is True  # acked: only a cursor is left, and it goes
    assert "s" not in room.status().sessions and room.forget("s") is False
    # The caller's own unacked read goes too; its lines stay, and its ack is refused.
    assert room.read("h", reader="mine").lines == [b"three"]
    assert room.forget("h", {"mine"}) is True
    with pytest.raises(ColdAck):
        room.ack("h", reader="mine")
    assert path.read_bytes() == b"three\n"
    assert Room(tmp_path / "never.txt").forget("s") is False
