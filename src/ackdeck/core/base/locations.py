"""Every file ackdeck keeps on disk, named in one place (as rq's `keys.py`, posting's
`locations.py`): a function per concept returns its path; no other module builds one.

Two roots hold everything:
- a file room's **sidecar**, the directory `.NAME.ackdeck/` beside the room, for the room's
  own state (it moves and is removed with the room);
- the **home** (`--home`, `$ACKDECK_HOME`, `~/.ackdeck`) for runs, wakes, notices, alerts and
  whatever a door must remember about a session.

Lock files follow one rule (`lock_file`): `WHAT.lock` in the directory of what it guards,
`lock` when it guards the whole directory, with a leading dot where the directory is listed
for its records (wakes, notices, alerts), so a listing never mistakes a lock for a record.
Every name that existed before this module keeps its spelling, so no state of an existing
user is orphaned and two versions running side by side during an upgrade take the same locks.

`FILES` describes every name for a person: the configuration reference's list of files is
generated from it (docs/hooks/gen_ref.py) and a test checks that each function here has an
entry. This module imports nothing heavy: the per-turn commands go through it. Not even
pathlib (with `re`, `urllib.parse`, `ipaddress`, ~2x a bare interpreter): a push names its
files with the `*_str` functions below, plain strings; the Path functions beside them use
the same names and rule (`sidecar` and `sidecar_str` share `_sidecar_name`), so the two
cannot drift. Path is imported where a function here builds one from nothing.
"""

from __future__ import annotations

import os

from ackdeck.core.base.atomic import child, fitting_name, sibling
from ackdeck.core.base.names import check_name

TYPE_CHECKING = False  # typing (and pathlib) stay unimported on the per-turn path
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from ackdeck.core.base.atomic import P  # a str (a run's supervisor) or a Path, kept as given

# ----- the names (kept as they were on disk before this module) ------------------------------
SIDECAR_SUFFIX = ".ackdeck"
PROCS = "procs"  # in the home: one folder per run name
WAKES = "wakes"  # in the home: one folder per session
AGENTS = "agents"  # in the home: each session's presence log and its gates' marks
ROOM_LOCK = "lock"
LEDGER = "ledger"
AUDIT = "audit.jsonl"
POLICY = "policy.json"
QUEUE_STATE = "queue.sqlite"
RECEIPTS = "receipts"
RECEIPT_SUFFIX = ".rcpt"
JOURNEY = "journey"
READ_LOG = "reads.jsonl"
READ_LOG_OLD = "reads.1.jsonl"
SEEN_MARKS = "seen"
PREV_PREFIX = "prev-"
DEAD_SUFFIX = ".dead"
CORRUPT_MARK = ".corrupt-"
LEASE_MARK = ".lease."


class Place:
    """One kind of file, for the reference: under which root ("room": the sidecar or beside
    the room; "run"; "home"), its name pattern, what it holds, and the function naming it."""

    __slots__ = ("holds", "named_by", "pattern", "root")

    def __init__(self, root: str, pattern: str, holds: str, named_by: str) -> None:
        self.root, self.pattern, self.holds, self.named_by = root, pattern, holds, named_by


def lock_file(directory: P, what: str = "", *, listed: bool = False) -> P:
    """The one naming rule for locks: `WHAT.lock` guards WHAT, `lock` the whole directory;
    a leading dot in a directory listed for its records."""
    return child(directory, _lock_name(what, listed))


def _lock_name(what: str, listed: bool) -> str:
    name = f"{what}.lock" if what else "lock"
    return f".{name}" if listed else name


def corrupt_aside(path: P, now: float) -> P:
    """Where a malformed state file is moved to (kept for a person, out of the reader's way)."""
    return sibling(path, f"{os.path.basename(path)}{CORRUPT_MARK}{int(now * 1000)}")


# ----- a file room -----------------------------------------------------------------------
def sidecar(room: Path) -> Path:
    """The sidecar directory of the room at `room` (absolute, symlinks resolved as the Room
    resolves them). A hashed stem for names too long to take the dot and suffix."""
    return room.with_name(_sidecar_name(room.name))


def _sidecar_name(room_name: str) -> str:
    stem = fitting_name(room_name, len(".") + len(SIDECAR_SUFFIX))
    return f".{stem}{SIDECAR_SUFFIX}"


def room_lock(side: Path) -> Path:
    return lock_file(side)


def ledger(side: Path) -> Path:
    return side / LEDGER


# The same names as plain strings, for the push path (core/rooms/file/append.py), which
# builds no Path: `room` absolute, as Room keeps it.
def sidecar_str(room: str) -> str:
    head, name = os.path.split(room)
    return os.path.join(head, _sidecar_name(name))


def room_lock_str(side: str) -> str:
    return os.path.join(side, _lock_name("", False))


def ledger_str(side: str) -> str:
    return os.path.join(side, LEDGER)


