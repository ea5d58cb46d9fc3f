"""A room on a Redis stream: the file room's contract across hosts (see core/rooms/redis/lua.py).

- push: one XADD (field `line`); the offset is the entry ID.
- read: one MULTI/EXEC of the epoch script and `XRANGE - +` returns every entry (all of them
  are after the session's cursor: acks remove prefixes) and the epoch; the client then stores
  the receipt (first/last ID, count, SHA-1 digest) server-side, once it holds the entries.
- ack: one script removes exactly the receipt's entries if they are still there; `stale` when
  someone else trimmed, deleted or recreated the stream since the read; a cold ack is refused.
- status: one read-only script; wait: blocking XREAD in bounded chunks.

Every failure is one line naming the room's host, never its password. Each call is bounded by
the socket timeout (`ACKDECK_REDIS_TIMEOUT`, default 5 s).

Lost replies. A command whose reply never came may or may not have run, so every write carries
an ID the server-side script records, and after a lost reply the client reconnects and sends
the same command again, with backoff, for up to the socket timeout (`_again`):
- a push's ID keys a dedup entry (PUSH_WINDOW_S): a retried push is stored once and returns
  the first attempt's entry ID, so a push that returns is certain and never doubled;
- a read's ID is in its receipt: storing it again is the same state. A read that cannot
  reach the server again cannot tell whether its receipt was stored; it says so and leaves a
  doubt marker (redis_doubts.py), with which the next ack of that session is refused and
  the read's late arrival fenced off (read again, as for a file room's lost receipt).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ackdeck.core.base import locations
from ackdeck.core.base.names import check_name
from ackdeck.core.base.text import counted
from ackdeck.core.base.timeouts import seconds_from_env
from ackdeck.core.errors import CorruptState, InvalidInput, RedisUnreachable, RoomUnavailable
from ackdeck.core.rooms import policy as policy_mod
from ackdeck.core.rooms.journey import MATCH_LIMIT, Hop, Journey
from ackdeck.core.rooms.policy import RoomPolicy
from ackdeck.core.rooms.redis import lua as redis_lua
from ackdeck.core.rooms.redis.doubts import Doubts
from ackdeck.core.rooms.results import (
    PAGE_BYTES,
    PAGE_ENTRIES,
    AckResult,
    ReadResult,
    RoomStatus,
    SessionStatus,
    Shown,
    ack_delivered,
    check_page,
)
from ackdeck.core.rooms.room_errors import cold_ack
from ackdeck.core.rooms.room_url import RedisAddress

if TYPE_CHECKING:
    from ackdeck.core.rooms.file.ledger import (
        AckMode,  # a type only (ledger defines it for type checkers)
    )
    from ackdeck.core.rooms.line_counts import LineCounts

Clock = Callable[[], float]
_T = TypeVar("_T")
TIMEOUT_ENV = "ACKDECK_REDIS_TIMEOUT"
DEFAULT_TIMEOUT = 5.0
LINE_FIELD = b"line"
# Seconds a push's ID is remembered by the server: a retry within it is stored once.
PUSH_WINDOW_S = 600
# After a lost reply: the wait before the first retry, doubling up to the longest wait;
# retried for as long as the socket timeout, and at least MIN_RETRIES times.
RETRY_FIRST_WAIT = 0.05
RETRY_MAX_WAIT = 1.0
MIN_RETRIES = 3


def entry_line(fields: list[bytes] | dict[bytes, bytes]) -> bytes:
    """The line an entry carries: its `line` field, or for an entry some other producer added
    with other fields, `field=value` pairs joined by spaces (acked like any other entry)."""
    if isinstance(fields, dict):  # the client's parsed form (XRANGE outside a script)
        fields = [x for kv in fields.items() for x in kv]
    if len(fields) == 2 and fields[0] == LINE_FIELD:
        return fields[1]
    return b" ".join(fields[i] + b"=" + fields[i + 1] for i in range(0, len(fields) - 1, 2))


def _within(entries: list[Any], page: int) -> int:
    """How many entries, from the first, a page of `page` bytes of lines holds (each line and
    its newline); at least one when there is one: an entry is never cut."""
    used = 0
    for n, (_, fields) in enumerate(entries):
        used += len(entry_line(fields)) + 1
        if used > page:
            return max(n, 1)
    return len(entries)


def entries_digest(entries: list[Any]) -> str:
    """SHA-1 of the entries exactly as the ack script computes it (redis_lua.digest)."""
    h = hashlib.sha1()
    for entry_id, fields in entries:
        h.update(entry_id + b"\n")
        for x in fields:
            h.update(b"%d:%s\n" % (len(x), x))
    return h.hexdigest()


def id_time(entry_id: str) -> float | None:
    """When the server added the entry (its ID's milliseconds), None for no ID."""
    ms, _, _ = entry_id.partition("-")
    return int(ms) / 1000 if ms.isdigit() else None


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _fields(raw: list[bytes]) -> dict[bytes, bytes]:
    """An entry's field list as a dict (our own log and audit entries: no repeated names)."""
    return {raw[i]: raw[i + 1] for i in range(0, len(raw) - 1, 2)}


def _timeout(env: Mapping[str, str]) -> float:
    return seconds_from_env(env, TIMEOUT_ENV, DEFAULT_TIMEOUT, 0.001, 3600)


def _raw(response: Any, **_options: Any) -> Any:
    return response


def new_id() -> str:
    """A push's or a read's ID: 128 random bits, unique without coordination."""
    return os.urandom(16).hex()


def _unknown(outcome: str) -> Callable[[bool, int], str]:
    """What a failed write says (`lost` of `_again`): nothing changed when no attempt reached
    the server, else `outcome`, whose `{tries}` is how often it was sent again."""

    def lost(sent: bool, tries: int) -> str:
        if not sent:
            return "nothing was changed by this command (it never reached the server)"
        return outcome.format(tries=tries)

    return lost


def _never_sent(exc: BaseException) -> bool:
    """Did the command fail before reaching the server (connecting), rather than after it was
    sent (a lost reply, a connection dropped mid-command)? redis-py says `connecting to`."""
    return "connecting to" in str(exc).lower()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def client_for(a: RedisAddress, timeout: float) -> redis.Redis:
    """A client for the server `a` names: bytes as the server sends them, `timeout` for each
    connect and reply, and no retries of its own (a command retried blindly could apply twice;
    ackdeck retries with an ID where that is safe)."""
    return redis.Redis(
        host=a.host,
        port=a.port,
        db=a.db,
        username=a.username,
        password=a.password,
        ssl=a.tls,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        decode_responses=False,
    )


class RedisRoom:
    """One room on a Redis server. Cheap to construct; connects on first use; `close()`
    releases the connections."""

    # The ack script removes a receipt whole: a transcript's proof is not applied (the ack
    # says it was an estimate; docs/concepts/proof.md).
    PROVES_SHOWN = False

    def __init__(
        self,
        address: RedisAddress,
        *,
        clock: Clock = time.time,
        env: Mapping[str, str] | None = None,
        door: str = "api",
        home: str | os.PathLike[str] | None = None,
    ) -> None:
        self.address = address
        self.door = door
        self._home = home  # where the owner's wakes go (None: $ACKDECK_HOME), resolved then
        self.path = self.path_text = address.display
        self._keys = locations.redis_room_keys(address.name)
        self.key = self._keys[0]
        self._clock = clock
        self._env = os.environ if env is None else env
        self.timeout = _timeout(self._env)
        self._client: redis.Redis | None = None
        self._scripts: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"RedisRoom({self.path!r})"

    # ----- connection and errors ----------------------------------------------------------
    def _redis(self) -> redis.Redis:
        if self._client is None:
            self._client = client_for(self.address, self.timeout)
            # Entries stay as the server sends them, [id, [field, value, ...]], as a script
            # sees them: the client's dict form would merge repeated field names of an entry
            # some other producer added.
            self._client.set_response_callback("XRANGE", _raw)
        return self._client

    def _script(self, name: str) -> Any:
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self._redis().register_script(getattr(redis_lua, name))
        return script

    def _again(self, what: str, call: Callable[[], _T], lost: Callable[[bool, int], str]) -> _T:
        """`call` (a command carrying its own ID, so running it twice is running it once),
        sent again after a lost reply or a dropped connection, with backoff, for as long as
        the socket timeout allows (at least MIN_RETRIES times). When every attempt failed,
        `lost(sent, tries)` says what that means (sent: some attempt may have reached the
        server, as opposed to every one failing to connect)."""
        # The first attempt outside `_errors` (a generator context manager: entered on every
        # call it cost a queue's claim and done each time); a failure goes through it.
        started = time.monotonic()
        try:
            return call()
        except redis.RedisError as exc:
            if isinstance(exc, redis.AuthenticationError) or not isinstance(
                exc, redis.ConnectionError | redis.TimeoutError
            ):
                with self._errors(what):
                    raise
            sent = not _never_sent(exc)
            last: BaseException = exc
        tries = 0
        while tries < MIN_RETRIES or time.monotonic() - started < self.timeout:
            time.sleep(min(RETRY_MAX_WAIT, RETRY_FIRST_WAIT * 2**tries))
            tries += 1
            with self._errors(what):
                try:
                    return call()
                except redis.AuthenticationError:
                    raise
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    sent = sent or not _never_sent(exc)
                    last = exc
        with self._errors(what, lost=lambda: lost(sent, tries)):
            raise last
        raise AssertionError("unreachable")

    @contextmanager
    def _errors(self, what: str, lost: Callable[[], str] | None = None) -> Iterator[None]:
        """Turn every client failure into one line naming the room and its host. `lost`
        says what an unreachable server means for this command (default: a read-only one)."""
        room = f"redis room {self.address.name} at {self.address.where}"
        try:
            yield
        except redis.AuthenticationError:
            raise RoomUnavailable(
                f"{room}: {what} failed: authentication failed "
                f"(check the user and the password, e.g. ACKDECK_REDIS_PASSWORD)"
            ) from None
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            reason = _one_line(exc)
            if self.address.password:
                reason = reason.replace(self.address.password, "***")
            if lost is not None:
                outcome = lost()
            elif what == "ack":
                outcome = "the ack may or may not have happened: check `room status`"
            else:
                outcome = "nothing was changed by this command"
            raise RedisUnreachable(
                f"{room}: {what} failed: server unreachable within {self.timeout:g} s "
                f"({reason}); {outcome}"
            ) from None
        except redis.ResponseError as exc:
            msg = _one_line(exc)
            if self.address.password:
                msg = msg.replace(self.address.password, "***")
            if "WRONGTYPE" in msg:
                detail = msg.split("WRONGTYPE", 1)[1].split(" script:")[0].strip()
                if not detail.startswith("key"):
                    detail = f"key {self.key} holds another type, not a stream"
                raise RoomUnavailable(
                    f"{room}: {detail}; refusing to touch it (use another room name)"
                ) from None
            if "QDAMAGED" in msg:  # a queue's state (core/rooms/redis/queue.py)
                raise CorruptState(
                    f"{room}: {msg.split('QDAMAGED', 1)[1].split(' script:')[0].strip()}"
                ) from None
            if "CORRUPT" in msg:
                raise CorruptState(
                    f"{room}: {msg.split('CORRUPT', 1)[1].split(' script:')[0].strip()} "
                    "(not valid JSON); read the room again to replace it"
                ) from None
            if "NOAUTH" in msg or "WRONGPASS" in msg:
                raise RoomUnavailable(
                    f"{room}: {what} failed: authentication required or refused "
                    f"(set the password in the URL or ACKDECK_REDIS_PASSWORD)"
                ) from None
            raise RoomUnavailable(f"{room}: {what} failed: {msg}") from None

    # ----- push ---------------------------------------------------------------------------
    def push(self, line: str | bytes) -> str:
        """XADD one line; returns its entry ID."""
        data = line.encode() if isinstance(line, str) else bytes(line)
        if not data:  # as a file room: an empty line would read back as nothing
            raise InvalidInput("a pushed line must not be empty")
        if b"\n" in data:
            raise InvalidInput("a pushed line must not contain a newline")
        if b"\0" in data:
            raise InvalidInput("a pushed line must not contain a NUL byte")
        push_id = new_id()
        keys = [self.key, locations.redis_push_key(self.address.name, push_id)]
        script = self._script("PUSH")

        lost = _unknown(
            f"whether the line was stored is unknown (push {push_id}, retried {{tries}} "
            "times): look for it (`ackdeck room trace ROOM --match TEXT`) before pushing it "
            "again"
        )
        entry_id, _dup = self._again(
            "push", lambda: script(keys=keys, args=[data, PUSH_WINDOW_S]), lost
        )
        return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)

    # ----- read ---------------------------------------------------------------------------
    def read(
        self,
        session: str,
        *,
        deliver: Callable[[ReadResult], int | None] | None = None,
        reader: str | None = None,
        confirm: Callable[[ReadResult], None] | None = None,
        max_bytes: int | None = None,
    ) -> ReadResult:
        """The oldest entries in the room, a page of at most PAGE_ENTRIES entries and
        `max_bytes` bytes of lines (default PAGE_BYTES; one longer entry comes whole), and how
        many more wait; stores the session's receipt of that page (replacing the old one).

        Recorded only once delivered, as for files: `deliver` gets the lines first, and the
        receipt is stored only if it returns (and `confirm`, given the cut result, too).
        `reader` binds the receipt to one reader."""
        check_name(session)
        page = PAGE_BYTES if max_bytes is None else check_page(max_bytes)
        pol = self._policy_for_read()
        # A queue room counts claims, not reads: a look at it never dead-letters anything.
        if pol.max_deliveries is not None and not pol.queue:
            self._move_dead_letters(pol.max_deliveries)
        read_id = new_id()
        epoch, added, length, entries = self._again(
            "read",
            lambda: self._snapshot(page),
            lambda _sent, _tries: "nothing was delivered and no receipt was recorded: read again",
        )
        entries = entries[: _within(entries, page)]
        # Entries-added as if the stream had ended at the page's last entry: later entries
        # come after `last`, whether they were added before the read or after it.
        waiting = length - len(entries)
        added -= waiting
        result, receipt = self._receipt_of(entries, epoch, added, reader, waiting)
        receipt["read"] = read_id
        if deliver is not None:
            taken = deliver(result)
            if taken is not None and taken < len(entries):
                # Only the first `taken` were delivered (an MCP reply's size limit): the
                # receipt covers exactly those; entries-added as if the read ended there.
                added -= len(entries) - taken
                waiting += len(entries) - taken
                result, receipt = self._receipt_of(entries[:taken], epoch, added, reader, waiting)
                receipt["read"] = read_id
        if confirm is not None:
            confirm(result)
        doubts = self._doubts()
        fence = doubts.get(session) or ""
        script = self._script("COMMIT_RECEIPT")
        args = [session, json.dumps(receipt), read_id, fence]
        args += [repr(receipt["read_at"]), reader or "", self.door, receipt["epoch"]]
        args += [receipt["first"], receipt["last"], receipt["count"]]

        def lost(_sent: bool, _tries: int) -> str:
            failed = doubts.put(session, read_id)
            said = (
                "the lines were delivered, but whether their receipt was stored is unknown "
                f"(read {read_id})"
            )
            if failed is not None:
                return (
                    f"{said}, and the marker that refuses the next ack could not be "
                    f"written ({failed}): read again before any ack"
                )
            return f"{said}; the next ack of session {session!r} is refused: read again"

        keys = [self._keys[1], self._keys[3]]  # the meta and the read log
        stored = self._again("read", lambda: script(keys=keys, args=args), lost)
        if not int(stored):
            raise RoomUnavailable(
                f"redis room {self.address.name} at {self.address.where}: read {read_id} was "
                "given up for lost by an ack meanwhile; no receipt was recorded: read again"
            )
        if fence:
            doubts.clear(session, fence)
        return result

    def _doubts(self) -> Doubts:
        return Doubts(self.address.name, self._env, self._home)

    def _policy_for_read(self) -> RoomPolicy:
        try:
            return self.policy()
        except CorruptState:
            return RoomPolicy()  # reads go on; `room policy` reports it

    def _move_dead_letters(self, limit: int) -> None:
        """Entries handed out `limit` times without an ack go to NAME.dead, in one script."""
        dead = RedisRoom(
            dataclasses.replace(self.address, name=self.address.name + ".dead"), env={}
        )
        with self._errors("read"):
            moved = int(
                self._script("DEAD")(
                    keys=[*self._keys, dead.key],
                    args=[limit, repr(self._clock()), dead.path],
                )
            )
        owner = self._policy_for_read().owner
        if moved and owner is not None:
            from ackdeck.core.base.home import resolve_home
            from ackdeck.core.monitors.room_wakes import tell

            text = (
                f"room {self.address.name}: {counted(moved, 'line')} handed out "
                f"{counted(limit, 'time')} without an ack moved to the dead-letter room {dead.path}"
            )
            name = self.address.name
            tell(resolve_home(self._home), owner, name, self.path, "dead", text, count=moved)

    def _receipt_of(
        self, entries: list[Any], epoch: int, added: int, reader: str | None, waiting: int = 0
    ) -> tuple[ReadResult, dict[str, Any]]:
        lines = [entry_line(fields) for _, fields in entries]
        first = entries[0][0].decode() if entries else ""
        last = entries[-1][0].decode() if entries else ""
        receipt = {
            "epoch": int(epoch),
            "first": first or "0-0",
            "last": last or "0-0",
            "count": len(entries),
            "added": int(added),  # entries-added at the read: later entries come after `last`
            "digest": entries_digest(entries),
            "acked": False,
            "read_at": self._clock(),
            "reader": reader or "",
        }
        data = b"".join(x + b"\n" for x in lines)
        result = ReadResult(lines, first, last, int(epoch), data, waiting)
        return result, receipt

    def _snapshot(self, page: int) -> tuple[int, int, int, list[Any]]:
        """(epoch, entries-added, entries in the stream, its oldest entries: at most
        PAGE_ENTRIES, and no more than `page` could hold at one byte and a newline each),
        atomically in one round trip."""
        client = self._redis()
        script = self._script("READ")
        count = max(1, min(PAGE_ENTRIES, page // 2))
        for attempt in (1, 2):
            pipe = client.pipeline(transaction=True)
            pipe.execute_command("EVALSHA", script.sha, 2, *self._keys[:2])
            pipe.execute_command("XLEN", self.key)
            pipe.execute_command("XRANGE", self.key, "-", "+", "COUNT", count)
            try:
                (epoch, added), length, entries = pipe.execute()
            except redis.exceptions.NoScriptError:
                if attempt == 2:
                    raise
                # A restarted or flushed server forgot the script: load it, then once more
                # (nothing was written: the script did not run and XRANGE only reads).
                script.sha = client.script_load(script.script)
                continue
            return int(epoch), int(added), int(length), list(entries or [])
        raise AssertionError("unreachable")

    # ----- ack ----------------------------------------------------------------------------
    def ack(
        self,
        session: str,
        *,
        all: bool = False,  # noqa: A002 - CLI flag
        reader: str | None = None,
        deliver: Callable[[ReadResult], int | None] | None = None,
        confirm: Callable[[ReadResult], None] | None = None,
        max_bytes: int | None = None,
        shown: Shown | None = None,  # noqa: ARG002 - see PROVES_SHOWN
    ) -> AckResult:
        """Remove exactly what `session` read (or, with all=True, the entries of the first
        page, as a read takes it, returned; the rest stays, counted as preserved).

        With all=True and `deliver`, the entries are delivered first and only those are
        removed (a read and an ack of its receipt), as for files; `confirm` as for read()."""
        check_name(session)
        page = PAGE_BYTES if max_bytes is None else check_page(max_bytes)
        if all and deliver is not None:
            if self._policy_for_read().queue:
                # Refused before the read that would deliver the lines (the ack script refuses
                # a queue room too, after it): nothing printed, nothing removed.
                raise InvalidInput(
                    f"room {self.path} is a queue: finish a task with `ackdeck done ROOM "
                    "TOKEN` (nothing was removed)"
                )
            return ack_delivered(
                lambda: self.read(
                    session, reader=reader, deliver=deliver, confirm=confirm, max_bytes=page
                ),
                lambda: self.ack(session, reader=reader),
                "no entries to ack",
            )
        doubts = self._doubts()
        doubt = doubts.get(session) or ""
        ack_id = new_id()
        script = self._script("ACK")
        args = [session, repr(self._clock()), "1" if all else "0", reader or "", doubt, ack_id]
        args += [str(max(1, min(PAGE_ENTRIES, page // 2))), str(page)]

        def call() -> Any:
            return script(keys=self._keys, args=args)

        if all:
            # Not sent again: the entries an ack --all removed cannot be handed out twice.
            with self._errors("ack"):
                got = call()
        else:
            lost = _unknown(
                f"the ack may or may not have happened (ack {ack_id}, retried {{tries}} "
                "times): check `room status`"
            )
            got = self._again("ack", call, lost)
        mode_b, acked, preserved, epoch, entries, unread = got
        if mode_b == b"queue":
            raise InvalidInput(
                f"room {self.path} is a queue: finish a task with `ackdeck done ROOM TOKEN` "
                "(nothing was removed)"
            )
        if doubt:
            doubts.clear(session, doubt)  # the server has fenced that read off
        mode = cast("AckMode", mode_b.decode())
        if mode == "doubt":
            raise cold_ack(
                session,
                f"its last read ({doubt}) lost its reply, so which lines it covers is unknown",
                int(unread),
            )
        if mode == "refused":
            raise cold_ack(session, "no unacked read of this room", int(unread))
        if mode == "other-reader":
            raise cold_ack(session, "the last read went to another reader", int(unread))
        acked, preserved = int(acked), int(preserved)
        if mode == "stale":
            msg = (
                "the room was trimmed, rewritten or recreated by someone else since the read; "
                f"nothing was removed: read again (epoch is now {int(epoch)})"
            )
        elif mode == "noop":
            msg = "nothing to ack: the read was empty or its lines were already acked"
        else:
            msg = (
                f"acked {counted(acked, 'line')}; preserved {counted(preserved, 'line')} that "
                "arrived or remain unread"
            )
        lines = [entry_line(f) for _, f in entries] if mode == "all" else None
        return AckResult(mode=mode, acked=acked, preserved=preserved, message=msg, lines=lines)

    # ----- status -------------------------------------------------------------------------
    def status(self, counts: LineCounts | None = None) -> RoomStatus:
        """Counters for the room and every session that has read it. Never writes. (`counts`
        is for file rooms: the server counts a stream's entries, nothing is kept here.)"""
        return self._status()[0]

    def _status(self) -> tuple[RoomStatus, str]:
        """The status, and the stream's last-generated ID then (a blocking read waits for
        anything after it)."""
        with self._errors("status"):
            raw = self._script("STATUS")(keys=[self._keys[0], self._keys[1], self._keys[3]])
        now = self._clock()
        with self._errors("status"):
            raw_policy, dead = self._redis().hmget(self._keys[1], ["policy", "dead"])
        try:
            pol = policy_mod.decode(raw_policy, "")
        except CorruptState:
            pol = RoomPolicy()
        exists, pending, pushed, epoch, acked, preserved, last_ack, last_id, flat = raw[:9]
        oldest, deliveries = raw[9].decode(), int(raw[10])
        pending = int(pending)
        sessions: dict[str, SessionStatus] = {}
        firsts: list[str] = []
        for i in range(0, len(flat), 4):
            in_flight = int(flat[i + 1])
            read_at = float(flat[i + 2]) if flat[i + 2] else None
            first = flat[i + 3].decode()
            unread = max(0, pending - in_flight)
            firsts.append(first if unread else "")
            sessions[flat[i].decode()] = SessionStatus(
                in_flight,
                unread,
                read_at,
                id_time(first) if unread else None,
            )
        # The oldest entry no session has read: after the furthest read (none if some
        # session has read everything).
        nobody = oldest if not firsts else ("" if "" in firsts else max(firsts, key=_id_key))
        status = RoomStatus(
            path=self.path,
            exists=bool(exists),
            pending=pending,
            partial_bytes=0,
            acked_total=int(acked),
            preserved_total=int(preserved),
            pushed_total=int(pushed),
            epoch=int(epoch),
            last_ack_at=float(last_ack) if last_ack else None,
            sessions=dict(sorted(sessions.items())),
            checked_at=now,
            oldest_pending_at=id_time(oldest) if pending else None,
            oldest_unread_at=id_time(nobody) if pending else None,
            deliveries=deliveries,
            overdue_after=pol.overdue,
            max_deliveries=pol.max_deliveries,
            owner=pol.owner,
            queue=bool(pol.queue),
            dead_total=int(dead or 0),
        )
        return status, last_id.decode()

    def exists(self) -> bool:
        """Does the stream exist? (A missing stream is an empty room.)"""
        with self._errors("status"):
            return bool(self._redis().exists(self.key))

    # ----- policy (core/rooms/policy.py) ------------------------------------------------------
    def policy(self) -> RoomPolicy:
        with self._errors("policy"):
            raw = self._redis().hget(self._keys[1], "policy")
        return policy_mod.decode(raw, f"of redis room {self.address.name}")

    def set_policy(self, policy: RoomPolicy) -> None:
        data = policy_mod.encode(policy)
        with self._errors("policy"):
            self._redis().hset(self._keys[1], "policy", data)

    # ----- a line's journey -------------------------------------------------------------------
    def trace(self, offset: int | str) -> Journey:
        """The journey of the entry `offset` (its ID, what push returned): pushed at the ID's
        time; each logged read whose range holds it; the ack (audit) that removed it."""
        entry_id = str(offset)
        if id_time(entry_id) is None or not entry_id.partition("-")[2].isdigit():
            raise InvalidInput(f"{entry_id!r} is not an entry ID (like 1700000000000-0)")
        key = _id_key(entry_id)
        with self._errors("trace"):
            client = self._redis()
            got: list[Any] = client.xrange(self.key, min=entry_id, max=entry_id) or []
            epoch = int(client.hget(self._keys[1], "epoch") or 0)
            reads: list[Any] = client.xrange(self._keys[3]) or []
            audit: list[Any] = client.xrange(self._keys[2]) or []

        def holds(fields: dict[bytes, bytes]) -> bool:
            first, last = fields.get(b"first"), fields.get(b"last")
            if not first or not last:
                return False
            return _id_key(first.decode()) <= key <= _id_key(last.decode())

        gone = None
        if not got:
            for _, raw in audit:
                f = _fields(raw)
                # `done`: a queue room's completion (core/rooms/redis/queue.py)
                if f.get(b"mode") in (b"prefix", b"all", b"dead", b"done") and holds(f):
                    gone = f
            if gone is None:
                raise InvalidInput(f"no entry {entry_id} in this room, and no ack removed it")
            epoch = int(gone.get(b"epoch", b"0"))
        hops = []
        for _, raw in reads:
            f = _fields(raw)
            if holds(f) and int(f.get(b"epoch", b"-1")) == epoch:
                hops.append(
                    Hop(
                        f[b"session"].decode(),
                        f[b"reader"].decode() or None,
                        f[b"door"].decode(),
                        float(f[b"at"]),
                    )
                )
        text = entry_line(got[0][1]) if got else None
        pushed_at = id_time(entry_id)
        if gone is None:
            return Journey(entry_id, True, text, pushed_at, True, hops)
        at = float(gone[b"at"])
        if gone.get(b"mode") == b"dead":
            dead = gone.get(b"dead", b"").decode()
            return Journey(entry_id, False, None, pushed_at, True, hops, dead_at=at, dead_room=dead)
        by = gone[b"session"].decode()
        return Journey(entry_id, False, None, pushed_at, True, hops, acked_at=at, acked_by=by)

    def wait_acked(
        self,
        offset: int | str,
        timeout: float | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Journey | None:
        """Block until the entry `offset` left the room (acked, or moved to the dead-letter
        room): its journey then; None when `timeout` passed first. A blocking XREAD on the
        audit stream (every ack adds one entry), in chunks shorter than the socket timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        chunk = max(0.05, self.timeout / 2)
        while True:
            with self._errors("wait"):
                newest: list[Any] = self._redis().xrevrange(self._keys[2], count=1) or []
            last = newest[0][0] if newest else b"0-0"
            j = self.trace(offset)  # after reading `last`: an ack in between wakes the XREAD
            if not j.present:
                return j
            if stop is not None and stop():
                return None
            if not self._block(self._keys[2], last, deadline, chunk):
                return None

    def find(self, text: str | bytes) -> tuple[list[int | str], int]:
        """The IDs of the entries now in the room whose line contains `text` (the newest
        MATCH_LIMIT), and how many do."""
        needle = text.encode() if isinstance(text, str) else bytes(text)
        if not needle:
            raise InvalidInput("the text to match must not be empty")
        found: list[int | str] = []
        after = ""
        while True:
            batch = self.entries(after, 10_000)
            if not batch:
                return found[-MATCH_LIMIT:], len(found)
            found.extend(entry_id for entry_id, line in batch if needle in line)
            after = batch[-1][0]

    def first_seen(self, start: int | str, length: int) -> float | None:
        """When the entry `start` was added: the milliseconds of its ID (redis's own clock)."""
        ms, _, _ = str(start).partition("-")
        return int(ms) / 1000 if ms.isdigit() else None

    def tail(self, count: int) -> list[bytes]:
        """The newest `count` lines, oldest first. Display only: records no receipt."""
        if count <= 0:
            return []
        with self._errors("status"):
            entries: list[Any] = self._redis().xrevrange(self.key, count=count) or []
        return [entry_line(fields) for _, fields in reversed(entries)]

    def entries(self, after: str = "", count: int = 10_000) -> list[tuple[str, bytes]]:
        """Up to `count` entries after ID `after` ("" for the oldest on), oldest first, as
        (ID, line). Display only (the dashboard's lines panel): records no receipt."""
        start = f"({after}" if after else "-"
        with self._errors("status"):
            got: list[Any] = self._redis().xrange(self.key, min=start, count=count) or []
        return [(entry_id.decode(), entry_line(fields)) for entry_id, fields in got]

    def newest_id(self) -> str:
        """The newest entry ID now ("0-0" for an empty or missing room)."""
        with self._errors("status"):
            newest: list[Any] = self._redis().xrevrange(self.key, count=1) or []
        return newest[0][0].decode() if newest else "0-0"

    def arrivals(self, after: str, stop: threading.Event | None = None) -> str:
        """Block until an entry newer than `after` exists (or about half the socket timeout
        passes, or `stop` is set): the newest ID then, `after` itself when nothing came. One
        blocking XREAD, then one XREVRANGE to jump past a flood at once."""
        with self._errors("wait"):
            got = self._redis().xread(
                {self.key: after}, count=1, block=max(1, int(self.timeout * 500))
            )
        if not got or (stop is not None and stop.is_set()):
            return after
        return self.newest_id()

    # ----- wait ---------------------------------------------------------------------------
    def wait(
        self, session: str, timeout: float | None = None, stop: Callable[[], bool] | None = None
    ) -> bool:
        """Block until `session` has unread lines (True) or the timeout passes (False).

        A blocking XREAD for anything after the newest ID, in chunks shorter than the socket
        timeout (so a dead server is noticed within it) and re-checked with status after each
        wake-up (an entry another session acked at once is not unread)."""
        check_name(session)
        deadline = None if timeout is None else time.monotonic() + timeout
        chunk = max(0.05, self.timeout / 2)
        while True:
            st, last_id = self._status()
            mine = st.sessions.get(session)
            if (mine.unread if mine is not None else st.pending) > 0:
                return True
            if stop is not None and stop():
                return False
            if not self._block(self.key, last_id, deadline, chunk):
                return False

    def _block(self, key: str, after: str | bytes, deadline: float | None, chunk: float) -> bool:
        """One blocking XREAD of stream `key` for anything after ID `after`, at most `chunk`
        seconds (shorter than the socket timeout, so a dead server is noticed within it);
        False, without waiting, once `deadline` passed."""
        left = chunk if deadline is None else min(chunk, deadline - time.monotonic())
        if left <= 0:
            return False
        with self._errors("wait"):
            self._redis().xread({key: after}, count=1, block=max(1, int(left * 1000)))
        return True

    def close(self) -> None:
        client, self._client = self._client, None
        self._scripts = {}
        if client is not None:
            client.close()
