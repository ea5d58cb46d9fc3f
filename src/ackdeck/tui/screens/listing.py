"""What the owner's listing screens share (Claude Code's tasks and messages, a queue room): a
header, one line of counts, one table of rows keyed by identity, the footer; `l` looks again
(in a worker: the look reads files), escape goes back, and the highlighted row stays the same
row across a new look."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ackdeck.core.base.text import safe

from ..host import HEADER_ICON, Host, host_of
from ..widgets.header import DeckHeader


class ListingScreen(Screen[None]):
    NAME: ClassVar[str]  # the widgets' ids: NAME-info, NAME-table
    COLUMNS: ClassVar[tuple[str, ...]]
    LOOKING: ClassVar[str]  # the counts line until the first look answers
    WHAT: ClassVar[str]  # what a row is, for "no task selected"

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, Any] = {}  # row key -> the row's value as shown

    @property
    def dash(self) -> Host:
        return host_of(self)

    def compose(self) -> ComposeResult:
        yield DeckHeader(show_clock=self.dash.config.show_clock, icon=HEADER_ICON)
        yield Static(self.LOOKING, id=f"{self.NAME}-info")
        table: DataTable[Any] = DataTable(
            id=f"{self.NAME}-table", cursor_type="row", zebra_stripes=True
        )
        table.add_columns(*self.COLUMNS)
        yield table
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.action_look()

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_look(self) -> None:
        self._look()

    def _look(self) -> Any:
        raise NotImplementedError  # each screen's worker: reads, then posts what it found

    @property
    def info(self) -> Static:
        return self.query_one(f"#{self.NAME}-info", Static)

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(f"#{self.NAME}-table", DataTable)

    def failed(self, error: str | None) -> None:
        """A look that could not be made: said on the counts line, the rows left as shown."""
        self.info.update(Text(f"⚠ {safe(error or '')}"))

    def show(self, rows: dict[str, Any], cells: Callable[[str, Any], Iterable[Any]]) -> None:
        """`rows` (key -> value) in the table, each row's cells from `cells(key, value)`; the
        highlighted row kept by its key (selection by identity, across a new look)."""
        table = self.table
        selected = self.selected_key
        self.rows = rows
        table.clear()
        for key, value in rows.items():
            table.add_row(*cells(key, value), key=key)
        if selected in self.rows:
            table.move_cursor(row=table.get_row_index(selected))

    @property
    def selected_key(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - no row under the cursor (an empty table)
            return None
        return key if key in self.rows else None

    def selected(self) -> Any | None:
        """The highlighted row's value, or None after telling the owner none is."""
        key = self.selected_key
        if key is None:
            self.notify(f"no {self.WHAT} selected", severity="warning")
            return None
        return self.rows[key]
