"""Notices: the pure edge-trigger decisions, and the noticer over real rooms, wake records and
shown sets. A notice must never read, ack or drain anything."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from ackdeck.core.monitors import shown, wakes
from ackdeck.core.monitors.monitors import MatchedLine
from ackdeck.core.monitors.runs import run_dir
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service import notices as N
from ackdeck.core.service.noticer import Noticer, load_state, state_path


def room_view(end: int, unread: int, epoch: int = 1, path: str = "/r/a.txt") -> N.RoomView:
    return N.RoomView(path, "a.txt", True, epoch, end, unread, "last")


def wake_view(lines, seq: int = 0, pending: bool = False, created: float = 1.0) -> N.WakeView:
    return N.WakeView("build", "match", created, tuple(lines), pending, seq)


# ----- pure decisions ---------------------------------------------------------------------
def test_first_look_notices_unread_lines_once() -> None:
    out, st = N.decide(N.NoticeState(), [room_view(100, 3)], [], "agent")
    assert len(out) == 1 and out[0].meta["count"] == "3" and out[0].meta["kind"] == "room"
    again, st2 = N.decide(st, [room_view(100, 3)], [], "agent")
    assert again == [] and st2 == st


def test_more_lines_after_a_notice_make_one_new_notice() -> None:
    _, st = N.decide(N.NoticeState(), [room_view(100, 3)], [], "agent")
    out, st = N.decide(st, [room_view(150, 5)], [], "agent")
    assert [n.meta["count"] for n in out] == ["5"]
    assert st.rooms["/r/a.txt"].end == 150


def test_lines_the_session_already_read_make_no_notice() -> None:
    out, st = N.decide(N.NoticeState(), [room_view(100, 0)], [], "agent")
    assert out == []
    # ...and stay noticed: unread lines below the watermark do not fire later either.
    out, _ = N.decide(st, [room_view(100, 0)], [], "agent")
    assert out == []


def test_an_ack_does_not_make_old_lines_new() -> None:
    # Logical offsets only grow; an ack (of this or another session) changes neither end nor
    # epoch, so nothing is noticed twice.
    _, st = N.decide(N.NoticeState(), [room_view(100, 3)], [], "agent")
    out, _ = N.decide(st, [room_view(100, 1)], [], "agent")
    assert out == []


def test_a_new_epoch_or_shrink_starts_over_rather_than_going_silent() -> None:
    _, st = N.decide(N.NoticeState(), [room_view(100, 3)], [], "agent")
    out, _ = N.decide(st, [room_view(40, 2, epoch=2)], [], "agent")
    assert len(out) == 1
    out, _ = N.decide(st, [room_view(40, 2, epoch=1)], [], "agent")
    assert len(out) == 1


def test_wake_lines_and_exit_notice_are_edge_triggered() -> None:
    a, b = ("r1", 0, 10), ("r1", 10, 20)
    out, st = N.decide(N.NoticeState(), [], [wake_view([a])], "agent")
    assert len(out) == 1 and out[0].meta["process"] == "build"
    out, st = N.decide(st, [], [wake_view([a])], "agent")
    assert out == []
    out, st = N.decide(st, [], [wake_view([a, b])], "agent")
    assert len(out) == 1 and out[0].meta["count"] == "2"
    out, st = N.decide(st, [], [wake_view([a, b], seq=1, pending=True)], "agent")
    assert len(out) == 1
    out, st = N.decide(st, [], [wake_view([a, b], seq=1, pending=True)], "agent")
    assert out == []
    # Dismissed and recreated: a new record is new again.
    out, _ = N.decide(st, [], [wake_view([a], created=2.0)], "agent")
    assert len(out) == 1


def test_notice_text_is_one_line_and_names_the_tools() -> None:
    view = N.RoomView("/r/a.txt", "a.txt", True, 1, 10, 1, "evil\nline\x1b[2J")
    n = N.room_notice(view, "agent")
    assert "\n" not in n.content and "\x1b" not in n.content
    assert "room_list_new" in n.content and "room_ack" in n.content
    assert all(isinstance(v, str) for v in n.meta.values())
    line = N.nudge_line([n])
    assert "\n" not in line and len(line) <= N.NUDGE_CHARS


# ----- the noticer over real files ----------------------------------------------------------
def tree_digest(*dirs: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for d in dirs:
        for root, _dirs, files in os.walk(d):
            for f in files:
                p = Path(root) / f
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def push_from_another_process(room: Path, text: str) -> None:
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$2" >> "$1"', "sh", str(room), text], check=True)


def test_noticing_reads_acks_and_drains_nothing(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "alerts.txt"
    r = Room(room)
    for i in range(3):
        r.push(f"line {i}")
    r.read("agent")  # a receipt that must stay exactly as it is
    r.push("line 3")
    rdir = run_dir(home, "build", "run1")
    rdir.mkdir(parents=True)
    shown.store_state(rdir, shown.ReadState(session="agent", run_id="run1", shown=[(0, 5)]))
    wakes.merge(
        home,
        "agent",
        "build",
        run_id="run1",
        kind="match",
        lines=[MatchedLine(0, 5, "seen"), MatchedLine(5, 12, "FAILED")],
        filter="E",
        exclude=False,
        matches=2,
        status="running",
    )
    before_room = room.read_bytes()
    before = tree_digest(tmp_path / ".alerts.txt.ackdeck", home / "wakes", home / "procs")
    noticer = Noticer(home, "agent", [room], "channel")
    notices, state = noticer.due()
    noticer.commit(state)
    assert room.read_bytes() == before_room
    assert tree_digest(tmp_path / ".alerts.txt.ackdeck", home / "wakes", home / "procs") == before
    kinds = sorted(n.meta["kind"] for n in notices)
    assert kinds == ["match", "room"]
    room_n = next(n for n in notices if n.meta["kind"] == "room")
    assert room_n.meta["count"] == "1" and "line 3" in room_n.content
    wake_n = next(n for n in notices if n.meta["kind"] == "match")
    # The line the session was shown is not waiting: only the unseen one counts.
    assert wake_n.meta["count"] == "1" and "FAILED" in wake_n.content


def test_a_restarted_noticer_neither_repeats_nor_goes_silent(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    push_from_another_process(room, "first")
    first = Noticer(home, "agent", [room], "channel")
    notices, state = first.due()
    assert len(notices) == 1
    first.commit(state)
    restarted = Noticer(home, "agent", [room], "channel")
    assert restarted.due()[0] == []
    push_from_another_process(room, "second")
    later = Noticer(home, "agent", [room], "channel")
    notices, _ = later.due()
    assert [n.meta["count"] for n in notices] == ["2"]


def test_an_undelivered_notice_is_decided_again(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    push_from_another_process(room, "first")
    noticer = Noticer(home, "agent", [room], "channel")
    assert len(noticer.due()[0]) == 1  # not committed: the send failed
    assert len(noticer.due()[0]) == 1


def test_each_door_keeps_its_own_state(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    push_from_another_process(room, "first")
    channel = Noticer(home, "agent", [room], "channel")
    channel.commit(channel.due()[1])
    nudge = Noticer(home, "agent", [room], "nudge")
    assert len(nudge.due()[0]) == 1


def test_a_malformed_state_is_kept_aside_and_notices_again(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    push_from_another_process(room, "first")
    path = state_path(home, "agent", "channel")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    notices, _ = Noticer(home, "agent", [room], "channel").due()
    assert len(notices) == 1
    assert [p.name for p in path.parent.iterdir() if ".corrupt-" in p.name]
    assert load_state(path) == N.NoticeState()


def test_a_missing_room_directory_does_not_silence_the_others(
    home: Path, tmp_path: Path, capsys
) -> None:
    room = tmp_path / "inbox.txt"
    push_from_another_process(room, "first")
    noticer = Noticer(home, "agent", [tmp_path / "nope" / "x.txt", room], "channel")
    notices, _ = noticer.due()
    assert [n.meta["room"] for n in notices] == ["inbox.txt"]


# ----- a state that cannot be kept, and two notifiers of one door ------------------------------
def blocked_state(home: Path) -> None:
    """HOME/notices is a file: the state can neither be read, locked nor written there."""
    (home / "notices").write_text("not a directory\n")


def test_an_unusable_state_never_silences_the_door(home: Path, tmp_path: Path, capsys) -> None:
    room = tmp_path / "inbox.txt"
    push_from_another_process(room, "first")
    blocked_state(home)
    noticer = Noticer(home, "agent", [room], "channel")
    notices, state = noticer.due()
    assert [n.meta["count"] for n in notices] == ["1"]
    noticer.commit(state)  # cannot be written: said on stderr, remembered by this process
    assert "cannot keep notice state" in capsys.readouterr().err
    assert noticer.due()[0] == []  # not repeated by the process that told it
    push_from_another_process(room, "second")
    assert [n.meta["count"] for n in noticer.due()[0]] == ["2"]
    assert (home / "notices").read_text() == "not a directory\n"


async def test_two_notifiers_of_one_session_and_door_notice_a_line_once(
    home: Path, tmp_path: Path
) -> None:
    # Two Claude Code windows in one project start two `ackdeck mcp --session agent`: one
    # notice per new thing for the session, not one per server (nor a racy one or two).
    import anyio

    room = tmp_path / "inbox.txt"
    room.touch()
    a = Noticer(home, "agent", [room], "channel")
    b = Noticer(home, "agent", [room], "channel")
    push_from_another_process(room, "first")
    sent: list[str] = []
    a_sending = anyio.Event()
    release_a = anyio.Event()
    b_done = anyio.Event()

    async def send_a(ns: list[N.Notice]) -> bool:
        sent.extend("a" for _ in ns)
        a_sending.set()
        await release_a.wait()
        return True

    async def send_b(ns: list[N.Notice]) -> bool:
        sent.extend("b" for _ in ns)
        return True

    async def check_b() -> None:
        await b.check(send_b)
        b_done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.check, send_a)
            await a_sending.wait()  # a decided and is delivering, not yet recorded
            tg.start_soon(check_b)
            with anyio.move_on_after(1.0):  # b may not deliver what a is delivering
                await b_done.wait()
            release_a.set()
    assert sent == ["a"]


# ----- a room wiped with its sidecar and recreated ----------------------------------------------
def _wipe_and_push(room: Path, text: str) -> None:
    """What `rm -rf` of a per-run room directory (or a tmpfs cleared at reboot) does: the room
    and its sidecar are gone, and the next producer starts the room from scratch."""
    import shutil

    shutil.rmtree(room.parent)
    room.parent.mkdir()
    Room(room).push(text)


def test_a_room_wiped_and_refilled_to_the_same_length_is_noticed(
    home: Path, tmp_path: Path
) -> None:
    # A fresh sidecar restarts at epoch 0, offset 0: the same (epoch, end) as the mark when the
    # new line has the old one's length. It used to be taken for the line already noticed.
    room = tmp_path / "run" / "status.txt"
    room.parent.mkdir()
    Room(room).push("build 41 done")
    n = Noticer(home, "agent", [room], "channel")
    out, st = n.due()
    assert len(out) == 1
    n.commit(st)
    _wipe_and_push(room, "build 42 done")
    out, st = n.due()
    assert [x.meta["count"] for x in out] == ["1"] and "build 42" in out[0].content
    n.commit(st)
    assert n.due()[0] == []  # and once only


def test_a_wiped_room_the_agent_had_acked_is_noticed_when_refilled(
    home: Path, tmp_path: Path
) -> None:
    # The agent read and acked the first run's line; the next run wipes the directory and writes
    # a line of the same length: a new thing, on the same (epoch, end) as the mark.
    room = tmp_path / "run" / "status.txt"
    room.parent.mkdir()
    Room(room).push("build 41 done")
    n = Noticer(home, "agent", [room], "channel")
    n.commit(n.due()[1])
    r = Room(room)
    r.read("agent")
    r.ack("agent")
    assert n.due()[0] == []  # reading and acking is not news
    _wipe_and_push(room, "build 42 done")
    out, st = n.due()
    assert len(out) == 1 and "build 42" in out[0].content
    n.commit(st)
    assert n.due()[0] == []


def test_an_ack_that_replaces_the_room_file_is_not_a_new_room(home: Path, tmp_path: Path) -> None:
    # An ack renames a new file over the room: another inode, same room. A line that was
    # noticed and is still unread must not be noticed again because of it.
    room = tmp_path / "inbox.txt"
    r = Room(room)
    r.push("first")
    r.read("agent")
    r.push("second")
    n = Noticer(home, "agent", [room], "channel")
    out, st = n.due()
    assert [x.meta["count"] for x in out] == ["1"]
    n.commit(st)
    ino = room.stat().st_ino
    r.ack("agent")
    assert room.stat().st_ino != ino and Room(room).status().pending == 1
    assert n.due()[0] == []


# ----- the watch: rooms whose directory appears (or is recreated) while it runs -------------------
async def _notices_while(
    home: Path, rooms: list[Path], act, wanted: int, env: dict[str, str]
) -> list[N.Notice]:
    """Run a channel noticer over `rooms`, call `act()` once its watch chose the directories,
    and return the notices once `wanted` arrived (60 s: only a real hang reaches it)."""
    import anyio

    got: list[N.Notice] = []
    stop = anyio.Event()

    async def send(ns: list[N.Notice]) -> bool:
        got.extend(ns)
        return True

    noticer = Noticer(home, "agent", rooms, "channel", env=env)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: noticer.run(send, window=0.05, stop_event=stop))
            # The watch makes the session's wakes directory when it picks what to watch.
            while not (home / "wakes" / "agent").is_dir():
                await anyio.sleep(0.02)
            await anyio.to_thread.run_sync(act)
            while len(got) < wanted:
                await anyio.sleep(0.05)
            stop.set()
    return got


async def test_a_busy_directory_never_starves_the_rescan(home: Path, tmp_path: Path) -> None:
    # The rescan is what finds a room whose directory appears after the start. It used to be
    # the watcher's own timeout, which never fires while any watched directory changes: a build
    # log beside one room silenced every room created later, for good.
    import threading

    busy_dir, later_dir = tmp_path / "project", tmp_path / "later"
    busy_dir.mkdir()
    (busy_dir / "inbox.txt").touch()
    done = threading.Event()

    def build_log() -> None:
        with open(busy_dir / "build.log", "a") as f:
            while not done.wait(0.02):
                f.write("compiling\n")
                f.flush()

    writer = threading.Thread(target=build_log)
    writer.start()
    try:

        def create_later_room() -> None:
            later_dir.mkdir()
            Room(later_dir / "alerts.txt").push("the later room's first line")

        got = await _notices_while(
            home,
            [busy_dir / "inbox.txt", later_dir / "alerts.txt"],
            create_later_room,
            1,
            {"ACKDECK_NOTICE_RESCAN_S": "0.5"},
        )
    finally:
        done.set()
        writer.join()
    assert [n.meta["room"] for n in got] == ["alerts.txt"]


async def test_a_directory_removed_as_the_watch_starts_never_ends_the_notices(
    home: Path, tmp_path: Path
) -> None:
    # A per-run room directory removed and made again over and over: the watch starts over on
    # it, and sometimes the directory is gone between choosing it and watching it. watchfiles
    # then raises FileNotFoundError, which used to end the noticer for good (the channel says
    # "notices stopped" once, and every later line is silent).
    import shutil
    import threading

    churn = [tmp_path / f"ci{i}" for i in range(20)]  # a CI runner's job directories
    for d in churn:
        d.mkdir()
    steady = tmp_path / "steady"
    steady.mkdir()
    stop_churn = threading.Event()

    def wipe_again_and_again() -> None:
        while not stop_churn.is_set():
            for d in churn:
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir()

    def churn_then_push() -> None:
        t = threading.Thread(target=wipe_again_and_again)
        t.start()
        try:
            # Long enough for many rescans (each sees other directory inodes and restarts).
            stop_churn.wait(5.0)
        finally:
            stop_churn.set()
            t.join()
        Room(steady / "inbox.txt").push("still heard")

    got = await _notices_while(
        home,
        [*(d / "status.txt" for d in churn), steady / "inbox.txt"],
        churn_then_push,
        1,
        {"ACKDECK_NOTICE_RESCAN_S": "0.1"},
    )
    assert [n.meta["room"] for n in got] == ["inbox.txt"]
