"""Claude Code's task lists (`~/.claude/tasks/LIST/N.json`), as 2.1.328 reads and writes them
(read from its bundled code, `CHECKED`): pure parsing and decisions; the service does the I/O.

- A list is a directory named like a team (`session-ID8` for a session's own list); each task
  is `N.json`, written `JSON.stringify(task, null, 2)` (no newline at the end) in place
  (writeFile, not a rename), beside `.lock` (the list's lock, for creating a task) and
  `.highwatermark` (the highest id given).
- A task: `id`, `subject`, `description`, `activeForm`?, `owner`?, `status` (pending,
  in_progress, completed), `blocks`, `blockedBy` (lists of ids), `metadata`?.
- Every change of a task holds the per-task lock: proper-lockfile on `N.json`
  (`N.json.lock`, a directory), retries 30, minTimeout 5 ms, maxTimeout 100 ms
  (core/clients/claude_code/lock.py implements that protocol).
- A claim through its claim path checks the owner under that lock, but `TaskUpdate{owner}`
  merges whatever it is given over what it reads: a blind write, the last writer wins, so two
  agents can each believe they hold one task.
- When a teammate shuts down, Claude Code itself gives its tasks back: `{owner: undefined,
  status: "pending"}` (the owner key disappears). A teammate killed never does.
"""

from __future__ import annotations

import json

from ackdeck.core.base.struct import Struct
from ackdeck.core.errors import BadRecord

MAX_BYTES = 1 << 20  # a task is a few hundred bytes; anything this large is not one
STATUSES = ("pending", "in_progress", "completed")
EXPECTED = (
    "expected Claude Code's task: a JSON object with string id, subject, description and "
    "status, and lists blocks and blockedBy"
)


class Task(Struct):
    task_list: str
    id: str
    subject: str
    description: str
    status: str
    owner: str | None
    blocks: list[str]
    blocked_by: list[str]
    version: str  # a digest of the file's bytes: "unchanged since shown" compares it


def _ids(value: object) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return list(value)


def load(raw: bytes) -> dict:
    """The task object in a task file's bytes, exactly as stored. Raises BadRecord."""
    if len(raw) > MAX_BYTES:
        raise BadRecord(f"larger than {MAX_BYTES >> 20} MiB; {EXPECTED}")
    try:
        doc = json.loads(raw)
    except UnicodeDecodeError:
        raise BadRecord(f"not UTF-8 text; {EXPECTED}") from None
    except json.JSONDecodeError as exc:
        raise BadRecord(f"not complete JSON ({exc.msg} at byte {exc.pos}); {EXPECTED}") from None
    except RecursionError:
        raise BadRecord(f"nested too deep; {EXPECTED}") from None
    if not isinstance(doc, dict):
        raise BadRecord(f"the top level is not an object; {EXPECTED}")
    for key in ("id", "subject", "description", "status"):
        if not isinstance(doc.get(key), str):
            raise BadRecord(f"no string {key}; {EXPECTED}")
    if _ids(doc.get("blocks")) is None or _ids(doc.get("blockedBy")) is None:
        raise BadRecord(f"blocks or blockedBy is not a list of ids; {EXPECTED}")
    if "owner" in doc and not isinstance(doc["owner"], str):
        raise BadRecord(f"owner is not a string; {EXPECTED}")
    return doc


def task_of(task_list: str, doc: dict, version: str) -> Task:
    return Task(
        task_list,
        doc["id"],
        doc["subject"],
        doc["description"],
        doc["status"],
        doc.get("owner") or None,
        list(doc["blocks"]),
        list(doc["blockedBy"]),
        version,
    )


def dump(doc: dict) -> bytes:
    """The file as Claude Code writes it: `JSON.stringify(task, null, 2)`."""
    return json.dumps(doc, indent=2, ensure_ascii=False).encode()


def released(doc: dict) -> dict:
    """The task given back, as Claude Code gives back a departed teammate's: owner removed,
    status pending, every other key kept in its place."""
    out = {k: v for k, v in doc.items() if k != "owner"}
    out["status"] = "pending"
    return out


def release_refusal(seen: str, owner: str | None, now: Task) -> str | None:
    """Why the task must not be released now (None: release it). `seen` and `owner` are the
    version and the owner the person was shown: a task changed since is not theirs to judge
    (the line says what changed), and a task with nothing to give back is left alone."""
    if (now.owner or None) != (owner or None):
        return (
            f"changed since it was shown: its owner is now {now.owner or 'none'} (shown: "
            f"{owner or 'none'}), status {now.status}"
        )
    if now.version != seen:
        return (
            f"changed since it was shown (version {now.version}, shown {seen}): status "
            f"{now.status}, owner {now.owner or 'none'}"
        )
    if now.status == "completed":
        return "it is completed"
    if now.owner is None and now.status == "pending":
        return "it has no owner and is pending already"
    return None


def claimed(doc: dict, owner: str) -> dict:
    """The task taken by `owner`: owner set and status in_progress, as Claude Code's own claim
    writes them; every other key kept in its place."""
    out = dict(doc)
    out["owner"] = owner
    out["status"] = "in_progress"
    return out


def completed(doc: dict) -> dict:
    """The task finished, as its owner's TaskUpdate{status: completed} writes it (the owner
    kept)."""
    return {**doc, "status": "completed"}


def claimable(doc: dict, done_ids: set[str]) -> bool:
    """May a queue hand this task out: pending, nobody's, and nothing it waits on unfinished
    (`done_ids`: the list's completed tasks)."""
    return (
        doc.get("status") == "pending"
        and not doc.get("owner")
        and all(b in done_ids for b in doc.get("blockedBy") or [])
    )
