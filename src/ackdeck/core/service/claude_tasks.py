"""Claude Code's task lists (`$CLAUDE_CONFIG_DIR/tasks/LIST/N.json`), for `ackdeck tasks` and
the dashboard's Tasks screen: each task with its holder, flagged when that holder is gone or
stalled, or when two agents each work it (the blind-write race); and the owner's one repair,
`release`, under Claude Code's own per-task lock.

Listing is a query: it reads task files, team configs, the session registry, mailboxes and the
transcripts' TaskUpdate calls, and writes nothing.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.digest import sha256_hex
from ackdeck.core.base.struct import Struct
from ackdeck.core.clients.claude_code import sessions as reg
from ackdeck.core.clients.claude_code import tasks as tk
from ackdeck.core.errors import BadRecord, InvalidInput, RoomUnavailable

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

# How far into a transcript the claims are looked for (its newest bytes: the claims that
# matter are recent, and a transcript can grow to many MB).
TRANSCRIPT_TAIL = 8 << 20


class TaskRow(tk.Task):
    """A task as Claude Code keeps it (its `version`: `ackdeck tasks release … --seen
    VERSION` releases it only if still this), and what ackdeck sees of its holder."""

    # "owner-gone" | "owner-stalled" | "two-agents" (None: nothing to look at), and why.
    flag: str | None
    why: str | None
    workers: list[str]  # agents whose own transcripts say they hold it now


class TaskList(Struct):
    name: str
    team: str  # "live" | "gone" | "unknown" | "none": the session or team the list belongs to
    team_why: str
    tasks: list[TaskRow]


class Tasks(Struct):
    checked_at: float
    lists: list[TaskList]
    problems: list[str]  # task files that could not be read, one line each

    def flagged(self) -> int:
        return sum(1 for lst in self.lists for t in lst.tasks if t.flag is not None)


class Released(Struct):
    task_list: str
    id: str
    released: bool
    message: str  # what happened, in one line
    owner: str | None  # the owner it had (released) or has (refused)


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _read(path: Path) -> bytes | None:
    """A task file's bytes (None: it is not there), as a registry record is read."""
    return reg.read_record(path, tk.MAX_BYTES)


def _task_ids(directory: Path) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    ids = [n[: -len(".json")] for n in names if n.endswith(".json") and not n.startswith(".")]
    ids = [i for i in ids if i and locations.claude_name(i) == i]
    return sorted(ids, key=lambda i: (not i.isdigit(), int(i) if i.isdigit() else 0, i))


def _load_settled(path: Path, tries: int = 20) -> tuple[dict, bytes] | None:
    """The task in `path` (None: not there). Claude Code rewrites a task in place (truncate,
    then write), so a read without its lock can catch the file empty or half-written: a bad
    read is read again while the bytes keep changing, and is bad only when two reads in a row
    agree (or after `tries`). Raises BadRecord."""
    last: bytes | None = None
    for n in range(tries):
        raw = _read(path)
        if raw is None:
            return None
        try:
            return tk.load(raw), raw
        except BadRecord:
            # An empty file is the instant between the truncate and the write: never settled.
            if (raw == last and raw) or n == tries - 1:
                raise
            last = raw
        time.sleep(0.005)  # the writer holds the file for well under a millisecond
    raise AssertionError("unreachable")


def read_task(task_list: str, task_id: str, env: Mapping[str, str] | None = None) -> tk.Task:
    """One task as it is now. Raises InvalidInput (a bad name, no such task, a bad file)."""
    tasks = locations.claude_tasks_dir(_env(env))
    path = _task_path(tasks, task_list, task_id)
    try:
        found = _load_settled(path)
    except BadRecord as exc:
        raise BadRecord(f"{path}: {exc}") from None
    if found is None:
        raise InvalidInput(f"{path}: no such task")
    return tk.task_of(task_list, found[0], _version(found[1]))


