"""The doors agree: each operation, run through the CLI (`ackdeck … --json`, a real subprocess)
and through the MCP server (the official SDK client over stdio) on identical fresh state,
gives the same JSON: the result's `to_json()` on both, including refusals and errors.

Rooms: both doors run the same steps against the same room path, recreated empty in between,
so even `path` compares as it is. Processes: each door gets its own fresh home (no home path is
in the JSON) and the same working directory. Only what must differ between two real runs is
normalised (`VARIES`): run ids (new per start), pids, and wall-clock timestamps.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ackdeck.core.base.struct import Struct
from ackdeck.core.monitors import wakes as wake_records
from ackdeck.core.service import procs, queue, rooms, wakes
from tests.helpers.cli import ackdeck, clean_env, with_json
from tests.helpers.mcp import call, connect, error_of
from tests.helpers.runs import run_and_cleanup

SESSION = "agent"
# What two real runs cannot share: a run id and a pid are new per start, timestamps come from
# the clock, and `read_rest` is a command line that names the run id. Only their presence
# (None or not) is compared.
VARIES = {"run_id", "pid", "started_at", "ended_at", "last_ack_at", "read_rest"}
# Ages are wall-clock too: both doors must give one (or both None), not the same seconds.
VARIES |= {"in_flight_age", "unread_age", "oldest_pending_age", "oldest_unread_age"}
VARIES |= {"checked_at", "oldest_pending_at", "oldest_unread_at", "read_at"}  # their clock
VARIES |= {"lease_until"}  # a claim's lease ends by the clock
# What only one door has: the MCP door binds each read to an id that any process of the
# session may ack it by (issue 29); a CLI read is bound to no reader, so its read_id is None.
# The key is in both; its value is the door's.
DOOR_OWN = {"read_id"}
ERROR_SHAPE = {"error", "message"}

Step = tuple[list[str], str, dict[str, Any], type[Struct] | None]


def normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (("<varies>" if v is not None else None) if k in VARIES else normal(v))
            for k, v in value.items()
            if k not in DOOR_OWN
        }
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def door_cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`ackdeck --home HOME ARGS` from `cwd`, as a door's caller runs it: no ACKDECK_ setting of
    this process reaches it, and a hook finds an empty JSON object on its stdin."""
    return ackdeck(clean_env(), "--home", str(home), *args, cwd=cwd, timeout=120, input="{}")


def cli_json(home: Path, args: list[str], cwd: Path) -> tuple[int, dict[str, Any]]:
    out = ackdeck(clean_env(), "--home", str(home), *with_json(args), cwd=cwd, timeout=120)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, (args, out.returncode, out.stdout, out.stderr)
    if out.returncode != 0:
        # Errors are still one line on stderr; the JSON is an addition for programs.
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    return out.returncode, json.loads(lines[0])


def json_of(res: Any) -> dict[str, Any]:
    """What an MCP result says to programs: its structured content, or for an error that is no
    tool result the same {error, message} JSON in `_meta` (structured content there would have
    to match the tool's outputSchema)."""
    if res.structured_content is not None:
        return res.structured_content
    return error_of(res)


def check_shape(data: dict[str, Any], shape: type[Struct] | None) -> None:
    """The JSON has exactly the keys its result class declares (or the error shape)."""
    want = ERROR_SHAPE if shape is None else set(shape.SHAPE)
    assert set(data) == want, (sorted(data), sorted(want))


async def run_mcp(home: Path, room: Path, steps: list[Step]) -> list[tuple[bool, Any]]:
    got = []
    async with connect(home, [room], SESSION) as client:
        for _, tool, args, _ in steps:
            res = await call(client, tool, args)
            got.append((res.is_error, json_of(res)))
    return got


