"""The server-side scripts of a redis room (Lua, run atomically by EVALSHA).

Keys of room NAME (the `{NAME}` hash tag keeps them in one cluster slot):
  ackdeck:room:{NAME}           the stream; one entry per line, field `line`
  ackdeck:room:{NAME}:meta      hash: epoch, hw, foreign, removed, cut, acked, preserved,
                                last_ack, and one field `r:SESSION` per session holding its
                                JSON receipt {epoch, first, last, count, added, digest, acked,
                                read_at, reader, read (the read's ID), and once acked ack_id,
                                ack_mode, ack_n, ack_left}; `x:SESSION`: the ID of a read
                                whose reader never learned its outcome (fenced: never stored)
  ackdeck:room:{NAME}:audit     stream of acks (capped at about 10,000 entries)
  ackdeck:room:{NAME}:push:ID   a push's entry ID for PUSH_WINDOW_S (its dedup entry)
  ackdeck:room:{NAME}:reads     stream of delivered reads, the read log (capped likewise)

The receipts share the meta hash so that an ack reads its receipt with the counters in one
HMGET and writes both back in one HSET: an ack is five server commands (XINFO STREAM, HMGET,
XTRIM, XADD to the audit, HSET), each of which costs a script far more than the bare command.

Epochs. Within one stream, entry IDs are never reused and entries never change, so an ID names
the same bytes for the stream's whole life. Two things break that, and each starts a new epoch
(every older receipt is stale and removes nothing):
- the stream was deleted or recreated: its `entries-added` counter went below the highest
  value ackdeck saw (`hw`), or the stream lacks the empty consumer group `ackdeck-witness`
  that ackdeck's first read or ack created on it (deleting a stream deletes its groups);
- someone else removed entries (XDEL, XTRIM, XADD MAXLEN): `entries-added - length - removed`
  (entries removed by anyone but ackdeck) differs from the value recorded (`foreign`).
ackdeck's own acks always remove a prefix (a read returns every entry, so nothing older than a
receipt's first entry is left when it is acked): `cut` is the newest ID they removed.
"""

from __future__ import annotations

