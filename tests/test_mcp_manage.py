"""MCP conventions end to end through the SDK's stdio client: tool titles and annotations,
progress while process_output waits, prompt return on cancellation (and nothing consumed by
the cancelled call), and process_list / process_kill / wakes_list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp.types import CallToolResult

from ackdeck.core.monitors import procs, shown
from tests.helpers.mcp import call, connect, text_of
from tests.helpers.wait import WAIT, eventually_async


async def test_tools_carry_titles_and_annotations(phome: Path, tmp_path: Path) -> None:
    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, tool in tools.items():
        assert tool.title, name
        assert tool.annotations is not None, name
    for name in ("room_status", "room_list_new", "process_output", "process_list", "wakes_list"):
        assert tools[name].annotations.read_only_hint is True, name
    for name in ("room_ack", "process_kill", "room_push", "process_start", "wakes_drain"):
        assert tools[name].annotations.read_only_hint is False, name
    assert tools["room_ack"].annotations.destructive_hint is True
    assert tools["process_kill"].annotations.destructive_hint is True
    assert tools["process_kill"].annotations.idempotent_hint is True
    assert tools["room_push"].annotations.destructive_hint is False
    assert tools["process_start"].annotations.open_world_hint is True
    assert tools["room_ack"].annotations.open_world_hint is False


# Every tool and the hints a client acts on: (readOnly, destructive, idempotent, openWorld).
# None where the spec gives a hint no meaning (destructive/idempotent of a read-only tool).
HINTS = {
    "room_list_new": (True, None, None, False),
    "room_status": (True, None, None, False),
    "room_ack": (False, True, False, False),
    "room_push": (False, False, False, False),
    "process_start": (False, True, False, True),
    "process_output": (True, None, None, False),
    "process_list": (True, None, None, False),
    "process_kill": (False, True, True, False),
    "wakes_list": (True, None, None, False),
    "wakes_drain": (False, False, False, False),
    "agents_list": (True, None, None, False),
    "messages_list": (True, None, None, False),
    "task_claim": (False, False, False, False),
    "task_done": (False, True, True, False),
    "task_extend": (False, False, False, False),
    "task_release": (False, False, True, False),
}


async def test_every_tool_has_its_title_and_each_hint_set(phome: Path, tmp_path: Path) -> None:
    # Unset hints take the spec's defaults (destructive and open-world: true), so each one a
    # client reads is stated, for every tool, and no tool goes unlisted.
    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(HINTS)
    for name, (read_only, destructive, idempotent, open_world) in HINTS.items():
        a = tools[name].annotations
        assert a is not None and tools[name].title and a.title == tools[name].title, name
        got = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        assert got == (read_only, destructive, idempotent, open_world), name


def waiter(flag: Path) -> list[str]:
    # Prints only once the test says so: no race with a fixed sleep.
    return ["sh", "-c", f'while [ ! -e "{flag}" ]; do sleep 0.05; done; echo "done-line"']


async def test_process_output_reports_progress_while_it_waits(phome: Path, tmp_path: Path) -> None:
    flag = tmp_path / "go"
    progress: list[tuple[float, float | None, str | None]] = []
    got_progress = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))
        got_progress.set()
        flag.touch()

    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        started = await call(client, "process_start", {"name": "slow", "argv": waiter(flag)})
        assert not started.is_error, text_of(started)
        with anyio.fail_after(WAIT * 2):
            res = await client.call_tool(
                "process_output",
                {"name": "slow", "timeout": 120},
                progress_callback=on_progress,
            )
    assert not res.is_error, text_of(res)
    assert res.structured_content["lines"] == ["done-line"]
    assert progress and progress[0][1] == 120
    assert "slow" in (progress[0][2] or "")


async def test_a_cancelled_wait_returns_promptly_and_consumes_nothing(
    phome: Path, tmp_path: Path
) -> None:
    flag = tmp_path / "go"
    waiting = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        waiting.set()

    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        await call(client, "process_start", {"name": "slow", "argv": waiter(flag)})
        async with anyio.create_task_group() as tg:

            async def long_poll() -> None:
                await client.call_tool(
                    "process_output",
                    {"name": "slow", "timeout": 600},
                    progress_callback=on_progress,
                )

            tg.start_soon(long_poll)
            with anyio.fail_after(WAIT):
                await waiting.wait()  # the server is inside the wait
            # An unfiltered long poll holds a read lease while it waits, so drains settle.
            rdir = procs.get_run(phome, "slow").run_dir
            assert shown.leases(rdir, "agent")
            tg.cancel_scope.cancel()  # the client sends notifications/cancelled
        # The server is free at once (the old blocking wait held it for the full timeout) ...
        with anyio.fail_after(WAIT):
            status = await call(client, "room_status")
        assert not status.is_error
        # ... the lease went with the cancelled call (a drain would not wait for a ghost) ...
        await eventually_async(
            lambda: not shown.leases(rdir, "agent"), what="the cancelled call to drop its lease"
        )
        # ... and the cancelled call left no reader behind that could swallow the output.
        flag.touch()
        with anyio.fail_after(WAIT):
            res = await call(client, "process_output", {"name": "slow", "timeout": WAIT})
        assert res.structured_content["lines"] == ["done-line"]


async def test_process_list_and_kill_manage_only_this_sessions_processes(
    phome: Path, tmp_path: Path
) -> None:
    procs.start(phome, "theirs", ["sleep", "300"], session="other", cwd=str(tmp_path))
    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        await call(client, "process_start", {"name": "mine", "argv": ["sleep", "300"]})
        listed = await call(client, "process_list")
        assert not listed.is_error, text_of(listed)
        rows = listed.structured_content["processes"]
        assert [r["name"] for r in rows] == ["mine"] and rows[0]["status"] == "running"

        refused = await call(client, "process_kill", {"name": "theirs"})
        assert refused.is_error and "belongs to session 'other'" in text_of(refused)
        assert procs.get_run(phome, "theirs").status == "running"

        killed = await call(client, "process_kill", {"name": "mine", "grace": 1})
        assert not killed.is_error, text_of(killed)
        assert killed.structured_content["status"] == "killed"
        again = await call(client, "process_kill", {"name": "mine"})
        assert not again.is_error and "already" in text_of(again)
        missing = await call(client, "process_kill", {"name": "nosuch"})
        assert missing.is_error and "unknown process" in text_of(missing)
        history = await call(client, "process_list", {"history": True})
        assert [r["status"] for r in history.structured_content["processes"]] == ["killed"]


async def test_wakes_list_shows_pending_wakes_without_delivering(
    phome: Path, tmp_path: Path
) -> None:
    async with connect(phome, [tmp_path / "inbox.txt"]) as client:
        await call(
            client,
            "process_start",
            {
                "name": "build",
                "argv": ["sh", "-c", "echo 'ERROR: disk full'"],
                "monitor": "ERROR",
                "cooldown_ms": 0,
            },
        )

        async def recorded() -> tuple[CallToolResult, list[dict[str, Any]]] | None:
            listed = await call(client, "wakes_list")
            rows = listed.structured_content["wakes"]
            # Wait for the exit notice too: until it is merged, a second list may differ.
            done = rows and rows[0]["lines"] and rows[0]["status"] != "running"
            return (listed, rows) if done else None

        listed, rows = await eventually_async(
            recorded, what="the monitor to record a wake", every=0.1
        )
        assert rows[0]["lines"] == ["ERROR: disk full"]
        assert "wakes_drain" in text_of(listed)
        again = await call(client, "wakes_list")
        assert again.structured_content["wakes"][0]["pending"] == rows[0]["pending"]
        drained = await call(client, "wakes_drain")
        assert "ERROR: disk full" in text_of(drained)
        after = await call(client, "wakes_list")
        assert all(r["pending"] == 0 for r in after.structured_content["wakes"])
