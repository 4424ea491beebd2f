package redisstore

import "github.com/redis/go-redis/v9"

// The Lua scripts that make each change one atomic step in Redis: the
// changes that concurrent requests make go together, in one run of
// changeScript (see pipeline.go), each its own step in it, so that a batch
// pays once what running a script costs Redis. Every key
// of a store starts with "{prefix}:v3" (keyPrefix: the store's hash tag,
// then the layout's version), so that a script may touch a
// task, the age lists, the owner's index and the counters at once, also on
// Redis Cluster (where the whole store then lives on one shard).
//
// A task is a hash: t (the task, 1.0 ProtoJSON, less the task's own ids in
// its history's messages: see encodeTask), o (owner), q (quota), ok
// (the owner's index key), qh (its quota's name in hex, see stats), u (updated, Unix
// nanoseconds), b (its bytes), v (its version: a token unique to each
// write, chosen by the replica that makes it, so that a script that runs
// twice, when go-redis sends it again after its answer was lost, knows its
// own write and answers as the first run did; if another replica wrote the
// task in between, the retry is a conflict and the change is made again on
// what that replica wrote), s (its
// events so far), st (r running, i interrupted, t terminal), r (the
// replica that made it running, by the insert or a follow-up: the one that
// runs it), p (its push
// notification configs as JSON; absent when it has none), w (how many
// replicas stream it, see watchScript: a change of a task nobody watches
// publishes no events, they are neither encoded nor sent) and m (the key
// of the message that made it, see tasks.MessageKey, "" for none). The
// hash messages finds a task by that key, so that a message sent again
// makes no second task; its entry goes with the task, but for a task
// dropped to make room before its resend window ended: then it stays until
// the window ends, saying so ("\0<end of the window, ms> <holder> <task
// id>"), in a budget of its own (see remember and fileKeys). A holder is
// "a" (an anonymous caller) or "o", then its quota's name in hex. The
// sorted sets of those remembered messages, scored by the end of their
// window: gone:new, the message keys just remembered, each followed by
// its holder; gone:a and gone:o, anonymous callers' and owners' once
// filed, alike; gone:h:<holder> each holder's keys; and gone:top:a and
// gone:top:o score the holders by how many they hold.
//
// Every replica hears, on the channel, each event ("<id> <n> -\n<event>")
// and each end of a task that another replica than its runner made
// ("<id> <n> end:<state>:<replica>\n"; a cancel, an expired lease), after
// the events of the change that ended it, so that the runner stops; the
// replica that made the change has run its hooks already, and a runner
// that ends its own task tells nobody. The age lists are sorted sets
// scored by the update time in milliseconds; leases holds the running
// tasks, scored by when their replica's lease runs out; an owner's index
// is a set of ids (ListTasks orders the page itself, and a set costs Redis
// a fraction of a sorted set's work). The hash stats holds the store's
// counters (count, bytes) and each quota's, l:<qh> (its live tasks) and
// b:<qh> (their bytes), absent for a quota with no live task, and the
// same for all anonymous callers' live tasks (l:anon, b:anon): one hash, so
// that a script reads and writes all the counters it checks with one
// command each way (each redis.call costs more than the command it runs).
//
// The counters are checked as they are read, since whatever left them
// wrong (an operator's command, a restore of half a backup) would make
// every bound wrong with them: stats must be a hash, every counter a whole
// number, count what the age lists hold, bytes no more than its tasks
// could hold (max task bytes each), a quota's live tasks no more than the
// store's tasks and its bytes no more than its tasks could hold. Counters
// that fail are rebuilt from the lists and the task hashes (recount), as
// they are when the script meets a listed task whose hash is gone, and the
// script tells the replica why, for its log.

