"""The three tables of the main screen: rooms, processes, wake records.

Each renders a `Snapshot` (attributes down); the cursor stays on the same row key across
refreshes so a live update never moves the owner's selection.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.widgets import DataTable

from ackdeck.core.base.text import safe
from ackdeck.core.service.agents import evidence_line
from ackdeck.core.service.rooms import ABSENT_CELL

from ..state import (
    RateTracker,
    RoomRow,
    ago,
    in_flight_total,
    last_activity,
    next_change,
    room_overdue,
    session_overdue,
    sparkline,
    unread_summary,
    wait_text,
    waited,
)
from .borders import QuietBorders

Row = tuple[str, Sequence[Any]]


class Cell(tuple[str, str, str]):
    """A cell of one style: its text, style and justification, made into a `Text` only when
    DataTable renders it (the rows on screen). A `Text` per cell cost about 300 bytes (three
    objects and a copy of the string); thousands of rooms keep nine cells each. Compares by
    value, style included; `plain` and `str()` give the text, as for a `Text`."""

    __slots__ = ()

    def __new__(cls, text: str, style: str = "", justify: str = "left") -> Cell:
        return tuple.__new__(cls, (text, style, justify))

    @property
    def plain(self) -> str:
        return self[0]

    def __str__(self) -> str:
        return self[0]

    def to_text(self) -> Text:
        return Text(self[0], style=self[1], justify=self[2])  # type: ignore[arg-type]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.to_text()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        # As Text measures itself, without making one: DataTable measures every cell of every
        # row it is given (3,000 rooms: 27,000 cells at the first look).
        text = self[0]
        lines = text.splitlines()
        widest = max(cell_len(line) for line in lines) if lines else 0
        words = text.split()
        return Measurement(max(cell_len(w) for w in words) if words else widest, widest)


DASH = Cell("-")
RIGHT_DASH = Cell("-", "", "right")


def _num(n: int) -> Cell:
    return Cell(f"{n:,}", "", "right")


@dataclass(frozen=True)
class Col:
    """One column: its header, the shorter header used when space is tight, what it means
    (the header's tooltip and the `?` legend), and how narrow its text may be cut (0: never,
    for numbers: a cut number would lie)."""

    label: str
    key: str
    short: str
    tip: str
    min: int = 0


def pending_cell(n: int) -> Cell:
    """The rooms table's Pending cell (the lines panel's title shows the same number)."""
    return _num(n)


def fit_widths(natural: Sequence[int], minimum: Sequence[int], available: int) -> list[int]:
    """Shrink the widest cuttable columns, one cell at a time, until the sum fits `available`
    (or every cuttable column is at its minimum). Pure, so it is tested on its own."""
    widths = list(natural)
    excess = sum(widths) - available
    while excess > 0:
        cuttable = [i for i, w in enumerate(widths) if minimum[i] and w > minimum[i]]
        if not cuttable:
            break
        widest = max(cuttable, key=lambda i: (widths[i] - minimum[i], widths[i]))
        widths[widest] -= 1
        excess -= 1
    return widths


def _plain(cell: Any) -> str:
    """The cell's text as the table shows it (`_shown`): what its width is measured on."""
    return safe(cell.plain if isinstance(cell, Text | Cell) else str(cell))


def _shown(cell: Any) -> Any:
    """A cell as people see it: its text escaped and bounded (`text.safe`), whichever form
    it came in. Strings also become Cells (DataTable reads a string as markup); a Text or
    Cell that needs no change is kept with its spans. A run's status and a room's label
    reach here as Text or Cell: a hand-written one showed its escapes raw, and one of 50 MB
    kept the dashboard from settling for over a minute (each width measured it)."""
    if isinstance(cell, str):
        return Cell(safe(cell))
    if isinstance(cell, Text | Cell):
        plain = cell.plain
        shown = safe(plain)
        if shown is plain:
            return cell
        if isinstance(cell, Cell):
            return Cell(shown, cell[1], cell[2])
        return Text(shown, style=cell.style, justify=cell.justify)  # its spans: ackdeck's
    return cell


def _cut(cell: Any, width: int) -> Any:
    """The cell cut to `width` cells with an ellipsis (Text keeps its style)."""
    if cell_len(_plain(cell)) <= width:
        return cell
    if isinstance(cell, Cell):
        text = cell.to_text()
    else:
        text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
    text.truncate(width, overflow="ellipsis")
    return text


