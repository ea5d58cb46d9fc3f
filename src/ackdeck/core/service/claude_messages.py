"""`ackdeck messages`: every message Claude Code's agents sent each other, and its fate
(issue 44, items 1, 2 and 8). The reading: transcripts, inboxes, team configs and the session
registry; the decision is `message_fates`; the record formats `clients/claude_code/messages`.

Looking never writes Claude Code's files. ackdeck keeps one cache of its own
(`locations.messages_scan`): what it last read of each transcript, so a look reads only the
bytes appended since (a transcript replaced, cut or rewritten is read again whole).

`redeliver` is the one write: a lost message pushed again into its recipient's inbox, under
Claude Code's lock, in its shape, from `ackdeck` with a summary naming the original
(`re-delivery of ID`), journalled first so that a re-run never pushes it twice.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ackdeck.core.base import locations
from ackdeck.core.base.atomic import atomic_write
from ackdeck.core.base.faults import pause
from ackdeck.core.base.locks import locked
from ackdeck.core.base.statefile import read_state
from ackdeck.core.base.struct import Struct
from ackdeck.core.clients.claude_code import messages as cm
from ackdeck.core.clients.claude_code import sessions as reg
from ackdeck.core.clients.claude_code.mailbox import parse_timestamp
from ackdeck.core.errors import CorruptState, InvalidInput
from ackdeck.core.service import message_fates as mf

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

LEAD = "team-lead"
REDELIVERY_SENDER = "ackdeck"  # Claude Code signs the lead's own name: ackdeck never forges it
MARK = "re-delivery of "
TEXT_SHOWN = 400  # characters of a message's text in a row (the evidence has it whole)


class Where(Struct):
    """A transcript line: the evidence of a send or of a request that carried a message."""

    path: str
    offset: int
    length: int
    at: str
    answered_at: str | None = None
    turn: int | None = None


class Redelivery(Struct):
    team: str
    to: str
    marker: str  # the summary the pushed entry carries
    at: float
    msg_id: str | None  # the pushed entry's (None: the push's outcome is not known yet)
    fate: str | None = None  # delivered | waiting, by the new recipient's transcript
    carried: Where | None = None  # the new recipient's request that carried it


class Message(Struct):
    id: str  # the msg_id Claude Code gave it (else the SendMessage call's id)
    team: str
    session: str  # the sender's Claude Code session id
    sender: str
    to: str
    summary: str | None
    text: str
    sent_at: str
    fate: str
    why: str
    delivered_at: str | None
    turn: int | None
    turns: int  # completed turns that had it
    recipient: str  # live | gone | unknown: the recipient's process
    sent: Where
    carried: list[Where]
    redelivery: Redelivery | None = None
    kind: str = "team"  # team | cross-session
    to_session: str | None = None  # a cross-session message's recipient session, when known


class Messages(Struct):
    messages: list[Message]
    counts: dict[str, int]
    read_bytes: int  # transcript bytes read by this look (the cost)
    problems: list[str]


# ----- the transcripts, read from where the last look stopped --------------------------------
class _Transcript(Struct):
    path: Path
    session: str
    agent: str
    team: str


def _transcripts(projects: Path) -> list[_Transcript]:
    """Every lead's and teammate's transcript under `projects`."""
    out: list[_Transcript] = []
    try:
        dirs = sorted(os.listdir(projects))
    except OSError:
        return out
    for d in dirs:
        project = projects / d
        try:
            names = sorted(os.listdir(project))
        except OSError:
            continue
        for n in names:
            if not n.endswith(".jsonl"):
                continue
            sid = n[: -len(".jsonl")]
            team = f"session-{sid[:8]}"
            out.append(_Transcript(project / n, sid, LEAD, team))
            sub = locations.claude_subagents_dir(project, sid)
            try:
                subs = sorted(os.listdir(sub))
            except OSError:
                continue
            for s in subs:
                if not s.endswith(".jsonl"):
                    continue
                meta = _json(sub / (s[: -len(".jsonl")] + ".meta.json"))
                if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
                    continue  # a plain subagent, not a teammate: it has no inbox
                name = meta["name"]
                t = meta.get("teamName") if isinstance(meta.get("teamName"), str) else team
                out.append(_Transcript(sub / s, sid, name, str(t)))
    return out


def _json(path: Path) -> object:
    """One of Claude Code's small JSON files (config, meta, inbox); None if unreadable."""
    try:
        return json.loads(read_state(path, limit=64 << 20) or b"null")
    except (OSError, ValueError, RecursionError, CorruptState):
        return None


