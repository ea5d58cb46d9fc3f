"""The agents' door: a stdio MCP server (official `mcp` SDK) over the same core paths as the CLI.

Layers, so the decisions can be tested without the SDK:
- `resolve_room` (pure): which configured room a tool argument names; nothing else is reachable.
- `AgentDoor`: one method per tool, each a thin call into core returning a `Reply` (text for
  the model, structured data for programs, and whether it is an error).
- `build_server`: registers those methods as MCP tools; an error `Reply` (and every
  `AckdeckError`) becomes an `isError` result with a one-line text, never a protocol error.

The server holds no state of its own: receipts, cursors and wakes live in files, so a
restarted server (or the CLI) continues exactly where the previous one stopped.
"""

# No `from __future__ import annotations` here: the SDK reads tool signatures at runtime, and
# their Annotated descriptions are built from this server's configured rooms (closure values).
import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, Field, ValidationError

from core.agents.mcp_manage import register as register_manage_tools
from core.agents.mcp_manage import tool_meta, wait_output
from core.agents.mcp_reply import Reply, guard_async
from core.agents.mcp_reply import guard as _guard
from core.agents.mcp_reply import one_line as _one_line
from core.agents.mcp_reply import result as _result
from core.base.names import check_name, room_path
from core.base.timeouts import MAX_WAIT, check_timeout
from core.errors import ColdAck, InvalidInput
from core.inbox.room_backend import ReadView, RoomBackend, open_room
from core.inbox.room_url import RedisAddress, is_url, parse_redis_url

Clock = Callable[[], float]

# process_output may block this long at most; a longer wait belongs in a monitor (wakes).
MAX_OUTPUT_TIMEOUT = MAX_WAIT
# Text of output lines one process_output reply carries at most (clients cut longer tool
# results, and a line that was cut was not shown). The rest waits for the next call.
MAX_REPLY_TEXT = 48 << 10


# ----- configuration and room resolution (pure) --------------------------------------------
@dataclass(frozen=True)
class DoorConfig:
    session: str
    rooms: tuple[Path | RedisAddress, ...]  # a file, or a redis room (its password kept hidden)
    home: str | None = None  # None: core.base.home.resolve_home picks $ACKDECK_HOME or ~/.ackdeck

    @classmethod
    def make(
        cls, session: str, rooms: Sequence[str | os.PathLike[str]], home: str | None = None
    ) -> "DoorConfig":
        check_name(session)
        if not rooms:
            raise InvalidInput(
                "configure at least one room (--room PATH); the first is the default"
            )
        seen: list[Path | RedisAddress] = []
        for r in rooms:
            if is_url(r):
                address = parse_redis_url(str(r))
                if address not in seen:
                    seen.append(address)
                continue
            p = _normal(r)
            if p.name in ("", ".", "..") or p.is_dir():
                raise InvalidInput(f"room {str(r)!r} is a directory, not a notification file")
            if p not in seen:
                seen.append(p)
        return cls(session, tuple(seen), home)


def _normal(path: str | os.PathLike[str]) -> Path:
    text = os.fspath(path)
    if "\0" in text:
        raise InvalidInput("room path contains a NUL byte")
    # The directory as the kernel resolves it (`link/..`); the room itself is never chased.
    return room_path(text)


def resolve_room(
    rooms: Sequence[Path | RedisAddress], requested: str | None
) -> Path | RedisAddress:
    """The configured room that `requested` names: its path (as configured or absolute) or its
    basename. None means the default (first) room. Anything else is rejected, so an agent can
    never point the server at an arbitrary file."""
    if requested is None or requested == "":
        return rooms[0]
    if "\0" in requested:
        raise InvalidInput("room name contains a NUL byte")
    if is_url(requested):
        # Addresses compare without their password, so the shown URL names the room too.
        wanted: Path | RedisAddress = parse_redis_url(requested, {})
        if wanted in rooms:
            return rooms[rooms.index(wanted)]
    elif "/" in requested:
        wanted = _normal(requested)
        if wanted in rooms:
            return wanted
    else:
        by_name = [r for r in rooms if r.name == requested]
        if len(by_name) == 1:
            return by_name[0]
        if len(by_name) > 1:
            raise InvalidInput(
                f"room {requested!r} is ambiguous; use one of the full paths: "
                + ", ".join(str(r) for r in by_name)
            )
    raise InvalidInput(
        f"room {requested[:200]!r} is not configured for this server; use one of: "
        + ", ".join(_label(rooms, r) for r in rooms)
    )


