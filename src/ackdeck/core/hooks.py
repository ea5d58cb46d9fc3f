"""Agent hooks: the texts they print (installing them into a settings.json is
core/hook_install.py).

Five hooks, each a plain `ackdeck …` command (each also records the event in the session's
presence log, core/presence, for `ackdeck agents`):
- SessionStart  -> `ackdeck hooks bootstrap`: tells the agent how to read then ack (and never to
  truncate a notification file); its stdout becomes context for the agent.
- UserPromptSubmit -> `ackdeck hooks prompt`: lists unread room lines without acking them.
- Stop          -> `ackdeck hooks stop`: delivers monitor wakes and tells the agent about room
  lines that arrived during its turn (exit 2 + text); never blocks twice for nothing new.
- Notification -> `ackdeck hooks notify`: records that the client waits for its owner (a
  permission prompt, an idle prompt); prints nothing.
- SessionEnd    -> `ackdeck hooks end`: records that the session ended; prints nothing.

The session-start, prompt and Stop hooks are installed behind a gate (`gate_command` in
core/hook_install.py, core/service/quiet.py): a sh program of builtins that starts ackdeck
only when the hook may have something to say. The SessionEnd hook is one too
(`presence_gate`): it leaves the hook's JSON in the session's end mark, read as the event
`hooks end` records, and starts ackdeck only where that mark cannot be written.

Every hook reads the JSON Claude Code passes on stdin (`session_id`, `source`,
`stop_hook_active`, ...); a hook run by hand without input behaves the same.
"""

from __future__ import annotations

import os

# partial from _functools: functools imports collections (tests/test_layering.py).
from _functools import partial

from ackdeck.core.base import locations
from ackdeck.core.base.struct import Struct
from ackdeck.core.base.text import counted, display
from ackdeck.core.clients import claude_code
from ackdeck.core.errors import AckdeckError
from ackdeck.core.hook_input import STDIN_WAIT_S, read_hook_input  # noqa: F401 (re-exported)

# The service (rooms, wakes) is imported by the hooks that look at rooms or wakes: `hooks
# notify` and `hooks end` only record presence (core/cli/_hook_events.py).

# On the hot path (tests/test_layering.py): typing is for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    # The hooks name the home, the gate's stamp and the notices' state with strings: pathlib
    # (with re, enum, urllib.parse, ipaddress) is imported only by installing them.
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from ackdeck.core.base.atomic import P  # the hooks' home is a str, a Path elsewhere
    from ackdeck.core.service.wakes import Drained

EVENTS = claude_code.HOOK_EVENTS
PROMPT_MAX_CHARS = 300


# ----- what the hooks print ---------------------------------------------------------------------
def prompt_text(
    session: str,
    rooms: Sequence[str | os.PathLike[str]],
    unread: Mapping[str, int] | None = None,
) -> str:
    """Unread room lines for the UserPromptSubmit hook; empty when there is nothing to say.

    `unread`: each room's unread count (by its display name) as `rooms_told_marker` just saw
    it. A room it saw nothing unread in is not looked at again: most prompts have nothing to
    list, and the second look (a status, a census of the file) only confirmed it. A line that
    lands in between is not lost: the marker did not record it as told, so the Stop hook tells
    it, and the next prompt lists it."""
    from ackdeck.core.service.deck import Deck
    from ackdeck.core.service.notices import take_lines
    from ackdeck.core.service.refs import display_of

    deck = Deck(session=session)
    parts: list[str] = []
    for r in rooms:
        try:
            ref = deck.parse(r)
            if unread is not None and unread.get(ref.display) == 0:
                continue
            u = deck.unread(ref)
        except (AckdeckError, OSError) as exc:
            # One broken room must not hide the others or block the prompt.
            parts.append(f"ackdeck: cannot check room {display_of(r)}: {exc}")
            continue
        if u.count == 0:
            continue
        shown = [_clip(display(x)) for x in u.lines]
        more = u.count - len(shown)
        parts.append(
            f"ackdeck: {counted(u.count, 'unread line')} in room {u.room} (not acked yet):\n"
            + "\n".join(f"  {x}" for x in shown)
            + (f"\n  ... and {more} more" if more > 0 else "")
            + f"\n{take_lines(ref.name, u.queue)}."
        )
    return "\n".join(parts)


def _clip(line: str) -> str:
    return line if len(line) <= PROMPT_MAX_CHARS else line[: PROMPT_MAX_CHARS - 1] + "…"