def _task_path(tasks: Path, task_list: str, task_id: str) -> Path:
    for what, name in (("task list", task_list), ("task id", task_id)):
        if not name or locations.claude_name(name) != name:
            raise InvalidInput(f"{name!r}: not a {what} (letters, digits, _ and - only)")
    return locations.claude_task(tasks, task_list, task_id)


def _version(raw: bytes) -> str:
    return sha256_hex(raw)[:12]


# ----- who holds what ------------------------------------------------------------------------
class _Team(Struct):
    state: str  # live | gone | unknown | none
    why: str
    members: list[str]  # names; empty when there is no team
    session_id: str | None  # the lead's Claude Code session id, when known


def _team_of(
    task_list: str, env: Mapping[str, str], records: list[tuple[reg.SessionRecord, str, str]]
) -> _Team:
    """The team or session a list belongs to, and whether its process still runs: the team's
    `leadProcess` (pid and start time), else the session registry record of `session-ID8`."""
    teams = locations.claude_teams_dir(env)
    doc = reg.read_small_json(locations.claude_team_config(teams, task_list))
    short = task_list[len("session-") :] if task_list.startswith("session-") else None
    record = next(
        (x for x in records if short is not None and x[0].session_id.startswith(short)), None
    )
    if isinstance(doc, dict):
        members = [
            m["name"]
            for m in doc.get("members") or []
            if isinstance(m, dict) and isinstance(m.get("name"), str)
        ]
        sid = doc.get("leadSessionId") if isinstance(doc.get("leadSessionId"), str) else None
        lead = reg.lead_liveness(doc.get("leadProcess"), reg.proc_start)
        if lead is not None:
            return _Team(lead[0], lead[1], members, sid)
        if record is not None:
            return _Team(record[1], record[2], members, sid)
        return _Team("unknown", "its team names no lead process", members, sid)
    if record is not None:
        return _Team(record[1], record[2], [], record[0].session_id)
    if short is not None:
        return _Team("gone", f"no team and no session {task_list} any more", [], None)
    return _Team("none", "no team or session of that name", [], None)


def _member_notices(env: Mapping[str, str], team: str) -> dict[str, str]:
    """Each member's newest notice kind in the team's mailboxes (idle_notification, ...)."""
    from ackdeck.core.service.claude_teams import members

    return {m.name: m.state for m in members(env) if m.team == team and m.problem is None}


def _claims(env: Mapping[str, str], session_id: str | None, team: str) -> dict[str, list[str]]:
    """Who holds each task now by their own transcripts' TaskUpdate calls: the lead's
    (`projects/DIR/SESSION.jsonl`, as `team-lead`) and each teammate's
    (`projects/DIR/SESSION/subagents/*.jsonl`, named by its `.meta.json`). An agent holds a
    task from a call that set it in_progress (or made it the owner) until one of its calls
    set it pending, completed or deleted, or gave it to another owner."""
    short = team[len("session-") :] if team.startswith("session-") else None
    if session_id is None and short is None:
        return {}
    projects = locations.claude_projects_dir(env)
    try:
        dirs = [projects / d for d in os.listdir(projects)]
    except OSError:
        return {}
    transcripts: list[tuple[str, Path]] = []
    for d in dirs:
        # The session's id: known from its team or registry record; else (both gone with the
        # session) the transcript whose name starts with the list's ID8.
        sids = [session_id] if session_id is not None else _sessions_starting(d, short or "")
        for sid in sids:
            transcripts += _transcripts_of(d, sid, team)
    holders: dict[str, dict[str, None]] = {}

    for agent, path in transcripts:
        for task_id, status, owner in _task_updates(path):
            held = holders.setdefault(task_id, {})
            if owner is not None and owner != agent:
                held.pop(agent, None)
                if status != "completed":
                    held[owner] = None
            elif status in ("pending", "completed", "deleted"):
                held.pop(agent, None)
                if owner is not None:
                    held.pop(owner, None)
            elif status == "in_progress" or owner == agent:
                held[agent] = None
    return {t: list(h) for t, h in holders.items()}


