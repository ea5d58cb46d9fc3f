"""Claude Code sessions found on this machine, from its registry (`$CLAUDE_CONFIG_DIR/sessions`
or ~/.claude/sessions): each with its state and whether its process still runs, for
`ackdeck agents` and the dashboard's Agents panel. No setup: no hook or MCP server needed.

A query: it reads the registry and /proc, and writes nothing (a record left by a killed session
stays on disk and is shown as gone; removing it is Claude Code's business).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.struct import Struct
from ackdeck.core.clients.claude_code import sessions as reg
from ackdeck.core.errors import BadRecord

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


class ClaudeSession(Struct):
    record: reg.SessionRecord
    alive: str  # "live" | "gone" | "unknown" (another pid namespace)
    why: str  # the evidence of `alive`, in words

    @property
    def short(self) -> str:
        """How Claude Code names the session's team and task list: `session-` + 8 of its id."""
        return f"session-{self.record.session_id[:8]}"


class Registry(Struct):
    sessions: list[ClaudeSession]
    problems: list[str]  # each registry file that could not be read, in one line


def registry(
    env: Mapping[str, str] | None = None,
    *,
    start_of: Callable[[int], str | None] = reg.proc_start,
    here: str | None = None,
) -> Registry:
    """Every record in the registry, by pid; a file that is not a record (damaged, huge, too
    deep, a symlink or a FIFO) is named in `problems` and skipped, never fatal."""
    directory = locations.claude_sessions_dir(os.environ if env is None else env)
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return Registry([], [])
    domain = reg.pid_domain() if here is None else here
    found: list[ClaudeSession] = []
    problems: list[str] = []
    for name in names:
        pid = reg.record_pid(name)
        if pid is None:
            continue  # a peer token (PID.HASH.key) or a name Claude Code would not read
        path = locations.claude_session_record(directory, pid)
        try:
            raw = reg.read_record(path)
            if raw is None:
                continue  # the session exited between the listing and the read
            record = reg.parse_record(pid, raw)
        except BadRecord as exc:
            problems.append(f"{path}: {exc}; skipped")
            continue
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or exc}; skipped")
            continue
        alive, why = reg.liveness(record, domain, start_of(pid))
        found.append(ClaudeSession(record, alive, why))
    found.sort(key=lambda s: s.record.pid)
    return Registry(found, problems)