def bootstrap_text(
    session: str,
    rooms: Sequence[str | os.PathLike[str]],
    unread: Mapping[str, int] | None = None,
) -> str:
    """The SessionStart instructions. Names the consumed-only sequence and forbids truncation.
    `unread`: as for prompt_text (the counts `rooms_told_marker` saw are used as they are)."""
    from ackdeck.core.service.deck import Deck
    from ackdeck.core.service.refs import display_of

    deck = Deck(session=session)
    lines = [
        f"ackdeck: you are session {session!r}.",
    ]
    if rooms:
        lines.append("Notification rooms (files other processes append to):")
        for r in rooms:
            try:
                ref = deck.parse(r)
                seen = None if unread is None else unread.get(ref.display)
                count = deck.unread(ref).count if seen is None else seen
                state = f"{count} unread"
            except (AckdeckError, OSError) as exc:
                state = f"cannot check: {exc}"
            lines.append(f"  - {display_of(r)} ({state})")
    from ackdeck.core.service.instructions import rules  # the bootstrap's text only

    lines += rules(session)
    return "\n".join(lines)


# ----- hook input and the Stop hook -------------------------------------------------------------
def rooms_told_marker(
    home: P,
    session: str,
    rooms: Sequence[str | os.PathLike[str]],
    unread: dict[str, int] | None = None,
    queues: set[str] | None = None,
) -> Callable[[], None]:
    """Take the rooms' state now, before a SessionStart or prompt hook builds its text; the
    returned call records it as told once the text was written, so the Stop hook reports only
    lines that arrived after it (during the agent's turn). Taken first, a line that lands while
    the text is built is at worst told twice, never marked told unseen. Reads and acks nothing.
    `unread`, when given, gets each room's unread count as seen (by its display name), for the
    text (prompt_text): a room that could not be looked at is left out. `queues`, when given,
    gets the display names of the work-queue rooms among them (the gate never skips for
    those: a claim's lease expires without any file changing)."""
    from ackdeck.core.service.noticer import Noticer

    if not rooms:
        return _nothing
    noticer = Noticer(home, session, _specs(rooms), "hooks", wakes=False)
    notices, state, views = noticer.due_with_views()
    if unread is not None:
        unread.update((v.path, v.unread) for v in views)
    if queues is not None:
        queues.update(v.path for v in views if v.queue)
    return lambda: noticer.commit(state)


def _nothing() -> None:
    return None


def _specs(rooms: Sequence[str | os.PathLike[str]]) -> list[str | Path]:
    """The rooms as the noticer takes them: a Path given (the dashboard, tests) stays a Path,
    built only then; the hooks' own rooms are the command line's strings."""
    if all(isinstance(r, str) for r in rooms):
        return list(rooms)  # type: ignore[arg-type]
    from pathlib import Path

    return [r if isinstance(r, str) else Path(r) for r in rooms]


def _held_claims(home: P, session: str, payload: Mapping[str, Any]) -> list[str]:
    """A reminder of the queue claims `session` holds unfinished (core/service/claims.py).
    Cheap first: one stat of its claims directory, which a session that never claimed lacks;
    the module is imported only past it. Not again while the agent already continues because
    of a Stop hook (stop_hook_active): the reminder would block every stop, for ever."""
    import time

    from ackdeck.core.base import locations

    if payload.get("stop_hook_active") or not os.path.isdir(locations.claims_dir(home, session)):
        return []
    from ackdeck.core.service import claims

    text = claims.reminder(home, session, time.time())
    return [text] if text else []


# Before an earlier hand-over of wakes the transcript did not prove shown, handed over again
# (core/clients/claude_code/handed.py).
AGAIN = (
    "ackdeck: handed over at an earlier stop but never shown to you (your client recorded "
    "it without asking you), so here again:"
)


def prompt_again(
    home: P, session: str, payload: Mapping[str, Any]
) -> tuple[str, Callable[[], None]]:
    """For the UserPromptSubmit hook: an earlier Stop hook's hand-over of wakes that Claude
    Code's transcript does not prove shown (core/clients/claude_code/handed.py), as text to
    put before the prompt's context, and the call that keeps it as handed over again once
    that text was written; ("", nothing) when there is none. A new session learns of a wake
    lost to its predecessor's turn limit at its first prompt, not at its first stop."""
    where = payload.get("transcript_path")
    if not isinstance(where, str) or not where:
        return "", _nothing
    if not os.path.lexists(locations.wake_handed(home, session)):
        return "", _nothing
    from ackdeck.core.clients.claude_code import handed

    earlier = handed.unproven(home, session)
    if earlier is None:
        return "", _nothing
    return f"{AGAIN}\n{earlier.text}", partial(
        handed.hand_over, home, session, where, earlier.text, earlier, at_stop=False
    )


class StopOutcome(Struct):
    block: bool  # exit 2: the agent continues with `text`
    text: str
    # Records the room notices as told; call it once `text` was written.
    commit: Callable[[], None] = _nothing
    written: bool = False  # `emit` already wrote `text` (before the wakes were acked)
    # Nothing to say and nothing that could say it later unseen: no room notice or queue
    # room, every room looked at, no wake delivered, pending or malformed, no claim reminder
    # and no hand-over to check. The gate's stamp may then be written (core/service/quiet.py).
    quiet: bool = False