# Shared helpers, prepended to every script.
_PRELUDE = r"""
local function numlt(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
-- Stream IDs as strings ("ms-seq"): exact for the full 64-bit range, unlike Lua numbers.
local function idlt(a, b)
  local am, as = string.match(a, '^(%d+)%-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)%-(%d+)$')
  if am ~= bm then return numlt(am, bm) end
  return numlt(as, bs)
end
-- The smallest ID after `id` (XTRIM MINID removes every entry below its argument).
local function incr(num)
  local i = #num
  while i > 0 and string.sub(num, i, i) == '9' do i = i - 1 end
  if i == 0 then return '1' .. string.rep('0', #num) end
  return string.sub(num, 1, i - 1) .. tostring(tonumber(string.sub(num, i, i)) + 1)
    .. string.rep('0', #num - i)
end
local function next_id(id)
  local ms, seq = string.match(id, '^(%d+)%-(%d+)$')
  if seq == '18446744073709551615' then return incr(ms) .. '-0' end
  return ms .. '-' .. incr(seq)
end
-- How many entries of receipt r are still in the stream. Exact within an epoch: since the
-- read nobody but ackdeck removed entries (else the epoch would have moved on), ackdeck only
-- removes prefixes, and everything added since the read comes after r.last.
local function left_of(r, s)
  local n = s.length - (s.added - r.added)
  if n < 0 then n = 0 end
  if n > r.count then n = r.count end
  return n
end
local function want_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    error({err = 'WRONGTYPE key ' .. key .. ' holds a ' .. t .. ', not a ' .. want})
  end
  return t ~= 'none'
end
-- One XINFO STREAM (no TYPE first: its error tells a missing key from another type).
local function stream_state(key)
  local s = {exists = false, length = 0, added = 0, last = '0-0', groups = 0, oldest = ''}
  local info = redis.pcall('XINFO', 'STREAM', key)
  if type(info) == 'table' and info.err then
    if string.find(info.err, 'WRONGTYPE', 1, true) then want_type(key, 'stream') end
    if string.find(info.err, 'no such key', 1, true) then return s end
    error(info)
  end
  s.exists = true
  s.added = nil
  for i = 1, #info, 2 do
    local f = info[i]
    if f == 'length' then s.length = info[i + 1]
    elseif f == 'entries-added' then s.added = info[i + 1]
    elseif f == 'last-generated-id' then s.last = info[i + 1]
    elseif f == 'groups' then s.groups = info[i + 1]
    elseif f == 'first-entry' and type(info[i + 1]) == 'table' then s.oldest = info[i + 1][1] end
  end
  if s.added == nil then
    -- Before 7.0 a stream has no entries-added counter, and epochs cannot be told apart.
    error({err = 'ERR redis rooms need Redis 7.0 or newer (XINFO STREAM has no entries-added)'})
  end
  return s
end
-- The meta hash (one HMGET; a meta key of another type fails with WRONGTYPE from HMGET
-- itself) and, when `field` is given, that field's raw value too (a session's receipt).
local function load_meta(key, field)
  local v = redis.call('HMGET', key, 'epoch', 'hw', 'foreign', 'removed', 'cut', 'acked',
    'preserved', 'last_ack', field or 'epoch')
  return {
    epoch = tonumber(v[1] or '0'), hw = tonumber(v[2] or '0'),
    foreign = tonumber(v[3] or '0'), removed = tonumber(v[4] or '0'),
    cut = v[5] or '0-0', acked = tonumber(v[6] or '0'),
    preserved = tonumber(v[7] or '0'), last_ack = v[8] or '',
  }, v[9]
end
-- The meta reconciled with the stream; changed=true when a new epoch starts or hw grew.
local function settle(s, m)
  local changed = false
  local foreign = s.added - s.length - m.removed
  local recreated = s.added < m.hw or (m.hw > 0 and s.exists and s.groups == 0)
  if recreated or foreign ~= m.foreign then
    m.epoch = m.epoch + 1
    m.removed = 0
    m.foreign = s.added - s.length
    m.cut = '0-0'
    changed = true
  end
  if s.added ~= m.hw then m.hw = s.added; changed = true end
  return changed
end
-- The witness group: deleting the stream deletes it, so a stream without it that ackdeck has
-- seen before was recreated by someone else. It never reads or tracks anything.
local function witness(key, s)
  if s.exists and s.groups == 0 then
    redis.call('XGROUP', 'CREATE', key, 'ackdeck-witness', '$')
    s.groups = 1
  end
end
-- One HSET of the meta, plus a session's receipt when `session` is given.
local function store_meta(key, m, session, receipt)
  if session then
    redis.call('HSET', key, 'epoch', m.epoch, 'hw', m.hw, 'foreign', m.foreign,
      'removed', m.removed, 'cut', m.cut, 'acked', m.acked, 'preserved', m.preserved,
      'last_ack', m.last_ack, 'r:' .. session, receipt)
  else
    redis.call('HSET', key, 'epoch', m.epoch, 'hw', m.hw, 'foreign', m.foreign,
      'removed', m.removed, 'cut', m.cut, 'acked', m.acked, 'preserved', m.preserved,
      'last_ack', m.last_ack)
  end
end
local function decode_receipt(raw, session)
  local ok, r = pcall(cjson.decode, raw)
  if not ok or type(r) ~= 'table' or type(r.last) ~= 'string' then
    error({err = 'CORRUPT receipt of session ' .. session .. ' in the room\'s meta hash'})
  end
  return r
end
-- Remove every entry up to `last`, the oldest ones, as ackdeck's own removal: counted in
-- `removed` and `cut` so the epoch holds. One XTRIM MINID, which can never take an entry newer
-- than `last`; when nothing was ever added after `last` (the stream's last-generated ID),
-- MAXLEN 0 removes the same entries for about a quarter less server time on large acks.
local function trim_prefix(key, s, m, last)
  local removed
  if s.last == last then
    removed = redis.call('XTRIM', key, 'MAXLEN', '=', 0)
  else
    removed = redis.call('XTRIM', key, 'MINID', '=', next_id(last))
  end
  m.removed = m.removed + removed
  if idlt(m.cut, last) then m.cut = last end
  return removed
end
-- The logged reads (stream `key`) of `epoch` that may hold entries from `oldest` on, as field
-- tables: newest first until a read ends before `oldest` (reads are logged in time order).
local function live_reads(key, oldest, epoch)
  local out = {}
  local hi = '+'
  while true do
    local batch = redis.call('XREVRANGE', key, hi, '-', 'COUNT', 200)
    for _, e in ipairs(batch) do
      local f = {}
      for k = 1, #e[2], 2 do f[e[2][k]] = e[2][k + 1] end
      if f.last and idlt(f.last, oldest) then return out end
      if tonumber(f.epoch) == epoch and f.first and f.last then out[#out + 1] = f end
      hi = '(' .. e[1]
    end
    if #batch < 200 then return out end
  end
end
-- How many of `reads` hold entry `id`.
local function deliveries_of(reads, id)
  local n = 0
  for _, f in ipairs(reads) do
    if not idlt(id, f.first) and not idlt(f.last, id) then n = n + 1 end
  end
  return n
end
-- The digest a read computed client-side: per entry its ID, then each field and value with
-- its length, so no two different entry lists hash the same input.
-- The length of the line an entry carries (redis_room.entry_line): its `line` field, or its
-- `field=value` pairs joined by spaces.
local function line_bytes(fields)
  if #fields == 2 and fields[1] == 'line' then return #fields[2] end
  local n = 0
  for i = 1, #fields - 1, 2 do n = n + #fields[i] + 1 + #fields[i + 1] + 1 end
  return math.max(n - 1, 0)
end

local function digest(entries)
  local parts = {}
  for _, e in ipairs(entries) do
    parts[#parts + 1] = e[1] .. '\n'
    for _, x in ipairs(e[2]) do parts[#parts + 1] = #x .. ':' .. x .. '\n' end
  end
  return redis.sha1hex(table.concat(parts))
end
"""

