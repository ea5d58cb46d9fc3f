"""Notices: telling a session that something waits for it, never consuming it. Pure decisions.

A notice says "3 unread lines in alerts.txt: call room_list_new, then room_ack" or "build: 2
matched lines waiting: call wakes_drain". It never reads, acks or drains: an agent that
ignores or misses one loses nothing, the authoritative path is still read -> ack and drain.

Notices are edge-triggered per session and door (the MCP channel, the tmux nudge, the Stop
hooks). "Already noticed" is a watermark per source, kept on disk by `core.service.noticer`:
- a room: the logical stream offset just past the last complete line when the door last
  looked, with the room's epoch. Lines below it were noticed (or read: a session's own reads
  count because only *unread* lines can make a notice). A new notice needs unread lines AND
  complete lines beyond the watermark. Logical offsets only grow (an ack drops a prefix and
  raises `base`), so acks never make old lines look new; a new epoch (the room rewritten
  behind ackdeck's back) starts the watermark over, which can repeat a notice but never
  silences one.
- a wake record: the exact pending lines `(run_id, start, end)` already noticed, and the
  sequence number of the last exit / monitor-lost notice. Lines the session was shown by its
  own output reads are not waiting (the wake gate would drop them) and never make a notice.

The views (`RoomView`, `WakeView`) are read-only snapshots the service takes
(`core.service.views`); `decide`
turns views plus the previous state into notices and the next state.
"""

from __future__ import annotations

from ackdeck.core.base.struct import Struct
from ackdeck.core.base.text import safe
from ackdeck.core.service.views import RoomView, WakeView

# On the hooks' path (tests/test_layering.py): collections.abc is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

PREVIEW_CHARS = 160
# A door's line in a terminal (the tmux nudge) must stay one short line.
NUDGE_CHARS = 200


class RoomMark(Struct, kw_only=True):
    epoch: int
    end: int
    # As in RoomView ([dev, inode, birth time or null]); absent in states written by older
    # versions (then not compared).
    file: tuple[int, int, int | None] | None = None
    acked_total: int = 0
    last_ack_at: float | None = None


class WakeMark(Struct, kw_only=True):
    created_at: float
    notice_seq: int = 0
    lines: list[tuple[str, int, int]] = []  # LineKey (core/service/views.py)


class NoticeState(Struct, kw_only=True):
    """What a door already told a session, per room path and per process name."""

    rooms: dict[str, RoomMark] = {}
    wakes: dict[str, WakeMark] = {}


class Notice(Struct):
    content: str  # for the model: what waits and which tool takes it
    meta: dict[str, str]  # string-to-string attributes (room, kind, count, ...)


def decide(
    state: NoticeState,
    rooms: Sequence[RoomView],
    wakes: Sequence[WakeView],
    session: str,
) -> tuple[list[Notice], NoticeState]:
    """The notices due now and the state that records them as noticed.

    The caller stores the new state only after the notices were delivered, so a notice that
    could not be sent is decided again next time.
    """
    out: list[Notice] = []
    room_marks = dict(state.rooms)
    for view in rooms:
        if not view.exists:
            continue  # keep the mark: a room that comes back is compared with it
        mark = room_marks.get(view.path)
        fresh = (
            mark is None or mark.epoch != view.epoch or view.end < mark.end or recreated(mark, view)
        )
        noticed_end = 0 if fresh or mark is None else mark.end
        if view.unread > 0 and view.end > noticed_end:
            out.append(room_notice(view, session))
        # Everything up to the current end is now noticed (or was read by the session).
        room_marks[view.path] = RoomMark(
            epoch=view.epoch,
            end=view.end,
            file=view.file,
            acked_total=view.acked_total,
            last_ack_at=view.last_ack_at,
        )

    wake_marks: dict[str, WakeMark] = {}
    for w in wakes:
        old = state.wakes.get(w.name)
        if old is not None and old.created_at != w.created_at:
            old = None  # dismissed and recreated: a new record
        known = set(old.lines) if old is not None else set()
        seq = old.notice_seq if old is not None else 0
        new_lines = [k for k in w.lines if k not in known]
        new_notice = w.notice_pending and w.notice_seq > seq
        if new_lines or new_notice:
            out.append(wake_notice(w, session, new_notice))
        # Only lines still pending are remembered: a delivered line never comes back, so the
        # state stays as small as the record (at most 50 lines).
        wake_marks[w.name] = WakeMark(
            created_at=w.created_at,
            notice_seq=max(seq, w.notice_seq),
            lines=sorted(set(w.lines)),
        )
    return out, NoticeState(rooms=room_marks, wakes=wake_marks)


