"""A cancelled call did nothing: a client that cancels a tool call (`notifications/cancelled`,
a user pressing Esc) never gets its reply, so the call must record nothing its reply would have
said. Before, the SDK dropped the reply but the work stayed done: a cancelled room_list_new
left a receipt (the next room_ack removed lines the agent never saw), a cancelled ack-all
removed lines, a cancelled wakes_drain marked a wake delivered.

Driven by a raw JSON-RPC client over the server's real stdio, with the lock the call needs held
by the test, so the cancel lands while the call is blocked inside core (the window is then as
wide as the test wants). The test knows the call is blocked from the kernel's lock table
(/proc/locks lists a waiter on the lock file's inode), not from a sleep.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import ackdeck
from tests.helpers.raw_mcp import LIMIT, RawClient
from tests.helpers.wait import eventually


@pytest.fixture
def client(home: Path, tmp_path: Path) -> Iterator[RawClient]:
    c = RawClient(home, tmp_path / "inbox.txt")
    yield c
    c.close()


def _blocked_on(path: Path) -> bool:
    """Some process waits for a lock on `path` (the kernel's lock table says so)."""
    ino = os.stat(path).st_ino
    with open("/proc/locks") as f:
        return any("->" in line and f":{ino} " in line for line in f)


@contextmanager
def held(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _cancel_while_blocked(client: RawClient, lock: Path, tool: str, args: dict[str, Any]) -> None:
    with held(lock):
        client.call(tool, args, 7)
        eventually(lambda: _blocked_on(lock), timeout=LIMIT, what="the call to wait for the lock")
        client.notify("notifications/cancelled", {"requestId": 7, "reason": "user pressed Esc"})
        # The server has the cancel once a later request is answered (one stdin, in order).
        client.request("tools/list", {}, 8)
        client.wait_response(8)
    # The lock is free: the cancelled call runs to its end now. A call after it waits until
    # anything it recorded is recorded, so the state below is final.
    client.call("room_status", {}, 9)
    status = client.wait_response(9)["result"]["structuredContent"]["rooms"][0]
    client.status = status  # type: ignore[attr-defined]
    assert client.responses(7) == []  # a cancelled request is never answered


def _room(home: Path, tmp_path: Path, n: int) -> Path:
    room = tmp_path / "inbox.txt"
    for i in range(n):
        assert (
            ackdeck(None, "--home", str(home), "room", "push", str(room), f"line {i}").returncode
            == 0
        )
    return room


def test_cancelled_read_while_lock_held_records_no_receipt(
    home: Path, tmp_path: Path, client: RawClient
) -> None:
    room = _room(home, tmp_path, 5)
    before = room.read_bytes()
    lock = tmp_path / ".inbox.txt.ackdeck" / "lock"
    _cancel_while_blocked(client, lock, "room_list_new", {})
    assert client.status["in_flight"] == 0 and client.status["unread"] == 5  # type: ignore[attr-defined]
    # The agent's next ack has no read to ack: refused, nothing removed.
    client.call("room_ack", {}, 10)
    ack = client.wait_response(10)["result"]
    assert ack["isError"] and ack["structuredContent"]["mode"] == "refused"
    assert room.read_bytes() == before


def test_cancelled_ack_all_while_lock_held_removes_nothing(
    home: Path, tmp_path: Path, client: RawClient
) -> None:
    room = _room(home, tmp_path, 5)
    before = room.read_bytes()
    lock = tmp_path / ".inbox.txt.ackdeck" / "lock"
    _cancel_while_blocked(client, lock, "room_ack", {"all": True})
    assert room.read_bytes() == before
    assert client.status["acked_total"] == 0  # type: ignore[attr-defined]


def test_cancelled_drain_while_lock_held_leaves_the_wake_pending(
    home: Path, tmp_path: Path, client: RawClient
) -> None:
    _room(home, tmp_path, 1)
    started = ackdeck(
        None,
        "--home",
        str(home),
        "run",
        "boom",
        "--session",
        "agent",
        "--monitor",
        "ERROR",
        "--cooldown-ms",
        "10",
        "--",
        sys.executable,
        "-c",
        "print('ERROR one')",
    )
    assert started.returncode == 0, started.stderr

    def pending() -> int:
        out = ackdeck(None, "--home", str(home), "wakes", "list", "--session", "agent", "--json")
        records = json.loads(out.stdout)["wakes"]
        # Once the run has exited, its record holds the match and the exit notice.
        return (
            sum(r["pending"] for r in records)
            if records[:1] and records[0]["status"] == ("exited")
            else 0
        )

    eventually(pending, timeout=LIMIT, what="the wake")
    waiting = pending()
    lock = home / "wakes" / "agent" / ".drain.lock"
    lock.touch()  # as the first drain would make it
    _cancel_while_blocked(client, lock, "wakes_drain", {})
    assert pending() == waiting
    # Delivered once, to the caller that got the reply.
    client.call("wakes_drain", {}, 11)
    drained = client.wait_response(11)["result"]["structuredContent"]
    assert [x for d in drained["delivered"] for x in d["lines"]] == ["ERROR one"]
    assert pending() == 0