def _sessions_starting(project: Path, short: str) -> list[str]:
    """Session ids with a transcript in `project` starting with `short` (8 hex digits)."""
    if len(short) != 8:
        return []
    try:
        names = os.listdir(project)
    except OSError:
        return []
    return sorted(
        n[: -len(".jsonl")] for n in names if n.startswith(short) and n.endswith(".jsonl")
    )


def _transcripts_of(project: Path, session_id: str, team: str) -> list[tuple[str, Path]]:
    """The lead's transcript (as `team-lead`) and each teammate's of one session."""
    out: list[tuple[str, Path]] = []
    if locations.claude_name(session_id) != session_id:
        # Read from a team's config or a registry record, both writable by others: a session
        # id is a UUID, and one like `../../x` must not name a file outside the project.
        return out
    lead = locations.claude_transcript(project, session_id)
    if lead.is_file():
        out.append(("team-lead", lead))
    sub = locations.claude_subagents_dir(project, session_id)
    try:
        names = sorted(os.listdir(sub))
    except OSError:
        return out
    for n in names:
        if not n.endswith(".jsonl"):
            continue
        name = _agent_name(sub / (n[: -len(".jsonl")] + ".meta.json"), team)
        if name is not None:
            out.append((name, sub / n))
    return out


def _agent_name(meta: Path, team: str) -> str | None:
    doc = reg.read_small_json(meta)
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
        return None
    if isinstance(doc.get("teamName"), str) and doc["teamName"] != team:
        return None
    return str(doc["name"])


def _task_updates(path: Path) -> list[tuple[str, str | None, str | None]]:
    """(taskId, status, owner) of each TaskUpdate call in a transcript, oldest first."""
    import stat

    try:
        # Non-blocking, and only a regular file: a FIFO named like a transcript must not hang.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return []
        start = max(0, st.st_size - TRANSCRIPT_TAIL)
        data = os.pread(fd, st.st_size - start, start)
    except OSError:
        return []
    finally:
        os.close(fd)
    out = []
    for line in data.split(b"\n"):
        if b'"TaskUpdate"' not in line:
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        msg = rec.get("message") if isinstance(rec, dict) else None
        content = msg.get("content") if isinstance(msg, dict) else None
        if rec.get("type") != "assistant" or not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            args = block.get("input")
            if block.get("name") != "TaskUpdate" or not isinstance(args, dict):
                continue
            task_id = args.get("taskId")
            if not isinstance(task_id, str):
                continue
            status, owner = args.get("status"), args.get("owner")
            out.append(
                (
                    task_id,
                    status if isinstance(status, str) else None,
                    owner if isinstance(owner, str) and owner else None,
                )
            )
    return out


def flag_of(
    task: tk.Task, team: _Team, notices: Mapping[str, str], workers: list[str]
) -> tuple[str | None, str | None]:
    """Is the task worth the owner's look, and why (pure)? A finished task never is."""
    if task.status == "completed":
        return None, None
    if len(workers) > 1:
        return "two-agents", (
            f"{' and '.join(workers)} each hold it by their own transcripts; the file says "
            f"{task.owner or 'no owner'} (the last write won)"
        )
    if task.owner is None:
        return None, None
    owner = task.owner.split("@", 1)[0]
    if team.state == "gone":
        return "owner-gone", f"{owner}'s session is gone: {team.why}"
    if team.members and owner not in team.members:
        return "owner-gone", f"{owner} is not a member of team {task.task_list} any more"
    if task.status == "in_progress" and notices.get(owner) == "idle":
        return "owner-stalled", f"{owner} went idle while holding it in_progress"
    return None, None


