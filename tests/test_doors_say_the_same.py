"""The CLI and the MCP server say the same facts of the same result in their texts, not only
in their JSON (tests/test_doors_agree.py): `ackdeck wakes list` said "1 delivered" of a record
while MCP `wakes_list` said "no pending wakes" of the same one (issue 29). Both doors read one
home here; the state is made through the CLI, then each door describes it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers.cli import ackdeck_ok, clean_env
from tests.helpers.mcp import call, connect, text_of
from tests.helpers.wait import eventually

SESSION = "agent"


def cli(home: Path, *args: str) -> str:
    """What `ackdeck --home HOME ARGS` prints, which must succeed; no ACKDECK_ setting of this
    process reaches it (the MCP side is started the same way)."""
    return ackdeck_ok(clean_env(), "--home", str(home), *args, timeout=120).stdout


def settled_wake(home: Path, name: str) -> None:
    """Wait until `name`'s wake record holds its match and its exit (a list taken before the
    exit notice is merged would differ from one taken after)."""

    def settled() -> bool:
        listed = json.loads(cli(home, "wakes", "list", "--session", SESSION, "--json"))
        rows = [w for w in listed["wakes"] if w["name"] == name]
        return (
            bool(rows)
            and rows[0]["status"] != "running"
            and bool(rows[0]["lines"] or rows[0]["notice"])
        )

    eventually(settled, what=f"a settled wake for {name}", every=0.1)


async def test_wakes_list_says_the_same_counts_on_both_doors(phome: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    cli(phome, "run", "build", "--session", SESSION, "--monitor", "ERROR", "--", "sh", "-c",
        "echo 'ERROR: disk full'")  # fmt: skip
    settled_wake(phome, "build")
    cli(phome, "wakes", "drain", "--session", SESSION)  # delivered: nothing pending any more
    async with connect(phome, [room], SESSION) as client:
        delivered_cli = cli(phome, "wakes", "list", "--session", SESSION).rstrip("\n")
        delivered_mcp = text_of(await call(client, "wakes_list"))
        assert "1 delivered" in delivered_cli and "0 pending lines" in delivered_cli
        assert delivered_mcp == delivered_cli

        cli(phome, "run", "test", "--session", SESSION, "--monitor", "FAILED", "--", "sh", "-c",
            "echo 'test_io FAILED'")  # fmt: skip
        settled_wake(phome, "test")
        pending_cli = cli(phome, "wakes", "list", "--session", SESSION).rstrip("\n")
        pending_mcp = text_of(await call(client, "wakes_list"))
    assert "test_io FAILED" in pending_cli
    # The same facts, then this door's next step.
    assert pending_mcp.startswith(pending_cli + "\n"), (pending_mcp, pending_cli)
    assert "wakes_drain" in pending_mcp.removeprefix(pending_cli)


async def test_wakes_list_of_a_session_without_wakes_says_so(phome: Path, tmp_path: Path) -> None:
    async with connect(phome, [tmp_path / "inbox.txt"], SESSION) as client:
        text = text_of(await call(client, "wakes_list"))
    assert cli(phome, "wakes", "list", "--session", SESSION) == ""
    assert text == f"no wakes for session {SESSION!r}"


def numbers(text: str, *names: str) -> dict[str, int]:
    """`{name: N}` for each "N name" the text says (the first time it says it)."""
    found = {}
    for name in names:
        m = re.search(rf"(\d+) {name}\b", text)
        assert m, (name, text)
        found[name] = int(m.group(1))
    return found


async def test_room_status_says_the_same_counts_on_both_doors(phome: Path, tmp_path: Path) -> None:
    room = tmp_path / "inbox.txt"
    for line in ("one", "two", "three"):
        cli(phome, "room", "push", str(room), line)
    cli(phome, "room", "read", str(room), "--session", SESSION)
    cli(phome, "room", "push", str(room), "four")  # arrives meanwhile
    cli(phome, "room", "ack", str(room), "--session", SESSION)  # 3 acked, 1 preserved
    cli(phome, "room", "read", str(room), "--session", SESSION)  # "four" in flight
    cli(phome, "room", "push", str(room), "five")  # unread
    async with connect(phome, [room], SESSION) as client:
        mcp = text_of(await call(client, "room_status"))
    text = cli(phome, "room", "status", str(room), "--session", SESSION)
    mine = next(x for x in text.splitlines() if x.strip().startswith(f"{SESSION}:"))
    said = numbers(text, "pending", "acked", "preserved") | numbers(mine, "in flight", "unread")
    assert said == {"pending": 2, "acked": 3, "preserved": 1, "in flight": 1, "unread": 1}
    assert numbers(mcp, *said) == said, (mcp, text)


async def test_process_list_says_the_same_run_on_both_doors(phome: Path, tmp_path: Path) -> None:
    cli(phome, "run", "job", "--session", SESSION, "--", "sh", "-c", "exit 3")
    eventually(lambda: "exited" in cli(phome, "ps"), what="the run to end", every=0.1)
    async with connect(phome, [tmp_path / "inbox.txt"], SESSION) as client:
        mcp = text_of(await call(client, "process_list"))
    header, row = cli(phome, "ps").splitlines()
    name, run_id, pid, status, code = row.split()[:5]
    assert (name, status, code) == ("job", "exited", "3")
    assert mcp.startswith(f"{name} run {run_id}: {status}, exit code {code} (pid {pid};"), mcp
