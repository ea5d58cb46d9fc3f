"""Claude Code's messages between agents, as its transcripts record them (issue 44, item 1):
the records, and a scanner that reads a transcript once, from where it last stopped.

Observed offline on Claude Code 2.1.328 (tests/test_claude_messages.py keeps them):

- A message sent is a tool call in the sender's transcript: an `assistant` record with a
  `tool_use` block `{name: "SendMessage", input: {to, summary, message}}` (Claude Code adds
  `recipient` and `content` with the same values). Its result, a `user` record with the
  `tool_result`, is the JSON text `{"success": true, "message": "Message sent to worker's
  inbox", "msg_id": UUID, "routing": {"sender", "target", ...}}`: the msg_id is the one the
  entry carries in the recipient's inbox.
- A SendMessage to "*" (a broadcast) is refused before anything is written: its result is
  `<tool_use_error>broadcast (to: "*") is no longer supported — send a message per
  recipient</tool_use_error>` (`is_error`); no inbox gets an entry (`message_fates.is_message`).
- The recipient's transcript (the lead's `projects/DIR/SESSION.jsonl`, a teammate's
  `projects/DIR/SESSION/subagents/agent-a<name>-<hex>.jsonl`) gets a `user` record whose text
  holds `<teammate-message teammate_id="SENDER" summary="…">\\nTEXT\\n</teammate-message>`
  (the lead's starts "Another Claude session sent a message:" and may hold several blocks);
  a message from another session is `<cross-session-message from="uds:…" from-name="…">`.
  That record is written before the model request goes out (an `api-request` record follows
  it): being in the transcript is not being delivered. The model's answer is an `assistant`
  record after it; only then did a turn that had the message in its input complete.
- Each model response has its own `message.id`; Claude Code records each content block of a
  response as its own `assistant` record with that id: turns are counted by distinct ids.
- A request the API refuses ends with a synthetic `assistant` record (`isApiErrorMessage:
  true`, model `<synthetic>`, text `API Error: …`): not an answer, not a turn. The message
  stays in the conversation, so the next request that completes had it in its input.

The scanner is pure over bytes (`feed`): it keeps the offset of the last complete line, each
message sent (with its result once recorded), each message carried to this transcript's model
and the first answer after it. Lines that cannot hold one of these are skipped unparsed.
"""

from __future__ import annotations

import html
import json
import re

from ackdeck.core.base.struct import Struct

SEND_TOOL = "SendMessage"
TEAM_TAG = "teammate-message"
CROSS_TAG = "cross-session-message"

_BLOCK = re.compile(
    r"<(teammate-message|cross-session-message)((?:\s+[\w-]+=\"[^\"]*\")*)\s*>\n?(.*?)\n?</\1>",
    re.DOTALL,
)
_ATTR = re.compile(r"([\w-]+)=\"([^\"]*)\"")
# Markers a line must hold to be parsed at all (a transcript is mostly tool results).
_ASSISTANT = b'"assistant"'  # "type":"assistant" as Claude Code writes it; any spacing
_CARRIED = (TEAM_TAG.encode(), CROSS_TAG.encode())
_SEND = b'"' + SEND_TOOL.encode() + b'"'


class Sent(Struct):
    """One SendMessage call in a sender's transcript."""

    tool_use_id: str
    to: str
    summary: str | None
    text: str
    at: str  # the call's record timestamp
    offset: int  # where its record starts in the transcript
    length: int  # its record's bytes (the evidence line)
    msg_id: str | None = None  # from the result, once recorded
    ok: bool | None = None  # None: no result recorded (yet)


class Carried(Struct):
    """One message in a model request of the recipient: the user record that carried it."""

    kind: str  # "team" | "cross-session"
    sender: str  # teammate_id, or a cross-session message's from-name
    summary: str | None
    text: str
    at: str
    offset: int
    length: int
    answered_at: str | None = None  # the first assistant record after it
    turn: int | None = None  # that answer's model response, counted from 1 in the transcript
    failed: str | None = None  # the API error its request ended with, while unanswered


