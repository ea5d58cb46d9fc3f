"""MCP conventions clients rely on, and the tools an agent needs to manage what it started.

- `tool_meta(name)`: each tool's title and annotations (hints clients act on: Claude Code asks
  before every tool not marked read-only while in plan mode).
- `wait_output`: `process_output` waiting without blocking the server: short reads, an async
  watch of the run directory between them, a progress notification every few seconds (clients
  reset their request timeouts on progress) and prompt return on cancellation.
- `register`: `process_list`, `process_kill` and `wakes_list`, thin calls into core.
"""

# No `from __future__ import annotations`: the SDK reads tool signatures at runtime.
import functools
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from ackdeck.core.base.names import check_name
from ackdeck.core.base.text import counted
from ackdeck.core.base.timeouts import check_timeout
from ackdeck.core.errors import AckdeckError
from ackdeck.core.mcp.delivery import call_delivered, request_key
from ackdeck.core.mcp.reply import Reply, failure, guard, output_model, reply, result
from ackdeck.core.mcp.reply import arg as _arg
from ackdeck.core.service import procs, wakes
from ackdeck.core.service.rooms import REMOVED_UNACKED

if TYPE_CHECKING:
    from ackdeck.core.mcp.server import AgentDoor

# A waiting process_output reports progress this often (and re-checks the run at least as
# often, which also notices a supervisor that died).
PROGRESS_EVERY_S = 5.0
RECHECK_S = 1.0


def _hints(
    title: str,
    *,
    read_only: bool = False,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool = False,
) -> dict[str, Any]:
    return {
        "title": title,
        "annotations": ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=None if read_only else destructive,
            idempotent_hint=None if read_only else idempotent,
            open_world_hint=open_world,
        ),
    }


# Read-only means "changes nothing the user would miss": room_list_new and process_output
# record what they showed (a receipt, a shown range) but change no room and no process.
TOOL_META: dict[str, dict[str, Any]] = {
    "room_list_new": _hints("Read new room lines", read_only=True),
    "room_status": _hints("Room counters", read_only=True),
    "room_ack": _hints("Ack what was read", destructive=True, idempotent=False),
    "room_push": _hints("Push a line to a room", destructive=False, idempotent=False),
    "process_start": _hints(
        "Start a background command", destructive=True, idempotent=False, open_world=True
    ),
    "process_output": _hints("Read process output", read_only=True),
    "process_list": _hints("List my processes", read_only=True),
    "process_kill": _hints("Stop a process", destructive=True, idempotent=True),
    "wakes_list": _hints("List pending wakes", read_only=True),
    "wakes_drain": _hints("Deliver pending wakes", destructive=False, idempotent=False),
    "agents_list": _hints("List agent sessions and their state", read_only=True),
    "messages_list": _hints("List agents' messages and their fate", read_only=True),
    "task_claim": _hints("Claim a queue task", destructive=False, idempotent=False),
    "task_done": _hints("Finish a claimed task", destructive=True, idempotent=True),
    "task_extend": _hints("Renew a task's lease", destructive=False, idempotent=False),
    "task_release": _hints("Give a task back", destructive=False, idempotent=True),
}


def tool_meta(name: str) -> dict[str, Any]:
    """`title` and `annotations` keyword arguments for `MCPServer.tool`."""
    return TOOL_META[name]


def tool_registrar(server: MCPServer) -> Callable[[str, str], Callable[[Any], Any]]:
    """`@tool(name, description)`: registers a tool with its title and annotations."""

    def tool(name: str, description: str) -> Callable[[Any], Any]:
        return server.tool(name=name, description=description, **tool_meta(name))

    return tool


