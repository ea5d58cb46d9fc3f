"""Claude Code's messages between agents on their own screen (`M` on the Agents panel): each
message's fate, lost and duplicated first; enter shows the evidence (the sender's SendMessage
line and each recipient request that carried it), `R` re-delivers a lost one, as `ackdeck
messages redeliver` does: into its recipient's inbox under Claude Code's lock, once
(core/service/claude_messages.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.markup import escape
from textual.message import Message
from textual.widgets import DataTable

from ackdeck.core.base.text import safe
from ackdeck.core.errors import AckdeckError

from .listing import ListingScreen
from .modals import ConfirmScreen, TextScreen

_STYLE = {"lost": "bold red", "duplicated": "bold yellow", "waiting": "cyan"}


@dataclass
class MessagesListed(Message):
    """The messages as core found them (or why they could not be read)."""

    found: Any  # ackdeck.core.service.claude_messages.Messages
    error: str | None = None


@dataclass
class MessageRedelivered(Message):
    """A re-delivery the owner asked for finished: what core said."""

    message: str
    done: bool


class MessagesScreen(ListingScreen):
    BINDINGS = [
        Binding(
            "escape,q", "close", "Back", id="messages.close", tooltip="Back to the main screen"
        ),
        Binding(
            "enter",
            "evidence",
            "Evidence",
            id="messages.evidence",
            tooltip="Both transcript lines: the sender's SendMessage and each request that "
            "carried the message",
        ),
        Binding(
            "R",
            "redeliver",
            "Re-deliver",
            id="messages.redeliver",
            tooltip="Push the highlighted lost message into its recipient's inbox again, once "
            "(asks first)",
        ),
        Binding(
            "l", "look", "Look again", id="messages.look", tooltip="Read the transcripts again"
        ),
    ]

    NAME = "messages"
    COLUMNS = ("Fate", "Team", "From", "To", "Sent", "Turn", "Message")
    LOOKING = "reading the transcripts…"
    WHAT = "message"
    SUB_TITLE = "Claude Code's messages between agents"

    @work(thread=True, group="messages-list", exclusive=True, exit_on_error=False)
    def _look(self) -> None:
        from ackdeck.core.service.claude_messages import list_messages

        try:
            found = list_messages(home=self.dash.config.home, now=self.dash.clock)
            self.post_message(MessagesListed(found))
        except (AckdeckError, OSError) as exc:
            self.post_message(MessagesListed(None, str(exc)))

    def on_messages_listed(self, message: MessagesListed) -> None:
        if message.error is not None or message.found is None:
            self.failed(message.error)
            return
        found = message.found

        def cells(_key: str, m: Any) -> list[Any]:
            fate = m.fate + (f" ×{m.turns}" if m.fate == "duplicated" else "")
            if m.redelivery is not None:
                fate += f" (re-delivered: {m.redelivery.fate})"
            # Text cells: agents wrote these words; a str cell would be read as markup.
            return [
                Text(fate, style=_STYLE.get(m.fate, "")),
                Text(safe(m.team)),
                Text(safe(m.sender)),
                Text(safe(m.to)),
                Text(safe(m.sent_at)),
                Text("-" if m.turn is None else str(m.turn)),
                Text(safe(m.summary or m.text[:80])),
            ]

        # core's order: lost, duplicated first
        self.show({m.id: m for m in found.messages}, cells)
        words = [", ".join(f"{n} {f}" for f, n in found.counts.items() if n) or "no messages"]
        self.info.update(Text(safe(" · ".join(words))))
        self._show_why()

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._show_why()

    def on_data_table_row_selected(self, _event: DataTable.RowSelected) -> None:
        self.action_evidence()  # enter on the table's row

    def _show_why(self) -> None:
        key = self.selected_key
        m = self.rows.get(key) if key is not None else None
        self.query_one(DataTable).border_subtitle = safe(m.why) if m is not None else ""

    def action_evidence(self) -> None:
        from ackdeck.core.service.claude_messages import evidence

        m = self.selected()
        if m is None:
            return
        body = [f"{m.fate}: {m.why}", ""]
        for where, line in evidence(m):
            body += [where, line, ""]
        self.app.push_screen(TextScreen(f"Message {m.id}", "\n".join(body)))

    def action_redeliver(self) -> None:
        m = self.selected()
        if m is None:
            return
        if m.fate != "lost":
            self.notify(
                f"{m.id[:8]} is {m.fate}, not lost: nothing to re-deliver", severity="warning"
            )
            return
        body = (
            f"{m.sender} -> {m.to} ({m.team}): {m.summary or ''}\n{m.text}\n\n{m.why}\n\n"
            f"Push it into {m.to}'s inbox again (from 'ackdeck', marked as a re-delivery)? "
            "A message already re-delivered is not pushed twice."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._redeliver(m.id)

        # The body quotes agents' text: escaped, never read as markup.
        self.app.push_screen(
            ConfirmScreen("Re-deliver message", escape(safe(body)), yes="Re-deliver"), answered
        )

    @work(thread=True, group="messages-redeliver", exit_on_error=False)
    def _redeliver(self, message_id: str) -> None:
        from ackdeck.core.service.claude_messages import redeliver

        try:
            done = redeliver(message_id, home=self.dash.config.home, now=self.dash.clock)
        except (AckdeckError, OSError) as exc:
            self.post_message(MessageRedelivered(str(exc), False))
            return
        self.post_message(MessageRedelivered(done.message, done.done))

    def on_message_redelivered(self, message: MessageRedelivered) -> None:
        self.notify(safe(message.message), severity="information" if message.done else "warning")
        self.action_look()
