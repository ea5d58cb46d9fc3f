"""An MCP reply has a size limit (Claude Code refuses a tool result over 25,000 tokens and the
agent sees only an error), so `room_list_new` and `room_ack all` hand out at most one reply's
worth of lines and record, or remove, exactly those. Before, a big room went out whole in one
reply: the client refused it, yet the receipt covered every line, so the agent's next
`room_ack` (or an `all: true` ack) removed lines it never saw."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ackdeck.core.mcp.server import MAX_REPLY_TEXT
from ackdeck.core.rooms.room_backend import RoomBackend
from ackdeck.core.service.refs import open_room
from tests.helpers.mcp import call, connect, text_of
from tests.helpers.redis_server import RedisServer, new_room_name

LINE = "x" * 90


def numbered(n: int) -> bytes:
    return b"".join(f"{i:06d} {LINE}\n".encode() for i in range(n))


async def test_big_room_is_handed_out_one_reply_at_a_time(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    total = 3000  # ~290 KB of lines: several replies' worth
    room.write_bytes(numbered(total))
    seen: list[str] = []
    async with connect(home, [room]) as client:
        while True:
            got = await call(client, "room_list_new")
            assert not got.is_error, text_of(got)
            lines = got.structured_content["lines"]
            if not lines:
                break
            # The whole reply (text and structured copy) stays near one reply's budget.
            assert len(text_of(got).encode()) < MAX_REPLY_TEXT + 4096
            assert len(json.dumps(got.structured_content)) < MAX_REPLY_TEXT + 4096
            assert 0 < len(lines) < total
            if len(seen) + len(lines) < total:
                assert re.search(r"\d more lines? waiting", text_of(got))
            ack = await call(client, "room_ack")
            assert not ack.is_error, text_of(ack)
            # Exactly the lines this reply carried were removed; the rest are still there.
            assert ack.structured_content["acked"] == len(lines)
            assert ack.structured_content["preserved"] == total - len(seen) - len(lines)
            seen += lines
            assert room.read_bytes() == numbered(total)[len("".join(f"{s}\n" for s in seen)) :]
    assert seen == numbered(total).decode().splitlines()
    assert room.read_bytes() == b""


async def test_ack_all_removes_only_what_its_reply_carries(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    total = 3000
    room.write_bytes(numbered(total))
    seen: list[str] = []
    async with connect(home, [room]) as client:
        for _ in range(total):
            ack = await call(client, "room_ack", {"all": True})
            assert not ack.is_error, text_of(ack)
            lines = ack.structured_content["lines"]
            if not lines:
                break
            assert len(json.dumps(ack.structured_content)) < MAX_REPLY_TEXT + 4096
            assert ack.structured_content["acked"] == len(lines)
            seen += lines
            assert ack.structured_content["preserved"] == total - len(seen)
    assert seen == numbered(total).decode().splitlines()
    assert room.read_bytes() == b""


def _partial_read_then_ack(r: RoomBackend) -> None:
    for i in range(10):
        r.push(f"n{i}")
    got = r.read("s", deliver=lambda view: 4)  # the door delivered the first 4 lines only
    assert got.lines == [b"n0", b"n1", b"n2", b"n3"]
    r.push("late")
    assert r.status().sessions["s"].unread == 7
    res = r.ack("s")
    assert (res.mode, res.acked, res.preserved) == ("prefix", 4, 7)
    rest = r.read("s")
    assert rest.lines == [f"n{i}".encode() for i in range(4, 10)] + [b"late"]
    assert r.ack("s").acked == 7


def test_a_partly_delivered_read_acks_only_those_lines_file(tmp_path: Path) -> None:
    _partial_read_then_ack(open_room(str(tmp_path / "r.txt")))


def test_a_partly_delivered_read_acks_only_those_lines_redis(redis_server: RedisServer) -> None:
    _partial_read_then_ack(open_room(redis_server.url(new_room_name())))
