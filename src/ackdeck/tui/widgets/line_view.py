"""A virtualized view of lines the service pages (core/service/lines.py): a room's, whatever
its backend (`RoomRef.lines()`), or a process's output.log (`core.service.procs.OutputLog`).

Line API: `render_line` reads only the rows on screen, through `LineIndex` (offsets + pread + LRU
cache), so a 1,000,000-line room paints as fast as a small one. Indexing, re-indexing after an
ack's rename or a foreign rewrite, and filtering run in thread workers; they hand results back
with `post_message` and never touch the widget.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import Worker, get_current_worker

from ackdeck.core.errors import AckdeckError
from ackdeck.core.service.roomref import PagedRef
from ackdeck.core.service.rooms import absent_note

from ..coalesce import Coalescer
from ..highlight import LineFilter, cut_by_marks, marks
from ..lineindex import LineSource, filter_lines
from ..messages import FilterApplied, IndexBuilt, LinesIndexed
from .borders import QuietBorders

if TYPE_CHECKING:
    from ackdeck.core.service.procs import Pattern


def _cancelled() -> bool:
    return get_current_worker().is_cancelled


def _unreadable(source: PagedRef, exc: AckdeckError | OSError) -> str:
    """The panel's line for lines it cannot show."""
    if isinstance(exc, FileNotFoundError):
        return absent_note(source.name, source.display)
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror}"
    return str(exc)


