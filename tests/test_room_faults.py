"""Bad input and faults: every one gets a clear error and nothing is lost or half-written."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ackdeck.core.base import atomic
from ackdeck.core.errors import (
    CorruptState,
    InvalidInput,
    InvalidName,
    RoomUnavailable,
    UnsafeSidecar,
)
from ackdeck.core.rooms.file.room import Room

ROOT = os.geteuid() == 0
ROOT_REASON = "running as root: root ignores permission bits, so this fault cannot be made real"


def _room(tmp_path: Path, content: bytes = b"a\nb\n") -> Room:
    path = tmp_path / "inbox.txt"
    path.write_bytes(content)
    return Room(path)


def _snapshot(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def _temps(tmp_path: Path) -> list[str]:
    return [n for n in os.listdir(tmp_path) if atomic.TEMP_MARK in n]


@pytest.mark.parametrize("name", ["", "../x", "a/b", "..", ".", "a\0b", "x" * 129, "sp ace", "é"])
def test_invalid_session_names_are_refused(tmp_path: Path, name: str) -> None:
    room = _room(tmp_path)
    for op in (room.read, room.ack, lambda s: room.wait(s, timeout=0)):
        with pytest.raises(InvalidName, match="invalid session name"):
            op(name)
    assert not room.sidecar.exists()


@pytest.mark.parametrize("line", ["two\nlines", "nul\0byte", b"raw\nbytes", "crlf\r\n"])
def test_push_rejects_newline_and_nul_and_appends_nothing(tmp_path: Path, line) -> None:
    room = _room(tmp_path)
    with pytest.raises(InvalidInput, match="must not contain"):
        room.push(line)
    assert room.path.read_bytes() == b"a\nb\n"


def test_room_path_with_nul_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="NUL"):
        Room(str(tmp_path / "a\0b"))


def test_room_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "inbox.txt").mkdir()
    with pytest.raises(RoomUnavailable, match="is a directory"):
        Room(tmp_path / "inbox.txt").read("s")


def test_full_disk_during_ack_leaves_original_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = _room(tmp_path, b"a\nb\n")
    room.read("s")
    with open(room.path, "ab") as f:
        f.write(b"keep\n" * 1000)  # arrived after the read: the temp copy must hold it
    before = _snapshot(room.path)
    real_write = os.write

    def write(fd: int, data) -> int:
        # ENOSPC only for the ack's temp copy of the room, after part of it was written.
        target = os.readlink(f"/proc/self/fd/{fd}")
        if f".inbox.txt{atomic.TEMP_MARK}" in target and os.fstat(fd).st_size:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data[:100])

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(RoomUnavailable, match="no space left.*room is unchanged"):
        room.ack("s")
    monkeypatch.undo()
    assert _snapshot(room.path) == before
    assert _temps(tmp_path) == []
    # The receipt is intact: once space is back, the same ack succeeds.
    assert room.ack("s").acked == 2
    assert room.path.read_bytes() == b"keep\n" * 1000


def test_read_only_filesystem_during_ack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    room = _room(tmp_path)
    room.read("s")
    before = _snapshot(room.path)
    real_open = os.open

    def fake_open(path, flags, *a, **kw):
        if (
            atomic.TEMP_MARK in os.fspath(path)
            and flags & os.O_CREAT
            and "receipts" not in str(path)
        ):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", fake_open)
    with pytest.raises(RoomUnavailable, match="Read-only file system.*unchanged"):
        room.ack("s")
    monkeypatch.undo()
    assert _snapshot(room.path) == before
    assert room.ack("s").acked == 2


def test_unwritable_directory_for_sidecar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    room = _room(tmp_path)

    def mkdir(*_a, **_kw):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "mkdir", mkdir)
    with pytest.raises(RoomUnavailable, match="cannot create .*Read-only file system"):
        room.read("s")
    with pytest.raises(RoomUnavailable, match="cannot create"):
        room.push("x")
    assert room.path.read_bytes() == b"a\nb\n"


@pytest.mark.skipif(ROOT, reason=ROOT_REASON)
def test_unreadable_room_file(tmp_path: Path) -> None:
    room = _room(tmp_path)
    os.chmod(room.path, 0)
    with pytest.raises(RoomUnavailable, match="permission denied"):
        room.read("s")


@pytest.mark.skipif(ROOT, reason=ROOT_REASON)
def test_read_only_directory_ack_keeps_room(tmp_path: Path) -> None:
    room = _room(tmp_path)
    room.read("s")
    os.chmod(tmp_path, 0o500)
    try:
        with pytest.raises(RoomUnavailable, match="unchanged"):
            room.ack("s")
    finally:
        os.chmod(tmp_path, 0o700)
    assert room.path.read_bytes() == b"a\nb\n"


def test_unreadable_room_file_reports_permission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real chmod variant above is skipped as root; this one forces EACCES on the open.
    room = _room(tmp_path)
    real_open = os.open

    def fake_open(path, flags, *a, **kw):
        if os.fspath(path) == str(room.path) and not flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", fake_open)
    with pytest.raises(RoomUnavailable, match=r"cannot read room .*permission denied"):
        room.read("s")


def test_corrupt_ledger_is_a_clear_error_and_kept(tmp_path: Path) -> None:
    room = _room(tmp_path)
    room.read("s")
    room.ledger_file.write_bytes(b"{not json")
    for op in (lambda: room.read("s"), lambda: room.ack("s"), room.status, lambda: room.push("x")):
        with pytest.raises(CorruptState, match="corrupt state file .*ledger.*move it aside"):
            op()
    assert room.ledger_file.read_bytes() == b"{not json"
    assert room.path.read_bytes() == b"a\nb\n"  # push appended nothing


def test_corrupt_receipt_is_a_clear_error_and_a_reread_fixes_it(tmp_path: Path) -> None:
    room = _room(tmp_path)
    room.read("s")
    receipt = room.receipt_file("s")
    receipt.write_bytes(b'{"session": "s", "epo' + receipt.read_bytes()[20:])
    with pytest.raises(CorruptState, match="corrupt receipt .*read the room again"):
        room.ack("s")
    assert receipt.exists()
    assert room.path.read_bytes() == b"a\nb\n"
    assert room.status().pending == 2  # status stays usable
    room.read("s")
    assert room.ack("s").acked == 2


def test_corrupt_receipt_bytes_never_remove_anything(tmp_path: Path) -> None:
    # The bytes part is compared only when another session acked part of the read; a damaged
    # copy there is reported, and on the fast path it does not matter (the hash in the header
    # is compared with the file).
    room = _room(tmp_path, b"a\n")
    room.read("s1")
    room.push("b")
    room.read("s2")
    receipt = room.receipt_file("s2")
    receipt.write_bytes(receipt.read_bytes()[:-2] + b"X\n")
    room.ack("s1")
    with pytest.raises(CorruptState, match="corrupt receipt"):
        room.ack("s2")
    assert room.path.read_bytes() == b"b\n"


def test_symlinked_sidecar_is_refused(tmp_path: Path) -> None:
    room = _room(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    room.sidecar.symlink_to(elsewhere)
    for op in (lambda: room.read("s"), lambda: room.ack("s", all=True), lambda: room.push("x")):
        with pytest.raises(UnsafeSidecar, match="symlink"):
            op()
    assert list(elsewhere.iterdir()) == []
    assert room.path.read_bytes() == b"a\nb\n"


def test_sidecar_that_is_a_file_is_refused(tmp_path: Path) -> None:
    room = _room(tmp_path)
    room.sidecar.write_bytes(b"")
    with pytest.raises(UnsafeSidecar, match="not a directory"):
        room.read("s")


@pytest.mark.skipif(not ROOT, reason="only root can create a directory owned by another user")
def test_foreign_owned_sidecar_is_refused(tmp_path: Path) -> None:
    room = _room(tmp_path)
    room.sidecar.mkdir()
    os.chown(room.sidecar, 4242, 4242)
    with pytest.raises(UnsafeSidecar, match="owned by uid 4242"):
        room.read("s")
    assert room.path.read_bytes() == b"a\nb\n"


def test_push_on_full_disk_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = _room(tmp_path)
    real_write = os.write

    def write(fd: int, data) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") == str(room.path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(RoomUnavailable, match="no space left"):
        room.push("x")
    monkeypatch.undo()
    assert room.path.read_bytes() == b"a\nb\n"


def test_full_disk_writing_the_ledger_intent_leaves_room_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    room = _room(tmp_path)
    room.read("s")
    before = _snapshot(room.path)
    real_pwrite = os.pwrite

    def pwrite(fd: int, data, offset: int) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") == str(room.ledger_file):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    with pytest.raises(RoomUnavailable, match="no space left.*room is unchanged"):
        room.ack("s")
    monkeypatch.undo()
    assert _snapshot(room.path) == before
    assert _temps(tmp_path) == [] and _temps(room.sidecar) == []
    assert room.ack("s").acked == 2


def test_full_disk_after_the_rename_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The commit cannot be written: the room is already the new file, the ledger still holds the
    # intent, and the next operation completes the ack instead of starting a new epoch.
    room = _room(tmp_path, b"a\nb\nc\n")
    room.read("s")
    real_store = Room._store
    calls = []

    def store(self: Room, ledger) -> None:
        calls.append(ledger)
        if ledger.pending is None and len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.ledger_file))
        real_store(self, ledger)

    monkeypatch.setattr(Room, "_store", store)
    with pytest.raises(RoomUnavailable, match="already rewritten.*nothing lost"):
        room.ack("s")
    monkeypatch.undo()
    assert room.path.read_bytes() == b""
    room.push("d")
    st = room.status()
    assert (st.epoch, st.acked_total, st.pending) == (0, 3, 1)
    assert room.read("s").lines == [b"d"]
    assert room.ack("s").acked == 1


def test_room_that_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "inbox.txt")
    with pytest.raises(RoomUnavailable, match="not a regular file"):
        Room(tmp_path / "inbox.txt").read("s")