class KeyedTable(DataTable[Any], QuietBorders):
    """A DataTable whose rows are replaced wholesale but whose cursor follows its row key.

    Columns fit the table's width: headers switch to their short form, then the widest text
    columns are cut (with an ellipsis), so every column stays visible at 80x24.
    """

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

    COLUMNS: Sequence[Col] = ()
    EMPTY = "nothing yet"
    SCANNING = "scanning…"  # until the first scan: "empty" would be a guess

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._keys: list[str] = []
        self._rows: list[list[Any]] = []
        self._widths: list[list[int]] = []  # each cell's width, row by row (for _fit)
        self._colmax: list[int] | None = None  # each column's widest cell (None: measure)
        self._index: dict[str, int] = {}  # row key -> row number
        self._layout: tuple[list[str], list[int]] = ([], [])
        self._fit_width = 0
        self._fit_vbar = False  # whether the vertical scrollbar showed at the last fit
        # Rows whose new cells are not drawn yet because they are far from the viewport. A
        # DataTable cell update redraws the whole table (and recomputes every row's offset:
        # O(rows)), so a room pushed into three thousand rows below must not cost a repaint;
        # its cells are handed over when it comes near (all of them: which ones DataTable
        # has is not kept, a list per row would cost memory).
        self._behind: set[str] = set()

    def on_mount(self) -> None:
        if not self.columns:
            self._set_columns(self._fit(self._widest([])))
            self.set_border_subtitle(self.SCANNING)

    def _set_columns(self, layout: tuple[list[str], list[int]]) -> None:
        # Explicit widths, computed from the data: DataTable would otherwise measure cells
        # later, in its own idle handler, and could paint (or leave behind a modal) a frame
        # with stale column widths.
        self.clear(columns=True)
        labels, widths = layout
        for col, label, width in zip(self.COLUMNS, labels, widths, strict=True):
            self.add_column(label, key=col.key, width=width)
        self._layout = layout

    @property
    def selected_key(self) -> str | None:
        if not self._keys or self.cursor_row < 0 or self.cursor_row >= len(self._keys):
            return None
        return self._keys[self.cursor_row]

    def _available(self) -> int:
        # Inside the border, minus the vertical scrollbar's columns (2 by default: counted as
        # 1, a scrolling table came out a cell too wide and grew a horizontal scrollbar) and
        # each column's padding.
        width = self.size.width - self.scrollbar_size_vertical
        return width - 2 * self.cell_padding * len(self.COLUMNS)

    def _widest(self, widths: list[list[int]]) -> list[int]:
        """The widest cell of each column."""
        return (
            [max(col) for col in zip(*widths, strict=True)] if widths else [0] * len(self.COLUMNS)
        )

    def _column_widths(self) -> list[int]:
        """`_widest(self._widths)`, kept up to date by `_set_widths` (3,000 rooms: measuring
        every cell again for a one-row update was most of that update)."""
        if self._colmax is None:
            self._colmax = self._widest(self._widths)
        return self._colmax

    def _set_widths(self, i: int, new: list[int]) -> None:
        old, self._widths[i] = self._widths[i], new
        top = self._colmax
        if top is None:
            return
        for c, (a, b) in enumerate(zip(old, new, strict=True)):
            if b > top[c]:
                top[c] = b
            elif a == top[c] and b < a:
                self._colmax = None  # the widest cell got narrower: measure the column again
                return

    def _fit(self, data: list[int]) -> tuple[list[str], list[int]]:
        """Column labels and widths for columns whose widest cells are `data`."""
        available = self._available()
        self._fit_width, self._fit_vbar = self.size.width, self.show_vertical_scrollbar
        for short in (False, True):
            labels = [c.short if short else c.label for c in self.COLUMNS]
            natural = [max(d, cell_len(h)) for d, h in zip(data, labels, strict=True)]
            if self.size.width <= 0 or sum(natural) <= available:
                return labels, natural
        minimum = [
            max(c.min, cell_len(h)) if c.min else 0
            for c, h in zip(self.COLUMNS, labels, strict=True)
        ]
        return labels, fit_widths(natural, minimum, available)

    def _display(self, row: list[Any]) -> list[Any]:
        # Plain text cells hold names, errors, monitor patterns, a hook's message and previews
        # from producers: shown escaped, and as written (a Cell: DataTable reads a string as
        # markup, so a pattern `[/x]` or a message with `[/b]` stopped the dashboard with a
        # MarkupError, and `[@click=...]` or `[link=...]` became live).
        cells = [_shown(c) for c in row]
        return [_cut(c, w) for c, w in zip(cells, self._layout[1], strict=True)]

    def on_resize(self) -> None:
        self._catch_up()  # taller: more rows in view
        if self._fitted():
            return
        self._refit()

    def _fitted(self) -> bool:
        """Are the columns fitted to the width there is now? The vertical scrollbar's column
        counts (`_available`): a fit made while one showed for a moment (rows set before the
        layout gave the table its height, on a loaded machine) left every column one cell
        narrower for good once it went, since the table's size does not change with it."""
        return (self._fit_width, self._fit_vbar) == (self.size.width, self.show_vertical_scrollbar)

    def watch_show_vertical_scrollbar(self, old: bool, new: bool) -> None:
        if self.columns and not self._fitted():
            self.call_after_refresh(self._refit_if_needed)

    def _refit_if_needed(self) -> None:
        if not self._fitted():
            self._refit()

    def _refit(self) -> None:
        if self._shown_subtitle == self.SCANNING:
            # No rows yet: the empty columns fit the new width, and the table still says it
            # is scanning (set_rows would say "nothing yet" before the first look answered).
            self._set_columns(self._fit(self._widest([])))
            return
        # New widths, same rows: rebuilt, and the cursor stays on its key (emptying the
        # keys first moved it to the first row, so `r` and `a` acted on another room).
        self.set_rows(list(zip(self._keys, self._rows, strict=True)), refit=True)

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        # Columns fitted narrower after a layout at wider widths (set before the table had a
        # width, on a loaded machine) left Textual's horizontal scrollbar on for good: at
        # 80x24 its row hid the wakes table's first row. Look at the scrollbars again.
        if new.width < old.width and self.show_horizontal_scrollbar:
            self.call_after_refresh(self._refresh_scrollbars)

    def watch_hover_coordinate(self, old: Any, value: Any) -> None:
        super().watch_hover_coordinate(old, value)
        # The header row is -1: a column's header explains its number.
        if value.row == -1 and 0 <= value.column < len(self.COLUMNS):
            col = self.COLUMNS[value.column]
            self.tooltip = f"{col.label}: {col.tip}"
        else:
            self.tooltip = None

    def set_rows(self, rows: Sequence[Row], *, refit: bool = False) -> None:
        """Replace the rows. The cursor follows its row's key wherever that row moves; if the
        row is gone, it stays at the same position (the next row), never jumps to the top."""
        keys = [k for k, _ in rows]
        cells = [list(c) for _, c in rows]
        self.set_border_subtitle("" if keys else self.EMPTY)
        fitted = self._fitted()
        if not refit and fitted and self.columns and keys == self._keys and cells == self._rows:
            # Nothing new. (Columns fitted before the table had a size, while it was
            # scanning, are fitted now: an empty first scan left them unfitted for good.)
            return
        widths = [[cell_len(_plain(c)) for c in row] for row in cells]
        widest = self._widest(widths)
        layout = self._fit(widest)
        if self.columns and keys == self._keys and layout == self._layout:
            # Same rows, same widths: update changed cells in place (no cursor jump).
            near = self._near_screen()
            for i, (key, old, new) in enumerate(zip(keys, self._rows, cells, strict=True)):
                self._show_row(i, key, old, new, near)
            self._rows, self._widths, self._colmax = cells, widths, widest
            return
        self._rebuild(keys, cells, widths, layout)
        self._colmax = widest

    def update_rows(self, keys: list[str], changed: dict[str, list[Any]]) -> None:
        """`set_rows` for a refresh that changed only the rows in `changed` (key -> cells):
        the work and the repaint grow with what changed, not with the table (3,000 rooms)."""
        fitted = self._fitted()
        if (
            not self.columns
            or not fitted
            or (keys is not self._keys and keys != self._keys)
            or any(k not in self._index for k in changed)
        ):
            rows = dict(zip(self._keys, self._rows, strict=True))
            rows.update(changed)
            self.set_rows([(k, rows[k]) for k in keys if k in rows])
            return
        self.set_border_subtitle("" if keys else self.EMPTY)
        updates = []
        for key, new in changed.items():
            i = self._index[key]
            old = self._rows[i]
            if new != old:
                updates.append((key, old, new))
                self._rows[i] = new
                self._set_widths(i, [cell_len(_plain(c)) for c in new])
        if not updates:
            return
        layout = self._fit(self._column_widths())
        if layout != self._layout:
            self._rebuild(list(keys), self._rows, self._widths, layout)
            return
        near = self._near_screen()
        for key, old, new in updates:
            self._show_row(self._index[key], key, old, new, near)

    def _near_screen(self) -> range:
        """Row numbers on screen, and a screen's worth above and below (a short scroll finds
        them fresh)."""
        page = max(1, self.size.height)
        top = int(self.scroll_y)
        return range(max(0, top - page), top + 2 * page)

    def _show_row(self, i: int, key: str, old: list[Any], new: list[Any], near: range) -> None:
        """Hand row `i`'s new cells to DataTable if it is near the viewport; otherwise later
        (`_catch_up`). `old`: what DataTable was last given for it."""
        if old == new:
            return
        if i not in near and self.size.height > 0:
            self._behind.add(key)
        elif key in self._behind:
            self._behind.discard(key)
            self._update_row(key, None, new)
        else:
            self._update_row(key, old, new)

    def _catch_up(self) -> None:
        """Rows that changed far from the viewport and are near it now: drawn."""
        if not self._behind:
            return
        near = self._near_screen()
        for key in [k for k in self._behind if self._index.get(k, -1) in near]:
            self._behind.discard(key)
            self._update_row(key, None, self._rows[self._index[key]])

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self._catch_up()

    def _update_row(self, key: str, old: list[Any] | None, new: list[Any]) -> None:
        """DataTable's cells of `key` from `old` (None: unknown, every cell) to `new`."""
        if old == new:
            return
        for i, (col, b, c) in enumerate(zip(self.COLUMNS, new, self._display(new), strict=True)):
            if old is None or old[i] != b:
                self.update_cell(key, col.key, c)

    def _rebuild(
        self,
        keys: list[str],
        cells: list[list[Any]],
        widths: list[list[int]],
        layout: tuple[list[str], list[int]],
    ) -> None:
        current, position = self.selected_key, self.cursor_row
        self._set_columns(layout)
        for key, row in zip(keys, cells, strict=True):
            self.add_row(*self._display(row), key=key)
        self._keys, self._rows, self._widths, self._colmax = keys, cells, widths, None
        self._index = {k: i for i, k in enumerate(keys)}
        self._behind = set()  # every row was just given its cells
        if current in self._index:
            self.move_cursor(row=self._index[current], animate=False)
        elif keys:
            self.move_cursor(row=min(max(position, 0), len(keys) - 1), animate=False)

    @classmethod
    def column_index(cls, key: str) -> int:
        return next(i for i, c in enumerate(cls.COLUMNS) if c.key == key)

    def select_key(self, key: str) -> bool:
        """Move the cursor to `key`'s row; False when no row has that key."""
        row = self._index.get(key)
        if row is None:
            return False
        self.move_cursor(row=row, animate=False)
        return True

    def set_cell(self, key: str, column: str, value: Any) -> None:
        """Show `value` in one cell (a number the lines panel knows sooner than the scan)."""
        row = self._index.get(key)
        if row is None:
            return
        i = self.column_index(column)
        if self._rows[row][i] == value:
            return
        # A copy: the row's cells may be shared with a memo of what the scan made them from.
        self._rows[row] = cells = list(self._rows[row])
        cells[i] = value
        self._set_widths(row, [cell_len(_plain(c)) for c in cells])
        if cell_len(_plain(value)) > self._layout[1][i]:
            # Wider than its column: fit the columns again rather than cut a number.
            self.set_rows(list(zip(self._keys, self._rows, strict=True)), refit=True)
        else:
            self.update_cell(key, column, value)


