"""`ackdeck room …` through a real subprocess: JSON shapes, text output and exit codes 0/1/3."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ackdeck.core.service.rooms import NO_TRANSCRIPT
from tests.helpers.cli import ACKDECK, ackdeck, ackdeck_json
from tests.helpers.paths import REPO


def test_append_between_read_and_ack_survives_through_cli(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = str(tmp_path / "inbox.txt")
    where = {"room": "inbox.txt", "path": room}
    # A push that did not wait for its ack says so (the --wait-ack fields, at rest).
    unwaited = {"waited": False, "acked": False, "acked_by": None, "acked_at": None}
    unwaited["dead_room"] = None
    unwaited["removed"] = False
    assert ackdeck_json(cli_env, "room", "push", room, "first") == {
        **where,
        "offset": 0,
        **unwaited,
    }
    assert ackdeck_json(cli_env, "room", "push", room, "second") == {
        **where,
        "offset": 6,
        **unwaited,
    }
    got = ackdeck_json(cli_env, "room", "read", room, "--session", "agent")
    assert got == {
        **where,
        "lines": ["first", "second"],
        "count": 2,
        "invalid_utf8": [],
        "start": 0,
        "end": 13,
        "epoch": 0,
        "waiting": 0,  # the page held every line
        "note": None,  # the room exists (issue 23: a missing room says so here)
        # The read's id (a CLI read is bound to no reader) and what to do next, in the JSON
        # too (issue 29: the structured result is the message).
        "read_id": None,
        # A CLI read is judged delivered once written: an estimate, and why (issue 41).
        "proof": "estimate",
        "proof_note": NO_TRANSCRIPT,
        "next": "Act on the 2 lines, then call room_ack (CLI: ackdeck room ack): it removes "
        "exactly them and keeps anything that arrived since.",
    }
    # The poller appends with plain shell redirection between the read and the ack.
    subprocess.run(["sh", "-c", f"printf 'late one\\n' >> '{room}'"], check=True)
    acked = ackdeck_json(cli_env, "room", "ack", room, "--session", "agent")
    assert (acked["mode"], acked["acked"], acked["preserved"]) == ("prefix", 2, 1)
    assert acked["lines"] is None  # only ack-all returns lines
    assert (acked["proof"], acked["proof_note"], acked["unshown"]) == ("estimate", NO_TRANSCRIPT, 0)
    assert Path(room).read_bytes() == b"late one\n"
    got = ackdeck_json(cli_env, "room", "read", room, "--session", "agent")
    assert (got["lines"], got["start"], got["end"], got["epoch"]) == (["late one"], 13, 22, 0)
    acked = ackdeck_json(cli_env, "room", "ack", room, "--session", "agent")
    assert (acked["mode"], acked["acked"], acked["preserved"]) == ("prefix", 1, 0)
    assert Path(room).read_bytes() == b""


def test_cold_ack_exits_3_and_all_returns_lines(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"a\nb \xff\n")
    before = room.stat()
    out = ackdeck(cli_env, "room", "ack", str(room), "--session", "s", "--json")
    assert out.returncode == 3
    refused = json.loads(out.stdout)
    # Nothing was removed: both lines are kept, and the count says so (it said 0 before).
    assert (refused["mode"], refused["acked"], refused["preserved"]) == ("refused", 0, 2)
    assert "read the room first" in out.stderr and "2 unread" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    after = room.stat()
    assert (after.st_ino, after.st_mtime_ns, room.read_bytes()) == (
        before.st_ino,
        before.st_mtime_ns,
        b"a\nb \xff\n",
    )
    got = ackdeck_json(cli_env, "room", "ack", str(room), "--session", "s", "--all")
    assert got["mode"] == "all" and got["acked"] == 2
    assert got["lines"] == ["a", "b \ufffd"]  # decoded for display only
    assert room.read_bytes() == b""


def test_text_output(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = str(tmp_path / "inbox.txt")
    assert ackdeck(cli_env, "room", "push", room, "hello world").stdout == ""
    out = ackdeck(cli_env, "room", "read", room, "--session", "s")
    assert (out.returncode, out.stdout) == (0, "hello world\n")
    out = ackdeck(cli_env, "room", "status", room)
    assert out.returncode == 0 and "1 pending" in out.stdout and "s: 1 in flight" in out.stdout
    out = ackdeck(cli_env, "room", "ack", room, "--session", "s")
    assert (out.returncode, out.stderr) == (0, "acked 1 line of inbox.txt\n")


def test_status_json_shape(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"a\nb\nhalf")
    ackdeck(cli_env, "room", "read", str(room), "--session", "s")
    with open(room, "ab") as f:
        f.write(b"\n")
    report = ackdeck_json(cli_env, "room", "status", str(room))
    assert report["session"] is None and len(report["rooms"]) == 1
    st = report["rooms"][0]
    assert {k: st[k] for k in ("pending", "partial_bytes", "acked_total", "epoch")} == {
        "pending": 3,
        "partial_bytes": 0,
        "acked_total": 0,
        "epoch": 0,
    }
    assert st["preserved_total"] == 0
    mine = st["sessions"]["s"]
    assert list(st["sessions"]) == ["s"]
    assert (mine["in_flight"], mine["unread"]) == (2, 1)
    # Ages: the read waits for its ack; the line appended since was first seen by this status.
    assert mine["in_flight_age"] >= 0 and mine["unread_age"] >= 0
    assert st["oldest_pending_age"] >= mine["in_flight_age"] >= mine["unread_age"]


def test_status_of_hundreds_of_rooms_reports_each_as_a_status_of_it_alone(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # From 512 rooms on a status hashes the heads with OpenSSL (imported for them), and it
    # pauses the cyclic collector; a status of one room does neither. Rooms rewritten in place
    # (a new epoch), appended to behind ackdeck's back, read and partly acked: every number
    # is the one-room status's (ages aside: they depend on the clock).
    from ackdeck.core.rooms.file.room import Room

    rooms = []
    for i in range(520):
        room = Room(tmp_path / f"r{i:03d}.txt")
        for j in range(i % 4 + 1):
            room.push(f"line {j} of room {i} " + "x" * (i % 50))
        if i % 3 == 0:
            room.read("s")
        if i % 6 == 0:
            room.ack("s")
            room.push("after the ack")
        room.close()
        if i % 6 == 3:  # read, then rewritten in place: same size, another head
            data = room.path.read_bytes()
            room.path.write_bytes(data.replace(b"line", b"LINE"))
        elif i % 7 == 0:  # an unlocked append
            with open(room.path, "ab") as f:
                f.write(b"appended\n")
        rooms.append(str(room.path))

    def numbers(report: dict) -> list[dict]:
        drop = ("checked_at", "default", "overdue")
        out = []
        for st in report["rooms"]:
            row = {k: v for k, v in st.items() if k not in drop and not k.endswith("_age")}
            row["sessions"] = {
                n: {k: v for k, v in c.items() if not k.endswith("_age") and k != "overdue"}
                for n, c in st["sessions"].items()
            }
            out.append(row)
        return out

    every = numbers(ackdeck_json(cli_env, "room", "status", *rooms, "--session", "s"))
    assert [st["epoch"] for st in every[:10]] == [0, 0, 0, 1, 0, 0, 0, 0, 0, 1]  # r003, r009
    for i in (0, 1, 3, 6, 7, 9, 519):
        alone = numbers(ackdeck_json(cli_env, "room", "status", rooms[i], "--session", "s"))
        assert every[i] == alone[0], i


@pytest.mark.parametrize(
    "args, needle",
    [
        (("room", "read", "{room}", "--session", "../evil"), "invalid session name"),
        (("room", "ack", "{room}", "--session", "a/b"), "invalid session name"),
        (("room", "read", "{room}", "--session", ".."), "invalid session name"),
        (("room", "push", "{room}", "two\nlines"), "must not contain a newline"),
        (("room", "read", "{missing}/x.txt", "--session", "s"), "does not exist"),
        (("room", "push", "{missing}/x.txt", "hi"), "does not exist"),
    ],
)
def test_bad_input_is_one_clear_line_exit_1(
    tmp_path: Path, cli_env: dict[str, str], args: tuple[str, ...], needle: str
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"keep\n")
    argv = [a.format(room=room, missing=tmp_path / "nope") for a in args]
    out = ackdeck(cli_env, *argv)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("ackdeck: error:")
    assert "Traceback" not in out.stderr
    assert room.read_bytes() == b"keep\n"


def test_missing_room_read_and_ack_are_noops_and_create_nothing(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    rooms = tmp_path / "rooms"
    rooms.mkdir()
    room = rooms / "inbox.txt"
    assert ackdeck_json(cli_env, "room", "read", str(room), "--session", "s")["lines"] == []
    got = ackdeck_json(cli_env, "room", "ack", str(room), "--session", "s")
    assert (got["mode"], got["acked"]) == ("noop", 0)
    assert list(rooms.iterdir()) == []


def test_wait_exit_codes(tmp_path: Path, cli_env: dict[str, str]) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"")
    t0 = time.monotonic()
    out = ackdeck(cli_env, "room", "wait", str(room), "--session", "s", "--timeout", "0.3")
    assert out.returncode == 124 and time.monotonic() - t0 >= 0.3
    waiter = subprocess.Popen(
        [*ACKDECK, "room", "wait", str(room), "--session", "s", "--timeout", "30"],
        env=cli_env,
        cwd=REPO,
    )
    try:
        time.sleep(0.3)  # let it reach the watcher; correctness does not depend on this
        subprocess.run([sys.executable, "-c", f"open({str(room)!r}, 'ab').write(b'x\\n')"])
        assert waiter.wait(timeout=20) == 0
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()


def test_cold_ack_on_an_untouched_room_leaves_the_tree_byte_identical(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    rooms = tmp_path / "rooms"
    rooms.mkdir()
    room = rooms / "inbox.txt"
    room.write_bytes(b"one\ntwo\n")

    def tree() -> list[tuple[str, int, bytes]]:
        return [(p.name, p.stat().st_size, p.read_bytes()) for p in sorted(rooms.rglob("*"))]

    before = tree()
    out = ackdeck(cli_env, "room", "ack", str(room), "--session", "s")
    assert out.returncode == 3 and "2 unread" in out.stderr
    assert tree() == before
    assert not (rooms / ".inbox.txt.ackdeck").exists()


def test_status_in_process_leaves_the_collector_as_it_found_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `room status` pauses the cyclic collector while it works; a caller that runs the CLI in
    # its own process (a test, a script) gets it back as it was, also after an error.
    import gc

    from ackdeck.core.cli import main

    room = tmp_path / "inbox.txt"
    room.write_bytes(b"a\nb\n")
    assert gc.isenabled()
    assert main(["room", "status", str(room), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rooms"][0]["pending"] == 2
    assert gc.isenabled()
    assert main(["room", "status", str(tmp_path / "dir") + "/", "--json"]) == 1  # refused
    assert gc.isenabled()
    gc.disable()
    try:
        assert main(["room", "status", str(room)]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
    capsys.readouterr()