def _own_json(path: Path) -> object:
    """One of ackdeck's own state files here; None when missing or not JSON. Something not a
    regular file in its place (a FIFO would hang the read) raises CorruptState: one line."""
    raw = read_state(path)
    try:
        return None if raw is None else json.loads(raw)
    except (ValueError, RecursionError):
        return None


class ScanCache:
    """The kept scans, by transcript path (`locations.messages_scan`)."""

    def __init__(self, home: Path) -> None:
        self.path = locations.messages_scan(home)
        self.home = home
        self.scans: dict[str, cm.Scanned] = {}
        self.changed = False
        doc = _own_json(self.path)
        if isinstance(doc, dict):
            for k, v in doc.items():
                try:
                    self.scans[k] = cm.Scanned.from_dict(v)
                except (ValueError, TypeError):
                    continue  # a damaged entry: that transcript is read again

    def look(self, path: Path) -> tuple[cm.Scanned | None, int]:
        """The transcript's scan brought up to date, and the bytes read to do it."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return None, 0
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None, 0
            kept = self.scans.get(str(path))
            if kept is not None and kept.offset:
                n = min(cm.TAIL_CHECK, kept.offset)
                before = os.pread(fd, n, kept.offset - n)
                head = os.pread(fd, kept.head_len, 0)
                if not cm.kept_still_holds(kept, st.st_ino, st.st_size, before, head):
                    kept = None
            if kept is None:
                kept = cm.Scanned.empty(st.st_ino)
            if st.st_size == kept.offset:
                self.scans[str(path)] = kept
                return kept, 0
            read = 0
            pos = kept.offset
            while pos < st.st_size:
                chunk = os.pread(fd, min(8 << 20, st.st_size - pos), pos)
                if not chunk:
                    break
                read += len(chunk)
                # Only complete lines are taken; a partial last one is read again next time.
                new = cm.feed(kept, chunk, pos)
                if new.offset == kept.offset:
                    if len(chunk) < (8 << 20):
                        break
                    # one record longer than the chunk: read it whole
                    end = st.st_size - pos
                    chunk = os.pread(fd, end, pos)
                    read += len(chunk)
                    new = cm.feed(kept, chunk, pos)
                    if new.offset == kept.offset:
                        break
                kept = new
                pos = kept.offset
            self.scans[str(path)] = kept
            self.changed = True
            return kept, read
        finally:
            os.close(fd)

    def save(self, seen: set[str]) -> None:
        """Keep the scans of the transcripts still there (others are forgotten)."""
        for k in [k for k in self.scans if k not in seen]:
            del self.scans[k]
            self.changed = True
        if not self.changed:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        doc = {k: json.loads(v.dumps()) for k, v in self.scans.items()}
        with locked(locations.messages_lock(self.home)):
            atomic_write(self.path, json.dumps(doc, separators=(",", ":")).encode(), fsync=False)


# ----- teams, inboxes, processes -------------------------------------------------------------
class _Team(Struct):
    alive: str  # live | gone | unknown
    why: str
    members: list[str]
    inboxes: dict[str, set[str]] | None  # name -> msg_ids waiting; None: the team folder is gone


def _team(env: Mapping[str, str], team: str, records: list[reg.SessionRecord]) -> _Team:
    teams = locations.claude_teams_dir(env)
    doc = _json(locations.claude_team_config(teams, team))
    short = team[len("session-") :] if team.startswith("session-") else team
    record = next((r for r in records if r.session_id.startswith(short)), None)
    alive, why = "gone", f"no team folder and no running session {team}"
    members: list[str] = []
    if isinstance(doc, dict):
        members = [
            m["name"]
            for m in doc.get("members") or []
            if isinstance(m, dict) and isinstance(m.get("name"), str)
        ]
        lead = reg.lead_liveness(doc.get("leadProcess"), reg.proc_start)
        if lead is not None:
            alive, why = lead
    if record is not None and (alive != "live"):
        alive, why = reg.liveness(record, reg.pid_domain(), reg.proc_start(record.pid))
    inboxes: dict[str, set[str]] | None = None
    directory = locations.claude_inboxes_dir(teams, team)
    if directory.is_dir():
        inboxes = {}
        for name in members or []:
            entries = _json(locations.claude_inbox(teams, team, name))
            ids = (
                {
                    e["msg_id"]
                    for e in entries or []
                    if isinstance(e, dict)
                    and isinstance(e.get("msg_id"), str)
                    and not e.get("read")
                }
                if isinstance(entries, list)
                else set()
            )
            inboxes[name] = ids
    return _Team(alive, why, members, inboxes)


def _records(env: Mapping[str, str]) -> list[reg.SessionRecord]:
    from ackdeck.core.service.claude_sessions import registry

    return [s.record for s in registry(env).sessions]


# ----- the look ------------------------------------------------------------------------------
def _journal(home: Path, *, strict: bool = False) -> dict[str, dict]:
    """The re-deliveries done, by message id. `strict` (before a push): a journal that
    exists but cannot be read refuses the push (it may record this very message)."""
    path = locations.messages_journal(home)
    doc = _own_json(path)
    if isinstance(doc, dict):
        return doc
    if strict and path.exists():
        raise CorruptState(
            f"{path}: the re-delivery journal is damaged (not a JSON object); it may record "
            "this message, so nothing is pushed: move it aside after checking the inboxes"
        )
    return {}


def list_messages(
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    *,
    team: str | None = None,
    session: str | None = None,
    now: Callable[[], float] = time.time,
) -> Messages:
    """Every message a transcript shows sent (optionally of one team, or of one session: a
    session id, its first characters, or `session-ID8`), lost and duplicated first."""
    e = os.environ if env is None else env
    h = locations.default_home(e) if home is None else home
    cache = ScanCache(h)
    transcripts = _transcripts(locations.claude_projects_dir(e))
    by_agent: dict[tuple[str, str], list[tuple[_Transcript, cm.Scanned]]] = {}
    read = 0
    for t in transcripts:
        scanned, n = cache.look(t.path)
        read += n
        if scanned is not None:
            by_agent.setdefault((t.session, t.agent), []).append((t, scanned))
    cache.save({str(t.path) for t in transcripts})
    records = _records(e)
    teams: dict[str, _Team] = {}
    journal = _journal(h)
    clock = now()
    names = {r.session_id: r.name for r in records if r.name}
    out: list[Message] = []
    for (sid, agent), found in by_agent.items():
        for t, scanned in found:
            if team is not None and t.team != team:
                continue
            if session is not None and not _session_matches(sid, session):
                continue
            sends = [s for s in scanned.sent if mf.is_message(s)]
            if not sends:
                continue
            tm = teams.get(t.team) or teams.setdefault(t.team, _team(e, t.team, records))
            by_to: dict[str, list[cm.Sent]] = {}
            for s in sends:
                by_to.setdefault(s.to, []).append(s)
            for to, group in by_to.items():
                # A teammate's name wins (Claude Code: "the bare name always wins"); else a
                # session's name, a message across sessions to its main conversation.
                cross = (sid, to) not in by_agent and to not in tm.members
                if cross:
                    r_sid = _session_named(to, records) or _cross_recipient(group, by_agent, sid)
                    recipient = by_agent.get((r_sid, LEAD), []) if r_sid else []
                    r_alive = _alive(r_sid, records)
                    sender: str | None = names.get(sid)
                else:
                    r_sid, recipient, r_alive, sender = sid, by_agent.get((sid, to), []), "", agent
                carried = [c for _, sc in recipient for c in sc.carried]
                r_path = str(recipient[0][0].path) if recipient else ""
                kind = "cross-session" if cross else "team"
                for s, carries in zip(
                    group, mf.carries_of(group, carried, sender, kind), strict=True
                ):
                    if cross:
                        inbox = None  # held in the receiving process: no file to look at
                    else:
                        inbox = None if tm.inboxes is None else tm.inboxes.get(to, set())
                    alive = r_alive if cross else tm.alive
                    sent_at = parse_timestamp(s.at)
                    fate = mf.decide(
                        s,
                        carries,
                        in_inbox=None if inbox is None else (s.msg_id in inbox),
                        recipient=alive,
                        sent_age=None if sent_at is None else clock - sent_at,
                        sender=_alive(sid, records) if cross else tm.alive,
                    )
                    mid = s.msg_id or s.tool_use_id
                    first = fate.turns[0] if fate.turns else None
                    red = journal.get(mid)
                    out.append(
                        Message(
                            id=mid,
                            team=t.team,
                            session=sid,
                            sender=agent,
                            to=to,
                            summary=s.summary,
                            text=s.text[:TEXT_SHOWN],
                            sent_at=s.at,
                            fate=fate.fate,
                            why=fate.why,
                            delivered_at=first.answered_at if first else None,
                            turn=first.turn if first else None,
                            turns=len(fate.turns),
                            recipient=alive,
                            sent=Where(str(t.path), s.offset, s.length, s.at),
                            carried=[
                                Where(r_path, c.offset, c.length, c.at, c.answered_at, c.turn)
                                for c in [*fate.turns, *fate.unanswered]
                            ],
                            redelivery=None if red is None else _redelivery(red, by_agent, s),
                            kind=kind,
                            to_session=r_sid if cross else None,
                        )
                    )
    out.sort(key=lambda m: (mf.order_key(m.fate), m.sent_at, m.id))
    counts = {f: 0 for f in mf.FATES}
    for m in out:
        counts[m.fate] += 1
    return Messages(out, counts, read, [])


def _session_named(to: str, records: list[reg.SessionRecord]) -> str | None:
    """The running (or left behind) session a cross-session `to` names: its registry name,
    with or without the ` [ref]` a listing shows."""
    name = to.split(" [", 1)[0]
    hits = [r.session_id for r in records if r.name == name]
    return hits[0] if len(hits) == 1 else None


def _cross_recipient(
    group: list[cm.Sent],
    by_agent: dict[tuple[str, str], list[tuple[_Transcript, cm.Scanned]]],
    sender_sid: str,
) -> str | None:
    """The session whose main conversation got a cross-session message with this text, when
    the registry no longer names it (the session exited): found by its transcript."""
    for (sid, agent), found in by_agent.items():
        if agent != LEAD or sid == sender_sid:
            continue
        for _, sc in found:
            for c in sc.carried:
                if c.kind == "cross-session" and any(
                    c.text.strip() == s.text.strip() and c.at >= s.at for s in group
                ):
                    return sid
    return None


def _alive(sid: str | None, records: list[reg.SessionRecord]) -> str:
    """Does the session `sid` run? By its registry record (a session that exited normally
    has none: gone)."""
    record = next((r for r in records if r.session_id == sid), None)
    if record is None:
        return "gone"
    return reg.liveness(record, reg.pid_domain(), reg.proc_start(record.pid))[0]


def _session_matches(sid: str, wanted: str) -> bool:
    if wanted.startswith("session-"):
        return sid.startswith(wanted[len("session-") :])
    return sid.startswith(wanted)


def _redelivery(
    red: dict, by_agent: dict[tuple[str, str], list[tuple[_Transcript, cm.Scanned]]], s: cm.Sent
) -> Redelivery:
    """The journal's record, with its fate from the new recipient's transcript: a request
    from `ackdeck` with the marker as its summary and the message's text."""
    team, to = str(red.get("team")), str(red.get("to"))
    marker = str(red.get("marker"))
    fate, where = "waiting", None
    for (_sid, agent), found in by_agent.items():
        if agent != to:
            continue
        for t, sc in found:
            if t.team != team:
                continue
            for c in sc.carried:
                if c.sender == REDELIVERY_SENDER and c.summary == marker:
                    where = Where(str(t.path), c.offset, c.length, c.at, c.answered_at, c.turn)
                    fate = "delivered" if c.answered_at is not None else fate
    at = red.get("at")
    msg_id = red.get("msg_id")
    return Redelivery(
        team,
        to,
        marker,
        float(at) if isinstance(at, int | float) else 0.0,
        msg_id if isinstance(msg_id, str) else None,
        fate,
        where,
    )


