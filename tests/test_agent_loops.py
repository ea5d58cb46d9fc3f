"""Delivered means the model saw it: ackdeck inside real agent loops (issue 29).

Real Claude Code (`claude -p`), Codex CLI (`codex exec`) and Gemini CLI (`gemini -p`) run
offline against a scripted stand-in of their model API (tests/helpers/model_stub.py), with
ackdeck as their stdio MCP server (and, for Claude Code, ackdeck's hooks installed). The script
is what a model does: load the tools where the client defers them (ToolSearch, tool_search),
call room_list_new, then room_ack, then stop; a producer appends a line between the read and
the ack. What is asserted is what the *model* received (the tool result in the next request
body, after the client cut, persisted or wrapped it) and the bytes left on disk: the ack
removes exactly the lines the model saw whole, and the line pushed meanwhile survives.

Each (client, room) loop runs once per worker and is shared by the tests that look at it.
The clients come from .cache/npm (`make npm-cache`); without one, its tests skip with one line.
What each client shows its model, and from what size it cuts or persists a result, is in
docs/reference/agent-clients.md.

Tools on the first turn: Codex is configured from the README's own TOML block (so the test
follows the README), Claude Code with `--mcp-config` (the servers `claude -p` waits for; a
project `.mcp.json` races its start-up). `make test` checks FIRST_TURN_RUNS runs per client;
`make soak` runs the soak-marked variant ACKDECK_FIRST_TURN_RUNS times (20). Both must hold
with both cores busy (the suite runs on two workers).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import agent_clients as clients
from tests.helpers.agent_clients import Run, Setup
from tests.helpers.model_stub import Call, ModelStub, Say, Search, Step
from tests.helpers.paths import REPO

PROMPT = "Handle the notifications waiting in your ackdeck inbox, then stop."
LATE = "[ops] deploy-bot: arrived between the read and the ack"
TOOLS = (
    "room_list_new",
    "room_ack",
    "room_push",
    "room_status",
    "process_start",
    "process_output",
    "process_list",
    "process_kill",
    "wakes_list",
    "wakes_drain",
)
SMALL, BIG = 3, 2000
FIRST_TURN_RUNS = 3
SOAK_FIRST_TURN_RUNS = int(os.environ.get("ACKDECK_FIRST_TURN_RUNS", "20"))


def call(client: str, tool: str, before: Callable[[], None] | None = None) -> Call:
    """The model's call of an ackdeck tool, named as each client lists it."""
    if client == "claude":
        return Call(f"mcp__ackdeck__{tool}", {}, before=before)
    if client == "codex":
        return Call(tool, {}, namespace="mcp__ackdeck", before=before)
    return Call(f"mcp_ackdeck_{tool}", {}, before=before)


def loading(client: str) -> list[Step]:
    """What a model does first to get deferred tools' schemas (Gemini CLI defers nothing)."""
    if client == "claude":
        names = ",".join(f"mcp__ackdeck__{t}" for t in ("room_list_new", "room_ack"))
        return [Call("ToolSearch", {"query": f"select:{names}", "max_results": 5})]
    if client == "codex":
        return [Search("ackdeck room_list_new room_ack", limit=20)]
    return []


def drive(client: str, s: Setup, url: str) -> Run:
    if client == "claude":
        return clients.claude(s, url, PROMPT)
    if client == "codex":
        return clients.codex(s, url, PROMPT)
    return clients.gemini(s, url, PROMPT)


@dataclass
class Loop:
    """One read -> push -> ack -> stop run: what the model received and what is left."""

    client: str
    run: Run
    lines: list[str]  # the room's lines before the run
    read_view: str  # room_list_new's result as the model received it
    ack_view: str  # room_ack's result as the model received it
    left: list[str]  # the room's lines after the run
    errors: list[str]  # a producer step that failed

    @property
    def seen(self) -> set[str]:
        return seen_whole(self.read_view, self.lines)

    @property
    def removed(self) -> set[str]:
        return set(self.lines) - set(self.left)