class Scanned(Struct):
    """What one transcript holds of messages, up to `offset` (a complete line's end)."""

    ino: int
    offset: int
    tail: str  # the last bytes before `offset` (latin-1), to see a rewrite
    turns: int  # model responses seen (distinct message ids)
    last_response: str | None
    sent: list[Sent]
    carried: list[Carried]
    head: str = ""  # a digest of the first `head_len` bytes: a file copied over differs there
    head_len: int = 0

    @classmethod
    def empty(cls, ino: int) -> Scanned:
        return cls(ino, 0, "", 0, None, [], [])


TAIL_CHECK = 64  # bytes before the kept offset compared on the next look
HEAD_CHECK = 4096  # bytes from the start compared on the next look (a transcript's first
# records name its session: another transcript put in its place differs there)


def head_digest(data: bytes) -> str:
    from ackdeck.core.base.digest import sha256_hex

    return sha256_hex(data)


def blocks(text: str) -> list[tuple[str, str, str | None, str]]:
    """(kind, sender, summary, text) of each message block in a user record's text."""
    out = []
    for m in _BLOCK.finditer(text):
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(m.group(2))}
        kind = "team" if m.group(1) == TEAM_TAG else "cross-session"
        sender = attrs.get("teammate_id") if kind == "team" else attrs.get("from-name")
        sender = sender or attrs.get("from") or "?"
        out.append((kind, sender, attrs.get("summary"), m.group(3)))
    return out


def _user_text(record: dict) -> str | None:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b.get("text")
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        return "\n".join(p for p in parts if isinstance(p, str)) if parts else None
    return None


def _content(record: dict) -> list:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _sends(record: dict, offset: int, length: int) -> list[Sent]:
    out = []
    for b in _content(record):
        if not isinstance(b, dict) or b.get("type") != "tool_use" or b.get("name") != SEND_TOOL:
            continue
        raw = b.get("input")
        args: dict = raw if isinstance(raw, dict) else {}
        to = _str(args.get("to")) or _str(args.get("recipient"))
        text = _str(args.get("message")) or _str(args.get("content"))
        tid = _str(b.get("id"))
        if to is None or text is None or tid is None:
            continue  # a protocol frame (an object), not a message ackdeck can follow
        at = _str(record.get("timestamp")) or ""
        out.append(Sent(tid, to, _str(args.get("summary")), text, at, offset, length))
    return out


def _result(record: dict, pending: dict[str, int]) -> list[tuple[int, str | None, bool]]:
    """(index into sent, msg_id, ok) for each pending SendMessage's result in a user record."""
    out = []
    for b in _content(record):
        if not isinstance(b, dict) or b.get("type") != "tool_result":
            continue
        i = pending.get(_str(b.get("tool_use_id")) or "")
        if i is None:
            continue
        content = b.get("content")
        text = content if isinstance(content, str) else None
        if isinstance(content, list):
            text = "".join(
                c.get("text", "")
                for c in content
                if isinstance(c, dict) and c.get("type") == "text"
            )
        doc: object = None
        try:
            doc = json.loads(text) if text else None
        except ValueError:
            doc = None
        ok = isinstance(doc, dict) and doc.get("success") is True and not b.get("is_error")
        msg_id = _str(doc.get("msg_id")) if isinstance(doc, dict) else None
        out.append((i, msg_id, ok))
    return out


def _protocol(text: str) -> bool:
    """A block Claude Code itself sent (idle notices, permission frames: a JSON object with a
    protocol `type`): kept out of the scan, which a long session would fill with them."""
    if not text.startswith("{"):
        return False
    from ackdeck.core.clients.claude_code.mailbox import PROTOCOL_TYPES, control

    doc = control(text)
    return doc is not None and doc.get("type") in PROTOCOL_TYPES


