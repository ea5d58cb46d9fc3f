"""A redis room used as a work queue: a consumer group, leases and fencing tokens (the rules
are core/rooms/queue.py's, the same as a file queue's; this module does them on a stream).

The stream stays the truth for the tasks: producers XADD as to any redis room. The queue is
the consumer group `ackdeck-queue` on it (created at ID 0, so lines pushed before the room
became a queue are tasks too), plus three keys of ackdeck's own (core/base/locations.py):

- the queue hash: `id` (the queue state's id, part of every token), `next` (the fencing
  number, kept by the scripts: monotonic per queue), `t:ENTRY` (a claimed entry's task: its
  current token, holder, lease end, deliveries, and every token it was issued) and `k:N` (the
  entry token N was issued for, while that entry is in the queue);
- the lease ends, a sorted set scored by the end;
- the ready set: entries whose lease ended and that nobody claimed again, ordered by entry ID
  (so the oldest is handed out first, as in a file queue).

Each operation is one Lua script, atomic on the server:

- **claim**: entries whose lease ended move from the lease set to the ready set (each once
  per expiry: the work grows with the leases that ended, not with the claimed entries); the
  oldest ready entry is claimed again with XCLAIM (the consumer group's delivery count goes
  up with ours), unless it was delivered `max_deliveries` times: then it goes to the
  dead-letter room (XADD there, XACK + XDEL here, in the same script); else XREADGROUP `>`
  hands out the next entry nobody ever claimed. A new fencing number comes from HINCRBY.
- **done**: the fencing check, then XACK + XDEL: the entry leaves the stream at once (a
  stream deletes from the middle; a file only drops its head). A key remembers for
  OP_WINDOW_S that the token's task was done, so a retried done (its reply lost) is a no-op.
- **extend / release**: the fencing check, then a new lease end (release: ready at once).

Why not XAUTOCLAIM: it judges every pending entry by one idle time, but each claim here
chooses its lease (default 600 s, at most 7200 s), and it scans the pending entries list in
ID order, so a claim would cost more the more entries are claimed; the lease set answers
"whose lease ended" in O(log n). XCLAIM of the chosen entry keeps Redis's own bookkeeping
(the pending entries list, its owner and delivery count, XPENDING) true.

Removals count in the room's `removed` counter (core/rooms/redis/lua.py), so the room's epoch
holds: XDEL by ackdeck is not someone else's deletion. A stream deleted or recreated loses
its consumer group; the next operation sees that and starts the queue afresh (a new queue id:
every older token is refused, every entry now in the stream is claimable).

Leases are judged on the claimer's clock (the room's clock, `time.time` unless a test injects
one), as in a file queue: see docs/concepts/work-queues.md for why, and what a step does.

Every write carries an operation ID: after a lost reply the client sends the same script
again (RedisRoom._again) and the server returns the first attempt's result instead of
applying it twice (a claim retried does not hand out a second line).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import TYPE_CHECKING, Any

from ackdeck.core.base import locations
from ackdeck.core.base.text import counted
from ackdeck.core.errors import InvalidInput
from ackdeck.core.rooms import queue as Q
from ackdeck.core.rooms.redis.room import _unknown, entry_line, new_id

if TYPE_CHECKING:
    from collections.abc import Callable

    from ackdeck.core.rooms.redis.room import RedisRoom

GROUP = "ackdeck-queue"
# Seconds an operation's reply (and a done token's mark) is kept for a retry after a lost reply.
OP_WINDOW_S = 600

_PRELUDE = r"""
local GROUP = 'ackdeck-queue'
-- KEYS: 1 stream, 2 meta, 3 audit, 4 queue hash, 5 lease ends, 6 ready, 7 the op's reply,
-- then each script's own.
local S, META, AUDIT, QH, LEASES, READY, OPKEY = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],
  KEYS[6], KEYS[7]