# ----- rooms --------------------------------------------------------------------------------------
def fresh_rooms(root: Path) -> Path:
    """An empty directory holding the room (its file and sidecar removed): the same path for
    both doors, so `path` in the JSON compares exactly."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return root / "inbox.txt"


def append_unlocked(room: Path, data: bytes) -> None:
    # A poller that knows nothing about ackdeck appends between the read and the ack.
    with open(room, "ab") as f:
        f.write(data)


def rewrite_behind_ackdecks_back(room: Path) -> None:
    # Someone else rewrites the file: the receipt's bytes can no longer be proven -> stale.
    room.write_bytes(b"rewritten\n")


def room_steps(room: Path) -> list[tuple[Step, Callable[[Path], None] | None]]:
    r = str(room)
    s = ["--session", SESSION]
    return [
        (
            (
                ["room", "push", r, "first"],
                "room_push",
                {"room": "inbox.txt", "text": "first"},
                rooms.Pushed,
            ),
            None,
        ),
        (
            (
                ["room", "push", r, "second"],
                "room_push",
                {"room": "inbox.txt", "text": "second"},
                rooms.Pushed,
            ),
            None,
        ),
        # A cold ack: refused, nothing removed, both lines preserved (the CLI said 0 before).
        ((["room", "ack", r, *s], "room_ack", {}, rooms.Acked), None),
        (
            (["room", "read", r, *s], "room_list_new", {}, rooms.Lines),
            lambda p: append_unlocked(p, b"late \xff\n"),
        ),
        ((["room", "status", r, *s], "room_status", {}, rooms.Status), None),
        ((["room", "ack", r, *s], "room_ack", {}, rooms.Acked), None),
        ((["room", "read", r, *s], "room_list_new", {}, rooms.Lines), rewrite_behind_ackdecks_back),
        ((["room", "ack", r, *s], "room_ack", {}, rooms.Acked), None),  # stale
        ((["room", "ack", r, *s, "--all"], "room_ack", {"all": True}, rooms.Acked), None),
        ((["room", "status", r, *s], "room_status", {}, rooms.Status), None),
        # Errors: one shape on both doors.
        (
            (
                ["room", "push", r, "two\nlines"],
                "room_push",
                {"room": "inbox.txt", "text": "two\nlines"},
                None,
            ),
            None,
        ),
        ((["room", "push", r, ""], "room_push", {"room": "inbox.txt", "text": ""}, None), None),
    ]


async def test_room_operations_give_the_same_json_on_both_doors(tmp_path: Path) -> None:
    root = tmp_path / "rooms"
    home = tmp_path / "home"
    plan = room_steps(root / "inbox.txt")

    room = fresh_rooms(root)
    by_cli = []
    for (args, _, _, shape), after in plan:
        code, data = cli_json(home, args, tmp_path)
        check_shape(data, shape)
        by_cli.append((code, data))
        if after is not None:
            after(room)

    room = fresh_rooms(root)
    by_mcp = []
    async with connect(home, [room], SESSION) as client:
        for (_, tool, args, shape), after in plan:
            res = await call(client, tool, args)
            check_shape(json_of(res), shape)
            by_mcp.append((res.is_error, json_of(res)))
            if after is not None:
                after(room)

    for ((args, tool, _, _), _), (code, c), (is_error, m) in zip(plan, by_cli, by_mcp, strict=True):
        assert normal(c) == normal(m), (args, tool)
        # Failing agrees too, with one deliberate difference: a stale ack removed nothing and
        # loses nothing (the lines come again with the next read), so the CLI exits 0 as
        # before, while MCP flags it as an error so that a model cannot miss the re-read.
        assert (code != 0 or c.get("mode") == "stale") == is_error, (args, code, is_error)

    modes = [c.get("mode") for _, c in by_cli]
    assert modes[2] == "refused" and by_cli[2][1]["preserved"] == 2 and by_cli[2][0] == 3
    assert modes[7] == "stale" and by_cli[7][1]["acked"] == 0
    assert modes[8] == "all" and by_cli[8][1]["lines"] == ["rewritten"]
    assert by_cli[3][1]["lines"] == ["first", "second"]
    assert by_cli[6][1]["lines"] == ["late \ufffd"] and by_cli[6][1]["invalid_utf8"] == [0]
    assert [c["error"] for _, c in by_cli[-2:]] == ["InvalidInput", "InvalidInput"]


# ----- a queue room ------------------------------------------------------------------------------
# Each step: CLI words, MCP tool and arguments, the result class (None: an error), with
# `{1}` / `{2}` standing for the token of the first / second claim of the same run.
QUEUE_STEPS: list[tuple[list[str], str, dict[str, Any], type[Struct] | None]] = [
    (["claim", "{room}", "--session", SESSION], "task_claim", {}, queue.Claimed),
    (["claim", "{room}", "--session", SESSION], "task_claim", {}, queue.Claimed),
    (["extend", "{room}", "{1}", "--lease", "90"], "task_extend", {"token": "{1}", "lease": 90.0},
     queue.Updated),
    (["release", "{room}", "{2}"], "task_release", {"token": "{2}"}, queue.Updated),
    (["done", "{room}", "{1}"], "task_done", {"token": "{1}"}, queue.Updated),
    (["done", "{room}", "{1}"], "task_done", {"token": "{1}"}, None),  # its line left
    (["release", "{room}", "{2}"], "task_release", {"token": "{2}"}, queue.Updated),  # again
    (["done", "{room}", "nonsense"], "task_done", {"token": "nonsense"}, None),
    (["claim", "{room}", "--session", SESSION], "task_claim", {}, queue.Claimed),  # b again
    (["claim", "{room}", "--session", SESSION], "task_claim", {}, queue.Claimed),  # nothing
]  # fmt: skip


def queue_room_for_doors(root: Path) -> Path:
    room = fresh_rooms(root)
    room.write_bytes(b"a\nb\n")
    out = ackdeck(clean_env(), "room", "policy", str(room), "--queue", "on")
    assert out.returncode == 0, out.stderr
    return room


def fill(value: Any, tokens: list[str], room: Path) -> Any:
    if isinstance(value, list):
        return [fill(v, tokens, room) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, tokens, room) for k, v in value.items()}
    if isinstance(value, str):
        value = value.replace("{room}", str(room))
        for i, t in enumerate(tokens, 1):
            value = value.replace(f"{{{i}}}", t)
    return value


def tokens_named(value: Any, tokens: list[str]) -> Any:
    """The JSON with each run's tokens written as `{1}`, `{2}` (their queue ids differ)."""
    if isinstance(value, dict):
        return {k: tokens_named(v, tokens) for k, v in value.items()}
    if isinstance(value, str):
        for i, t in enumerate(tokens, 1):
            value = value.replace(t, f"{{{i}}}")
    return value