# KEYS: stream, meta. Returns {epoch, entries-added}. Persists a new epoch (or hw) when it
# sees one. The client sends it with `XRANGE - +` in one MULTI/EXEC (atomic, one round trip):
# the entries never pass through Lua, whose tables for a large read cost the read its speed
# and left milliseconds of garbage that the next script (an ack) paid to collect. The receipt
# is stored by the client once it holds the entries (recorded only once delivered).
READ = (
    _PRELUDE
    + r"""
local s = stream_state(KEYS[1])
local m = load_meta(KEYS[2])
if settle(s, m) then store_meta(KEYS[2], m) end
witness(KEYS[1], s)
return {m.epoch, s.added}
"""
)

# KEYS: stream, the push's dedup key (ackdeck:room:{NAME}:push:ID). ARGV: line, window (s).
# Returns {entry ID, 1 if an earlier attempt of this push had stored it already}. A push
# retried with the same ID after a lost reply is stored once: the first attempt left its
# entry ID under the dedup key for `window` seconds (like JetStream's Nats-Msg-Id window).
PUSH = r"""
local got = redis.call('GET', KEYS[2])
if got then return {got, 1} end
local id = redis.call('XADD', KEYS[1], '*', 'line', ARGV[1])
redis.call('SET', KEYS[2], id, 'EX', ARGV[2])
return {id, 0}
"""

