"""A process's output on its own screen.

The lines come from the run's output.log through the same virtualized view as rooms. Every time
the screen shows new output it reads it through the service (`core.service.procs.show_output`)
as the *owner* session, so the owner's shown set is recorded for the owner only: an agent's
wake for those same lines is not suppressed (the gate compares ranges per session).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.markup import escape
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker

from ackdeck.core.base.text import counted
from ackdeck.core.errors import AckdeckError, InvalidInput
from ackdeck.core.service import procs

from ..coalesce import Coalescer
from ..highlight import FILTER_SYNTAX, monitor_patterns
from ..host import HEADER_ICON, Host, host_of
from ..widgets.header import DeckHeader
from ..widgets.line_view import LineView
from .modals import PromptScreen


@dataclass
class OutputRead(Message):
    """The owner read the process's output through core (or failed to)."""

    run: Any  # the run (a RunInfo, as core.service.procs.show_output returns it)
    new_lines: int
    error: str | None = None


class OutputScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="output.close", tooltip="Back to the main screen"),
        Binding(
            "slash",
            "filter",
            "Filter",
            id="output.filter",
            tooltip="Show only output lines containing some text, or matching /regex/ (RE2)",
        ),
    ]

    def __init__(self, name: str) -> None:
        super().__init__()
        self.proc_name = name
        self.run: Any = None
        self.seen_by_owner = 0
        self._reads = Coalescer(lambda: self._owner_read(self.proc_name))

    @property
    def dash(self) -> Host:
        return host_of(self)

    def compose(self) -> ComposeResult:
        yield DeckHeader(show_clock=self.dash.config.show_clock, icon=HEADER_ICON)
        yield Static("", id="output-info")
        view = LineView(id="output-lines", empty_text="no output yet")
        view.set_border_title(f"Output · {self.proc_name}")
        yield view
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.sub_title = f"output of {self.proc_name} (read as {self.dash.config.session})"
        self.files_changed()

    def files_changed(self) -> None:
        """New output may exist: read it as the owner (coalesced), then resync the view."""
        self._reads.request()

    @property
    def busy(self) -> bool:
        return self._reads.busy

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self._reads.worker_changed(event)

    @work(thread=True, group="output-read", exit_on_error=False)
    def _owner_read(self, name: str) -> None:
        posted = False

        def deliver(run: Any, new_lines: int) -> bool:
            # Recorded only once delivered: core commits the owner's shown range for the lines
            # this answers, so a screen that can no longer show them (closing) records none.
            nonlocal posted
            posted = self.post_message(OutputRead(run, new_lines))
            return posted

        try:
            run = procs.show_output(
                self.dash.config.home, name, self.dash.config.session, deliver=deliver
            )
        except (AckdeckError, OSError) as exc:
            self.post_message(OutputRead(None, 0, str(exc)))
            return
        if not posted:
            self.post_message(OutputRead(run, 0))  # nothing to deliver: refresh the header

    def on_output_read(self, message: OutputRead) -> None:
        info = self.query_one("#output-info", Static)
        view = self.query_one(LineView)
        if message.error is not None:
            info.update(f"⚠ {message.error}")
        else:
            run = message.run
            new_run = self.run is None or self.run.run_id != run.run_id
            self.run = run
            self.seen_by_owner = (
                message.new_lines if new_run else self.seen_by_owner + (message.new_lines)
            )
            code = "-" if run.exit_code is None else str(run.exit_code)
            monitors = (
                " ".join(("!" if m.exclude else "") + f"/{m.pattern}/" for m in run.monitors)
                or "none"
            )
            info.update(
                f"{run.name}: {run.status}, exit {code} · monitors {monitors} · "
                # New to the owner on this visit: lines it was shown before (an earlier
                # visit, the CLI) are on screen but not counted, hence "new".
                f"{counted(run.matches, 'match')} · "
                f"{counted(self.seen_by_owner, 'new line')} read as {self.dash.config.session}"
            )
            view.set_monitors(monitor_patterns([run]))  # its monitors' matches are marked
            if new_run:
                view.show_file(f"{run.name}:{run.run_id}", procs.OutputLog(run))
            else:
                view.sync()

    def on_line_view_changed(self) -> None:
        view = self.query_one(LineView)
        parts = [f"Output · {self.proc_name}", counted(view.count, "line")]
        if view.line_filter is not None:
            parts.append(escape(f"filter {view.line_filter.describe()}: {view.row_count:,}"))
        if view.following:
            parts.append("following")
        view.set_border_title(" · ".join(parts))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_filter(self) -> None:
        view = self.query_one(LineView)

        def submitted(text: str | None) -> None:
            if text is not None:
                try:
                    view.set_filter(text)
                except InvalidInput as exc:
                    self.notify(str(exc), title="filter", severity="error", markup=False)
                self.on_line_view_changed()

        prompt = f"Filter output lines: {FILTER_SYNTAX}"
        self.app.push_screen(PromptScreen(prompt, value=view.needle), submitted)
