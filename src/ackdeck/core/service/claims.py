"""The queue claims a session holds and has not finished, kept in its home
(`claims/SESSION/TOKEN.json`, core/base/locations.py), so its Stop hook can remind it of them
at the cost of one directory lookup per turn (the hook runs at every stop; most sessions never
claim, and their directory does not exist).

A mark is written by every door's claim (the service's Deck.claim) and removed by the done
or release of its token, or by a refusal (the token is no longer the lease: someone else holds
the line, or it left); an extend moves its lease end. The queue's own state stays the truth:
a mark only says what this session was handed and has not reported finished. A mark that
cannot be written (a read-only home) costs only the reminder, never the claim.
"""

from __future__ import annotations

import os

from ackdeck.core.base import locations
from ackdeck.core.base.atomic import atomic_write, child, unlink_quietly
from ackdeck.core.base.jsonfields import parse
from ackdeck.core.errors import AckdeckError

# The Stop hook reads the marks with a str home (core/hooks.py `_held_claims`): neither typing
# nor pathlib (with re, enum, collections) nor json (the writers') on its path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from ackdeck.core.base.atomic import P
    from ackdeck.core.rooms.queue import Claim

LINE_SHOWN = 200  # characters of the task's line a reminder repeats
SHOWN_AT_MOST = 5  # claims named one by one in a reminder; the rest are counted


def _is_token(token: str) -> bool:
    number, sep, qid = token.partition("-")
    return bool(sep) and number.isdigit() and qid.isalnum() and len(token) <= 64


def remember(home: P, session: str, room: str, got: Claim, now: float) -> None:
    """Record that `session` holds the claim `got` of `room` (as its door names it)."""
    import json

    if not got.claimed or got.token is None or not _is_token(got.token):
        return
    line = (got.line or b"").decode("utf-8", "replace").rstrip("\n")
    mark = {
        "room": room,
        "token": got.token,
        "line": line[:LINE_SHOWN],
        "claimed_at": now,
        "until": got.lease_until,
    }
    path = locations.claim_mark(home, session, got.token)
    try:
        from ackdeck.core.base.home import make_dirs

        make_dirs(os.path.dirname(os.fspath(path)), 0o700)
        atomic_write(path, json.dumps(mark).encode(), fsync=False)
    except OSError:
        return  # the claim stands; only its reminder is lost (documented above)


def _marks_of(home: P, session: str | None, token: str) -> list[P]:
    """The mark of `token`: the session's, or, when the door named no session (`ackdeck done
    ROOM TOKEN` needs none: the token says the claim), any session's that has it."""
    if not _is_token(token):
        return []
    if session is not None:
        return [locations.claim_mark(home, session, token)]
    try:
        sessions = os.listdir(locations.claims_root(home))
    except OSError:
        return []
    found = []
    for s in sessions:
        try:
            path = locations.claim_mark(home, s, token)
        except AckdeckError:
            continue  # not a session's directory (a stray name)
        if os.path.exists(path):
            found.append(path)
    return found


def _read(path: str | Path) -> bytes:
    """Path.read_bytes on a str or a Path."""
    with open(path, "rb") as f:
        return f.read()


def moved(home: P, session: str | None, token: str, until: float | None) -> None:
    """An extend: the mark's lease now ends at `until`."""
    for path in _marks_of(home, session, token):
        _move(path, until)


def _move(path: P, until: float | None) -> None:
    import json

    try:
        mark = parse(_read(path))
        mark["until"] = until
        atomic_write(path, json.dumps(mark).encode(), fsync=False)
    except (OSError, ValueError, TypeError):
        return  # no mark (claimed before marks existed, or by another home): nothing to move


def forget(home: P, session: str | None, token: str) -> None:
    """The claim `token` is finished, given back, or no longer its holder's."""
    for path in _marks_of(home, session, token):
        unlink_quietly(path)


def held(home: P, session: str) -> list[dict[str, object]]:
    """The marks of `session`, oldest claim first (unreadable ones skipped, kept on disk)."""
    d = locations.claims_dir(home, session)
    try:
        names = os.listdir(d)
    except OSError:
        return []
    out = []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            # ackdeck's own file, still hostile input (issue 42): nested, NaN, not JSON.
            mark = parse(_read(child(d, name)))
        except (OSError, ValueError):
            continue
        if isinstance(mark, dict) and isinstance(mark.get("token"), str):
            out.append(mark)
    out.sort(key=lambda m: float(m.get("claimed_at") or 0))
    return out


def reminder(home: P, session: str, now: float) -> str:
    """The Stop hook's text for the claims `session` holds unfinished ("" when none)."""
    marks = held(home, session)
    if not marks:
        return ""
    parts = []
    for m in marks[:SHOWN_AT_MOST]:
        until = m.get("until")
        if isinstance(until, int | float):
            left = until - now
            when = (
                f"its lease ends in {left:.0f} s"
                if left > 0
                else f"its lease ended {-left:.0f} s ago (another session may hold it now: "
                "done will say)"
            )
        else:
            when = "its lease end is unknown"
        parts.append(
            f"ackdeck: you hold a task of queue room {m.get('room')} (token {m.get('token')}; "
            f"{when}): {m.get('line')!r}. Finish it, then task_done with token "
            f"{m.get('token')} (`ackdeck done ROOM TOKEN`), or task_release to give it back "
            "(task_extend for more time)."
        )
    if len(marks) > SHOWN_AT_MOST:
        parts.append(f"ackdeck: and {len(marks) - SHOWN_AT_MOST} more claims you hold.")
    return "\n".join(parts)