def _label(rooms: Sequence[Path | RedisAddress], room: Path | RedisAddress) -> str:
    """Basename when it identifies the room unambiguously, else the full path."""
    return room.name if sum(r.name == room.name for r in rooms) == 1 else str(room)


def _fit_reply(lines: Sequence[bytes]) -> int:
    """How many lines, from the first, fit in one reply (always at least one, so a single long
    line still gets through)."""
    size = 0
    for i, line in enumerate(lines):
        size += len(line) + 1
        if size > MAX_REPLY_TEXT and i > 0:
            return i
    return len(lines)


def _text(line: bytes) -> str:
    # Bytes are the truth on disk; they are decoded, with replacement, only to be shown.
    return line.decode("utf-8", errors="replace")


# ----- structured outputs (published as each tool's outputSchema) ---------------------------
class ListNewOut(BaseModel):
    room: str
    path: str
    lines: list[str]
    count: int
    start: int | str  # a byte offset (file room) or an entry ID (redis room)
    end: int | str
    epoch: int


class AckOut(BaseModel):
    room: str
    path: str
    mode: str
    acked: int
    preserved: int
    message: str
    lines: list[str] | None = None


class PushOut(BaseModel):
    room: str
    path: str
    offset: int | str


class RoomStatusOut(BaseModel):
    room: str
    path: str
    default: bool
    exists: bool
    pending: int
    partial_bytes: int
    acked_total: int
    preserved_total: int
    pushed_total: int
    epoch: int
    last_ack_at: float | None
    in_flight: int
    unread: int
    late_total: int = 0
    held_open: int = 0


class StatusOut(BaseModel):
    session: str
    rooms: list[RoomStatusOut]


class MonitorOut(BaseModel):
    pattern: str
    exclude: bool
    cooldown_ms: int
    max_events: int | None


class ProcessStartOut(BaseModel):
    name: str
    run_id: str
    pid: int | None
    status: str
    argv: list[str]
    cwd: str
    session: str
    monitors: list[MonitorOut]


class OutputOut(BaseModel):
    name: str
    run_id: str
    status: str
    exit_code: int | None
    lines: list[str]
    count: int
    more: bool = False  # lines beyond the reply bound wait for the next call


class DeliveryOut(BaseModel):
    name: str
    run_id: str
    kind: str
    filter: str | None
    exclude: bool
    lines: list[str]
    total_matches: int
    status: str
    exit_code: int | None
    dropped: int = 0  # matched lines the cap dropped unseen; read them with `read_rest`
    read_rest: str | None = None


class DrainOut(BaseModel):
    session: str
    delivered: list[DeliveryOut]
    superseded: int
    pending: int
    skipped: list[str]