// prelude holds the functions the scripts share. ARGV[1] is always the
// key prefix, keyPrefix's, and ARGV[2] the most bytes one task may take.
const prelude = `
local P, maxTaskBytes = ARGV[1], tonumber(ARGV[2])
local STATS, MESSAGES, GONE = P .. ':stats', P .. ':messages', P .. ':gone'
-- ANON names the quota of all anonymous callers' live tasks (owner ""),
-- beside each one's own: no quota's name (hex) can be it.
local ANON = 'anon'
local function list(st)
	if st == 't' then return P .. ':terminal' elseif st == 'i' then return P .. ':interrupted' end
	return P .. ':running'
end
local function num(x) return tonumber(x) or 0 end
-- remembered reads an entry of messages: the end of its window, its
-- holder and its task, when it remembers the message of a dropped task;
-- nil for a stored task's.
local function remembered(v)
	if type(v) ~= 'string' or v:byte(1) ~= 0 then return nil end
	local ends, holder, id = v:match('^%z(%d+) (%S+) (.*)$')
	if ends then return {ends = tonumber(ends), holder = holder, id = id} end
end
-- untop counts n fewer messages for holder, in kind's gone:top.
local function untop(kind, holder, n)
	if tonumber(redis.call('ZINCRBY', GONE .. ':top:' .. kind, -n, holder)) <= 0 then
		redis.call('ZREM', GONE .. ':top:' .. kind, holder)
	end
end
-- forgetKey forgets the remembered message mk of holder, filed or not.
local function forgetKey(mk, holder)
	local kind = holder:sub(1, 1)
	if redis.call('ZREM', GONE .. ':' .. kind, mk .. holder) == 1 then
		redis.call('ZREM', GONE .. ':h:' .. holder, mk)
		untop(kind, holder, 1)
	else
		redis.call('ZREM', GONE .. ':new', mk .. holder)
	end
	redis.call('HDEL', MESSAGES, mk)
end
-- forgetAllKeys forgets every remembered message: messages is lost.
local function forgetAllKeys()
	for _, kind in ipairs({'a', 'o'}) do
		for _, holder in ipairs(redis.call('ZRANGE', GONE .. ':top:' .. kind, 0, -1)) do
			redis.call('DEL', GONE .. ':h:' .. holder)
		end
		redis.call('DEL', GONE .. ':' .. kind, GONE .. ':top:' .. kind)
	end
	redis.call('DEL', GONE .. ':new', MESSAGES)
end
-- whole is a counter's field as a number: 0 when it is absent, nil when it
-- is not a count (negative, fractional, not a number, or too long to be
-- exact).
local function whole(x)
	if not x then return 0 end
	if #x > 15 or not x:match('^%d+$') then return nil end
	return tonumber(x)
end
-- The store's counters and the quotas' that the script checks or changes,
-- as readStats found them, with the script's changes to them (dcount,
-- dbytes, and each quota's dlive and dused), written once by saveStats.
local count, bytes, dcount, dbytes = nil, nil, 0, 0
local quotas = {} -- by qh: {l, b (its fields), live, used, dlive, dused}
-- lost says why the counters lost track of a task (its hash is gone) since
-- they were read, and recounted why the script rebuilt them: the replica
-- logs it.
local lost, recounted
-- recount rebuilds the counters from the age lists and the task hashes,
-- and takes the ids whose hash is gone out of the lists, the leases and
-- the messages. A
-- task's bytes count as its b field says, but at most maxTaskBytes; a key
-- of another type where a task's hash belongs stays listed and counted,
-- with no bytes, for readers to report (and eviction to drop). The
-- script's own changes so far are in the hashes and lists already, so its
-- deltas start again from 0.
local function recount(why)
	local c, b, live, messages = 0, 0, {}, {}
	for _, st in ipairs({'r', 'i', 't'}) do
		for _, id in ipairs(redis.call('ZRANGE', list(st), 0, -1)) do
			local tk = P .. ':t:' .. id
			local f = redis.pcall('HMGET', tk, 'b', 'qh', 'o', 'm')
			if not f.err and not f[1] and not f[2] and redis.call('EXISTS', tk) == 0 then
				redis.call('ZREM', list(st), id)
				redis.call('ZREM', P .. ':leases', id)
			else
				local size = not f.err and math.min(whole(f[1]) or 0, maxTaskBytes) or 0
				c, b = c + 1, b + size
				if not f.err and f[4] and f[4] ~= '' then messages[#messages + 1] = {f[4], id} end
				if st ~= 't' and not f.err and f[2] then
					local q = live[f[2]] or {0, 0}
					live[f[2]] = {q[1] + 1, q[2] + size}
					if f[3] == '' then
						local a = live[ANON] or {0, 0}
						live[ANON] = {a[1] + 1, a[2] + size}
					end
				end
			end
		end
	end
	-- The messages' entries are those of the tasks listed, so that one goes
	-- with its task, also one removed behind the store's back, and those
	-- remembered of dropped tasks.
	local kept = {}
	for _, set in ipairs({'a', 'o', 'new'}) do
		for _, member in ipairs(redis.call('ZRANGE', GONE .. ':' .. set, 0, -1)) do
			local mk = member:sub(1, 16)
			local v = redis.pcall('HGET', MESSAGES, mk)
			if remembered(v) then kept[#kept + 1] = {mk, v} end
		end
	end
	redis.call('DEL', MESSAGES)
	for _, m in ipairs(kept) do redis.call('HSET', MESSAGES, m[1], m[2]) end
	for _, m in ipairs(messages) do redis.call('HSET', MESSAGES, m[1], m[2]) end
	redis.call('DEL', STATS)
	redis.call('HSET', STATS, 'count', c, 'bytes', b)
	for qh, q in pairs(live) do redis.call('HSET', STATS, 'l:' .. qh, q[1], 'b:' .. qh, q[2]) end
	count, bytes, dcount, dbytes = c, b, 0, 0
	for qh, q in pairs(quotas) do
		local l = live[qh] or {0, 0}
		q.live, q.used, q.dlive, q.dused = l[1], l[2], 0, 0
	end
	lost, recounted = nil, why
end
-- impossible says why counters as read (st: HMGET's answer for fields,
-- count, bytes and perhaps a quota's two) cannot be true, or nil. The count
-- is checked against the lists when first read (listed), taking into
-- account what the script changed in them since.
local function impossible(st, fields, listed)
	if st.err then return 'stats is not a hash' end
	for i, field in ipairs(fields) do
		if not whole(st[i]) then return field .. ' is not a whole number' end
	end
	local c, b = whole(st[1]), whole(st[2])
	if listed then
		local n = -dcount
		for _, s in ipairs({'r', 'i', 't'}) do n = n + redis.call('ZCARD', list(s)) end
		if c ~= n then return 'count is ' .. c .. ', but the lists hold ' .. n .. ' tasks' end
	end
	if b > c * maxTaskBytes then return 'bytes is ' .. b .. ', more than ' .. c .. ' tasks may hold' end
	for i = 3, #fields, 2 do
		local l, u = whole(st[i]), whole(st[i + 1])
		if l > c or u > l * maxTaskBytes then
			return fields[i] .. ' is ' .. l .. ' and ' .. fields[i + 1] .. ' ' .. u .. ', more than ' .. c .. ' tasks hold'
		end
	end
end
-- readStats reads the store's counters, and the quotas named (qh's, and
-- qh2's when given: an anonymous caller's client and ANON) that are not
-- read already, in one command, recounting them when they cannot be
-- true; it answers the quotas.
local function readStats(qh, qh2)
	local fields = {'count', 'bytes'}
	for _, name in ipairs({qh, qh2}) do
		if name and not quotas[name] then fields[#fields + 1], fields[#fields + 2] = 'l:' .. name, 'b:' .. name end
	end
	if count and #fields == 2 then return qh and quotas[qh], qh2 and quotas[qh2] end
	local st = redis.pcall('HMGET', STATS, unpack(fields))
	local why = impossible(st, fields, not count)
	if why then
		recount(why)
		st = redis.call('HMGET', STATS, unpack(fields))
	end
	count, bytes = whole(st[1]), whole(st[2])
	for i = 3, #fields, 2 do
		quotas[fields[i]:sub(3)] = {l = fields[i], b = fields[i + 1], live = whole(st[i]), used = whole(st[i + 1]), dlive = 0, dused = 0}
	end
	return qh and quotas[qh], qh2 and quotas[qh2]
end
local function saveStats()
	if lost then
		recount(lost)
	elseif not count and (dcount ~= 0 or dbytes ~= 0) then -- only drops: nothing was read
		readStats()
	end
	if not count then return end
	local set, gone = {}, {}
	if dcount ~= 0 or dbytes ~= 0 then set = {'count', count + dcount, 'bytes', bytes + dbytes} end
	for _, q in pairs(quotas) do
		if q.dlive ~= 0 or q.dused ~= 0 then
			if q.live + q.dlive > 0 then
				local n = #set
				set[n + 1], set[n + 2], set[n + 3], set[n + 4] = q.l, q.live + q.dlive, q.b, q.used + q.dused
			else -- its last live task ended
				gone[#gone + 1], gone[#gone + 2] = q.l, q.b
			end
		end
	end
	if #set > 0 then redis.call('HSET', STATS, unpack(set)) end
	if #gone > 0 then redis.call('HDEL', STATS, unpack(gone)) end
end
-- forget takes the id of a task whose hash is gone out of the lists and,
-- if it was in one (or counted says it was), out of the count; what else
-- it counted is unknown, so the counters are recounted (saveStats).
local function forget(id, counted)
	local n = 0
	for _, st in ipairs({'t', 'i', 'r'}) do n = n + redis.call('ZREM', list(st), id) end
	redis.call('ZREM', P .. ':leases', id)
	if counted or n > 0 then
		dcount = dcount - 1
		lost = 'task ' .. id .. ' was listed, but its hash is gone'
	end
end
-- drop removes a stored terminal task (evictions and sweeps drop no other:
-- it holds no lease and no place in a quota) and everything that counts it
-- (the store's counters through saveStats). An id whose hash is gone
-- (removed outside the store: an operator's DEL, maxmemory eviction under
-- a policy that may evict any key), or whose key is no task's hash, is
-- taken out of the lists all the same, so that eviction moves on, and the
-- counters are recounted; Scan takes it out of its owner's index. popped
-- says that evict took the id out of the terminal list already. keep, when
-- given, keeps the message that made the task, with the task's id, holder
-- and update time (an eviction's: see remember); otherwise it goes.
local function drop(id, popped, keep)
	local tk = P .. ':t:' .. id
	local f = redis.pcall('HMGET', tk, 'ok', 'b', 'm', 'qh', 'o', 'u')
	if f.err or not f[1] then
		redis.call('DEL', tk)
		forget(id, popped)
		return
	end
	redis.call('SREM', f[1], id)
	if f[3] and f[3] ~= '' then
		if keep then
			local kind = 'o'
			if f[5] == '' then kind = 'a' end
			keep(f[3], id, kind .. (f[4] or ''), num(f[6]))
		else
			redis.call('HDEL', MESSAGES, f[3])
		end
	end
	dcount, dbytes = dcount - 1, dbytes - num(f[2])
	redis.call('DEL', tk)
	if not popped then redis.call('ZREM', P .. ':terminal', id) end
end
-- errorText is the text of an error a failed redis.call raised: Redis 7.2
-- on raises a table {err = "CODE ..."}, earlier versions a string.
local function errorText(raised)
	return type(raised) == 'table' and raised.err or tostring(raised)
end
-- refusal is an error's text (Redis 6.2: "@user_script: <line>: -CODE
-- ...\r\n"; 7.0 on: "CODE ...") as Redis's own reply, when it is a
-- refusal of the server's (a read-only replica, no memory left, a failed
-- save), not about the data; nil otherwise.
local function refusal(why)
	local code, rest = why:match('^%-?(%u+)(.*)')
	if not code then code, rest = why:match('^@?[%w_]+:%s*%d+:%s*%-?(%u+)(.*)') end
	local refusals = {READONLY = true, OOM = true, MISCONF = true, MASTERDOWN = true, NOREPLICAS = true}
	if code and refusals[code] then return code .. rest:gsub('%s+$', '') end
end
`