def stop_hook(
    home: P,
    session: str,
    rooms: Sequence[str | os.PathLike[str]],
    payload: Mapping[str, Any],
    *,
    settle_timeout: float = 2.0,
    emit: Callable[[str], bool] | None = None,
) -> StopOutcome:
    """Deliver pending wakes (the authoritative drain) and notice room lines that arrived
    during the turn. Block only for something new: a wake just delivered, or room lines beyond
    what a hook already told this session. So with `stop_hook_active` (the agent is already
    continuing because of a Stop hook) a second block needs something that arrived since.

    With `emit`, the text is written through it before the wakes are acked (recorded only
    once delivered): if it answers False, nothing is acked and the wakes stay pending."""
    from ackdeck.core.service.deck import Deck
    from ackdeck.core.service.noticer import Noticer
    from ackdeck.core.service.notices import Notice, take_lines

    # The drain reconciles first (a dead supervisor is delivered as a monitor-lost wake).
    deck = Deck(home, session)
    notices: list[Notice] = []
    rooms_quiet = True
    commit: Callable[[], None] = _nothing
    if rooms:
        noticer = Noticer(
            home,
            session,
            _specs(rooms),
            "hooks",
            wakes=False,
        )
        notices, state, views = noticer.due_with_views()
        rooms_quiet = not notices and len(views) == len(rooms) and not any(v.queue for v in views)
        if notices and payload.get("stop_hook_active") and not noticer.can_record():
            # The agent already continues because of a Stop hook, and what this one would tell
            # cannot be recorded (a full or read-only HOME): it would block again at every
            # stop, for ever (the loop stop_hook_active is there to prevent). The lines stay
            # unread; the prompt hook lists them at the next prompt.
            notices = []
        commit = partial(noticer.commit, state)
    lease_parts = _held_claims(home, session, payload)
    room_parts = lease_parts + [
        f"ackdeck: room {n.meta['room']} got new lines while you worked "
        f"({n.meta['count']} unread, not read or acked by this hook). "
        f"{take_lines(n.meta['room'], 'queue' in n.meta)}."
        for n in notices
    ]

    # Claude Code names its transcript: the wakes handed over are kept until it proves them
    # shown, and an earlier hand-over it does not prove is handed over again (issue 41).
    where = payload.get("transcript_path")
    where = where if isinstance(where, str) and where else None
    earlier = None
    handed_file = os.path.lexists(locations.wake_handed(home, session))
    if where is not None and handed_file:
        from ackdeck.core.clients.claude_code import handed

        # The model just answered (what ends a turn): its record may still be on its way.
        earlier = handed.unproven(home, session, wait=handed.ANSWER_WAIT)
        if earlier is not None and payload.get("stop_hook_active") and not room_parts:
            # Handed over at the stop this turn continued from, and the model answered, yet
            # not proven (its record holds the text otherwise): never block again for it alone.
            earlier = None

    def wakes_part(wake_text: str) -> str:
        again = [] if earlier is None else [f"{AGAIN}\n{earlier.text}"]
        return "\n".join(again + ([wake_text] if wake_text else []))

    def compose(wake_text: str) -> str:
        wakes_text = wakes_part(wake_text)
        parts = ([wakes_text] if wakes_text else []) + room_parts
        if parts and payload.get("stop_hook_active") and earlier is None:
            parts.append("(more arrived since the last stop; nothing earlier is repeated)")
        return "\n".join(parts)

    def keep(wake_text: str) -> None:
        """Keep what was just handed over of the wakes, to check it reached the model."""
        wakes_text = wakes_part(wake_text)
        if where is not None and wakes_text:
            from ackdeck.core.clients.claude_code import handed

            handed.hand_over(home, session, where, wakes_text, earlier, at_stop=True)

    said: list[str] = []
    unsaid: list[str] = []

    def deliver(result: Drained) -> bool:
        text = compose(result.text())
        if emit is not None and not emit(text):
            unsaid.append(text)
            return False
        keep(result.text())  # before the wakes are acked
        said.append(text)
        return True

    from ackdeck.core.service.pending import nothing_to_drain

    if "://" not in session and nothing_to_drain(str(home), session):
        # Most stops: no wake record and no run, told by listing two folders; the drain would
        # find nothing and hand nothing to `deliver`. The wake modules stay unloaded (a
        # Stop hook that has room lines to tell loads only what telling them needs).
        wake_text, wakes_quiet = "", True
    else:
        drained = deck.drain(settle_timeout=settle_timeout, deliver=deliver if emit else None)
        if said:
            return StopOutcome(True, said[0], commit, written=True)
        if unsaid:  # nothing was acked; the caller's own write will fail (or succeed) again
            return StopOutcome(True, unsaid[0], commit)
        wake_text = drained.text()
        wakes_quiet = not drained.delivered and not drained.pending and not drained.skipped
    text = compose(wake_text)
    if not text:
        quiet = rooms_quiet and not lease_parts and not handed_file and wakes_quiet
        return StopOutcome(False, "", commit, quiet=quiet)

    def commit_and_keep() -> None:  # once the caller wrote `text`
        commit()
        keep(wake_text)

    return StopOutcome(True, text, commit_and_keep)
