"""The work-queue tools of the agents' door: task_claim, task_done, task_extend and
task_release, thin calls into the service (core/service/queue.py). Each result is the
service's value as CLI --json prints it; its text says the lease's end and the call to make
next. A refused token is an isError result with one line (the token was superseded: drop the
work, someone else holds the line now).

A claim whose reply never reached the model is not lost: its lease ends and the line is
handed out again (one more delivery)."""

# No `from __future__ import annotations`: the SDK reads tool signatures at runtime.
import time
from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult

from ackdeck.core.mcp.manage import tool_registrar
from ackdeck.core.mcp.reply import Reply, guard, output_model, reply
from ackdeck.core.mcp.reply import arg as _arg
from ackdeck.core.service import queue

if TYPE_CHECKING:
    from ackdeck.core.mcp.server import AgentDoor

ClaimOut = output_model(queue.Claimed)
UpdateOut = output_model(queue.Updated)


def _ends(at: float | None, clock: float) -> str:
    if at is None:
        return ""
    return f" The lease ends in {max(0.0, at - clock):.0f} s (at {at:.0f}, unix time)."


def task_claim(door: "AgentDoor", room: str | None, lease: float | None) -> Reply:
    got = door.deck.claim(door.deck.room(room), lease=lease)
    if not got.claimed:
        return reply(got, f"{got.room}: {got.message}. Next: {got.next}.")
    assert got.line is not None
    text = (
        f"Claimed in {got.room} (token {got.token}, delivery {got.deliveries}):\n"
        f"{got.line.decode('utf-8', 'replace').rstrip(chr(10))}\n"
        f"{_ends(got.lease_until, time.time()).strip()}\nNext: task_done with token "
        f"{got.token} when finished (task_extend before the lease ends if you need longer, "
        "task_release to give it back)."
    )
    return reply(got, text)


def task_update(
    door: "AgentDoor", room: str | None, token: str, op: str, lease: float | None
) -> Reply:
    got = door.deck.task(door.deck.room(room), token, op, lease=lease)
    return reply(
        got, f"{got.room}: {got.message}.{_ends(got.lease_until, time.time())} Next: {got.next}."
    )


def task_done_next(door: "AgentDoor", room: str | None, token: str, lease: float | None) -> Reply:
    """task_done with `next: true`: the done, then the next claim, in one call."""
    got = door.deck.done_next(door.deck.room(room), token, lease=lease)
    nxt = got.claimed_next
    assert nxt is not None
    if not nxt.claimed:
        return reply(got, f"{got.room}: {got.message}. Then: {nxt.message}. Next: {nxt.next}.")
    assert nxt.line is not None
    text = (
        f"{got.room}: {got.message}. Then claimed (token {nxt.token}, delivery "
        f"{nxt.deliveries}):\n{nxt.line.decode('utf-8', 'replace').rstrip(chr(10))}\n"
        f"{_ends(nxt.lease_until, time.time()).strip()}\nNext: task_done with token "
        f"{nxt.token} (and next: true) when finished."
    )
    return reply(got, text)


def register(server: MCPServer, door: "AgentDoor") -> None:
    tool = tool_registrar(server)
    room_arg = _arg("a configured queue room (basename or path); default: the first")
    token_arg = _arg("the token task_claim returned")
    lease_arg = _arg(
        f"the lease in seconds (default {queue.DEFAULT_LEASE:g}, at most {queue.MAX_LEASE:g})"
    )

    @tool(
        "task_claim",
        "Claim the oldest unclaimed line (task) of a queue room: it is yours alone until the "
        "lease ends. The result gives the line, a token, the lease's end and the next call: "
        "task_done with the token when finished. If the lease ends first, another agent may "
        "claim the line and your token is refused.",
    )
    def task_claim_tool(
        room: Annotated[str | None, room_arg] = None,
        lease: Annotated[float | None, lease_arg] = None,
    ) -> Annotated[CallToolResult, ClaimOut]:
        return guard(lambda: task_claim(door, room, lease))

    @tool(
        "task_done",
        "Finish a claimed task: its line leaves the queue, exactly once. Refused (nothing "
        "changes) if the token was superseded by a later claim. With next: true, the next "
        "line is claimed in the same call (in claimed_next).",
    )
    def task_done_tool(
        token: Annotated[str, token_arg],
        room: Annotated[str | None, room_arg] = None,
        next: Annotated[  # noqa: A002 - the tool's argument, as the CLI's --next
            bool, _arg("then claim the next line in the same call (its claim in claimed_next)")
        ] = False,
        lease: Annotated[float | None, lease_arg] = None,
    ) -> Annotated[CallToolResult, UpdateOut]:
        if next:
            return guard(lambda: task_done_next(door, room, token, lease))
        return guard(lambda: task_update(door, room, token, "done", None))

    @tool(
        "task_extend",
        "Renew a claimed task's lease (from now); refused if the token was superseded.",
    )
    def task_extend_tool(
        token: Annotated[str, token_arg],
        room: Annotated[str | None, room_arg] = None,
        lease: Annotated[float | None, lease_arg] = None,
    ) -> Annotated[CallToolResult, UpdateOut]:
        return guard(lambda: task_update(door, room, token, "extend", lease))

    @tool(
        "task_release",
        "Give a claimed task back unfinished: claimable again at once (the claim counted as "
        "a delivery). Refused if the token was superseded.",
    )
    def task_release_tool(
        token: Annotated[str, token_arg], room: Annotated[str | None, room_arg] = None
    ) -> Annotated[CallToolResult, UpdateOut]:
        return guard(lambda: task_update(door, room, token, "release", None))
