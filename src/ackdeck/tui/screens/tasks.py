"""Claude Code's task lists on their own screen (`T` on the Agents panel): every task, flagged
ones first (a holder gone, idle while holding it, or two agents each holding it), and `R` to
give the highlighted one back, as `ackdeck tasks release` does: under Claude Code's per-task
lock, only if the task is still the version this screen showed (core/service/claude_tasks.py).
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
from .modals import ConfirmScreen


@dataclass
class TasksListed(Message):
    """The task lists as core read them (or why they could not be read)."""

    tasks: Any  # ackdeck.core.service.claude_tasks.Tasks
    error: str | None = None


@dataclass
class TaskReleased(Message):
    """A release the owner asked for finished: what core said."""

    message: str
    released: bool


def row_order(task: Any) -> tuple[int, str, int, str]:
    """Flagged tasks first, then by list and id (numeric ids in order): a stable order."""
    numeric = int(task.id) if task.id.isdigit() else 0
    return (task.flag is None, task.task_list, numeric, task.id)


class TasksScreen(ListingScreen):
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="tasks.close", tooltip="Back to the main screen"),
        Binding(
            "R",
            "release",
            "Release",
            id="tasks.release",
            tooltip="Give the highlighted task back (owner removed, pending) if it is still as "
            "shown (asks first)",
        ),
        Binding("l", "look", "Look again", id="tasks.look", tooltip="Read the task lists again"),
    ]

    NAME = "tasks"
    COLUMNS = ("List", "Id", "Status", "Owner", "Blocked by", "Flag", "Subject")
    LOOKING = "reading the task lists…"
    WHAT = "task"
    SUB_TITLE = "Claude Code's task lists"

    @work(thread=True, group="tasks-list", exclusive=True, exit_on_error=False)
    def _look(self) -> None:
        import os
        from pathlib import Path

        from ackdeck.core.base.locations import default_home
        from ackdeck.core.service.claude_tasks import list_tasks

        # ackdeck's queue leases say a holder is working (read, never created).
        given = self.dash.config.home
        home = Path(os.fspath(given)) if given is not None else default_home(os.environ)
        try:
            self.post_message(TasksListed(list_tasks(clock=self.dash.clock, home=home)))
        except (AckdeckError, OSError) as exc:
            self.post_message(TasksListed(None, str(exc)))

    def on_tasks_listed(self, message: TasksListed) -> None:
        if message.error is not None or message.tasks is None:
            self.failed(message.error)
            return
        found = message.tasks
        rows = sorted((t for lst in found.lists for t in lst.tasks), key=row_order)

        def cells(_key: str, t: Any) -> list[Any]:
            flag = Text(t.flag, style="bold red") if t.flag else Text("")
            # Text cells: agents wrote these words; a str cell would be read as markup.
            return [
                Text(safe(t.task_list)),
                Text(safe(t.id)),
                t.status,
                Text(safe(t.owner or "-")),
                Text(safe(",".join(t.blocked_by) or "-")),
                flag,
                Text(safe(t.subject)),
            ]

        self.show({f"{t.task_list}/{t.id}": t for t in rows}, cells)
        lists = len(found.lists)
        words = [f"{len(rows)} tasks in {lists} list{'s' if lists != 1 else ''}"]
        if found.flagged():
            words.append(f"{found.flagged()} flagged")
        words += [f"note: {p}" for p in found.problems]
        self.info.update(Text(safe(" · ".join(words))))
        self._show_why()

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._show_why()

    def _show_why(self) -> None:
        key = self.selected_key
        t = self.rows.get(key) if key is not None else None
        self.query_one(DataTable).border_subtitle = (
            safe(f"{t.flag}: {t.why}") if t is not None and t.flag else ""
        )

    def action_release(self) -> None:
        t = self.selected()
        if t is None:
            return
        body = (
            f"Task {t.id} of {t.task_list}: {t.subject}\n"
            f"owner {t.owner or 'none'}, {t.status}"
            + (f"\n{t.flag}: {t.why}" if t.flag else "")
            + "\n\nRemove its owner and set it pending, as Claude Code does for a teammate "
            "that shut down? Nothing is written if it changed since shown."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._release(t)

        # The body quotes agents' text (a subject): escaped, never read as markup.
        self.app.push_screen(
            ConfirmScreen("Release task", escape(safe(body)), yes="Release"), answered
        )

    @work(thread=True, group="tasks-release", exit_on_error=False)
    def _release(self, t: Any) -> None:
        from ackdeck.core.service.claude_tasks import release

        try:
            done = release(t.task_list, t.id, seen=t.version, owner=t.owner)
        except (AckdeckError, OSError) as exc:
            self.post_message(TaskReleased(str(exc), False))
            return
        self.post_message(TaskReleased(done.message, done.released))

    def on_task_released(self, message: TaskReleased) -> None:
        self.notify(
            safe(message.message), severity="information" if message.released else "warning"
        )
        self.action_look()
