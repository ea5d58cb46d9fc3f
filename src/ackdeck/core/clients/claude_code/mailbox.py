"""A Claude Code agent team's mailbox, as its own code reads and writes it: pure decisions, no
I/O (the file and its lock are `core.rooms.claude_team.room`'s).

Read from Claude Code 2.1.328 (its `TeammateMailbox` module; docs/how-to/claude-teams.md):
`TEAMS/TEAM/inboxes/AGENT.json` holds one JSON array, written whole as `JSON.stringify(entries,
null, 2)`. Each entry is an object with string `from`, `text`, `timestamp` (ISO 8601), and
optionally `type` (string), `read` (boolean; missing means unread), `color`, `summary`,
`from_plugin` (strings); newer writers add `msgV`, `msg_id` (a UUID) and, from the team lead,
`lead_sig`. Control messages travel as a JSON object inside `text` (`{"type":
"permission_request", ...}`); everything else is a chat message.

ackdeck refuses to guess at a shape it was not written for: a file that is not complete JSON, a
top level that is not an array, or an entry that is not in that shape is one line naming the
file and what was expected (`BadMailbox`), and nothing is written to it (Claude Code itself
drops such entries and rewrites the file; ackdeck leaves that to it).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ackdeck.core.base.digest import sha256_hex
from ackdeck.core.base.jsonfields import parse as parse_json
from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import BadMailbox, InvalidInput

if TYPE_CHECKING:
    from collections.abc import Iterable

# The entry schema Claude Code validates every entry against (and the message version it
# stamps on what it writes).
REQUIRED = ("from", "text", "timestamp")
OPTIONAL_STR = ("type", "color", "summary", "from_plugin")
MSG_VERSION = 1

# Names Claude Code reserves for the lead and the user and checks by signature: an unsigned
# entry from one of them is shown to a teammate as forged, so ackdeck never writes as them.
RESERVED_SENDERS = frozenset({"team-lead", "user", "system"})

# Control messages that ask for an answer, by the field naming the request, and the types that
# answer them (with the same field). A request without an answer anywhere in the team waits
# for someone: the owner, usually.
REQUESTS = {
    "permission_request": "request_id",
    "sandbox_permission_request": "requestId",
    "plan_approval_request": "requestId",
    "shutdown_request": "requestId",
}
ANSWERS = {
    "permission_response": "request_id",
    "sandbox_permission_response": "requestId",
    "plan_approval_response": "requestId",
    "shutdown_response": "requestId",
    "shutdown_approved": "requestId",
    "shutdown_rejected": "requestId",
}
# The protocol frames Claude Code's SendMessage refuses as plain text (a push must not forge
# one): the requests and answers above and the lifecycle notices.
PROTOCOL_TYPES = frozenset(
    {
        *REQUESTS,
        *ANSWERS,
        "team_permission_update",
        "mode_set_request",
        "idle_notification",
        "teammate_terminated",
        "task_assignment",
        "task_completed",
    }
)


class Event(Struct):
    """A control message, shown as what happened rather than as chat."""

    kind: str  # its `type`: idle_notification, permission_request, ...
    sender: str
    at: float | None
    text: str  # one line saying what it is
    request_id: str | None = None  # for a request or an answer
    pending: bool = False  # a request no answer in the team matches yet


class MailEntry(Struct):
    index: int  # position in the file
    key: str  # msg_id, else a digest of from|timestamp|text (how Claude Code tells entries)
    sender: str
    text: str
    timestamp: str
    at: float | None  # the timestamp as epoch seconds (None: not a timestamp)
    read: bool
    summary: str | None = None
    event: Event | None = None


class Summary(Struct):
    total: int
    unread: int
    oldest_unread_at: float | None
    newest_at: float | None
    senders: dict[str, list[int]]  # sender -> [entries, unread]
    events: list[Event]
    pending: list[Event]  # requests still waiting for an answer


def parse_timestamp(text: str) -> float | None:
    """An entry's ISO 8601 timestamp (`new Date().toISOString()`) as epoch seconds."""
    try:
        when = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def now_timestamp(now: float) -> str:
    """`now` as JavaScript's `toISOString()` writes it: UTC, milliseconds, `Z`."""
    when = datetime.fromtimestamp(now, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _entry_problem(doc: object) -> str | None:
    if not isinstance(doc, dict):
        return f"it is {_kind(doc)}"
    for name in REQUIRED:
        if name not in doc:
            return f"it has no {name!r}"
        if not isinstance(doc[name], str):
            return f"its {name!r} is {_kind(doc[name])}"
    for name in OPTIONAL_STR:
        if name in doc and not isinstance(doc[name], str):
            return f"its {name!r} is {_kind(doc[name])}"
    if "read" in doc and not isinstance(doc["read"], bool):
        return f"its 'read' is {_kind(doc['read'])}"
    return None


EXPECTED = (
    "expected Claude Code's mailbox: a JSON array of objects with string from, text, "
    "timestamp and an optional boolean read"
)


def load(raw: bytes, where: str) -> list[dict]:
    """The entries of a mailbox file's bytes, exactly as stored. An empty file is an empty
    mailbox (Claude Code creates it, then writes `[]`). Raises BadMailbox."""
    if not raw.strip():
        return []
    try:
        doc = parse_json(raw)
    except UnicodeDecodeError:
        raise BadMailbox(f"{where}: not UTF-8 text; {EXPECTED}") from None
    except json.JSONDecodeError as exc:
        raise BadMailbox(
            f"{where}: not complete JSON (half-written? {exc.msg} at byte {exc.pos}); {EXPECTED}"
        ) from None
    except ValueError as exc:  # NaN, a number out of range, nesting no mailbox has
        raise BadMailbox(f"{where}: {exc}; {EXPECTED}") from None
    if not isinstance(doc, list):
        raise BadMailbox(f"{where}: the top level is {_kind(doc)}; {EXPECTED}")
    for n, entry in enumerate(doc):
        problem = _entry_problem(entry)
        if problem is not None:
            raise BadMailbox(f"{where}: entry {n} is not one ({problem}); {EXPECTED}")
    return doc


def dump(entries: list[dict]) -> bytes:
    """The file as Claude Code writes it: `JSON.stringify(entries, null, 2)`."""
    return json.dumps(entries, indent=2, ensure_ascii=False).encode()


def entry_key(doc: dict) -> str:
    """How an entry is told from another: its `msg_id`, else (older writers) the triple
    Claude Code itself matches on when it marks one read, digested."""
    msg_id = doc.get("msg_id")
    if isinstance(msg_id, str) and msg_id:
        return msg_id
    triple = f"{doc['from']}|{doc['timestamp']}|{doc['text']}"
    return "h" + sha256_hex(triple.encode())[:32]


def control(text: str) -> dict | None:
    """The control message inside `text` (a JSON object with a string `type`), or None."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        doc = parse_json(text)
    except ValueError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("type"), str):
        return doc
    return None


def _field(doc: dict, name: str) -> str | None:
    value = doc.get(name)
    return value if isinstance(value, str) and value else None


def _event_text(kind: str, doc: dict, sender: str) -> str:
    if kind == "permission_request":
        tool = _field(doc, "tool_name") or "a tool"
        what = _field(doc, "description")
        return f"{sender} asks permission to use {tool}" + (f": {what}" if what else "")
    if kind == "sandbox_permission_request":
        host = doc.get("hostPattern")
        name = _field(host, "host") if isinstance(host, dict) else None
        return f"{sender} asks to reach {name or 'a host'} from the sandbox"
    if kind == "plan_approval_request":
        return f"{sender} asks approval of a plan ({_field(doc, 'planFilePath') or 'no file'})"
    if kind == "shutdown_request":
        reason = _field(doc, "reason")
        return f"{sender} is asked to shut down" + (f": {reason}" if reason else "")
    if kind == "idle_notification":
        reason = _field(doc, "idleReason") or "available"
        done = _field(doc, "completedTaskId")
        return f"{sender} is idle ({reason})" + (f", finished task {done}" if done else "")
    if kind == "permission_response":
        return f"permission answered ({_field(doc, 'subtype') or '?'})"
    if kind == "plan_approval_response":
        return "plan approved" if doc.get("approved") is True else "plan rejected"
    if kind in ("shutdown_approved", "shutdown_rejected"):
        return f"{sender}: {kind.replace('_', ' ')}"
    if kind == "task_assignment":
        return f"task {_field(doc, 'taskId') or '?'} assigned: {_field(doc, 'subject') or ''}"
    if kind == "task_completed":
        return f"task {_field(doc, 'taskId') or '?'} completed"
    if kind == "teammate_terminated":
        return _field(doc, "message") or "a teammate was terminated"
    return f"{sender}: {kind}"


def answered_ids(entries: Iterable[dict]) -> set[str]:
    """The request ids the answers among `entries` carry (look in every mailbox of a team:
    an answer travels to the asker's mailbox, not the one holding the request)."""
    out: set[str] = set()
    for doc in entries:
        msg = control(doc["text"])
        if msg is None or msg["type"] not in ANSWERS:
            continue
        rid = _field(msg, ANSWERS[msg["type"]])
        if rid is not None:
            out.add(rid)
    return out


def entries_of(docs: list[dict], answered: set[str] | None = None) -> list[MailEntry]:
    """Each entry as ackdeck shows it; `answered`: request ids answered anywhere in the team
    (None: this mailbox's own answers only)."""
    answered = answered_ids(docs) if answered is None else answered
    out = []
    for n, doc in enumerate(docs):
        sender, text, stamp = doc["from"], doc["text"], doc["timestamp"]
        at = parse_timestamp(stamp)
        event = None
        msg = control(text)
        if msg is not None:
            kind = msg["type"]
            rid_field = REQUESTS.get(kind) or ANSWERS.get(kind)
            rid = _field(msg, rid_field) if rid_field else None
            event = Event(
                kind,
                sender,
                at,
                _event_text(kind, msg, sender),
                rid,
                kind in REQUESTS and (rid is None or rid not in answered),
            )
        out.append(
            MailEntry(
                n,
                entry_key(doc),
                sender,
                text,
                stamp,
                at,
                doc.get("read") is True,
                doc.get("summary") if isinstance(doc.get("summary"), str) else None,
                event,
            )
        )
    return out


def summarize(entries: list[MailEntry]) -> Summary:
    senders: dict[str, list[int]] = {}
    unread = 0
    oldest: float | None = None
    newest: float | None = None
    for e in entries:
        counts = senders.setdefault(e.sender, [0, 0])
        counts[0] += 1
        if e.at is not None and (newest is None or e.at > newest):
            newest = e.at
        if not e.read:
            counts[1] += 1
            unread += 1
            if e.at is not None and (oldest is None or e.at < oldest):
                oldest = e.at
    events = [e.event for e in entries if e.event is not None]
    return Summary(
        len(entries), unread, oldest, newest, senders, events, [ev for ev in events if ev.pending]
    )


def check_sender(sender: str) -> str:
    """A name the owner may write as: not one Claude Code verifies by signature."""
    if not sender or any(c.isspace() or ord(c) < 32 for c in sender):
        raise InvalidInput(f"sender {sender!r} must be a non-empty name without spaces")
    if sender in RESERVED_SENDERS:
        raise InvalidInput(
            f"sender {sender!r} is reserved by Claude Code (it checks the lead's and the user's "
            "messages by signature, and would show this one as forged); choose another name"
        )
    return sender


def check_text(text: str) -> str:
    """A message the owner may push: plain text, never a protocol frame (Claude Code's own
    SendMessage refuses those as text too: a teammate would act on a forged request)."""
    if not text.strip():
        raise InvalidInput("the message is empty")
    msg = control(text)
    if msg is not None and msg["type"] in PROTOCOL_TYPES:
        raise InvalidInput(
            f"the message is a Claude Code protocol frame ({msg['type']}); push plain text"
        )
    return text


def new_entry(
    sender: str,
    text: str,
    now: float,
    *,
    summary: str | None = None,
    msg_id: str | None = None,
    color: str | None = None,
) -> dict:
    """An entry in the shape Claude Code 2.1.328 writes (same keys, same order, seen in a
    SendMessage's entry: from, text, summary, timestamp, color, msgV, msg_id, type, read): the
    message, then its version and id, its type, unread. `msg_id`: one the caller derived (a
    retry writes the same id), else a fresh UUID."""
    doc: dict = {"from": check_sender(sender), "text": check_text(text)}
    if summary:
        doc["summary"] = summary
    doc["timestamp"] = now_timestamp(now)
    if color:
        doc["color"] = color
    doc.update(msgV=MSG_VERSION, msg_id=msg_id or str(uuid.uuid4()), type="message", read=False)
    return doc


def mark_read(docs: list[dict], keys: set[str]) -> tuple[list[dict], int]:
    """`docs` with the entries whose key is in `keys` marked read (only those, and only if
    unread); how many were marked. The rest, their order and their fields are unchanged."""
    out = []
    marked = 0
    for doc in docs:
        if doc.get("read") is not True and entry_key(doc) in keys:
            doc = {**doc, "read": True}
            marked += 1
        out.append(doc)
    return out, marked
