"""MCP conventions clients rely on, and the tools an agent needs to manage what it started.

- `tool_meta(name)`: each tool's title and annotations (hints clients act on: Claude Code asks
  before every tool not marked read-only while in plan mode).
- `wait_output`: `process_output` waiting without blocking the server: short reads, an async
  watch of the run directory between them, a progress notification every few seconds (clients
  reset their request timeouts on progress) and prompt return on cancellation.
- `register`: `process_list`, `process_kill` and `wakes_list`, thin calls into core.
"""

# No `from __future__ import annotations`: the SDK reads tool signatures at runtime.
import os
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from core.agents.mcp_reply import Reply, guard
from core.base.names import check_name
from core.base.timeouts import check_timeout
from core.errors import InvalidInput, ProcessError
from core.watch.reconcile import reconcile_lost

if TYPE_CHECKING:
    from core.agents.mcp_server import AgentDoor

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
}


def tool_meta(name: str) -> dict[str, Any]:
    """`title` and `annotations` keyword arguments for `MCPServer.tool`."""
    return TOOL_META[name]


# ----- process_output that waits politely ------------------------------------------------------
async def wait_output(
    door: "AgentDoor",
    ctx: Context | None,
    name: str,
    filter: str | None,  # noqa: A002 - the tool's argument name
    exclude: bool,
    timeout: float,
) -> "Reply":
    """`door.process_output` with the wait done here: each read is immediate (timeout 0), so
    a cancelled call leaves no reader behind that could later record lines as shown that no
    reply carried; between reads an async watch of the run directory wakes us."""
    from core.watch import procs, shown

    check_name(name, "process")
    timeout = check_timeout(timeout)
    started = time.monotonic()
    deadline = started + timeout
    next_progress = started + PROGRESS_EVERY_S
    leased = False
    with ExitStack() as held:
        while True:
            reply = await anyio.to_thread.run_sync(
                lambda: door.process_output(name, filter, exclude, 0.0)
            )
            now = time.monotonic()
            if reply.data.get("count") or reply.data.get("status") != "running":
                return reply
            if now >= deadline:
                return reply
            info = await anyio.to_thread.run_sync(lambda: procs.get_run(door._home_dir(), name))
            if filter is None and not leased:
                # As in core.watch.output: an unfiltered long poll holds a read lease for its whole
                # wait, so a drain settles (bounded) before it delivers what this read may
                # return. Taking it is a few file operations on a new file (never blocks);
                # the `with` releases it on return, error and cancellation alike.
                held.enter_context(shown.lease(info.run_dir, door.config.session))
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
            await _changed(info.run_dir, until - time.monotonic())


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
class ProcessRow(BaseModel):
    name: str
    run_id: str
    pid: int | None
    status: str
    exit_code: int | None
    started_at: float
    ended_at: float | None
    argv: list[str]
    monitors: list[str]
    matches: int


class ProcessListOut(BaseModel):
    session: str
    processes: list[ProcessRow]


class WakeRow(BaseModel):
    name: str
    kind: str
    pending: int
    lines: list[str]
    dropped: int
    total_matches: int
    delivered_total: int
    superseded_total: int
    status: str
    exit_code: int | None


class WakesListOut(BaseModel):
    session: str
    wakes: list[WakeRow]
    skipped: list[str]


def _row(info: Any) -> ProcessRow:
    return ProcessRow(
        name=info.name,
        run_id=info.run_id,
        pid=info.pid,
        status=info.status,
        exit_code=info.exit_code,
        started_at=info.started_at,
        ended_at=info.ended_at,
        argv=list(info.argv),
        monitors=[m.pattern for m in info.monitors],
        matches=info.matches,
    )


def process_list(door: "AgentDoor", history: bool = False) -> "Reply":
    from core.watch import procs

    session = door.config.session
    reconcile_lost(door._home_dir())  # listings do not write; dead supervisors show as lost
    runs = [
        i
        for i in procs.list_runs(door._home_dir(), latest_only=not history)
        if i.session == session
    ]
    rows = [_row(i) for i in runs]
    data = ProcessListOut(session=session, processes=rows).model_dump()
    if not rows:
        return Reply(f"no processes started by session {session!r}", data)
    text = "\n".join(
        f"{r.name} run {r.run_id}: {r.status}"
        + ("" if r.exit_code is None else f", exit code {r.exit_code}")
        + f" (pid {r.pid}; {len(r.monitors)} monitor(s), {r.matches} match(es))"
        for r in rows
    )
    return Reply(text, data)


