"""Border titles that repaint their widget only when their text changes.

Textual repaints the whole widget whenever `border_title` or `border_subtitle` is assigned,
even with the text it already shows. The dashboard re-derives its panels' titles on every
look at the files (every 10 s while idle, a DataTable of 3,000 rooms and the lines panel
included), so each assignment goes through here and is skipped when nothing changed.
"""

from __future__ import annotations

from typing import Any


class QuietBorders:
    """Mixed into a widget (listed after Textual's class, so Textual's own class attributes
    come first): its border texts are set with `set_border_title`/`set_border_subtitle`."""

    border_title: Any
    border_subtitle: Any

    _shown_title: str | None = None
    _shown_subtitle: str | None = None

    def set_border_title(self, text: str) -> None:
        if text != self._shown_title:
            self._shown_title = text
            self.border_title = text

    def set_border_subtitle(self, text: str) -> None:
        if text != self._shown_subtitle:
            self._shown_subtitle = text
            self.border_subtitle = text