def seen_whole(view: str, lines: list[str]) -> set[str]:
    """The lines that appear whole in what the model received: as a JSON string (structured
    content, also escaped once inside a persisted preview) or as a line of text."""
    found = set()
    for line in lines:
        quoted = json.dumps(line)
        if quoted in view or json.dumps(quoted)[1:-1] in view or f"\n{line}\n" in view:
            found.add(line)
    return found


def run_loop(client: str, root: Path, n: int) -> Loop:
    s = Setup(root).make()
    lines = [f"[ops] bot: event {i:05d} ok" for i in range(n)]
    s.room.write_text("".join(f"{line}\n" for line in lines))

    def producer() -> None:  # between the model's read and its ack
        with open(s.room, "a") as f:
            f.write(LATE + "\n")

    read, ack = call(client, "room_list_new"), call(client, "room_ack", before=producer)
    with ModelStub([*loading(client), read, ack, Say("done")]) as stub:
        run = drive(client, s, stub.url)
    assert run.returncode == 0, (client, run.stdout[-2000:], run.stderr[-2000:])
    return Loop(
        client,
        run,
        lines,
        stub.result_of(read),
        stub.result_of(ack),
        s.room.read_text().splitlines(),
        stub.errors,
    )


_loops: dict[tuple[str, int], Loop] = {}


@pytest.fixture(scope="module")
def loop_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agent-loops")


def loop(client: str, n: int, root: Path) -> Loop:
    clients.need_client(client)
    if (client, n) not in _loops:
        _loops[client, n] = run_loop(client, root / f"{client}-{n}", n)
    return _loops[client, n]


# ----- a small room: the whole loop --------------------------------------------------------------
@pytest.mark.parametrize("client", ["claude", "codex", "gemini"])
def test_line_pushed_between_read_and_ack_survives_and_the_ack_removes_what_the_model_saw(
    client: str, loop_root: Path
) -> None:
    lp = loop(client, SMALL, loop_root)
    assert lp.errors == []
    assert lp.seen == set(lp.lines), lp.read_view  # the model got every line of the read
    assert lp.left == [LATE]  # exactly those removed, the late line kept, byte for byte
    assert re.search(r"\backed\b", lp.ack_view) and "3" in lp.ack_view, lp.ack_view


# ----- a big room: the read is larger than what some clients show their model ----------------
# Each client once showed its model only part of a big read while the ack removed all of it
# (Claude Code: a persisted-output stub; Codex and Gemini CLI: the middle cut out).
BIG_ROOM = ["claude", "codex", "gemini"]


@pytest.mark.parametrize("client", BIG_ROOM)
def test_big_room_ack_removes_only_lines_that_reached_the_model_whole(
    client: str, loop_root: Path
) -> None:
    lp = loop(client, BIG, loop_root)
    assert lp.errors == []
    assert LATE in lp.left
    assert lp.removed, "the ack removed nothing"
    unseen = lp.removed - lp.seen
    assert not unseen, (
        f"{client}: the ack removed {len(lp.removed)} lines, {len(unseen)} of which the model "
        f"never saw whole (it saw {len(lp.seen)}; what it got began {lp.read_view[:300]!r})"
    )
    assert lp.removed == lp.seen


# ----- the structured view carries the guidance ----------------------------------------------
# Claude Code and Codex show the model only the structured content: it must name the next call
# and the count that waits (Gemini CLI shows the text, which must say the same).
GUIDANCE = ["claude", "codex", "gemini"]


@pytest.mark.parametrize("client", GUIDANCE)
def test_the_model_is_told_how_many_lines_wait_and_what_to_call_next(
    client: str, loop_root: Path
) -> None:
    small = loop(client, SMALL, loop_root)
    # After the read: act, then room_ack.
    assert "room_ack" in small.read_view, small.read_view
    # After the ack, the late line waits: say so, and to read it with room_list_new.
    assert "room_list_new" in small.ack_view, small.ack_view
    assert re.search(r"\b1 line|\"(?:remaining|waiting|unread)\": *1\b", small.ack_view)
    # A read that left lines behind says how many, and to read again.
    big = loop(client, BIG, loop_root)
    waiting = len(big.lines) - len(big.seen)
    assert waiting > 0 and "room_list_new" in big.read_view, big.read_view[-600:]
    assert re.search(rf"\b{waiting}\b", big.read_view), (waiting, big.read_view[-600:])