def seen_marks_str(side: str) -> str:
    return os.path.join(side, JOURNEY, SEEN_MARKS)


def receipt_str(side: str, session: str) -> str:
    return os.path.join(side, RECEIPTS, f"{check_name(session)}{RECEIPT_SUFFIX}")


def audit(side: Path) -> Path:
    return side / AUDIT


def policy(side: Path) -> Path:
    return side / POLICY


def queue_state(side: Path) -> Path:
    return side / QUEUE_STATE


def receipts_dir(side: Path) -> Path:
    return side / RECEIPTS


def receipt(side: Path, session: str) -> Path:
    return receipts_dir(side) / f"{check_name(session)}{RECEIPT_SUFFIX}"


def journey_dir(side: Path) -> Path:
    return side / JOURNEY


def read_log(side: Path, *, old: bool = False) -> Path:
    return journey_dir(side) / (READ_LOG_OLD if old else READ_LOG)


def seen_marks(side: Path) -> Path:
    return journey_dir(side) / SEEN_MARKS


def prev_inode(side: P, ino: int, tag: str) -> P:
    return child(side, f"{PREV_PREFIX}{ino}-{tag}")


def dead_room(room: P) -> P:
    return sibling(room, os.path.basename(room) + DEAD_SUFFIX)


# ----- the home --------------------------------------------------------------------------
def procs_dir(home: P) -> P:
    return child(home, PROCS)


def procs_dir_str(home: str) -> str:
    """procs_dir as a plain string (the per-turn `wakes drain`, core/service/pending.py)."""
    return os.path.join(home, PROCS)


def process_dir(home: P, name: str) -> P:
    return child(procs_dir(home), check_name(name, "process"))


def run_dir(home: P, name: str, run_id: str) -> P:
    return child(process_dir(home, name), check_name(run_id, "run id"))


def run_meta(rdir: P) -> P:
    return child(rdir, "meta.json")


def run_output(rdir: P) -> P:
    return child(rdir, "output.log")


def run_monitors(rdir: P) -> P:
    return child(rdir, "monitors.json")


def run_lock(rdir: P) -> P:
    return lock_file(rdir)


def supervisor_lock(rdir: P) -> P:
    return lock_file(rdir, "supervisor")


def supervisor_log(rdir: P) -> P:
    return child(rdir, "supervisor.log")


def kill_requested(rdir: P) -> P:
    return child(rdir, "kill_requested")


def shown_dir(rdir: P) -> P:
    return child(rdir, "reads")


def shown_state(rdir: P, session: str) -> P:
    return child(shown_dir(rdir), f"{check_name(session)}.json")


def shown_lock(rdir: P, session: str) -> P:
    return lock_file(shown_dir(rdir), check_name(session))


def shown_lease(rdir: P, session: str, tag: str) -> P:
    return child(shown_dir(rdir), f"{check_name(session)}{LEASE_MARK}{tag}")


def lease_temp(lease: P) -> P:
    """A lease before it is locked and renamed into view (hidden, so no drain sees it)."""
    return sibling(lease, f".{os.path.basename(lease)}.tmp")


def starts_dir(home: Path) -> Path:
    return home / "starts"


def start_lock(home: Path, name: str) -> Path:
    return lock_file(starts_dir(home), check_name(name, "process"))


def wakes_dir(home: P) -> P:
    return child(home, WAKES)


def wake_session_dir(home: P, session: str) -> P:
    return child(wakes_dir(home), check_name(session))


def wake_session_dir_str(home: str, session: str) -> str:
    """wake_session_dir as a plain string (core/service/pending.py)."""
    return os.path.join(home, WAKES, check_name(session))


def wake_record(home: P, session: str, name: str) -> P:
    return child(wake_session_dir(home, session), f"{check_name(name, 'process')}.json")


def wake_lock(home: P, session: str) -> P:
    return lock_file(wake_session_dir(home, session), listed=True)


def drain_lock(home: P, session: str) -> P:
    # A str from a Stop hook's drain (its home is a str: no pathlib on a turn).
    return lock_file(wake_session_dir(home, session), "drain", listed=True)


def wake_import_marks(home: Path, session: str) -> Path:
    # A leading dot: the session's listing of records skips it, as it skips the locks.
    return wake_session_dir(home, session) / ".imported.json"


def team_wake_target(home: Path, session: str) -> Path:
    """The Claude Code mailbox a mailbox session's wakes go to (core/monitors/team_wakes.py);
    a leading dot, so the session's listing of records skips it."""
    return wake_session_dir(home, session) / ".claude-mailbox.json"


def team_wake_sent(home: Path, session: str) -> Path:
    """The wake items already written to that mailbox, and the write in progress."""
    return wake_session_dir(home, session) / ".claude-sent.json"


def team_wake_temp(inbox: Path, msg_id: str) -> Path:
    """The new mailbox, written beside it before the rename: named by the message's id, so
    that after a crash its presence tells whether the rename happened."""
    return inbox.with_name(f".{inbox.name}.{msg_id}.ackdeck-wake")