# KEYS: meta, reads (the read log). ARGV: session, receipt JSON (with its read ID), read ID,
# fence ('' none), then the read log's at, reader, door, epoch, first, last, count (an empty
# read is not logged; the log entry is stored with the receipt or not at all).
# Returns 1 when stored, 0 when this read was given up for lost (fenced) and must not land.
# A receipt of an epoch that ended meanwhile is stored as it is: the next ack finds it stale.
# `fence` names an earlier read of this session whose outcome its reader never learned:
# from now on that read's receipt can never be stored, even if its command arrives late.
COMMIT_RECEIPT = r"""
local fenced = 'x:' .. ARGV[1]
if redis.call('HGET', KEYS[1], fenced) == ARGV[3] then return 0 end
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], fenced, ARGV[4], 'r:' .. ARGV[1], ARGV[2])
else
  redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], ARGV[2])
end
if tonumber(ARGV[11]) > 0 then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', '10000', '*', 'session', ARGV[1], 'at', ARGV[5],
    'reader', ARGV[6], 'door', ARGV[7], 'epoch', ARGV[8], 'first', ARGV[9], 'last', ARGV[10],
    'count', ARGV[11])
end
return 1
"""

# KEYS: stream, meta, audit. ARGV: session, now, all ('1' or '0'), reader ('' none), doubt
# (the ID of this session's last read when its reader could not learn whether its receipt was
# stored; '' none), ack ID ('' none). Returns {mode, acked, preserved, epoch, entries (for
# all), unread (for refused)}; mode `doubt` when a receipt ack was refused for that reason.
# An ack that removed or settled a receipt records its ID and outcome in it: the same ack sent
# again after a lost reply returns that outcome instead of acking anything twice.
# A prefix ack is five commands: XINFO STREAM, HMGET (counters and receipt), XTRIM, XADD
# (audit), HSET (counters and receipt); every other outcome is at most three.
ACK = (
    _PRELUDE
    + r"""
local session, now, all = ARGV[1], ARGV[2], ARGV[3] == '1'
local s = stream_state(KEYS[1])
local m, raw = load_meta(KEYS[2], 'r:' .. session)
local dirty = settle(s, m)
witness(KEYS[1], s)
-- A queue room (core/rooms/redis/queue.py) is never acked: an ack drops the oldest entries,
-- claimed ones and all, and their holders' work would be lost.
local pol = redis.call('HGET', KEYS[2], 'policy')
if pol then
  local ok, p = pcall(cjson.decode, pol)
  if ok and type(p) == 'table' and p.queue == true then
    if dirty then store_meta(KEYS[2], m) end
    return {'queue', 0, 0, m.epoch, {}, 0}
  end
end
local doubt, ack_id = ARGV[5] or '', ARGV[6] or ''
if ack_id ~= '' and raw then
  local ok, done = pcall(cjson.decode, raw)
  if ok and type(done) == 'table' and done.ack_id == ack_id then
    return {done.ack_mode, done.ack_n, done.ack_left, m.epoch, {}, 0}
  end
end
if doubt ~= '' then
  -- The doubtful read can never be stored from now on (its command may still arrive).
  redis.call('HSET', KEYS[2], 'x:' .. session, doubt)
end
-- Count the ack, write its audit entry, and store the meta with the session's new receipt
-- (nil: unchanged) in one HSET.
local function finish(mode, acked, first, last, dig, receipt)
  local left = s.length - acked
  if mode == 'prefix' or mode == 'all' then
    m.acked = m.acked + acked
    m.preserved = m.preserved + left
    m.last_ack = now
    dirty = true
    redis.call('XADD', KEYS[3], 'MAXLEN', '~', '10000', '*', 'at', now, 'session', session,
      'mode', mode, 'epoch', m.epoch, 'first', first, 'last', last, 'acked', acked,
      'preserved', left, 'sha1', dig)
  end
  if receipt then
    store_meta(KEYS[2], m, session, cjson.encode(receipt))
  elseif dirty then
    store_meta(KEYS[2], m)
  end
  return left
end
-- Remove the n entries up to `last`, the oldest in the stream (trim_prefix).
local function remove(last, n)
  local removed = trim_prefix(KEYS[1], s, m, last)
  if removed ~= n then
    -- Cannot happen within an epoch; say so loudly rather than hide it.
    redis.log(redis.LOG_WARNING, 'ackdeck: ack removed ' .. removed .. ' not ' .. n)
  end
  return removed
end

if all then
  -- A page, as a read takes one: at most ARGV[7] entries and ARGV[8] bytes of lines (each
  -- with its newline), one longer entry whole.
  local entries = {}
  if s.exists then
    entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', tonumber(ARGV[7]))
    local limit, used, keep = tonumber(ARGV[8]), 0, 0
    for i, e in ipairs(entries) do
      used = used + line_bytes(e[2]) + 1
      if used > limit and i > 1 then break end
      keep = i
    end
    for i = #entries, keep + 1, -1 do entries[i] = nil end
  end
  local first, last = '', ''
  if #entries > 0 then
    first, last = entries[1][1], entries[#entries][1]
    remove(last, #entries)
  end
  -- The session's receipt becomes a cursor past everything it was just given.
  local cursor = last
  if cursor == '' then cursor = m.cut end
  local left = finish('all', #entries, first, last, digest(entries), {epoch = m.epoch,
    first = cursor, last = cursor, count = 0, digest = '', acked = true,
    read_at = tonumber(now)})
  return {'all', #entries, left, m.epoch, entries, 0}
end

local r = nil
if raw then r = decode_receipt(raw, session) end
if doubt ~= '' then
  -- Whatever receipt is there (that read's, or the one before it) may cover lines its reader
  -- was told to discard: it becomes a cursor that authorises nothing; the session reads again.
  local receipt = nil
  if r ~= nil and not r.acked then r.acked = true; receipt = r end
  local left = finish('refused', 0, '', '', '', receipt)
  return {'doubt', 0, left, m.epoch, {}, left}
end
if r == nil or r.acked then
  local left = finish('refused', 0, '', '', '')
  return {'refused', 0, left, m.epoch, {}, left}
end
if type(r.reader) ~= 'string' then r.reader = '' end
if r.reader ~= (ARGV[4] or '') then
  -- only the reader the lines went to may ack them (a restarted MCP server re-reads)
  local left = finish('refused', 0, '', '', '')
  return {'other-reader', 0, left, m.epoch, {}, left}
end
if r.epoch ~= m.epoch then
  local left = finish('stale', 0, '', '', '')
  return {'stale', 0, left, m.epoch, {}, 0}
end
if r.count == 0 or not idlt(m.cut, r.last) then
  -- an empty read, or every entry of it was already acked (by this or another session)
  r.acked = true
  r.ack_id, r.ack_mode, r.ack_n, r.ack_left = ack_id, 'noop', 0, s.length
  local left = finish('noop', 0, '', '', '', r)
  return {'noop', 0, left, m.epoch, {}, 0}
end
-- Verified in O(1) from XINFO STREAM and the meta, not by reading the entries back. Within
-- the epoch nobody but ackdeck removed an entry (else `foreign` would have moved and a new
-- epoch begun) and the stream was not recreated, so the receipt's IDs name the entries it
-- was given, nothing older than its first entry can exist, and its entries still there are
-- exactly `left_of` of them, the oldest in the stream: unless another session's ack took
-- some of them (shared room), its first entry must be the stream's oldest and all of it must
-- be left; otherwise what is left must start after the cut.
local whole = idlt(m.cut, r.first)
local n = left_of(r, s)
local oldest = s.oldest
if n == 0 or oldest == '' or idlt(r.last, oldest)
    or (whole and (n ~= r.count or oldest ~= r.first))
    or (not whole and not idlt(m.cut, oldest)) then
  local left = finish('stale', 0, '', '', '')
  return {'stale', 0, left, m.epoch, {}, 0}
end
local removed = remove(r.last, n)
r.acked = true
r.ack_id, r.ack_mode, r.ack_n, r.ack_left = ack_id, 'prefix', removed, s.length - removed
local left = finish('prefix', removed, r.first, r.last, r.digest, r)
return {'prefix', removed, left, m.epoch, {}, 0}
"""
)