def process_kill(door: "AgentDoor", name: str, grace: float = 3.0) -> "Reply":
    from core.watch import procs

    check_name(name, "process")
    if not 0 <= grace <= 60:
        raise InvalidInput("grace must be between 0 and 60 seconds")
    home = door._home_dir()
    current = procs.get_run(home, name)
    if current.session != door.config.session:
        raise ProcessError(
            f"process {name!r} belongs to session {current.session!r}, not "
            f"{door.config.session!r}; only its owner may kill it here"
        )
    # A run that ended may have left children running (`cmd &`): kill stops those too.
    leftovers = current.status != "running" and procs.alive(current)
    info = procs.kill(home, name, grace=grace, run_id=current.run_id)
    row = _row(info)
    code = "" if info.exit_code is None else f", exit code {info.exit_code}"
    verb = "was already" if current.status != "running" else "is now"
    text = f"{name} run {info.run_id} {verb} {info.status}{code}"
    if leftovers:
        left = " (some still live)" if procs.alive(info) else ""
        text += f"; stopped the processes it left running{left}"
    return Reply(text, row.model_dump())


def wakes_list(door: "AgentDoor") -> "Reply":
    from core.watch import wakes

    session = door.config.session
    reconcile_lost(door._home_dir())  # listings do not write; dead supervisors show as lost
    records, skipped = wakes.scan_wakes(door._home_dir(), session)
    rows = [
        WakeRow(
            name=r.name,
            kind=r.kind,
            pending=r.pending,
            lines=[x.text for x in r.lines],
            dropped=r.dropped,
            total_matches=r.total_matches,
            delivered_total=r.delivered_total,
            superseded_total=r.superseded_total,
            status=r.status,
            exit_code=r.notice_exit_code if r.notice_pending else r.exit_code,
        )
        for r in records
    ]
    data = WakesListOut(session=session, wakes=rows, skipped=[str(p) for p in skipped])
    pending = [r for r in rows if r.pending]
    if not pending:
        text = f"no pending wakes for session {session!r}"
    else:
        text = (
            "\n".join(f"{r.name}: {r.pending} pending ({r.kind})" for r in pending)
            + "\nThese are not delivered yet: call wakes_drain to receive them."
        )
    return Reply(text, data.model_dump())


def _arg(description: str) -> Any:
    """A tool argument: described, and strict (no coercion of "yes" into true)."""
    return Field(strict=True, description=description)


def register(server: MCPServer, door: "AgentDoor") -> None:

    @server.tool(
        name="process_list",
        description="Processes this session started (the latest run of each name; history "
        "for every run): status, exit code, pid, monitors and match counts.",
        **tool_meta("process_list"),
    )
    def process_list_tool(
        history: Annotated[bool, _arg("every run, not only the latest")] = False,
    ) -> Annotated[CallToolResult, ProcessListOut]:
        return guard(lambda: process_list(door, history))

    @server.tool(
        name="process_kill",
        description="Stop a process this session started: TERM to its process group, KILL "
        "after grace seconds. For a process that already ended, only stops the children it left "
        "running (if any).",
        **tool_meta("process_kill"),
    )
    async def process_kill_tool(
        name: Annotated[str, _arg("process name")],
        grace: Annotated[float, _arg("seconds between TERM and KILL (0-60)")] = 3.0,
    ) -> Annotated[CallToolResult, ProcessRow]:
        return await anyio.to_thread.run_sync(
            lambda: guard(lambda: process_kill(door, name, grace))
        )

    @server.tool(
        name="wakes_list",
        description="Pending monitor wakes of this session, without delivering them (use "
        "wakes_drain to receive and mark them delivered).",
        **tool_meta("wakes_list"),
    )
    def wakes_list_tool() -> Annotated[CallToolResult, WakesListOut]:
        return guard(lambda: wakes_list(door))
