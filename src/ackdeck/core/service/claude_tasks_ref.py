"""A Claude Code task list as a queue room (`claude-tasks://LIST`; core/rooms/claude_tasks/
queue.py): claim, done, extend and release through every queue door. It is no inbox: push,
read and ack are Claude Code's own tools' business (TaskCreate, TaskUpdate)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.home import resolve_home
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms.claude_tasks.queue import SCHEME, ClaudeTasksQueue
from ackdeck.core.service.roomref import RoomRef

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    Clock = Callable[[], float]
    Home = str | os.PathLike[str] | None

_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")


def is_claude_tasks(spec: object) -> bool:
    return isinstance(spec, str) and spec.startswith(SCHEME)


class ClaudeTasksRoomRef(RoomRef):
    def __init__(self, task_list: str, env: Mapping[str, str] | None = None) -> None:
        self.task_list = task_list
        self.tasks = locations.claude_tasks_dir(os.environ if env is None else env)
        self.display = f"{SCHEME}{task_list}"
        self.name = task_list

    @classmethod
    def parse(cls, spec: str, env: Mapping[str, str] | None = None) -> ClaudeTasksRoomRef:
        name = spec[len(SCHEME) :]
        if not _NAME.fullmatch(name):
            raise InvalidInput(
                f"invalid room {spec[:200]!r}: use {SCHEME}LIST, 1-128 of A-Z a-z 0-9 _ - (a "
                "directory under Claude Code's tasks directory, such as session-1a2b3c4d)"
            )
        return cls(name, env)

    def open(  # type: ignore[override]
        self, *, clock: Clock = time.time, door: str = "api", home: Home = None
    ) -> ClaudeTasksQueue:
        return ClaudeTasksQueue(
            resolve_home(home), self.tasks, self.task_list, clock=clock, spec=self.display
        )

    def watch_dirs(self) -> list[Path]:
        return [self.tasks / self.task_list]

    def watches(self, path: str) -> bool:
        return Path(path).parent == self.tasks / self.task_list
