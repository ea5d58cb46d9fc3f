"""Replies the transport confirmed: a tool's work is recorded only once its reply was written.

An MCP client may cancel a call (`notifications/cancelled`, a user pressing Esc) or close the
pipe while the tool runs. The SDK then drops the reply, but a read that already stored its
receipt, an ack-all that already removed its lines, or a drain that already marked its wake
delivered would stay done: the agent's next `room_ack` removes lines it never saw. So the work
is split where core already splits it (the `deliver` / `confirm` callbacks that run before a
read, an ack-all or a drain records anything):

1. the tool body runs in a worker thread and builds its reply from exactly what would be
   recorded, then hands it over (`Handoff.offer`) and waits;
2. the async side returns that reply to the SDK, which writes it unless the call was cancelled;
3. the stdio transport (`Wire`) tells the `Deliveries` registry once the response with that
   request id was written and flushed; only then does `offer` return True and core record.

Cancelled before the reply was handed over, not written within `WRITE_WAIT`, or the pipe broke:
`offer` returns False and nothing is recorded (redelivery, never loss). Without a transport that
confirms writes (the SDK's in-memory test client), a reply counts as written when the tool
returns it, as before.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, TypeVar

from mcp.types import CallToolResult

T = TypeVar("T")

# How long a worker waits for its reply to be written. The SDK writes right after the tool
# returns, so this only bounds a reply that is never written (then nothing is recorded).
WRITE_WAIT = 30.0


class Handoff:
    """One call's reply, handed from the worker thread to the event loop, and the transport's
    word on whether it was written."""

    def __init__(self, loop: asyncio.AbstractEventLoop, deliveries: Deliveries) -> None:
        self._loop = loop
        self._deliveries = deliveries
        self.begun = False
        self.reply: asyncio.Future[CallToolResult] = loop.create_future()
        self._settled = threading.Event()
        self._lock = threading.Lock()
        self._written = False
        self._writing = False  # the transport began writing the reply: it will finish
        self.gave_up = False  # not written within the wait: the reply must not go out as is

    def offer(self, reply: CallToolResult, wait: float = WRITE_WAIT) -> bool:
        """(worker thread) Hand `reply` over and wait: True once the transport wrote it."""
        if self._settled.is_set():
            return self._written  # cancelled before the reply was ready: it is never sent
        if not self.begun:
            self.begun = True
            self._deliveries.begin()  # the next call waits until this one has recorded
        self._loop.call_soon_threadsafe(self._set_reply, reply)
        if not self._settled.wait(wait):
            with self._lock:
                if not self._writing and not self._settled.is_set():
                    # Not written in time: it never counts as delivered, and the transport
                    # replaces it by an error if the SDK still writes it (Wire.write).
                    self.gave_up = True
                    self._settled.set()
            self._settled.wait()  # a write that began finishes (a slow reader, a full pipe)
        return self._written

    @property
    def outcome(self) -> bool | None:
        """Whether the reply was written; None while that is not known yet."""
        return self._written if self._settled.is_set() else None

    def begin_write(self) -> bool:
        """(transport) The reply is being written; False when the worker gave up on it."""
        with self._lock:
            if self.gave_up:
                return False
            self._writing = True
            return True

    def _set_reply(self, reply: CallToolResult) -> None:
        if not self.reply.done():
            self.reply.set_result(reply)

    def settle(self, written: bool) -> None:
        """The outcome, once: later words are ignored (a late write is not a delivery)."""
        with self._lock:
            if not self._settled.is_set():
                self._written = written
                self._settled.set()


def request_key(ctx: Any) -> str:
    """A request's id as the wire wrote it: `7` and `"7"` are two requests (JSON-RPC ids keep
    their type), so the key is the id's JSON."""
    try:
        rid = ctx.request_context.request_id
    except (AttributeError, LookupError, ValueError):
        rid = getattr(ctx, "request_id", None)
    return json.dumps(rid)