# ----- process_output that waits politely ------------------------------------------------------
async def wait_output(
    door: "AgentDoor",
    ctx: Context | None,
    name: str,
    filter: str | None,  # noqa: A002 - the tool's argument name
    exclude: bool,
    timeout: float,
) -> CallToolResult:
    """`door.process_output` with the wait done here: each read is immediate (timeout 0), so
    a cancelled call leaves no reader behind; between reads an async watch of the run
    directory wakes us. The read that ends the call (lines, an ended run, or the deadline)
    offers its reply and records its lines as shown only once the reply was written
    (core/mcp/delivery.py): a cancelled call records nothing it did not deliver."""
    try:
        check_name(name, "process")
        timeout = check_timeout(timeout)
    except AckdeckError as exc:
        return result(failure(exc))
    started = time.monotonic()
    deadline = started + timeout
    next_progress = started + PROGRESS_EVERY_S
    leased = False
    request_id = "null" if ctx is None else request_key(ctx)

    def final(got: procs.OutputLines) -> bool:
        return bool(got.lines) or got.status != "running" or time.monotonic() >= deadline

    with ExitStack() as held:
        while True:
            out = await call_delivered(
                door.deliveries,
                request_id,
                lambda h: guard(lambda: door.process_output(name, filter, exclude, 0.0, h, final)),
            )
            data = out.structured_content or {}
            if out.is_error or data.get("count") or data.get("status") != "running":
                return out
            now = time.monotonic()
            if now >= deadline:
                return out
            rdir = await anyio.to_thread.run_sync(lambda: door.deck.run_dir(name))
            if filter is None and not leased:
                # As in core.monitors.output: an unfiltered long poll holds a read lease for its
                # whole
                # wait, so a drain settles (bounded) before it delivers what this read may
                # return. Taking it is a few file operations on a new file (never blocks);
                # the `with` releases it on return, error and cancellation alike.
                held.enter_context(door.deck.read_lease(rdir))
                leased = True
            if ctx is not None and now >= next_progress:
                await ctx.report_progress(
                    round(now - started, 1),
                    timeout,
                    f"waiting for output of {name} ({now - started:.0f} of {timeout:g} s)",
                )
                next_progress = now + PROGRESS_EVERY_S
            # At most RECHECK_S per watch: output written between our read and the watcher's
            # start is then picked up by the next read instead of waiting for a later event.
            until = min(deadline, next_progress, time.monotonic() + RECHECK_S)
            await _changed(rdir, until - time.monotonic())


async def wait_ack_reply(
    door: "AgentDoor",
    ctx: Context | None,
    room: str | None,
    text: str,
    session: str | None,
    timeout: float,
) -> "Reply":
    """room_push with wait_ack: push, then wait for that line's ack in blocking chunks of at
    most PROGRESS_EVERY_S (core's watch or XREAD, in a thread that writes nothing, so a
    cancelled call leaves nothing behind), reporting progress between them."""
    timeout = check_timeout(timeout)
    if session is not None:
        check_name(session)
    r, pushed = await anyio.to_thread.run_sync(lambda: door.room_push_wait(room, text))
    where = f"pushed one line to {pushed.room} at stream offset {pushed.offset}"
    started = time.monotonic()
    deadline = started + timeout
    while True:
        chunk = max(0.0, min(PROGRESS_EVERY_S, deadline - time.monotonic()))
        got = await anyio.to_thread.run_sync(
            functools.partial(door.deck.wait_ack, r, pushed, session=session, timeout=chunk),
            abandon_on_cancel=True,
        )
        now = time.monotonic()
        if not got.timed_out or now >= deadline:
            break
        if ctx is not None:
            await ctx.report_progress(
                round(now - started, 1),
                timeout,
                f"waiting for the ack of offset {pushed.offset} ({now - started:.0f} of "
                f"{timeout:g} s)",
            )
    if got.timed_out:
        return reply(got, f"{where}; not acked within {timeout:g} s")
    if got.dead_room is not None:
        return reply(got, f"{where}; it was moved to the dead-letter room {got.dead_room}")
    if got.removed:
        return reply(got, f"{where}; {REMOVED_UNACKED}")
    by = got.acked_by or "an unknown session"
    other = "" if session is None or got.acked_by == session else f" (not {session})"
    return reply(got, f"{where}; acked by {by}{other}")