def wake_handed(home: P, session: str) -> P:
    # The Stop hook's last hand-over not yet proven shown (core/clients/claude_code/handed.py);
    # a leading dot: the session's listing of records skips it.
    return child(wake_session_dir(home, session), ".handed.json")


# The hooks name these with the str home they are given (no pathlib on a turn): each keeps
# the type it is given, a Path for a Path (the dashboard, the MCP server, tests).
def notices_dir(home: P, session: str) -> P:
    return child(home, "notices", check_name(session))


def notice_state(home: P, session: str, door: str) -> P:
    return child(notices_dir(home, session), f"{door}.json")


def quiet_stamp(home: P, session: str, door: str, key: str) -> P:
    """The hook gate's stamp (core/service/quiet.py): its mtime is when `door` last found
    nothing to say for `session` and the rooms `key` names."""
    return child(notices_dir(home, session), f"quiet-{door}-{key}")


def quiet_until(stamp: P) -> P:
    """How long the stamp holds: its mtime is the stamp's expiry."""
    return sibling(stamp, os.path.basename(stamp) + ".until")


def quiet_text(stamp: P) -> P:
    """The session-start text the gate prints while the stamp holds (`bootstrap` only)."""
    return sibling(stamp, os.path.basename(stamp) + ".txt")


def quiet_now(home: P, session: str) -> P:
    """Truncated by each gate to read the clock (its mtime is now) without a fork."""
    return child(notices_dir(home, session), ".now")


def notice_lock(home: P, session: str, door: str) -> P:
    return lock_file(notices_dir(home, session), door, listed=True)


def alerts_dir(home: Path, owner: str) -> Path:
    """`owner` is checked here, where it becomes a path, whatever it was read from."""
    return home / "alerts" / check_name(owner, "owner")


def alert_state(home: Path, owner: str, name: str) -> Path:
    return alerts_dir(home, owner) / f"{name}.json"


def alerts_lock(home: Path, owner: str) -> Path:
    return lock_file(alerts_dir(home, owner), listed=True)


def claims_root(home: P) -> P:
    return child(home, "claims")


def claims_dir(home: P, session: str) -> P:
    """The queue claims a session holds and has not finished (core/service/claims.py): what
    its Stop hook reminds it of. Absent for a session that never claimed."""
    return child(claims_root(home), check_name(session))


def claim_mark(home: P, session: str, token: str) -> P:
    return child(claims_dir(home, session), f"{token}.json")


def redis_doubts_dir(home: Path) -> Path:
    return home / "redis-doubts"


def fleet_home_id(home: Path) -> Path:
    return home / "fleet-home-id"


def redis_doubt(home: Path, key: str) -> Path:
    return redis_doubts_dir(home) / f"{key}.json"


def agents_dir(home: P) -> P:
    return child(home, AGENTS)


def presence_log(home: Path, session: str, *, old: bool = False) -> Path:
    """A session's presence events (core/presence/log.py), appended by its hooks, its MCP
    server, its reads, acks and nudges; `old` is the one rotated copy."""
    return agents_dir(home) / _presence_log_name(session, old)


def presence_log_str(home: str, session: str) -> str:
    """presence_log (the current one) as a plain string (the hooks that only record their
    event: core/cli/_hook_events.py)."""
    return os.path.join(home, AGENTS, _presence_log_name(session, False))


def _presence_log_name(session: str, old: bool) -> str:
    return f"{check_name(session)}{'.1' if old else ''}.jsonl"


def presence_mark(home: P, session: str, kind: str) -> P:
    """Truncated by a gated hook at each turn event (`start`, `prompt`, `stop`, `end`): its
    mtime is when the latest one happened (core/presence/log.py `marks`)."""
    return child(agents_dir(home), f".{check_name(session)}.{kind}")


def presence_lock(home: Path, session: str) -> Path:
    """Taken exclusively to rotate a session's presence log, shared by each append to it."""
    return lock_file(agents_dir(home), check_name(session), listed=True)


def presence_lock_str(home: str, session: str) -> str:
    """presence_lock as a plain string (appends: core/presence/log.py, without pathlib)."""
    return os.path.join(home, AGENTS, _lock_name(check_name(session), True))


def handovers_dir(home: Path) -> Path:
    return home / "handovers"


def handover_journal(home: Path, session: str) -> Path:
    """The journal of a hand-over of `session`'s lines to another session, while it runs
    (core/service/handover.py): what was chosen and which step was done, so a re-run after a
    crash finishes it without pushing twice."""
    return handovers_dir(home) / f"{check_name(session)}.json"


def handover_lock(home: Path, session: str) -> Path:
    """Held for the whole hand-over of `session`'s lines: one at a time per session."""
    return lock_file(handovers_dir(home), check_name(session), listed=True)


