"""A session's first MCP read and Claude Code's transcript that is not written yet.

Claude Code's first records are queued writes: on a busy machine a session's first read was
served a fraction of a millisecond before the transcript file was created (2.1.328, seen in
tests/test_agent_proof.py), and the read said `estimate` although its ack was then proven.
The server's first read waits, bounded, for the file (core/mcp/server.py,
FIRST_TRANSCRIPT_WAIT); a session that saves none pays that once and stays an estimate."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ackdeck.core.mcp import server
from ackdeck.core.mcp.server import AgentDoor, DoorConfig

SESSION = "0d4249a8-8e6b-43cd-951f-43a298c1bb70"


def _door(tmp_path: Path) -> tuple[AgentDoor, Path, Path]:
    room = tmp_path / "inbox.txt"
    room.write_text("one\ntwo\n")
    env = {
        "CLAUDE_CODE_SESSION_ID": SESSION,
        "CLAUDE_PROJECT_DIR": str(tmp_path / "project"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
    }
    door = AgentDoor(DoorConfig.make("s", [room], home=str(tmp_path / "home")), env=env)
    where = door.transcript()
    assert where is not None and not where.exists()
    return door, where, room


def _records(where: Path, *records: dict[str, object]) -> None:
    with where.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def _call(use: str, message: str) -> dict[str, object]:
    block = {"type": "tool_use", "id": use, "name": "mcp__ackdeck__room_ack", "input": {}}
    return {
        "type": "assistant",
        "message": {"id": message, "role": "assistant", "content": [block]},
    }


def _result(use: str, text: str) -> dict[str, object]:
    content = [{"type": "tool_result", "tool_use_id": use, "content": text}]
    return {"type": "user", "message": {"role": "user", "content": content}}


def _sleeps(
    monkeypatch: pytest.MonkeyPatch, then: Callable[[], None] = lambda: None
) -> list[float]:
    """Each sleep the server makes (its wait's polls), running `then` at the first: a file
    another program creates while the wait sleeps, with no timing in the test."""
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 1:
            then()

    monkeypatch.setattr(server.time, "sleep", sleep)
    return slept


def test_a_first_read_waits_for_the_transcript_claude_code_is_about_to_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    door, where, room = _door(tmp_path)

    def flush() -> None:  # Claude Code's first queued records land while the read waits
        where.parent.mkdir(parents=True)
        _records(where, {"type": "user", "message": {"role": "user", "content": "go"}})

    slept = _sleeps(monkeypatch, flush)
    got = door.room_list_new(tool_use_id="read1")
    assert slept, "the first read did not wait for the transcript"
    assert got.data["proof"] == "transcript" and got.data["proof_note"] is None, got.data
    monkeypatch.undo()
    # The model was shown the read's result, then acked in its next response: proven from
    # the mark the read kept (the transcript's first record, before the result).
    _records(where, _call("read1", "m1"), _result("read1", got.text), _call("ack1", "m2"))
    acked = door.room_ack(read_id=got.data["read_id"], tool_use_id="ack1")
    assert acked.data["proof"] == "transcript" and acked.data["acked"] == 2, acked.data
    assert room.read_text() == ""


def test_a_session_that_saves_no_transcript_waits_once_and_stays_an_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    door, where, room = _door(tmp_path)
    monkeypatch.setattr(server, "FIRST_TRANSCRIPT_WAIT", 0.05)
    first = door.room_list_new(tool_use_id="read1")
    assert first.data["proof"] == "estimate" and "does not exist (yet)" in first.data["proof_note"]
    door.room_ack(read_id=first.data["read_id"])
    # Later reads never wait again: the server remembers it waited once.
    room.write_text("three\n")
    slept = _sleeps(monkeypatch)
    second = door.room_list_new(tool_use_id="read2")
    assert second.data["proof"] == "estimate" and second.data["lines"] == ["three"], second.data
    assert slept == []


def test_a_read_made_while_the_first_one_waits_waits_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tools run concurrently: a second read arriving while the first waits must wait for the
    # same file until the same moment, not take the wait as spent and say estimate.
    door, where, room = _door(tmp_path)
    other = tmp_path / "other.txt"
    other.write_text("three\n")
    door = AgentDoor(DoorConfig.make("s", [room, other], home=str(tmp_path / "home")), env=door.env)
    second: list[Any] = []

    def flush() -> None:
        where.parent.mkdir(parents=True)
        _records(where, {"type": "user", "message": {"role": "user", "content": "go"}})

    def meanwhile() -> None:  # at the first read's first poll: the second read starts
        monkeypatch.setattr(server.time, "sleep", lambda _s: flush())
        second.append(door.room_list_new(str(other), tool_use_id="read2"))

    monkeypatch.setattr(server.time, "sleep", lambda _s: meanwhile())
    first = door.room_list_new(str(room), tool_use_id="read1")
    (got,) = second
    assert got.data["proof"] == "transcript" and got.data["lines"] == ["three"], got.data
    assert first.data["proof"] == "transcript", first.data


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_read_says_estimate_when_the_transcript_is_not_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    # The read said `transcript` for a directory or a FIFO in the transcript's place (it only
    # asked whether something was there), and its ack then said `estimate`: the read's word
    # must be the one its ack keeps.
    import os

    door, where, room = _door(tmp_path)
    where.parent.mkdir(parents=True)
    if kind == "directory":
        where.mkdir()
    else:
        os.mkfifo(where)
    monkeypatch.setattr(server, "FIRST_TRANSCRIPT_WAIT", 0.05)
    got = door.room_list_new(tool_use_id="read1")
    assert got.data["proof"] == "estimate", got.data
    assert "is not a regular file" in got.data["proof_note"], got.data
    acked = door.room_ack(read_id=got.data["read_id"], tool_use_id="ack1")
    assert acked.data["proof"] == "estimate", acked.data