-- A ready entry's member: its ID with both parts padded, so the set's lexical order is the
-- stream's order, then the ID itself.
local function member(id)
  local ms, seq = string.match(id, '^(%d+)%-(%d+)$')
  return string.rep('0', 20 - #ms) .. ms .. '-' .. string.rep('0', 20 - #seq) .. seq .. '|' .. id
end
local function fmt(x) return string.format('%.17g', x) end
local function task_of(id)
  local raw = redis.call('HGET', QH, 't:' .. id)
  if not raw then return nil end
  return cjson.decode(raw)
end
-- The queue's id, creating the group (and the stream) when missing. A group that is gone
-- while the queue hash has an id means the stream was deleted or recreated (or the server
-- lost it): the queue starts afresh under `fresh` (a new id), every older token refused.
local function open_queue(fresh)
  local qid = redis.call('HGET', QH, 'id')
  local got = redis.pcall('XGROUP', 'CREATE', S, GROUP, '0', 'MKSTREAM')
  local created = true
  if type(got) == 'table' and got.err then
    if not string.find(got.err, 'BUSYGROUP', 1, true) then error(got) end
    created = false
  end
  if qid and not created then return qid, false end
  redis.call('DEL', QH, LEASES, READY)
  redis.call('HSET', QH, 'id', fresh, 'next', 0)
  return fresh, qid ~= false and qid ~= nil
end
-- The policy's queue flag and max_deliveries (the meta hash's `policy`: JSON that
-- core/rooms/policy.py wrote, so two patterns read it; decoding it cost every claim more).
local function policy()
  local raw = redis.call('HGET', META, 'policy')
  if not raw then return false, nil end
  local queue = string.find(raw, '"queue"%s*:%s*true') ~= nil
  return queue, tonumber(string.match(raw, '"max_deliveries"%s*:%s*(%d+)'))
