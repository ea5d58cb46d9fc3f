"""Claude Code's session registry: one file per running session, `~/.claude/sessions/PID.json`
(`$CLAUDE_CONFIG_DIR/sessions` when set; the path is named in core/base/locations.py).

Checked on 2.1.328 (`CHECKED`), observed offline with an interactive `claude` in tmux and read
from its bundled code:

- The file name is the session's pid, `^\\d+\\.json$`; Claude Code ignores any other name (and
  removes a non-canonical one such as `007.json`). Beside it, `PID.HASH.key` holds a peer token
  for the messaging socket: not a session.
- The record, written as JSON at start and rewritten on each change: `pid`, `sessionId`,
  `cwd`, `startedAt` (ms), `procStart` (the process's start time: field 22 of
  `/proc/PID/stat`, clock ticks since boot, as a string), `version`, `kind` (interactive, bg,
  daemon, daemon-worker), `entrypoint`, `pidDomain` (`linux:MACHINE-ID:PID-NAMESPACE`),
  `tmux` (`SESSION:@WINDOW.%PANE` when it runs inside tmux), `messagingSocketPath`, `name`
  (and `nameSource`), `status` (busy, shell, idle, waiting; `waitingFor` says on what),
  `updatedAt` and `statusUpdatedAt` (ms).
- Claude Code reads at most 256 KiB of a record, and judges a record live only when its pid
  runs AND that process started at `procStart`: a pid reused by another process is not the
  session. A record from another pid namespace or machine (`pidDomain` differs) cannot be
  judged by pid. A session that exits normally (`/exit`) removes its file and its key file
  (and its team folder; its task list folder stays); one killed (kill -9) leaves them all
  behind (observed on 2.1.328).

Pure parsing and the liveness decision here; the two looks at the process table (`proc_start`,
`pid_domain`) are small reads of /proc.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import BadRecord

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

MAX_BYTES = 256 << 10  # Claude Code reads no more of a record than this
STATUSES = ("busy", "shell", "idle", "waiting")
KINDS = ("interactive", "bg", "daemon", "daemon-worker")
# A record's state in the words every agent has (core/presence): busy and shell run a turn or a
# command; waiting waits for its owner (a permission, a question).
STATE_OF_STATUS = {"busy": "working", "shell": "working", "idle": "idle", "waiting": "waiting"}
MAX_DEPTH = 64  # a record nested deeper than this is not Claude Code's (it writes depth 2)


class SessionRecord(Struct):
    """One live (or left-behind) session as its registry file says."""

    pid: int
    session_id: str
    name: str | None
    cwd: str | None
    kind: str | None
    status: str | None  # one of STATUSES, or None when absent or unknown
    waiting_for: str | None
    tmux: str | None  # "SESSION:@WINDOW.%PANE"
    version: str | None
    proc_start: str | None
    pid_domain: str | None
    started_at: float | None  # epoch seconds
    updated_at: float | None
    status_at: float | None

    @property
    def pane(self) -> str | None:
        """The tmux pane id (`%N`) of `tmux`, else None."""
        if not self.tmux or ".%" not in self.tmux:
            return None
        return self.tmux[self.tmux.rindex(".%") + 1 :]


def record_pid(name: str) -> int | None:
    """The pid a registry file's name gives, None when Claude Code would not read it as one."""
    stem = name[: -len(".json")] if name.endswith(".json") else ""
    if not stem.isascii() or not stem.isdigit() or str(int(stem)) != stem:
        return None
    return int(stem)


