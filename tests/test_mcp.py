"""The agents' door end to end: the official SDK client spawns `ackdeck mcp` as a real
subprocess and talks to it over stdio. Every assertion is about what an agent or its owner sees:
the tool replies and the bytes left in the notification file."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from ackdeck.core.monitors import procs
from tests.helpers.cli import ackdeck
from tests.helpers.mcp import call, connect, text_of
from tests.helpers.wait import eventually, eventually_async

TOOLS = {
    "room_list_new",
    "room_ack",
    "room_push",
    "room_status",
    "process_start",
    "process_output",
    "wakes_drain",
    # issue 13: what an agent needs to manage what it started
    "process_list",
    "process_kill",
    "wakes_list",
    # issue 32: every agent session's presence
    "agents_list",
    # issue 44: each Claude Code message's fate
    "messages_list",
    # issue 45: a queue room's tasks
    "task_claim",
    "task_done",
    "task_extend",
    "task_release",
}


def append_unlocked(path: Path, line: str) -> None:
    # A poller that knows nothing about ackdeck: a separate process reopening the path per write.
    subprocess.run(["sh", "-c", 'printf "%s\\n" "$2" >> "$1"', "sh", str(path), line], check=True)


async def test_tool_list_names_every_tool_with_schemas(home: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    async with connect(home, [room]) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == TOOLS
    assert "all" in listed["room_ack"].input_schema["properties"]
    # room is optional: without it a push goes to the default room, as the README says.
    assert listed["room_push"].input_schema["required"] == ["text"]
    assert "room" in listed["room_push"].input_schema["properties"]
    assert set(listed["process_start"].input_schema["properties"]) >= {
        "name",
        "argv",
        "monitor",
        "exclude",
        "cooldown_ms",
        "max_events",
        "cwd",
    }
    # Structured replies are advertised, so programs need not parse the text.
    assert listed["room_ack"].output_schema is not None
    assert {"acked", "preserved"} <= set(listed["room_ack"].output_schema["properties"])


async def test_append_between_list_and_ack_survives_then_drains(home: Path, tmp_path: Path) -> None:
    """The source document's regression, through the real server and a real `printf >>`."""
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"[t1] [ops] owner: deploy\n[t2] [ops] owner: check logs\n")
    async with connect(home, [room]) as client:
        first = await call(client, "room_list_new")
        assert not first.is_error
        assert first.structured_content["lines"] == [
            "[t1] [ops] owner: deploy",
            "[t2] [ops] owner: check logs",
        ]
        assert first.structured_content["start"] == 0
        assert first.structured_content["end"] == room.stat().st_size

        append_unlocked(room, "[t3] [ops] owner: send all 3")

        ack = await call(client, "room_ack")
        assert not ack.is_error, text_of(ack)
        assert ack.structured_content["acked"] == 2
        assert ack.structured_content["preserved"] == 1
        assert "acked 2" in text_of(ack) and "preserved 1" in text_of(ack)
        assert room.read_bytes() == b"[t3] [ops] owner: send all 3\n"

        second = await call(client, "room_list_new")
        assert second.structured_content["lines"] == ["[t3] [ops] owner: send all 3"]
        assert "send all 3" in text_of(second)

        drained = await call(client, "room_ack")
        assert drained.structured_content["acked"] == 1
        assert drained.structured_content["preserved"] == 0
    assert room.read_bytes() == b""


