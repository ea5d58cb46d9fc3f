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
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from ackdeck.core.base.struct import Struct as Result
from ackdeck.core.base.text import counted
from ackdeck.core.base.timeouts import MAX_WAIT
from ackdeck.core.clients.claude_code import transcript
from ackdeck.core.errors import InvalidInput, NotDelivered
from ackdeck.core.mcp.args import (
    accepted_arguments,
    invalid_arguments,
    plain_input_schema,
    unknown_arguments,
)
from ackdeck.core.mcp.delivery import Deliveries, Handoff, call_delivered, request_key
from ackdeck.core.mcp.manage import register as register_manage_tools
from ackdeck.core.mcp.manage import tool_registrar, wait_ack_reply, wait_output
from ackdeck.core.mcp.queue_tools import register as register_queue_tools
from ackdeck.core.mcp.reply import Reply, guard_async, output_model, reply
from ackdeck.core.mcp.reply import arg as _arg
from ackdeck.core.mcp.reply import guard as _guard
from ackdeck.core.mcp.reply import result as _result
from ackdeck.core.mcp.sizing import (
    DEFAULT_CHARS,
    STRUCTURED,
    TEXT,
    check_reply_chars,
    client_view,
    fit,
    line_cost,
    no_line_fits,
    shown_json,
)
from ackdeck.core.service import procs, rooms, wakes
from ackdeck.core.service.agents import Agents
from ackdeck.core.service.claude_messages import Messages
from ackdeck.core.service.deck import Deck
from ackdeck.core.service.instructions import mcp_instructions
from ackdeck.core.service.roomref import RoomRef
from ackdeck.core.version import package_version

Clock = Callable[[], float]

# process_output may block this long at most; a longer wait belongs in a monitor (wakes).
MAX_OUTPUT_TIMEOUT = MAX_WAIT
# Where a 2026-era client puts its clientInfo in each request's `_meta`.
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
# The budget of a reply for a client ackdeck does not know (core/mcp/sizing.py).
MAX_REPLY_TEXT = DEFAULT_CHARS
# A read id: what room_list_new returns and room_ack may name (hex, as secrets makes it).
READ_ID = re.compile(r"[0-9a-f]{16}")
# The reads whose tool call a server remembers (an ack names one of its latest reads).
READS_KEPT = 64
# How long a server's first read waits for Claude Code's transcript to appear: its first
# records are queued writes, and a session's first read was seen to beat the file's creation
# by a fraction of a millisecond on a busy machine (2.1.328). A session that saves no
# transcript (`--no-session-persistence`) pays this once per server.
FIRST_TRANSCRIPT_WAIT = 2.0


# ----- configuration -----------------------------------------------------------------------
@dataclass(frozen=True)
class DoorConfig:
    session: str
    rooms: tuple[RoomRef, ...]  # parsed once; a redis room's password is kept hidden
    home: str | None = None  # None: $ACKDECK_HOME, else ~/.ackdeck
    reply_chars: int | None = None  # --reply-chars: one budget for every client

    @classmethod
    def make(
        cls,
        session: str,
        rooms: Sequence[str | os.PathLike[str]],
        home: str | None = None,
        reply_chars: int | None = None,
    ) -> "DoorConfig":
        deck = Deck(home, session, rooms)  # checks the session, parses each room once
        if not deck.rooms:
            raise InvalidInput(
                "configure at least one room (--room PATH); the first is the default"
            )
        for r in rooms:
            deck.parse(r).check_configured(str(r))
        if reply_chars is not None:
            check_reply_chars(reply_chars)
        return cls(session, deck.rooms, home, reply_chars)

    def deck(self, *, clock: Clock = time.time) -> Deck:
        return Deck(self.home, self.session, self.rooms, clock=clock, door="mcp")


def _not_written(what: str) -> NotDelivered:
    exc = NotDelivered(
        f"the reply to {what} was not written (the call was cancelled or the client left); "
        "nothing was recorded"
    )
    exc.expected_after_reply = True  # type: ignore[attr-defined]  # not worth a log line
    return exc


# ----- structured outputs: each tool's outputSchema, from the service result's SHAPE ----------
ListNewOut = output_model(rooms.Lines)
AckOut = output_model(rooms.Acked)
PushOut = output_model(rooms.Pushed)
StatusOut = output_model(rooms.Status)
ProcessStartOut = output_model(procs.Run)
OutputOut = output_model(procs.OutputLines)
DrainOut = output_model(wakes.Drained)
AgentsOut = output_model(Agents)
MessagesOut = output_model(Messages)


