"""A queue room on its own screen (`Q` on a room): how many lines wait unclaimed, how many
leases run, have ended and went to the dead-letter room, and each claimed line with its
holder, the lease's age and when it ends; `R` gives the highlighted claim back, as `ackdeck
release ROOM TOKEN` does (core/service/queue.py; once claimed again, the holder is refused); `D`
moves its line to the dead-letter room (a line no agent can finish).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.markup import escape
from textual.message import Message

from ackdeck.core.base.text import age_text, safe
from ackdeck.core.errors import AckdeckError

from .listing import ListingScreen
from .modals import ConfirmScreen


@dataclass
class QueueLooked(Message):
    """The queue as core saw it (a QueueView), or why it could not be looked at."""

    view: Any
    now: float
    error: str | None = None


@dataclass
class ClaimReleased(Message):
    """A release the owner asked for finished: what core said."""

    message: str
    released: bool


def lease_words(held: Any, now: float) -> tuple[str, str]:
    """(the lease's age, when it ends or ended) as the screen shows them."""
    age = "-" if held.claimed_at is None else age_text(max(0.0, now - held.claimed_at))
    if held.until == 0:
        return age, "released"
    left = held.until - now
    return age, (f"in {age_text(left)}" if left > 0 else f"ended {age_text(-left)} ago")


class QueueScreen(ListingScreen):
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="queue.close", tooltip="Back to the main screen"),
        Binding(
            "R",
            "release",
            "Release",
            id="queue.release",
            tooltip="Give the highlighted claim back: claimable at once; once claimed again, "
            "its holder's token is refused (asks first)",
        ),
        Binding(
            "D",
            "dead_letter",
            "Dead-letter",
            id="queue.dead_letter",
            tooltip="Move the highlighted claim's line to the dead-letter room: no agent can "
            "finish it (asks first)",
        ),
        Binding("l", "look", "Look again", id="queue.look", tooltip="Look at the queue again"),
    ]

    NAME = "queue"
    COLUMNS = ("Line", "Holder", "Token", "Lease age", "Ends", "Deliveries")
    LOOKING = "looking at the queue…"
    WHAT = "claim"

    def __init__(self, room: str) -> None:
        super().__init__()
        self.room = room  # the room as the main screen names it (its key)
        self.sub_title = f"queue {room}"

    def _deck(self) -> Any:
        from ackdeck.core.service.deck import Deck

        config = self.dash.config
        return Deck(config.home, config.session, door="dashboard", clock=self.dash.clock)

    @work(thread=True, group="queue-look", exclusive=True, exit_on_error=False)
    def _look(self) -> None:
        deck = self._deck()
        try:
            view = deck.queue_view(deck.parse(self.room))
        except (AckdeckError, OSError) as exc:
            self.post_message(QueueLooked(None, self.dash.clock(), str(exc)))
            return
        self.post_message(QueueLooked(view, self.dash.clock()))

    def on_queue_looked(self, message: QueueLooked) -> None:
        if message.error is not None or message.view is None:
            self.failed(message.error)
            return
        v = message.view

        def cells(token: str, h: Any) -> list[Any]:
            age, ends = lease_words(h, message.now)
            where = str(h.offset) if h.entry is None else h.entry
            ended = h.until <= message.now
            return [
                Text(where),
                Text(safe(h.holder)),
                Text(token),
                age,
                Text(ends, style="yellow" if ended else ""),
                str(h.deliveries),
            ]

        self.show({h.token: h for h in v.held}, cells)
        self.info.update(
            Text(
                f"{v.unclaimed} unclaimed · {v.claimed} claimed · {v.expired} expired or "
                f"released · {v.dead} dead-lettered"
            )
        )

    def action_release(self) -> None:
        h = self.selected()
        if h is None:
            return
        body = (
            f"The claim {h.token} of {safe(h.holder)} (delivery {h.deliveries}).\n\n"
            "Give the line back? It is claimable at once; once another session claims it, "
            "its holder's done, extend and release are refused."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._release(h.token)

        self.app.push_screen(ConfirmScreen("Release claim", escape(body), yes="Release"), answered)

    def action_dead_letter(self) -> None:
        h = self.selected()
        if h is None:
            return
        body = (
            f"The claim {h.token} of {safe(h.holder)} (delivery {h.deliveries}).\n\n"
            "Move its line to the dead-letter room? Its holder's done is then refused."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._release(h.token, dead=True)

        self.app.push_screen(
            ConfirmScreen("Dead-letter line", escape(body), yes="Dead-letter"), answered
        )

    @work(thread=True, group="queue-release", exit_on_error=False)
    def _release(self, token: str, dead: bool = False) -> None:
        deck = self._deck()
        try:
            ref = deck.parse(self.room)
            done = deck.dead_letter(ref, token) if dead else deck.task(ref, token, "release")
        except (AckdeckError, OSError) as exc:
            self.post_message(ClaimReleased(str(exc), False))
            return
        self.post_message(ClaimReleased(done.message, done.mode in ("released", "dead")))

    def on_claim_released(self, message: ClaimReleased) -> None:
        self.notify(
            safe(message.message), severity="information" if message.released else "warning"
        )
        self.action_look()