def _depth(value: object, limit: int) -> int:
    """How deep `value` nests, counting no further than `limit` (iterative: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return deepest


def _str(doc: dict, key: str, limit: int = 4096) -> str | None:
    v = doc.get(key)
    return v if isinstance(v, str) and len(v) <= limit else None


def _ms(doc: dict, key: str) -> float | None:
    v = doc.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 4e15:
        return None
    return v / 1000


def parse_record(pid: int, raw: bytes) -> SessionRecord:
    """The record in a registry file's bytes. Raises BadRecord (one line) for anything Claude
    Code would not have written: not UTF-8 JSON, too large or too deep, no sessionId."""
    if len(raw) > MAX_BYTES:
        raise BadRecord(f"larger than {MAX_BYTES >> 10} KiB (Claude Code reads no more)")
    try:
        doc = json.loads(raw)
    except UnicodeDecodeError:
        raise BadRecord("not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BadRecord(f"not complete JSON ({exc.msg} at byte {exc.pos})") from None
    except RecursionError:
        raise BadRecord(f"nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(doc, dict):
        raise BadRecord(f"the top level is {type(doc).__name__}, not an object")
    if _depth(doc, MAX_DEPTH) > MAX_DEPTH:
        raise BadRecord(f"nested deeper than {MAX_DEPTH} levels")
    session_id = _str(doc, "sessionId", 200)
    if not session_id:
        raise BadRecord("no sessionId")
    status = _str(doc, "status")
    kind = _str(doc, "kind")
    return SessionRecord(
        pid=pid,
        session_id=session_id,
        name=_str(doc, "name", 200),
        cwd=_str(doc, "cwd"),
        kind=kind if kind in KINDS else None,
        status=status if status in STATUSES else None,
        waiting_for=_str(doc, "waitingFor", 200),
        tmux=_str(doc, "tmux", 200),
        version=_str(doc, "version", 100),
        proc_start=_str(doc, "procStart", 100),
        pid_domain=_str(doc, "pidDomain", 300),
        started_at=_ms(doc, "startedAt"),
        updated_at=_ms(doc, "updatedAt"),
        status_at=_ms(doc, "statusUpdatedAt"),
    )


def read_record(path: Path, limit: int = MAX_BYTES) -> bytes | None:
    """A file of Claude Code's (a registry record, a task) as bytes, at most `limit` + 1 (None:
    it is gone), so a caller can tell one over its limit. Never follows a symlink and never
    blocks on a FIFO; raises BadRecord for anything but a regular file and OSError when it
    cannot be read."""
    import errno
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink
            raise BadRecord("a symlink (not followed)") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadRecord("not a regular file")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


SMALL_JSON_MAX = 1 << 20  # a team's config.json, a teammate's .meta.json: a few KB each


def read_small_json(path: Path, limit: int = SMALL_JSON_MAX) -> object | None:
    """A small JSON file of Claude Code's (a team's config.json, a teammate's .meta.json),
    read as `read_record` reads (never a FIFO's wait, never through a symlink) and parsed
    strictly (core/base/jsonfields.py); None when it is not there or not usable: over `limit`,
    not a regular file, unreadable, damaged. A config put in place as a FIFO hung `ackdeck
    tasks`, `agents` and the team rooms on the open."""
    from ackdeck.core.base.jsonfields import parse

    try:
        raw = read_record(path, limit)
        if raw is None or len(raw) > limit:
            return None
        return parse(raw)
    except (OSError, ValueError, BadRecord):
        return None


# ----- is the session's process still the one that wrote the record? ----------------------------
def proc_start(pid: int) -> str | None:
    """The start time of process `pid` as Claude Code records it (field 22 of /proc/PID/stat),
    None when no such process runs (or /proc cannot tell). Unlike Claude Code's own check
    (`kill(pid, 0)`), a zombie counts as not running: a session killed inside tmux stays a
    zombie until tmux reaps it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split(" ")
    if fields[0] in ("Z", "X"):
        return None  # a zombie (killed, not yet reaped by its parent) runs no more
    return fields[19] if len(fields) > 19 else None


def pid_domain() -> str | None:
    """This machine's and pid namespace's `pidDomain`, as Claude Code writes it (None where
    /proc cannot tell: then every record is judged by pid)."""
    try:
        with open("/etc/machine-id") as f:
            machine = f.read().strip()
    except OSError:
        machine = ""
    try:
        ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return f"linux:{machine}:{ns}"


def liveness(record: SessionRecord, here: str | None, start_now: str | None) -> tuple[str, str]:
    """Is the record's session running? ("live" | "gone" | "unknown", the evidence in words).
    `here` is this pid domain, `start_now` the start time of the process now holding the pid
    (None: no such process)."""
    if here is not None and record.pid_domain is not None and record.pid_domain != here:
        return "unknown", f"pid {record.pid} is in another pid namespace or machine"
    if start_now is None:
        return "gone", f"pid {record.pid} no longer runs (its registry file was left behind)"
    if record.proc_start is not None and record.proc_start != start_now:
        return "gone", (
            f"pid {record.pid} is another process now (started at {start_now}, the session's "
            f"at {record.proc_start}); its registry file was left behind"
        )
    return "live", f"pid {record.pid} runs"


def lead_liveness(lead: object, start_of: Callable[[int], str | None]) -> tuple[str, str] | None:
    """Does a team's lead session still run? `lead` is its config's `leadProcess` (`{pid,
    procStart, …}`, 2.1.328): ("live" | "gone", why), None when the config names no process.
    In-process teammates live inside the lead's process: when it is gone, so are they. A team
    whose session exits normally is deleted with it; one killed stays behind, stale."""
    if not isinstance(lead, dict) or isinstance(lead.get("pid"), bool):
        return None
    pid = lead.get("pid")
    if not isinstance(pid, int):
        return None
    start = lead.get("procStart") if isinstance(lead.get("procStart"), str) else None
    now = start_of(pid)
    if now is None or (start is not None and start != now):
        return "gone", f"its lead's process (pid {pid}) no longer runs"
    return "live", f"its lead's process (pid {pid}) runs"