// changeScript makes a batch of inserts, updates and settlements, one
// after the other, and answers each one's outcome, in order, and then, if
// it recounted the counters, {"recounted", why}. ARGV: prefix, max task
// bytes, max tasks, max live per owner, max live bytes per owner, max
// bytes, channel, replica, max live per anonymous client, max live bytes
// per anonymous client, max live of all anonymous callers, max live bytes
// of all anonymous callers, the resend window in milliseconds, then each
// change: "i", "u" or "s", how many arguments it has, its arguments.
//
// An insert's arguments: id, owner, owner key, quota (hex), updated,
// bytes, state mark, task, score, quota, lease, push configs, version,
// message key ("" for none: see tasks.MessageKey). It answers {"ok"} (also
// when it finds the task it stored itself, run a second time), {"dup"},
// {"resent", the task the message made}, {"dropped", the task the message
// made, dropped since}, or the share or budget it would take past its
// bound: {"quota-tasks"}, {"quota-bytes"}, {"client-tasks"},
// {"client-bytes"}, {"anon-tasks"}, {"anon-bytes"}, {"full-tasks"} or
// {"full-bytes"}. A message is found while its task is live, and for the
// resend window after the task's last update, also once the task is
// dropped to make room (evict keeps its message: see remember).
//
// A settlement ends a task whose insert failed with its outcome unknown,
// as never started (see tasks.NeverStarted): if the insert has not run,
// the ended task takes its place (a copy of the insert that runs later
// finds it, and stores nothing); if it ran and nothing changed the task
// since, the task ends (its events published), its message forgotten.
// Its arguments: id, the insert's version, owner, owner key, quota (hex),
// quota, updated, bytes, the ended task, score, version, the final event.
// It answers {"ok"}, {"changed"} (another change came first: a cancel, an
// expiry), {"full-tasks"} or {"full-bytes"}.
//
// An update writes a task changed by a callback, if nobody wrote it since
// version, and publishes its events, then its end when it became terminal
// (and another replica than its runner ended it). Its arguments: id,
// version, updated, state mark, task, bytes added, score, the task's state
// number, the lease, the push configs ("" for none, "=" when the change
// left them as they were), how many events the change has (-1: none were
// built, since the caller guessed nobody watches the task), the new
// version, then the events' payloads. It answers {"ok", events so far, how
// many replicas stream the task} (also when it finds its own write, run a
// second time), or {"watched"} (events are wanted: nothing was written),
// {"missing"}, {"conflict"}, or the share or budget its bytes would take
// past its bound: {"quota-bytes"}, {"client-bytes"}, {"anon-bytes"} or
// {"full-bytes"}.
//
// A change that fails (a key of another type where the store's should be)
// answers {"error", why}, and may be half made, as a script that fails
// is; the others are made all the same. But a refusal
// of the server's own (a read-only replica, no memory left, a failed save)
// fails the whole batch with it, so that go-redis sees it (to follow a
// failover): it comes at the batch's first write, before anything is
// written.
var changeScript = redis.NewScript(prelude + `
local maxTasks, maxLive, maxLiveBytes, maxBytes = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local channel, replica = ARGV[7], ARGV[8]
local maxLiveClient, maxLiveBytesClient = tonumber(ARGV[9]), tonumber(ARGV[10])
local maxLiveAnon, maxLiveBytesAnon = tonumber(ARGV[11]), tonumber(ARGV[12])
local windowMs = tonumber(ARGV[13])
-- written holds the tasks this run writes: an eviction passes over them,
-- so that when go-redis sends the batch again (its answer lost), each
-- change finds its own write and answers as the first run did.
local written = {}
-- remember keeps the message key mk of task id, which a holder's message
-- made and which was last updated at updated (ns), dropped to make room:
-- until the resend window ends. It is filed, and the bounds kept, a batch
-- at a time, as the store is swept (fileKeys): two commands here, where
-- the task's entry would have gone with one.
local function remember(mk, id, holder, updated)
	local ends = math.floor(updated / 1e6) + windowMs
	redis.call('HSET', MESSAGES, mk, '\0' .. ends .. ' ' .. holder .. ' ' .. id)
	redis.call('ZADD', GONE .. ':new', ends, mk .. holder)
end
-- evict drops the terminal task updated longest ago, but none in written;
-- the message that made it is remembered.
local function evict()
	local skipped = {}
	local oldest = redis.call('ZPOPMIN', P .. ':terminal')
	while oldest[1] and written[oldest[1]] do
		skipped[#skipped + 1] = oldest
		oldest = redis.call('ZPOPMIN', P .. ':terminal')
	end
	for _, s in ipairs(skipped) do redis.call('ZADD', P .. ':terminal', s[2], s[1]) end
	if not oldest[1] then return false end
	drop(oldest[1], true, remember)
	return true
end
-- room makes delta more bytes fit the store's budget (readStats first).
local function room(delta)
	while bytes + dbytes + delta > maxBytes do
		if not evict() then return false end
	end
	return true
end
-- overShare names the share that live more live tasks and size more bytes
-- would take past its bound, or nil: quota q's (an anonymous client's
-- when anon), and for an anonymous caller all anonymous callers' (pool).
local function overShare(anon, q, pool, live, size)
	if not anon then
		if q.live + q.dlive + live > maxLive then return 'quota-tasks' end
		if q.used + q.dused + size > maxLiveBytes then return 'quota-bytes' end
		return nil
	end
	if q.live + q.dlive + live > maxLiveClient then return 'client-tasks' end
	if q.used + q.dused + size > maxLiveBytesClient then return 'client-bytes' end
	if pool.live + pool.dlive + live > maxLiveAnon then return 'anon-tasks' end
	if pool.used + pool.dused + size > maxLiveBytesAnon then return 'anon-bytes' end
end
-- hold counts live more live tasks and size more bytes in quota q and pool
-- (nil but for an anonymous caller).
local function hold(q, pool, live, size)
	q.dlive, q.dused = q.dlive + live, q.dused + size
	if pool then pool.dlive, pool.dused = pool.dlive + live, pool.dused + size end
end
-- insert: its arguments are ARGV[o + 1] on.
local function insert(o)
	local id, ok, qh, size, st = ARGV[o + 1], ARGV[o + 3], ARGV[o + 4], tonumber(ARGV[o + 6]), ARGV[o + 7]
	local mk = ARGV[o + 14]
	local tk = P .. ':t:' .. id
	local stored = redis.call('HGET', tk, 'v')
	if stored then
		if stored == ARGV[o + 13] then
			written[id] = true -- as in the run that wrote it
			return {'ok'}
		end
		return {'dup'}
	end
	-- The message sent before, its task still stored: nothing is written.
	-- An entry whose task is gone (removed behind the store's back) is
	-- taken over.
	-- The message's entry is taken first, in one command; a refused insert
	-- gives it back (unkeep).
	local kept = false
	if mk ~= '' then
		local taken = redis.pcall('HSETNX', MESSAGES, mk, id)
		if type(taken) == 'table' then -- not a hash: rebuilt from the tasks
			forgetAllKeys()
			lost = 'messages is not a hash'
			taken = redis.call('HSETNX', MESSAGES, mk, id)
		end
		if taken == 0 then
			local first = redis.call('HGET', MESSAGES, mk)
			local gone, now = remembered(first), tonumber(ARGV[o + 9])
			if gone and gone.ends >= now then return {'dropped', gone.id} end
			if gone then
				forgetKey(mk, gone.holder) -- its window ended
			else
				local ftk = P .. ':t:' .. first
				local f = redis.pcall('HMGET', ftk, 'st', 'u')
				if f.err or (not f[1] and redis.call('EXISTS', ftk) == 1) or
					(f[1] and (f[1] ~= 't' or math.floor(num(f[2]) / 1e6) + windowMs >= now)) then
					return {'resent', first}
				end
				-- Its window ended, or its task is gone: the message is new again.
				if f[1] then redis.call('HSET', ftk, 'm', '') end
			end
			redis.call('HSET', MESSAGES, mk, id)
		end
		kept = true
	end
	local function unkeep(answer)
		if kept then redis.call('HDEL', MESSAGES, mk) end
		return answer
	end
	local q, pool
	if st ~= 't' then
		if ARGV[o + 2] == '' then q, pool = readStats(qh, ANON) else q = readStats(qh) end
		local over = overShare(pool ~= nil, q, pool, 1, size)
		if over then return unkeep({over}) end
	else
		readStats()
	end
	if count + dcount >= maxTasks and not evict() then return unkeep({'full-tasks'}) end
	if not room(size) then return unkeep({'full-bytes'}) end
	written[id] = true
	redis.call('HSET', tk, 't', ARGV[o + 8], 'o', ARGV[o + 2], 'q', ARGV[o + 10], 'ok', ok, 'qh', qh, 'u', ARGV[o + 5],
		'b', ARGV[o + 6], 'v', ARGV[o + 13], 's', '0', 'st', st, 'r', replica, 'm', mk)
	if ARGV[o + 12] ~= '' then redis.call('HSET', tk, 'p', ARGV[o + 12]) end
	-- A recount since the entry was taken rebuilt the entries from the
	-- tasks then listed, which this one was not yet.
	if kept and recounted then redis.call('HSET', MESSAGES, mk, id) end
	redis.call('ZADD', list(st), ARGV[o + 9], id)
	redis.call('SADD', ok, id)
	if st == 'r' then redis.call('ZADD', P .. ':leases', ARGV[o + 11], id) end
	dcount, dbytes = dcount + 1, dbytes + size
	if q then hold(q, pool, 1, size) end
	return {'ok'}
end
-- update: its arguments are ARGV[o + 1] to ARGV[o + n].
local function update(o, n)
	local id, version, st, delta = ARGV[o + 1], ARGV[o + 2], ARGV[o + 4], tonumber(ARGV[o + 6])
	local tk = P .. ':t:' .. id
	local f = redis.call('HMGET', tk, 'v', 'st', 'b', 'qh', 's', 'r', 'w', 'o')
	if not f[1] and redis.call('EXISTS', tk) == 0 then
		-- Dropped, or removed behind the store's back: then out of the lists.
		forget(id, false)
		return {'missing'}
	end
	if f[1] ~= version then -- or it has no version: the replica reads it, and finds it corrupt
		if f[1] == ARGV[o + 12] then
			written[id] = true -- as in the run that wrote it
			return {'ok', num(f[5]), num(f[7])}
		end
		return {'conflict'}
	end
	local oldst, oldb, seq = f[2], num(f[3]), num(f[5])
	local events = tonumber(ARGV[o + 11])
	if events < 0 then
		-- Before any eviction: nothing is written this time.
		if num(f[7]) > 0 then return {'watched'} end
		events = 0
	end
	-- The counters, read when the change is checked against them or
	-- changes them: its quota's too while the task is live.
	local wasLive, q, pool = oldst ~= 't'
	written[id] = true -- from here on: it may be written, and must not be evicted for room
	if delta > 0 or (wasLive and (st == 't' or delta ~= 0)) then
		if wasLive and f[8] == '' then
			q, pool = readStats(f[4], ANON)
		elseif wasLive then
			q = readStats(f[4])
		else
			readStats()
		end
	end
	if delta > 0 then
		local over = q and overShare(pool ~= nil, q, pool, 0, delta)
		if over then return {over} end
		if not room(delta) then return {'full-bytes'} end
	end
	if st == 'r' and oldst ~= 'r' then -- it starts running here: this replica runs it
		redis.call('HSET', tk, 't', ARGV[o + 5], 'u', ARGV[o + 3], 'b', oldb + delta, 'v', ARGV[o + 12], 's', seq + events, 'st', st, 'r', replica)
	else
		redis.call('HSET', tk, 't', ARGV[o + 5], 'u', ARGV[o + 3], 'b', oldb + delta, 'v', ARGV[o + 12], 's', seq + events, 'st', st)
	end
	local push = ARGV[o + 10]
	if push == '' then redis.call('HDEL', tk, 'p') elseif push ~= '=' then redis.call('HSET', tk, 'p', push) end
	if oldst ~= st then redis.call('ZREM', list(oldst), id) end
	redis.call('ZADD', list(st), ARGV[o + 7], id)
	-- A running task's lease moves on with Renew; it is taken when the task
	-- starts running here, and given up when it stops.
	if st == 'r' and oldst ~= 'r' then redis.call('ZADD', P .. ':leases', 'GT', ARGV[o + 9], id)
	elseif st ~= 'r' and oldst == 'r' then redis.call('ZREM', P .. ':leases', id) end
	dbytes = dbytes + delta
	if q then
		if st == 't' then hold(q, pool, -1, -oldb) else hold(q, pool, 0, delta) end
	end
	for i = 1, n - 12 do
		redis.call('PUBLISH', channel, id .. ' ' .. (seq + i) .. ' -\n' .. ARGV[o + 12 + i])
	end
	if wasLive and st == 't' and f[6] ~= replica then
		redis.call('PUBLISH', channel, id .. ' ' .. (seq + events) .. ' end:' .. ARGV[o + 8] .. ':' .. replica .. '\n')
	end
	return {'ok', seq + events, num(f[7])}
end
-- settle: its arguments are ARGV[o + 1] on.
local function settle(o)
	local id, inserted, size, version = ARGV[o + 1], ARGV[o + 2], tonumber(ARGV[o + 8]), ARGV[o + 11]
	local tk = P .. ':t:' .. id
	local f = redis.call('HMGET', tk, 'v', 'st', 'b', 'qh', 'o', 'm', 's', 'w')
	if f[1] == version then
		written[id] = true -- as in the run that wrote it
		return {'ok'}
	end
	if not f[1] then
		if redis.call('EXISTS', tk) == 1 then return {'changed'} end -- no task's hash: for readers to report
		-- The insert has not run: the ended task takes its place, so that it never does.
		readStats()
		if count + dcount >= maxTasks and not evict() then return {'full-tasks'} end
		if not room(size) then return {'full-bytes'} end
		written[id] = true
		redis.call('HSET', tk, 't', ARGV[o + 9], 'o', ARGV[o + 3], 'q', ARGV[o + 6], 'ok', ARGV[o + 4], 'qh', ARGV[o + 5],
			'u', ARGV[o + 7], 'b', size, 'v', version, 's', '0', 'st', 't', 'r', replica, 'm', '')
		redis.call('ZADD', P .. ':terminal', ARGV[o + 10], id)
		redis.call('SADD', ARGV[o + 4], id)
		dcount, dbytes = dcount + 1, dbytes + size
		return {'ok'}
	end
	if f[1] ~= inserted then return {'changed'} end
	-- The insert ran, and nothing changed its task since, nor ran it.
	written[id] = true
	local oldst, oldb, seq = f[2], num(f[3]), num(f[7])
	local q, pool
	if oldst == 't' then
		readStats()
	elseif f[5] == '' then
		q, pool = readStats(f[4], ANON)
	else
		q = readStats(f[4])
	end
	if size > oldb and not room(size - oldb) then return {'full-bytes'} end
	local watched = num(f[8]) > 0
	if watched then seq = seq + 1 end
	redis.call('HSET', tk, 't', ARGV[o + 9], 'u', ARGV[o + 7], 'b', size, 'v', version, 's', seq, 'st', 't', 'm', '')
	redis.call('HDEL', tk, 'p') -- as the ended task has none
	redis.call('ZREM', list(oldst), id)
	redis.call('ZADD', P .. ':terminal', ARGV[o + 10], id)
	redis.call('ZREM', P .. ':leases', id)
	if f[6] and f[6] ~= '' and redis.call('HGET', MESSAGES, f[6]) == id then redis.call('HDEL', MESSAGES, f[6]) end
	dbytes = dbytes + size - oldb
	if q then hold(q, pool, -1, -oldb) end
	if watched then redis.call('PUBLISH', channel, id .. ' ' .. seq .. ' -\n' .. ARGV[o + 12]) end
	return {'ok'}
end
local changes = {i = insert, u = update, s = settle}
local out, o = {}, 13
while o < #ARGV do
	local n = tonumber(ARGV[o + 2])
	local change = changes[ARGV[o + 1]]
	local done, answer = pcall(change, o + 2, n)
	if not done then
		local why = errorText(answer)
		local refused = refusal(why)
		if refused then return redis.error_reply(refused) end
		answer = {'error', why}
	end
	out[#out + 1] = answer
	o = o + 2 + n
end
saveStats()
if recounted then out[#out + 1] = {'recounted', recounted} end
return out
`)

