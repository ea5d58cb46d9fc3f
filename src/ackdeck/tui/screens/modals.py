"""Small modal screens: confirmation, ack-all of a snapshot, one-line prompt, help."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.markup import escape
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static
from textual.worker import Worker, WorkerState

from ackdeck.core.base.text import noun, safe
from ackdeck.core.errors import AckdeckError
from ackdeck.core.service.deck import Deck

if TYPE_CHECKING:
    from ackdeck.core.service.roomref import RoomRef
    from ackdeck.core.service.rooms import Acked


class ConfirmScreen(ModalScreen[bool]):
    """Ask before a destructive action. Dismisses with True only on an explicit yes."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes", tooltip="Confirm the action"),
        Binding(
            "n,escape", "answer(False)", "No", id="confirm.no", tooltip="Cancel; nothing is changed"
        ),
    ]

    def __init__(self, title: str, body: str, *, yes: str = "Yes") -> None:
        super().__init__()
        self._title = title
        self._body = body
        self._yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Label(self._title, classes="dialog-title")
            yield Static(self._body, classes="dialog-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self._yes} (y)", id="yes", variant="error")
                yield Button("Cancel (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        # Focus the safe choice: an accidental enter cancels.
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


@dataclass
class SnapshotAcked(Message):
    """The ack of the ack-all snapshot came back (or failed with `error`)."""

    result: Acked | None  # the service's ack result
    error: str | None = None


class AckAllScreen(ConfirmScreen):
    """Ack all, as a snapshot: the owner has just read `shown` lines (a receipt); yes acks
    exactly that receipt, so lines arriving while the dialog is open stay in the room.

    Dismisses with the ack's result (the service's `Acked`) when exactly `shown` lines were
    acked.
    Otherwise nothing was removed (a foreign rewrite made the receipt stale, someone acked it
    first): the dialog stays open and says why.
    """

    def __init__(
        self,
        room: RoomRef,
        label: str,
        session: str,
        shown: int,
        *,
        committed: threading.Event | None = None,
        reader: str | None = None,
        needle: str = "",
    ) -> None:
        lines = f"{shown:,} {noun(shown, 'line')}"
        # The dialog's title and body are markup: a room or filter text is shown as written.
        label, needle = escape(label), escape(needle)
        # A filtered panel shows fewer lines than the dialog acks: say so, or its number
        # could be taken for the filtered lines.
        narrowed = (
            f" The filter {needle!r} does not narrow this ack: all {lines} are acked, not only"
            " the ones it shows."
            if needle
            else ""
        )
        super().__init__(
            f"Ack all of {label}?",
            f"{session} has just read {shown:,} complete {noun(shown, 'line')} of {label}. "
            f"Yes acks exactly these {shown:,}, including lines no other session has read. "
            "Lines arriving while this dialog is open are kept, and so are partial lines."
            + narrowed,
            yes=f"Ack {shown:,}",
        )
        self.room = room
        self.session = session
        self.shown = shown
        self._committed = committed
        self._reader = reader  # the read's receipt is bound to it (see MainScreen)
        self._acking = False
        self.failed: str | None = None

    def action_answer(self, value: bool) -> None:
        if self._acking:
            return
        if not value or self.failed is not None:
            self.dismiss(None)
            return
        self._acking = True
        self.query_one(".dialog-body", Static).update(f"acking {self.shown:,}…")
        self.query_one("#yes", Button).disabled = True
        self._ack(self.room, self.session)

    @work(thread=True, group="owner-action", exit_on_error=False)
    def _ack(self, room: RoomRef, session: str) -> None:
        # The read's receipt is stored just after the dialog got its number; ack after that.
        if self._committed is not None and not self._committed.wait(60):
            self.post_message(SnapshotAcked(None, "the read did not finish; read again"))
            return
        try:
            # A cold or stale ack comes back as a result (mode refused, stale), not raised.
            deck = Deck(session=session, door="dashboard")
            self.post_message(SnapshotAcked(deck.ack(room, reader=self._reader)))
        except AckdeckError as exc:
            self.post_message(SnapshotAcked(None, str(exc)))

    def on_snapshot_acked(self, message: SnapshotAcked) -> None:
        self._acking = False
        res = message.result
        if res is not None and res.mode == "prefix" and res.acked == self.shown:
            # This dialog answers with the ack's result, not ConfirmScreen's bool.
            self.dismiss(res)  # type: ignore[arg-type]
            return
        if res is not None and res.mode == "prefix":
            # Another session acked the first part of the same lines meanwhile.
            self.failed = (
                f"acked {res.acked:,} of the {self.shown:,} shown: the others were acked by "
                f"another session meanwhile; {res.preserved:,} later "
                f"{noun(res.preserved, 'line')} kept"
            )
        elif res is not None:
            self.failed = f"nothing was removed: {res.message}"
        else:
            self.failed = f"nothing was removed: {message.error}"
        self._say_failed("Ack all: not exactly what was shown")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # An error core did not translate ends the worker without an answer; without this
        # the dialog said "acking…" for good and ignored every key. Whether the ack got as
        # far as removing lines is unknown here: the lines panel shows what the room holds.
        if event.state == WorkerState.ERROR and self._acking:
            self._acking = False
            self.failed = (
                f"the ack failed ({event.worker.error}); the lines panel shows what the room "
                "holds now"
            )
            self._say_failed("Ack all failed")

    def _say_failed(self, title: str) -> None:
        assert self.failed is not None
        self.query_one(".dialog-title", Label).update(title)
        self.query_one(".dialog-body", Static).update(self.failed)
        self.query_one("#yes", Button).display = False
        no = self.query_one("#no", Button)
        no.label = "Close (n)"
        no.focus()


class PromptScreen(ModalScreen[str | None]):
    """One line of input (push a line, filter). Enter submits, escape cancels."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="prompt.cancel", tooltip="Close without changes"),
    ]

    def __init__(self, title: str, *, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self._title = title
        self._placeholder = placeholder
        self._value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            # Plain text: titles name rooms, whose file names may hold `[` (a `[link=x:y]`
            # in one stopped the dashboard with a MarkupError).
            yield Label(self._title, classes="dialog-title", markup=False)
            yield Input(value=self._value, placeholder=self._placeholder, id="prompt-input")
            yield Static("enter: ok · escape: cancel", classes="dialog-hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def take_key(self, event: events.Key) -> bool:
        """Give the input a key that reached the app instead (see AckdeckApp.on_key); True if
        it was the input's. A printable key never reaches the app from a focused input (the
        input consumes it), and an enter does only through the input's own submit binding."""
        field = self.query_one("#prompt-input", Input)
        if event.is_printable and event.character:
            field.focus()
            field.insert_text_at_cursor(event.character)
            return True
        if event.key == "enter" and self.focused is not field:
            self.dismiss(field.value)
            return True
        return False

    def action_cancel(self) -> None:
        self.dismiss(None)