def handover_room_lock(home: Path, room: str) -> Path:
    """Held for the whole hand-over out of `room` (a room spec; a file room by its resolved
    path), whichever session it hands over: two sessions sharing a room would otherwise both
    read its lines and give them to two targets. A digest names it (any room name fits), after
    a `+` no session name has (so it never meets a session's lock)."""
    import hashlib  # off the per-turn path: only a hand-over names this lock

    key = room if "://" in room else os.path.realpath(room)
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return lock_file(handovers_dir(home), f"room+{digest}", listed=True)


def messages_dir(home: Path) -> Path:
    return home / "claude-messages"


def messages_scan(home: Path) -> Path:
    """What `ackdeck messages` last read of each Claude Code transcript (its offset, inode,
    the bytes before it, and the messages found), so the next look reads only what was
    appended (issue 44, item 8). A cache: removed, the next look reads every transcript."""
    return messages_dir(home) / "scan.json"


def messages_journal(home: Path) -> Path:
    """Each re-delivery of a lost message (`ackdeck messages redeliver`): the target inbox,
    the entry's marker and when, so a re-run finds it already done and never pushes twice."""
    return messages_dir(home) / "redeliveries.json"


def messages_lock(home: Path) -> Path:
    """Held to update the scan cache or the re-delivery journal (one writer at a time)."""
    return lock_file(messages_dir(home))


def default_home(env: Mapping[str, str]) -> Path:
    """$ACKDECK_HOME, else ~/.ackdeck (not created: resolve_home does that)."""
    from pathlib import Path

    return Path(env.get("ACKDECK_HOME") or Path.home() / ".ackdeck")


# ----- Claude Code's agent teams (files another tool owns; docs/how-to/claude-teams.md) -----
CLAUDE_TEAMS = "teams"
CLAUDE_TEAM_CONFIG = "config.json"
CLAUDE_INBOXES = "inboxes"
CLAUDE_SESSIONS = "sessions"
CLAUDE_TASKS = "tasks"
CLAUDE_PROJECTS = "projects"


def claude_name(name: str) -> str:
    """A team or agent name as Claude Code spells it on disk: every character but
    A-Z a-z 0-9 _ - replaced by '-'."""
    return "".join(c if (c.isascii() and c.isalnum()) or c in "_-" else "-" for c in name)


def _claude_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's own directory: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    from pathlib import Path

    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"])
    home = os.path.expanduser("~")
    if home.startswith("~"):  # no HOME and no passwd entry (a container's arbitrary uid)
        from ackdeck.core.errors import InvalidInput

        raise InvalidInput("cannot tell Claude Code's directory: set HOME or CLAUDE_CONFIG_DIR")
    return Path(home) / ".claude"


