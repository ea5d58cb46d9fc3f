"""The agents' door, pushing: the `claude/channel` capability and its background notifier.

`ackdeck mcp` declares the experimental capability `claude/channel` and, while the client is
connected, sends `notifications/claude/channel` (params: `content`, a string; `meta`, a
string-to-string map) when its session has new room lines or pending wakes. Clients that do
not know the capability ignore the notification (JSON-RPC notifications need no answer).

How this rides the official SDK (mcp 2.x): `MCPServer.run("stdio")` always builds its
initialization options without experimental capabilities, so `serve_stdio` drives the same
low-level `Server.run` itself with `create_initialization_options(experimental_capabilities=…)`
(the SDK's documented way to declare them) and also answers `server/discover` with the
capability. That method exists only in the 2026-07-28 protocol: the SDK routes it for requests
whose `_meta` carries that protocol version and answers -32601 to a client that initialized
with an earlier one (tests/test_mcp_channel.py pins both). A server middleware (the SDK's
public hook on every inbound message) tells the notifier when the client finished its
handshake; the notifier then writes JSON-RPC notifications to the same stdio write stream the
SDK's dispatcher uses.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ackdeck.core.base.home import resolve_home
from ackdeck.core.mcp.delivery import Deliveries, Wire
from ackdeck.core.service.noticer import DEFAULT_WINDOW_S, Noticer
from ackdeck.core.service.notices import Notice

CHANNEL = "claude/channel"
CHANNEL_METHOD = "notifications/claude/channel"
EXPERIMENTAL: dict[str, dict[str, Any]] = {CHANNEL: {}}


class ClientReady:
    """Server middleware: sets `event` once the client may receive notifications (after
    `notifications/initialized`, or on the first enveloped request of a 2026-era client)."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized" or (
            ctx.request_id is not None and ctx.method not in ("initialize", "server/discover")
        ):
            self.event.set()
        return result


def channel_message(notice: Notice) -> SessionMessage:
    return SessionMessage(
        types.JSONRPCNotification(
            jsonrpc="2.0",
            method=CHANNEL_METHOD,
            params={"content": notice.content, "meta": dict(notice.meta)},
        )
    )


def _declare_on_discover(server: MCPServer) -> None:
    low = server._lowlevel_server  # the SDK exposes experimental capabilities only down here

    async def discover(
        ctx: ServerRequestContext[Any, Any], params: types.RequestParams | None
    ) -> types.DiscoverResult:
        caps = low.get_capabilities(protocol_version=ctx.protocol_version)
        return types.DiscoverResult(
            supported_versions=list(MODERN_PROTOCOL_VERSIONS),
            capabilities=caps.model_copy(update={"experimental": EXPERIMENTAL}),
            instructions=low.instructions,
        )

    low.add_request_handler("server/discover", types.RequestParams, discover)


async def serve_stdio(
    server: MCPServer,
    noticer: Noticer | None,
    *,
    window: float = DEFAULT_WINDOW_S,
    deliveries: Deliveries | None = None,
) -> None:
    """Serve `server` on stdin/stdout; with a noticer, declare the channel and push its notices
    while connected (without one, `--no-channel`, the capability is not declared either: a
    client must not wait for notices that never come). With `deliveries`, stdout tells it
    which responses were written (core/mcp/delivery.py)."""
    low = server._lowlevel_server
    ready = ClientReady()
    server.middleware.append(ready)
    if noticer is not None:
        _declare_on_discover(server)
    options = low.create_initialization_options(
        experimental_capabilities=EXPERIMENTAL if noticer is not None else None
    )
    async with _stdio(deliveries) as (read_stream, write_stream):

        async def send(notices: list[Notice]) -> bool:
            try:
                for n in notices:
                    await write_stream.send(channel_message(n))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return False  # the client left: nothing is recorded as noticed
            return True

        async def notify() -> None:
            if noticer is None:
                return
            await ready.event.wait()
            try:
                await noticer.run(send, window=window)
            except Exception as exc:  # noqa: BLE001 - reported, and the tools keep working
                # The notifier is a convenience: whatever breaks it must not take the agent's
                # tools down with it. Say so once on stderr (the client's server log).
                print(f"ackdeck: channel notices stopped: {exc!r}", file=sys.stderr)

        async with anyio.create_task_group() as tg:
            tg.start_soon(notify)
            await low.run(read_stream, write_stream, options)
            tg.cancel_scope.cancel()


@asynccontextmanager
async def _stdio(deliveries: Deliveries | None) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport; with `deliveries`, its stdout is a `Wire` that reports each
    written response. The SDK then leaves descriptor 1 alone, so this does what it would: the
    wire gets a private duplicate and descriptor 1 points at stderr while serving (a child's
    stray output must not corrupt the JSON-RPC stream), restored on the way out."""
    if deliveries is None:
        async with stdio_server() as streams:
            yield streams
        return
    private = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(2, 1)
    try:
        # closefd=False: a worker thread may still be writing when the transport exits.
        raw = os.fdopen(private, "wb", closefd=False)
        stdout = anyio.wrap_file(Wire(raw, deliveries))  # type: ignore[arg-type]  # write, flush
        async with stdio_server(stdout=stdout) as streams:
            yield streams
    finally:
        os.dup2(private, 1)


def make_noticer(home: str | None, session: str, rooms: list[Any]) -> Noticer:
    return Noticer(resolve_home(home), session, rooms, "channel")
