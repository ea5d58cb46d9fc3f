"""Handing a stalled agent's lines to another session (issue 32 item 4): `ackdeck handover` and
the dashboard's `h`. Each line reaches the other session's room once and leaves the stalled
one's only after; lines arriving meanwhile stay; a kill -9 at any step leaves each line in one
room or both, never in neither, and the next run finishes it and says what it found.

Real rooms, real `ackdeck` processes held at the hand-over's named fault points
(core/service/handover.py) and killed there."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service import presence
from tests.helpers.cli import ackdeck, ackdeck_json, ackdeck_ok
from tests.helpers.pauses import kill9, killed_at, paused, start_paused, wait_for_step
from tests.helpers.wait import eventually

STEPS = [
    "handover-after-journal",
    "handover-after-push",
    "handover-after-ack",
    "handover-before-done",
]
# What a re-run finds in the journal after a kill at each step (STEPS in service/handover.py).
FOUND = {
    "handover-after-journal": "chosen",
    "handover-after-push": "chosen",
    "handover-after-ack": "pushed",
    "handover-before-done": "acked",
}
LINES = [b"one", b"two \xff bytes", b"three\ttab"]


def _lines(path: Path) -> list[bytes]:
    data = path.read_bytes() if path.exists() else b""
    assert data == b"" or data.endswith(b"\n"), f"torn room: {data!r}"
    return data[:-1].split(b"\n") if data else []


def _agents(home: Path, tmp_path: Path, **rooms: list[str]) -> dict[str, list[Path]]:
    """Sessions as ackdeck's hooks record them (their SessionStart hook names their rooms)."""
    out = {}
    for session, names in rooms.items():
        paths = [tmp_path / n for n in names]
        presence.hook_event(home, session, "start", {}, [str(p) for p in paths])
        out[session] = paths
    return out


@pytest.fixture
def stalled(home: Path, tmp_path: Path) -> tuple[Path, Path]:
    """`s1` (room a.txt) has read two of its three lines and acked none; `s2` has b.txt,
    which already holds a line of its own."""
    rooms = _agents(home, tmp_path, s1=["a.txt"], s2=["b.txt"])
    a, b = rooms["s1"][0], rooms["s2"][0]
    room = Room(a)
    for line in LINES[:2]:
        room.push(line)
    assert room.read("s1").lines == LINES[:2]
    room.push(LINES[2])
    Room(b).push(b"s2's own")
    return a, b


def test_handover_moves_every_unacked_line_once_and_says_so(
    cli_env: dict[str, str], stalled: tuple[Path, Path]
) -> None:
    a, b = stalled
    out = ackdeck_ok(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert out.stdout.strip() == (
        f"handed over 3 lines from s1 ({a}) to s2 ({b}), 2 of them read but not acked by s1"
    )
    assert _lines(a) == []
    assert _lines(b) == [b"s2's own", *LINES]
    assert not locations.handover_journal(Path(cli_env["ACKDECK_HOME"]), "s1").exists()
    # s2 reads them as its own; s1's old read acks nothing now (its lines are gone).
    assert Room(b).read("s2").lines == [b"s2's own", *LINES]
    # The hand-over's own read of a.txt is not left behind as a reader: a line arriving
    # later is unread by s1 only (the Rooms table and overdue alerts count per reader).
    Room(a).push(b"later")
    assert set(Room(a).status().sessions) == {"s1"}


def test_handover_json_and_a_second_run_moves_nothing(
    cli_env: dict[str, str], stalled: tuple[Path, Path]
) -> None:
    a, b = stalled
    got = ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert got == {
        "source": "s1",
        "target": "s2",
        "from_room": str(a),
        "to_room": str(b),
        "moved": 3,
        "in_flight": 2,
        "both": 0,
        "resumed": None,
        "notes": [],
        "summary": got["summary"],
    }
    again = ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert (again["moved"], again["both"], again["resumed"]) == (0, 0, None)
    assert _lines(b) == [b"s2's own", *LINES]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--from", "nobody", "--to", "s2"], "unknown session nobody"),
        (["--from", "s1", "--to", "s1"], "cannot hand s1's lines over to itself"),
        (["--from", "s3", "--to", "s2"], "session s3 has 2 rooms: "),
        (["--from", "s3", "--from-room", "x.txt", "--to", "s2"], "--from-room x.txt is not"),
    ],
)
def test_bad_handover_is_one_line_and_exit_1_and_moves_nothing(
    cli_env: dict[str, str],
    stalled: tuple[Path, Path],
    home: Path,
    tmp_path: Path,
    args: list[str],
    says: str,
) -> None:
    a, b = stalled
    _agents(home, tmp_path, s3=["c.txt", "d.txt"])
    out = ackdeck(cli_env, "handover", *args)
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0], out.stderr
    if "rooms: " in says:
        assert str(tmp_path / "c.txt") in lines[0] and "--from-room" in lines[0]
    assert _lines(a) == LINES and _lines(b) == [b"s2's own"]
    err = ackdeck(cli_env, "handover", *args, "--json")
    assert json.loads(err.stdout)["error"] == "InvalidInput"