def claude_teams_dir(env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its teams: $CLAUDE_CONFIG_DIR/teams, else ~/.claude/teams."""
    return _claude_dir(env) / CLAUDE_TEAMS


def claude_sessions_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's registry of running sessions: $CLAUDE_CONFIG_DIR/sessions (one
    `PID.json` each; core/clients/claude_code/sessions.py has its shape)."""
    return _claude_dir(env) / CLAUDE_SESSIONS


def claude_session_record(sessions: Path, pid: int) -> Path:
    return sessions / f"{pid}.json"


def claude_projects_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's transcripts: $CLAUDE_CONFIG_DIR/projects/DIR/SESSION.jsonl (the lead),
    DIR/SESSION/subagents/*.jsonl (its teammates). Read only."""
    return _claude_dir(env) / CLAUDE_PROJECTS


def claude_transcript(project: Path, session_id: str) -> Path:
    """A session's transcript in one project directory of `claude_projects_dir` (read only:
    what its model was shown proves an ack, docs/concepts/proof.md; `ackdeck tasks` reads
    its TaskUpdate calls)."""
    return project / f"{session_id}.jsonl"


def claude_subagents_dir(project: Path, session_id: str) -> Path:
    """Its teammates' transcripts (`agent-aNAME-HEX.jsonl`, each with a `.meta.json`)."""
    return project / session_id / "subagents"


def claude_tasks_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's task lists: $CLAUDE_CONFIG_DIR/tasks/LIST/N.json."""
    return _claude_dir(env) / CLAUDE_TASKS


def claude_task(tasks: Path, task_list: str, task_id: str) -> Path:
    return tasks / claude_name(task_list) / f"{claude_name(task_id)}.json"


def claude_task_lock(task: Path) -> Path:
    """Claude Code's per-task lock: proper-lockfile's `N.json.lock` directory."""
    return task.with_name(task.name + ".lock")


def claude_tasks_queues_dir(home: Path) -> Path:
    """ackdeck's own leases on Claude Code task lists used as queues (`claude-tasks://LIST`):
    never in Claude Code's files, which get only an owner and a status."""
    return home / "claude-tasks"


def claude_tasks_queue(home: Path, task_list: str) -> Path:
    return claude_tasks_queues_dir(home) / f"{claude_name(task_list)}.json"


def claude_tasks_queue_lock(home: Path, task_list: str) -> Path:
    return lock_file(claude_tasks_queues_dir(home), claude_name(task_list))


def claude_tasks_dead_room(home: Path, task_list: str) -> Path:
    """The dead-letter room of a task list used as a queue: a file room of ackdeck's own (the
    list is Claude Code's), a line per task given up on."""
    return claude_tasks_queues_dir(home) / f"{claude_name(task_list)}.dead"


def claude_team_config(teams: Path, team: str) -> Path:
    return teams / claude_name(team) / CLAUDE_TEAM_CONFIG


def claude_inboxes_dir(teams: Path, team: str) -> Path:
    return teams / claude_name(team) / CLAUDE_INBOXES


def claude_inbox(teams: Path, team: str, agent: str) -> Path:
    return claude_inboxes_dir(teams, team) / f"{claude_name(agent)}.json"


# Claude Code names a project's transcript directory after the project path, every character
# but A-Z a-z 0-9 replaced by '-', cut at this many characters plus '-' and a hash when longer.
CLAUDE_PROJECT_NAME_MAX = 200


def claude_project_dir(env: Mapping[str, str], project: str) -> Path:
    """Where Claude Code keeps the transcripts of sessions run in the directory `project`:
    `claude_projects_dir` / the project's path with every character but A-Z a-z 0-9 made '-'
    (core/clients/claude_code/transcript.py finds one cut for being too long)."""
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in project)
    return claude_projects_dir(env) / name


def claude_inbox_lock(inbox: Path) -> Path:
    """Claude Code's lock on a mailbox: a directory, proper-lockfile's `FILE.lock`."""
    return inbox.with_name(inbox.name + ".lock")


# ----- redis rooms -----------------------------------------------------------------------
def redis_room_key(name: str) -> str:
    """The stream of a redis room; its hash tag keeps its other keys in one cluster slot."""
    return f"ackdeck:room:{{{name}}}"


def redis_room_keys(name: str) -> list[str]:
    """The stream, then its meta (ledger and policy), audit and reads keys."""
    key = redis_room_key(name)
    return [key, f"{key}:meta", f"{key}:audit", f"{key}:reads"]


def redis_push_key(name: str, push_id: str) -> str:
    return f"{redis_room_key(name)}:push:{push_id}"


def redis_queue_keys(name: str) -> list[str]:
    """A redis queue room's own keys (core/rooms/redis/queue.py): the queue hash (its id, the
    next fencing number, each claimed entry's task and each live token), the lease ends (a
    sorted set by end), and the entries whose lease ended, unclaimed (by entry ID)."""
    key = redis_room_key(name)
    return [f"{key}:queue", f"{key}:leases", f"{key}:ready"]


def redis_queue_op_key(name: str, op_id: str) -> str:
    """A queue operation's reply for a retry after a lost reply (expires)."""
    return f"{redis_room_key(name)}:qop:{op_id}"


def redis_queue_done_key(name: str, token: int) -> str:
    """That a token's task was done (expires): its retried done is a no-op."""
    return f"{redis_room_key(name)}:qdone:{token}"


# ----- the fleet (docs/how-to/fleet.md) ----------------------------------------------------
# Every key of one fleet carries its name as a hash tag, so a host's publish (one script over
# the registry and its own hash) touches one cluster slot.
def fleet_prefix(fleet: str) -> str:
    return f"ackdeck:fleet:{{{fleet}}}"


def fleet_hosts_key(fleet: str) -> str:
    """The registry: a sorted set of host ids, each scored by its last publish (server time,
    milliseconds), trimmed of hosts older than the fleet's keep time."""
    return f"{fleet_prefix(fleet)}:hosts"


def fleet_host_key(fleet: str, host: str) -> str:
    """A host's hash: its last snapshot (agents, runs, wakes), the server time it was published
    at, the host's own clock then, and its TTL; the key itself expires after the keep time."""
    return f"{fleet_prefix(fleet)}:host:{check_name(host, 'host id')}"


def fleet_wakes_key(fleet: str, host: str) -> str:
    """A host's incoming wakes: a stream of items (lines, notices, dropped counts) other hosts'
    runs forwarded to its sessions; the host imports them into its wake records and deletes
    them. Expires after the keep time without a forward (a host that never comes back)."""
    return f"{fleet_prefix(fleet)}:wakes:{check_name(host, 'host id')}"


def fleet_wakes_taken_key(fleet: str, origin: str) -> str:
    """What the sessions' hosts confirmed importing from host `origin`: a hash from
    `HOST/SESSION/RECORD` (the record there) to the newest batch it holds; `origin` keeps a
    batch and sends it again until its field says so. Expires after the keep time."""
    return f"{fleet_prefix(fleet)}:wakes-taken:{check_name(origin, 'host id')}"


def fleet_wake_sent_key(fleet: str, host: str, item: str) -> str:
    """One forwarded item's mark (`item`: its digest): set once, with the stream append, so a
    forward retried after a lost reply appends nothing; expires after the keep time."""
    return f"{fleet_prefix(fleet)}:wake-sent:{check_name(host, 'host id')}:{item}"


# ----- the configuration file ---------------------------------------------------------------
CONFIG_NAME = os.path.join("ackdeck", "config.toml")  # joined onto a config_dirs() Path


def config_dirs(env: Mapping[str, str]) -> list[Path]:
    """Where the default config may be, in order: $XDG_CONFIG_HOME (when absolute, as the
    XDG spec says), then ~/.config."""
    from pathlib import Path

    out = []
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        out.append(Path(xdg))
    home = env.get("HOME") or os.path.expanduser("~")
    out.append(Path(home) / ".config")
    return out


def default_config_path(env: Mapping[str, str]) -> Path | None:
    """The first default config file that exists (None: no default config)."""
    for d in config_dirs(env):
        if (d / CONFIG_NAME).is_file():
            return d / CONFIG_NAME
    return None


# ----- for a person ----------------------------------------------------------------------
FILES: tuple[Place, ...] = (
    Place("room", ".NAME.ackdeck/", "the sidecar: the room's own state, beside it", "sidecar"),
    Place(
        "room", "lock", "flock: push and read take it shared, ack and upkeep exclusive", "room_lock"
    ),
    Place(
        "room",
        "ledger",
        "the room's state in two checksummed slots; the valid one with the higher sequence "
        "number is current (`ackdeck inspect ROOM` says which)",
        "ledger",
    ),
    Place(
        "room",
        "audit.jsonl",
        "one line per ack, recovered ack, dead-letter move or hand-over",
        "audit",
    ),
    Place(
        "room", "policy.json", "`room policy`: overdue threshold, owner, max deliveries", "policy"
    ),
    Place(
        "room",
        "queue.sqlite",
        "a queue room's claims: each claimed line's lease, token and deliveries (SQLite)",
        "queue_state",
    ),
    Place("room", "receipts/", "one receipt per session", "receipts_dir"),
    Place(
        "room",
        "receipts/SESSION.rcpt",
        "what the session's last read covered, until its ack",
        "receipt",
    ),
    Place("room", "journey/", "what `room trace` reads", "journey_dir"),
    Place(
        "room",
        "journey/reads.jsonl, journey/reads.1.jsonl",
        "the read log (rotated once when full)",
        "read_log",
    ),
    Place("room", "journey/seen", "when each line was first seen unread (ages)", "seen_marks"),
    Place(
        "room",
        "prev-INODE-TAG",
        "a replaced room inode kept briefly for writers that still hold it",
        "prev_inode",
    ),
    Place(
        "room",
        "NAME.dead (beside the room)",
        "the dead-letter room (a room like any other)",
        "dead_room",
    ),
    Place("home", "procs/NAME/", "the runs of one monitored process", "process_dir"),
    Place("run", "procs/NAME/RUN_ID/", "one run", "run_dir"),
    Place(
        "run",
        "meta.json",
        "argv, cwd, session, monitors, pid, status, exit code, times",
        "run_meta",
    ),
    Place("run", "output.log", "stdout and stderr, written by the child itself", "run_output"),
    Place(
        "run", "monitors.json", "how far the monitors scanned, counts per monitor", "run_monitors"
    ),
    Place("run", "lock", "flock for each read-modify-write of meta.json", "run_lock"),
    Place(
        "run",
        "supervisor.lock",
        "flock held by the live supervisor for its whole life",
        "supervisor_lock",
    ),
    Place("run", "supervisor.log", "the supervisor's own errors", "supervisor_log"),
    Place("run", "kill_requested", "present once `kill` asked the run to stop", "kill_requested"),
    Place("run", "reads/SESSION.json", "what the session was shown of the output", "shown_state"),
    Place(
        "run",
        "reads/SESSION.lock",
        "flock serialising that session's reads of the run",
        "shown_lock",
    ),
    Place(
        "run",
        "reads/SESSION.lease.PID.X",
        "one per read in flight, flocked by its reader",
        "shown_lease",
    ),
    Place(
        "home", "starts/NAME.lock", "held while a run of NAME starts; never removed", "start_lock"
    ),
    Place(
        "home",
        "wakes/SESSION/NAME.json",
        "a wake record the session has not drained",
        "wake_record",
    ),
    Place(
        "home", "wakes/SESSION/.lock", "flock for each change of the session's records", "wake_lock"
    ),
    Place("home", "wakes/SESSION/.drain.lock", "one drain per session at a time", "drain_lock"),
    Place(
        "home",
        "wakes/SESSION/.imported.json",
        "per record imported from another host (`NAME@HOST`), the newest batch it took in, "
        "kept when the record is dismissed so that a resend of that batch is not imported again",
        "wake_import_marks",
    ),
    Place(
        "home",
        "wakes/claude-team.TEAM.AGENT/.claude-mailbox.json",
        "where the wakes of `run --session claude-team://TEAM/AGENT` go (the teammate's mailbox)",
        "team_wake_target",
    ),
    Place(
        "home",
        "wakes/claude-team.TEAM.AGENT/.claude-sent.json",
        "the wake items already written to that mailbox, and the write in progress (its "
        "msg_id), so a kill -9 never writes a wake twice",
        "team_wake_sent",
    ),
    Place(
        "home",
        "wakes/SESSION/.handed.json",
        "the Stop hook's last hand-over of wakes to Claude Code not yet proven shown by its "
        "transcript, handed over again until it is (core/clients/claude_code/handed.py)",
        "wake_handed",
    ),
    Place(
        "home",
        "claude-tasks/",
        "ackdeck's leases on Claude Code task lists used as queues (`claude-tasks://LIST`)",
        "claude_tasks_queues_dir",
    ),
    Place(
        "home",
        "claude-tasks/LIST.json",
        "one list's leases: token, holder, end, deliveries, the version the claim wrote (never "
        "in Claude Code's files)",
        "claude_tasks_queue",
    ),
    Place(
        "home",
        "claude-tasks/LIST.lock",
        "flock for each claim, done, extend, release",
        "claude_tasks_queue_lock",
    ),
    Place(
        "home",
        "claude-tasks/LIST.dead",
        "the list's dead-letter room (a file room): a line per task claimed max_deliveries "
        "times without a done, the task itself left in Claude Code's list as it is",
        "claude_tasks_dead_room",
    ),
    Place(
        "home",
        "notices/SESSION/DOOR.json",
        "what the channel, the nudge and the hooks already told",
        "notice_state",
    ),
    Place("home", "notices/SESSION/.DOOR.lock", "one notifier per door and session", "notice_lock"),
    Place(
        "home",
        "notices/SESSION/quiet-DOOR-KEY",
        "the hook gate's stamp: its mtime is when DOOR last had nothing to say",
        "quiet_stamp",
    ),
    Place(
        "home",
        "notices/SESSION/quiet-DOOR-KEY.until",
        "the stamp's expiry, as its mtime",
        "quiet_until",
    ),
    Place("home", "notices/SESSION/.now", "the gate's clock reading, as its mtime", "quiet_now"),
    Place(
        "home",
        "notices/SESSION/quiet-bootstrap-KEY.txt",
        "the session-start text the gate prints while its stamp holds",
        "quiet_text",
    ),
    Place(
        "home",
        "agents/.SESSION.KIND",
        "the time of SESSION's latest start, prompt, stop or end, as its mtime (a gated "
        "hook's presence); a start mark holds Claude Code's session id, an end mark the "
        "SessionEnd hook's JSON",
        "presence_mark",
    ),
    Place(
        "home", "alerts/OWNER/NAME.json", "an overdue episode of a room OWNER owns", "alert_state"
    ),
    Place("home", "alerts/OWNER/.lock", "flock for each change of OWNER's episodes", "alerts_lock"),
    Place(
        "home",
        "agents/SESSION.jsonl, agents/SESSION.1.jsonl",
        "the session's presence events: hooks, MCP connections, reads, acks, nudges "
        "(`ackdeck agents`; rotated once when full, the new log starting with a summary)",
        "presence_log",
    ),
    Place(
        "home",
        "agents/.SESSION.lock",
        "flock: a presence log's rotation (each append takes it shared)",
        "presence_lock",
    ),
    Place("home", "agents/", "one presence log per session", "agents_dir"),
    Place(
        "home",
        "handovers/SESSION.json",
        "an unfinished hand-over of SESSION's lines to another session (`ackdeck handover`): "
        "the lines, the target and the step reached; removed once done",
        "handover_journal",
    ),
    Place("home", "handovers/.SESSION.lock", "one hand-over of SESSION at a time", "handover_lock"),
    Place(
        "home",
        "handovers/.room+DIGEST.lock",
        "one hand-over out of a room at a time, whichever session shares it",
        "handover_room_lock",
    ),
    Place("home", "handovers/", "the journals of unfinished hand-overs", "handovers_dir"),
    Place(
        "home",
        "fleet-home-id",
        "a random id of this home, published with its snapshot: two homes publishing under one "
        "host id are told apart and warned",
        "fleet_home_id",
    ),
    Place(
        "home",
        "claims/SESSION/TOKEN.json",
        "a queue claim the session holds and has not finished (its Stop hook reminds it)",
        "claim_mark",
    ),
    Place(
        "home",
        "redis-doubts/KEY.json",
        "a redis read whose reply may have been lost (refuses a blind ack)",
        "redis_doubt",
    ),
    Place(
        "home",
        "claude-messages/scan.json",
        "what `ackdeck messages` last read of each Claude Code transcript (offset, inode, the "
        "messages found): the next look reads only what was appended; a cache",
        "messages_scan",
    ),
    Place(
        "home",
        "claude-messages/redeliveries.json",
        "each lost message re-delivered (`ackdeck messages redeliver`): never twice",
        "messages_journal",
    ),
    Place("home", "claude-messages/lock", "flock for each change of those two", "messages_lock"),
    Place("home", "claude-messages/", "the messages' scan cache and journal", "messages_dir"),
    Place(
        "claude",
        "teams/",
        "Claude Code's teams ($CLAUDE_CONFIG_DIR or ~/.claude)",
        "claude_teams_dir",
    ),
    Place(
        "claude",
        "teams/TEAM/config.json",
        "a team's members (read only: the Agents panel's rows)",
        "claude_team_config",
    ),
    Place("claude", "teams/TEAM/inboxes/", "the team's mailboxes", "claude_inboxes_dir"),
    Place(
        "claude",
        "teams/TEAM/inboxes/AGENT.json",
        "one agent's mailbox (room `claude-team://TEAM/AGENT`): a push appends, a mark-read "
        "sets `read`, each under Claude Code's lock and replaced whole",
        "claude_inbox",
    ),
    Place(
        "claude",
        "teams/TEAM/inboxes/AGENT.json.lock",
        "Claude Code's lock on it (a directory, proper-lockfile's protocol)",
        "claude_inbox_lock",
    ),
    Place(
        "claude",
        "projects/DIR/",
        "the transcripts of the sessions run in one project directory (DIR: its path, "
        "every character but A-Z a-z 0-9 made '-')",
        "claude_project_dir",
    ),
    Place(
        "claude",
        "projects/DIR/SESSION.jsonl",
        "a session's transcript (read only: what its model was shown proves an ack, "
        "docs/concepts/proof.md; `ackdeck tasks` reads its TaskUpdate calls)",
        "claude_transcript",
    ),
    Place(
        "claude",
        "sessions/PID.json",
        "a running Claude Code session's registry record (read only: `ackdeck agents` shows "
        "it as an agent; left behind by a killed session, then shown as gone)",
        "claude_session_record",
    ),
    Place(
        "claude", "sessions/", "Claude Code's registry of running sessions", "claude_sessions_dir"
    ),
    Place("claude", "tasks/", "Claude Code's task lists", "claude_tasks_dir"),
    Place(
        "claude",
        "projects/",
        "Claude Code's transcripts (read only: `ackdeck tasks` reads their TaskUpdate calls)",
        "claude_projects_dir",
    ),
    Place(
        "claude",
        "projects/DIR/SESSION/subagents/",
        "its teammates' transcripts and their .meta.json (read only)",
        "claude_subagents_dir",
    ),
    Place(
        "claude",
        "tasks/LIST/N.json",
        "one task (`ackdeck tasks`): read; rewritten only by `ackdeck tasks release` and a "
        "`claude-tasks://LIST` queue's claim, done and release, under Claude Code's lock",
        "claude_task",
    ),
    Place(
        "claude",
        "tasks/LIST/N.json.lock",
        "Claude Code's lock on that task (a directory, proper-lockfile's protocol)",
        "claude_task_lock",
    ),
    Place(
        "claude",
        "teams/TEAM/inboxes/.AGENT.json.MSG_ID.ackdeck-wake",
        "a monitor's wake being written into a teammate's mailbox, for an instant (renamed "
        "over it; after a kill -9 its presence says the rename never happened)",
        "team_wake_temp",
    ),
    Place(
        "run",
        "reads/.SESSION.lease.PID.X.tmp",
        "a lease for an instant, before it is locked and renamed into view",
        "lease_temp",
    ),
    Place(
        "home",
        "FILE.corrupt-MS",
        "a malformed state file moved aside, kept for a person",
        "corrupt_aside",
    ),
)


def reference_table() -> str:
    """The list of files as the configuration reference shows it (Markdown)."""
    roots = {
        "room": "Beside each file room, in its sidecar (refused if a symlink or another user's)",
        "run": "In each run's directory, `procs/NAME/RUN_ID/` in the home",
        "home": "In the home (`--home`, `ACKDECK_HOME`, `~/.ackdeck`)",
        "claude": "Claude Code's own files, in `$CLAUDE_CONFIG_DIR` or `~/.claude` (written only "
        "by a push, a mark-read or a task release, under Claude Code's lock)",
    }
    out: list[str] = []
    for root, title in roots.items():
        out += [f"{title}:", "", "| File | Holds |", "|---|---|"]
        out += [f"| `{p.pattern}` | {p.holds} |" for p in FILES if p.root == root]
        out.append("")
    out.append(
        "Lock files follow one rule: `WHAT.lock` guards WHAT, `lock` the whole directory, with "
        "a leading dot in a directory listed for its records. Names are kept as they were, "
        "so nothing is migrated."
    )
    return "\n".join(out) + "\n"
