"""The presence decision, pure: a session's events -> its facts (`fold`) -> its state
(`decide`), with `since` and the evidence. No I/O here: the log (core/presence/log.py) reads the
events, the caller says which server pids are still alive and what waits unread.

States, first match wins:
- `gone`: the client ended the session (Claude Code's SessionEnd hook), or every MCP server
  it had connected has disconnected or died (a client killed with kill -9 closes its server's
  stdin: the server records the disconnect as it exits; a server killed too is found dead by
  its pid).
- `waiting`: the client notified that it waits for its owner (a permission prompt, an idle
  prompt, a dialog) and the session did nothing since.
- `working`: a turn started (UserPromptSubmit) and has not stopped, a Stop hook made it go on
  (exit 2), or it read or acked since its last stop (a turn the hooks did not see start, or a
  client without hooks) within `ACTIVE_S`.
- `idle`: otherwise.
- `stalled` replaces `idle` or `working` when lines wait unread for longer than the session's
  own reads say is normal (`threshold`), or when a nudge went unanswered for `NUDGE_GRACE_S`
  while lines wait.

A source other than ackdeck's own doors (another tool's mailbox, for instance) adds events of
its own kinds and an `Agent` row with its `origin`; `decide` ignores kinds it does not know.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ackdeck.core.base.struct import Struct
from ackdeck.core.base.text import counted

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, TypeGuard

STATES = ("working", "waiting", "idle", "stalled", "gone")
# Activity (a read, an ack) without a turn around it counts as working this long.
ACTIVE_S = 60.0
# Stall threshold: a session with at least MIN_SAMPLES reads that waited is stalled past
# FACTOR times the 90th percentile of how long its last WINDOW reads waited, never below
# FLOOR_S; a session with fewer samples is judged against DEFAULT_S.
FLOOR_S = 60.0
DEFAULT_S = 600.0
FACTOR = 3.0
MIN_SAMPLES = 5
WINDOW = 50
# A nudge unanswered (no read after it) for this long, with lines still unread: stalled.
NUDGE_GRACE_S = 120.0
# Notification types (Claude Code's `notification_type`) that mean the client waits for its
# owner; any other notification is kept in the timeline only.
WAITING_KINDS = frozenset({"permission_prompt", "idle_prompt", "elicitation_dialog"})
# Events of a turn, written by the hooks.
TURN_EVENTS = frozenset({"start", "prompt", "stop", "notify", "end"})


class Facts:
    """What a session's events say, folded (the carry of a rotated log is one of these).
    Mutable only while `fold` builds it."""

    __slots__ = (
        "client",
        "first_at",
        "host",
        "last_ack",
        "last_at",
        "last_nudge",
        "last_read",
        "nudges_unanswered",
        "nudges_held",
        "rooms",
        "servers",
        "servers_ever",
        "session",
        "origin",
        "turn",
        "turn_at",
        "turn_detail",
        "version",
        "waited",
        "activity_at",
        "activity_what",
        "claude_session",
        "gone_at",
        "gone_why",
    )

    def __init__(self, session: str, origin: str = "ackdeck") -> None:
        self.session, self.origin = session, origin
        self.client: str | None = None
        self.version: str | None = None
        self.host: str | None = None
        self.rooms: list[str] = []
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.turn: str | None = None  # the last turn event (TURN_EVENTS, "stop!" when it went on)
        self.turn_at: float | None = None
        self.turn_detail: str = ""
        self.servers: dict[str, float] = {}  # "host:pid" of each connected MCP server -> since
        self.servers_ever = False
        self.last_read: float | None = None
        self.last_ack: float | None = None
        self.last_nudge: float | None = None
        self.nudges_unanswered = 0
        self.nudges_held = False  # the bound was reached and the owner was told
        self.waited: list[float] = []  # how long the lines each read took had waited
        self.activity_at: float | None = None  # last read or ack
        self.activity_what = ""
        self.gone_at: float | None = None
        self.gone_why = ""
        # Claude Code's session id, from its hooks' payloads (matched with its registry).
        self.claude_session: str | None = None

    def carry(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    @classmethod
    def from_carry(cls, data: Mapping[str, Any], session: str) -> Facts:
        """The facts a carry holds; a value of the wrong kind (a damaged or hand-edited
        log) keeps the default, so every fact has the type the decision expects."""
        f = cls(session)
        for k, kind in _CARRIED.items():
            v = data.get(k)
            if kind is float:
                if is_time(v) or v is None:
                    setattr(f, k, v)
            elif isinstance(v, kind) and (kind is bool or not isinstance(v, bool)):
                setattr(f, k, v)
        servers = data.get("servers")
        if isinstance(servers, dict):
            f.servers = {str(k): float(v) for k, v in servers.items() if is_time(v)}
        waited = data.get("waited")
        if isinstance(waited, list):
            f.waited = [float(x) for x in waited if is_time(x) and x >= 0][-WINDOW:]
        rooms = data.get("rooms")
        if isinstance(rooms, list):
            f.rooms = [r for r in rooms if isinstance(r, str) and r]
        return f


# The carried facts of one plain kind (float: a time, finite and in range, or None).
_CARRIED: dict[str, type] = {
    "client": str,
    "version": str,
    "host": str,
    "origin": str,
    "first_at": float,
    "last_at": float,
    "turn": str,
    "turn_at": float,
    "turn_detail": str,
    "servers_ever": bool,
    "last_read": float,
    "last_ack": float,
    "last_nudge": float,
    "nudges_unanswered": int,
    "nudges_held": bool,
    "activity_at": float,
    "activity_what": str,
    "gone_at": float,
    "gone_why": str,
}
# Times (and waits) beyond this many seconds from the epoch, either way, are damage, not a
# clock: year 5138. A log holding one (or NaN, which no JSON writer emits) must not reach
# the clock arithmetic and date formatting that would overflow on it.
TIME_BOUND = 1e11


def is_time(v: object) -> TypeGuard[float]:
    """A number that can be a time or a duration here: finite, within TIME_BOUND."""
    return isinstance(v, int | float) and not isinstance(v, bool) and -TIME_BOUND < v < TIME_BOUND


def fold(session: str, events: Iterable[Mapping[str, Any]]) -> Facts:
    """The facts of `events`, taken in the order of their times (writers append as they
    go, but two processes' appends can cross). A `carry` event replaces everything before it;
    events of unknown kinds or without a time are skipped (a newer writer's, or torn)."""
    f = Facts(session)
    timed = [(t, e) for e in events if is_time(t := e.get("t"))]
    if any(a[0] > b[0] for a, b in zip(timed, timed[1:], strict=False)):  # crossed: rare
        timed.sort(key=lambda te: te[0])  # stable: same-time events keep their order
    for t, e in timed:
        kind = e.get("ev")
        if kind == "carry":
            data = e.get("facts")
            if isinstance(data, dict):
                f = Facts.from_carry(data, session)
            continue
        if isinstance(kind, str):
            _apply(f, kind, float(t), e)
    return f


# Events that name the session's host and rooms.
_PLACED = frozenset({"start", "connect", "disconnect", "client"})


def _lines_of(e: Mapping[str, Any]) -> str:
    """`N lines of NAME` of a read or ack event: the room's last path part (a file's name,
    a redis room's name), short enough for a table cell; the event keeps the whole room."""
    room = str(e.get("room") or "?").rstrip("/").rsplit("/", 1)[-1]
    n = e.get("lines")
    if isinstance(n, bool) or not isinstance(n, int):
        return f"? lines of {room}"
    return f"{counted(n, 'line')} of {room}"


def _add_rooms(f: Facts, rooms: Iterable[object]) -> None:
    for r in rooms:
        if isinstance(r, str) and r and r not in f.rooms:
            f.rooms.append(r)


def _apply(f: Facts, kind: str, t: float, e: Mapping[str, Any]) -> None:
    if f.first_at is None:
        f.first_at = t
    f.last_at = t  # events come in time order (fold)
    if kind in _PLACED:
        if isinstance(e.get("host"), str):
            f.host = e["host"]
        rooms = e.get("rooms")
        if isinstance(rooms, list):
            _add_rooms(f, rooms)
    if kind in TURN_EVENTS:
        f.turn, f.turn_at = kind, t
        f.turn_detail = str(e.get("detail") or "")
        if kind == "stop" and e.get("blocked"):
            f.turn = "stop!"
        if kind == "end":
            f.gone_at, f.gone_why = t, f"SessionEnd hook ({f.turn_detail or 'no reason given'})"
        else:
            f.gone_at = None
        if isinstance(e.get("cc"), str):
            f.claude_session = e["cc"]
        if kind == "start" and isinstance(e.get("client"), str) and not f.client:
            f.client = e["client"]
        return
    if kind == "connect":
        key = f"{e.get('host') or ''}:{e.get('pid')}"
        f.servers[key] = t
        f.servers_ever = True
        f.gone_at = None
    elif kind == "client":
        if isinstance(e.get("client"), str):
            f.client = e["client"]
        if isinstance(e.get("version"), str):
            f.version = e["version"]
    elif kind == "disconnect":
        f.servers.pop(f"{e.get('host') or ''}:{e.get('pid')}", None)
        if not f.servers and f.turn != "end":
            f.gone_at, f.gone_why = t, f"its MCP server (pid {e.get('pid')}) disconnected"
    elif kind == "read":
        f.gone_at = None  # whoever reads as this session is there
        f.last_read = t
        f.nudges_unanswered, f.nudges_held = 0, False
        w = e.get("waited")
        if is_time(w) and w >= 0:
            f.waited = [*f.waited[-(WINDOW - 1) :], float(w)]
        f.activity_at, f.activity_what = t, f"read {_lines_of(e)}"
        # A room it reads is its room, whoever named it (an agent that only runs `ackdeck
        # room read` in a shell has no hook or MCP server to name its rooms).
        _add_rooms(f, [e.get("room")])
    elif kind == "ack":
        f.gone_at = None
        f.last_ack = t
        # An ack no client record proved shown says so (issue 41; older events have no proof).
        estimate = " (estimate)" if e.get("proof") == "estimate" else ""
        f.activity_at, f.activity_what = t, f"acked {_lines_of(e)}{estimate}"
        _add_rooms(f, [e.get("room")])
    elif kind == "nudge":
        f.last_nudge = t
        f.nudges_unanswered += 1
    elif kind == "nudge-held":
        f.nudges_held = True


# ----- the decision ----------------------------------------------------------------------------
class Presence(Struct):
    state: str  # one of STATES
    since: float | None  # when the session entered this state (epoch seconds)
    evidence: str  # what set it, in words


def threshold(waited: list[float]) -> tuple[float, str]:
    """How long lines may wait unread before the session counts as stalled, and why: learned
    from how long its own reads' lines had waited (see the module's constants)."""
    if len(waited) < MIN_SAMPLES:
        return DEFAULT_S, (
            f"default {DEFAULT_S:g}s: {len(waited)} of {MIN_SAMPLES} reads needed to learn it"
        )
    ordered = sorted(waited)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    limit = max(FLOOR_S, FACTOR * p90)
    return limit, (
        f"{FACTOR:g} x p90 {p90:.0f}s of its last {len(waited)} reads"
        + (f", floor {FLOOR_S:g}s" if limit == FLOOR_S else "")
    )


def decide(
    f: Facts,
    now: float,
    *,
    dead: Iterable[str] = (),
    unread: int = 0,
    oldest_unread_age: float | None = None,
) -> Presence:
    """The state of the session `f` describes, as of `now`. `dead`: keys ("host:pid") of the
    connected servers found not running; `unread`, `oldest_unread_age`: what waits for it in
    its rooms."""
    base = _base(f, now, set(dead))
    if base.state not in ("idle", "working") or unread <= 0:
        return base
    limit, why = threshold(f.waited)
    if oldest_unread_age is not None and oldest_unread_age > limit:
        return Presence(
            "stalled",
            now - oldest_unread_age + limit,
            f"{unread} unread, the oldest waiting {oldest_unread_age:.0f}s, past {limit:.0f}s "
            f"({why}); was {base.state}: {base.evidence}",
        )
    if (
        f.last_nudge is not None
        and f.nudges_unanswered > 0
        and now - f.last_nudge > NUDGE_GRACE_S
        and base.state == "idle"
    ):
        held = "; nudges stopped at their bound" if f.nudges_held else ""
        return Presence(
            "stalled",
            f.last_nudge + NUDGE_GRACE_S,
            f"{unread} unread and {counted(f.nudges_unanswered, 'nudge')} unanswered for "
            f"{now - f.last_nudge:.0f}s (no read followed){held}",
        )
    return base


def _base(f: Facts, now: float, dead: set[str]) -> Presence:
    if f.gone_at is not None:
        return Presence("gone", f.gone_at, f.gone_why)
    if f.servers and set(f.servers) <= dead:
        since = f.last_at
        pids = ", ".join(k.rsplit(":", 1)[-1] for k in f.servers)
        return Presence("gone", since, f"its MCP server (pid {pids}) is no longer running")
    turn, at = f.turn, f.turn_at
    act = f.activity_at
    if turn == "notify" and f.turn_detail.split(":", 1)[0] in WAITING_KINDS:
        if act is None or at is None or act <= at:
            return Presence("waiting", at, f"Notification hook: {f.turn_detail}")
    if turn == "prompt":
        return Presence("working", at, "UserPromptSubmit hook: a turn started")
    if turn == "stop!":
        return Presence("working", at, "the Stop hook gave it more to do (exit 2)")
    if act is not None and (at is None or act > at) and now - act <= ACTIVE_S:
        return Presence("working", act, f"{f.activity_what} (no turn event since)")
    if turn == "stop":
        return Presence("idle", at, "Stop hook: its turn ended")
    if turn == "start":
        return Presence("idle", at, f"SessionStart hook ({f.turn_detail or 'startup'})")
    if act is not None and (at is None or act > at):
        return Presence("idle", act + ACTIVE_S, f"nothing since it {f.activity_what}")
    if turn == "notify":
        return Presence("idle", at, f"Notification hook: {f.turn_detail}")
    if f.servers:
        since = max(f.servers.values())
        return Presence("idle", since, "its MCP server is connected; no turn seen yet")
    return Presence("idle", f.last_at, "no turn seen yet")
