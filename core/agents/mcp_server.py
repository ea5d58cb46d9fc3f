"""The agents' door: a stdio MCP server (official `mcp` SDK) over the same core paths as the CLI.

Layers, so the decisions can be tested without the SDK:
- `DoorConfig`: the session and rooms, parsed once; the service (`Deck.room`) resolves which
  configured room a tool argument names, and nothing else is reachable.
- `AgentDoor`: one method per tool, each a thin call into core returning a `Reply` (text for
  the model, structured data for programs, and whether it is an error).
- `build_server`: registers those methods as MCP tools; an error `Reply` (and every
  `AckdeckError`) becomes an `isError` result with a one-line text, never a protocol error, and
  with structured content only where it validates against the tool's outputSchema.

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
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from ackdeck.core.agents.instructions import mcp_instructions
from ackdeck.core.agents.mcp_args import (
    accepted_arguments,
    invalid_arguments,
    plain_input_schema,
    unknown_arguments,
)
from ackdeck.core.agents.mcp_manage import register as register_manage_tools
from ackdeck.core.agents.mcp_manage import tool_registrar, wait_ack_reply, wait_output
from ackdeck.core.agents.mcp_reply import Reply, guard_async, output_model, reply
from ackdeck.core.agents.mcp_reply import arg as _arg
from ackdeck.core.agents.mcp_reply import guard as _guard
from ackdeck.core.agents.mcp_reply import result as _result
from ackdeck.core.base.text import counted
from ackdeck.core.base.timeouts import MAX_WAIT
from ackdeck.core.errors import InvalidInput
from ackdeck.core.service import procs, rooms, wakes
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.roomref import RoomRef
from ackdeck.core.version import package_version

Clock = Callable[[], float]

# process_output may block this long at most; a longer wait belongs in a monitor (wakes).
MAX_OUTPUT_TIMEOUT = MAX_WAIT
# Text of output lines one process_output reply carries at most (clients cut longer tool
# results, and a line that was cut was not shown). The rest waits for the next call.
MAX_REPLY_TEXT = 48 << 10


# ----- configuration -----------------------------------------------------------------------
@dataclass(frozen=True)
class DoorConfig:
    session: str
    rooms: tuple[RoomRef, ...]  # parsed once; a redis room's password is kept hidden
    home: str | None = None  # None: $ACKDECK_HOME, else ~/.ackdeck

    @classmethod
    def make(
        cls, session: str, rooms: Sequence[str | os.PathLike[str]], home: str | None = None
    ) -> "DoorConfig":
        deck = Deck(home, session, rooms)  # checks the session, parses each room once
        if not deck.rooms:
            raise InvalidInput(
                "configure at least one room (--room PATH); the first is the default"
            )
        for r in rooms:
            deck.parse(r).check_configured(str(r))
        return cls(session, deck.rooms, home)

    def deck(self, *, clock: Clock = time.time) -> Deck:
        return Deck(self.home, self.session, self.rooms, clock=clock, door="mcp")


def _fit_reply(lines: Sequence[bytes]) -> int:
    """How many lines, from the first, fit in one reply (always at least one, so a single long
    line still gets through)."""
    size = 0
    for i, line in enumerate(lines):
        size += len(line) + 1
        if size > MAX_REPLY_TEXT and i > 0:
            return i
    return len(lines)


# ----- structured outputs: each tool's outputSchema, from the service result's SHAPE ----------
ListNewOut = output_model(rooms.Lines)
AckOut = output_model(rooms.Acked)
PushOut = output_model(rooms.Pushed)
StatusOut = output_model(rooms.Status)
ProcessStartOut = output_model(procs.Run)
OutputOut = output_model(procs.OutputLines)
DrainOut = output_model(wakes.Drained)


# ----- the tools, independent of the SDK -------------------------------------------------------
class AgentDoor:
    """One method per MCP tool. Each makes one call into the service layer (core/service),
    words the result for a model and returns its JSON as structured content. Errors are raised
    as AckdeckError (or returned as an error Reply when there is structured data worth keeping,
    e.g. a refused ack's counts)."""

    def __init__(self, config: DoorConfig, *, clock: Clock = time.time) -> None:
        self.config = config
        self.deck = config.deck(clock=clock)
        # Which reader this server is: receipts from room_list_new carry it, and room_ack
        # uses only those (a server started anew refuses its predecessor's receipts).
        self._reader = f"mcp:{os.getpid()}:{secrets.token_hex(8)}"

    # -- rooms ---------------------------------------------------------------------------
    def room_list_new(self, room: str | None = None) -> Reply:
        r = self.deck.room(room)
        offered = [0]

        def deliver(got: rooms.Lines) -> int:
            # One reply holds at most MAX_REPLY_TEXT bytes of lines: clients refuse bigger
            # tool results (Claude Code: 25,000 tokens) and the agent would then ack lines it
            # never saw. The receipt covers exactly the lines that fit.
            offered[0] = len(got.raw)
            return _fit_reply(got.raw)

        # The receipt is bound to this server instance: if the reply is lost with the server,
        # no later server can ack lines it never handed out. (The SDK writes the reply after
        # we return; on stdio a lost reply means a dead server.)
        got = self.deck.read(r, reader=self._reader, deliver=deliver)
        return self._list_reply(got, offered[0] - len(got.raw))

    def _list_reply(self, got: rooms.Lines, waiting: int) -> Reply:
        lines = got.lines
        if not lines:
            text = f"no new lines in {got.room} ({got.path}); nothing to ack"
            return reply(got, text if got.note is None else f"{text}. {got.note}")
        head = (
            f"{counted(len(lines), 'new line')} in {got.room} ({got.path}), "
            f"stream bytes [{got.start}, {got.end}) epoch {got.epoch}:"
        )
        tail = (
            f"When you have acted on them, call room_ack (room {got.room!r}): it removes exactly "
            "these lines and keeps anything that arrived since."
        )
        if waiting:
            more = counted(waiting, "more line")
            tail += f" ({more} waiting: call room_list_new again after the ack)"
        return reply(got, "\n".join([head, *lines, tail]))

    def room_ack(self, room: str | None = None, all: bool = False) -> Reply:  # noqa: A002
        r = self.deck.room(room)
        label = self.deck.label(r)
        # ack-all removes only the lines its one reply can carry (see room_list_new).
        deliver = (lambda got: _fit_reply(got.raw)) if all else None
        res = self.deck.ack(r, all=all, reader=self._reader, deliver=deliver)
        counts = f"acked {counted(res.acked, 'line')}, preserved {counted(res.preserved, 'line')}"
        if res.refusal is not None:
            return reply(
                res,
                f"{res.message} (acked 0, preserved {res.preserved}). Call room_list_new, act "
                "on the lines, then room_ack; or call room_ack with all: true to ack every "
                "line and get them back.",
                error=True,
            )
        if res.must_reread:
            # Nothing was removed and the agent must re-read: make it impossible to miss.
            text = f"{res.mode}: {res.message} ({counts}). Call room_list_new again, then room_ack."
            return reply(res, text, error=True)
        text = f"{res.mode}: {counts} in {label}."
        if res.mode == "noop":
            text = f"noop: {res.message} ({counts} in {label})."
        lines = res.lines
        if lines:
            text += " The acked lines:\n" + "\n".join(lines)
        elif lines is not None:
            text += " The room had no complete lines."
        if res.preserved:
            left = counted(res.preserved, "line")
            text += f"\n{left} remain in {label}: call room_list_new to read them."
        return reply(res, text)

    def room_push(self, room: str, text: str) -> Reply:
        pushed = self.deck.push(self.deck.room(room), text)
        return reply(pushed, f"pushed one line to {pushed.room} at stream offset {pushed.offset}")

    def room_push_wait(self, room: str, text: str) -> tuple[RoomRef, rooms.Pushed]:
        """The push of a room_push with wait_ack; the wait is the tool's (wait_ack_reply)."""
        ref = self.deck.room(room)
        return ref, self.deck.push(ref, text)

    def room_status(self, room: str | None = None) -> Reply:
        # Without a room: every configured room (read-only, and how an agent discovers them).
        everyone = room is None or room == ""
        report = self.deck.status(None if everyone else [self.deck.room(room)])
        text = "\n".join(
            f"{row.room}{' (default)' if row.default else ''}: {row.unread} unread, "
            f"{row.in_flight} in flight (read, not acked), {row.status.pending} pending, "
            f"{row.status.acked_total} acked, {row.status.preserved_total} preserved"
            + ("" if row.note is None else f". {row.note}")
            for row in report.rooms
        )
        return reply(report, text)

    # -- processes and wakes ---------------------------------------------------------------
    def process_start(
        self,
        name: str,
        argv: list[str],
        monitor: str | None = None,
        exclude: bool = False,
        cooldown_ms: int | None = None,
        max_events: int | None = None,
        cwd: str | None = None,
        replace: bool = False,
    ) -> Reply:
        run = procs.start(
            self.deck.home,
            name,
            list(argv),
            session=self.config.session,
            monitor=monitor,
            exclude=exclude,
            cooldown_ms=cooldown_ms,
            max_events=max_events,
            cwd=cwd,
            replace=replace,
            replace_own_only=True,  # as process_kill: an agent stops only what it started
        )
        info = run.info
        watch = ""
        if info.monitors:
            m = info.monitors[0]
            watch = (
                f"; monitor {'excluding' if m.exclude else 'matching'} {m.pattern!r} wakes "
                f"session {info.session!r} (collect with wakes_drain)"
            )
        return reply(
            run,
            f"started {info.name} run {info.run_id} (pid {info.pid}, {info.status}){watch}. "
            "Read its output with process_output.",
        )

    def process_output(
        self,
        name: str,
        filter: str | None = None,  # noqa: A002 - the tool's argument name
        exclude: bool = False,
        timeout: float = 0.0,
    ) -> Reply:
        offered = [0]

        def deliver(got: procs.OutputLines) -> int:
            offered[0] = len(got.raw)
            return _fit_reply(got.raw)

        res = procs.read_output(
            self.deck.home,
            name,
            self.config.session,
            filter=filter,
            exclude=exclude,
            timeout=timeout,
            deliver=deliver,
        )
        lines = res.lines
        state = res.status if res.exit_code is None else f"{res.status}, exit code {res.exit_code}"
        head = f"{res.name} run {res.run_id} ({state}): {counted(len(lines), 'new line')}"
        if filter is not None:
            head += f" {'not ' if exclude else ''}matching {filter!r}"
        body = [head + (":" if lines else ""), *lines]
        if res.more:
            waiting = offered[0] - len(lines)
            what = counted(waiting, "more line") if waiting > 0 else "more output"
            body.append(f"({what} waiting: call process_output again)")
        return reply(res, "\n".join(body))

    def wakes_drain(self) -> Reply:
        drained = self.deck.drain()
        text = drained.text().strip() or f"no wakes for session {self.config.session!r}"
        return reply(drained, text)


# ----- the MCP adapter -----------------------------------------------------------------------
def _instructions(config: DoorConfig, channel: bool) -> str:
    deck = config.deck()
    labels = [deck.label(r) for r in deck.rooms]
    return mcp_instructions(config.session, labels, channel=channel)


class _Server(MCPServer):
    """MCPServer whose tools take exactly what their schemas publish: plain input schemas
    (core/agents/mcp_args.py), unknown arguments refused by name, and argument errors that read
    like every other ackdeck error (the SDK's text is a multi-line pydantic dump with a link)."""

    _accepted: dict[str, list[str]] | None = None

    async def list_tools(self) -> list[MCPTool]:
        return [
            t.model_copy(update={"input_schema": plain_input_schema(t.name, t.input_schema)})
            for t in await super().list_tools()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._accepted is None:  # the tools are all registered before the first call
            self._accepted = {
                t.name: accepted_arguments(t.input_schema) for t in await super().list_tools()
            }
        accepted = self._accepted.get(name)
        if accepted is not None and (unknown := unknown_arguments(name, arguments, accepted)):
            return _result(unknown)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return _result(invalid_arguments(name, exc.__cause__))
            raise


def build_server(
    config: DoorConfig, *, clock: Clock = time.time, channel: bool = False
) -> MCPServer:
    """The MCP server for one agent session and its configured rooms.

    Every tool argument is strict (`strict=True`): a JSON string is not coerced into a boolean
    or a number, so `room_ack {"all": "yes"}` is an error instead of clearing the room. With
    `channel`, the instructions also say what its channel notices are."""
    door = AgentDoor(config, clock=clock)
    server: MCPServer = _Server(
        name="ackdeck",
        version=package_version(),
        instructions=_instructions(config, channel),
        log_level="WARNING",
    )
    tool = tool_registrar(server)
    room_names = ", ".join(door.deck.label(r) for r in door.deck.rooms)
    room_arg = _arg(f"a configured room (basename or path): {room_names}; default: the first")

    @tool(
        "room_list_new",
        "Return every complete line now in the room and remember exactly what was "
        "returned (for room_ack). Lines are decoded as UTF-8 with replacement.",
    )
    def room_list_new(
        room: Annotated[str | None, room_arg] = None,
    ) -> Annotated[CallToolResult, ListNewOut]:
        return _guard(lambda: door.room_list_new(room))

    @tool(
        "room_ack",
        "Remove exactly the lines your last room_list_new returned; lines that "
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

    @tool(
        "room_push",
        "Append one non-empty line (no newline, no NUL) to a configured room. With wait_ack, "
        "return once that line was acked (saying by whom and when) or timeout passed.",
    )
    async def room_push(
        ctx: Context,
        room: Annotated[str, _arg(f"a configured room: {room_names}")],
        text: Annotated[str, _arg("the line to append")],
        wait_ack: Annotated[
            bool, _arg("wait until this line was acked (progress notifications meanwhile)")
        ] = False,
        ack_session: Annotated[
            str | None, _arg("with wait_ack: the session whose ack is awaited")
        ] = None,
        timeout: Annotated[
            float, _arg(f"with wait_ack: seconds to wait, 0-{MAX_OUTPUT_TIMEOUT:g}")
        ] = 60.0,
    ) -> Annotated[CallToolResult, PushOut]:
        if not wait_ack:
            return _guard(lambda: door.room_push(room, text))
        return await guard_async(
            lambda: wait_ack_reply(door, ctx, room, text, ack_session, timeout)
        )

    @tool(
        "room_status",
        "Counters for a configured room (all configured rooms when room is "
        "omitted): unread and in-flight lines for this session, pending, acked, preserved.",
    )
    def room_status(
        room: Annotated[
            str | None,
            _arg(f"one of {room_names}; omit for every room"),
        ] = None,
    ) -> Annotated[CallToolResult, StatusOut]:
        return _guard(lambda: door.room_status(room))

    @tool(
        "process_start",
        "Start a background command under an ackdeck supervisor. With monitor "
        "(a regex), output lines that match (or, with exclude, do not match) wake this "
        "session; lines you were already shown by process_output never wake you. Refused "
        "while a run of the same name is still running, unless replace is true.",
    )
    def process_start(
        name: Annotated[str, _arg("process name (A-Z a-z 0-9 . _ @ -)")],
        argv: Annotated[list[str], _arg('the command, e.g. ["pytest", "-x"]')],
        monitor: Annotated[str | None, _arg("regex to watch for")] = None,
        exclude: Annotated[bool, _arg("wake on lines NOT matching")] = False,
        cooldown_ms: Annotated[
            int | None, _arg("milliseconds to batch matches for (default 1000; needs monitor)")
        ] = None,
        max_events: Annotated[
            int | None, _arg("stop the monitor after this many wakes (default: no limit)")
        ] = None,
        cwd: Annotated[str | None, _arg("working directory (default: the server's)")] = None,
        replace: Annotated[
            bool, _arg("stop this name's running run first (TERM, KILL after 3 s), then start")
        ] = False,
    ) -> Annotated[CallToolResult, ProcessStartOut]:
        return _guard(
            lambda: door.process_start(
                name, argv, monitor, exclude, cooldown_ms, max_events, cwd, replace
            )
        )

    @tool(
        "process_output",
        "New output lines of a process since your last read, optionally filtered; "
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

    @tool(
        "wakes_drain",
        "Deliver pending monitor wakes for this session (matched output you have "
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

    from ackdeck.core.agents.mcp_channel import make_noticer, serve_stdio

    _plain_sdk_logging()
    noticer = make_noticer(config.home, config.session, list(config.rooms)) if channel else None
    server = build_server(config, channel=channel)
    anyio.run(lambda: serve_stdio(server, noticer, window=notice_window))


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
