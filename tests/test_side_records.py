"""Issue 42, class 2: a side record never fails the main act. The presence log is only added to
by a read, an ack or a hook, after the act took effect; a damaged log made them exit 1 with a
traceback (the rotation folded it), so the user was told a read or ack failed that had not.
And the listing of agents (`ackdeck agents`, the metrics) goes on past one stray or damaged
file in the presence folder: it names the file and skips it.

Real files, real `ackdeck` processes, each run bounded (a FIFO opened without O_NONBLOCK
blocks for good: a regression fails here instead of hanging the suite)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ackdeck.core.base import locations
from tests.helpers.cli import ackdeck

# Nested past the decoder's recursion limit, and longer than presence's LIMIT (64 KiB), so
# the next event recorded folds the log.
DEEP_LOG = b"[" * 100_000 + b"\n"


def _read_ack_and_hooks_work(cli_env: dict[str, str], room: Path) -> None:
    """A pushed line is read (exit 0, printed) and acked (exit 0, gone), and the hooks of a
    turn exit 0: nothing says it failed, nothing is a traceback."""
    assert ackdeck(cli_env, "room", "push", str(room), "hello").returncode == 0
    for args, stdin in (
        (("room", "read", str(room), "--session", "s1"), None),
        (("room", "ack", str(room), "--session", "s1"), None),
        (("hooks", "prompt", "--room", str(room), "--session", "s1"), "{}"),
        (("hooks", "stop", "--room", str(room), "--session", "s1"), "{}"),
        (("hooks", "notify", "--session", "s1"), '{"notification_type": "idle_prompt"}'),
    ):
        out = ackdeck(cli_env, *args, input=stdin, timeout=30)
        assert out.returncode == 0, (args, out.stderr[-2000:])
        assert "Traceback" not in out.stderr and len(out.stderr.splitlines()) <= 1, out.stderr
        if args[1] == "read":
            assert out.stdout.splitlines()[-1] == "hello"
    assert room.read_bytes() == b""  # the ack took effect


def test_a_deeply_nested_presence_log_fails_no_read_ack_or_hook(
    home: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    log = locations.presence_log(home, "s1")
    log.parent.mkdir(parents=True)
    log.write_bytes(DEEP_LOG)
    _read_ack_and_hooks_work(cli_env, tmp_path / "r.txt")


def test_a_fifo_in_place_of_the_presence_log_blocks_no_read_ack_or_hook(
    home: Path, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    log = locations.presence_log(home, "s1")
    log.parent.mkdir(parents=True)
    os.mkfifo(log)
    _read_ack_and_hooks_work(cli_env, tmp_path / "r.txt")
    out = ackdeck(cli_env, "agents", timeout=30)
    assert out.returncode == 0 and str(log) in out.stderr, out.stderr
    assert os.path.exists(log) and not os.path.isfile(log)  # left in place


def _seen(cli_env: dict[str, str], room: Path, session: str) -> None:
    for args in (
        ("room", "push", str(room), "x"),
        ("room", "read", str(room), "--session", session),
    ):
        assert ackdeck(cli_env, *args).returncode == 0


@pytest.mark.parametrize("stray", ["bad name.jsonl", "s9.jsonl/", "deep"])
def test_one_stray_file_in_the_presence_folder_is_named_and_skipped_by_agents_and_metrics(
    home: Path, tmp_path: Path, cli_env: dict[str, str], stray: str
) -> None:
    _seen(cli_env, tmp_path / "r.txt", "s1")
    folder = locations.agents_dir(home)
    if stray == "deep":
        bad = folder / "s2.jsonl"
        bad.write_bytes(DEEP_LOG)
    elif stray.endswith("/"):
        bad = folder / stray.rstrip("/")
        bad.mkdir()
    else:
        bad = folder / stray
        bad.write_text('{"t": 1, "ev": "start"}\n')
    out = ackdeck(cli_env, "agents")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "s1 " in out.stdout
    if stray != "deep":  # a damaged log of a valid name is a session with nothing known
        assert str(bad) in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    out = ackdeck(cli_env, "agents", "--json")
    assert out.returncode == 0 and "s1" in [a["session"] for a in json.loads(out.stdout)["agents"]]
    out = ackdeck(cli_env, "metrics")
    assert out.returncode == 0, out.stderr
    assert 'ackdeck_agent_state{session="s1",state="working"} 1.0' in out.stdout


# A log as a hand edit or a hostile writer leaves it: times and carried facts no clock or
# formatter can take, and wrong kinds of every carried fact.
DAMAGED_EVENTS = [
    '{"t": NaN, "ev": "read", "room": "/r"}',
    '{"t": Infinity, "ev": "stop"}',
    '{"t": 1e300, "ev": "prompt"}',
    '{"t": -1e300, "ev": "notify", "detail": "idle_prompt: x"}',
    '{"t": 5, "ev": "read", "waited": Infinity}',
    '{"t": 6, "ev": "read", "waited": 1e300}',
    json.dumps(
        {
            "t": 1,
            "ev": "carry",
            "facts": {
                "turn": "notify",
                "turn_detail": 5,
                "turn_at": "x",
                "servers": {"h:1": "x", "h:2": 1e300},
                "first_at": "x",
                "last_at": 1e300,
                "waited": "abc",
                "rooms": 5,
                "nudges_unanswered": "many",
                "gone_at": 1e300,
                "gone_why": ["x"],
            },
        }
    ),
]


@pytest.mark.parametrize("line", DAMAGED_EVENTS, ids=range(len(DAMAGED_EVENTS)))
def test_presence_times_past_any_clock_and_damaged_carries_do_not_crash_agents(
    home: Path, cli_env: dict[str, str], line: str
) -> None:
    log = locations.presence_log(home, "s1")
    log.parent.mkdir(parents=True)
    log.write_text('{"t": 2, "ev": "start", "detail": "startup"}\n' + line + "\n")
    out = ackdeck(cli_env, "agents")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert out.stdout.splitlines()[1].startswith("s1 ")

    def refuse(name: str) -> object:
        raise AssertionError(f"{name} printed as JSON")

    out = ackdeck(cli_env, "agents", "--json")
    assert out.returncode == 0, out.stderr
    (agent,) = json.loads(out.stdout, parse_constant=refuse)["agents"]
    assert agent["session"] == "s1"
    out = ackdeck(cli_env, "metrics")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize("kind", ["fifo", "directory"])
@pytest.mark.parametrize("name", ["seen", "reads.jsonl"])
def test_a_fifo_or_directory_in_place_of_a_rooms_journey_file_blocks_and_fails_nothing(
    tmp_path: Path, cli_env: dict[str, str], name: str, kind: str
) -> None:
    """The first-seen marks and the read log (the room's journey/) are side records too: a
    FIFO in their place blocked every push, read, ack and status for good (opened without
    O_NONBLOCK), a directory failed the push. Now they are as if absent, and left in place."""
    room = tmp_path / "r.txt"
    assert ackdeck(cli_env, "room", "push", str(room), "first").returncode == 0
    bad = locations.journey_dir(locations.sidecar(room)) / name
    bad.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(bad)
    else:
        bad.mkdir()
    _read_ack_and_hooks_work(cli_env, room)  # pushes "hello" after "first": both read, acked
    out = ackdeck(cli_env, "room", "status", str(room), timeout=30)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert os.path.exists(bad) and not os.path.isfile(bad)  # left in place


def test_a_presence_log_grown_to_a_gigabyte_is_read_bounded(home: Path) -> None:
    """`agents` read each presence log whole: one grown behind ackdeck's back (`truncate -s
    1G`) cost a gigabyte of memory and time per listing. At most history.READ_CAP bytes are read
    (its head, where a fold's summary is, and its tail), counted as the bytes this process
    read (Linux's rchar), not timed."""
    from ackdeck.core.presence import log
    from ackdeck.core.service.agents import list_agents

    assert log.record(home, "s1", "start", detail="startup")
    os.truncate(locations.presence_log(home, "s1"), 1 << 30)
    with open("/proc/self/io") as f:
        before = next(int(v) for k, v in (line.split(":") for line in f) if k == "rchar")
    listed = list_agents(home)
    with open("/proc/self/io") as f:
        after = next(int(v) for k, v in (line.split(":") for line in f) if k == "rchar")
    assert [a.session for a in listed.agents] == ["s1"]
    assert "SessionStart" in listed.agents[0].evidence  # the head's event is still read
    assert after - before < 8 << 20  # READ_CAP is 1 MiB
