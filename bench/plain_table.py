"""The baseline of `python -m bench dashboard`: a plain one-table Textual app that recounts
every file's lines each second, as the simplest dashboard anyone would write.

Usage: python -m bench.plain_table FILE...
"""

from __future__ import annotations

import sys
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable


class PlainTable(App[None]):
    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.paths = paths

    def compose(self) -> ComposeResult:
        yield DataTable(cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("Room", "Lines")
        for p in self.paths:
            table.add_row(p.name, self._count(p), key=str(p))
        table.focus()
        self.set_interval(1.0, self._refresh)

    @staticmethod
    def _count(p: Path) -> str:
        try:
            n = p.read_bytes().count(b"\n")
        except OSError:
            return "-"
        return f"{n:,}"

    def _refresh(self) -> None:
        table = self.query_one(DataTable)
        for p in self.paths:
            table.update_cell(str(p), table.ordered_columns[1].key, self._count(p))


if __name__ == "__main__":
    PlainTable([Path(a) for a in sys.argv[1:]]).run()
