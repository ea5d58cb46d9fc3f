"""A read carries at most what the connected client shows its model whole, measured the way it
measures (docs/concepts/agent-loop.md), whoever the client says it is and whatever the lines
hold. Found by trying the server as an unlucky client would: a client that names itself in
`initialize` (Codex always does) got the default budget, and lines of invalid UTF-8 made a
reply twice the size the budget allowed (their `invalid_utf8` indexes were not counted).
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from ackdeck.core.mcp.delivery import Deliveries, Handoff, Wire, request_key
from tests.helpers.raw_mcp import RawClient

# What each client shows its model whole (tests/test_agent_client_limits.py pins them).
CLAUDE_CHARS = 50_000  # of the compact JSON of structuredContent, as JavaScript counts
CODEX_BYTES = 11_997 - 40  # of "Wall time: … Output:\n" and that JSON, in UTF-8


def shown(result: dict) -> str:
    return json.dumps(result["structuredContent"], ensure_ascii=False, separators=(",", ":"))


def js_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.parametrize(
    ("client", "measure", "limit"),
    [
        ("claude-code", js_length, CLAUDE_CHARS),
        ("codex-mcp-client", lambda t: len(t.encode()), CODEX_BYTES),
    ],
)
@pytest.mark.parametrize(
    "content",
    [
        b"".join(b"line %05d " % i + b"x" * 30 + b"\n" for i in range(20_000)),
        b"\xff\n" * 12_000,  # every line invalid UTF-8: each also has an index in invalid_utf8
        "é🙂\u0001\n".encode() * 12_000,  # two-byte, astral (two UTF-16 units), a control
    ],
    ids=["ascii", "invalid-utf8", "wide"],
)
def test_a_client_named_in_initialize_gets_no_more_than_it_shows_whole(
    home: Path, tmp_path: Path, client: str, measure, limit: int, content: bytes
) -> None:
    room = tmp_path / "inbox.txt"
    room.write_bytes(content)
    total = content.count(b"\n")
    c = RawClient(home, room, client=client)
    try:
        seen = 0
        for rid in range(10, 14):  # a few pages: each fits, and they follow each other
            c.call("room_list_new", {}, rid)
            got = c.wait_response(rid)["result"]
            data = got["structuredContent"]
            assert not got["isError"] and 0 < data["count"] <= total - seen
            assert measure(shown(got)) <= limit
            assert data["count"] < total  # the first page left lines waiting
            assert data["waiting"] == total - seen - data["count"]
            c.call("room_ack", {}, rid + 100)
            assert (
                c.wait_response(rid + 100)["result"]["structuredContent"]["acked"] == data["count"]
            )
            seen += data["count"]
            if not data["waiting"]:
                break
    finally:
        c.close()
    assert room.read_bytes() == content[len(content) * seen // total :]


def test_ids_7_and_quoted_7_are_two_requests() -> None:
    """JSON-RPC ids keep their type: the write of the reply to "7" must not settle 7's."""
    loop = asyncio.new_event_loop()
    try:
        deliveries = Deliveries()
        wire = Wire(io.BytesIO(), deliveries)
        number, text = Handoff(loop, deliveries), Handoff(loop, deliveries)
        deliveries.expect(json.dumps(7), number)
        deliveries.expect(json.dumps("7"), text)
        wire.write('{"jsonrpc":"2.0","id":"7","result":{}}\n')
        wire.flush()
        assert text.outcome is True
        assert number.outcome is None  # still waiting for its own write
    finally:
        loop.close()


def test_a_reply_written_after_its_worker_gave_up_says_nothing_was_recorded() -> None:
    loop = asyncio.new_event_loop()
    try:
        deliveries = Deliveries()
        out = io.BytesIO()
        wire = Wire(out, deliveries)
        late = Handoff(loop, deliveries)
        deliveries.expect(json.dumps(9), late)
        late.begun = True
        assert late.offer(None, wait=0) is False  # type: ignore[arg-type]  # nobody wrote it
        wire.write('{"jsonrpc":"2.0","id":9,"result":{"content":[],"structuredContent":'
                   '{"acked":1495}}}\n')  # fmt: skip
        wire.flush()
        sent = json.loads(out.getvalue())
        assert sent["id"] == 9 and sent["result"]["isError"]
        assert "nothing it would have said was recorded" in sent["result"]["content"][0]["text"]
        assert "structuredContent" not in sent["result"]
    finally:
        loop.close()