// dropOldScript drops terminal tasks updated before a time, files the
// messages remembered since the last batch (fileKeys), and forgets those
// whose window ended. ARGV: prefix, max task bytes, cutoff score, most to
// drop (and to forget), now (score), the most messages remembered apart
// from their tasks, the most of them anonymous callers'. It answers {how
// many it dropped}, and why it recounted the counters if it did.
var dropOldScript = redis.NewScript(prelude + `
-- forgetFiled forgets the filed messages mks of holder (popped: taken out
-- of its set already). An entry of messages is taken out only while it
-- still remembers: a replica of an earlier build may have rebuilt
-- messages without it, and a task of that message taken the key since.
local function forgetFiled(holder, mks, popped)
	local kind, members = holder:sub(1, 1), {}
	for i, mk in ipairs(mks) do members[i] = mk .. holder end
	redis.call('ZREM', GONE .. ':' .. kind, unpack(members))
	if not popped then redis.call('ZREM', GONE .. ':h:' .. holder, unpack(mks)) end
	untop(kind, holder, #mks)
	local entries, gone = redis.pcall('HMGET', MESSAGES, unpack(mks)), {}
	if entries.err then return end -- not a hash: the next insert rebuilds it
	for i, v in ipairs(entries) do
		if remembered(v) then gone[#gone + 1] = mks[i] end
	end
	if #gone > 0 then redis.call('HDEL', MESSAGES, unpack(gone)) end
end
-- fileKeys files the messages remembered since it last ran (gone:new) by
-- holder, then keeps the bounds: at most maxKeys messages, anonymous
-- callers' at most maxAnon. Past a bound, the holder that holds the most,
-- among those the bound counts, loses its oldest, down to the next
-- holder's count at most, and again, in as few commands as it can. So one
-- caller's traffic takes no message of a caller that holds fewer, and
-- anonymous callers none of an owner's.
local function fileKeys(maxKeys, maxAnon)
	local new = redis.call('ZPOPMIN', GONE .. ':new', 1000) -- a thousand at a time: Lua unpacks no more
	while #new > 0 do
		local byHolder, byKind = {}, {a = {}, o = {}}
		for i = 1, #new, 2 do
			local mk, holder, ends = new[i]:sub(1, 16), new[i]:sub(17), new[i + 1]
			local h = byHolder[holder] or {}
			h[#h + 1], h[#h + 2] = ends, mk
			byHolder[holder] = h
			local k = byKind[holder:sub(1, 1)]
			k[#k + 1], k[#k + 2] = ends, new[i]
		end
		for holder, h in pairs(byHolder) do
			redis.call('ZADD', GONE .. ':h:' .. holder, unpack(h))
			redis.call('ZINCRBY', GONE .. ':top:' .. holder:sub(1, 1), #h / 2, holder)
		end
		for kind, k in pairs(byKind) do
			if #k > 0 then redis.call('ZADD', GONE .. ':' .. kind, unpack(k)) end
		end
		new = redis.call('ZPOPMIN', GONE .. ':new', 1000)
	end
	local anon = redis.call('ZCARD', GONE .. ':a')
	local all = anon + redis.call('ZCARD', GONE .. ':o')
	while anon > maxAnon or all > maxKeys do
		local pools, excess = {'a', 'o'}, all - maxKeys
		if anon > maxAnon then pools, excess = {'a'}, anon - maxAnon end
		local victim, most, next = nil, 0, 0
		for _, pool in ipairs(pools) do
			local top = redis.call('ZREVRANGE', GONE .. ':top:' .. pool, 0, 1, 'WITHSCORES')
			for i = 1, #top, 2 do
				local n = tonumber(top[i + 1])
				if n > most then
					victim, most, next = top[i], n, most
				elseif n > next then
					next = n
				end
			end
		end
		if not victim then break end -- nobody counted: what is held goes with its age
		local popped = redis.call('ZPOPMIN', GONE .. ':h:' .. victim, math.min(excess, math.max(most - next, 1), 1000))
		if #popped == 0 then
			redis.call('ZREM', GONE .. ':top:' .. victim:sub(1, 1), victim)
		else
			local mks = {}
			for i = 1, #popped, 2 do mks[#mks + 1] = popped[i] end
			forgetFiled(victim, mks, true)
			if victim:sub(1, 1) == 'a' then anon = anon - #mks end
			all = all - #mks
		end
	end
end
local ids = redis.call('ZRANGEBYSCORE', P .. ':terminal', '-inf', '(' .. ARGV[3], 'LIMIT', 0, tonumber(ARGV[4]))
for _, id in ipairs(ids) do drop(id, false) end
fileKeys(tonumber(ARGV[6]), tonumber(ARGV[7]))
for _, kind in ipairs({'a', 'o'}) do
	local ended = redis.call('ZRANGEBYSCORE', GONE .. ':' .. kind, '-inf', '(' .. ARGV[5], 'LIMIT', 0, tonumber(ARGV[4]))
	local byHolder = {}
	for _, member in ipairs(ended) do
		local holder = member:sub(17)
		local mks = byHolder[holder] or {}
		mks[#mks + 1] = member:sub(1, 16)
		byHolder[holder] = mks
	end
	for holder, mks in pairs(byHolder) do forgetFiled(holder, mks, false) end
end
saveStats()
return {#ids, recounted}
`)