class RoomsTable(KeyedTable):
    COLUMNS = (
        Col("Room", "room", "Room", "the notification file", 6),
        Col("Pending", "pending", "Pend", "complete lines in the file now, read or not"),
        Col(
            "In-flight",
            "in_flight",
            "Flight",
            "lines a session read and has not acked yet (summed over sessions)",
        ),
        Col("Acked", "acked", "Acked", "lines removed by acks, ever"),
        Col(
            "Preserved",
            "preserved",
            "Kept",
            "lines that arrived between a read and its ack and were kept, ever",
        ),
        Col(
            "Unread by session",
            "unread",
            "Unread",
            "per session: pending lines beyond what it last read",
            6,
        ),
        Col(
            "Oldest",
            "oldest",
            "Old",
            "how long the oldest line has waited (xN: handed out N times without an ack)",
            3,
        ),
        Col("Activity", "activity", "Last", "last append or ack", 5),
        Col("Arrivals (1 min)", "rate", "Rate", "lines arrived per 5 s over the last minute", 4),
    )
    EMPTY = "no rooms: pass --room PATH or a config file"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Per room: (the row its cells were made from, its cells).
        self._memo: dict[str, tuple[RoomRow | None, list[Any]]] = {}
        self.due = float("inf")  # when the next age, overdue mark or sparkline text changes
        self._dues: list[tuple[float, str]] = []  # (when, room): a heap of coming changes
        # Rows whose time-driven text fell due while they were off screen: made again when
        # they scroll into view (thousands of rooms whose lines wait the same minute would
        # otherwise all be repainted at that minute, on screen or not).
        self._stale: set[str] = set()
        self._source: tuple[dict[str, str], dict[str, RoomRow], RateTracker] | None = None
        self.clock: Callable[[], float] = time.time  # the app's (set by the screen)

    @staticmethod
    def cells_for(r: RoomRow, now: float, rates: RateTracker) -> list[Any]:
        if r.status is None:
            err = Cell(f"⚠ {r.error}", "bold red")
            dash = RIGHT_DASH
            return [Cell(r.label), dash, dash, dash, dash, err, "-", "-", ""]
        st = r.status
        pending = pending_cell(st.pending) if st.exists else Cell(ABSENT_CELL, "dim")
        return [
            _with_marks(r.label, st, now),
            pending,
            _num(in_flight_total(st)),
            _num(st.acked_total),
            _num(st.preserved_total),
            _unread(st, now),
            _oldest(st, now),
            ago(last_activity(r), now),
            _spark(r.key, now, rates),
        ]

    @staticmethod
    def rows_for(rooms: Sequence[RoomRow], now: float, rates: RateTracker) -> list[Row]:
        return [(r.key, RoomsTable.cells_for(r, now, rates)) for r in rooms]

    def show_rooms(
        self,
        labels: dict[str, str],
        rows: dict[str, RoomRow],
        now: float,
        rates: RateTracker,
        changed: set[str] | None = None,
    ) -> None:
        """Every room of `labels` (key -> label, in order); a room not counted yet says so.
        Only rows in `changed` (None: all) are made again, plus the rows whose time-driven
        text (ages, overdue marks, arrivals) is due; quiet rooms are never visited."""
        memo = self._memo
        self._source = (labels, rows, rates)
        out: dict[str, list[Any]] = {}
        full = changed is None or len(memo) != len(labels) or not self._keys
        if full:
            todo: Iterable[str] = labels
            self._dues = []
            self._stale = set()
        else:
            # Only the changed rows and those on screen whose time-driven text is due: a
            # refresh costs what changed and what is seen, not the number of rooms.
            wanted = set(changed or ())
            self._stale -= wanted
            shown = self._near_screen()
            while self._dues and self._dues[0][0] <= now:
                key = heapq.heappop(self._dues)[1]
                if self._index.get(key, -1) in shown or key not in self._index:
                    wanted.add(key)
                else:
                    self._stale.add(key)
            todo = [k for k in wanted if k in memo]
        for key in todo:
            row = rows.get(key)
            seen = memo.get(key)
            if row is None:
                if seen is None or seen[0] is not None or full:
                    cells: list[Any] = [Cell(labels.get(key, key))]
                    cells += [*[COUNTING] * 4, "counting…", "", "", ""]
                    memo[key] = (None, cells)
                    out[key] = cells
                continue
            cells = self.cells_for(row, now, rates)
            if seen is None or seen[1] != cells or full:
                memo[key] = (row, cells)
                out[key] = cells
            if row.status is not None:
                due = next_change(row, now)
                if rates.rising(key, now):
                    due = min(due, now + 1.0)  # its buckets move on
                if due != float("inf"):
                    heapq.heappush(self._dues, (due, key))
        self.due = self._dues[0][0] if self._dues else float("inf")
        if not full:
            self.update_rows(self._keys, out)
            return
        keys = list(labels)
        if len(memo) > len(keys):
            for gone in set(memo) - set(keys):
                memo.pop(gone)
        if keys == self._keys:
            self.update_rows(keys, out)
        else:
            self.set_rows([(k, memo[k][1]) for k in keys])

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._stale and round(old_value) != round(new_value):
            self.call_later(self._show_stale)

    def _show_stale(self) -> None:
        """Rows whose ages fell due off screen and are near it now: made again."""
        if not self._stale or self._source is None:
            return
        shown = self._near_screen()
        now = [k for k in self._stale if self._index.get(k, -1) in shown]
        if now:
            labels, rows, rates = self._source
            self.show_rooms(labels, rows, self.clock(), rates, set(now))