async def test_queue_operations_give_the_same_json_on_both_doors(tmp_path: Path) -> None:
    root, home = tmp_path / "rooms", tmp_path / "home"
    runs: list[list[tuple[bool, Any]]] = []
    for door in ("cli", "mcp"):
        room = queue_room_for_doors(root)
        tokens: list[str] = []
        got: list[tuple[bool, Any]] = []
        client_cm = connect(home, [room], SESSION) if door == "mcp" else None
        client = await client_cm.__aenter__() if client_cm is not None else None
        try:
            for args, tool, targs, shape in QUEUE_STEPS:
                if client is None:
                    code, data = cli_json(home, fill(args, tokens, room), tmp_path)
                    failed = code != 0
                else:
                    res = await call(client, tool, fill(targs, tokens, room))
                    failed, data = bool(res.is_error), json_of(res)
                check_shape(data, shape)
                if data.get("claimed") and data["token"] not in tokens:
                    tokens.append(data["token"])
                got.append((failed, tokens_named(data, tokens)))
        finally:
            if client_cm is not None:
                await client_cm.__aexit__(None, None, None)
        runs.append(got)
    cli, mcp = runs
    for step, (c, m) in enumerate(zip(cli, mcp, strict=True)):
        assert c[0] == m[0], (QUEUE_STEPS[step], c, m)
        assert normal(c[1]) == normal(m[1]), QUEUE_STEPS[step]
    assert [c[1].get("line") for c in cli[:2]] == ["a\n", "b\n"]
    assert cli[4][1]["removed"] == 1
    assert cli[5][1]["error"] == "TokenRefused" and cli[7][1]["error"] == "InvalidInput"
    assert (cli[8][1]["line"], cli[8][1]["deliveries"]) == ("b\n", 2)
    assert cli[9][1]["claimed"] is False