def find(found: Messages, wanted: str) -> Message:
    """The message `wanted` names (its id or the id's first characters)."""
    hits = [m for m in found.messages if m.id == wanted] or [
        m for m in found.messages if m.id.startswith(wanted)
    ]
    if not wanted or not hits:
        raise InvalidInput(f"no message {wanted!r} in any transcript (see `ackdeck messages`)")
    if len(hits) > 1:
        raise InvalidInput(f"{wanted!r} names {len(hits)} messages; give more of its id")
    return hits[0]


def evidence(m: Message) -> list[tuple[str, str]]:
    """(where, the transcript line) for the send and each request that carried it."""
    out = [(f"sent: {m.sent.path} @{m.sent.offset}", _line(m.sent))]
    for c in m.carried:
        how = f"answered {c.answered_at} (turn {c.turn})" if c.answered_at else "no answer"
        out.append((f"carried: {c.path} @{c.offset}, {how}", _line(c)))
    r = m.redelivery
    if r is not None and r.carried is not None:
        c = r.carried
        how = f"answered {c.answered_at} (turn {c.turn})" if c.answered_at else "no answer"
        out.append((f"re-delivered to {r.to} in {r.team}: {c.path} @{c.offset}, {how}", _line(c)))
    return out


def _line(w: Where) -> str:
    try:
        with open(w.path, "rb") as f:
            f.seek(w.offset)
            return f.read(w.length).decode("utf-8", "replace")
    except OSError as exc:
        return f"(cannot read: {exc.strerror})"


