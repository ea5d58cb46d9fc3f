"""What the CLI says to a person, as pure functions of core's results (tested exhaustively in
tests/test_cli_words.py). JSON output is the results' own `to_json()`, never these sentences.

Each sentence leads with what happened ("acked 2 lines"), then what else a person needs
("kept 1 unread": arrived meanwhile, or past the page read), and states each fact once.
"""

from __future__ import annotations

from ackdeck.core.base.text import age_text, counted

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ackdeck.core.service.rooms import Acked, Lines, Pushed, RoomState, SessionCounts


def column_width(cells: Sequence[str], floor: int = 20, ceiling: int = 64) -> int:
    """The width of a text table's name column: its longest cell, so a long session name
    (`session-8f0477f7/team-lead`) widens the column instead of pushing its own row's other
    columns right; at least `floor` (the usual look), and a name past `ceiling` overflows its
    own row only, so one absurd name cannot push every row off the screen."""
    return max([floor, *(len(c) for c in cells if len(c) <= ceiling)])


def lines(n: int) -> str:
    """`1 line`, `2 lines`."""
    return counted(n, "line")


# Core's ack messages explain a mode in one sentence written for logs and MCP ("...; nothing
# was removed. Read the room again, then ack"). The sentence below leads with "nothing acked"
# and ends with what to do, so those parts of the message would say it twice.
_SAID_ALREADY = ("; nothing was removed", ". Read the room again, then ack", "; nothing to ack")


def _reason(message: str) -> str:
    for part in _SAID_ALREADY:
        message = message.replace(part, "")
    return message.strip()


def ack_sentence(res: Acked) -> str:
    """The one line `room ack` prints: what was removed, what was kept, or why nothing was."""
    if res.note is not None:
        return f"nothing acked: {res.note}"
    if res.acked:
        what = f"acked {lines(res.acked)} of {res.room}"
        if res.mode == "all" and not res.preserved:
            return f"{what} (every complete line)"
        if res.mode == "all":
            # Ack-all takes a page at a time, as a read does: the rest is still there.
            return f"{what} (one page); {lines(res.preserved)} still in {res.room}"
        return f"{what}; kept {res.preserved} unread" if res.preserved else what
    if res.mode == "all":
        return f"nothing acked: {res.room} has no complete lines"
    if res.must_reread:
        return f"nothing acked: {_reason(res.message)}; read {res.room} again, then ack"
    waiting = f"; {lines(res.preserved)} still in {res.room}" if res.preserved else ""
    return f"nothing acked: {_reason(res.message)}{waiting}"


def waiting_sentence(res: Lines) -> str | None:
    """What a read left for later (its page was full), else None."""
    if not res.waiting:
        return None
    return f"{lines(res.waiting)} more wait in {res.room}: ack these, then read again"


def pushed_sentence(res: Pushed) -> str:
    """Where a pushed line went (printed on a terminal only): the room as every door names it
    and the line's place in the room's stream (a byte offset, or a redis entry ID)."""
    where = "entry" if isinstance(res.offset, str) else "stream offset"
    return f"pushed 1 line to {res.room} ({where} {res.offset})"


def status_lines(row: RoomState) -> list[str]:
    """A room's counters, then one line per session, each session once (the asking session
    included, even before its first read)."""
    st = row
    partial = f" + a partial line ({st.partial_bytes} bytes)" if st.partial_bytes else ""
    out = [
        f"{st.path}: {st.pending} pending{partial}, {st.acked_total} acked, "
        f"{st.preserved_total} preserved, epoch {st.epoch}"
    ]
    if row.overdue:
        out.append(f"  OVERDUE: {overdue_line(row)}")
    if waiting := ages_line(row):
        out.append(f"  {waiting}")
    if st.late_total or st.held_open:
        out.append(
            f"  late writers: {lines(st.late_total)} carried in from replaced files; "
            f"{counted(st.held_open, 'replaced file')} still held open by a writer"
        )
    names = list(st.sessions)
    if row.session is not None and row.session not in st.sessions:
        names.append(row.session)
    counts = row.sessions
    for name in names:
        s = counts.get(name)
        if s is None:
            out.append(f"  {name}: 0 in flight, {row.unread} unread (no read yet)")
        else:
            late = " OVERDUE" if s.overdue else ""
            out.append(f"  {name}: {s.in_flight} in flight, {s.unread} unread{since(s)}{late}")
    return out


def ages_line(row: RoomState) -> str:
    """How long the oldest line has waited, and how often it was handed out (empty: none)."""
    st, parts = row, []
    if row.oldest_pending_age is not None:
        parts.append(f"oldest line waiting {age_text(row.oldest_pending_age)}")
    if row.oldest_unread_age is not None:
        parts.append(f"unread by anyone for {age_text(row.oldest_unread_age)}")
    if st.deliveries > 1:
        parts.append(f"oldest line handed out {st.deliveries} times without an ack")
    if st.dead_total:
        parts.append(f"{lines(st.dead_total)} moved to {row.path}.dead")
    if st.reads_unlogged:
        parts.append(f"read log incomplete: {counted(st.reads_unlogged, 'read')} not logged")
    return "; ".join(parts)


def since(s: SessionCounts) -> str:
    """A session's waiting times, in parentheses (empty: nothing waits)."""
    got = []
    if s.in_flight_age is not None:
        got.append(f"read {age_text(s.in_flight_age)} ago, not acked")
    if s.unread_age is not None:
        got.append(f"oldest unread {age_text(s.unread_age)}")
    return f" ({'; '.join(got)})" if got else ""


def overdue_line(row: RoomState) -> str:
    t = row.overdue_after
    return (
        f"oldest line waited {age_text(row.oldest_pending_age)} "
        f"(threshold {age_text(t) if t is not None else 'none'})"
    )