def test_request_key_keeps_the_ids_type() -> None:
    class Ctx:
        class request_context:  # noqa: N801 - the SDK's attribute name
            request_id = 7

    assert request_key(Ctx()) == "7" and request_key(Ctx()) != json.dumps("7")


# ----- issue 42, class 7: a reply budget is a ceiling -------------------------------------------
async def _as_claude_code(home: Path, room: Path, tokens: int):  # noqa: ANN202 - a context
    from mcp import Client
    from mcp.types import Implementation

    from tests.helpers.mcp import server_params

    params = server_params(home, [room])
    params.env = {**(params.env or {}), "MAX_MCP_OUTPUT_TOKENS": str(tokens)}
    return Client(
        params,
        read_timeout_seconds=60,
        client_info=Implementation(name="claude-code", version="2.1.328"),
    )


@pytest.mark.parametrize("tokens", [100, 200])
async def test_a_small_max_mcp_output_tokens_is_a_ceiling_and_a_read_over_it_records_nothing(
    home: Path, tmp_path: Path, tokens: int
) -> None:
    # Claude Code withholds a result over MAX_MCP_OUTPUT_TOKENS (about 4 characters a token;
    # ackdeck budgets 3). A 1,000-character floor let a read carry more than that: Claude Code
    # showed its model nothing, and ackdeck recorded the lines as read.
    from tests.helpers.mcp import call, error_of, text_of

    room = tmp_path / "inbox.txt"
    content = b"".join(b"line %03d " % i + b"x" * 40 + b"\n" for i in range(100))
    room.write_bytes(content)
    ceiling = tokens * 3
    async with await _as_claude_code(home, room, tokens) as client:
        got = await call(client, "room_list_new")
        if got.is_error:
            err = error_of(got)
            assert err["error"] == "NotDelivered"
            assert f"MAX_MCP_OUTPUT_TOKENS={tokens}" in text_of(got)
            assert f"{ceiling:,} characters" in text_of(got)
            assert "nothing was recorded" in text_of(got)
            assert js_length(text_of(got)) <= ceiling
            # Nothing was read: no receipt to ack, every line still unread.
            ack = await call(client, "room_ack")
            assert ack.is_error and "refused" in text_of(ack)
            status = (await call(client, "room_status")).structured_content
            assert status is not None
            row = status["rooms"][0]
            assert (row["unread"], row["in_flight"]) == (100, 0), row
        else:
            assert js_length(shown(got.model_dump(by_alias=True))) <= ceiling
    assert room.read_bytes() == content
    assert got.is_error  # 300 or 600 characters: no line fits with the reply around it


async def test_a_line_longer_than_the_budget_is_not_sent_and_not_recorded(
    home: Path, tmp_path: Path
) -> None:
    # "A line is never cut" sent one line over the budget whole: Claude Code, under its
    # MAX_MCP_OUTPUT_TOKENS, withheld it, and the read was recorded. Say so; record nothing.
    from tests.helpers.mcp import call, text_of

    room = tmp_path / "inbox.txt"
    content = b"L" * 5_000 + b"\nshort\n"
    room.write_bytes(content)
    async with await _as_claude_code(home, room, 1_000) as client:
        got = await call(client, "room_list_new")
        assert got.is_error, got
        assert "3,000 characters" in text_of(got) and "MAX_MCP_OUTPUT_TOKENS" in text_of(got)
        acked = await call(client, "room_ack", {"all": True})
        assert acked.is_error and "nothing was recorded" in text_of(acked)
        status = (await call(client, "room_status")).structured_content
        assert status is not None and status["rooms"][0]["in_flight"] == 0
    assert room.read_bytes() == content


async def test_process_output_whose_first_line_is_over_the_budget_says_so_and_shows_nothing(
    home: Path, tmp_path: Path
) -> None:
    # The same ceiling for a process's output: a line over the budget was sent whole and
    # marked shown (the gate then suppressed its wake) while Claude Code withheld the reply.
    import sys

    from tests.helpers.mcp import call, text_of

    room = tmp_path / "inbox.txt"
    room.touch()
    code = "print('L' * 5000); print('short')"
    async with await _as_claude_code(home, room, 1_000) as client:
        started = await call(
            client, "process_start", {"name": "long", "argv": [sys.executable, "-c", code]}
        )
        assert not started.is_error, text_of(started)
        for _ in range(2):  # nothing was marked shown: the second read finds the same line
            got = await call(client, "process_output", {"name": "long", "timeout": 30})
            assert got.is_error, got
            assert "no line fits one reply" in text_of(got)
            assert "3,000 characters" in text_of(got) and "nothing was recorded" in text_of(got)