def test_a_session_named_with_this_host_is_this_hosts_and_another_hosts_is_one_line(
    cli_env: dict[str, str], stalled: tuple[Path, Path]
) -> None:
    # A fleet's listings name sessions NAME@HOST; `run --session` takes this host's so.
    a, b = stalled
    env = {**cli_env, "ACKDECK_HOST_ID": "alpha"}
    far = ackdeck(env, "handover", "--from", "s1", "--to", "s2@beta")
    assert far.returncode == 1
    assert far.stderr == (
        "ackdeck: error: session s2@beta is on host beta, not this host (alpha): run the "
        "hand-over there\n"
    )
    assert _lines(a) == LINES
    got = ackdeck_json(env, "handover", "--from", "s1@alpha", "--to", "s2@alpha")
    assert (got["source"], got["target"], got["moved"]) == ("s1", "s2", 3)
    assert _lines(b) == [b"s2's own", *LINES]


def test_a_shell_only_agent_is_handed_over_to_a_new_session_through_its_room(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    # No hook, no MCP server: the agent only runs `ackdeck room read` in a shell, so its room
    # is known from its reads. The target has never run: the owner names its (empty) room.
    a, fresh = tmp_path / "a.txt", tmp_path / "fresh.txt"
    plain = [b"one", b"two", b"three"]  # printed by `room read`: text
    for line in plain:
        Room(a).push(line)
    assert ackdeck_ok(cli_env, "room", "read", str(a), "--session", "shell").stdout
    Room(a).push(b"after the read")
    agents = {r["session"]: r for r in ackdeck_json(cli_env, "agents")["agents"]}
    assert agents["shell"]["rooms"] == [str(a)] and agents["shell"]["unread"] == 1
    unknown = ackdeck(cli_env, "handover", "--from", "shell", "--to", "newbie")
    assert unknown.returncode == 1 and "--to-room" in unknown.stderr.strip()
    got = ackdeck_json(
        cli_env, "handover", "--from", "shell", "--to", "newbie", "--to-room", str(fresh)
    )
    assert (got["moved"], got["in_flight"], got["to_room"]) == (4, 3, str(fresh))
    assert _lines(fresh) == [*plain, b"after the read"] and _lines(a) == []


def test_a_room_named_among_several_is_the_one_used(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    rooms = _agents(home, tmp_path, s3=["c.txt", "d.txt"], s4=["e.txt"])
    Room(rooms["s3"][1]).push(b"in d")
    Room(rooms["s3"][0]).push(b"in c")
    got = ackdeck_json(cli_env, "handover", "--from", "s3", "--from-room", "d.txt", "--to", "s4")
    assert got["moved"] == 1
    assert _lines(rooms["s4"][0]) == [b"in d"]
    assert _lines(rooms["s3"][0]) == [b"in c"]


def test_lines_arriving_during_the_handover_stay_in_the_stalled_room(
    cli_env: dict[str, str], stalled: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = stalled
    marker = tmp_path / "paused-at"
    with paused(
        cli_env, marker, ["handover-after-push"], "handover", "--from", "s1", "--to", "s2"
    ) as proc:
        wait_for_step(proc, marker, "handover-after-push")
        Room(a).push(b"arrived meanwhile")  # after the hand-over's read, before its ack
        with open(a, "ab") as f:
            f.write(b"unlocked producer\n")
        marker.unlink()  # go on
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    assert _lines(a) == [b"arrived meanwhile", b"unlocked producer"]
    assert _lines(b) == [b"s2's own", *LINES]
    assert "handover" not in Room(a).status().sessions


def test_a_handover_of_several_pages_moves_only_what_was_there_at_its_first_look(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    rooms = _agents(home, tmp_path, s1=["a.txt"], s2=["b.txt"])
    a, b = rooms["s1"][0], rooms["s2"][0]
    # More than one read's page (1 MiB): the hand-over takes it in two journalled steps.
    many = [b"%04d " % i + b"x" * 995 for i in range(1100)]
    a.write_bytes(b"".join(line + b"\n" for line in many))
    marker = tmp_path / "paused-at"
    with paused(
        cli_env, marker, ["handover-after-push"], "handover", "--from", "s1", "--to", "s2", "--json"
    ) as proc:
        wait_for_step(proc, marker, "handover-after-push")
        Room(a).push(b"arrived during the first page")
        marker.unlink()
        # The second page stops at the same step: let it go too.
        wait_for_step(proc, marker, "handover-after-push")
        marker.unlink()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    got = json.loads(out)
    assert (got["moved"], got["both"]) == (1100, 0)
    assert _lines(b) == many
    assert _lines(a) == [b"arrived during the first page"]
    # The second page's look read the line past the cutoff too and left it: it is not shown
    # as in flight (or unread) by a hand-over reader that will never ack it.
    st = Room(a).status()
    assert "handover" not in st.sessions and st.pending == 1


@pytest.mark.parametrize("step", STEPS)
def test_kill9_at_each_step_leaves_every_line_somewhere_and_a_rerun_finishes_once(
    cli_env: dict[str, str], stalled: tuple[Path, Path], tmp_path: Path, step: str
) -> None:
    a, b = stalled
    marker = tmp_path / "paused-at"
    killed_at(cli_env, marker, step, "handover", "--from", "s1", "--to", "s2")
    # One room or both, never neither, and never twice in the target.
    in_a, in_b = Counter(_lines(a)), Counter(_lines(b))
    for line in LINES:
        assert in_a[line] + in_b[line] >= 1, (step, line)
        assert in_b[line] <= 1
    journal = locations.handover_journal(Path(cli_env["ACKDECK_HOME"]), "s1")
    assert journal.exists()

    got = ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert got["resumed"] == FOUND[step]
    assert "found an unfinished hand-over of 3 lines from s1 to s2" in got["notes"][0]
    assert (got["moved"], got["in_flight"], got["both"]) == (3, 2, 0)
    if step == "handover-after-push":
        # Its reply was lost: the push is found in s2's room and not made again.
        assert any("had landed: not pushed again" in n for n in got["notes"])
    assert _lines(a) == []
    assert _lines(b) == [b"s2's own", *LINES]
    assert not journal.exists()
    assert set(Room(a).status().sessions) == {"s1"}  # the hand-over's reader is not left


def test_a_lost_push_reply_is_found_after_others_pushed_and_not_pushed_again(
    cli_env: dict[str, str], stalled: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = stalled
    marker = tmp_path / "paused-at"
    # The lines were appended; the journal never heard of it.
    killed_at(cli_env, marker, "handover-after-push", "handover", "--from", "s1", "--to", "s2")
    # Others push to s2 after the lost reply, and s2 reads (not acks) its room.
    Room(b).push(b"later producer")
    with open(b, "ab") as f:
        f.write(b"unlocked later\n")
    Room(b).read("s2")
    out = ackdeck_ok(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert "note: found an unfinished hand-over of 3 lines from s1 to s2" in out.stdout
    assert "had landed: not pushed again" in out.stdout
    assert _lines(b) == [b"s2's own", *LINES, b"later producer", b"unlocked later"]
    assert _lines(a) == []


def test_a_push_that_cannot_be_found_any_more_is_pushed_again_and_said(
    cli_env: dict[str, str], stalled: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = stalled
    marker = tmp_path / "paused-at"
    killed_at(cli_env, marker, "handover-after-push", "handover", "--from", "s1", "--to", "s2")
    # s2 took everything (the handed-over lines too) before the re-run: no proof is left of
    # whether the push landed, so the lines go again rather than risk them being nowhere.
    target = Room(b)
    assert target.read("s2").lines == [b"s2's own", *LINES]
    assert target.ack("s2").mode == "prefix"
    got = ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert any("could not tell whether its push" in n and "twice" in n for n in got["notes"])
    assert (got["moved"], got["both"]) == (3, 0)
    assert _lines(b) == LINES
    assert _lines(a) == []


def test_the_trace_shows_the_handover_in_both_rooms(
    cli_env: dict[str, str], stalled: tuple[Path, Path]
) -> None:
    a, b = stalled
    ackdeck_ok(cli_env, "handover", "--from", "s1", "--to", "s2")
    left = ackdeck_json(cli_env, "room", "trace", str(a), "0")
    gone = left["lines"][0]
    assert gone["present"] is False and gone["acked_by"] == "handover"
    assert gone["handover"] == "handed over from s1 to s2"
    assert gone["summary"].endswith("; handed over from s1 to s2")
    arrived = ackdeck_json(cli_env, "room", "trace", str(b), "--match", "three")
    line = arrived["lines"][0]
    assert line["present"] is True and line["handover"] == "handed over from s1 to s2"
    # A line that was not handed over says nothing of it.
    own = ackdeck_json(cli_env, "room", "trace", str(b), "0")["lines"][0]
    assert "handover" not in own
    text = ackdeck_ok(cli_env, "room", "trace", str(b), "--match", "one").stdout
    assert "handover   handed over from s1 to s2" in text


async def test_h_on_an_agent_hands_its_lines_to_the_session_typed(
    home: Path, stalled: tuple[Path, Path]
) -> None:
    from ackdeck.tui.app import make_app
    from ackdeck.tui.testing import notifications, quiet_config, settle
    from ackdeck.tui.widgets.tables import AgentsTable

    a, b = stalled
    app = make_app(quiet_config([a, b], home=home))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.pause(0.1)
        await settle(pilot)
        agents = app.main.query_one(AgentsTable)
        agents.focus()
        agents.move_cursor(row=agents._keys.index("s1"))
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        await pilot.press(*"s2", "enter")
        await settle(pilot)
        said = "\n".join(notifications(app))
        assert "handed over 3 lines from s1" in said and "to s2" in said, said
    assert _lines(a) == []
    assert _lines(b) == [b"s2's own", *LINES]
    eventually(lambda: not locations.handover_journal(home, "s1").exists())


async def test_h_and_the_session_typed_at_once_hand_the_lines_over(
    home: Path, stalled: tuple[Path, Path]
) -> None:
    # `h`, the name and enter in one burst: the name reached nothing and the enter closed an
    # empty prompt, so nothing moved and nothing was said.
    from ackdeck.tui.app import make_app
    from ackdeck.tui.testing import notifications, quiet_config, settle, type_at_once
    from ackdeck.tui.widgets.tables import AgentsTable
    from tests.helpers.wait import eventually_async

    a, b = stalled
    app = make_app(quiet_config([a, b], home=home))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await eventually_async(
            lambda: "s1" in app.main.query_one(AgentsTable)._keys, what="s1 listed", pilot=pilot
        )
        agents = app.main.query_one(AgentsTable)
        agents.focus()
        agents.move_cursor(row=agents._keys.index("s1"))
        await settle(pilot)
        type_at_once(app, "h", *"s2", "enter")
        await eventually_async(
            lambda: any("handed over 3 lines from s1" in n for n in notifications(app)),
            what="the hand-over's notice",
            pilot=pilot,
        )
    assert _lines(a) == []
    assert _lines(b) == [b"s2's own", *LINES]


def test_the_pure_decisions() -> None:
    from ackdeck.core.service.handover import choose_room, push_decision, within

    # A search of the target room proves a push landed, or that it did not, or nothing.
    assert push_decision(120, True) == "landed"
    assert push_decision(120, False) == "landed"
    assert push_decision(None, True) == "push"
    assert push_decision(None, False) == "unsure"
    # Only what the room held at the first look (it ended at 100) moves.
    assert within(0, 80, 100) == 80
    assert within(0, 100, 100) == 100
    assert within(40, 160, 100) == 60
    assert within(100, 160, 100) is None
    # A session's room: its only one, or the one named (path or a basename of one of them).
    assert choose_room("s", ["/r/a.txt"], None, "--from-room") == "/r/a.txt"
    assert choose_room("s", ["/r/a.txt", "/r/b.txt"], "b.txt", "--from-room") == "/r/b.txt"
    assert choose_room("s", ["/r/a.txt", "/q/a.txt"], "/q/a.txt", "--from-room") == "/q/a.txt"
    for rooms, wanted, says in [
        (["/r/a.txt", "/r/b.txt"], None, "session s has 2 rooms: /r/a.txt, /r/b.txt; choose"),
        (["/r/a.txt", "/q/a.txt"], "a.txt", "--from-room a.txt is not one room of session s"),
        ([], None, "session s has no room ackdeck knows of"),
        (["/r/a.txt"], "/r/c.txt", "(its rooms: /r/a.txt)"),
    ]:
        with pytest.raises(InvalidInput, match=re.escape(says)):
            choose_room("s", rooms, wanted, "--from-room")


def test_the_stalled_session_acking_its_own_read_meanwhile_loses_and_doubles_nothing(
    cli_env: dict[str, str], stalled: tuple[Path, Path], tmp_path: Path
) -> None:
    # s1 wakes up and acks the two lines it had read, between the hand-over's push and its
    # ack: the head of the hand-over's lines is gone, the rest must still leave s1's room.
    a, b = stalled
    marker = tmp_path / "paused-at"
    with paused(
        cli_env, marker, ["handover-after-push"], "handover", "--from", "s1", "--to", "s2"
    ) as proc:
        wait_for_step(proc, marker, "handover-after-push")
        assert Room(a).ack("s1").acked == 2
        marker.unlink()
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    assert _lines(a) == []
    assert _lines(b) == [b"s2's own", *LINES]
    again = ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert again["moved"] == 0 and _lines(b) == [b"s2's own", *LINES]


def test_an_ack_by_the_stalled_session_during_a_page_does_not_push_a_page_again(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    rooms = _agents(home, tmp_path, s1=["a.txt"], s2=["b.txt"])
    a, b = rooms["s1"][0], rooms["s2"][0]
    many = [b"%04d " % i + b"x" * 995 for i in range(1100)]  # two pages of 1 MiB
    a.write_bytes(b"".join(line + b"\n" for line in many))
    read = len(Room(a).read("s1", max_bytes=100_000).lines)
    assert 0 < read < 1000
    marker = tmp_path / "paused-at"
    with paused(
        cli_env, marker, ["handover-after-push"], "handover", "--from", "s1", "--to", "s2", "--json"
    ) as proc:
        wait_for_step(proc, marker, "handover-after-push")
        assert Room(a).ack("s1").acked == read
        marker.unlink()
        wait_for_step(proc, marker, "handover-after-push")
        marker.unlink()
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    assert _lines(a) == []
    assert _lines(b) == many  # each once, in order
    assert json.loads(out)["moved"] == 1100


def test_blank_lines_and_nul_bytes_move_as_they_are(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    # A producer's `echo >> room` (a blank line) or a NUL: a hand-over moves the room's lines
    # as they are (a push by a person refuses them), and never wedges on them.
    rooms = _agents(home, tmp_path, s1=["a.txt"], s2=["b.txt"])
    a, b = rooms["s1"][0], rooms["s2"][0]
    a.write_bytes(b"a\n\nnul\0here\nb\n")
    got = ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert got["moved"] == 4 and got["notes"] == []
    assert b.read_bytes() == b"a\n\nnul\0here\nb\n" and a.read_bytes() == b""
    assert not locations.handover_journal(home, "s1").exists()


@pytest.mark.parametrize(
    ("make", "to_room", "says"),
    [
        ("dirlink", "linked/a.txt", "share the room"),
        ("hardlink", "b.txt", "hard links"),
        ("none", "nowhere.txt", "does not exist and is not a room of s2"),
        ("none", ".", "is a directory"),
    ],
)
def test_a_target_room_that_would_lose_or_wedge_lines_is_refused_before_anything_moves(
    cli_env: dict[str, str],
    stalled: tuple[Path, Path],
    tmp_path: Path,
    make: str,
    to_room: str,
    says: str,
) -> None:
    a, b = stalled
    if make == "dirlink":
        (tmp_path / "linked").symlink_to(tmp_path)  # a.txt under a second name
    elif make == "hardlink":
        (tmp_path / "a-again.txt").hardlink_to(a)
    out = ackdeck(
        cli_env, "handover", "--from", "s1", "--to", "s2", "--to-room", str(tmp_path / to_room)
    )
    assert out.returncode == 1 and says in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert _lines(a) == LINES and _lines(b) == [b"s2's own"]
    assert not locations.handover_journal(Path(cli_env["ACKDECK_HOME"]), "s1").exists()


def test_hand_over_called_in_process_moves_pages_and_finishes_a_found_journal(
    home: Path, tmp_path: Path
) -> None:
    # The service the CLI and the dashboard call, in this process: two pages, then a journal
    # left at "pushed" (as a kill after the push leaves it) finished by the next call.
    import base64

    from ackdeck.core.rooms.file.ledger import sha256
    from ackdeck.core.service.handover import Journal, _store, hand_over, load_journal

    rooms = _agents(home, tmp_path, s1=["a.txt"], s2=["b.txt"])
    a, b = rooms["s1"][0], rooms["s2"][0]
    many = [b"%04d " % i + b"x" * 995 for i in range(1100)]
    a.write_bytes(b"".join(line + b"\n" for line in many))
    got = hand_over(home, "s1", "s2")
    assert (got.moved, got.both, got.resumed) == (1100, 0, None)
    assert _lines(a) == [] and _lines(b) == many

    Room(a).push(b"late")
    room = Room(a)
    read = room.read("handover", reader="r-test")
    at = Room(b).push_lines(read.lines)  # pushed, then "killed" before the ack
    data = b"".join(line + b"\n" for line in read.lines)
    assert isinstance(read.start, int) and isinstance(read.end, int)
    _store(
        home,
        Journal(
            id="r-test", source="s1", target="s2", from_room=str(a), to_room=str(b),
            state="pushed", at=0.0, epoch=read.epoch, start=read.start, end=read.end,
            lines=1, in_flight=0, sha256=sha256(data),
            block=base64.b64encode(data).decode("ascii"), to_epoch=0, to_since=0, to_start=at,
        ),
    )  # fmt: skip
    again = hand_over(home, "s1", "s2")
    assert again.resumed is not None and "pushed" in again.resumed
    assert _lines(a) == [] and _lines(b) == [*many, b"late"]
    assert load_journal(home, "s1") is None


# Steps of the source room's ack (core/rooms/file/ack.py) at which the hand-over is killed: with
# the room's inode linked into its sidecar (before the rename) and after the rename.
ACK_STEPS = ["after-link", "after-pending", "before-rename", "after-rename", "after-commit"]


@pytest.mark.parametrize("step", ACK_STEPS)
def test_a_handover_killed_inside_its_source_ack_is_finished_by_a_rerun_once(
    cli_env: dict[str, str], stalled: tuple[Path, Path], tmp_path: Path, step: str
) -> None:
    # Issue 42, class 1: the re-run was refused ("a.txt has 2 hard links") because of the
    # link the killed ack itself keeps in the sidecar, and the lines stayed in both rooms.
    a, b = stalled
    marker = tmp_path / "paused-at"
    killed_at(cli_env, marker, step, "handover", "--from", "s1", "--to", "s2")
    got = ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert got["resumed"] == "pushed"
    assert (got["moved"], got["both"]) == (3, 0), got["notes"]
    assert _lines(a) == []
    assert _lines(b) == [b"s2's own", *LINES]
    assert Room(a).status().acked_total == 3


def _holds_open(pid: int, path: Path) -> bool:
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if Path(fd.readlink()) == path:
                return True
        except OSError:
            continue
    return False


def test_two_sessions_sharing_a_room_handed_over_at_once_give_each_line_to_one_target(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    # Issue 42, class 1: s1 and s3 share a.txt; their hand-overs (to s2 and to s4) ran at the
    # same moment under per-session locks, both read every line, and both targets got them.
    rooms = _agents(home, tmp_path, s1=["a.txt"], s3=["a.txt"], s2=["b.txt"], s4=["c.txt"])
    a, b, c = rooms["s1"][0], rooms["s2"][0], rooms["s4"][0]
    for line in LINES:
        Room(a).push(line)
    first_marker, second_marker = tmp_path / "first", tmp_path / "second"
    step = "handover-after-journal"  # the lines are read and chosen, not pushed yet
    first = start_paused(cli_env, first_marker, [step], "handover", "--from", "s1", "--to", "s2")
    second = None
    try:
        wait_for_step(first, first_marker, step)
        second = start_paused(
            cli_env, second_marker, [step], "handover", "--from", "s3", "--to", "s4"
        )
        room_lock = locations.handover_room_lock(home, str(a))
        # The second either waits for the room (it holds the room's lock file open, polling)
        # or, under a per-session lock only, goes on to read the same lines.
        eventually(
            lambda: second_marker.exists() or _holds_open(second.pid, room_lock),
            what="the second hand-over to wait for the room or choose its lines",
        )
        first_marker.unlink()
        assert first.wait(timeout=60) == 0, first.stderr.read() if first.stderr else ""

        def second_done() -> bool:
            if second_marker.exists():
                second_marker.unlink()
            return second.poll() is not None

        eventually(second_done, what="the second hand-over to finish")
        assert second.returncode == 0, second.stderr.read() if second.stderr else ""
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                kill9(proc)
    in_b, in_c = Counter(_lines(b)), Counter(_lines(c))
    for line in LINES:
        assert in_b[line] + in_c[line] == 1, (line, in_b, in_c)
    assert _lines(a) == []


def test_a_killed_handover_of_a_shared_room_is_finished_before_another_session_takes_it(
    cli_env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    # s1's hand-over was killed after its push: its lines are in s2's room and still in the
    # shared room. s3's hand-over out of that room would give them to s4 as well: refused
    # with one line naming the re-run that finishes s1's; after that re-run it moves nothing.
    rooms = _agents(home, tmp_path, s1=["a.txt"], s3=["a.txt"], s2=["b.txt"], s4=["c.txt"])
    a, b, c = rooms["s1"][0], rooms["s2"][0], rooms["s4"][0]
    for line in LINES:
        Room(a).push(line)
    marker = tmp_path / "paused-at"
    step = "handover-after-push"
    killed_at(cli_env, marker, step, "handover", "--from", "s1", "--to", "s2")
    out = ackdeck(cli_env, "handover", "--from", "s3", "--to", "s4")
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and "ackdeck handover --from s1 --to s2" in lines[0], out.stderr
    assert _lines(c) == []
    assert ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")["moved"] == 3
    assert ackdeck_json(cli_env, "handover", "--from", "s3", "--to", "s4")["moved"] == 0
    assert _lines(b) == LINES and _lines(c) == [] and _lines(a) == []


def test_a_held_open_producers_line_during_a_handovers_ack_killed_after_its_rename_moves_once(
    cli_env: dict[str, str], stalled: tuple[Path, Path], tmp_path: Path
) -> None:
    # Issue 42, class 1: a producer keeps its O_APPEND descriptor on s1's room and writes a
    # line while the hand-over's ack copies the room; the ack's catch-up takes it, and the
    # hand-over is killed right after the ack's rename. Its recovery carried the line out of
    # the replaced inode again: twice in the room, so twice to the target on the re-run.
    import os

    a, b = stalled
    held = os.open(a, os.O_WRONLY | os.O_APPEND)
    marker = tmp_path / "paused-at"
    with paused(
        cli_env, marker, ["after-temp", "after-rename"], "handover", "--from", "s1", "--to", "s2"
    ) as proc:
        wait_for_step(proc, marker, "after-temp")
        os.write(held, b"during\n")
        marker.unlink()
        wait_for_step(proc, marker, "after-rename")
        kill9(proc)
    os.write(held, b"after\n")
    os.close(held)
    got = ackdeck_json(cli_env, "handover", "--from", "s1", "--to", "s2")
    assert got["resumed"] == "pushed"
    both = Counter(_lines(a)) + Counter(_lines(b))
    assert (both[b"during"], both[b"after"]) == (1, 1), (_lines(a), _lines(b))
    assert Counter(_lines(b))[b"one"] == 1