# KEYS: stream, meta, reads. Read-only (queries do not write: a new epoch is computed, not stored).
# Returns {exists, pending, pushed, epoch, acked, preserved, last_ack, last_id,
# sessions = {name, in_flight, ...}}.
STATUS = (
    _PRELUDE
    + r"""
local s = stream_state(KEYS[1])
local m = load_meta(KEYS[2])
settle(s, m)
local raw = redis.call('HGETALL', KEYS[2])
local sessions = {}
-- The first entry after `id` ('' when none): a session's oldest unread entry.
local function after(id)
  local got = redis.call('XRANGE', KEYS[1], '(' .. id, '+', 'COUNT', 1)
  if #got > 0 then return got[1][1] end
  return ''
end
for i = 1, #raw, 2 do
  local name = raw[i]
  if string.sub(name, 1, 2) == 'r:' then
    local ok, r = pcall(cjson.decode, raw[i + 1])
    if ok and type(r) == 'table' and type(r.last) == 'string' then
      local inflight = 0
      if r.epoch == m.epoch and not r.acked and r.count > 0 and idlt(m.cut, r.last) then
        inflight = left_of(r, s)
      end
      local read_at = ''
      if inflight > 0 then read_at = tostring(r.read_at) end
      -- Acks remove prefixes, so in this epoch everything left after r.last is unread.
      local first = s.oldest
      if r.epoch == m.epoch and s.length > 0 then first = after(r.last) end
      sessions[#sessions + 1] = string.sub(name, 3)
      sessions[#sessions + 1] = inflight
      sessions[#sessions + 1] = read_at
      sessions[#sessions + 1] = first
    end
  end
end
-- Deliveries of the oldest entry: the logged reads of this epoch that hold it.
local deliveries = 0
if s.length > 0 then
  deliveries = deliveries_of(live_reads(KEYS[3], s.oldest, m.epoch), s.oldest)
end
local exists = 0
if s.exists then exists = 1 end
return {exists, s.length, s.added, m.epoch, m.acked, m.preserved, m.last_ack, s.last, sessions,
  s.oldest, deliveries}
"""
)

