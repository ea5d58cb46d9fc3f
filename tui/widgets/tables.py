"""The three tables of the main screen: rooms, processes, wake records.

Each renders a `Snapshot` (attributes down); the cursor stays on the same row key across
refreshes so a live update never moves the owner's selection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from ..state import (
    RateTracker,
    RoomRow,
    ago,
    in_flight_total,
    last_activity,
    sparkline,
    unread_summary,
)

Row = tuple[str, Sequence[Any]]


def _num(n: int) -> Text:
    return Text(f"{n:,}", justify="right")


class KeyedTable(DataTable[Any]):
    """A DataTable whose rows are replaced wholesale but whose cursor follows its row key."""

    BINDINGS = [
        Binding(
            "j", "cursor_down", "Down", show=False, id="table.down", tooltip="Move the cursor down"
        ),
        Binding("k", "cursor_up", "Up", show=False, id="table.up", tooltip="Move the cursor up"),
        Binding(
            "g", "scroll_top", "Top", show=False, id="table.top", tooltip="Jump to the first row"
        ),
        Binding(
            "G",
            "scroll_bottom",
            "Bottom",
            show=False,
            id="table.bottom",
            tooltip="Jump to the last row",
        ),
    ]

    COLUMNS: Sequence[tuple[str, str]] = ()
    EMPTY = "nothing yet"
    SCANNING = "scanning…"  # until the first scan: "empty" would be a guess

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._keys: list[str] = []
        self._rows: list[list[Any]] = []
        self._widths: list[int] = []

    def on_mount(self) -> None:
        if not self.columns:
            self._set_columns([cell_len(label) for label, _ in self.COLUMNS])
            self.border_subtitle = self.SCANNING

    def _set_columns(self, widths: list[int]) -> None:
        # Explicit widths, computed from the data: DataTable would otherwise measure cells
        # later, in its own idle handler, and could paint (or leave behind a modal) a frame
        # with stale column widths.
        self.clear(columns=True)
        for (label, key), width in zip(self.COLUMNS, widths, strict=True):
            self.add_column(label, key=key, width=width)
        self._widths = widths

    @property
    def selected_key(self) -> str | None:
        if not self._keys or self.cursor_row < 0 or self.cursor_row >= len(self._keys):
            return None
        return self._keys[self.cursor_row]

    def _widths_for(self, cells: list[list[Any]]) -> list[int]:
        widths = [cell_len(label) for label, _ in self.COLUMNS]
        for row in cells:
            for i, cell in enumerate(row):
                text = cell.plain if isinstance(cell, Text) else str(cell)
                widths[i] = max(widths[i], cell_len(text))
        return widths

    def set_rows(self, rows: Sequence[Row]) -> None:
        keys = [k for k, _ in rows]
        cells = [list(c) for _, c in rows]
        self.border_subtitle = "" if keys else self.EMPTY
        if self.columns and keys == self._keys and cells == self._rows:
            return
        current = self.selected_key
        widths = self._widths_for(cells)
        if self.columns and keys == self._keys and widths == self._widths:
            # Same rows, same widths: update changed cells in place (no cursor jump).
            for key, old, new in zip(keys, self._rows, cells, strict=True):
                for (_, col), a, b in zip(self.COLUMNS, old, new, strict=True):
                    if a != b:
                        self.update_cell(key, col, b)
            self._rows = cells
            return
        self._set_columns(widths)
        for key, row in zip(keys, cells, strict=True):
            self.add_row(*row, key=key)
        self._keys, self._rows = keys, cells
        if current in keys:
            self.move_cursor(row=keys.index(current), animate=False)
        self.border_subtitle = "" if keys else self.EMPTY


class RoomsTable(KeyedTable):
    COLUMNS = (
        ("Room", "room"),
        ("Pending", "pending"),
        ("In-flight", "in_flight"),
        ("Acked", "acked"),
        ("Preserved", "preserved"),
        ("Unread by session", "unread"),
        ("Activity", "activity"),
        ("Arrivals (1 min)", "rate"),
    )
    EMPTY = "no rooms: pass --room PATH or a config file"

    @staticmethod
    def rows_for(rooms: Sequence[RoomRow], now: float, rates: RateTracker) -> list[Row]:
        out: list[Row] = []
        for r in rooms:
            if r.status is None:
                err = Text(f"⚠ {r.error}", style="bold red")
                dash = Text("-", justify="right")
                out.append((r.key, [r.label, dash, dash, dash, dash, err, "-", ""]))
                continue
            st = r.status
            pending = _num(st.pending) if st.exists else Text("no file", style="dim")
            out.append(
                (
                    r.key,
                    [
                        r.label,
                        pending,
                        _num(in_flight_total(st)),
                        _num(st.acked_total),
                        _num(st.preserved_total),
                        unread_summary(st),
                        ago(last_activity(r), now),
                        sparkline(rates.series(r.key, now)),
                    ],
                )
            )
        return out


def _monitors(specs: Sequence[Any]) -> str:
    if not specs:
        return "-"
    return " ".join(("!" if m.exclude else "") + f"/{m.pattern}/" for m in specs)


_STATUS_STYLE = {"running": "green", "exited": "", "killed": "yellow", "lost": "red"}


class ProcsTable(KeyedTable):
    COLUMNS = (
        ("Process", "name"),
        ("Status", "status"),
        ("Exit", "exit"),
        ("Monitors", "monitors"),
        ("Matches", "matches"),
        ("Wakes", "session"),
    )
    EMPTY = "no monitored processes"

    @staticmethod
    def rows_for(runs: Sequence[Any], now: float) -> list[Row]:
        out: list[Row] = []
        for run in runs:
            style = _STATUS_STYLE.get(run.status, "")
            if run.status == "exited" and run.exit_code not in (0, None):
                style = "bold red"
            exit_code = "-" if run.exit_code is None else str(run.exit_code)
            out.append(
                (
                    run.name,
                    [
                        run.name,
                        Text(run.status, style=style),
                        Text(exit_code, justify="right", style=style),
                        _monitors(run.monitors),
                        _num(run.matches),
                        run.session,
                    ],
                )
            )
        return out


class WakesTable(KeyedTable):
    COLUMNS = (
        ("Owner", "session"),
        ("Process", "name"),
        ("Kind", "kind"),
        ("Pending", "pending"),
        ("Delivered", "delivered"),
        ("Superseded", "superseded"),
        ("Status", "status"),
    )
    EMPTY = "no wake records"

    @staticmethod
    def key_of(session: str, name: str) -> str:
        # Neither part may contain "/" (check_name), so the key splits back unambiguously.
        return f"{session}/{name}"

    @staticmethod
    def rows_for(wakes: Sequence[Any], now: float) -> list[Row]:
        out: list[Row] = []
        for w in wakes:
            pending = w.pending  # core's definition: lines plus a pending notice
            out.append(
                (
                    WakesTable.key_of(w.session, w.name),
                    [
                        w.session,
                        w.name,
                        w.kind,
                        Text(
                            f"{pending:,}", justify="right", style="bold yellow" if pending else ""
                        ),
                        _num(w.delivered_total),
                        _num(w.superseded_total),
                        w.status,
                    ],
                )
            )
        return out