async def _changed(rdir: Any, seconds: float) -> None:
    import watchfiles

    if seconds <= 0:
        return
    watched = {"output.log", "meta.json"}
    with anyio.move_on_after(seconds):
        async for _ in watchfiles.awatch(
            rdir,
            watch_filter=lambda _c, p: os.path.basename(p) in watched,
            debounce=50,
            step=20,
            recursive=False,
        ):
            return


# ----- the tools an agent needs to manage what it started ----------------------------------------
ProcessListOut = output_model(procs.Runs)
KilledOut = output_model(procs.Killed)
WakesListOut = output_model(wakes.Wakes)


def process_list(door: "AgentDoor", history: bool = False) -> "Reply":
    session = door.config.session
    listed = procs.list_runs(door.deck.home, session=session, latest_only=not history)
    if not listed.runs:
        return reply(listed, f"no processes started by session {session!r}")
    text = "\n".join(
        f"{r.name} run {r.run_id}: {r.status}"
        + ("" if r.exit_code is None else f", exit code {r.exit_code}")
        + f" (pid {r.pid}; {counted(len(r.monitors), 'monitor')}, {counted(r.matches, 'match')})"
        for r in listed.runs
    )
    return reply(listed, text)


def process_kill(
    door: "AgentDoor", name: str | None, run_id: str | None = None, grace: float = 3.0
) -> "Reply":
    done = procs.kill(door.deck.home, name, run_id=run_id, grace=grace, session=door.config.session)
    info = done
    code = "" if info.exit_code is None else f", exit code {info.exit_code}"
    verb = "was already" if done.was != "running" else "is now"
    text = f"{info.name} run {info.run_id} {verb} {info.status}{code}"
    if done.leftovers:
        left = " (some still live)" if done.leftovers_alive else ""
        text += f"; stopped the processes it left running{left}"
    return reply(done, text)


def wakes_list(door: "AgentDoor") -> "Reply":
    session = door.config.session
    listed = wakes.list_wakes(door.deck.home, session)
    # The facts in the CLI's words (`ackdeck wakes list`), from the same result; the next step
    # is this door's own.
    text = listed.text() or f"no wakes for session {session!r}"
    if listed.next is not None:
        text += f"\n{listed.next}"
    return reply(listed, text)


def register(server: MCPServer, door: "AgentDoor") -> None:
    tool = tool_registrar(server)

    @tool(
        "process_list",
        "Processes this session started (the latest run of each name and every run still "
        "running; history for every run): status, exit code, pid, monitors and match counts.",
    )
    def process_list_tool(
        history: Annotated[bool, _arg("every run, not only the latest")] = False,
    ) -> Annotated[CallToolResult, ProcessListOut]:
        return guard(lambda: process_list(door, history))

    @tool(
        "process_kill",
        "Stop a process this session started, named by name (its running run, else its "
        "latest) or by run_id (any run, as process_list shows it): TERM to its process group, "
        "KILL after grace seconds. For a run that already ended, only stops the children it "
        "left running (if any).",
    )
    async def process_kill_tool(
        name: Annotated[str | None, _arg("process name (or give run_id)")] = None,
        run_id: Annotated[str | None, _arg("a run id from process_list (or give name)")] = None,
        grace: Annotated[float, _arg("seconds between TERM and KILL (0-60)")] = 3.0,
    ) -> Annotated[CallToolResult, KilledOut]:
        return await anyio.to_thread.run_sync(
            lambda: guard(lambda: process_kill(door, name, run_id, grace))
        )

    @tool(
        "wakes_list",
        "Pending monitor wakes of this session, without delivering them (use "
        "wakes_drain to receive and mark them delivered).",
    )
    def wakes_list_tool() -> Annotated[CallToolResult, WakesListOut]:
        return guard(lambda: wakes_list(door))
