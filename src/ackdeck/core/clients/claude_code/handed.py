"""The Stop hook's wakes handed to Claude Code, kept until its transcript proves them shown.

The Stop hook hands a wake's text over by exiting 2 with it on stderr, and the wake is acked
once written (core/hooks.py). Claude Code then records the text in the session's transcript
and asks its model, but not always: under `claude -p --max-turns N` the last turn's Stop hook
feedback is recorded and never sent (checked on 2.1.328). The hook cannot see that (the record
is written after it exits), so it keeps what it handed over here, with where the transcript's
whole records ended then; the session's next Stop hook looks for the model's answer after that
record (`transcript.feedback_answered`) and, not finding it, hands the text over again, in whichever
session of the same ackdeck session stops next; the UserPromptSubmit hook hands it over
again too, at the next prompt (a new session learns of it before it works). A text is kept
until proven, or handed over MAX_TRIES times (a client that never records it whole must not
make every stop repeat it).

Only the wakes' text is kept: room lines the hook tells of stay unread in their room.
"""

from __future__ import annotations

import os
from pathlib import Path

from ackdeck.core.base import atomic, locations
from ackdeck.core.base.statefile import load_record, store_record
from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import AckdeckError

MAX_TRIES = 3


class Handed(Struct):
    transcript: str  # the transcript the text was handed over into
    since: int  # where its whole records ended then: the text's record comes after
    text: str  # the wakes' text, as handed over
    tries: int = 1


# How long a Stop hook waits for the model's answer to the last hand-over to be written
# (Claude Code queues its writes: the answer ending the turn may land after the hook starts);
# only after a hand-over, and only while it is not found.
ANSWER_WAIT = 5.0


def unproven(home: str | Path, session: str, *, wait: float = 0.0) -> Handed | None:
    """The last hand-over, if its transcript does not prove the model was shown it (then it
    is to be handed over again); a proven one is forgotten. Never fatal: a damaged record is
    left in place and counts as none (the wakes it held were acked; its text is still there
    for a person to read)."""
    path = locations.wake_handed(os.fspath(home), session)  # a str home: the hooks'
    try:
        kept = load_record(path, Handed)
    except (AckdeckError, OSError):
        return None
    if kept is None:
        return None
    from ackdeck.core.clients.claude_code import transcript

    if transcript.feedback_answered(Path(kept.transcript), kept.since, kept.text, wait=wait):
        atomic.unlink_quietly(path)
        return None
    if kept.tries >= MAX_TRIES:
        atomic.unlink_quietly(path)
        return None
    return kept


def hand_over(
    home: str | Path,
    session: str,
    transcript_path: str,
    text: str,
    earlier: Handed | None,
    *,
    at_stop: bool,
) -> None:
    """Keep `text` as handed over now into `transcript_path` (where its whole records end
    now: the record of the text follows). `earlier`: the unproven hand-over `text` repeats
    (its tries count on).
    `at_stop`: by the Stop hook, when a session that saves its transcript has one (a prompt
    hook may run before it is written); a session without one then (`claude -p
    --no-session-persistence`) keeps none: nothing could prove the text shown, and repeating
    it would not either. The hand-over stays an estimate there, as before."""
    from ackdeck.core.clients.claude_code import transcript

    path = locations.wake_handed(os.fspath(home), session)  # a str home: the hooks'
    # Where its whole records end, not its size: a batch of records caught half written
    # would put `since` inside one, which the check then reads as damage (seen under load).
    since = transcript.records_end(transcript_path)
    if since is None:
        if at_stop:
            atomic.unlink_quietly(path)
            return
        since = 0  # a new session's first prompt: the whole file will follow
    tries = 1 if earlier is None else earlier.tries + 1
    try:
        # A str home from the hooks (no pathlib on a turn), a Path from other callers.
        from ackdeck.core.base.home import make_dirs

        make_dirs(os.path.dirname(os.fspath(path)), 0o700)
        store_record(path, Handed(transcript_path, since, text, tries))
    except OSError:
        pass  # a full or read-only home: the hand-over stands as an estimate, as before