# ----- processes and wakes ----------------------------------------------------------------------
def waiter(go: Path, done: Path) -> list[str]:
    # Prints nothing until the test says so, then waits again: the start result (status
    # running, 0 matches) and every later step see the same state on both doors.
    return [
        "sh",
        "-c",
        f'while [ ! -e "{go}" ]; do sleep 0.05; done; echo hello; echo ERROR one; '
        f'while [ ! -e "{done}" ]; do sleep 0.05; done',
    ]


def proc_steps(work: Path, argv: list[str]) -> list[Step]:
    s = ["--session", SESSION]
    return [
        (
            ["run", "job", *s, "--monitor", "ERROR", "--cwd", str(work), "--", *argv],
            "process_start",
            {"name": "job", "argv": argv, "monitor": "ERROR", "cwd": str(work)},
            procs.Run,
        ),
    ]


def later_steps() -> list[Step]:
    s = ["--session", SESSION]
    return [
        (["wakes", "list", *s], "wakes_list", {}, wakes.Wakes),
        (
            ["output", "job", *s, "--filter", "hello"],
            "process_output",
            {"name": "job", "filter": "hello"},
            procs.OutputLines,
        ),
        (["wakes", "drain", *s], "wakes_drain", {}, wakes.Drained),
        (["ps", *s, "--latest"], "process_list", {}, procs.Runs),
        (["kill", "job"], "process_kill", {"name": "job"}, procs.Killed),
        # Errors: one shape on both doors.
        (["output", "nope", *s], "process_output", {"name": "nope"}, None),
        (
            ["output", "job", *s, "--exclude"],
            "process_output",
            {"name": "job", "exclude": True},
            None,
        ),
        (
            ["output", "job", *s, "--filter", "(unclosed"],
            "process_output",
            {"name": "job", "filter": "(unclosed"},
            None,
        ),
        (
            ["run", "bad", *s, "--exclude", "--", "true"],
            "process_start",
            {"name": "bad", "argv": ["true"], "exclude": True},
            None,
        ),
    ]


async def wait_for_wake(home: Path) -> None:
    with anyio.fail_after(60):
        while not any(r.lines for r in wake_records.list_wakes(home, SESSION)):
            await anyio.sleep(0.05)


