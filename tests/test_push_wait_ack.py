"""`room push --wait-ack` and MCP `room_push` with wait_ack: the producer's side of the
push-ack chain. Blocking waits (a watch on the sidecar, a blocking XREAD on the audit),
real processes, a real redis-server and the SDK's own client."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service import rooms as service
from ackdeck.core.service.refs import open_room
from tests.helpers.cli import ACKDECK, ackdeck
from tests.helpers.mcp import call, connect, text_of
from tests.helpers.wait import eventually


def _start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*ACKDECK, "room", "push", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _until_pending(spec: str, lines: int) -> None:
    """Wait (bounded) until the producer's line is in the room."""
    room = open_room(spec)
    eventually(lambda: room.status().pending >= lines, what="the push to land")
    room.close()


@pytest.fixture
def url(redis_server: object) -> str:
    return redis_server.url()  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", ["file", "redis"])
def test_push_wait_ack_returns_once_that_line_was_acked(
    tmp_path: Path, cli_env: dict[str, str], backend: str, request: pytest.FixtureRequest
) -> None:
    spec = str(tmp_path / "r.txt") if backend == "file" else request.getfixturevalue("url")
    open_room(spec).push("already there")
    proc = _start(cli_env, spec, "deploy?", "--wait-ack", "--timeout", "120", "--json")
    _until_pending(spec, 2)
    agent = open_room(spec, door="cli")
    agent.read("agent")
    assert proc.poll() is None  # a read is no ack: still waiting
    agent.ack("agent")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert (doc["waited"], doc["acked"], doc["acked_by"], doc["dead_room"]) == (
        True,
        True,
        "agent",
        None,
    )
    assert doc["acked_at"] >= time.time() - 120


def test_an_ack_of_other_lines_does_not_end_the_wait(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = str(tmp_path / "r.txt")
    Room(room).push("first")
    Room(room).read("agent")  # reads only "first"
    proc = _start(cli_env, room, "mine", "--wait-ack", "--timeout", "120")
    _until_pending(room, 2)
    Room(room).ack("agent")  # removes "first", keeps "mine"
    r = Room(room)
    eventually(lambda: r.status().acked_total >= 1, what="the first ack")
    assert proc.poll() is None
    r.read("boss")
    r.ack("boss")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "acked by boss" in out


def test_push_wait_ack_times_out_with_124_and_says_the_push_happened(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = str(tmp_path / "r.txt")
    out = ackdeck(cli_env, "room", "push", room, "nobody acks", "--wait-ack", "--timeout", "0.3")
    assert out.returncode == 124
    assert "pushed 1 line" in out.stderr and "not acked within 0.3 s" in out.stderr
    assert Room(room).status().pending == 1  # the line stays


def test_an_ack_by_another_session_ends_the_wait_and_says_who(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = str(tmp_path / "r.txt")
    proc = _start(cli_env, room, "for boss", "--wait-ack", "--session", "boss", "--timeout", "120")
    _until_pending(room, 1)
    Room(room).ack("intruder", all=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "acked by intruder, not boss" in err


def test_session_and_timeout_need_wait_ack(tmp_path: Path, cli_env: dict[str, str]) -> None:
    out = ackdeck(cli_env, "room", "push", str(tmp_path / "r"), "x", "--timeout", "3")
    assert out.returncode == 1 and "go with --wait-ack" in out.stderr


@pytest.mark.parametrize(
    "step", ["after-rename", "after-sweep", "after-fsync-dir", "after-audit", "after-commit"]
)
def test_wait_ack_names_the_acker_after_a_kill9_at_each_step_after_the_rename(
    tmp_path: Path, cli_env: dict[str, str], step: str
) -> None:
    # The audit entry is written before the ledger commits its base, and an interrupted ack's
    # intent names its session: a line that left the room is reported acked by who acked it,
    # never by "an unknown session" inferred from its absence.
    from tests.helpers.pauses import kill9, start_paused_ack, wait_for_step

    path = tmp_path / "r.txt"
    r = Room(path)
    pushed = service.push(r, "r", "x")
    r.read("s")
    marker = tmp_path / "paused-at"
    proc = start_paused_ack(path, marker, [step], cli_env)
    try:
        wait_for_step(proc, marker, step)
        kill9(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for _ in range(2):  # before and after a read recovers the interrupted ack
        got = service.wait_ack(Room(path), pushed, timeout=30)
        assert (got.acked, got.acked_by, got.removed) == (True, "s", False)
        assert Room(path).status().acked_total == 1
        Room(path).read("other")


def test_a_line_gone_with_its_history_is_not_called_acked(tmp_path: Path) -> None:
    r = Room(tmp_path / "r.txt")
    pushed = service.push(r, "r", "x")
    r.read("agent")
    r.ack("agent")
    (r.sidecar / "audit.jsonl").unlink()  # the record of the ack is gone: unknown, not acked
    got = service.wait_ack(r, pushed, timeout=30)
    assert (got.acked, got.acked_by, got.removed, got.timed_out) == (False, None, True, False)


async def test_mcp_room_push_waits_for_the_ack_with_progress(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))
        # Ack only after the server said it is waiting: the wait really blocked.
        await anyio.to_thread.run_sync(lambda: (Room(room).read("owner"), Room(room).ack("owner")))

    async with connect(home, [room]) as client:
        with anyio.fail_after(120):
            res = await client.call_tool(
                "room_push",
                {"room": "inbox.txt", "text": "approve?", "wait_ack": True, "timeout": 60},
                progress_callback=on_progress,
            )
        assert not res.is_error, text_of(res)
        assert res.structured_content["acked"] is True
        assert res.structured_content["acked_by"] == "owner"
        assert "acked by owner" in text_of(res)
        assert progress and progress[0][1] == 60 and "waiting for the ack" in (progress[0][2] or "")
        quick = await call(
            client,
            "room_push",
            {"room": "inbox.txt", "text": "x", "wait_ack": True, "timeout": 0.2},
        )
        assert not quick.is_error and quick.structured_content["acked"] is False
        assert "not acked within 0.2 s" in text_of(quick)