COUNTING = Cell("…", "", "right")


def _spark(key: str, now: float, rates: RateTracker) -> str:
    if not rates.rising(key, now):
        return rates.quiet  # nothing arrived within the window
    return sparkline(rates.series(key, now))


def _with_marks(label: str, st: Any, now: float) -> Text | Cell:
    """The room's label, marked OVERDUE (a word and a colour, not colour alone) when its oldest
    line waited past the room's threshold, and when writers reached it late
    (docs/concepts/exact-acks.md,
    "Producers that do not lock"), so the owner sees what `room status` says."""
    marks = [f"late {st.late_total:,}"] if st.late_total else []
    if st.held_open:
        marks.append(f"held {st.held_open:,}")
    overdue = room_overdue(st, now)
    # Text or Cell, not a string: a string cell is read as markup ("[b]x.txt" showed as
    # "x.txt").
    if not overdue and not marks:
        return Cell(label)
    text = Text(label)
    if overdue:
        text.append(" OVERDUE", style="bold red")
    if marks:
        text.append(" " + " ".join(marks), style="yellow")
    return text


def _unread(st: Any, now: float) -> Text | Cell:
    """As `unread_summary`, with ` late` (bold red) after each session past the threshold."""
    if not st.sessions:
        return DASH
    if not any(session_overdue(st, name, now) for name in st.sessions):
        return Cell(unread_summary(st))
    text = Text()
    for name, s in sorted(st.sessions.items()):
        text.append(f"{' ' if text else ''}{name}:{s.unread:,}")
        if session_overdue(st, name, now):
            text.append(" late", style="bold red")
    return text