def recreated(mark: RoomMark, view: RoomView) -> bool:
    """Whether the room is another one than the mark describes although epoch and end agree.

    A room directory wiped with the room's sidecar (`rm -rf` of a per-run directory, a tmpfs
    cleared at reboot) restarts at epoch 0, offset 0, so a new line as long as the last noticed
    end looked noticed. Within one room's life the ack counters never go back, and only an ack
    replaces the file (a rename, which moves the counters): another file with the same
    counters is another room. Err towards a repeat, never towards silence."""
    if view.acked_total < mark.acked_total:
        return True
    acks_moved = (view.acked_total, view.last_ack_at) != (mark.acked_total, mark.last_ack_at)
    return (
        not acks_moved
        and mark.file is not None
        and view.file is not None
        and tuple(mark.file) != tuple(view.file)
    )


def take_lines(room: str, queue: bool) -> str:
    """What an agent calls to take a room's lines: a read and an ack, or, on a work queue, a
    claim of one line and its done (a queue refuses the inbox's ack)."""
    if queue:
        return f"Claim one with task_claim (room {room!r}), do it, then task_done with its token"
    return f"Read them with room_list_new (room {room!r}), act, then room_ack"


def room_notice(view: RoomView, session: str) -> Notice:
    n = view.unread
    text = f"ackdeck: {n} unread line{'s' if n != 1 else ''} in room {safe(view.label, keep='')}"
    if view.preview:
        text += f" (newest: {clip(view.preview, PREVIEW_CHARS)})"
    text += f". {take_lines(view.label, view.queue)}. "
    text += (
        "This notice read and acked nothing." if not view.queue else "This notice claimed nothing."
    )

    return Notice(
        text,
        {
            "kind": "room",
            "room": view.label,
            "path": view.path,
            "count": str(n),
            "session": session,
        }
        | ({"queue": "1"} if view.queue else {}),
    )


def wake_notice(w: WakeView, session: str, notice: bool) -> Notice:
    n = len(w.lines)
    parts: list[str] = []
    if n:
        parts.append(f"{n} matched line{'s' if n != 1 else ''} waiting")
    if w.notice_pending and (notice or not n):
        if w.kind == "exited":
            parts.append("it exited" + ("" if w.exit_code is None else f" with code {w.exit_code}"))
        elif w.kind == "monitor-lost":
            parts.append("its monitor was lost")
    text = f"ackdeck: process {w.name}: " + ", ".join(parts or ["a wake is waiting"])
    if w.preview:
        text += f" (newest: {clip(w.preview, PREVIEW_CHARS)})"
    text += ". Call wakes_drain to receive it. This notice drained nothing."
    meta = {
        "kind": w.kind,
        "process": w.name,
        "count": str(n + (1 if w.notice_pending else 0)),
        "session": session,
    }
    if w.exit_code is not None:
        meta["exit_code"] = str(w.exit_code)
    return Notice(text, meta)


def nudge_line(notices: Sequence[Notice]) -> str:
    """One short line for a terminal: what waits, where, and which tools take it."""
    rooms = [n for n in notices if n.meta.get("kind") == "room"]
    wakes = [n for n in notices if n.meta.get("kind") != "room"]
    bits: list[str] = []
    if rooms:
        bits.append(
            "new room lines in "
            + ", ".join(f"{n.meta['room']} ({n.meta['count']})" for n in rooms)
            + (": room_list_new then room_ack" if any("queue" not in n.meta for n in rooms) else "")
            + (
                "; queues: task_claim then task_done"
                if any("queue" in n.meta for n in rooms)
                else ""
            )
        )
    if wakes:
        bits.append("wakes for " + ", ".join(n.meta["process"] for n in wakes) + ": wakes_drain")
    return clip("ackdeck: " + "; ".join(bits), NUDGE_CHARS)


def clip(text: str, limit: int) -> str:
    # One line: every character that could end it or drive a terminal (or, typed into a pane,
    # press a key: a tab) is shown escaped (core/base/text.py).
    flat = safe(text, keep="")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