# ----- the tools, independent of the SDK -------------------------------------------------------
class AgentDoor:
    """One method per MCP tool. Each validates its arguments, makes one call into core and
    words the result for a model. Errors are raised as AckdeckError (or returned as an error
    Reply when there is structured data worth keeping, e.g. a refused ack's counts)."""

    def __init__(self, config: DoorConfig, *, clock: Clock = time.time) -> None:
        self.config = config
        self._clock = clock
        self._home: Path | None = None
        # Which reader this server is: receipts from room_list_new carry it, and room_ack
        # uses only those (a server started anew refuses its predecessor's receipts).
        self._reader = f"mcp:{os.getpid()}:{secrets.token_hex(8)}"

    # -- rooms ---------------------------------------------------------------------------
    def _room(self, requested: str | None) -> tuple[RoomBackend, str]:
        path = resolve_room(self.config.rooms, requested)
        return open_room(path, clock=self._clock), _label(self.config.rooms, path)

    def room_list_new(self, room: str | None = None) -> Reply:
        r, label = self._room(room)
        replies: list[Reply] = []
        # The reply is built before the receipt is stored (recorded only once delivered as far
        # as this process can see; the SDK writes it after we return). The receipt is bound
        # to this server instance: if the reply is lost with the server, no later server can
        # ack lines it never handed out.
        r.read(
            self.config.session,
            reader=self._reader,
            deliver=lambda result: replies.append(self._list_reply(r, label, result)),
        )
        return replies[0]

    def _list_reply(self, r: RoomBackend, label: str, result: ReadView) -> Reply:
        lines = [_text(x) for x in result.lines]
        data = ListNewOut(
            room=label,
            path=str(r.path),
            lines=lines,
            count=len(lines),
            start=result.start,
            end=result.end,
            epoch=result.epoch,
        ).model_dump()
        if not lines:
            return Reply(f"no new lines in {label} ({r.path}); nothing to ack", data)
        head = (
            f"{len(lines)} new line(s) in {label} ({r.path}), "
            f"stream bytes [{result.start}, {result.end}) epoch {result.epoch}:"
        )
        tail = (
            f"When you have acted on them, call room_ack (room {label!r}): it removes exactly "
            "these lines and keeps anything that arrived since."
        )
        return Reply("\n".join([head, *lines, tail]), data)

    def room_ack(self, room: str | None = None, all: bool = False) -> Reply:  # noqa: A002
        r, label = self._room(room)
        session = self.config.session
        try:
            result = r.ack(session, all=all, reader=self._reader)
        except ColdAck:
            unread = self._unread(r)
            data = AckOut(
                room=label,
                path=str(r.path),
                mode="refused",
                acked=0,
                preserved=unread,
                message="no unacked room_list_new by this session",
            ).model_dump()
            return Reply(
                f"refused: session {session!r} has no unacked room_list_new of {label} "
                f"({unread} unread line(s)); nothing was acked (acked 0, preserved {unread}). "
                f"Call room_list_new, act on the lines, then room_ack; or call room_ack with "
                f"all: true to ack every line and get them back.",
                data,
                error=True,
            )
        lines = None if result.lines is None else [_text(x) for x in result.lines]
        data = AckOut(
            room=label,
            path=str(r.path),
            mode=result.mode,
            acked=result.acked,
            preserved=result.preserved,
            message=result.message,
            lines=lines,
        ).model_dump()
        counts = f"acked {result.acked} line(s), preserved {result.preserved} line(s)"
        if result.mode in ("stale", "refused"):
            # Nothing was removed and the agent must re-read: make it impossible to miss.
            return Reply(
                f"{result.mode}: {result.message} ({counts}). Call room_list_new again, "
                "then room_ack.",
                data,
                error=True,
            )
        text = f"{result.mode}: {counts} in {label}."
        if result.mode == "noop":
            text = f"noop: {result.message} ({counts} in {label})."
        if lines:
            text += " The acked lines:\n" + "\n".join(lines)
        elif lines is not None:
            text += " The room had no complete lines."
        if result.preserved:
            text += (
                f"\n{result.preserved} line(s) remain in {label}: call room_list_new to read them."
            )
        return Reply(text, data)

    def _unread(self, r: RoomBackend) -> int:
        st = r.status()
        mine = st.sessions.get(self.config.session)
        return mine.unread if mine is not None else st.pending

    def room_push(self, room: str, text: str) -> Reply:
        r, label = self._room(room)
        offset = r.push(text)
        data = PushOut(room=label, path=str(r.path), offset=offset).model_dump()
        return Reply(f"pushed one line to {label} at stream offset {offset}", data)

    def room_status(self, room: str | None = None) -> Reply:
        # Without a room: every configured room (read-only, and how an agent discovers them).
        targets = (
            list(self.config.rooms)
            if room is None or room == ""
            else [resolve_room(self.config.rooms, room)]
        )
        rows: list[RoomStatusOut] = []
        for path in targets:
            st = open_room(path, clock=self._clock).status()
            mine = st.sessions.get(self.config.session)
            rows.append(
                RoomStatusOut(
                    room=_label(self.config.rooms, path),
                    path=str(path),
                    default=path == self.config.rooms[0],
                    exists=st.exists,
                    pending=st.pending,
                    partial_bytes=st.partial_bytes,
                    acked_total=st.acked_total,
                    preserved_total=st.preserved_total,
                    pushed_total=st.pushed_total,
                    epoch=st.epoch,
                    last_ack_at=st.last_ack_at,
                    in_flight=mine.in_flight if mine is not None else 0,
                    unread=mine.unread if mine is not None else st.pending,
                    late_total=st.late_total,
                    held_open=st.held_open,
                )
            )
        text = "\n".join(
            f"{row.room}{' (default)' if row.default else ''}: {row.unread} unread, "
            f"{row.in_flight} in flight (read, not acked), {row.pending} pending, "
            f"{row.acked_total} acked, {row.preserved_total} preserved"
            + ("" if row.exists else " [file does not exist yet]")
            for row in rows
        )
        data = StatusOut(session=self.config.session, rooms=rows).model_dump()
        return Reply(text, data)

    # -- processes and wakes ---------------------------------------------------------------
    def _home_dir(self) -> Path:
        if self._home is None:
            from core.base.home import resolve_home

            self._home = resolve_home(self.config.home)
        return self._home

    def process_start(
        self,
        name: str,
        argv: list[str],
        monitor: str | None = None,
        exclude: bool = False,
        cooldown_ms: int | None = None,
        max_events: int | None = None,
        cwd: str | None = None,
    ) -> Reply:
        from core.watch import procs

        check_name(name, "process")
        if not argv:
            raise InvalidInput('argv must name a command, e.g. ["pytest", "-x"]')
        if monitor is None and (exclude or cooldown_ms is not None or max_events is not None):
            raise InvalidInput("exclude, cooldown_ms and max_events need a monitor regex")
        monitors: list[procs.MonitorSpec] = []
        if monitor is not None:
            spec_kw: dict[str, Any] = {"exclude": exclude, "max_events": max_events}
            if cooldown_ms is not None:
                spec_kw["cooldown_ms"] = cooldown_ms
            monitors.append(procs.MonitorSpec(monitor, **spec_kw))
        info = procs.start(
            self._home_dir(),
            name,
            list(argv),
            session=self.config.session,
            monitors=monitors,
            cwd=cwd,
        )
        data = ProcessStartOut(
            name=info.name,
            run_id=info.run_id,
            pid=info.pid,
            status=info.status,
            argv=list(info.argv),
            cwd=info.cwd,
            session=info.session,
            monitors=[
                MonitorOut(
                    pattern=m.pattern,
                    exclude=m.exclude,
                    cooldown_ms=m.cooldown_ms,
                    max_events=m.max_events,
                )
                for m in info.monitors
            ],
        ).model_dump()
        watch = ""
        if info.monitors:
            m = info.monitors[0]
            watch = (
                f"; monitor {'excluding' if m.exclude else 'matching'} {m.pattern!r} wakes "
                f"session {info.session!r} (collect with wakes_drain)"
            )
        return Reply(
            f"started {info.name} run {info.run_id} (pid {info.pid}, {info.status}){watch}. "
            "Read its output with process_output.",
            data,
        )

    def process_output(
        self,
        name: str,
        filter: str | None = None,  # noqa: A002 - the tool's argument name
        exclude: bool = False,
        timeout: float = 0.0,
    ) -> Reply:
        from core.watch.output import read_output

        check_name(name, "process")
        timeout = check_timeout(timeout)
        if exclude and filter is None:
            raise InvalidInput("exclude inverts a filter; give filter as well")
        offered = [0]

        def deliver(r: Any) -> int:
            offered[0] = len(r.lines)
            return _fit_reply(r.lines)

        res = read_output(
            self._home_dir(),
            name,
            self.config.session,
            filter=filter,
            exclude=exclude,
            timeout=timeout,
            deliver=deliver,
        )
        lines = [_text(x) for x in res.lines]
        more = len(lines) < offered[0]
        data = OutputOut(
            name=res.name,
            run_id=res.run_id,
            status=res.status,
            exit_code=res.exit_code,
            lines=lines,
            count=len(lines),
            more=more,
        ).model_dump()
        state = res.status if res.exit_code is None else f"{res.status}, exit code {res.exit_code}"
        head = f"{res.name} run {res.run_id} ({state}): {len(lines)} new line(s)"
        if filter is not None:
            head += f" {'not ' if exclude else ''}matching {filter!r}"
        body = [head + (":" if lines else ""), *lines]
        if more:
            waiting = offered[0] - len(lines)
            body.append(f"({waiting} more line(s) waiting: call process_output again)")
        return Reply("\n".join(body), data)

    def wakes_drain(self) -> Reply:
        from core.watch import wakes
        from core.watch.reconcile import reconcile_lost

        reconcile_lost(self._home_dir())  # a dead supervisor is delivered as monitor-lost
        result = wakes.drain(self._home_dir(), self.config.session)
        data = DrainOut(
            session=self.config.session,
            delivered=[
                DeliveryOut(
                    name=d.name,
                    run_id=d.run_id,
                    kind=d.kind,
                    filter=d.filter,
                    exclude=d.exclude,
                    lines=[w.text for w in d.lines],
                    total_matches=d.total_matches,
                    status=d.status,
                    exit_code=d.exit_code,
                    dropped=d.dropped,
                    read_rest=wakes.read_rest(d) if d.dropped else None,
                )
                for d in result.delivered
            ],
            superseded=result.superseded,
            pending=result.pending,
            skipped=[str(p) for p in result.skipped],
        ).model_dump()
        text = wakes.format_wake_text(result).strip()
        if not text:
            text = f"no wakes for session {self.config.session!r}"
        return Reply(text, data)