def _oldest(st: Any, now: float) -> Cell:
    wait = waited(st, now)
    if wait is None:
        return RIGHT_DASH
    shown = wait_text(wait) + (f" x{st.deliveries}" if st.deliveries > 1 else "")
    return Cell(shown, "bold red" if room_overdue(st, now) else "", "right")


def _monitors(specs: Sequence[Any]) -> str:
    if not specs:
        return "-"
    return " ".join(("!" if m.exclude else "") + f"/{m.pattern}/" for m in specs)


_STATUS_STYLE = {"running": "green", "exited": "", "killed": "yellow", "lost": "red"}


class ProcsTable(KeyedTable):
    COLUMNS: Sequence[Col] = (
        Col("Process", "name", "Proc", "name given to ackdeck run", 4),
        Col("Status", "status", "State", "running, exited, killed or lost", 4),
        Col("Exit", "exit", "Exit", "exit code of the latest run"),
        Col("Monitors", "monitors", "Mon", "regexes watched in its output (! = exclude)", 3),
        Col("Matches", "matches", "Hits", "lines its monitors matched in the latest run"),
        Col("Wakes", "session", "Wakes", "the session its matches wake", 4),
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
    COLUMNS: Sequence[Col] = (
        Col("Owner", "session", "Owner", "the session the wake is for", 4),
        Col("Process", "name", "Proc", "the monitored process", 4),
        Col("Kind", "kind", "Kind", "match, exited or monitor-lost", 4),
        Col(
            "Pending",
            "pending",
            "Pend",
            "items the next drain delivers: matched lines plus an exit or monitor-lost notice",
        ),
        Col("Delivered", "delivered", "Deliv", "lines delivered to the session, ever"),
        Col(
            "Superseded",
            "superseded",
            "Supers",
            "matched lines not delivered because the session was already shown them",
        ),
        Col(
            "Status",
            "status",
            "State",
            "the process's status at the wake's last event; (earlier run): that event came "
            "from a run before the one Processes shows",
            4,
        ),
    )
    EMPTY = "no wake records"

    @staticmethod
    def key_of(session: str, name: str) -> str:
        # Neither part may contain "/" (check_name), so the key splits back unambiguously.
        return f"{session}/{name}"

    @staticmethod
    def status_cell(w: Any, current: Mapping[str, str]) -> str | Cell:
        """The record's status, marked when it is about an earlier run than the name's current
        one (`current`: process name -> run id of the run Processes shows). A name started
        again showed `exited` here beside its new run's `running`: the record keeps the
        status of its last event, which came from the run before."""
        run = current.get(w.name)
        if run is None or w.run_id is None or run == w.run_id:  # (another host's: no current)
            return str(w.status)
        return Cell(f"{w.status} (earlier run)", "dim")

    @staticmethod
    def rows_for(
        wakes: Sequence[Any], now: float, current: Mapping[str, str] | None = None
    ) -> list[Row]:
        """`current`: each process name's current run id (the runs Processes shows)."""
        out: list[Row] = []
        current = current or {}
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
                        WakesTable.status_cell(w, current),
                    ],
                )
            )
        return out


