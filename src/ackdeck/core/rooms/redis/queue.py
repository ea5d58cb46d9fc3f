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
  stream deletes from the middle; a file only drops its head). A key (the done mark)
  remembers for OP_WINDOW_S that the token's task was done, and by which operation: the same
  done sent again after a lost reply says `done`, as its first attempt did; another done
  with the token is a no-op.
- **extend / release**: the fencing check, then a new lease end (release: ready at once).

Why not XAUTOCLAIM: it judges every pending entry by one idle time, but each claim here
chooses its lease (default 600 s, at most 7200 s), and it scans the pending entries list in
ID order, so a claim would cost more the more entries are claimed; the lease set answers
"whose lease ended" in O(log n). XCLAIM of the chosen entry keeps Redis's own bookkeeping
(the pending entries list, its owner and delivery count, XPENDING) true.

Removals count in the room's `removed` counter (core/rooms/redis/lua.py), so the room's epoch
holds: XDEL by ackdeck is not someone else's deletion. A stream deleted or recreated loses
its consumer group; the next operation sees that and starts the queue afresh (a new queue id:
every older token is refused, every entry now in the stream is claimable). A claim finds it
by XREADGROUP's NOGROUP (or before handing out an ended lease again), a done by XACK acking
nothing, extend and release by creating the group: a failing XGROUP CREATE in every claim
and done cost each more than the check it made.