class LineView(ScrollView, QuietBorders, can_focus=True):
    """Rows are lines of the current index (or of the filter result)."""

    class Changed(Message):
        """The number of lines (or filter rows) changed; parents refresh their captions."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, LineView.Changed)

    BINDINGS = [
        Binding(
            "j,down",
            "scroll_down",
            "Down",
            show=False,
            id="lines.down",
            tooltip="Scroll one line down",
        ),
        Binding("k,up", "scroll_up", "Up", show=False, id="lines.up", tooltip="Scroll one line up"),
        Binding(
            "g,home",
            "scroll_home",
            "Top",
            show=False,
            id="lines.top",
            tooltip="Jump to the first (oldest) line",
        ),
        Binding(
            "G,end",
            "scroll_end",
            "Bottom",
            show=False,
            id="lines.bottom",
            tooltip="Jump to the newest line and follow new ones",
        ),
        Binding(
            "h,left",
            "shift_left",
            "Left",
            show=False,
            id="lines.left",
            tooltip="Scroll 8 columns left (long lines)",
        ),
        Binding(
            "l,right",
            "shift_right",
            "Right",
            show=False,
            id="lines.right",
            tooltip="Scroll 8 columns right (long lines)",
        ),
        Binding(
            "pageup",
            "page_up",
            "Page up",
            show=False,
            id="lines.page_up",
            tooltip="Scroll one page up",
        ),
        Binding(
            "pagedown,space",
            "page_down",
            "Page down",
            show=False,
            id="lines.page_down",
            tooltip="Scroll one page down",
        ),
    ]

    COMPONENT_CLASSES = {
        "line-view--gutter",
        "line-view--in-flight",
        "line-view--partial",
        "line-view--notice",
        "line-view--monitor",
        "line-view--match",
    }

    DEFAULT_CSS = """
    LineView {
        background: $surface;
        overflow-y: scroll;
        overflow-x: auto;
    }
    LineView > .line-view--gutter { color: $text-muted; }
    LineView > .line-view--in-flight { color: $warning; text-style: bold; }
    LineView > .line-view--partial { color: $text-muted; text-style: italic; }
    LineView > .line-view--notice { color: $text-muted; text-style: italic; }
    LineView > .line-view--monitor { color: $error; text-style: bold; }
    LineView > .line-view--match { color: $background; background: $warning; text-style: bold; }
    """

    in_flight: reactive[int] = reactive(0)
    """Lines at the head that the owner read and has not acked yet (marked in the gutter)."""

    def __init__(self, *, empty_text: str = "no room selected", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.key: str | None = None
        self.source: PagedRef | None = None  # what is shown: a room, a process's output
        self.index: LineSource | None = None
        self.count = 0
        self.error: str | None = None
        self.empty_text = empty_text
        self.line_filter: LineFilter | None = None
        self.monitors: tuple[Pattern, ...] = ()  # marked wherever they match (set by screens)
        # The owner's eyes: lines [0, seen) of the current index have all been on screen
        # (one prefix, since an ack removes a prefix). Scrolling down extends it; a jump past
        # its end (G, a scrollbar drag) does not count the lines jumped over.
        self.seen = 0
        self._following_shown = False
        self.rows: array | None = None  # filtered line numbers, or None for all lines
        self._filter_upto = 0
        self._loading = False
        self._build_worker: Worker[None] | None = None
        self._max_width = 0
        # Syncs wait for the first page of a new file; each starts with the index current
        # when it starts (not when it was requested).
        self._syncs = Coalescer(self._start_sync, ready=lambda: not self._loading)
        self._follow = False
        self._seen_height = 0  # rows shown before the latest resize

    # ----- public API (UI thread) -----------------------------------------------------------
    def show_file(self, key: str | None, source: PagedRef | None) -> None:
        """Switch to another room or output (or to nothing)."""
        if key == self.key and self.index is not None:
            return
        self.key, self.source = key, source
        self._follow = False
        self._max_width = 0
        self._set_index(None, 0)
        self.error = None
        self.rows = None if not self.needle else array("Q")
        self.scroll_to(0, 0, animate=False, immediate=True)
        self._loading = False
        self._build_worker = None
        if source is not None:
            self._loading = True
            self._build_worker = self._build(key, source)
        self.refresh()

    def sync(self) -> None:
        """The file may have changed: pick up appends, or rebuild after a replace. Coalesced."""
        if self.source is not None:
            self._syncs.request()

    def _start_sync(self) -> Worker[None]:
        return self._sync(self.key, self.source, self.index)

    @property
    def needle(self) -> str:
        """The filter as typed ("" when none)."""
        return self.line_filter.text if self.line_filter is not None else ""

    def set_filter(self, needle: str) -> None:
        """Show only lines containing `needle`, or matching `/regex/` (RE2); "" shows all.
        A regex RE2 refuses raises InvalidInput and leaves the filter as it was."""
        self.line_filter = LineFilter(needle) if needle else None
        self.rows = array("Q") if needle else None
        self._filter_upto = 0
        self.scroll_to(0, 0, animate=False, immediate=True)
        self._update_virtual_size()
        if self.line_filter is not None and self.index is not None:
            self._filter(self.key, self.index, self.line_filter, 0, self.count)
        self.refresh()

    def set_monitors(self, patterns: tuple[Pattern, ...]) -> None:
        if patterns != self.monitors:
            self.monitors = patterns
            self.refresh()

    @property
    def following(self) -> bool:
        """Following the tail: after G, or scrolled to the end of more than a screenful."""
        return self._follow or (self.max_scroll_y > 0 and self.scroll_offset.y >= self.max_scroll_y)

    @property
    def row_count(self) -> int:
        return len(self.rows) if self.rows is not None else self.count

    @property
    def busy(self) -> bool:
        return self._loading or self._syncs.busy

    def visible_text(self) -> list[str]:
        """The text of the rows on screen (for tests and screenshots)."""
        first = int(self.scroll_offset.y)
        out = []
        for row in range(first, min(self.row_count, first + self.size.height)):
            n = self.rows[row] if self.rows is not None else row
            if self.index is not None:
                out.append(self.index.line(n))
        return out

    # ----- workers (threads: no widget access, results by message) ---------------------------
    @work(thread=True, exclusive=True, group="line-index", exit_on_error=False)
    def _build(self, key: str | None, source: PagedRef) -> None:
        index: LineSource | None = None
        try:
            index = source.lines()
            done = index.first_page(_cancelled)
        except (AckdeckError, OSError) as exc:
            self.post_message(IndexBuilt(key or "", None, 0, _unreadable(source, exc)))
            return
        self.post_message(IndexBuilt(key or "", index, index.count))
        try:
            while not done and not _cancelled():
                done = index.next_page(_cancelled)
                self.post_message(LinesIndexed(key or "", index, index.count, done))
        except AckdeckError as exc:  # a redis server that stopped answering
            self.post_message(IndexBuilt(key or "", None, 0, str(exc)))
            return
        if done:
            self.post_message(LinesIndexed(key or "", index, index.count, True))

    @work(thread=True, group="line-sync", exit_on_error=False)  # one at a time: self._syncs
    def _sync(self, key: str | None, source: PagedRef | None, index: LineSource | None) -> None:
        if source is None:
            return
        try:
            if index is not None and index.catch_up():
                self.post_message(LinesIndexed(key or "", index, index.count, True))
                return
            # The first look, or the lines held are no longer the source's first lines (an
            # ack's rename, a foreign rewrite, an acked stream prefix): they renumber.
            fresh = source.lines()
            fresh.load_all()
            self.post_message(IndexBuilt(key or "", fresh, fresh.count))
        except (AckdeckError, OSError) as exc:
            self.post_message(IndexBuilt(key or "", None, 0, _unreadable(source, exc)))

    @work(thread=True, exclusive=True, group="line-filter", exit_on_error=False)
    def _filter(
        self, key: str | None, index: LineSource, line_filter: LineFilter, first: int, last: int
    ) -> None:
        rows: array = array("Q")
        try:
            upto = filter_lines(index, line_filter.keeps, first, last, rows, _cancelled)
        except OSError:
            return  # the index was replaced under us; the rebuild re-runs the filter
        if not _cancelled():
            self.post_message(FilterApplied(key or "", index, line_filter.text, rows, upto))

    # ----- message handlers (UI thread) ------------------------------------------------------
    def on_index_built(self, message: IndexBuilt) -> None:
        message.stop()
        if message.key != (self.key or ""):
            return
        self._loading = False
        # A freshly shown file starts at its oldest line; a re-indexed one keeps following.
        at_end = self._follow or (self.index is not None and self._at_end())
        self.error = message.error
        self._set_index(message.index, message.count)
        if self.line_filter is not None and message.index is not None:
            self.rows = array("Q")
            self._filter_upto = 0
            self._filter(self.key, message.index, self.line_filter, 0, message.count)
        self._after_growth(at_end)
        # Syncs requested while the first page was being indexed start now, on this index.
        self._syncs.kick()

    def on_lines_indexed(self, message: LinesIndexed) -> None:
        message.stop()
        if message.index is not self.index:
            # Counted on an index that has since been replaced: the file may have grown
            # meanwhile, so look again, on the current index.
            if message.key == (self.key or "") and self.index is not None:
                self.sync()
            return
        if message.count == self.count:
            return
        at_end = self._at_end()
        self.count = message.count
        if self.line_filter is not None and self.rows is not None:
            self._filter(
                self.key, message.index, self.line_filter, self._filter_upto, message.count
            )
        self._after_growth(at_end)

    def on_filter_applied(self, message: FilterApplied) -> None:
        message.stop()
        if message.index is not self.index or message.needle != self.needle:
            return
        # The first results of a new filter start at the top; later ones follow if at the end.
        at_end = self._follow or (self._filter_upto > 0 and self._at_end())
        if self.rows is None:
            self.rows = array("Q")
        rows = message.rows
        assert isinstance(rows, array)
        # Two filter runs can overlap (one finishing while appended lines start another):
        # keep only lines beyond what is already filtered, so no row appears twice.
        upto = self._filter_upto
        self.rows.extend(n for n in rows if n >= upto)
        self._filter_upto = max(upto, message.upto)
        self._after_growth(at_end)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if self._syncs.worker_changed(event):
            return
        worker = event.worker
        if worker is self._build_worker and worker.is_finished:
            self._build_worker = None
            if self._loading and worker.error is not None:
                # The build failed before its first page: say so rather than "loading…".
                self._loading = False
                self.error = f"cannot index: {worker.error}"
                self.refresh()
                self._syncs.kick()

    # ----- helpers ----------------------------------------------------------------------------
    def _set_index(self, index: LineSource | None, count: int) -> None:
        # The old index is not closed here: a worker may still be reading it. Its descriptor
        # is closed when the last reference goes (LineIndex uses weakref.finalize).
        if index is not self.index:
            self.seen = 0  # another file (or the room after an ack): its lines renumbered
        self.index = index
        self.count = count
        self._update_virtual_size()

    def _at_end(self) -> bool:
        return self._follow or self.scroll_offset.y >= self.max_scroll_y

    def _after_growth(self, was_at_end: bool) -> None:
        # Like `tail -f` in a pager: a view showing the last line keeps showing it as lines
        # arrive; a view scrolled up stays where the owner put it.
        self.post_message(self.Changed())
        self._update_virtual_size()
        if was_at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def _extra_rows(self) -> int:
        if self.rows is not None or self.index is None:
            return 0
        return 1 if self.index.partial_bytes() > 0 else 0

    def _update_virtual_size(self) -> None:
        rows = self.row_count + self._extra_rows()
        # Width: the widest line painted so far (lines are only measured when shown).
        self.virtual_size = Size(max(self._max_width, 1), max(rows, 1))

    def on_resize(self) -> None:
        # A view that showed its last line keeps showing it when the panel gets shorter (the
        # owner shrinks the terminal): compare with the end as it was before this resize.
        old_end = max(0, self.virtual_size.height - self._seen_height)
        was_at_end = self._follow or (self._seen_height > 0 and self.scroll_offset.y >= old_end)
        self._seen_height = self.scrollable_content_region.height
        self._update_virtual_size()
        if was_at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def watch_in_flight(self) -> None:
        self.refresh()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._check_following()

    def _check_following(self) -> None:
        if self.following != self._following_shown:
            self._following_shown = self.following
            self.post_message(self.Changed())  # the title says "following"

    def _note_seen(self) -> None:
        """The rows on screen now have been seen: extend the seen prefix if they touch it."""
        if self.index is None or self._notice() is not None:
            return
        first = int(self.scroll_offset.y)
        last = min(self.row_count, first + self.scrollable_content_region.height)
        if self.rows is None:
            if first <= self.seen < last:
                self.seen = last
            return
        for row in range(first, last):  # filtered: hidden lines were never on screen
            n = self.rows[row]
            if n > self.seen:
                break
            self.seen = max(self.seen, n + 1)

    def render_lines(self, crop: Region) -> list[Strip]:
        strips = super().render_lines(crop)
        self._note_seen()  # after this paint the whole window is on screen
        return strips

    def action_scroll_end(self) -> None:
        self._follow = True
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        self._check_following()

    def action_shift_left(self) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x - 8), animate=False, immediate=True)

    def action_shift_right(self) -> None:
        self.scroll_to(x=self.scroll_offset.x + 8, animate=False, immediate=True)

    def action_scroll_home(self) -> None:
        self._follow = False
        self.scroll_home(animate=False, immediate=True, x_axis=False)
        self._check_following()

    def action_scroll_up(self) -> None:
        self._follow = False
        super().action_scroll_up()
        self._check_following()

    def action_page_up(self) -> None:
        self._follow = False
        super().action_page_up()
        self._check_following()

    def on_mouse_scroll_up(self) -> None:
        self._follow = False

    # ----- rendering --------------------------------------------------------------------------
    def _notice(self) -> str | None:
        if self.error:
            return f"⚠ {self.error}"
        if self.index is None:
            return "loading…" if self._loading else self.empty_text
        if self.row_count == 0 and self._extra_rows() == 0:
            if self.line_filter is not None:
                return f"no line matches {self.line_filter.describe()}"
            return "no lines"
        return None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.rich_style
        row = int(self.scroll_offset.y) + y
        notice = self._notice()
        if notice is not None:
            if y != 0:
                return Strip.blank(width, base)
            style = base + self.get_component_rich_style("line-view--notice")
            return Strip([Segment(notice, style)]).crop_extend(0, width, base)
        index = self.index
        assert index is not None
        digits = max(3, len(str(self.count)))
        x = int(self.scroll_offset.x)
        # The gutter (line number, in-flight mark, bar) stays put; only the text scrolls
        # sideways with h/l, so a line's number stays beside it.
        gutter_width = digits + 3
        text_width = max(0, width - gutter_width)
        if row >= self.row_count:
            if row == self.row_count and self._extra_rows():
                style = base + self.get_component_rich_style("line-view--partial")
                text = index.partial_text() + "  (partial: being written)"
                gutter = Strip([Segment(" " * digits + " … ", style)])
                body = Strip([Segment(text, style)]).crop_extend(x, x + text_width, base)
                return Strip.join([gutter, body]).crop_extend(0, width, base)
            return Strip.blank(width, base)
        n = self.rows[row] if self.rows is not None else row
        gutter_style = base + self.get_component_rich_style("line-view--gutter")
        mark = " "
        if n < self.in_flight:
            gutter_style = base + self.get_component_rich_style("line-view--in-flight")
            mark = "▌"
        text = index.line(n)
        gutter = Strip(
            [
                Segment(f"{n + 1:>{digits}}{mark}", gutter_style),
                Segment("│ ", base + self.get_component_rich_style("line-view--gutter")),
            ]
        )
        self._measure(gutter_width + cell_len(text))
        body = Strip(self._marked(text, base)).crop_extend(x, x + text_width, base)
        return Strip.join([gutter, body]).crop_extend(0, width, base)

    def _marked(self, text: str, base: Style) -> list[Segment]:
        """The line's text with monitor matches and filter matches marked (the match only)."""
        spans = marks(text, self.monitors, self.line_filter)
        if not spans:
            return [Segment(text, base)]
        style = {
            None: base,
            "monitor": base + self.get_component_rich_style("line-view--monitor"),
            "match": base + self.get_component_rich_style("line-view--match"),
        }
        return [Segment(piece, style[kind]) for piece, kind in cut_by_marks(text, spans)]

    def _measure(self, cells: int) -> None:
        # Grow the scrollable width when a wider line is painted (never during the paint).
        if cells > self._max_width:
            self._max_width = cells
            self.call_later(self._update_virtual_size)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.refresh()
