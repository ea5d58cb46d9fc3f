"""Channel notices end to end: the SDK's own client spawns `ackdeck mcp` over stdio and records
every notification it receives. Waits are bounded generously (a busy 2-core machine); quiet
periods are observed, never assumed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ackdeck.core.monitors import wakes
from ackdeck.core.monitors.monitors import MatchedLine
from ackdeck.core.rooms.file.room import Room
from tests.helpers.channel import ChannelListener, Recorder
from tests.helpers.cli import ackdeck_ok
from tests.helpers.mcp import server_params
from tests.helpers.mounts import mounted
from tests.helpers.paths import PATHS, REPO
from tests.helpers.wait import WAIT


@asynccontextmanager
async def connect(
    home: Path, rooms: Sequence[Path], rec: Recorder, *extra: str, mode: str = "legacy"
) -> AsyncIterator[Client]:
    # "legacy": the initialize handshake, as Claude Code speaks it today.
    async with Client(
        server_params(home, rooms, "agent", extra),
        read_timeout_seconds=60,
        mode=mode,  # type: ignore[arg-type]
        extensions=[ChannelListener(rec)],
        message_handler=rec.on_message,
    ) as client:
        yield client


def push_from_another_process(room: Path, text: str) -> None:
    ackdeck_ok({"PYTHONPATH": PATHS}, "room", "push", str(room), text)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_capability_is_declared(home: Path, tmp_path: Path, mode: str) -> None:
    rec = Recorder()
    async with connect(home, [tmp_path / "inbox.txt"], rec, mode=mode) as client:
        caps = client.server_capabilities
        assert caps.experimental == {"claude/channel": {}}
        # The model is told what a notice is and that it consumed nothing.
        assert '<channel source="ackdeck">' in (client.instructions or "")
        assert "acked and drained nothing" in (client.instructions or "")
        # Tools still work next to the channel.
        assert not (await client.call_tool("room_status", {})).is_error


async def test_a_pushed_line_makes_exactly_one_notice(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    rec = Recorder()
    async with connect(home, [room], rec) as client:
        await rec.quiet(1.0)  # the server is up and has looked once: nothing waits
        assert rec.channel == []
        push_from_another_process(room, "[t1] [ops] owner: deploy now")
        await rec.wait_for(1)
        await rec.quiet()
        assert len(rec.channel) == 1
        n = rec.channel[0]
        assert n.meta["room"] == "inbox.txt" and n.meta["kind"] == "room"
        assert n.meta["count"] == "1"
        assert "deploy now" in n.content and "room_list_new" in n.content
        # The notice consumed nothing: the line is still there for the authoritative read.
        listed = await client.call_tool("room_list_new", {})
        assert listed.structured_content["lines"] == ["[t1] [ops] owner: deploy now"]
        # Reading (or acking) is not news: still one notice.
        await client.call_tool("room_ack", {})
        await rec.quiet()
        assert len(rec.channel) == 1
        push_from_another_process(room, "[t2] [ops] owner: again")
        await rec.wait_for(2)
        assert rec.channel[1].meta["count"] == "1"


async def test_a_burst_of_a_thousand_lines_is_one_or_two_notices(
    home: Path, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    rec = Recorder()
    async with connect(home, [room], rec):
        await rec.quiet(1.0)
        script = (
            "import sys\nfrom ackdeck.core.rooms.file.room import Room\nr = Room(sys.argv[1])\n"
            "for i in range(1000):\n    r.push(f'line {i}')\n"
        )
        subprocess.run(
            [sys.executable, "-c", script, str(room)],
            check=True,
            env={"PYTHONPATH": PATHS},
            cwd=str(REPO),
        )
        await rec.wait_for(1)
        await rec.quiet(3.0)
        assert 1 <= len(rec.channel) <= 2, [n.meta for n in rec.channel]
        assert rec.channel[-1].meta["count"] == "1000"
    assert len(room.read_bytes().splitlines()) == 1000


async def test_lines_already_read_make_no_notice(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    r = Room(room)
    for i in range(5):
        r.push(f"old {i}")
    r.read("agent")
    rec = Recorder()
    async with connect(home, [room], rec):
        await rec.quiet(3.0)
    assert rec.channel == []


async def test_a_pending_wake_makes_one_notice(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    rec = Recorder()
    async with connect(home, [room], rec):
        await rec.quiet(1.0)
        wakes.merge(
            home,
            "agent",
            "build",
            run_id="run1",
            kind="match",
            lines=[MatchedLine(0, 20, "ERROR: build failed")],
            filter="ERROR",
            exclude=False,
            matches=1,
            status="running",
        )
        await rec.wait_for(1)
        await rec.quiet()
        assert len(rec.channel) == 1
        n = rec.channel[0]
        assert n.meta["process"] == "build" and n.meta["kind"] == "match"
        assert "wakes_drain" in n.content and "build failed" in n.content
    record = wakes.list_wakes(home, "agent")[0]
    assert record.pending == 1  # the notice drained nothing


async def test_a_restarted_server_does_not_repeat_itself(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.touch()
    rec = Recorder()
    async with connect(home, [room], rec):
        push_from_another_process(room, "hello")
        await rec.wait_for(1)
    rec2 = Recorder()
    started = time.monotonic()
    async with connect(home, [room], rec2):
        await rec2.quiet(3.0)
        assert rec2.channel == []
        # ...and it is not silent either: a new line is noticed.
        push_from_another_process(room, "world")
        await rec2.wait_for(1)
        assert rec2.channel[0].meta["count"] == "2"
    assert time.monotonic() - started < WAIT * 2


async def test_no_channel_flag_keeps_the_server_quiet(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    room.write_text("waiting\n")
    rec = Recorder()
    async with connect(home, [room], rec, "--no-channel") as client:
        assert client.server_capabilities.experimental in (None, {})
        assert "<channel" not in (client.instructions or "")
        await rec.quiet(2.0)
    assert rec.channel == []


async def test_a_full_disk_under_home_does_not_silence_the_channel(tmp_path: Path) -> None:
    # The notice state is written after each notice; a transient ENOSPC there must not stop
    # the notifier for the rest of the session (silence is the one thing a notice may not do).
    from tests.helpers.mounts import fill

    home = tmp_path / "home"
    home.mkdir()
    with mounted(home, "-t", "tmpfs", "-o", "size=64k", "tmpfs"):
        room = tmp_path / "inbox.txt"
        room.touch()
        rec = Recorder()
        async with connect(home, [room], rec):
            await rec.quiet(1.0)
            filler = fill(home)
            push_from_another_process(room, "while the disk is full")
            await rec.wait_for(1)
            filler.unlink()
            await rec.quiet()
            push_from_another_process(room, "after space came back")
            await rec.wait_for(2)
            assert "after space came back" in rec.channel[-1].content


async def test_a_read_only_home_does_not_silence_the_channel(tmp_path: Path) -> None:
    # A sandbox with a read-only HOME: no notice state can be kept (nor a lock file made),
    # which may repeat a notice after a restart but must never leave the agent unwoken.
    home = tmp_path / "home"
    home.mkdir()
    with mounted(home, "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"):
        room = tmp_path / "inbox.txt"
        room.touch()
        rec = Recorder()
        async with connect(home, [room], rec) as client:
            await rec.quiet(1.0)
            push_from_another_process(room, "while HOME is read-only")
            await rec.wait_for(1)
            await rec.quiet()
            assert len(rec.channel) == 1  # remembered in memory: not repeated either
            push_from_another_process(room, "and another")
            await rec.wait_for(2)
            assert rec.channel[1].meta["count"] == "2"
            assert not (await client.call_tool("room_status", {})).is_error


async def test_two_servers_of_one_session_tell_each_line_once(home: Path, tmp_path: Path) -> None:
    # Two Claude Code windows in one project, each with its own `ackdeck mcp --session agent`:
    # each new line is one notice for the session, to whichever server looked first.
    room = tmp_path / "inbox.txt"
    room.touch()
    one, two = Recorder(), Recorder()
    async with connect(home, [room], one), connect(home, [room], two):
        await one.quiet(1.0)
        for i in range(3):
            push_from_another_process(room, f"line {i}")
            with anyio.fail_after(WAIT):
                while len(one.channel) + len(two.channel) < i + 1:
                    await anyio.sleep(0.02)
            await one.quiet()
            assert len(one.channel) + len(two.channel) == i + 1
    counts = sorted(int(n.meta["count"]) for n in one.channel + two.channel)
    assert counts == [1, 2, 3]


async def test_a_client_without_channels_ignores_the_notices_and_loses_nothing(
    home: Path, tmp_path: Path
) -> None:
    # The SDK's client without a binding for the method: the notice is dropped unseen (as
    # any client that does not know the capability does) and every tool works as before.
    room = tmp_path / "inbox.txt"
    room.touch()
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        seen.append(message)

    async with Client(
        server_params(home, [room]),
        read_timeout_seconds=60,
        mode="legacy",
        message_handler=on_message,
    ) as client:
        await anyio.sleep(1.0)  # the server is up and has looked once
        push_from_another_process(room, "for a client without channels")
        # The notice went out: the channel's state records it as told.
        state = home / "notices" / "agent" / "channel.json"
        with anyio.fail_after(WAIT):
            while not state.exists() or b'"end":0' in state.read_bytes():
                await anyio.sleep(0.02)
        listed = await client.call_tool("room_list_new", {})
        assert listed.structured_content["lines"] == ["for a client without channels"]
        assert not (await client.call_tool("room_ack", {})).is_error
    assert seen == []
    assert room.read_bytes() == b""


def test_server_discover_declares_the_channel_only_in_the_2026_protocol(
    home: Path, tmp_path: Path
) -> None:
    """What the README says about `server/discover`: a 2026-07-28 request (its `_meta` carries
    the protocol version) gets the capability; after an earlier version's `initialize` the
    method does not exist (-32601), and the capability is in the `initialize` result instead."""
    import json
    import threading

    def exchange(*requests: dict[str, Any]) -> list[dict[str, Any]]:
        p = server_params(home, [tmp_path / "inbox.txt"])
        proc = subprocess.Popen(
            [p.command, *p.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=p.env,
            cwd=p.cwd,
            text=True,
        )
        watchdog = threading.Timer(WAIT, proc.kill)  # only a real hang reaches it
        watchdog.start()
        assert proc.stdin is not None and proc.stdout is not None
        answers = []
        try:
            for req in requests:
                proc.stdin.write(json.dumps(req) + "\n")
                proc.stdin.flush()
                if "id" in req:
                    line = proc.stdout.readline()
                    assert line, "the server closed stdout"
                    answers.append(json.loads(line))
        finally:
            watchdog.cancel()
            proc.stdin.close()
            proc.wait(timeout=WAIT)
            proc.stdout.close()
        return answers

    discover = {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {}}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    legacy = exchange(init, initialized, discover)
    assert legacy[0]["result"]["capabilities"]["experimental"] == {"claude/channel": {}}
    assert legacy[1]["error"]["code"] == -32601

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    (modern,) = exchange({**discover, "params": {"_meta": meta}})
    assert modern["result"]["capabilities"]["experimental"] == {"claude/channel": {}}