Speed (docs/performance.md): claim+done is two script calls, against three bare commands;
what the scripts add is kept to the writes the guarantees need plus a few reads. Replies are
one string (each array item costs redis-py more to read than the script to write), numbers
are formatted by the client (the lease's end), and only a retry looks for its stored reply.
State ackdeck never writes (a task that is not its JSON, a queue id or next token of someone
else's) is refused before the script writes anything of it, in one line naming the mend.

Leases are judged on the claimer's clock (the room's clock, `time.time` unless a test injects
one), as in a file queue: see docs/concepts/work-queues.md for why, and what a step does.

Every write carries an operation ID: after a lost reply the client sends the same script
again (RedisRoom._again) and the server returns the first attempt's result instead of
applying it twice (a claim retried does not hand out a second line; a done's result is its
done mark).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from ackdeck.core.base import locations
from ackdeck.core.base.names import check_name
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
_UPDATE_OPS = frozenset((*Q.OPS, "dead"))

_PRELUDE = r"""
local GROUP = 'ackdeck-queue'
local WINDOW = WINDOW_S
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
-- A fresh queue id, should the queue start afresh: the first 32 bits of the op's random ID.
local function fresh_id(op_id) return string.sub(op_id, 1, 8) end
-- A state value ackdeck never writes is refused before this call writes anything about it
-- (a script's writes are not rolled back when it fails): one line naming it and the mend.
local function damaged(what, mend)
  error('QDAMAGED ' .. what .. ' is not what ackdeck writes; nothing changed for it; ' .. mend)
end
local function task_of(id)
  local raw = redis.call('HGET', QH, 't:' .. id)
  if not raw then return nil end
  local ok, t = pcall(cjson.decode, raw)
  if not ok or type(t) ~= 'table' or type(t.token) ~= 'number' or type(t.holder) ~= 'string'
      or type(t.deliveries) ~= 'number' or type(t.tokens) ~= 'table' or type(t.h) ~= 'table'
      or type(t.h[#t.h]) ~= 'table' or tonumber(t.ends) == nil then
    damaged('the task of entry ' .. id .. ' (field t:' .. id .. ' of ' .. QH .. ')',
      '`redis-cli HDEL ' .. QH .. ' t:' .. id .. '` hands the entry out again once its lease '
      .. 'ends (its deliveries counted afresh)')
  end
  return t
end
-- The queue id and the next fencing number, checked (a token carries the id).
local function queue_head()
  local got = redis.call('HMGET', QH, 'id', 'next')
  local qid, nxt = got[1], got[2]
  if qid and (#qid > 32 or not string.match(qid, '^%w+$') or not tonumber(nxt)) then
    damaged('the queue id or next token of ' .. QH, '`redis-cli HSET ' .. QH .. ' id NEWID next '
      .. 'N` mends it (NEWID letters and digits, N above every token issued: older tokens are '
      .. 'refused, every task is kept)')
  end
  return qid
end
-- The queue's id, creating the group (and the stream) when missing. A group that is gone
-- while the queue hash has an id means the stream was deleted or recreated (or the server
-- lost it): the queue starts afresh under `fresh` (a new id), every older token refused.
-- Not called on every claim and done: each finds a lost group by itself (XREADGROUP says
-- NOGROUP, XACK acks nothing), and a failing XGROUP CREATE on every call cost each more.
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
-- The policy's queue flag and max_deliveries from the meta hash's `policy`: JSON that
-- core/rooms/policy.py writes with json.dumps's spacing, found with plain searches (a
-- pattern scan, or decoding it, cost every claim more); the pattern only for JSON spaced
-- otherwise.
local function policy_of(raw)
  if not raw then return false, nil end
  local queue = string.find(raw, '"queue": true', 1, true) ~= nil
    or string.find(raw, '"queue"%s*:%s*true') ~= nil
  local at = string.find(raw, '"max_deliveries"', 1, true)
  if not at then return queue, nil end
  return queue, tonumber(string.match(raw, '^"max_deliveries"%s*:%s*(%d+)', at))
end
local function policy() return policy_of(redis.call('HGET', META, 'policy')) end
-- An entry leaves the stream as ackdeck's removal (counted in `removed`, so the room's epoch
-- holds), and the queue forgets its task and tokens. `acked`: the caller sent XACK already.
local function forget(id, t, acked)
  if not acked then redis.call('XACK', S, GROUP, id) end
  local n = redis.call('XDEL', S, id)
  if n > 0 then redis.call('HINCRBY', META, 'removed', n) end
  local fields = {'t:' .. id}
  for _, k in ipairs(t.tokens or {}) do fields[#fields + 1] = 'k:' .. k end
  redis.call('HDEL', QH, unpack(fields))
  -- An entry is in one of the two sets: its lease runs (or ran) or it is ready.
  if redis.call('ZREM', LEASES, id) == 0 then redis.call('ZREM', READY, member(id)) end
  return n
end
-- The audit entry of an entry that left (done or dead): with its claims (each holder, when,
-- its token and lease end), so `room trace` shows each claim, expiry and completion.
local function audit(now, session, mode, id, t, extra, epoch)
  epoch = epoch or redis.call('HGET', META, 'epoch') or '0'
  redis.call('XADD', AUDIT, 'MAXLEN', '~', '10000', '*', 'at', now, 'session', session,
    'mode', mode, 'epoch', epoch, 'first', id, 'last', id, 'acked', 1, 'preserved',
    redis.call('XLEN', S), 'sha1', '', 'claims', cjson.encode(t.h or {}), unpack(extra or {}))
end
""".replace("WINDOW_S", str(OP_WINDOW_S))

# ARGV: session, now, the lease's end (both as the client wrote them: the end is the claimer's
# clock plus the lease), the op's ID, the dead-letter room's name (as shown), '1' when this is
# a retry of the op (only a retry can find its op's reply stored).
# KEYS 8: the dead-letter room's stream.
# Returns {header, then the entry's fields}: the header is one string (each array item cost
# the client more to read than the script to write), `mode queue-id entry token deliveries
# lease-end moved`: mode 'claimed', 'none', 'not-queue' or 'replay', moved the lines this claim
# moved to the dead-letter room; '-' for what a mode has not.
_CLAIM_BODY = r"""
local session, now, ends = ARGV[1], ARGV[2], ARGV[3]
if ARGV[6] == '1' then
  local seen = redis.call('GET', OPKEY)
  if seen then
    local out = {'replay ' .. seen}
    local id = string.match(seen, '^%S+ (%S+)')
    local e = redis.call('XRANGE', S, id, id)
    if #e > 0 then for _, f in ipairs(e[1][2]) do out[#out + 1] = f end end
    return out
  end
end
local queue, maxd = policy()
if not queue then return {'not-queue - - 0 0 - 0'} end
local qid = queue_head()
if not qid then qid = open_queue(fresh_id(ARGV[4])) end
-- Leases that ended become ready, each once per expiry (a member that is no entry ID is not
-- ackdeck's: dropped).
while true do
  local due = redis.call('ZRANGEBYSCORE', LEASES, '-inf', now, 'LIMIT', 0, 100)
  if #due == 0 then break end
  for _, id in ipairs(due) do
    redis.call('ZREM', LEASES, id)
    if string.match(id, '^%d+%-%d+$') then redis.call('ZADD', READY, 0, member(id)) end
  end
end
local moved = 0
local id, fields, t = nil, nil, nil
local checked = false
while true do
  local first = redis.call('ZRANGE', READY, 0, 0)
  if #first == 0 then break end
  if not checked then
    -- A ready entry is about to be handed out again or dead-lettered: first make sure the
    -- stream is the one it was claimed from (its group gone: the queue starts afresh, and
    -- the ready set with it).
    checked = true
    qid = open_queue(fresh_id(ARGV[4]))
  else
    local cand = string.match(first[1], '|(%d+%-%d+)$')
    local ct = cand and task_of(cand)  -- a damaged task fails here, before any write of it
    redis.call('ZREM', READY, first[1])
    if not cand then
      -- A member ackdeck never writes: dropped.
    elseif ct and tonumber(ct.ends) > tonumber(now) then
      -- Judged ended by an earlier claim, but this claimer's clock says it runs (stepped
      -- back, or behind): not ended after all, as a file queue judges it at each claim.
      redis.call('ZADD', LEASES, ct.ends, cand)
    elseif ct and maxd and ct.deliveries >= maxd then
      ct.h[#ct.h + 1] = {'ackdeck-dead-letter', now, 0, now, 'dead'}
      local e = redis.call('XRANGE', S, cand, cand)
      if #e > 0 then redis.call('XADD', KEYS[8], '*', unpack(e[1][2])) end
      forget(cand, ct)
      redis.call('HINCRBY', META, 'dead', 1)
      audit(now, 'ackdeck-dead-letter', 'dead', cand, ct, {'dead', ARGV[5]})
      moved = moved + 1
    else
      -- Handed out again; with no task (its record deleted to mend it) as a task afresh:
      -- never left pending with nobody to claim it.
      local e = redis.call('XCLAIM', S, GROUP, session, 0, cand)
      if #e > 0 and e[1] then
        id, fields, t = cand, e[1][2], ct or {deliveries = 0, tokens = {}, h = {}}
        break
      end
      -- Deleted behind ackdeck's back (XDEL): nothing to hand out, forget it.
      forget(cand, ct or {})
    end
  end
end
if not id then
  local r = redis.pcall('XREADGROUP', 'GROUP', GROUP, session, 'COUNT', 1, 'STREAMS', S, '>')
  if type(r) == 'table' and r.err then
    -- The group is gone (the stream deleted or recreated): the queue starts afresh.
    if checked or not string.find(r.err, 'NOGROUP', 1, true) then error(r) end
    qid = open_queue(fresh_id(ARGV[4]))
    r = redis.call('XREADGROUP', 'GROUP', GROUP, session, 'COUNT', 1, 'STREAMS', S, '>')
  end
  if r and r[1] and #r[1][2] > 0 then
    id, fields = r[1][2][1][1], r[1][2][1][2]
    t = {deliveries = 0, tokens = {}, h = {}}
  end
end
if not id then
  return {'none ' .. qid .. ' - 0 0 - ' .. moved}
end
local token = redis.call('HINCRBY', QH, 'next', 1)
t.token, t.holder, t.ends = token, session, ends
t.deliveries = t.deliveries + 1
t.tokens[#t.tokens + 1] = token
-- The claim's record, kept with the task (an audit entry per claim cost every claim a
-- stream write): its done or dead-letter audit entry carries them all.
if not t.h then t.h = {} end
t.h[#t.h + 1] = {session, now, token, ends, ''}
redis.call('HSET', QH, 't:' .. id, cjson.encode(t), 'k:' .. token, id)
redis.call('ZADD', LEASES, ends, id)
local head = table.concat({qid, id, token, t.deliveries, ends, moved}, ' ')
redis.call('SET', OPKEY, head, 'EX', WINDOW)
local out = {'claimed ' .. head}
for _, f in ipairs(fields) do out[#out + 1] = f end
return out
"""
CLAIM = _PRELUDE + _CLAIM_BODY

# ARGV: op (done, extend, release, or dead: the owner's), token number, the token's queue id,
# now, fencing ('1' on, '0' only for the test that shows what it prevents), the op's ID, lease
# (s), the dead-letter room's name. KEYS 8: the token's done mark, 9: the dead-letter room's
# stream.
# Returns one string (an array cost the client more to read), `mode entry lease-end removed
# reason`: mode done, noop, extended, released, dead, refused, not-queue or gone; '-' for what
# a mode has not; the reason (a refusal's) is the rest.
_UPDATE_BODY = r"""
local op, n, tq, now, op_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[6]
local function res(mode, id, ends, removed, reason)
  return table.concat({mode, id or '-', ends or '-', removed or 0, reason or ''}, ' ')
end
local function afresh_refusal(afresh)
  local why = 'it was issued by another queue state (the queue was started afresh'
  if afresh then why = why .. ' just now: its stream was deleted or recreated' end
  return res('refused', nil, nil, 0, why .. '); claim again')
end
local NO_TASK = 'no task holds this token (unknown, or its line left)'
if op == 'done' then
  -- The done: no reply key of its own; the token's done mark (KEYS[8]: the op's ID, the
  -- queue id, what it removed, the entry) answers both a retry of this op after a lost reply
  -- (done, as the first attempt said) and another done with the token (noop).
  local got = redis.call('HMGET', QH, 'id', 'k:' .. n)
  local qid, id = got[1], got[2]
  -- No queue state at all, yet a token was issued: the server lost it (deleted, flushed, or
  -- restarted without persistence).
  if not qid then return res('gone') end
  local m = redis.call('HMGET', META, 'policy', 'epoch')
  if not policy_of(m[1]) then return res('not-queue') end
  if qid ~= tq or not id then
    local mark = redis.call('GET', KEYS[8])
    if mark then
      local mop, mq, removed, entry = string.match(mark, '^(%S+) (%S+) (%S+) (%S+)$')
      if not mop then
        -- An older ackdeck's mark (the entry alone): done, by some op of that version.
        return res('noop', nil, nil, 0, 'already done with this token')
      elseif mq == tq then
        if mop == op_id then return res('done', entry, nil, removed) end
        return res('noop', nil, nil, 0, 'already done with this token')
      end
    end
    if qid ~= tq then
      local _, afresh = open_queue(fresh_id(op_id))
      return afresh_refusal(afresh)
    end
    return res('refused', nil, nil, 0, NO_TASK)
  end
  local t = task_of(id)
  if t == nil then return res('refused', nil, nil, 0, NO_TASK) end
  if ARGV[5] == '1' and tonumber(n) ~= t.token then
    return res('refused', id, nil, 0, 'token superseded: the lease ended and the line was '
      .. 'claimed again (by ' .. t.holder .. ', token ' .. t.token .. ')')
  end
  if redis.call('XACK', S, GROUP, id) == 0 then
    -- Nothing to ack: the group is gone with its stream (deleted or recreated)?
    local _, afresh = open_queue(fresh_id(op_id))
    if afresh then return afresh_refusal(true) end
  end
  t.h[#t.h][5] = 'done'
  local removed = forget(id, t, true)
  redis.call('SET', KEYS[8], table.concat({op_id, tq, removed, id}, ' '), 'EX', WINDOW)
  audit(now, t.holder, 'done', id, t, {'token', n}, m[2] or '0')
  return res('done', id, nil, removed)
end
local seen = redis.call('GET', OPKEY)
if seen then return seen end
-- No queue state at all, yet a token was issued: the server lost it (deleted, flushed, or
-- restarted without persistence).
if not redis.call('HGET', QH, 'id') then return res('gone') end
local queue = policy()
if not queue then return res('not-queue') end
local qid, afresh = open_queue(fresh_id(op_id))
local function reply(r)
  redis.call('SET', OPKEY, r, 'EX', WINDOW)
  return r
end
if qid ~= tq then return afresh_refusal(afresh) end
local id = redis.call('HGET', QH, 'k:' .. n)
if not id then
  if redis.call('EXISTS', KEYS[8]) == 1 then
    return res('refused', nil, nil, 0, 'the task is done already')
  end
  return res('refused', nil, nil, 0, NO_TASK)
end
local t = task_of(id)
if t == nil then return res('refused', nil, nil, 0, NO_TASK) end
if ARGV[5] == '1' and tonumber(n) ~= t.token then
  return res('refused', id, nil, 0, 'token superseded: the lease ended and the line was '
    .. 'claimed again (by ' .. t.holder .. ', token ' .. t.token .. ')')
end
if op == 'dead' then
  -- The owner's dead letter: the line moves to the dead-letter room, its holder refused.
  t.h[#t.h][5] = 'dead'
  local e = redis.call('XRANGE', S, id, id)
  if #e > 0 then redis.call('XADD', KEYS[9], '*', unpack(e[1][2])) end
  forget(id, t)
  redis.call('HINCRBY', META, 'dead', 1)
  audit(now, 'ackdeck-dead-letter', 'dead', id, t, {'dead', ARGV[8]})
  return reply(res('dead', id, nil, 1))
end
if op == 'extend' then
  t.ends = fmt(tonumber(now) + tonumber(ARGV[7]))
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
if op == 'extend' then return reply(res('extended', id, t.ends)) end
return reply(res('released', id))
"""
UPDATE = _PRELUDE + _UPDATE_BODY

# A done, then a claim, in one script (one round trip per task for a worker's loop, as
# JetStream's ack-next): KEYS 1-9 and ARGV 1-8 as UPDATE's, then KEYS 10 the claim's op key
# and ARGV 9-14 as CLAIM's. Returns {the update's reply}, then the claim's items when the
# done was made (or was a no-op).
NEXT = (
    _PRELUDE
    + "local function update_op(KEYS, ARGV)\nlocal OPKEY = KEYS[7]\n"
    + _UPDATE_BODY
    + "\nend\nlocal function claim_op(KEYS, ARGV)\nlocal OPKEY = KEYS[7]\n"
    + _CLAIM_BODY
    + r"""
end
local KU, AU, KC, AC = {}, {}, {}, {}
for i = 1, 9 do KU[i] = KEYS[i] end
for i = 1, 8 do AU[i] = ARGV[i] end
for i = 1, 6 do KC[i] = KEYS[i] end
for i = 1, 6 do AC[i] = ARGV[8 + i] end
KC[7], KC[8] = KEYS[10], KEYS[9]
local u = update_op(KU, AU)
local mode = string.match(u, '^%S+')
if mode ~= 'done' and mode ~= 'noop' then return {u} end
local c = claim_op(KC, AC)
table.insert(c, 1, u)
return c
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
        # Sent as bytes: the client packs bytes as they are (each string it encoded cost
        # every call more).
        self._sent_keys = [k.encode() for k in self._keys]
        self._dead_key = locations.redis_room_key(f"{name}.dead").encode()
        self._path = str(room.path)
        self._dead_name = f"{room.path}.dead"
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
        check_name(session)
        seconds = Q.check_lease(lease)
        op_id = new_id()
        key, args = self._claim_request(session, seconds, op_id)
        script = self._script("claim")
        keys = [*self._sent_keys, key, self._dead_key]

        def call() -> Any:
            return script(keys, args())

        lost = _unknown(
            f"whether a line was claimed is unknown (claim {op_id}, retried {{tries}} times); "
            "if one was, its lease ends and it is handed out again"
        )
        return self._claimed(self.room._again("claim", call, lost), seconds)

    def _claim_request(
        self, session: str, seconds: float, op_id: str
    ) -> tuple[str, Callable[[], list[Any]]]:
        """A claim's op key, and its arguments (the clock is read for each attempt: a retry's
        lease starts when it is sent; only a retry looks for its op's stored reply). The
        lease's end is added here, in Python, so the script formats no number; the op's ID
        names a fresh queue id should one be needed."""
        sent: list[float] = []

        def args() -> list[Any]:
            now = self.room._clock()
            again = "1" if sent else "0"
            sent.append(now)
            return [session, repr(now), repr(now + seconds), op_id, self._dead_name, again]

        return locations.redis_queue_op_key(self._name, op_id), args

    def _claimed(self, got: Any, seconds: float) -> Q.Claim:
        """The claim script's reply (its header, then the entry's fields) as the doors show
        it."""
        mode, qid, entry, token_n, deliveries_s, until_s, moved_s = got[0].decode().split(" ")
        if mode == "not-queue":
            raise self._not_queue()
        moved = int(moved_s)
        if moved:
            self._tell_owner(moved)
        if mode == "none":
            return Q.nothing_claimed(self._path, seconds, moved, "no unclaimed line waits")
        deliveries = int(deliveries_s)
        token_s = Q.token_text(int(token_n), qid)
        return Q.Claim(
            room="",
            path=self._path,
            claimed=True,
            token=token_s,
            entry=entry,
            line=entry_line(got[1:]) + b"\n",
            deliveries=deliveries,
            lease_until=float(until_s),
            lease_seconds=seconds,
            dead_lettered=moved,
            message=(
                f"claimed entry {entry} (delivery {deliveries}) until the lease ends in "
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
        if op not in _UPDATE_OPS:
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
    ) -> tuple[list[str | bytes], Callable[[], list[Any]]]:
        number, qid = Q.parse_token(token_text)
        keys: list[str | bytes] = [
            *self._sent_keys,
            locations.redis_queue_op_key(self._name, op_id),
            locations.redis_queue_done_key(self._name, number),
            self._dead_key,
        ]
        fencing = "1" if self.fencing else "0"

        def args() -> list[Any]:
            return [op, number, qid, repr(self.room._clock()), fencing, op_id, repr(seconds),
                    self._dead_name]  # fmt: skip

        return keys, args

    def done_next(
        self, token_text: str, session: str, lease: float | None = None
    ) -> tuple[Q.TaskUpdate, Q.Claim | None]:
        """Done with `token_text`, then a claim for `session`, in one script (one round trip
        per task for a worker's loop). The claim is None when the done was refused (raised)."""
        check_name(session)
        seconds = Q.check_lease(lease)
        Q.parse_token(token_text)
        done_id, claim_id = new_id(), new_id()
        keys, done_args = self._update_request(token_text, "done", Q.DEFAULT_LEASE, done_id)
        claim_key, claim_args = self._claim_request(session, seconds, claim_id)
        keys.append(claim_key)
        script = self._script("next")

        def call() -> Any:
            return script(keys, [*done_args(), *claim_args()])

        lost = _unknown(
            f"whether the done and the next claim happened is unknown (done {done_id}, claim "
            f"{claim_id}, retried {{tries}} times): `done {token_text}` again says"
        )
        got = self.room._again("done", call, lost)
        done = self._updated(got[0], token_text, "done", Q.DEFAULT_LEASE)
        return done, self._claimed(got[1:], seconds)

    def _updated(self, got: Any, token_text: str, op: str, seconds: float) -> Q.TaskUpdate:
        """The update script's reply as the doors show it (a refusal raised)."""
        mode, entry, until_s, removed, reason = got.decode().split(" ", 4)
        entry = "" if entry == "-" else entry
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
            path=self._path,
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