# How each presence state looks (core/presence/model.py): what needs the owner stands out.
_STATE_STYLE = {
    "working": "green",
    "waiting": "bold yellow",
    "idle": "",
    "stalled": "bold red",
    "gone": "dim",
}
_STATE_ORDER = {"waiting": 0, "stalled": 1, "working": 2, "idle": 3, "gone": 4}
ALL_AGENTS = "*"  # the first row: every agent, nothing narrowed


class AgentsTable(KeyedTable):
    """One row per agent session (core/service/agents.py), after a first row for all of them.
    Highlighting an agent narrows the rooms, processes and wakes to it; enter opens its
    timeline; `h` hands the lines it has not acked over to another session (the screen's
    action: it owns the service); `T` opens Claude Code's task lists, `M` their messages."""

    BINDINGS = [
        Binding(
            "h",
            "screen.handover",
            "Hand over",
            id="agent.handover",
            tooltip="Give the lines this agent has not acked to another session (asks which)",
        ),
        Binding(
            "T",
            "screen.tasks",
            "Tasks",
            id="agent.tasks",
            tooltip="Claude Code's task lists: who holds what, flagged holders, release",
        ),
        Binding(
            "M",
            "screen.messages",
            "Messages",
            id="agent.messages",
            tooltip="Claude Code's messages between agents: each one's fate, re-deliver a lost one",
        ),
    ]

    COLUMNS: Sequence[Col] = (
        Col("Agent", "session", "Agent", "the agent's session", 5),
        Col("State", "state", "State", "working, waiting (for you), idle, stalled or gone", 5),
        Col("For", "since", "For", "how long it has been in that state"),
        Col("Unread", "unread", "Unrd", "lines in its rooms it has not read"),
        Col("Oldest", "oldest", "Old", "how long its oldest unread line has waited"),
        Col("Wakes", "wakes", "Wk", "wake records with something it was not shown"),
        Col("Why", "evidence", "Why", "what set the state (enter: its timeline)", 8),
    )
    EMPTY = "no agents seen yet (their hooks, MCP server, reads or acks record them)"

    @staticmethod
    def summary(agents: Sequence[Any]) -> str:
        """How many agents are in each state, what needs the owner first."""
        counts: dict[str, int] = {}
        for a in agents:
            counts[a.state] = counts.get(a.state, 0) + 1
        order = sorted(counts, key=lambda s: _STATE_ORDER.get(s, 9))
        return ", ".join(f"{counts[s]} {s}" for s in order)

    @staticmethod
    def title_for(agents: Sequence[Any]) -> str:
        """The panel's title: its name and the summary (all a short terminal shows of it)."""
        return f"Agents · {AgentsTable.summary(agents)}" if agents else "Agents"

    @staticmethod
    def rows_for(agents: Sequence[Any], now: float) -> list[Row]:
        if not agents:
            return []
        summary = AgentsTable.summary(agents)
        out: list[Row] = [
            (
                ALL_AGENTS,
                [Text("(all)", style="dim"), "", "", "", "", "", Text(summary, style="dim")],
            )
        ]
        # What needs the owner first: waiting for an answer, then stalled, then the rest.
        for a in sorted(agents, key=lambda a: (_STATE_ORDER.get(a.state, 9), a.session)):
            oldest = "-" if a.oldest_unread_age is None else wait_text(a.oldest_unread_age)
            since = "-" if a.since is None else wait_text(max(0.0, now - a.since))
            out.append(
                (
                    a.session,
                    [
                        safe(a.session),
                        Text(a.state, style=_STATE_STYLE.get(a.state, "")),
                        Cell(since, "", "right"),
                        _num(a.unread),
                        Cell(oldest, "", "right"),
                        _num(a.pending_wakes),
                        safe(evidence_line(a)),
                    ],
                )
            )
        return out