# ----- the tools, independent of the SDK -------------------------------------------------------
class AgentDoor:
    """One method per MCP tool. Each makes one call into the service layer (core/service),
    words the result for a model and returns its JSON as structured content. Errors are raised
    as AckdeckError (or returned as an error Reply when there is structured data worth keeping,
    e.g. a refused ack's counts).

    Reads, ack-all, process output and drains take a `Handoff` (core/mcp/delivery.py):
    their reply is offered from inside core's `deliver`/`confirm` step and recorded only if the
    transport wrote it. Called without one (tests, the CLI-like direct use), a reply counts as
    delivered when it is returned."""

    def __init__(
        self,
        config: DoorConfig,
        *,
        clock: Clock = time.time,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.deck = config.deck(clock=clock)
        # Each read is bound to a reader made from its read id: room_ack with that id (from
        # any process of the session) or this server's own last read in a room may ack it; a
        # server started anew refuses its predecessor's receipts unless given the id.
        self._instance = secrets.token_hex(8)
        self._last_read: dict[str, str] = {}  # room label -> read id of this server's last read
        self.view = client_view(None, config.reply_chars)
        self.deliveries = Deliveries()
        # Where this session's client records what its model was shown (issue 41): Claude
        # Code's transcript, from the environment it starts this server with; None: estimates.
        self.env: Mapping[str, str] = os.environ if env is None else env
        self._transcript = transcript.locate(self.env)
        # Per read id: the tool call that carried it and the transcript's mark before its
        # reply (transcript.mark_of: the result's record follows). The newest READS_KEPT reads
        # are kept.
        self._handed: dict[str, tuple[str | None, tuple[int, bytes] | None]] = {}
        self._handed_lock = threading.Lock()  # tools run in worker threads
        # Until when reads wait for the transcript to appear: set by the first read, so the
        # reads made during that wait (tools run concurrently) wait for the same moment too.
        self._await_until: float | None = None
        # Per room: at most this many lines a read, learnt from what transcripts proved shown.
        self._caps: dict[str, int] = {}

    def set_client(self, name: str | None) -> None:
        """Size replies for the client that connected (`initialize`'s clientInfo.name)."""
        if name != self.view.client:
            self.view = client_view(name, self.config.reply_chars)

    # -- sizing -------------------------------------------------------------------------------
    def _fit(self, got: rooms.Lines | procs.OutputLines, empty: Reply) -> int:
        """How many of `got`'s lines one reply carries whole to the client's model; `empty`
        is the same reply without lines (what the rest of it costs)."""
        if self.view.view == STRUCTURED:
            fixed = self.view.size(shown_json(empty.data))
        else:
            fixed = self.view.size(empty.text)
        fixed += 400  # the counts and `next` say more once lines are cut; Codex's header
        marked = set(got.invalid_utf8) if self.view.view == STRUCTURED else set()
        texts = got.texts()
        n = fit(texts, self.view, fixed, marked)
        if n == 0 and texts:
            # Sent anyway, the reply would be withheld or cut by the client while the read
            # (or ack-all) is recorded: fail the call instead, which records nothing.
            need = fixed + line_cost(texts[0], 0, self.view, marked)
            raise NotDelivered(no_line_fits(self.view, need))
        return n

    def _reply(self, res: Result, text: str, body: Sequence[str] = (), **kw: Any) -> Reply:
        """A reply in the view its client shows the model: lines in the text only for a client
        that shows text (the structured content always has them), so they are not sent to the
        model twice."""
        if body and self.view.view == TEXT:
            head, *tail = text.split("\n", 1)
            text = "\n".join([head, *body, *tail])
        return reply(res, text, **kw)

    # -- rooms ---------------------------------------------------------------------------
    def room_list_new(
        self,
        room: str | None = None,
        handoff: Handoff | None = None,
        tool_use_id: str | None = None,
    ) -> Reply:
        r = self.deck.room(room)
        label = self.deck.label(r)
        read_id = secrets.token_hex(8)
        self._await_transcript()  # before the room's lock: the read's mark needs the file

        def deliver(got: rooms.Lines) -> int:
            n = self._fit(got, self._list_reply(got.emptied()))
            cap = self._caps.get(label)
            return n if cap is None else min(n, cap)

        def confirm(got: rooms.Lines) -> None:
            # The transcript's mark before the reply goes out: its record comes after.
            mark = transcript.mark_of(self.transcript())
            if handoff is not None and not handoff.offer(_result(self._list_reply(got))):
                raise _not_written("room_list_new")
            if got.lines:
                self._last_read[label] = read_id
                with self._handed_lock:
                    self._handed[read_id] = (tool_use_id, mark)
                    while len(self._handed) > READS_KEPT:
                        del self._handed[next(iter(self._handed))]

        got = self.deck.read(
            r, reader=_reader(read_id), deliver=deliver, confirm=confirm, read_id=read_id
        )
        return self._list_reply(got)

    def _list_reply(self, got: rooms.Lines) -> Reply:
        got = got.replace(**self._read_proof())
        if not got.lines:
            text = f"no new lines in {got.room} ({got.path}); nothing to ack"
            if got.note is not None:
                text += f". {got.note}"
            if got.next is not None:
                text += f"\n{got.next}"
            return reply(got, text)
        head = (
            f"{counted(got.count, 'new line')} in {got.room} ({got.path}), "
            f"stream bytes [{got.start}, {got.end}) epoch {got.epoch}, read_id {got.read_id}"
            + (f"; {got.waiting} more waiting" if got.waiting else "")
        )
        return self._reply(got, f"{head}:\n{got.next}", got.texts())

    def room_ack(
        self,
        room: str | None = None,
        all: bool = False,  # noqa: A002
        read_id: str | None = None,
        handoff: Handoff | None = None,
        tool_use_id: str | None = None,
    ) -> Reply:
        r = self.deck.room(room)
        label = self.deck.label(r)
        if read_id is not None and all:
            raise InvalidInput("room_ack: give read_id or all, not both")
        if read_id is not None and not READ_ID.fullmatch(read_id):
            raise InvalidInput(
                f"room_ack: invalid read_id {read_id!r}: give the read_id a room_list_new "
                "returned (16 lowercase hex digits)"
            )
        if all:
            res = self._ack_all(r, label, handoff)
        else:
            known = read_id or self._last_read.get(label)
            reader = _reader(known) if known else f"mcp:none:{self._instance}"
            shown, estimate = self._shown(known, tool_use_id)
            res = self.deck.ack(r, reader=reader, shown=shown, estimate=estimate)
            if known and res.mode != "refused":
                self._last_read.pop(label, None)
            if res.proof == rooms.TRANSCRIPT:
                self._learn(label, res)
        return self._ack_reply(res, label, read_id)

    def _learn(self, label: str, res: rooms.Acked) -> None:
        """Size the next reads of `label` by what the transcript proved: the client showed
        its model fewer lines than the estimate handed over (a lower MAX_MCP_OUTPUT_TOKENS, a
        hook's summary, a persisted preview), so the same page would not be shown either.
        The next read carries at most what was shown (a quarter of the read when nothing
        was, down to one line); a read shown whole lifts the cap."""
        if not res.unshown:
            self._caps.pop(label, None)
        elif res.acked:
            self._caps[label] = res.acked
        else:
            self._caps[label] = max(1, (self._caps.get(label) or res.unshown) // 4)

    # -- proof (issue 41): what the client's transcript shows its model was shown ----------
    def transcript(self) -> Path | None:
        """The session's transcript (None outside Claude Code). Found again while it does not
        exist: the server starts before Claude Code writes it, and a long project path's
        directory (hash-suffixed) can only be found once it is there."""
        if self._transcript is not None and not transcript.exists(self._transcript):
            self._transcript = transcript.locate(self.env)
        return self._transcript

    def _await_transcript(self) -> None:
        """Until FIRST_TRANSCRIPT_WAIT after this server's first read, wait for a transcript
        that does not exist yet, so a read keeps its mark and says `transcript`, not an
        estimate, when Claude Code merely had not written its first records. Reads made
        during that wait wait with it; later ones never wait (the file is there, or the
        session saves none)."""
        if self.transcript() is None:
            return
        with self._handed_lock:
            if self._await_until is None:
                self._await_until = time.monotonic() + FIRST_TRANSCRIPT_WAIT
            until = self._await_until
        while (where := self.transcript()) is not None and not transcript.exists(where):
            if time.monotonic() >= until:
                return
            time.sleep(transcript.POLL)  # a file another program creates, bounded above

    def _read_proof(self) -> dict[str, str | None]:
        """How this server's reads will be judged delivered: by the transcript when the
        client keeps one ackdeck can read, else by estimate (and why)."""
        where = self.transcript()
        if where is None:
            return {"proof": rooms.ESTIMATE, "proof_note": rooms.NO_TRANSCRIPT}
        # A session Claude Code does not save, or something else in the transcript's place.
        if (why := transcript.unusable(where)) is not None:
            return {"proof": rooms.ESTIMATE, "proof_note": why}
        return {"proof": rooms.TRANSCRIPT, "proof_note": None}

    def _shown(
        self, read_id: str | None, asked_by: str | None = None
    ) -> tuple[rooms.Shown | None, str | None]:
        """(how many of the read's lines its model was shown, None: unknown) and the reason
        when unknown. The transcript is read from the size kept at the read (or from its end
        for a read this server did not make), waiting, bounded, for the result's record;
        `asked_by`: the ack's own tool call (what the model saw precedes it)."""
        where = self.transcript()
        if where is None or read_id is None:
            return None, None
        with self._handed_lock:
            tool_use_id, mark = self._handed.get(read_id, (None, None))
        since, before = (None, None) if mark is None else mark
        try:
            seen = transcript.find_seen(
                where,
                tool_use_id=tool_use_id,
                read_id=read_id,
                since=since,
                before=before,
                asked_by=asked_by,
            )
        except transcript.NoProof as exc:
            return None, f"{exc}: the ack removes what was handed over"
        evidence = f"Claude Code transcript {where.name}"
        return rooms.Shown(transcript.shown_lines(seen.text), evidence), None

    def _ack_all(self, r: RoomRef, label: str, handoff: Handoff | None) -> rooms.Acked:
        """ack-all removes only the lines its one reply carries, and only once that reply was
        written (its lines are the reply: a cancelled call removes nothing)."""
        read_id = secrets.token_hex(8)

        def deliver(got: rooms.Lines) -> int:
            return self._fit(got, self._ack_reply(_acked_all(got.emptied()), label, None))

        def confirm(got: rooms.Lines) -> None:
            if handoff is not None and got.lines:
                if not handoff.offer(_result(self._ack_reply(_acked_all(got), label, None))):
                    raise _not_written("room_ack")

        return self.deck.ack(r, all=True, reader=_reader(read_id), deliver=deliver, confirm=confirm)

    def _ack_reply(self, res: rooms.Acked, label: str, read_id: str | None) -> Reply:
        counts = f"acked {counted(res.acked, 'line')}, preserved {counted(res.preserved, 'line')}"
        if res.refusal is not None:
            why = res.refusal.why
            if "reader" in why:
                why = (
                    "the session's latest read of this room was not made by this server "
                    "(another process, or a server started since)"
                    if read_id is None
                    else f"read {read_id} is not the session's latest unacked read of this room"
                )
            unread = counted(res.refusal.unread, "unread line")
            return reply(
                res,
                f"refused: {why} by session {self.config.session!r} ({unread}); nothing was "
                "removed. Call room_list_new, act on the lines, then room_ack (with the "
                "read_id room_list_new returned, from any process); or room_ack with all: "
                "true to ack every line and get them back.",
                error=True,
            )
        if res.must_reread:
            # Nothing was removed and the agent must re-read: make it impossible to miss.
            return reply(res, f"{res.mode}: {res.message} ({counts}). {res.next}", error=True)
        text = f"{res.mode}: {counts} in {label}."
        if res.mode == "noop":
            text = f"noop: {res.message} ({counts} in {label})."
        elif res.unshown:
            unshown = counted(res.unshown, "line")
            text += f" {unshown} of the read stay unread: {rooms.UNSHOWN_WHY}."
        why = "" if res.proof_note is None else f" ({res.proof_note})"
        text += f" Proof: {res.proof}{why}."
        body: list[str] = []
        if res.lines:
            text += " The acked lines:"
            body = res.texts()
        elif res.lines is not None:
            text += " The room had no complete lines."
        if res.next is not None:
            text += f"\n{res.next}"
        return self._reply(res, text, body)

    def room_push(self, room: str | None, text: str) -> Reply:
        pushed = self.deck.push(self.deck.room(room), text)
        return reply(pushed, f"pushed one line to {pushed.room} at stream offset {pushed.offset}")

    def room_push_wait(self, room: str | None, text: str) -> tuple[RoomRef, rooms.Pushed]:
        """The push of a room_push with wait_ack; the wait is the tool's (wait_ack_reply)."""
        ref = self.deck.room(room)
        return ref, self.deck.push(ref, text)

    def room_status(self, room: str | None = None) -> Reply:
        # Without a room: every configured room (read-only, and how an agent discovers them).
        everyone = room is None or room == ""
        report = self.deck.status(None if everyone else [self.deck.room(room)])
        text = "\n".join(
            f"{row.room}{' (default)' if row.default else ''}: {row.unread} unread, "
            f"{row.in_flight} in flight (read, not acked), {row.pending} pending, "
            f"{row.acked_total} acked, {row.preserved_total} preserved"
            + ("" if row.note is None else f". {row.note}")
            for row in report.rooms
        )
        return reply(report, text)

    # -- agents ----------------------------------------------------------------------------
    def agents_list(self) -> Reply:
        """Every agent session of this home, then every Claude Code team member: its presence
        and what waits for it (as `ackdeck agents`)."""
        from ackdeck.core.base.text import age_text, safe
        from ackdeck.core.service.agents import list_agents

        listed = list_agents(self.deck.home, claude_teams=True)
        now = listed.checked_at
        text = "\n".join(
            f"{a.session}: {a.state}"
            + ("" if a.since is None else f" for {age_text(now - a.since)}")
            + f", {a.unread} unread, {a.pending_wakes} pending wakes ({safe(a.evidence)})"
            for a in listed.agents
        )
        return reply(listed, text or "no agent sessions seen yet")

    def messages_list(self, team: str | None = None, session: str | None = None) -> Reply:
        """Every message Claude Code's agents sent each other and its fate, lost and
        duplicated first (as `ackdeck messages --json`)."""
        from ackdeck.core.base.text import safe
        from ackdeck.core.service.claude_messages import list_messages

        found = list_messages(home=self.deck.home, team=team, session=session)
        text = "\n".join(
            f"{m.fate} {m.id[:8]} {m.sender} -> {m.to}: {safe(m.summary or m.text[:60])} "
            f"({safe(m.why)})"
            for m in found.messages
        )
        return reply(found, text or "no messages in Claude Code's transcripts")

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
        info = run
        watch = ""
        if info.monitors:
            m = info.monitors[0]
            watch = f"; monitor {'excluding' if m.exclude else 'matching'} {m.pattern!r}"
        text = f"started {info.name} run {info.run_id} (pid {info.pid}, {info.status}){watch}."
        return reply(run, text if run.next is None else f"{text}\n{run.next}")

    def process_output(
        self,
        name: str,
        filter: str | None = None,  # noqa: A002 - the tool's argument name
        exclude: bool = False,
        timeout: float = 0.0,
        handoff: Handoff | None = None,
        final: Callable[[procs.OutputLines], bool] | None = None,
    ) -> Reply:
        """New output lines, at most one reply's worth. With `handoff`, the reply is offered
        (and the lines recorded as shown only once it was written) when `final` says this read
        ends the call; otherwise the lines it returns (none, or filtered) are recorded at once."""

        def deliver(got: procs.OutputLines) -> int:
            n = self._fit(got, self._output_reply(got.first(0), filter, exclude))
            if handoff is not None and (final is None or final(got)):
                if not handoff.offer(_result(self._output_reply(got.first(n), filter, exclude))):
                    raise _not_written("process_output")
            return n

        res = procs.read_output(
            self.deck.home,
            name,
            self.config.session,
            filter=filter,
            exclude=exclude,
            timeout=timeout,
            deliver=deliver,
        )
        return self._output_reply(res, filter, exclude)

    def _output_reply(self, res: procs.OutputLines, filter: str | None, exclude: bool) -> Reply:  # noqa: A002
        state = res.status if res.exit_code is None else f"{res.status}, exit code {res.exit_code}"
        head = f"{res.name} run {res.run_id} ({state}): {counted(res.count, 'new line')}"
        if filter is not None:
            head += f" {'not ' if exclude else ''}matching {filter!r}"
        if res.waiting:
            head += f"; {res.waiting} more waiting"
        text = head + (":" if res.count else "")
        if res.next is not None:
            text += f"\n{res.next}"
        return self._reply(res, text, res.texts())

    def wakes_drain(self, handoff: Handoff | None = None) -> Reply:
        def deliver(drained: wakes.Drained) -> bool:
            return handoff is None or handoff.offer(_result(self._drain_reply(drained)))

        return self._drain_reply(self.deck.drain(deliver=deliver))

    def _drain_reply(self, drained: wakes.Drained) -> Reply:
        text = drained.text().strip() or f"no wakes for session {self.config.session!r}"
        return reply(drained, text)


def _reader(read_id: str) -> str:
    """The reader a read is bound to: its id, so an ack naming the id may use its receipt."""
    return f"mcp:{read_id}"


def _acked_all(got: rooms.Lines) -> rooms.Acked:
    """What an ack-all of exactly `got` removes, said before it does (its reply is written
    first; the lines stay if the removal then fails: redelivery, never loss)."""
    n = len(got.lines)
    # The words core's ack says of the same removal (core/rooms/file/ack.py).
    said = (
        f"acked {counted(n, 'line')}; preserved {counted(got.waiting, 'line')} that arrived or "
        "remain unread"
    )
    return rooms.Acked(
        mode="all",
        acked=n,
        preserved=got.waiting,
        message=said,
        lines=got.lines,
        room=got.room,
        path=got.path,
        proof=rooms.ESTIMATE,
        proof_note=rooms.ACK_ALL,
    )


# ----- the MCP adapter -----------------------------------------------------------------------
def _instructions(config: DoorConfig, channel: bool) -> str:
    deck = config.deck()
    labels = [deck.label(r) for r in deck.rooms]
    return mcp_instructions(config.session, labels, channel=channel)


class _Server(MCPServer):
    """MCPServer whose tools take exactly what their schemas publish: plain input schemas
    (core/mcp/args.py), unknown arguments refused by name, and argument errors that read
    like every other ackdeck error (the SDK's text is a multi-line pydantic dump with a link)."""

    _accepted: dict[str, list[str]] | None = None
    deliveries: Deliveries | None = None  # the door's (build_server)

    async def list_tools(self) -> list[MCPTool]:
        return [
            t.model_copy(update={"input_schema": plain_input_schema(t.name, t.input_schema)})
            for t in await super().list_tools()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self.deliveries is not None and self.deliveries.recording:
            # An earlier call's reply is out and its work is still recording what the reply
            # said (an ack-all's removal, a read's receipt): every later call sees it done.
            await anyio.to_thread.run_sync(self.deliveries.wait_idle)
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
    config: DoorConfig,
    *,
    clock: Clock = time.time,
    channel: bool = False,
    deliveries: Deliveries | None = None,
) -> MCPServer:
    """The MCP server for one agent session and its configured rooms.

    Every tool argument is strict (`strict=True`): a JSON string is not coerced into a boolean
    or a number, so `room_ack {"all": "yes"}` is an error instead of clearing the room. With
    `channel`, the instructions also say what its channel notices are. `deliveries`: the
    registry a transport that confirms its writes reports to (serve())."""
    door = AgentDoor(config, clock=clock)
    if deliveries is not None:
        door.deliveries = deliveries
    server = _Server(
        name="ackdeck",
        version=package_version(),
        instructions=_instructions(config, channel),
        log_level="WARNING",
    )
    server.deliveries = door.deliveries
    tool = tool_registrar(server)
    room_names = ", ".join(door.deck.label(r) for r in door.deck.rooms)
    room_arg = _arg(f"a configured room (basename or path): {room_names}; default: the first")

    async def delivered(ctx: Context, work: Callable[[Handoff], Reply]) -> CallToolResult:
        """Run a tool whose reply must be written before its work is recorded."""
        door.set_client(client_name(ctx))
        return await call_delivered(
            door.deliveries, request_key(ctx), lambda handoff: _guard(lambda: work(handoff))
        )

    @tool(
        "room_list_new",
        "Return the complete lines now in the room, as many as this client shows its model "
        "whole, and remember exactly what was returned (for room_ack). The result says how "
        "many more wait, its read_id, and what to call next. Lines are decoded as UTF-8 with "
        "replacement.",
    )
    async def room_list_new(
        ctx: Context,
        room: Annotated[str | None, room_arg] = None,
    ) -> Annotated[CallToolResult, ListNewOut]:
        use = tool_use_id(ctx)
        return await delivered(ctx, lambda h: door.room_list_new(room, h, use))

    @tool(
        "room_ack",
        "Remove exactly the lines a room_list_new returned (your last one, or the one whose "
        "read_id you give); lines that arrived since are preserved. Without a read it refuses "
        "(nothing is removed) unless all is true, which acks every complete line it returns.",
    )
    async def room_ack(
        ctx: Context,
        room: Annotated[str | None, room_arg] = None,
        all: Annotated[  # noqa: A002 - the documented tool argument
            bool, _arg("ack every complete line now in the room and return them")
        ] = False,
        read_id: Annotated[
            str | None,
            _arg("the read_id a room_list_new returned: ack exactly that read (any process)"),
        ] = None,
    ) -> Annotated[CallToolResult, AckOut]:
        use = tool_use_id(ctx)
        return await delivered(ctx, lambda h: door.room_ack(room, all, read_id, h, use))

    @tool(
        "room_push",
        "Append one non-empty line (no newline, no NUL) to a configured room (default: the "
        "first). With wait_ack, return once that line was acked (saying by whom and when) or "
        "timeout passed.",
    )
    async def room_push(
        ctx: Context,
        text: Annotated[str, _arg("the line to append")],
        room: Annotated[str | None, room_arg] = None,
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
        "agents_list",
        "Every agent session of this ackdeck home: state (working, waiting, idle, stalled, "
        "gone), since when and the evidence, client, host, rooms, unread lines and the oldest "
        "one's age, pending wakes, last read, ack and nudge. Reads only.",
    )
    def agents_list() -> Annotated[CallToolResult, AgentsOut]:
        return _guard(door.agents_list)

    @tool(
        "messages_list",
        "Every message Claude Code's agents sent each other (SendMessage, team and "
        "cross-session) and its fate from both transcripts: delivered (when, which turn), "
        "waiting, lost, duplicated; lost and duplicated first. Reads only.",
    )
    def messages_list(
        team: Annotated[str | None, _arg("only this team's (session-ID8)")] = None,
        session: Annotated[str | None, _arg("only this sender session's (id or prefix)")] = None,
    ) -> Annotated[CallToolResult, MessagesOut]:
        return _guard(lambda: door.messages_list(team, session))

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
        door.set_client(client_name(ctx))
        return await wait_output(door, ctx, name, filter, exclude, timeout)

    @tool(
        "wakes_drain",
        "Deliver pending monitor wakes for this session (matched output you have "
        "not been shown yet) and mark them delivered.",
    )
    async def wakes_drain(ctx: Context) -> Annotated[CallToolResult, DrainOut]:
        return await delivered(ctx, door.wakes_drain)

    register_manage_tools(server, door)
    register_queue_tools(server, door)
    return server


def _meta_extra(ctx: Context | None) -> dict[str, Any]:
    """The request's `_meta` keys beyond the protocol's own ({} when there are none)."""
    try:
        meta = ctx.request_context.meta  # type: ignore[union-attr]
    except (AttributeError, LookupError, ValueError):
        return {}
    if meta is None:
        return {}
    extra: Any = meta if isinstance(meta, dict) else (getattr(meta, "model_extra", None) or {})
    return extra if isinstance(extra, dict) else {}


def tool_use_id(ctx: Context | None) -> str | None:
    """The model's id of this call, as Claude Code names it in `_meta` (the key its
    transcript's tool result carries): None from other clients."""
    value = _meta_extra(ctx).get(transcript.TOOL_USE_META)
    return value if isinstance(value, str) and 0 < len(value) <= 200 else None


def client_name(ctx: Context | None) -> str | None:
    """The connected client's name: the clientInfo a 2026-07-28 client (Claude Code 2.1, which
    sends no `initialize`) puts in each request's `_meta`, else `initialize`'s clientInfo.name.
    None when the client never said."""
    try:
        rc = ctx.request_context  # type: ignore[union-attr]
    except (AttributeError, LookupError, ValueError):
        return None
    meta = getattr(rc, "meta", None)
    info: Any = None
    if meta is not None:
        extra = meta if isinstance(meta, dict) else (getattr(meta, "model_extra", None) or {})
        info = extra.get(CLIENT_INFO_META_KEY)
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        return info["name"]
    for holder in (getattr(rc, "session", None), getattr(rc, "connection", None)):
        params = getattr(holder, "client_params", None)
        name = getattr(getattr(params, "client_info", None), "name", None)
        if isinstance(name, str):
            return name
    return None


def serve(config: DoorConfig, *, channel: bool = True, notice_window: float = 0.5) -> None:
    """Run the server on stdin/stdout until the client disconnects; with `channel`, push
    `notifications/claude/channel` notices (see core/mcp/channel.py)."""
    import anyio

    from ackdeck.core.mcp.channel import make_noticer, serve_stdio

    _plain_sdk_logging()
    noticer = make_noticer(config.home, config.session, list(config.rooms)) if channel else None
    deliveries = Deliveries()
    server = build_server(config, channel=channel, deliveries=deliveries)
    # Presence (`ackdeck agents`): the session is there while its client is connected. A
    # client that dies closes this server's stdin, so the disconnect is recorded as the server
    # exits; a server killed too is found dead by its pid.
    seen = ClientSeen(config)
    server.middleware.append(seen)
    seen.note("connect", rooms=[r.display for r in config.rooms])
    _note_disconnect_on_sigterm(seen)
    stop_publishing = _publish_to_fleet(config)
    try:
        anyio.run(lambda: serve_stdio(server, noticer, window=notice_window, deliveries=deliveries))
    finally:
        seen.note("disconnect")
        stop_publishing()


def _publish_to_fleet(config: DoorConfig) -> Callable[[], None]:
    """With a fleet set (ACKDECK_FLEET, ACKDECK_HOST_ID or the config file: docs/how-to/
    fleet.md), publish this home's snapshot every TTL/3 from a daemon thread for as long as
    the server runs, so a host whose agents run is on the fleet without a separate publisher.
    Nothing of it is on a tool's path; an unreachable fleet is one line on stderr (the
    client's log), once per outage. Returns what stops it."""
    import sys
    import threading

    from ackdeck.core.base.home import resolve_home
    from ackdeck.core.errors import AckdeckError

    try:
        from ackdeck.core.service.fleet.settings import resolve_fleet

        settings = resolve_fleet()
        if settings is None:
            return lambda: None
        home = resolve_home(config.home)
    except AckdeckError as exc:
        print(f"ackdeck mcp: not publishing to the fleet: {exc}", file=sys.stderr, flush=True)
        return lambda: None
    from ackdeck.core.service.fleet.hosts import FleetLink, Publisher

    link = FleetLink(settings)
    stop = threading.Event()

    def say(line: str) -> None:
        print(f"ackdeck mcp: {line}", file=sys.stderr, flush=True)

    publisher = Publisher(link, home, say=say)
    thread = threading.Thread(
        target=publisher.run, args=(stop.wait,), name="ackdeck-fleet", daemon=True
    )
    thread.start()
    return stop.set


def _note_disconnect_on_sigterm(seen: "ClientSeen") -> None:
    """A client that closes the server's stdin and then sends SIGTERM (the SDK's own client
    does so after 2 s) still gets its disconnect recorded; the signal then does what it
    would have done."""
    import signal

    def on_term(signum: int, frame: object) -> None:
        seen.note("disconnect")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, on_term)


class ClientSeen:
    """Server middleware recording the connected client's name and version in the session's
    presence, once: from `initialize`'s clientInfo, or the clientInfo a 2026-era client puts
    in each request's `_meta`."""

    def __init__(self, config: DoorConfig) -> None:
        self.config = config
        self.said: tuple[str, str | None] | None = None

    def note(self, kind: str, **fields: Any) -> None:
        from ackdeck.core.base.home import resolve_home
        from ackdeck.core.errors import AckdeckError
        from ackdeck.core.service import presence

        try:
            home = resolve_home(self.config.home)
        except AckdeckError:
            return  # no home, no presence: the tools say what is wrong with it
        presence.record(
            home,
            self.config.session,
            kind,
            pid=os.getpid(),
            host=presence.this_host(),
            **fields,
        )

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if self.said is None:
            info = _client_info(ctx)
            if info is not None:
                self.said = info
                self.note("client", client=info[0], version=info[1])
        return await call_next(ctx)


def _client_info(ctx: Any) -> tuple[str, str | None] | None:
    """(name, version) of the client from a request's context, None when it does not say."""
    candidates: list[Any] = []
    params: Any = getattr(ctx, "params", None)
    if getattr(ctx, "method", None) == "initialize" and params is not None:
        candidates.append(getattr(params, "get", lambda _k: None)("clientInfo"))
    meta = getattr(ctx, "meta", None)
    if meta is not None:
        extra = meta if isinstance(meta, dict) else (getattr(meta, "model_extra", None) or {})
        candidates.append(extra.get(CLIENT_INFO_META_KEY))
    for info in candidates:
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            version = info.get("version")
            return info["name"][:80], version[:40] if isinstance(version, str) else None
    return None


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