def list_tasks(
    env: Mapping[str, str] | None = None,
    *,
    clock: Callable[[], float] = time.time,
    home: Path | None = None,
) -> Tasks:
    """Every task of every list, by list then id (numeric ids in order). `home`: ackdeck's,
    whose leases (a `claude-tasks://LIST` queue) say a task's holder is working, not gone."""
    from ackdeck.core.rooms.claude_tasks.queue import lease_flag, leases
    from ackdeck.core.service.claude_sessions import registry

    e = _env(env)
    tasks_dir = locations.claude_tasks_dir(e)
    try:
        names = sorted(n for n in os.listdir(tasks_dir) if locations.claude_name(n) == n)
    except OSError:
        names = []
    known = registry(e)
    records = [(s.record, s.alive, s.why) for s in known.sessions]
    lists, problems = [], []
    for name in names:
        if not (tasks_dir / name).is_dir():
            continue
        team = _team_of(name, e, records)
        found_tasks: list[tk.Task] = []
        for task_id in _task_ids(tasks_dir / name):
            path = locations.claude_task(tasks_dir, name, task_id)
            try:
                found = _load_settled(path)
                if found is None:
                    continue
                found_tasks.append(tk.task_of(name, found[0], _version(found[1])))
            except BadRecord as exc:
                problems.append(f"{path}: {exc}; skipped")
            except OSError as exc:
                problems.append(f"{path}: {exc.strerror or exc}; skipped")
        # Mailboxes and transcripts are read only for a list with unfinished work: the lists
        # of old sessions (all done, or empty) cost a directory listing each.
        open_work = any(t.status != "completed" for t in found_tasks)
        notices = _member_notices(e, name) if team.members and open_work else {}
        claims = _claims(e, team.session_id, name) if open_work else {}
        held = leases(home, name) if home is not None and open_work else {}
        rows = []
        for task in found_tasks:
            workers = claims.get(task.id, []) if task.status != "completed" else []
            flag, why = flag_of(task, team, notices, workers)
            leased = lease_flag(task.owner, held.get(task.id), clock())
            if leased is not None and flag != "two-agents" and task.status != "completed":
                flag, why = leased[0] or None, leased[1]
            rows.append(
                TaskRow(
                    name,
                    task.id,
                    task.subject,
                    task.description,
                    task.status,
                    task.owner,
                    task.blocks,
                    task.blocked_by,
                    task.version,
                    flag,
                    why,
                    workers,
                )
            )
        lists.append(TaskList(name, team.state, team.why, rows))
    return Tasks(clock(), lists, problems)


# ----- the owner's repair --------------------------------------------------------------------
def release(
    task_list: str,
    task_id: str,
    *,
    seen: str,
    owner: str | None,
    env: Mapping[str, str] | None = None,
) -> Released:
    """Give the task back (owner removed, status pending, as Claude Code gives back a departed
    teammate's) under Claude Code's per-task lock, only if it is still what the owner was
    shown: version `seen`, held by `owner`. Otherwise nothing is written and the result says
    what changed."""
    from ackdeck.core.base.atomic import replace, write_temp
    from ackdeck.core.clients.claude_code.lock import TASK_RETRY_DELAYS_S, MailboxLock

    tasks_dir = locations.claude_tasks_dir(_env(env))
    path = _task_path(tasks_dir, task_list, task_id)
    where = f"task {task_id} of {task_list}"
    if not path.exists():
        raise InvalidInput(f"{path}: no such task; nothing written")
    with MailboxLock(path, delays=TASK_RETRY_DELAYS_S) as lock:
        try:
            raw = _read(path)
            if raw is None:
                raise RoomUnavailable(f"{path}: removed meanwhile; nothing written")
            doc = tk.load(raw)
        except BadRecord as exc:
            raise BadRecord(f"{path}: {exc}; nothing written") from None
        now = tk.task_of(task_list, doc, _version(raw))
        refusal = tk.release_refusal(seen, owner, now)
        if refusal is not None:
            return Released(
                task_list, task_id, False, f"{where}: {refusal}; nothing written", now.owner
            )
        mode = os.stat(path).st_mode & 0o7777
        tmp = write_temp(path, [tk.dump(tk.released(doc))], mode=mode)
        try:
            lock.check()
        except BaseException:
            os.unlink(tmp)
            raise
        replace(tmp, path)
    return Released(
        task_list,
        task_id,
        True,
        f"{where} released: owner {now.owner or 'none'} removed, status pending (was {now.status})",
        now.owner,
    )
