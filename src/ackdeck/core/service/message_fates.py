"""Each message's fate, decided from what the transcripts, the inbox and the process say
(issue 44, item 1): the pure decision, no I/O (`claude_messages` gathers the evidence).

- `delivered`: exactly one model turn that had the message in its input completed (an
  assistant record follows the user record that carried it): when, and which turn.
- `duplicated`: N > 1 such turns (the message was put in front of the model N times).
- `waiting`: still in the recipient's inbox; or carried by a request whose turn is still
  running (the recipient's process runs); or consumed from the inbox moments ago and not yet
  written to the transcript (Claude Code removes a teammate's entry ~90 ms before its
  request), for at most IN_TRANSIT seconds.
- `lost`: consumed from the inbox, and no turn with it in its input completed: its request
  failed (an API error), or never got an answer and the process is gone, or it never reached
  a request at all.
- `sending`: the call is recorded but not its result yet (the sender's turn runs).

A send Claude Code refused, and any broadcast (`to: "*"`, refused by 2.1.328), is no message
(`is_message`): it has no fate.
"""

from __future__ import annotations

from ackdeck.core.base.struct import Struct
from ackdeck.core.clients.claude_code.messages import Carried, Sent

# How long a message may be out of the inbox and in no request before it counts as lost.
# Observed: ~90 ms for an in-process teammate; a busy machine stretches that, not to a minute.
IN_TRANSIT = 60.0

FATES = ("lost", "duplicated", "waiting", "sending", "delivered")  # the order shown


class Fate(Struct):
    fate: str  # one of FATES
    why: str
    turns: list[Carried]  # the answered requests that carried it (delivered, duplicated)
    unanswered: list[Carried]  # requests that carried it and got no answer (yet)


BROADCAST = "*"  # SendMessage's `to` for every teammate at once


def is_message(send: Sent) -> bool:
    """Can `send` have reached anyone? Not when Claude Code refused it (its result says so),
    and never a broadcast (`to: "*"`): 2.1.328 refuses that in validateInput, before any inbox
    is written ('broadcast (to: "*") is no longer supported'), so a broadcast whose refusal is
    not recorded (its sender killed mid-call) reached nobody either, and is not a message to
    a session named "*" to be found lost."""
    return send.ok is not False and send.to != BROADCAST  # exactly, as Claude Code compares


def carries_of(
    sends: list[Sent], carried: list[Carried], sender: str | None, kind: str = "team"
) -> list[list[Carried]]:
    """For each of `sends` (one sender's messages to one recipient, oldest first), the
    recipient's requests that carried it: same kind (team or cross-session), same sender
    (None: a cross-session sender whose session name is no longer known), same text, at or
    after the send and before the next send of the same text (so a text sent twice is two
    messages)."""
    out: list[list[Carried]] = [[] for _ in sends]
    mine = [c for c in carried if c.kind == kind and (sender is None or c.sender == sender)]
    for i, s in enumerate(sends):
        later = [t.at for t in sends[i + 1 :] if t.text == s.text]
        until = later[0] if later else None
        out[i] = [
            c
            for c in mine
            if c.text.strip() == s.text.strip() and c.at >= s.at and (until is None or c.at < until)
        ]
    return out


def decide(
    send: Sent,
    carried: list[Carried],
    *,
    in_inbox: bool | None,
    recipient: str,
    sent_age: float | None,
    sender: str = "live",
) -> Fate:
    """The fate of `send` given the requests that carried it, whether its entry is still in
    the recipient's inbox (None: the inbox is gone or unreadable), and whether the
    recipient's process runs (`recipient`: live | gone | unknown), and the sender's
    (`sender`). `sent_age`: seconds since it was sent (None: unknown, taken as old)."""
    answered = [c for c in carried if c.answered_at is not None]
    open_ = [c for c in carried if c.answered_at is None]
    if len(answered) > 1:
        turns = ", ".join(str(c.turn) for c in answered)
        return Fate("duplicated", f"in {len(answered)} completed turns ({turns})", answered, open_)
    if answered:
        c = answered[0]
        return Fate("delivered", f"answered at {c.answered_at} (turn {c.turn})", answered, open_)
    if send.ok is None and sender == "live":
        return Fate("sending", "the SendMessage call has no result yet", [], open_)
    if send.ok is None and not open_:
        # Its sender died mid-call: whether it reached the inbox is unknown (no msg_id), and
        # no request of the recipient has it.
        return Fate(
            "lost",
            f"the sender's process is {sender}: its SendMessage never returned, and the "
            "message is in no request of the recipient",
            [],
            [],
        )
    if in_inbox:
        return Fate("waiting", "in the recipient's inbox", [], open_)
    failed = [c.failed for c in open_ if c.failed is not None]
    if failed:
        # The request ended without an answer. The message stays in the recipient's
        # conversation: a later turn that completes would still deliver it (the fate is as of
        # now).
        return Fate(
            "lost", f"its request failed ({failed[-1]}); no turn with it completed", [], open_
        )
    if open_:
        if recipient == "live":
            return Fate("waiting", "its turn is running (request sent, no answer yet)", [], open_)
        return Fate(
            "lost",
            "consumed and sent to the model, but no turn with it completed "
            f"(the recipient's process is {recipient})",
            [],
            open_,
        )
    if recipient == "live" and sent_age is not None and sent_age < IN_TRANSIT:
        return Fate("waiting", "consumed from the inbox moments ago, not yet in a request", [], [])
    return Fate(
        "lost",
        "consumed from the inbox, and in no model request of the recipient"
        + ("" if recipient == "live" else f" (its process is {recipient})"),
        [],
        [],
    )


def order_key(fate: str) -> int:
    """Lost and duplicated first: what needs the owner."""
    return FATES.index(fate) if fate in FATES else len(FATES)