# ----- re-delivery ---------------------------------------------------------------------------
class RedeliverResult(Struct):
    id: str
    done: bool  # pushed now, or found already re-delivered
    already: bool
    team: str | None
    to: str
    msg_id: str | None
    message: str


def redeliver(
    wanted: str,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    *,
    team: str | None = None,
    now: Callable[[], float] = time.time,
) -> RedeliverResult:
    """Push a lost message again into its recipient's inbox (the original team if its session
    still runs, else the one running team with a member of that name, or `team`), once."""
    from ackdeck.core.rooms.claude_team.room import ClaudeMailboxRoom

    e = os.environ if env is None else env
    h = locations.default_home(e) if home is None else home
    m = find(list_messages(e, h, now=now), wanted)
    teams_dir = locations.claude_teams_dir(e)
    locations.messages_dir(h).mkdir(parents=True, exist_ok=True)
    with locked(locations.messages_lock(h)):
        journal = _journal(h, strict=True)
        prior = journal.get(m.id)
        if prior is not None and prior.get("msg_id"):
            return RedeliverResult(
                m.id, True, True, str(prior.get("team")), m.to, prior.get("msg_id"),
                f"{m.id}: already re-delivered to {prior.get('to')} in {prior.get('team')}; "
                "nothing pushed",
            )  # fmt: skip
        if prior is None and m.fate != "lost":
            return RedeliverResult(
                m.id, False, False, None, m.to, None,
                f"{m.id}: it is {m.fate} ({m.why}), not lost; nothing pushed",
            )  # fmt: skip
        marker = f"{MARK}{m.id}"
        if prior is not None:
            # A push may have happened before a crash: its entry carries the marker.
            target = str(prior.get("team"))
            room = ClaudeMailboxRoom(teams_dir, target, m.to, sender=REDELIVERY_SENDER)
            found = next((d for d in _docs(room) if d.get("summary") == marker), None)
            carried = _carried_marker(e, target, m.to, marker)
            if found is not None or carried:
                msg_id = found.get("msg_id") if found is not None else "delivered"
                journal[m.id] = {**prior, "msg_id": msg_id}
                _store_journal(h, journal)
                return RedeliverResult(
                    m.id, True, True, target, m.to, str(msg_id),
                    f"{m.id}: already re-delivered to {m.to} in {target}; nothing pushed",
                )  # fmt: skip
        else:
            target = _target(e, m, team)
            journal[m.id] = {"team": target, "to": m.to, "marker": marker, "at": now()}
            _store_journal(h, journal)  # the intent first: a crash after the push is seen
            room = ClaudeMailboxRoom(teams_dir, target, m.to, sender=REDELIVERY_SENDER)
        msg_id = room.push(m.text if len(m.text) < TEXT_SHOWN else _full_text(m), summary=marker)
        pause("redeliver-after-push")  # a crash here: the re-run finds the marker, pushes none
        journal[m.id] = {**journal[m.id], "msg_id": msg_id}
        _store_journal(h, journal)
    return RedeliverResult(
        m.id, True, False, target, m.to, msg_id,
        f"{m.id}: re-delivered to {m.to} in {target} as {msg_id} (summary {marker!r})",
    )  # fmt: skip