def _api_error(record: dict) -> bool:
    """Claude Code's stand-in for an answer that never came (a refused or failed request)."""
    if record.get("isApiErrorMessage") is True:
        return True
    message = record.get("message")
    return isinstance(message, dict) and message.get("model") == "<synthetic>"


def _error_text(record: dict) -> str:
    for b in _content(record):
        if isinstance(b, dict) and isinstance(b.get("text"), str):
            return str(b["text"])[:200]
    return "API error"


def feed(state: Scanned, data: bytes, start: int) -> Scanned:
    """`state` after the complete lines of `data` (the transcript's bytes from `start`, which
    is `state.offset`). A last line without its newline is still being written: left for the
    next look. A line that is not JSON is skipped (Claude Code never rewrites a transcript;
    a torn line mid-file is not a message)."""
    end = data.rfind(b"\n")
    if end < 0:
        return state
    sent, carried = list(state.sent), list(state.carried)
    turns, last = state.turns, state.last_response
    pending = {s.tool_use_id: i for i, s in enumerate(sent) if s.ok is None}
    unanswered = [i for i, c in enumerate(carried) if c.answered_at is None]
    pos = start
    for line in data[:end].split(b"\n"):
        offset, pos = pos, pos + len(line) + 1
        assistant = _ASSISTANT in line
        carries = any(m in line for m in _CARRIED)
        sends = assistant and _SEND in line
        results = bool(pending) and b'"tool_result"' in line
        if not (assistant or carries or results):
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        if kind == "assistant" and _api_error(record):
            why = _error_text(record)
            for i in unanswered:
                if carried[i].failed is None:
                    carried[i] = carried[i].replace(failed=why)
            continue
        if kind == "assistant":
            message = record.get("message")
            mid = _str(message.get("id")) if isinstance(message, dict) else None
            if mid is None or mid != last:
                turns += 1
                last = mid
            at = _str(record.get("timestamp")) or ""
            for i in unanswered:
                carried[i] = carried[i].replace(answered_at=at, turn=turns)
            unanswered = []
            if sends:
                for s in _sends(record, offset, len(line)):
                    pending[s.tool_use_id] = len(sent)
                    sent.append(s)
        elif kind == "user":
            for i, msg_id, ok in _result(record, pending) if results else []:
                sent[i] = sent[i].replace(msg_id=msg_id, ok=ok)
                pending.pop(sent[i].tool_use_id, None)
            text = _user_text(record) if carries else None
            for k, sender, summary, body in blocks(text or ""):
                if _protocol(body):
                    continue  # an idle notice and the like: Claude Code's, never a SendMessage
                at = _str(record.get("timestamp")) or ""
                unanswered.append(len(carried))
                carried.append(Carried(k, sender, summary, body, at, offset, len(line)))
    consumed = data[: end + 1]
    tail = (state.tail.encode("latin-1") + consumed)[-TAIL_CHECK:].decode("latin-1")
    head, head_len = state.head, state.head_len
    if start == 0:
        # Known from the first look: up to HEAD_CHECK bytes of complete records.
        head_len = min(HEAD_CHECK, end + 1)
        head = head_digest(data[:head_len])
    return state.replace(
        head=head,
        head_len=head_len,
        offset=start + end + 1,
        tail=tail,
        turns=turns,
        last_response=last,
        sent=sent,
        carried=carried,
    )


def kept_still_holds(
    state: Scanned, ino: int, size: int, before: bytes, head: bytes | None = None
) -> bool:
    """Is the transcript still the one `state` scanned (same inode, not shorter, its first
    `head_len` bytes and the bytes before the kept offset unchanged)? Otherwise it is read
    again from its start."""
    if ino != state.ino or size < state.offset:
        return False
    if head is not None and state.head_len and head_digest(head) != state.head:
        return False
    return before == state.tail.encode("latin-1")