end
-- An entry leaves the stream as ackdeck's removal (counted in `removed`, so the room's epoch
-- holds), and the queue forgets its task and tokens.
local function forget(id, t)
  redis.call('XACK', S, GROUP, id)
  local n = redis.call('XDEL', S, id)
  if n > 0 then redis.call('HINCRBY', META, 'removed', n) end
  local fields = {'t:' .. id}
  for _, k in ipairs(t.tokens or {}) do fields[#fields + 1] = 'k:' .. k end
  redis.call('HDEL', QH, unpack(fields))
  redis.call('ZREM', LEASES, id)
  redis.call('ZREM', READY, member(id))
  return n
end
-- The audit entry of an entry that left (done or dead): with its claims (each holder, when,
-- its token and lease end), so `room trace` shows each claim, expiry and completion.
local function audit(now, session, mode, id, t, extra)
  local epoch = redis.call('HGET', META, 'epoch') or '0'
  redis.call('XADD', AUDIT, 'MAXLEN', '~', '10000', '*', 'at', now, 'session', session,
    'mode', mode, 'epoch', epoch, 'first', id, 'last', id, 'acked', 1, 'preserved',
    redis.call('XLEN', S), 'sha1', '', 'claims', cjson.encode(t.h or {}), unpack(extra or {}))
end
"""

# ARGV: session, now, lease (s), a fresh queue id, the dead-letter room's name (as shown).
# KEYS 8: the dead-letter room's stream.
# Returns {mode ('claimed', 'none', 'not-queue', 'replay'), queue id, entry ID, fields,
# token, deliveries, lease end, moved to the dead-letter room}.
_CLAIM_BODY = r"""
local session, now, lease = ARGV[1], ARGV[2], tonumber(ARGV[3])
local seen = redis.call('GET', OPKEY)
if seen then
  local r = cjson.decode(seen)
  local e = redis.call('XRANGE', S, r[3], r[3])
  local fields = {}
  if #e > 0 then fields = e[1][2] end
  return {'replay', r[2], r[3], fields, r[5], r[6], r[7], r[8]}
end
local queue, maxd = policy()
if not queue then return {'not-queue', '', '', {}, 0, 0, '', 0} end
local qid = open_queue(ARGV[4])
-- Leases that ended become ready, each once per expiry.
while true do
  local due = redis.call('ZRANGEBYSCORE', LEASES, '-inf', now, 'LIMIT', 0, 100)
  if #due == 0 then break end
  for _, id in ipairs(due) do
    redis.call('ZREM', LEASES, id)
    redis.call('ZADD', READY, 0, member(id))
  end
end
local moved = 0
local id, fields, t = nil, nil, nil
while true do
  local first = redis.call('ZRANGE', READY, 0, 0)
  if #first == 0 then break end
  local cand = string.match(first[1], '|(.+)$')
  redis.call('ZREM', READY, first[1])
  local ct = task_of(cand)
  if ct ~= nil and tonumber(ct.ends) > tonumber(now) then
    -- Judged ended by an earlier claim, but this claimer's clock says it runs (stepped
    -- back, or behind): not ended after all, as a file queue judges it at each claim.
    redis.call('ZADD', LEASES, ct.ends, cand)
  elseif ct ~= nil then
    if maxd and ct.deliveries >= maxd then
      ct.h[#ct.h + 1] = {'ackdeck-dead-letter', now, 0, now, 'dead'}
      local e = redis.call('XRANGE', S, cand, cand)
      if #e > 0 then redis.call('XADD', KEYS[8], '*', unpack(e[1][2])) end
      forget(cand, ct)
      redis.call('HINCRBY', META, 'dead', 1)
      audit(now, 'ackdeck-dead-letter', 'dead', cand, ct, {'dead', ARGV[5]})
      moved = moved + 1
    else
      local e = redis.call('XCLAIM', S, GROUP, session, 0, cand)
      if #e > 0 and e[1] then
        id, fields, t = cand, e[1][2], ct
        break
      end
      -- Deleted behind ackdeck's back (XDEL): nothing to hand out, forget it.
      forget(cand, ct)
    end
  end
end
if not id then
  local r = redis.call('XREADGROUP', 'GROUP', GROUP, session, 'COUNT', 1, 'STREAMS', S, '>')
  if r and r[1] and #r[1][2] > 0 then
    id, fields = r[1][2][1][1], r[1][2][1][2]
    t = {deliveries = 0, tokens = {}, h = {}}
  end
end
if not id then
  return {'none', qid, '', {}, 0, 0, '', moved}
end
local token = redis.call('HINCRBY', QH, 'next', 1)
t.token, t.holder, t.ends = token, session, fmt(tonumber(now) + lease)
t.deliveries = t.deliveries + 1
t.tokens[#t.tokens + 1] = token
-- The claim's record, kept with the task (an audit entry per claim cost every claim a
-- stream write): its done or dead-letter audit entry carries them all.
if not t.h then t.h = {} end
t.h[#t.h + 1] = {session, now, token, t.ends, ''}
redis.call('HSET', QH, 't:' .. id, cjson.encode(t), 'k:' .. token, id)
redis.call('ZADD', LEASES, t.ends, id)
local out = {'claimed', qid, id, fields, token, t.deliveries, t.ends, moved}
redis.call('SET', OPKEY, cjson.encode({'claimed', qid, id, {}, token, t.deliveries, t.ends,
  moved}), 'EX', ARGV[6])
return out
"""
CLAIM = _PRELUDE + _CLAIM_BODY

# ARGV: op (done, extend, release, or dead: the owner's), token number, the token's queue id,
# now, lease (s), fencing ('1' on, '0' only for the test that shows what it prevents), a
# fresh queue id, window (s), the dead-letter room's name. KEYS 8: the token's done mark,
# 9: the dead-letter room's stream.
# Returns {mode (done, noop, extended, released, refused, not-queue, gone), entry ID, lease end,
# removed, reason}.
_UPDATE_BODY = r"""
local op, n, tq, now, lease = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local seen = redis.call('GET', OPKEY)
if seen then return cjson.decode(seen) end
-- No queue state at all, yet a token was issued: the server lost it (deleted, flushed, or
-- restarted without persistence).
if not redis.call('HGET', QH, 'id') then return {'gone', '', '', 0, ''} end
local queue = policy()
if not queue then return {'not-queue', '', '', 0, ''} end
local qid, afresh = open_queue(ARGV[7])
local function reply(r)
  redis.call('SET', OPKEY, cjson.encode(r), 'EX', ARGV[8])
  return r
end
if qid ~= tq then
  local why = 'it was issued by another queue state (the queue was started afresh'
  if afresh then why = why .. ' just now: its stream was deleted or recreated' end
  return {'refused', '', '', 0, why .. '); claim again'}
end
local id = redis.call('HGET', QH, 'k:' .. n)
if not id then
  if redis.call('EXISTS', KEYS[8]) == 1 then
    if op == 'done' then return reply({'noop', '', '', 0, 'already done with this token'}) end
    return {'refused', '', '', 0, 'the task is done already'}
  end
  return {'refused', '', '', 0, 'no task holds this token (unknown, or its line left)'}
end
local t = task_of(id)
if t == nil then
  return {'refused', '', '', 0, 'no task holds this token (unknown, or its line left)'}
end
if ARGV[6] == '1' and tonumber(n) ~= t.token then
  return {'refused', id, '', 0, 'token superseded: the lease ended and the line was claimed '
    .. 'again (by ' .. t.holder .. ', token ' .. t.token .. ')'}
end
if op == 'dead' then
  -- The owner's dead letter: the line moves to the dead-letter room, its holder refused.
  t.h[#t.h][5] = 'dead'
  local e = redis.call('XRANGE', S, id, id)
  if #e > 0 then redis.call('XADD', KEYS[9], '*', unpack(e[1][2])) end
  forget(id, t)
  redis.call('HINCRBY', META, 'dead', 1)
  audit(now, 'ackdeck-dead-letter', 'dead', id, t, {'dead', ARGV[9]})
  return reply({'dead', id, '', 1, ''})
end
if op == 'done' then
  t.h[#t.h][5] = 'done'
  local removed = forget(id, t)
  redis.call('SET', KEYS[8], id, 'EX', ARGV[8])
  audit(now, t.holder, 'done', id, t, {'token', n})
  return reply({'done', id, '', removed, ''})
end
if op == 'extend' then
  t.ends = fmt(tonumber(now) + lease)
  redis.call('ZREM', READY, member(id))
  redis.call('ZADD', LEASES, t.ends, id)
else
  t.ends = '0'
  redis.call('ZREM', LEASES, id)
  redis.call('ZADD', READY, 0, member(id))
end
if op == 'release' then t.h[#t.h][4] = now; t.h[#t.h][5] = 'released' end
if op == 'extend' then t.h[#t.h][4] = t.ends end
redis.call('HSET', QH, 't:' .. id, cjson.encode(t))
if op == 'extend' then return reply({'extended', id, t.ends, 0, ''}) end
return reply({'released', id, '', 0, ''})
"""
UPDATE = _PRELUDE + _UPDATE_BODY

# A done, then a claim, in one script (one round trip per task for a worker's loop, as
# JetStream's ack-next): KEYS 1-9 and ARGV 1-9 as UPDATE's, then KEYS 10 the claim's op key and
# ARGV 10-15 as CLAIM's. Returns {the update's reply, the claim's reply or {} when the done
# was refused}.
NEXT = (
    _PRELUDE
    + "local function update_op(KEYS, ARGV)\nlocal OPKEY = KEYS[7]\n"
    + _UPDATE_BODY
    + "\nend\nlocal function claim_op(KEYS, ARGV)\nlocal OPKEY = KEYS[7]\n"
    + _CLAIM_BODY
    + r"""
end
local KU, AU, KC, AC = {}, {}, {}, {}
for i = 1, 9 do KU[i] = KEYS[i]; AU[i] = ARGV[i] end
for i = 1, 6 do KC[i] = KEYS[i]; AC[i] = ARGV[9 + i] end
KC[7], KC[8] = KEYS[10], KEYS[9]
local u = update_op(KU, AU)
if u[1] ~= 'done' and u[1] ~= 'noop' then return {u, {}} end
return {u, claim_op(KC, AC)}
"""
)


def _s(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


class RedisQueue:
    """A redis room's work queue. `room` is the RedisRoom (core/rooms/redis/room.py);
    `fencing` is off only in the test that shows what the fencing check prevents."""

    def __init__(self, room: RedisRoom, *, fencing: bool = True) -> None:
        self.room = room
        self.fencing = fencing
        name = room.address.name
        self._name = name
        self._keys = [*locations.redis_room_keys(name)[:3], *locations.redis_queue_keys(name)]
        self._scripts: dict[str, Any] = {}

    def _script(self, name: str) -> Any:
        """A callable running script `name` with (keys, args): one EVALSHA (redis-py's Script
        object cost each call more than the bare command), loading it once if the server
        does not know it (restarted or flushed; nothing ran, so sending it again is safe)."""
        run = self._scripts.get(name)
        if run is None:
            import redis

            source = {"claim": CLAIM, "update": UPDATE, "next": NEXT}[name]
            client = self.room._redis()
            sha = hashlib.sha1(source.encode()).hexdigest()

            def run(keys: list[str], args: list[Any]) -> Any:
                try:
                    return client.execute_command("EVALSHA", sha, len(keys), *keys, *args)
                except redis.exceptions.NoScriptError:
                    client.script_load(source)
                    return client.execute_command("EVALSHA", sha, len(keys), *keys, *args)

            self._scripts[name] = run
        return run

    def _not_queue(self) -> InvalidInput:
        return InvalidInput(
            f"room {self.room.path} is not a queue; make it one with "
            f"`ackdeck room policy {self.room.path} --queue on`"
        )

    # ----- claim -------------------------------------------------------------------------------
    def claim(self, session: str, lease: float | None = None) -> Q.Claim:
        from ackdeck.core.base.names import check_name

        check_name(session)
        seconds = Q.check_lease(lease)
        op_id = new_id()
        key, args = self._claim_request(session, seconds, op_id)
        script = self._script("claim")

        def call() -> Any:
            return script([*self._keys, key, self._dead_key()], args())

        lost = _unknown(
            f"whether a line was claimed is unknown (claim {op_id}, retried {{tries}} times); "
            "if one was, its lease ends and it is handed out again"
        )
        return self._claimed(self.room._again("claim", call, lost), seconds)

    def _dead_key(self) -> str:
        return locations.redis_room_key(f"{self._name}.dead")

    def _claim_request(
        self, session: str, seconds: float, op_id: str
    ) -> tuple[str, Callable[[], list[Any]]]:
        """A claim's op key, and its arguments (the clock is read for each attempt: a retry's
        lease starts when it is sent)."""

        def args() -> list[Any]:
            now = repr(self.room._clock())
            return [session, now, repr(seconds), secrets.token_hex(4), f"{self.room.path}.dead",
                    OP_WINDOW_S]  # fmt: skip

        return locations.redis_queue_op_key(self._name, op_id), args

    def _claimed(self, got: Any, seconds: float) -> Q.Claim:
        """The claim script's reply as the doors show it."""
        mode_b, qid_b, id_b, fields, token, deliveries, until_b, moved = got
        mode, moved = _s(mode_b), int(moved)
        if mode == "not-queue":
            raise self._not_queue()
        if moved:
            self._tell_owner(moved)
        if mode == "none":
            return Q.nothing_claimed(str(self.room.path), seconds, moved, "no unclaimed line waits")
        entry = _s(id_b)
        token_s = Q.token_text(int(token), _s(qid_b))
        until = float(_s(until_b))
        return Q.Claim(
            room="",
            path=str(self.room.path),
            claimed=True,
            token=token_s,
            entry=entry,
            line=entry_line(list(fields)) + b"\n",
            deliveries=int(deliveries),
            lease_until=until,
            lease_seconds=seconds,
            dead_lettered=moved,
            message=(
                f"claimed entry {entry} (delivery {int(deliveries)}) until the lease ends in "
                f"{seconds:g} s"
            ),
            next=f"work on it, then `done {token_s}` (or `extend {token_s}` before the lease "
            f"ends, `release {token_s}` to give it back)",
        )

    def _tell_owner(self, moved: int) -> None:
        owner = self.room._policy_for_read().owner
        if owner is None:
            return
        from ackdeck.core.base.home import resolve_home
        from ackdeck.core.monitors.room_wakes import tell

        limit = self.room._policy_for_read().max_deliveries or 0
        text = (
            f"room {self._name}: {counted(moved, 'line')} claimed {counted(limit, 'time')} "
            f"without being done moved to the dead-letter room {self.room.path}.dead"
        )
        tell(resolve_home(self.room._home), owner, self._name, str(self.room.path), "dead", text,
             count=moved)  # fmt: skip

    # ----- done, extend, release -----------------------------------------------------------------
    def update(self, token_text: str, op: str, lease: float | None = None) -> Q.TaskUpdate:
        """Done, extend or release with `token_text`; refused (TokenRefused, one line) unless
        it is the entry's current lease."""
        if op not in (*Q.OPS, "dead"):
            raise InvalidInput(f"invalid operation {op!r}: one of {', '.join(Q.OPS)}")
        seconds = Q.check_lease(lease)
        op_id = new_id()
        keys, args = self._update_request(token_text, op, seconds, op_id)
        script = self._script("update")

        def call() -> Any:
            return script(keys, args())

        lost = _unknown(
            f"whether the {op} happened is unknown ({op} {op_id}, retried {{tries}} times): "
            f"`{op} {token_text}` again says (a done already made is a no-op)"
        )
        return self._updated(self.room._again(op, call, lost), token_text, op, seconds)

    def _update_request(
        self, token_text: str, op: str, seconds: float, op_id: str
    ) -> tuple[list[str], Callable[[], list[Any]]]:
        number, qid = Q.parse_token(token_text)
        keys = [
            *self._keys,
            locations.redis_queue_op_key(self._name, op_id),
            locations.redis_queue_done_key(self._name, number),
            self._dead_key(),
        ]

        def args() -> list[Any]:
            out: list[Any] = [op, str(number), qid, repr(self.room._clock()), repr(seconds)]
            out += ["1" if self.fencing else "0", secrets.token_hex(4), OP_WINDOW_S]
            return [*out, f"{self.room.path}.dead"]

        return keys, args

    def done_next(
        self, token_text: str, session: str, lease: float | None = None
    ) -> tuple[Q.TaskUpdate, Q.Claim | None]:
        """Done with `token_text`, then a claim for `session`, in one script (one round trip
        per task for a worker's loop). The claim is None when the done was refused (raised)."""
        from ackdeck.core.base.names import check_name

        check_name(session)
        seconds = Q.check_lease(lease)
        Q.parse_token(token_text)
        done_id, claim_id = new_id(), new_id()
        keys, done_args = self._update_request(token_text, "done", Q.DEFAULT_LEASE, done_id)
        claim_key, claim_args = self._claim_request(session, seconds, claim_id)
        script = self._script("next")

        def call() -> Any:
            return script([*keys, claim_key], [*done_args(), *claim_args()])

        lost = _unknown(
            f"whether the done and the next claim happened is unknown (done {done_id}, claim "
            f"{claim_id}, retried {{tries}} times): `done {token_text}` again says"
        )
        done_reply, claim_reply = self.room._again("done", call, lost)
        done = self._updated(done_reply, token_text, "done", Q.DEFAULT_LEASE)
        return done, self._claimed(claim_reply, seconds)

    def _updated(self, got: Any, token_text: str, op: str, seconds: float) -> Q.TaskUpdate:
        """The update script's reply as the doors show it (a refusal raised)."""
        mode, entry, until_s, removed, reason = (_s(x) for x in got)
        if mode == "not-queue":
            raise self._not_queue()
        if mode == "gone":
            raise Q.TokenRefused(
                f"token {token_text} refused: the queue state that issued it is gone from the "
                "server (the room was deleted or flushed, or the server restarted without "
                "persistence); its line, and whether anyone finished it, are unknown here; "
                "nothing changed"
            )
        if mode == "refused":
            raise Q.TokenRefused(f"token {token_text} refused: {reason}; nothing changed")
        if mode == "dead":
            msg = f"moved to the dead-letter room {self.room.path}.dead"
            nxt = "claim the next task"
        elif mode in ("done", "noop"):
            msg = "done" if mode == "done" else "done already (this token's own done)"
            nxt = "claim the next task"
        elif mode == "extended":
            msg = f"lease renewed for {seconds:g} s"
            nxt = f"`extend {token_text}` again before it ends, or `done {token_text}`"
        else:
            msg = "released: the line is claimable again"
            nxt = "claim a task"
        where = f" (entry {entry})" if entry else ""
        return Q.TaskUpdate(
            room="",
            path=str(self.room.path),
            token=token_text,
            mode=mode,
            entry=entry or None,
            lease_until=float(until_s) if mode == "extended" else None,
            removed=int(removed),
            message=msg + where,
            next=nxt,
        )

    # ----- looks (read-only) -------------------------------------------------------------------
    def history(self, entry: str) -> list[tuple[str, float, int, float, str]]:
        """The claims of entry `entry`, oldest first (for `room trace`): (holder, at, token,
        lease end, how it ended: released, done, dead or ""). From its task while it is in
        the queue, else from the audit entry of its done or dead-letter move."""
        qh = self._keys[3]
        with self.room._errors("trace"):
            client = self.room._redis()
            raw = client.hget(qh, f"t:{entry}")
            claims: Any = None
            if raw is not None:
                claims = json.loads(raw).get("h")
            else:
                audit: Any = client.xrevrange(self._keys[2], count=10_000) or []
                for _, fields in audit:
                    f = (
                        fields
                        if isinstance(fields, dict)
                        else dict(zip(fields[::2], fields[1::2], strict=False))
                    )
                    if f.get(b"first") == entry.encode() and b"claims" in f:
                        claims = json.loads(f[b"claims"])
                        break
        out: list[tuple[str, float, int, float, str]] = []
        for c in claims if isinstance(claims, list) else []:
            if c[0] == "ackdeck-dead-letter":
                if out:  # the last claim's lease ended in the dead-letter room
                    out[-1] = (*out[-1][:4], "dead")
                continue
            out.append(
                (str(c[0]), float(c[1]), int(c[2]), float(c[3]), str(c[4] if len(c) > 4 else ""))
            )
        return out

    def view(self, limit: int = 100) -> Q.QueueView:
        """What the queue holds now (as FileQueue.view)."""
        now = repr(self.room._clock())
        qh, leases, ready = self._keys[3:6]
        with self.room._errors("status"):
            client = self.room._redis()
            pipe = client.pipeline(transaction=True)
            pipe.hget(qh, "id")
            pipe.zcount(leases, f"({now}", "+inf")
            pipe.zcount(leases, "-inf", now)
            pipe.zcard(ready)
            pipe.hget(self._keys[1], "dead")
            pipe.xlen(self._keys[0])
            if limit > 0:  # (ZRANGE 0 -1 would be all of them)
                pipe.zrange(leases, 0, limit - 1)
                pipe.zrange(ready, 0, limit - 1)
            qid, running, ended, waiting, dead, length, *found = pipe.execute()
            ids, readies = found if found else ([], [])
            entries = [x.decode() for x in ids]
            entries += [x.decode().split("|", 1)[1] for x in readies]
            tasks = client.hmget(qh, [f"t:{e}" for e in entries]) if entries else []
        held = []
        for e, raw in zip(entries, tasks, strict=True):
            if raw is None:
                continue
            t = json.loads(raw)
            h = t.get("h") or []
            held.append(
                Q.Held(
                    entry=e,
                    holder=t["holder"],
                    token=Q.token_text(int(t["token"]), _s(qid or b"")),
                    claimed_at=float(h[-1][1]) if h else None,
                    until=float(t["ends"]),
                    deliveries=int(t["deliveries"]),
                )
            )
        held.sort(key=lambda x: tuple(int(p) for p in (x.entry or "0-0").split("-")))
        return Q.QueueView(
            claimed=int(running),
            expired=int(ended) + int(waiting),
            dead=int(dead or 0),
            held=held[:limit],
            unclaimed=max(0, int(length) - int(running) - int(ended) - int(waiting)),
        )

    def dead_letter(self, token_text: str) -> Q.TaskUpdate:
        """Move the entry claimed with `token_text` (its current lease) to the dead-letter
        room: the owner's act on a line no agent can finish (as FileQueue.dead_letter)."""
        return self.update(token_text, "dead")