class Deliveries:
    """Replies waiting for the transport, by JSON-RPC request id. `confirms` is True when a
    transport reports its writes (`Wire`); otherwise a returned reply counts as written."""

    def __init__(self) -> None:
        self.confirms = False
        self._pending: dict[str, Handoff] = {}
        self._lock = threading.Lock()
        # Calls whose reply went out and whose work is still recording it. The client may send
        # its next call (the ack of a read) the moment it has the reply: that call waits until
        # the receipt it needs is stored.
        self._recording = 0
        self._idle = threading.Condition(self._lock)

    def begin(self) -> None:
        with self._lock:
            self._recording += 1

    def end(self) -> None:
        with self._lock:
            self._recording -= 1
            if not self._recording:
                self._idle.notify_all()

    @property
    def recording(self) -> bool:
        return self._recording > 0

    def wait_idle(self, timeout: float = WRITE_WAIT) -> None:
        """Block until no earlier call is still recording what its reply said (bounded)."""
        with self._lock:
            self._idle.wait_for(lambda: not self._recording, timeout)

    def expect(self, key: str, handoff: Handoff) -> None:
        """`key`: the request id's JSON (request_key)."""
        with self._lock:
            self._pending[key] = handoff

    def forget(self, key: str) -> Handoff | None:
        with self._lock:
            return self._pending.pop(key, None)

    def written(self, key: str, ok: bool) -> None:
        handoff = self.forget(key)
        if handoff is not None:
            handoff.settle(ok)

    def begin_write(self, key: str) -> bool:
        """The response for `key` is about to be written: False when its worker gave up
        waiting and recorded nothing (the wire must then not say what that reply says)."""
        with self._lock:
            handoff = self._pending.get(key)
        return handoff is None or handoff.begin_write()

    def __bool__(self) -> bool:
        return bool(self._pending)


async def call_delivered(
    deliveries: Deliveries, request_id: str, work: Callable[[Handoff], T]
) -> CallToolResult | T:
    """Run `work` in a thread. If it offers a reply, return that reply (the transport then
    confirms its write to the waiting worker); if it returns without offering (an error, a
    poll that found nothing yet), return what it returned. Cancelled: the worker's offer fails
    and it records nothing."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, deliveries.wait_idle)
    handoff = Handoff(loop, deliveries)
    deliveries.expect(request_id, handoff)

    def run() -> T:
        try:
            return work(handoff)
        finally:
            if handoff.begun:
                deliveries.end()

    job = loop.run_in_executor(None, run)
    job.add_done_callback(_report_late_failure)
    try:
        waits: set[asyncio.Future[Any]] = {handoff.reply, job}
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        deliveries.forget(request_id)
        handoff.settle(False)
        raise
    if handoff.reply.done():
        if not deliveries.confirms:
            deliveries.written(request_id, True)
        return handoff.reply.result()
    deliveries.forget(request_id)
    handoff.settle(False)
    return await job


def _report_late_failure(job: asyncio.Future[Any]) -> None:
    """A worker that fails after its reply went out (a receipt that could not be stored) has
    nobody to tell but the server log; the agent's next ack is then refused and it reads
    again. Failures before that were returned as the reply (see call_delivered)."""
    if job.cancelled():
        return
    exc = job.exception()
    if exc is not None and not getattr(exc, "expected_after_reply", False):
        print(f"ackdeck: after its reply, a tool call failed: {exc}", file=sys.stderr)


class Wire:
    """The stdio server's stdout: writes each JSON-RPC message and, once it is flushed, tells
    `deliveries` which response went out (a failed write: which did not)."""

    def __init__(self, raw: BinaryIO, deliveries: Deliveries) -> None:
        self._raw = raw
        self._deliveries = deliveries
        self._key: str | None = None
        deliveries.confirms = True

    def write(self, text: str) -> int:
        self._key = None
        if self._deliveries:  # parse only while a reply waits for its write
            self._key = _response_key(text)
            if self._key is not None and not self._deliveries.begin_write(self._key):
                text = _too_late(self._key)
        try:
            self._raw.write(text.encode("utf-8", "surrogatepass"))
        except BaseException:
            self._settle(False)
            raise
        return len(text)

    def flush(self) -> None:
        try:
            self._raw.flush()
        except BaseException:
            self._settle(False)
            raise
        self._settle(True)

    def _settle(self, ok: bool) -> None:
        key, self._key = self._key, None
        if key is not None:
            self._deliveries.written(key, ok)


def _response_key(text: str) -> str | None:
    """The id (as JSON) of a JSON-RPC response, None for anything else."""
    try:
        msg = json.loads(text)
    except ValueError:
        return None
    if isinstance(msg, dict) and ("result" in msg or "error" in msg) and "id" in msg:
        return json.dumps(msg["id"])
    return None


def _too_late(key: str) -> str:
    """What goes out instead of a reply whose work gave up waiting for its write."""
    text = (
        f"this reply could not be written within {WRITE_WAIT:g} s (the client did not read "
        "it), so nothing it would have said was recorded: call the tool again"
    )
    result = {"content": [{"type": "text", "text": text}], "isError": True}
    return json.dumps({"jsonrpc": "2.0", "id": json.loads(key), "result": result}) + "\n"