// readScript reads a task's hash for a replica (KEYS: the task; ARGV: the
// most bytes its fields may take together). It answers the fields
// parseRecord reads, in its order, {} for a task that is not stored, or
// {"corrupt", why} for a key that is no hash or whose fields take more:
// their lengths are checked before they are read, so that a record too
// large never reaches the replica.
var readScript = redis.NewScript(`
local k, limit = KEYS[1], tonumber(ARGV[1])
local n = redis.pcall('HSTRLEN', k, 't')
if type(n) ~= 'number' then return {'corrupt', 'it is no hash'} end
n = n + redis.call('HSTRLEN', k, 'p')
if n <= limit then
	local f = redis.call('HMGET', k, 't', 'o', 'q', 'ok', 'u', 'b', 'v', 's', 'w', 'p')
	if not f[1] and redis.call('EXISTS', k) == 0 then return {} end
	for i = 2, 9 do if f[i] then n = n + #f[i] end end
	if n <= limit then return f end
end
return {'corrupt', 'its fields take ' .. n .. ' bytes or more, over the ' .. limit .. ' a task may'}
`)

// watchScript counts a replica in or out of those that stream a task (KEYS:
// the task; ARGV: 1 or -1, the replica), in the task's own hash, so that
// the update script reads it with the task and it goes when the task goes:
// w counts the replicas, each marked by a field w:<replica>, so that a
// script run twice (go-redis sends it again when its answer is lost)
// counts a replica once. A task that is gone is not brought back by it. It
// answers the new count, or 0 for a task that is gone.
var watchScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local mark = 'w:' .. ARGV[2]
if ARGV[1] == '1' then
	if redis.call('HSETNX', KEYS[1], mark, 1) == 1 then return redis.call('HINCRBY', KEYS[1], 'w', 1) end
elseif redis.call('HDEL', KEYS[1], mark) == 1 then
	return redis.call('HINCRBY', KEYS[1], 'w', -1)
end
return tonumber(redis.call('HGET', KEYS[1], 'w')) or 0
`)