async def test_cold_ack_is_refused_and_leaves_the_file_untouched(
    home: Path, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    original = b"one\ntwo\nthree\n"
    room.write_bytes(original)
    async with connect(home, [room]) as client:
        refused = await call(client, "room_ack")
        assert refused.is_error
        message = text_of(refused)
        assert "3 unread" in message
        assert "room_list_new" in message and "all: true" in message
        assert "\n" not in message
        assert refused.structured_content["acked"] == 0
        assert refused.structured_content["preserved"] == 3
        assert room.read_bytes() == original

        # A read that was already acked does not license a second ack either.
        await call(client, "room_list_new")
        assert (await call(client, "room_ack")).structured_content["acked"] == 3
        room.write_bytes(b"four\n")
        again = await call(client, "room_ack")
        assert again.is_error and "1 unread" in text_of(again)
    assert room.read_bytes() == b"four\n"


async def test_ack_all_returns_the_lines_and_keeps_a_partial_write(
    home: Path, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"alpha\n\xffbeta\r\npartial-no-newline")
    async with connect(home, [room]) as client:
        result = await call(client, "room_ack", {"all": True})
    assert not result.is_error, text_of(result)
    data = result.structured_content
    # Invalid UTF-8 is shown with replacement; the bytes on disk were acked exactly.
    assert data["lines"] == ["alpha", "\ufffdbeta\r"]
    assert data["mode"] == "all" and data["acked"] == 2
    assert "alpha" in text_of(result)
    assert room.read_bytes() == b"partial-no-newline"


async def test_rooms_outside_the_configured_set_are_rejected(home: Path, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox.txt"
    alerts = tmp_path / "alerts.txt"
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"do not touch\n")
    inbox.write_bytes(b"in inbox\n")
    async with connect(home, [inbox, alerts]) as client:
        for name in (str(secret), "secret.txt", "../secret.txt", "/etc/passwd"):
            for tool, args in (
                ("room_list_new", {"room": name}),
                ("room_ack", {"room": name, "all": True}),
                ("room_push", {"room": name, "text": "x"}),
                ("room_status", {"room": name}),
            ):
                r = await call(client, tool, args)
                assert r.is_error, (tool, name)
                assert "not configured" in text_of(r)
                assert "inbox.txt" in text_of(r) and "alerts.txt" in text_of(r)

        # The configured rooms answer to their path or their basename; the first is the default.
        pushed = await call(client, "room_push", {"room": "alerts.txt", "text": "disk full"})
        assert not pushed.is_error, text_of(pushed)
        by_path = await call(client, "room_list_new", {"room": str(alerts)})
        assert by_path.structured_content["lines"] == ["disk full"]
        default = await call(client, "room_list_new")
        assert default.structured_content["lines"] == ["in inbox"]
        status = await call(client, "room_status")
        rows = {row["room"]: row for row in status.structured_content["rooms"]}
        assert rows["inbox.txt"]["default"] and rows["inbox.txt"]["in_flight"] == 1
        assert rows["alerts.txt"]["in_flight"] == 1 and rows["alerts.txt"]["unread"] == 0

        bad_line = await call(client, "room_push", {"room": "inbox.txt", "text": "a\nb"})
        assert bad_line.is_error and "newline" in text_of(bad_line)
    assert secret.read_bytes() == b"do not touch\n"
    assert alerts.read_bytes() == b"disk full\n"
    assert not (tmp_path / ".secret.txt.ackdeck").exists()


def test_bad_server_configuration_fails_fast_with_one_line(home: Path, tmp_path: Path) -> None:
    room = str(tmp_path / "inbox.txt")
    for args, needle in (
        (["mcp", "--session", "../escape", "--room", room], "invalid session name"),
        (["mcp", "--session", "agent", "--room", str(tmp_path)], "is a directory"),
    ):
        out = ackdeck(None, "--home", str(home), *args, input="")
        assert out.returncode != 0
        assert needle in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


async def read_until_exit(client: Client, name: str, **args: Any) -> list[str]:
    """Everything process_output returns for `name` until the run has ended (bounded)."""
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = await call(client, "process_output", {"name": name, "timeout": 5, **args})
        assert not r.is_error, text_of(r)
        lines += r.structured_content["lines"]
        if r.structured_content["status"] != "running":
            return lines
    raise AssertionError(f"{name} did not exit in time; read so far: {lines}")


def wait_for_match(home: Path, name: str) -> None:
    """Until the run ended and its monitor counted the match (the wake decision is made)."""
    eventually(
        lambda: (info := procs.get_run(home, name)).status != "running" and info.matches >= 1,
        what=f"the monitor of {name} to match",
    )


async def test_shown_output_never_wakes_but_filtered_out_output_does(
    home: Path, tmp_path: Path
) -> None:
    script = "echo compiling; echo 'ERROR: disk full'; echo done"
    async with connect(home, [tmp_path / "inbox.txt"]) as client:
        for name in ("seen", "skipped"):
            started = await call(
                client,
                "process_start",
                {
                    "name": name,
                    "argv": ["sh", "-c", script],
                    "monitor": "ERROR",
                    "cooldown_ms": 0,
                    "cwd": str(tmp_path),
                },
            )
            assert not started.is_error, text_of(started)
            assert started.structured_content["session"] == "agent"
            assert started.structured_content["monitors"][0]["pattern"] == "ERROR"

        # The agent reads all of `seen`, but only the `done` line of `skipped`.
        assert await read_until_exit(client, "seen") == ["compiling", "ERROR: disk full", "done"]
        assert await read_until_exit(client, "skipped", filter="^done") == ["done"]
        await anyio.to_thread.run_sync(wait_for_match, home, "seen")
        await anyio.to_thread.run_sync(wait_for_match, home, "skipped")

        delivered: dict[str, list[str]] = {}

        async def drained_skipped() -> bool:
            drained = await call(client, "wakes_drain")
            assert not drained.is_error, text_of(drained)
            for d in drained.structured_content["delivered"]:
                delivered.setdefault(d["name"], []).extend(d["lines"])
            return "skipped" in delivered

        await eventually_async(drained_skipped, what="the wake of `skipped`", every=0.1)
        assert any("ERROR: disk full" in x for x in delivered.get("skipped", [])), delivered
        # The line the agent was shown never comes back as a wake.
        assert not any("ERROR" in x for x in delivered.get("seen", [])), delivered
        again = await call(client, "wakes_drain")
        assert again.structured_content["delivered"] == []
        assert "no wakes" in text_of(again)


async def test_process_errors_are_error_results(home: Path, tmp_path: Path) -> None:
    async with connect(home, [tmp_path / "inbox.txt"]) as client:
        for args, needle in (
            ({"name": "x", "argv": ["sh"], "monitor": "(unclosed"}, "regex"),
            ({"name": "x", "argv": ["sh"], "monitor": r"(a)\1"}, r"backreference \1 is not"),
            ({"name": "x", "argv": ["sh"], "monitor": "(?=x)"}, "lookahead (?=...) is not"),
            ({"name": "x", "argv": ["no-such-command-ackdeck"]}, "not found"),
            ({"name": "../x", "argv": ["sh"]}, "invalid process name"),
            ({"name": "x", "argv": ["sh"], "exclude": True}, "need a monitor"),
        ):
            r = await call(client, "process_start", args)
            assert r.is_error, args
            assert needle in text_of(r), text_of(r)
        missing = await call(client, "process_output", {"name": "never-started"})
        assert missing.is_error and "never-started" in text_of(missing)
        refused = await call(client, "process_output", {"name": "x", "filter": "(?!x)"})
        assert refused.is_error and "negative lookahead (?!...) is not" in text_of(refused)
    assert procs.list_runs(home) == []


async def test_ack_after_a_foreign_rewrite_is_a_stale_error_and_removes_nothing(
    home: Path, tmp_path: Path
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(b"old one\nold two\n")
    async with connect(home, [room]) as client:
        await call(client, "room_list_new")
        # Someone rewrites the file behind ackdeck's back (new inode, different content).
        replacement = tmp_path / "replacement"
        replacement.write_bytes(b"old two\nnew line\n")
        replacement.rename(room)
        stale = await call(client, "room_ack")
        assert stale.is_error
        assert stale.structured_content["mode"] == "stale"
        assert stale.structured_content["acked"] == 0
        assert "room_list_new" in text_of(stale)
        assert room.read_bytes() == b"old two\nnew line\n"
        fresh = await call(client, "room_list_new")
        assert fresh.structured_content["lines"] == ["old two", "new line"]
        assert fresh.structured_content["epoch"] > 0


async def test_a_room_reached_through_dotdot_after_a_symlinked_directory(
    home: Path, tmp_path: Path
) -> None:
    # `link/..` is the parent of the link's target for the kernel (and the CLI), not the
    # directory holding the link: a lexical normpath made the server watch another file.
    (tmp_path / "elsewhere" / "real").mkdir(parents=True)
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "link").symlink_to(tmp_path / "elsewhere" / "real")
    spelled = tmp_path / "deep" / "link" / ".." / "inbox.txt"
    (tmp_path / "elsewhere" / "inbox.txt").write_bytes(b"for the agent\n")
    async with connect(home, [spelled]) as client:
        listed = await call(client, "room_list_new")
        assert not listed.is_error, text_of(listed)
        assert listed.structured_content["lines"] == ["for the agent"]
        acked = await call(client, "room_ack")
        assert not acked.is_error and acked.structured_content["acked"] == 1
        pushed = await call(client, "room_push", {"room": "inbox.txt", "text": "reply"})
        assert not pushed.is_error, text_of(pushed)
    assert (tmp_path / "elsewhere" / "inbox.txt").read_bytes() == b"reply\n"
    assert not (tmp_path / "deep" / "inbox.txt").exists()


async def test_room_push_without_room_goes_to_the_default_room(home: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "inbox.txt", tmp_path / "alerts.txt"
    async with connect(home, [first, second]) as client:
        pushed = await call(client, "room_push", {"text": "to the default"})
        assert not pushed.is_error, text_of(pushed)
        assert pushed.structured_content["room"] == "inbox.txt"
    assert first.read_bytes() == b"to the default\n"
    assert not second.exists()
