"""Small modal screens: confirmation, one-line prompt, help."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


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
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


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
            yield Label(self._title, classes="dialog-title")
            yield Input(value=self._value, placeholder=self._placeholder, id="prompt-input")
            yield Static("enter: ok · escape: cancel", classes="dialog-hint")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key binding of the dashboard, with its description."""

    BINDINGS = [
        Binding(
            "escape,q,question_mark", "close", "Close", id="help.close", tooltip="Close the help"
        ),
    ]

    def __init__(self, sections: Iterable[tuple[str, Iterable[tuple[str, str, str]]]]) -> None:
        super().__init__()
        self._sections = [(title, list(rows)) for title, rows in sections]

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
            yield Static("escape: close", classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)