def _docs(room: object) -> list[dict]:
    try:
        return room.docs()  # type: ignore[attr-defined]
    except (OSError, InvalidInput):
        return []


def _carried_marker(env: Mapping[str, str], team: str, to: str, marker: str) -> bool:
    for t in _transcripts(locations.claude_projects_dir(env)):
        if t.team == team and t.agent == to:
            data = b""
            try:
                data = t.path.read_bytes()
            except OSError:
                continue
            if marker.encode() in data:
                return True
    return False


def _full_text(m: Message) -> str:
    """The whole text of a message (a row keeps its first TEXT_SHOWN characters)."""
    try:
        with open(m.sent.path, "rb") as f:
            f.seek(m.sent.offset)
            record = json.loads(f.read(m.sent.length))
    except (OSError, ValueError):
        return m.text
    for s in cm.feed(cm.Scanned.empty(0), json.dumps(record).encode() + b"\n", 0).sent:
        if s.text.startswith(m.text):
            return s.text
    return m.text


def _target(env: Mapping[str, str], m: Message, team: str | None) -> str:
    """The team whose inbox gets the re-delivery: `team` if given (it must have the member),
    else the original if its session runs, else the one running team with that member."""
    teams_dir = locations.claude_teams_dir(env)
    records = _records(env)
    if team is not None:
        t = _team(env, locations.claude_name(team), records)
        if m.to not in t.members:
            raise InvalidInput(f"team {team!r} has no member {m.to!r}; nothing pushed")
        return team
    try:
        names = sorted(os.listdir(teams_dir))
    except OSError:
        names = []
    live = []
    for n in names:
        t = _team(env, n, records)
        if t.alive == "live" and m.to in t.members:
            live.append(n)
    if m.team in live:
        return m.team
    if len(live) == 1:
        return live[0]
    if not live:
        raise InvalidInput(
            f"no running team has a member {m.to!r} (the message's team {m.team} is gone); "
            "start one, or name a team with --team; nothing pushed"
        )
    raise InvalidInput(
        f"{len(live)} running teams have a member {m.to!r} ({', '.join(live)}): name one "
        "with --team; nothing pushed"
    )


def _store_journal(home: Path, journal: dict[str, dict]) -> None:
    atomic_write(
        locations.messages_journal(home), json.dumps(journal, indent=1).encode(), fsync=True
    )