# KEYS: stream, meta, audit, reads, the dead-letter room's stream. ARGV: max deliveries, now,
# the dead-letter room's name. The dead-letter move of core/rooms/file/deadletter.py, atomically:
# the oldest entries handed out that many times (logged reads of this epoch holding them; a
# prefix, as every read returns everything) are added to the dead-letter stream with their
# fields, removed here as an ack removes (XTRIM, `removed` and `cut`, so the epoch holds),
# counted (`dead`) and audited (mode `dead`). Returns how many moved.
DEAD = (
    _PRELUDE
    + r"""
local limit, now = tonumber(ARGV[1]), ARGV[2]
local s = stream_state(KEYS[1])
if s.length == 0 then return 0 end
local m = load_meta(KEYS[2])
local dirty = settle(s, m)
witness(KEYS[1], s)
local reads = live_reads(KEYS[4], s.oldest, m.epoch)
local doomed = {}
local after = '-'
local done = false
while not done do
  local batch = redis.call('XRANGE', KEYS[1], after, '+', 'COUNT', 200)
  if #batch == 0 then break end
  for _, e in ipairs(batch) do
    if deliveries_of(reads, e[1]) < limit then done = true; break end
    doomed[#doomed + 1] = e
  end
  after = '(' .. batch[#batch][1]
  if #batch < 200 then break end
end
if #doomed == 0 then
  if dirty then store_meta(KEYS[2], m) end
  return 0
end
for _, e in ipairs(doomed) do redis.call('XADD', KEYS[5], '*', unpack(e[2])) end
local first, last = doomed[1][1], doomed[#doomed][1]
local removed = trim_prefix(KEYS[1], s, m, last)
store_meta(KEYS[2], m)
redis.call('HINCRBY', KEYS[2], 'dead', #doomed)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', '10000', '*', 'at', now, 'session',
  'ackdeck-dead-letter', 'mode', 'dead', 'epoch', m.epoch, 'first', first, 'last', last,
  'acked', #doomed, 'preserved', s.length - removed, 'sha1', digest(doomed), 'dead', ARGV[3])
return #doomed
"""
)