class FleetAgentsTable(AgentsTable):
    """The Agents panel with a fleet set (docs/how-to/fleet.md): every host's agents, with a
    Host column; another host's agent is keyed (and named) SESSION@HOST."""

    COLUMNS = (
        AgentsTable.COLUMNS[0],
        Col("Host", "host", "Host", "the host it runs on (its id in the fleet)", 4),
        *AgentsTable.COLUMNS[1:],
    )

    @staticmethod
    def rows_for(agents: Sequence[Any], now: float) -> list[Row]:
        hosts = {a.session: a.host for a in agents}
        out: list[Row] = []
        for key, cells in AgentsTable.rows_for(agents, now):
            host = "" if key == ALL_AGENTS else safe(hosts.get(key) or "-")
            out.append((key, [cells[0], host, *cells[1:]]))
        return out


# ----- every host's processes and wakes (docs/how-to/fleet.md, "The dashboard") -----------
def fleet_key(host: str, key: str) -> str:
    """Another host's row key: `HOST:KEY`. No name holds a `:` (check_name), so no key of
    this host's rows (a process name, `SESSION/NAME`) can be mistaken for one."""
    return f"{host}:{key}"


def split_fleet_key(key: str) -> tuple[str | None, str]:
    """(the host, or None for this host's row; the key as that host's table has it)."""
    host, sep, rest = key.partition(":")
    return (host, rest) if sep else (None, key)