# ----- the MCP adapter -----------------------------------------------------------------------
def _instructions(config: DoorConfig) -> str:
    rooms = ", ".join(_label(config.rooms, r) for r in config.rooms)
    return (
        f"ackdeck inbox for session {config.session!r}. Rooms: {rooms} (the first is the "
        "default). To handle notifications: call room_list_new, act on every line, then "
        "room_ack; it removes exactly the lines you read and keeps lines that arrived "
        "meanwhile. Never truncate, overwrite or delete a notification file yourself: that "
        "loses lines appended between your read and your write. Start background commands "
        "with process_start (optionally with a monitor regex), read their output with "
        "process_output, and collect monitor wakes with wakes_drain."
    )


class _Server(MCPServer):
    """MCPServer whose argument errors read like every other ackdeck error: one line, plus
    structured content naming each rejected argument (the SDK's text is a multi-line pydantic
    dump with a link)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return _result(invalid_arguments(name, exc.__cause__))
            raise


def _arg(description: str) -> Any:
    """A tool argument: described, and strict (no coercion of "yes" into true)."""
    return Field(strict=True, description=description)


def invalid_arguments(tool: str, exc: ValidationError) -> Reply:
    """One line for the model and a list of {argument, problem} for programs. The rejected
    values are not echoed: they are the caller's data and may be long."""
    problems = [
        {"argument": ".".join(str(p) for p in err["loc"]) or "(arguments)", "problem": err["msg"]}
        for err in exc.errors(include_url=False)
    ]
    text = f"invalid arguments for {tool}: " + "; ".join(
        f"{p['argument']}: {p['problem']}" for p in problems
    )
    return Reply(_one_line(text), {"error": "invalid_arguments", "problems": problems}, error=True)