async def test_process_and_wake_operations_give_the_same_json_on_both_doors(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    results: dict[str, list[tuple[bool, dict[str, Any]]]] = {}
    for door in ("cli", "mcp"):
        home = tmp_path / f"{door}-home"
        home.mkdir()
        # The same argv on both doors: flag files relative to the shared working directory,
        # removed before each door starts.
        go, done = work / "go", work / "done"
        go.unlink(missing_ok=True)
        done.unlink(missing_ok=True)
        first, rest = proc_steps(work, waiter(Path("go"), Path("done"))), later_steps()
        got: list[tuple[bool, dict[str, Any]]] = []
        cleanup = run_and_cleanup(home)
        next(cleanup)
        try:
            if door == "cli":
                for args, _, _, shape in first:
                    code, data = cli_json(home, args, work)
                    check_shape(data, shape)
                    got.append((code != 0, data))
                go.touch()
                await wait_for_wake(home)
                for args, _, _, shape in rest:
                    code, data = cli_json(home, args, work)
                    check_shape(data, shape)
                    got.append((code != 0, data))
            else:
                async with connect(home, [tmp_path / "inbox.txt"], SESSION) as client:
                    for steps, before in ((first, None), (rest, work / "go")):
                        if before is not None:
                            before.touch()
                            await wait_for_wake(home)
                        for _, tool, args, shape in steps:
                            res = await call(client, tool, args)
                            data = json_of(res)
                            check_shape(data, shape)
                            got.append((res.is_error, data))
        finally:
            done.touch()
            with pytest.raises(StopIteration):
                next(cleanup)
        results[door] = got

    steps = proc_steps(work, []) + later_steps()
    for (args, tool, _, _), c, m in zip(steps, results["cli"], results["mcp"], strict=True):
        assert normal(c[1]) == normal(m[1]), (args, tool)
        assert c[0] == m[0], (args, tool, "failed on one door only")
    cli = [data for _, data in results["cli"]]
    assert (cli[0]["status"], cli[0]["matches"], cli[0]["monitors"][0]["pattern"]) == (
        "running",
        0,
        "ERROR",
    )
    assert cli[1]["wakes"][0]["lines"] == ["ERROR one"]
    assert cli[2]["lines"] == ["hello"]
    assert [d["lines"] for d in cli[3]["delivered"]] == [["ERROR one"]]
    assert cli[5]["status"] == "killed" and cli[5]["was"] == "running"
    assert [e["error"] for e in cli[6:]] == [
        "ProcessError",
        "InvalidInput",
        "InvalidInput",
        "InvalidInput",
    ]


# ----- hooks and the dashboard: the same numbers ------------------------------------------------
async def test_hooks_and_the_dashboard_show_the_numbers_cli_and_mcp_show(tmp_path: Path) -> None:
    """One room, two sessions in different states: what the CLI's and MCP's status say is what
    the prompt and bootstrap hooks tell the agent and what the dashboard's rooms table shows
    (its scan, and the cells it renders)."""
    from ackdeck.tui.room_counts import RoomCounter, ScanRequest
    from ackdeck.tui.state import in_flight_total, unread_summary

    home = tmp_path / "home"
    room = fresh_rooms(tmp_path / "rooms")
    s = ["--session", SESSION]
    for i in range(3):
        assert door_cli(home, tmp_path, "room", "push", str(room), f"line {i}").returncode == 0
    assert door_cli(home, tmp_path, "room", "read", str(room), *s).returncode == 0
    for i in range(2):  # arrive after the agent's read: unread for it, in flight: 3
        assert door_cli(home, tmp_path, "room", "push", str(room), f"late {i}").returncode == 0
    other = ["--session", "other"]
    assert door_cli(home, tmp_path, "room", "read", str(room), *other).returncode == 0

    _, by_cli = cli_json(home, ["room", "status", str(room), *s], tmp_path)
    async with connect(home, [room], SESSION) as client:
        by_mcp = (await call(client, "room_status", {})).structured_content
    assert normal(by_mcp) == normal(by_cli)  # the same but for the clock readings and ages
    row = by_cli["rooms"][0]
    assert (row["pending"], row["unread"], row["in_flight"]) == (5, 2, 3)

    # The hooks: the same unread count, from the same service view.
    prompt = door_cli(home, tmp_path, "hooks", "prompt", *s, "--room", str(room))
    assert prompt.returncode == 0, prompt.stderr
    lines = "1 unread line" if row["unread"] == 1 else f"{row['unread']} unread lines"
    assert f"{lines} in room {room}" in prompt.stdout
    boot = door_cli(home, tmp_path, "hooks", "bootstrap", *s, "--room", str(room))
    assert f"  - {room} ({row['unread']} unread)" in boot.stdout.splitlines()

    # The dashboard: its scan's row (the scanner's first look) and the cells drawn from it.
    parts: list = []
    RoomCounter().scan(ScanRequest(home, [room], 0.0), parts.append)
    (seen,) = [r for p in parts for r in p.rows]
    st = seen.status
    assert st is not None
    assert (st.pending, st.acked_total, st.preserved_total, st.epoch) == (
        row["pending"],
        row["acked_total"],
        row["preserved_total"],
        row["epoch"],
    )
    assert {n: (c.in_flight, c.unread) for n, c in st.sessions.items()} == {
        n: (c["in_flight"], c["unread"]) for n, c in row["sessions"].items()
    }
    assert in_flight_total(st) == sum(c["in_flight"] for c in row["sessions"].values())
    assert unread_summary(st) == " ".join(
        f"{n}:{c['unread']:,}" for n, c in sorted(row["sessions"].items())
    )