def _host_cell(host: str, live: bool) -> Cell:
    # A host that stopped publishing: its rows are what it last said, not what holds now.
    return Cell(host) if live else Cell(f"{host} (last known)", "dim")


def _with_host(rows: list[Row], host: str, *, live: bool = True, remote: bool = False) -> list[Row]:
    """Rows of a table's `rows_for`, with a Host cell after the first, keyed `HOST:KEY` when
    another host's."""
    cell = _host_cell(host, live)
    return [
        (fleet_key(host, key) if remote else key, [cells[0], cell, *cells[1:]])
        for key, cells in rows
    ]


def _shorter(columns: Sequence[Col], short: dict[str, str]) -> tuple[Col, ...]:
    """`columns` with the short headers of `short` (column key -> short header)."""
    return tuple(replace(c, short=short.get(c.key, c.short)) for c in columns)


_HOST_TIP = "the host it runs on (its id in the fleet); (last known): that host stopped publishing"


class FleetProcsTable(ProcsTable):
    """The Processes panel with a fleet set: this host's runs, then every other host's
    (core/service/fleet/rows.py RemoteRun), with a Host column; another host's are read-only."""

    COLUMNS = (
        ProcsTable.COLUMNS[0],
        Col("Host", "host", "Host", _HOST_TIP, 4),
        *ProcsTable.COLUMNS[1:],
    )

    @staticmethod
    def fleet_rows(host: str, local: Sequence[Any], remote: Sequence[Any], now: float) -> list[Row]:
        out = _with_host(ProcsTable.rows_for(local, now), host)
        for run in remote:
            out += _with_host(ProcsTable.rows_for([run], now), run.host, live=run.live, remote=True)
        return out


class FleetWakesTable(WakesTable):
    """The Wakes panel with a fleet set: this host's wake records, then every other host's
    (core/service/fleet/rows.py RemoteWake), with a Host column; another host's are
    read-only."""

    COLUMNS = _shorter(
        (WakesTable.COLUMNS[0], Col("Host", "host", "Host", _HOST_TIP, 4), *WakesTable.COLUMNS[1:]),
        # With the Host column, the panel's numbers (never cut) did not fit its half of a
        # 100-column terminal under the Wakes panel's short headers.
        {"session": "Own", "delivered": "Dlv", "superseded": "Sup"},
    )

    @staticmethod
    def fleet_rows(
        host: str,
        local: Sequence[Any],
        remote: Sequence[Any],
        now: float,
        current: Mapping[str, str] | None = None,
    ) -> list[Row]:
        """`current`: this host's names' current runs (WakesTable.rows_for); another host's
        wake is shown with its own status."""
        out = _with_host(WakesTable.rows_for(local, now, current), host)
        for w in remote:
            out += _with_host(WakesTable.rows_for([w], now), w.host, live=w.live, remote=True)
        return out