def build_server(config: DoorConfig, *, clock: Clock = time.time) -> MCPServer:
    """The MCP server for one agent session and its configured rooms.

    Every tool argument is strict (`strict=True`): a JSON string is not coerced into a boolean
    or a number, so `room_ack {"all": "yes"}` is an error instead of clearing the room."""
    door = AgentDoor(config, clock=clock)
    server: MCPServer = _Server(
        name="ackdeck",
        instructions=_instructions(config),
        log_level="WARNING",
    )
    room_names = ", ".join(_label(config.rooms, r) for r in config.rooms)
    room_arg = _arg(f"a configured room (basename or path): {room_names}; default: the first")

    @server.tool(
        name="room_list_new",
        **tool_meta("room_list_new"),
        description="Return every complete line now in the room and remember exactly what was "
        "returned (for room_ack). Lines are decoded as UTF-8 with replacement.",
    )
    def room_list_new(
        room: Annotated[str | None, room_arg] = None,
    ) -> Annotated[CallToolResult, ListNewOut]:
        return _guard(lambda: door.room_list_new(room))

    @server.tool(
        name="room_ack",
        **tool_meta("room_ack"),
        description="Remove exactly the lines your last room_list_new returned; lines that "
        "arrived since are preserved. Without a prior room_list_new it refuses (nothing is "
        "removed) unless all is true, which acks every complete line and returns them.",
    )
    def room_ack(
        room: Annotated[str | None, room_arg] = None,
        all: Annotated[  # noqa: A002 - the documented tool argument
            bool, _arg("ack every complete line now in the room and return them")
        ] = False,
    ) -> Annotated[CallToolResult, AckOut]:
        return _guard(lambda: door.room_ack(room, all))

    @server.tool(
        name="room_push",
        **tool_meta("room_push"),
        description="Append one non-empty line (no newline, no NUL) to a configured room.",
    )
    def room_push(
        room: Annotated[str, _arg(f"a configured room: {room_names}")],
        text: Annotated[str, _arg("the line to append")],
    ) -> Annotated[CallToolResult, PushOut]:
        return _guard(lambda: door.room_push(room, text))

    @server.tool(
        name="room_status",
        **tool_meta("room_status"),
        description="Counters for a configured room (all configured rooms when room is "
        "omitted): unread and in-flight lines for this session, pending, acked, preserved.",
    )
    def room_status(
        room: Annotated[
            str | None,
            _arg(f"one of {room_names}; omit for every room"),
        ] = None,
    ) -> Annotated[CallToolResult, StatusOut]:
        return _guard(lambda: door.room_status(room))

    @server.tool(
        name="process_start",
        **tool_meta("process_start"),
        description="Start a background command under an ackdeck supervisor. With monitor "
        "(a regex), output lines that match (or, with exclude, do not match) wake this "
        "session; lines you were already shown by process_output never wake you.",
    )
    def process_start(
        name: Annotated[str, _arg("process name (A-Z a-z 0-9 . _ @ -)")],
        argv: Annotated[list[str], _arg('the command, e.g. ["pytest", "-x"]')],
        monitor: Annotated[str | None, _arg("regex to watch for")] = None,
        exclude: Annotated[bool, _arg("wake on lines NOT matching")] = False,
        cooldown_ms: Annotated[
            int | None, _arg("batch matches for this long (default 1000)")
        ] = None,
        max_events: Annotated[int | None, _arg("stop the monitor after this many matches")] = None,
        cwd: Annotated[str | None, _arg("working directory")] = None,
    ) -> Annotated[CallToolResult, ProcessStartOut]:
        return _guard(
            lambda: door.process_start(name, argv, monitor, exclude, cooldown_ms, max_events, cwd)
        )

    @server.tool(
        name="process_output",
        **tool_meta("process_output"),
        description="New output lines of a process since your last read, optionally filtered; "
        "waits up to timeout seconds for something to show. Lines returned here count as "
        "seen: a monitor will not wake you for them. Lines a filter skipped still can.",
    )
    async def process_output(
        ctx: Context,
        name: Annotated[str, _arg("process name")],
        filter: Annotated[  # noqa: A002 - the documented tool argument
            str | None, _arg("regex; only matching lines are returned")
        ] = None,
        exclude: Annotated[bool, _arg("return lines NOT matching filter")] = False,
        timeout: Annotated[float, _arg(f"seconds to wait, 0-{MAX_OUTPUT_TIMEOUT:g}")] = 0.0,
    ) -> Annotated[CallToolResult, OutputOut]:
        # Waits asynchronously: progress every few seconds, prompt return on cancellation.
        return await guard_async(lambda: wait_output(door, ctx, name, filter, exclude, timeout))

    @server.tool(
        name="wakes_drain",
        **tool_meta("wakes_drain"),
        description="Deliver pending monitor wakes for this session (matched output you have "
        "not been shown yet) and mark them delivered.",
    )
    def wakes_drain() -> Annotated[CallToolResult, DrainOut]:
        return _guard(door.wakes_drain)

    register_manage_tools(server, door)
    return server