class TextScreen(ModalScreen[None]):
    """Lines of text to read (a line's journey); escape closes."""

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="text.close", tooltip="Close this view"),
    ]

    def __init__(self, title: str, body: str) -> None:
        super().__init__()
        self._title = safe(title)  # a line's journey quotes the producer's text
        self._body = safe(body, keep="\t\n")

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Label(self._title, classes="dialog-title", markup=False)  # names a room
            with VerticalScroll():
                yield Static(Text(self._body), id="text-body")
            yield Static("escape: close", classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key binding of the dashboard, with its description."""

    BINDINGS = [
        Binding(
            "escape,q,question_mark", "close", "Close", id="help.close", tooltip="Close the help"
        ),
    ]

    def __init__(
        self,
        sections: Iterable[tuple[str, Iterable[tuple[str, str, str]]]],
        legend: Iterable[tuple[str, str]] = (),
    ) -> None:
        super().__init__()
        self._sections = [(title, list(rows)) for title, rows in sections]
        self._legend = list(legend)

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog", classes="dialog"):
            yield Label("ackdeck keys", classes="dialog-title")
            with VerticalScroll():
                for title, rows in self._sections:
                    # Fixed widths so the columns line up across sections.
                    table = Table.grid(padding=(0, 2))
                    table.add_column(style="bold", no_wrap=True, width=12)
                    table.add_column(no_wrap=True, width=11)
                    table.add_column(style="dim")
                    for key, desc, tip in rows:
                        table.add_row(key, Text(desc, style="bold"), tip)
                    yield Label(title, classes="help-section")
                    yield Static(table)
                if self._legend:
                    legend = Table.grid(padding=(0, 2))
                    legend.add_column(style="bold", no_wrap=True, width=34)
                    legend.add_column(style="dim")
                    for name, meaning in self._legend:
                        legend.add_row(name, meaning)
                    yield Label("What the numbers mean", classes="help-section")
                    yield Static(legend, classes="legend")
            yield Static("escape: close", classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)