# ----- tools ready on the first turn, configured as the README says ------------------------------
def readme_codex_server_keys() -> dict[str, object]:
    """The `[mcp_servers.ackdeck]` keys the README's Codex block sets beside command and args
    (e.g. `required = true`), so the test configures Codex exactly as a newcomer would."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"\*\*Codex CLI\*\*.*?```toml\n(.*?)```", text, re.S)
    assert block, "the README has no Codex TOML block"
    server = tomllib.loads(block.group(1))["mcp_servers"]["ackdeck"]
    return {k: v for k, v in server.items() if k not in ("command", "args", "env")}


def first_turn_offers_ackdeck(client: str, root: Path) -> bool:
    s = Setup(root).make()
    with ModelStub([Say("done")]) as stub:
        if client == "claude":
            run = clients.claude(s, stub.url, PROMPT)
        else:
            run = clients.codex(s, stub.url, PROMPT, server_keys=readme_codex_server_keys())
    assert run.returncode == 0, (client, run.stderr[-2000:])
    first = json.dumps(stub.turns()[0])
    if client == "claude":  # named in the deferred-tools text, or loaded
        return all(f"mcp__ackdeck__{t}" in first for t in TOOLS)
    # Codex: the namespace loaded in `tools`, or listed among the deferred namespaces
    return '"mcp__ackdeck"' in first or "- mcp__ackdeck:" in first


def check_first_turns(client: str, tmp_path: Path, runs: int) -> None:
    clients.need_client(client)
    misses = [i for i in range(runs) if not first_turn_offers_ackdeck(client, tmp_path / str(i))]
    assert not misses, f"{client}: no ackdeck tools in the first model request, runs {misses}"


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_tools_are_in_the_first_model_request(client: str, tmp_path: Path) -> None:
    check_first_turns(client, tmp_path, FIRST_TURN_RUNS)


@pytest.mark.soak
@pytest.mark.parametrize("client", ["claude", "codex"])
def test_tools_are_in_the_first_model_request_every_time(client: str, tmp_path: Path) -> None:
    check_first_turns(client, tmp_path, SOAK_FIRST_TURN_RUNS)


# ----- issue 42, class 7: a reply budget is a ceiling ---------------------------------------------
def test_a_small_max_mcp_output_tokens_is_never_exceeded_and_what_was_withheld_is_not_recorded(
    tmp_path: Path,
) -> None:
    # Claude Code shows its model nothing of a result over MAX_MCP_OUTPUT_TOKENS ("exceeds
    # maximum allowed tokens"). At 200 tokens ackdeck's 1,000-character floor made the read
    # bigger than that: the model got the error, and the ack that followed removed the lines.
    # Now the server keeps under 3 characters a token; no line fits, and it says so.
    clients.need_client("claude")
    s = Setup(tmp_path).make()
    lines = [f"[ops] bot: event {i:05d} ok" for i in range(40)]
    s.room.write_text("".join(f"{line}\n" for line in lines))
    read, ack = call("claude", "room_list_new"), call("claude", "room_ack")
    with ModelStub([*loading("claude"), read, ack, Say("done")]) as stub:
        run = clients.claude(s, stub.url, PROMPT, extra_env={"MAX_MCP_OUTPUT_TOKENS": "200"})
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    view = stub.result_of(read)
    assert "exceeds maximum allowed tokens" not in view, view[:500]
    assert "no line fits one reply" in view and "MAX_MCP_OUTPUT_TOKENS=200" in view, view[:500]
    left = s.room.read_text().splitlines()
    assert left == lines  # nothing was recorded as read, so the ack removed nothing
    assert "refused" in stub.result_of(ack)
