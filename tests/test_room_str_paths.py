"""A file room's names are plain strings (issue 43: pathlib, with `re`, `urllib.parse` and
`ipaddress`, was ~2x a bare interpreter of every turn's read, ack and status). Each string
must name what the Path code named, for the names where os.path and pathlib differ: `//`,
`.` parts, `..` (kept, not resolved), a leading `//`, relative paths, a literal `~`, names
that are not UTF-8, symlinked directories and (with the opt-in) a symlinked room. The
expected values are computed here with pathlib, as the Room and the room reference did."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.rooms.file.sidecar_checks import room_target
from ackdeck.core.rooms.room_spec import file_room_path
from ackdeck.core.service.roomref import FileRoomRef

# Not UTF-8: the name as os.fsdecode gives it (surrogate escapes), as a shell passes it.
NOT_UTF8 = os.fsdecode(b"in\xffbox\xfe.txt")


def _specs(tmp: Path) -> list[str]:
    """Room specs, relative ones against `tmp` (the working directory of the test)."""
    (tmp / "d" / "sub").mkdir(parents=True)
    (tmp / "linked").symlink_to(tmp / "d" / "sub")
    t = str(tmp)
    return [
        "r.txt",
        "./r.txt",
        "d//r.txt",
        "d/./sub/../r.txt",
        "linked/../r.txt",  # `..` past a symlinked directory: the kernel's parent, not lexical
        "linked/r.txt",
        "~/r.txt",  # a literal `~`: a room path is never expanded
        NOT_UTF8,
        f"d/{NOT_UTF8}",
        f"{t}/d//sub/./r.txt",
        f"/{t}/r.txt",  # a leading `//`: POSIX lets it mean something else; pathlib keeps it
        f"//{t}/r.txt",  # three: one
        f"{t}/d/sub/../../r.txt",
        "x" * 250,  # too long for the sidecar's dot and suffix: a hashed stem
    ]


def test_a_rooms_string_names_are_the_names_its_path_objects_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for spec in _specs(tmp_path):
        for follow in (False, True):
            room = Room(spec, follow_symlinks=follow)
            # What Room.__init__ computed with pathlib before its names became strings.
            want = Path(room_target(str(Path(spec).absolute()), follow))
            assert room.path_text == str(want), spec
            assert room.path == want and str(room.path) == str(want), spec
            side = locations.sidecar(want)
            assert room.sidecar == side, spec
            assert room.lock_file == side / "lock" and room.ledger_file == side / "ledger"
            assert room.audit_file == side / "audit.jsonl", spec
            assert room.receipt_file("s") == side / "receipts" / "s.rcpt", spec


def test_a_room_references_string_names_are_the_names_its_path_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for spec in _specs(tmp_path):
        ref = FileRoomRef(spec)
        want = Path(file_room_path(spec))  # what FileRoomRef built
        assert ref.path == want and ref.display == str(want), spec
        assert ref.name == want.name, spec
        assert ref.long_name == f"{want.parent.name}/{want.name}", spec
        message = f"cannot write {want}: full"
        assert ref.shorten(message) == message.replace(str(want.parent) + os.sep, ""), spec
        assert ref.open().path == Room(want).path, spec


def test_a_room_at_the_root_of_the_filesystem_keeps_its_names() -> None:
    """`/r`: its directory is `/`, which pathlib and os.path spell alike only by luck."""
    ref = FileRoomRef("/r.txt")
    assert (ref.display, ref.name, ref.long_name) == ("/r.txt", "r.txt", "/r.txt")
    # As the Path code did: it cut `str(parent) + "/"`, here `//`, which the line lacks.
    assert ref.shorten("cannot write /r.txt") == "cannot write /r.txt"
    room = Room("//r.txt")  # two slashes: kept, as Path("//r.txt") keeps them
    assert room.path_text == str(Path("//r.txt")) == "//r.txt"
    assert str(room.sidecar) == str(locations.sidecar(Path("//r.txt")))


@pytest.mark.parametrize("spec", ["r.txt/", "d/r.txt/.", ".", "/", "r.txt/.."])
def test_a_spec_naming_a_directory_is_still_one_line(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pathlib would quietly drop the trailing `/` (check_room_path refuses first, as before)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match="names a directory, not a notification file"):
        Room(spec)


def test_a_room_with_odd_names_reads_and_acks_into_the_files_the_path_code_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operations, not only the names: a push, a read and an ack through a relative,
    symlinked, non-UTF-8 spec leave the ledger, the receipt and the audit entry where the
    Path code put them."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "linked").symlink_to(tmp_path / "d" / "sub")
    spec = f"linked//./{NOT_UTF8}"
    want = Path(str(Path(spec).absolute()))
    side = locations.sidecar(want)
    room = Room(spec)
    room.push("one")
    room.push("two")
    assert [bytes(x) for x in room.read("s").lines] == [b"one", b"two"]
    assert (side / "ledger").is_file() and (side / "receipts" / "s.rcpt").is_file()
    res = room.ack("s")
    assert (res.mode, res.acked) == ("prefix", 2)
    assert (side / "audit.jsonl").read_bytes().count(b"\n") == 1
    assert (tmp_path / "d" / "sub" / NOT_UTF8).read_bytes() == b""
    status = room.status()
    assert status.path == str(want)
