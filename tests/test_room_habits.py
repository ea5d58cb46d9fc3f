"""Ordinary habits that used to lose or repeat room lines (issue 8), driven through the real CLI
where the habit is a shell habit: a real `| head`, a real `rm` and recreate, a real symlink, a
real FIFO, /dev/null, a real small tmpfs filled up."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import anyio
import pytest

from ackdeck.core.errors import ColdAck, RoomUnavailable
from ackdeck.core.rooms.file.room import Room
from tests.helpers.cli import ACKDECK, ackdeck, ackdeck_ok
from tests.helpers.mcp import call, connect, text_of
from tests.helpers.mounts import fill, mounted
from tests.helpers.paths import PATHS, REPO

CLI = " ".join(shlex.quote(x) for x in ACKDECK)


def sh(env: dict[str, str], script: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """A shell command line as a user types it, with `ackdeck` meaning this checkout's CLI."""
    return subprocess.run(
        ["bash", "-c", f'ackdeck() {{ {CLI} "$@"; }}\n{script}'],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )


def sidecar_files(room: Path) -> list[str]:
    side = room.with_name(f".{room.name}.ackdeck")
    return sorted(str(p.relative_to(side)) for p in side.rglob("*")) if side.exists() else []


# ----- 1. a read that was not delivered licenses no ack ----------------------------------------
def test_read_piped_into_head_records_no_receipt_and_the_ack_removes_nothing(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = sh(
        cli_env,
        "seq -f 'note %g' 1 20000 > r\n"
        "ackdeck room read r --session s | head -2\n"
        'echo "read-exit=${PIPESTATUS[0]}"\n'
        "ackdeck room ack r --session s\n"
        'echo "ack-exit=$?"',
        tmp_path,
    )
    stdout = out.stdout.decode()
    assert stdout.splitlines()[:2] == ["note 1", "note 2"]
    assert "read-exit=1" in stdout and "ack-exit=3" in stdout
    err = out.stderr.decode().splitlines()
    assert err[0].startswith("ackdeck: error: could not deliver the lines to stdout (broken pipe)")
    assert "Traceback" not in out.stderr.decode()
    assert (tmp_path / "r").read_bytes().count(b"\n") == 20000  # nothing acked


def test_json_read_piped_into_head_records_no_receipt(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = sh(
        cli_env,
        "seq -f 'note %g' 1 20000 > r\n"
        "ackdeck room read r --session s --json | head -c 100 >/dev/null\n"
        "ackdeck room ack r --session s --json",
        tmp_path,
    )
    assert json.loads(out.stdout)["mode"] == "refused"
    assert out.returncode == 3
    assert (tmp_path / "r").read_bytes().count(b"\n") == 20000


def test_ack_all_piped_into_head_removes_nothing_it_did_not_write(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = sh(
        cli_env,
        "seq -f 'note %g' 1 20000 > r\n"
        "ackdeck room ack r --session s --all | head -2\n"
        'echo "ack-exit=${PIPESTATUS[0]}"\n'
        "ackdeck room ack r --session s --all > out.txt\n"
        'echo "ack2-exit=$?"',
        tmp_path,
    )
    stdout = out.stdout.decode()
    assert stdout.splitlines()[:2] == ["note 1", "note 2"]
    assert "ack-exit=1" in stdout and "ack2-exit=0" in stdout, out.stderr
    assert (tmp_path / "out.txt").read_bytes().count(b"\n") == 20000  # all still there
    assert (tmp_path / "r").read_bytes() == b""


def test_json_ack_all_piped_into_head_removes_nothing(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # As in text mode: the lines are written first, and removed only once they were.
    out = sh(
        cli_env,
        "seq -f 'note %g' 1 20000 > r\n"
        "ackdeck room ack r --session s --all --json | head -c 100 >/dev/null\n"
        'echo "ack-exit=${PIPESTATUS[0]}"\n'
        "ackdeck room ack r --session s --all --json > out.json\n"
        'echo "ack2-exit=$?"',
        tmp_path,
    )
    stdout = out.stdout.decode()
    assert "ack-exit=1" in stdout and "ack2-exit=0" in stdout, out.stderr
    err = out.stderr.decode().splitlines()
    assert len(err) == 1 and err[0].startswith("ackdeck: error: could not deliver the lines")
    got = json.loads((tmp_path / "out.json").read_bytes())
    assert (got["mode"], got["acked"], got["preserved"]) == ("all", 20000, 0)
    assert got["lines"][0] == "note 1" and len(got["lines"]) == 20000
    assert set(got) == {
        "room", "path", "mode", "acked", "preserved", "message", "lines", "note", "proof",
        "proof_note", "unshown", "next"
    }  # fmt: skip
    assert (tmp_path / "r").read_bytes() == b""


def test_json_ack_all_onto_a_full_disk_removes_nothing(
    small_tmpfs: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    out = sh(
        cli_env,
        "seq -f 'note %g' 1 20000 > r\n"
        f"ackdeck room ack r --session s --all --json > {small_tmpfs}/out.json",
        work,
    )
    assert out.returncode == 1
    assert "No space left on device" in out.stderr.decode()
    assert (work / "r").read_bytes().count(b"\n") == 20000


def test_read_and_ack_all_with_stdout_closed_are_one_line_errors(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    # `>&-` (a closed stdout, as some job runners start commands) leaves Python no sys.stdout.
    out = sh(
        cli_env,
        "printf 'a\\nb\\n' > r\n"
        "ackdeck room read r --session s >&-\n"
        'echo "read-exit=$?"\n'
        "ackdeck room ack r --session s --all >&-\n"
        'echo "all-exit=$?"\n'
        "ackdeck room ack r --session s\n"
        'echo "ack-exit=$?"',
        tmp_path,
    )
    stdout, err = out.stdout.decode(), out.stderr.decode()
    assert "Traceback" not in err, err
    assert "read-exit=1" in stdout and "all-exit=1" in stdout and "ack-exit=3" in stdout
    assert err.splitlines()[0].startswith("ackdeck: error: could not deliver the lines")
    assert len(err.splitlines()) == 3  # one line per command
    assert (tmp_path / "r").read_bytes() == b"a\nb\n"


def test_a_failed_delivery_keeps_the_previous_receipt(tmp_path: Path) -> None:
    room = Room(tmp_path / "r")
    room.push("one")
    room.read("s")
    room.push("two")

    def broken(_result: object) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        room.read("s", deliver=broken)
    res = room.ack("s")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 1, 1)
    assert (tmp_path / "r").read_bytes() == b"two\n"


def test_receipt_is_bound_to_its_reader_but_cli_calls_share_one(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    path = tmp_path / "r"
    Room(path).push("a")
    Room(path).read("s", reader="mcp:1:old")
    with pytest.raises(ColdAck, match="another reader"):
        Room(path).ack("s", reader="mcp:2:new")
    with pytest.raises(ColdAck):
        Room(path).ack("s")  # the CLI never saw those lines either
    assert path.read_bytes() == b"a\n"
    # Several CLI calls of one session: read in one process, ack in another.
    out = sh(
        cli_env,
        "ackdeck room read r --session s >/dev/null && ackdeck room ack r --session s",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert path.read_bytes() == b""


def test_a_restarted_mcp_server_does_not_ack_its_predecessors_read(
    home: Path, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"build failed\n")

    async def scenario() -> None:
        async with connect(home, [room]) as first:
            listed = await call(first, "room_list_new")
            assert "build failed" in text_of(listed)
        async with connect(home, [room]) as second:  # the agent died with its context
            acked = await call(second, "room_ack")
            assert acked.is_error and "refused" in text_of(acked)
            assert room.read_bytes() == b"build failed\n"
            await call(second, "room_list_new")
            acked = await call(second, "room_ack")
            assert not acked.is_error, text_of(acked)
        assert room.read_bytes() == b""

    anyio.run(scenario)


# ----- 2. a room deleted and recreated is a new room -----------------------------------------
@pytest.mark.parametrize("where", ["tmp", "shm"])
def test_room_removed_and_recreated_on_a_reused_inode_is_not_acked(
    tmp_path: Path, cli_env: dict[str, str], where: str
) -> None:
    base = tmp_path
    if where == "shm":
        if not os.path.isdir("/dev/shm"):
            pytest.skip("no /dev/shm tmpfs here")
        import tempfile

        base = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        script = (
            "printf 'build failed\\ndeploy failed\\n' > r\n"
            "ackdeck room read r --session s >/dev/null\n"
            "ino1=$(stat -c %i r)\n"
            "rm r\n"
            "printf 'build failed\\ndeploy failed\\nnew-3\\n' > r\n"
            "ino2=$(stat -c %i r)\n"
            'echo "same-inode=$([ "$ino1" = "$ino2" ] && echo yes || echo no)"\n'
            "ackdeck room ack r --session s --json"
        )
        same = False
        for _ in range(20):  # the filesystem decides about reuse; retry until it reuses
            for p in base.glob("*r*"):
                subprocess.run(["rm", "-rf", str(p)], check=True)
            out = sh(cli_env, script, base)
            text = out.stdout.decode()
            same = "same-inode=yes" in text
            if same:
                break
        if not same:
            pytest.skip(f"{where}: the filesystem never reused the inode number")
        result = json.loads(text.splitlines()[-1])
        assert (result["mode"], result["acked"]) == ("stale", 0), result
        assert (base / "r").read_bytes() == b"build failed\ndeploy failed\nnew-3\n"
    finally:
        if where == "shm":
            subprocess.run(["rm", "-rf", str(base)], check=True)


def test_a_stale_ack_says_stale_once(tmp_path: Path, cli_env: dict[str, str]) -> None:
    out = sh(
        cli_env,
        "printf 'a\\n' > r\n"
        "ackdeck room read r --session s >/dev/null\n"
        "printf 'b\\n' > r.new && mv r.new r\n"
        "ackdeck room ack r --session s",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr.decode() == (
        "nothing acked: the room was rewritten since this read; read r again, then ack\n"
    )


# ----- 5. a symlinked room is refused -----------------------------------------------------------
def test_symlinked_room_is_refused_and_the_victim_untouched(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = sh(
        cli_env,
        "mkdir inbox victim\n"
        "printf 'secret=1\\nkeep=2\\n' > victim/important.conf\n"
        "ln -s ../victim/important.conf inbox/agent.txt\n"
        "ackdeck room ack inbox/agent.txt --session s --all\n"
        'echo "ack-exit=$?"\n'
        "ackdeck room read inbox/agent.txt --session s\n"
        'echo "read-exit=$?"\n'
        "ackdeck room push inbox/agent.txt hello\n"
        'echo "push-exit=$?"',
        tmp_path,
    )
    text = out.stdout.decode()
    assert "ack-exit=1" in text and "read-exit=1" in text and "push-exit=1" in text
    errors = out.stderr.decode().splitlines()
    assert len(errors) == 3 and all("is a symlink; refusing" in e for e in errors)
    assert (tmp_path / "victim/important.conf").read_bytes() == b"secret=1\nkeep=2\n"
    assert sorted(os.listdir(tmp_path / "victim")) == ["important.conf"]


def test_symlinked_room_works_with_the_explicit_opt_in(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = sh(
        cli_env,
        "mkdir inbox data && printf 'a\\n' > data/room\n"
        "ln -s ../data/room inbox/room\n"
        "ackdeck room read inbox/room --session s --follow-symlinks\n"
        "ackdeck room ack inbox/room --session s --follow-symlinks",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "data/room").read_bytes() == b""
    assert (tmp_path / "inbox/room").is_symlink()


def test_symlink_through_mcp_is_refused(home: Path, tmp_path: Path) -> None:
    (tmp_path / "victim").write_bytes(b"important\n")
    room = tmp_path / "inbox.txt"
    room.symlink_to(tmp_path / "victim")

    async def scenario() -> None:
        async with connect(home, [room]) as client:
            acked = await call(client, "room_ack", {"all": True})
            assert acked.is_error and "symlink" in text_of(acked)

    anyio.run(scenario)
    assert (tmp_path / "victim").read_bytes() == b"important\n"
    assert not (tmp_path / ".victim.ackdeck").exists()


def test_room_swapped_for_a_symlink_under_a_running_mcp_server_is_refused(
    home: Path, tmp_path: Path
) -> None:
    # The configured path did not change, the file behind it did: every call checks again.
    (tmp_path / "inbox").mkdir()
    (tmp_path / "victim").mkdir()
    victim = tmp_path / "victim" / "important.conf"
    victim.write_bytes(b"secret=1\nkeep=2\n")
    room = tmp_path / "inbox" / "agent.txt"
    room.write_bytes(b"hello\n")

    async def scenario() -> None:
        async with connect(home, [room]) as client:
            assert not (await call(client, "room_list_new")).is_error
            room.unlink()
            room.symlink_to("../victim/important.conf")
            for tool, args in [("room_ack", {"all": True}), ("room_ack", None)]:
                got = await call(client, tool, args)
                assert got.is_error and "is a symlink" in text_of(got), text_of(got)
            got = await call(client, "room_push", {"room": str(room), "text": "x"})
            assert got.is_error and "is a symlink" in text_of(got), text_of(got)

    anyio.run(scenario)
    assert victim.read_bytes() == b"secret=1\nkeep=2\n"
    assert sorted(os.listdir(tmp_path / "victim")) == ["important.conf"]


def test_room_swapped_for_a_symlink_after_the_check_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"important\n")
    path = tmp_path / "room"
    path.write_bytes(b"a\n")
    room = Room(path)
    room._check_kind()  # passes: a regular file
    path.unlink()
    path.symlink_to(victim)
    with pytest.raises(RoomUnavailable, match="symlink"):
        room._open()
    with pytest.raises(RoomUnavailable, match="symlink"):
        room.push("x")
    assert victim.read_bytes() == b"important\n"


# ----- 6. special files and names ---------------------------------------------------------------
def test_push_on_a_fifo_refuses_instead_of_hanging(tmp_path: Path, cli_env: dict[str, str]) -> None:
    work = tmp_path / "w"
    work.mkdir()
    os.mkfifo(work / "r")
    out = sh(cli_env, "ackdeck room push r hello", work)  # timeout=120 would catch a hang
    assert out.returncode == 1
    assert out.stderr.decode().strip().endswith("is a FIFO, not a regular file")
    assert sorted(os.listdir(work)) == ["r"]  # no sidecar either


def test_push_on_a_fifo_with_a_reader_refuses(tmp_path: Path) -> None:
    fifo = tmp_path / "r"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        room = Room(fifo)
        room._check_kind = lambda: None  # type: ignore[method-assign]  # the swap after a check
        with pytest.raises(RoomUnavailable, match="a FIFO"):
            room.push("hello")
        assert os.read(rfd, 100) == b""
    finally:
        os.close(rfd)


@pytest.mark.parametrize("action", ["push r x", "read r --session s", "ack r --session s --all"])
def test_dev_null_and_directories_are_refused_without_a_sidecar(
    tmp_path: Path, cli_env: dict[str, str], action: str
) -> None:
    before = sorted(os.listdir("/dev"))
    out = sh(cli_env, f"ackdeck room {action.replace('r ', '/dev/null ', 1)}", tmp_path)
    assert out.returncode == 1 and "is a device" in out.stderr.decode()
    assert sorted(os.listdir("/dev")) == before  # no /dev/.null.ackdeck created
    work = tmp_path / "w"
    (work / "adir").mkdir(parents=True)
    out = sh(cli_env, f"ackdeck room {action.replace('r ', 'adir ', 1)}", work)
    assert out.returncode == 1 and "is a directory" in out.stderr.decode()
    assert sorted(os.listdir(work)) == ["adir"]


@pytest.mark.parametrize("session", ["prev-1", "x.ackdeck-tmp-1-abcd", ".hidden", "prev-"])
def test_session_names_like_sidecar_files_keep_their_receipts(tmp_path: Path, session: str) -> None:
    path = tmp_path / "r"
    room = Room(path)
    room.push("a")
    room.push("b")
    room.read(session)
    other = Room(path)
    other.read("z")
    other.ack("z")  # an exclusive operation cleans leftovers: must not take the receipt
    assert session in room.status().sessions
    room.push("c")
    res = room.ack(session)
    assert res.mode in ("prefix", "noop"), res
    assert session in room.status().sessions


def test_a_long_room_name_acks(tmp_path: Path, cli_env: dict[str, str]) -> None:
    name = "n" * 245
    try:
        (tmp_path / ("m" * 255)).write_bytes(b"")
    except OSError:
        pytest.skip("this filesystem does not accept 255-byte names")
    for length in (245, 250, 255):
        name = "n" * length
        out = sh(
            cli_env,
            f"printf 'a\\nb\\n' > {name}\n"
            f"ackdeck room read {name} --session s >/dev/null\n"
            f"ackdeck room push {name} c\n"
            f"ackdeck room ack {name} --session s",
            tmp_path,
        )
        assert out.returncode == 0, out.stderr
        assert (tmp_path / name).read_bytes() == b"c\n"


def test_push_writes_the_exact_bytes_of_the_argument(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    out = sh(cli_env, "ackdeck room push r $'\\xff caf\\xc3\\xa9'", tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "r").read_bytes() == b"\xff caf\xc3\xa9\n"


def test_text_read_writes_raw_bytes_and_json_names_invalid_lines(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    (tmp_path / "r").write_bytes(b"ok\n\xff\xfe bad\ncaf\xc3\xa9\n")
    out = sh(cli_env, "ackdeck room read r --session s", tmp_path)
    assert out.stdout == b"ok\n\xff\xfe bad\ncaf\xc3\xa9\n"
    out = sh(cli_env, "ackdeck room read r --session s --json", tmp_path)
    got = json.loads(out.stdout)
    assert got["lines"] == ["ok", "\ufffd\ufffd bad", "café"]
    assert got["invalid_utf8"] == [1]


def test_room_commands_honour_ackdeck_session(tmp_path: Path, cli_env: dict[str, str]) -> None:
    env = {**cli_env, "ACKDECK_SESSION": "agent7"}
    out = sh(
        env, "printf 'a\\n' > r && ackdeck room read r >/dev/null && ackdeck room ack r", tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "r").read_bytes() == b""
    # Neither --session nor ACKDECK_SESSION: the session is `default`, as for `run` (issue 23:
    # one rule for every command), so a read and an ack without either pair up.
    assert "ACKDECK_SESSION" not in cli_env
    out = sh(cli_env, "printf 'b\\n' > r && ackdeck room read r", tmp_path)
    assert (out.returncode, out.stdout) == (0, b"b\n"), out.stderr
    out = sh(cli_env, "ackdeck room status r --session default", tmp_path)
    assert b"  default: 1 in flight, 0 unread (read " in out.stdout, out.stderr
    out = sh(cli_env, "ackdeck room ack r", tmp_path)
    assert out.returncode == 0 and (tmp_path / "r").read_bytes() == b"", out.stderr


@pytest.mark.parametrize("where", ["tmp", "/dev/shm"])
def test_birth_time_tells_a_recreated_file_from_the_same_one(tmp_path: Path, where: str) -> None:
    from ackdeck.core.base.fileid import birth_ns

    base = tmp_path if where == "tmp" else Path(where)
    if not base.is_dir():
        pytest.skip(f"no {where} here")
    path = base / f"ackdeck-birth-{os.getpid()}"
    try:
        path.write_bytes(b"a\n")
        fd = os.open(path, os.O_RDONLY)
        first = birth_ns(fd)
        os.close(fd)
        if first is None:
            pytest.skip(f"{where}: no statx birth time on this filesystem")
        with open(path, "ab") as f:
            f.write(b"b\n")  # appends keep the birth time
        fd = os.open(path, os.O_RDONLY)
        assert birth_ns(fd) == first
        os.close(fd)
        path.unlink()
        path.write_bytes(b"a\n")
        fd = os.open(path, os.O_RDONLY)
        assert birth_ns(fd) != first
        os.close(fd)
    finally:
        path.unlink(missing_ok=True)


# ----- 4. a full disk leaves no fragment ------------------------------------------------------
@pytest.fixture
def small_tmpfs(tmp_path: Path):  # type: ignore[no-untyped-def]
    mnt = tmp_path / "fs"
    mnt.mkdir()
    with mounted(mnt, "-t", "tmpfs", "-o", "size=64k", "tmpfs"):
        yield mnt


def test_push_on_a_full_tmpfs_leaves_the_room_exactly_as_it_was(
    small_tmpfs: Path, cli_env: dict[str, str]
) -> None:
    room = small_tmpfs / "r"
    assert sh(cli_env, "ackdeck room push r a", small_tmpfs).returncode == 0
    filler = fill(small_tmpfs)
    big = "y" * 5000  # more than the free bytes left in the room's last page
    out = sh(cli_env, f"ackdeck room push r {big}", small_tmpfs)
    assert out.returncode == 1
    err = out.stderr.decode().splitlines()
    assert len(err) == 1 and "no space left on device" in err[0]
    assert err[0].endswith("the room is unchanged")
    assert room.read_bytes() == b"a\n"
    filler.unlink()
    assert sh(cli_env, "ackdeck room push r b", small_tmpfs).returncode == 0
    assert room.read_bytes() == b"a\nb\n"


def test_a_fragment_followed_by_another_writers_line_is_ended_in_place(tmp_path: Path) -> None:
    # The case truncation cannot fix: after our short write another writer appended a line.
    # Removing the fragment would need space we lack; it becomes a line of its own instead.
    import fcntl

    from ackdeck.core.rooms.file.push_handles import remove_fragment as _remove_fragment

    path = tmp_path / "r"
    path.write_bytes(b"a\n")
    lock = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        fcntl.flock(lock, fcntl.LOCK_SH)
        os.write(fd, b"frag")  # what a full disk let through of "fragment-line\n"
        end = os.lseek(fd, 0, os.SEEK_CUR)
        with open(path, "ab") as other:
            other.write(b"other\n")
        left = _remove_fragment(path, fd, lock, b"frag", end)
        assert "first 3 bytes were left as a line of their own" in left
        assert path.read_bytes() == b"a\nfra\nother\n"
        fcntl.flock(lock, fcntl.LOCK_UN)
        # Nothing after it: truncated away, the room as it was.
        os.write(fd, b"frag2")
        end = os.lseek(fd, 0, os.SEEK_CUR)
        fcntl.flock(lock, fcntl.LOCK_SH)
        assert _remove_fragment(path, fd, lock, b"frag2", end) == "the room is unchanged"
        assert path.read_bytes() == b"a\nfra\nother\n"
    finally:
        os.close(fd)
        os.close(lock)


def test_two_overlapping_reads_of_one_session_keep_the_later_receipt(tmp_path: Path) -> None:
    """Two shells of one session read at once, one into a slow pipe: its older snapshot was
    stored last and replaced the newer receipt, so the ack left the line only the newer read
    delivered, and it came back (a repeat without a crash)."""
    room = tmp_path / "r.txt"
    room.write_bytes(b"".join(b"note %d\n" % i for i in range(100_000)))  # > a pipe buffer
    env = {**os.environ, "ACKDECK_SESSION": "s"}
    # Each read takes the whole room in one page (1.1 MB: more than the default page).
    read = [*ACKDECK, "room", "read", str(room), "--max-bytes", "4M"]
    slow = subprocess.Popen(read, stdout=subprocess.PIPE, env=env, cwd=REPO)
    assert slow.stdout is not None
    first = slow.stdout.read(1)  # its snapshot is taken; it now blocks on the full pipe
    ackdeck_ok(env, "room", "push", str(room), "late")
    fast = ackdeck_ok(env, *read[len(ACKDECK) :])
    assert fast.stdout.endswith("note 99999\nlate\n")
    rest = slow.stdout.read()
    assert slow.wait(timeout=60) == 0
    assert (first + rest).endswith(b"note 99999\n")
    ack = ackdeck_ok(env, "room", "ack", str(room), "--json")
    assert json.loads(ack.stdout)["acked"] == 100_001
    assert room.read_bytes() == b""


def test_an_ack_of_a_hard_linked_room_is_refused_and_splits_nothing(tmp_path: Path) -> None:
    """`ln inbox/r elsewhere/r`: an ack renamed a new file over one name, so the other kept
    the acked lines (read there again) and its later appends were swept into this room too."""
    (tmp_path / "d").mkdir()
    (tmp_path / "e").mkdir()
    room, other = tmp_path / "d" / "r", tmp_path / "e" / "r"
    room.write_bytes(b"l1\nl2\n")
    subprocess.run(["ln", str(room), str(other)], check=True)
    env = {**os.environ, "ACKDECK_SESSION": "s"}
    ackdeck_ok(env, "room", "read", str(room))
    for extra in ([], ["--all"]):
        ack = ackdeck(env, "room", "ack", str(room), *extra)
        assert ack.returncode == 1
        assert ack.stderr.count("\n") == 1 and "other hard link" in ack.stderr, ack.stderr
        assert room.read_bytes() == b"l1\nl2\n" and room.stat().st_ino == other.stat().st_ino
    other.unlink()
    ack = ackdeck_ok(env, "room", "ack", str(room), "--json")
    assert json.loads(ack.stdout)["acked"] == 2 and room.read_bytes() == b""


def test_a_room_path_naming_a_directory_is_one_line_and_never_chases_a_symlink(
    tmp_path: Path, home: Path
) -> None:
    """`inbox/agent.txt/` resolved its last component as a directory: the MCP server's room
    became the symlink's target (past the symlink refusal) and `room read /` was a traceback."""
    (tmp_path / "inbox").mkdir()
    (tmp_path / "victim").mkdir()
    victim = tmp_path / "victim" / "important.conf"
    victim.write_bytes(b"important=1\n")
    (tmp_path / "inbox" / "agent.txt").symlink_to("../victim/important.conf")
    env = {**os.environ, "ACKDECK_SESSION": "s", "ACKDECK_HOME": str(home)}
    commands = [
        ["room", "ack", "inbox/agent.txt/", "--all"],
        ["room", "read", "/"],
        ["room", "push", "victim/important.conf/.", "x"],
        ["room", "status", "//"],
        ["mcp", "--session", "s", "--room", "inbox/agent.txt/"],
    ]
    for argv in commands:
        out = ackdeck({**env, "PYTHONPATH": PATHS}, *argv, cwd=tmp_path, input="")
        assert out.returncode == 1, (argv, out)
        assert out.stderr.count("\n") == 1 and "names a directory" in out.stderr, out.stderr
    assert victim.read_bytes() == b"important=1\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["important.conf"]


def test_a_status_of_rooms_in_linked_directories_names_each_as_the_kernel_resolves_it(
    tmp_path: Path, home: Path
) -> None:
    """A command naming many rooms resolves each directory once for all its rooms: still as
    open(2) does, through a directory symlink and `..` past it, relative or absolute, and a
    symlinked room itself is still refused, not chased."""
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to("real/sub")
    for name in ("a.txt", "b.txt"):
        (tmp_path / "real" / "sub" / name).write_bytes(b"x\n")
    (tmp_path / "real" / "c.txt").write_bytes(b"x\ny\n")
    specs = ["link/a.txt", "link/b.txt", "link/../c.txt", str(tmp_path / "link" / "a.txt")]
    env = {**os.environ, "ACKDECK_HOME": str(home), "PYTHONPATH": PATHS}
    out = ackdeck_ok(env, "room", "status", *specs, "--json", cwd=tmp_path)
    rows = json.loads(out.stdout)["rooms"]
    real = tmp_path.resolve() / "real"
    # The same file named twice is one room; `link/..` is `real`, where the link points.
    assert [(r["path"], r["pending"]) for r in rows] == [
        (str(real / "sub" / "a.txt"), 1),
        (str(real / "sub" / "b.txt"), 1),
        (str(real / "c.txt"), 2),
    ]
    (tmp_path / "real" / "sub" / "d.txt").symlink_to("a.txt")
    refused = ackdeck(env, "room", "status", "link/a.txt", "link/d.txt", cwd=tmp_path)
    assert refused.returncode == 1 and "is a symlink; refusing" in refused.stderr
