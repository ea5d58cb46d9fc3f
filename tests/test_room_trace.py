"""`ackdeck room trace`: a line's journey (pushed or first seen, each read, the ack), by offset
or by text, on file and redis rooms, through the same service result on every door."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.file.room import Room
from ackdeck.core.service.refs import open_room
from ackdeck.core.service.trace import trace
from tests.helpers.cli import ackdeck


def test_a_pushed_line_is_traced_through_its_reads_to_its_ack(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = str(tmp_path / "r.txt")
    offset = json.loads(ackdeck(cli_env, "room", "push", room, "deploy now", "--json").stdout)[
        "offset"
    ]
    ackdeck(cli_env, "room", "push", room, "other")
    assert ackdeck(cli_env, "room", "read", room, "--session", "agent").returncode == 0
    open_room(room, door="mcp").read("agent", reader="srv-9")  # re-read: a second delivery
    out = ackdeck(cli_env, "room", "trace", room, str(offset), "--json")
    line = json.loads(out.stdout)["lines"][0]
    assert (line["present"], line["text"], line["pushed"], line["deliveries"]) == (
        True,
        "deploy now",
        True,
        2,
    )
    assert [(h["session"], h["door"], h["reader"]) for h in line["reads"]] == [
        ("agent", "cli", None),
        ("agent", "mcp", "srv-9"),
    ]
    assert line["summary"].startswith("read 2 times, last by agent via mcp")
    assert line["summary"].endswith("not acked")
    Room(room).ack("agent", reader="srv-9")
    out = ackdeck(cli_env, "room", "trace", room, str(offset))
    assert out.returncode == 0, out.stderr
    assert "acked" in out.stdout and "by agent" in out.stdout
    assert "=> acked by agent" in out.stdout
    doc = json.loads(ackdeck(cli_env, "room", "trace", room, str(offset), "--json").stdout)
    gone = doc["lines"][0]
    assert (gone["present"], gone["text"], gone["acked_by"], gone["deliveries"]) == (
        False,
        None,
        "agent",
        2,
    )
    assert gone["pushed_at"] <= gone["reads"][0]["at"] <= gone["acked_at"]


def test_an_unread_line_says_how_long_it_has_waited(tmp_path: Path) -> None:
    t = [1000.0]
    r = Room(tmp_path / "r.txt", clock=lambda: t[0])
    at = r.push("nobody looks")
    found = trace(r, "r.txt", offset=at, clock=lambda: 1000.0 + 14 * 60 + 5)
    assert found.lines[0].summary == "unread for 14m05s"
    assert found.lines[0].to_json()["age"] == 845.0


def test_a_line_from_an_unlocked_producer_is_first_seen_not_pushed(tmp_path: Path) -> None:
    t = [1000.0]
    r = Room(tmp_path / "r.txt", clock=lambda: t[0])
    with open(tmp_path / "r.txt", "ab") as f:
        f.write(b"printf >> room\n")
    t[0] = 1050.0
    r.status()  # the first ackdeck look
    j = trace(r, "r", offset=0).lines[0]
    assert (j.pushed, j.pushed_at) == (False, 1050.0)


def test_trace_by_text_finds_the_lines_that_hold_it(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    room = str(tmp_path / "r.txt")
    r = Room(room)
    offsets = [r.push(t) for t in ("alpha one", "beta", "alpha two")]
    doc = json.loads(ackdeck(cli_env, "room", "trace", room, "--match", "alpha", "--json").stdout)
    assert doc["matched"] == 2
    assert [(x["offset"], x["text"]) for x in doc["lines"]] == [
        (offsets[0], "alpha one"),
        (offsets[2], "alpha two"),
    ]
    out = ackdeck(cli_env, "room", "trace", room, "--match", "gamma")
    assert out.returncode == 0 and "no line holds 'gamma'" in out.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        (["5"], "no line starts at offset 5"),
        (["999"], "no line starts at offset 999"),
        (["1-0"], "is not a byte offset"),
        ([], "trace needs the line: its OFFSET (as `push --json` prints) or --match TEXT"),
        (["0", "--match", "x"], "an offset or a text to match"),
    ],
)
def test_a_bad_offset_is_one_line_and_exit_1(
    tmp_path: Path, cli_env: dict[str, str], args: list[str], needle: str
) -> None:
    room = str(tmp_path / "r.txt")
    Room(room).push("hello world")
    out = ackdeck(cli_env, "room", "trace", room, *args)
    assert out.returncode == 1 and needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.fixture
def url(redis_server: object) -> str:
    return redis_server.url()  # type: ignore[attr-defined]


def test_a_redis_entry_is_traced_through_its_reads_to_its_ack(
    url: str, cli_env: dict[str, str]
) -> None:
    doc = json.loads(ackdeck(cli_env, "room", "push", url, "from redis", "--json").stdout)
    entry = doc["offset"]
    assert ackdeck(cli_env, "room", "read", url, "--session", "agent").returncode == 0
    line = json.loads(ackdeck(cli_env, "room", "trace", url, entry, "--json").stdout)["lines"][0]
    assert (line["present"], line["text"], line["pushed"]) == (True, "from redis", True)
    assert line["pushed_at"] == int(entry.split("-")[0]) / 1000
    assert [(h["session"], h["door"]) for h in line["reads"]] == [("agent", "cli")]
    assert ackdeck(cli_env, "room", "ack", url, "--session", "agent").returncode == 0
    gone = json.loads(ackdeck(cli_env, "room", "trace", url, entry, "--json").stdout)["lines"][0]
    assert (gone["present"], gone["acked_by"], gone["deliveries"]) == (False, "agent", 1)
    found = json.loads(ackdeck(cli_env, "room", "trace", url, "--match", "redis", "--json").stdout)
    assert found["matched"] == 0  # acked: the room keeps no copy
    out = ackdeck(cli_env, "room", "trace", url, "12")
    assert out.returncode == 1 and "not an entry ID" in out.stderr


def test_service_trace_refuses_both_or_neither(tmp_path: Path) -> None:
    r = Room(tmp_path / "r.txt")
    with pytest.raises(InvalidInput, match="not both"):
        trace(r, "r", offset=0, match="x")
    with pytest.raises(InvalidInput, match="needs the line"):
        trace(r, "r")