def serve(config: DoorConfig, *, channel: bool = True, notice_window: float = 0.5) -> None:
    """Run the server on stdin/stdout until the client disconnects; with `channel`, push
    `notifications/claude/channel` notices (see core/agents/mcp_channel.py)."""
    import anyio

    from core.agents.mcp_channel import make_noticer, serve_stdio

    _plain_sdk_logging()
    noticer = make_noticer(config.home, config.session, list(config.rooms)) if channel else None
    anyio.run(lambda: serve_stdio(build_server(config), noticer, window=notice_window))


def _plain_sdk_logging() -> None:
    """Have the SDK log to stderr with a plain handler instead of importing `rich` for it.

    MCPServer() configures logging with rich's handler whenever rich is installed (it is:
    Textual needs it). On stdio nobody sees the colours (stderr goes to the client's log), and
    importing rich costs ackdeck mcp ~8% of the SDK's own import time before it can answer
    `initialize`. Only the `ackdeck mcp` process is affected; if the SDK renames the hook, this
    does nothing and the server still works.
    """
    import logging

    from mcp.server.mcpserver import server as sdk_server

    def configure_logging(level: str = "INFO") -> None:
        logging.basicConfig(level=level, format="%(message)s", handlers=[logging.StreamHandler()])

    if hasattr(sdk_server, "configure_logging"):
        sdk_server.configure_logging = configure_logging
