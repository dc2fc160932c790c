// The Redis backend's check-and-update operations, each one Lua script: Redis runs a script to
// the end before any other command, so a check and its update cannot interleave with another
// instance's. Numbers cross as decimal strings; a null field is an absent hash field.
import type { Redis } from 'ioredis';
import { SLACK_MS, WINDOW_MS } from './gcra.ts';

/** KEYS: key hash, hash index, id set. ARGV: id, name, hash, createdAt, revokedAt|'', rpm|'', tpm|''. */
const CREATE_KEY = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'id' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'hash' end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'name', ARGV[2], 'hash', ARGV[3], 'createdAt', ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'revokedAt', ARGV[5]) end
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'rpm', ARGV[6]) end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], 'tpm', ARGV[7]) end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return 'ok'`;

/** KEYS: key hash. ARGV: field, value pairs; '' removes the field (null). 0 when there is no such key. */
const SET_FIELDS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[1], ARGV[i])
  else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 1`;

/** KEYS: key hash. ARGV: revokedAt. 0 when there is no live key. */
const REVOKE_KEY = `
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'revokedAt') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'revokedAt', ARGV[1])
return 1`;

/** KEYS: key hash. ARGV: amount (may be negative). The new balance; nil when unlimited or unknown. */
const ADD_CREDITS = `
if redis.call('HEXISTS', KEYS[1], 'credits') == 0 then return false end
return redis.call('HINCRBY', KEYS[1], 'credits', ARGV[1])`;

/**
 * KEYS: key hash. ARGV: amount (>= 0). {1, balance after} when taken or unlimited, {0, balance}
 * when refused; an unknown key is refused with 0. The subtraction goes to HINCRBY as the caller's
 * digits, never as a Lua number, which Redis would format as 1e+15 past 14 digits.
 */
const RESERVE_CREDITS = `
local balance = redis.call('HGET', KEYS[1], 'credits')
if not balance then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {0, 0} end
  return {1, 0}
end
balance = tonumber(balance)
local amount = tonumber(ARGV[1])
if balance < amount then return {0, balance} end
if amount > 0 then redis.call('HINCRBY', KEYS[1], 'credits', '-' .. ARGV[1]) end
return {1, balance - amount}`;

/**
 * GCRA, line for line what gcra.ts computes. KEYS: the counter (its TAT, as %.17g so the double
 * round-trips exactly). ARGV: limit, cost, now (ms). {allowed, remaining, resetMs, retryAfterMs},
 * retryAfterMs -1 when the cost exceeds the limit and can never fit. The TAT is written with its
 * expiry (SET PX: the PEXPIRE in the same command) at the moment the counter is back to full, when
 * forgetting it changes nothing.
 */
const RATE_LIMIT = `
local limit = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local window = ${WINDOW_MS}
local slack = ${SLACK_MS}
local interval = window / limit
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then tat = math.max(tonumber(stored), now) end
local newTat = tat + cost * interval
local function remainingAt(t) return math.max(0, math.floor((window - (t - now) + slack) / interval)) end
if cost <= limit and newTat - now <= window + slack then
  local reset = math.ceil(newTat - now)
  if reset > 0 then redis.call('SET', KEYS[1], string.format('%.17g', newTat), 'PX', reset) end
  return {1, remainingAt(newTat), reset, 0}
end
local retry = -1
if cost <= limit then retry = math.max(1, math.ceil(newTat - now - window)) end
return {0, remainingAt(tat), math.ceil(tat - now), retry}`;

/** KEYS: the counter. ARGV: limit, cost, now (ms). gcra.ts's charge(): the TAT moves on, never refused. */
const CHARGE_RATE = `
local limit = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then tat = math.max(tonumber(stored), now) end
local newTat = tat + cost * (${WINDOW_MS} / limit)
local reset = math.ceil(newTat - now)
if reset > 0 then redis.call('SET', KEYS[1], string.format('%.17g', newTat), 'PX', reset) end
return reset`;

/**
 * KEYS: a semantic key's hash of entries. ARGV: entry id, entry JSON, max entries, TTL ms. Adds
 * the entry unless the hash is full (so a scan of it stays bounded), and renews the hash's TTL.
 */
const SEMANTIC_ADD = `
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

export interface ScriptedRedis extends Redis {
  storeSemanticAdd(entries: string, id: string, entry: string, max: string, ttlMs: string): Promise<0 | 1>;
  storeCreateKey(keyHash: string, hashIndex: string, idSet: string, ...args: string[]): Promise<'ok' | 'id' | 'hash'>;
  storeSetFields(keyHash: string, ...fieldValuePairs: string[]): Promise<0 | 1>;
  storeRevokeKey(keyHash: string, at: string): Promise<0 | 1>;
  storeAddCredits(keyHash: string, amount: string): Promise<number | null>;
  storeReserveCredits(keyHash: string, amount: string): Promise<[0 | 1, number]>;
  storeRateLimit(counter: string, limit: string, cost: string, now: string): Promise<[0 | 1, number, number, number]>;
  storeChargeRate(counter: string, limit: string, cost: string, now: string): Promise<number>;
}

/** ioredis sends each by EVALSHA and loads it on NOSCRIPT, so a restarted Redis needs nothing. */
export function defineScripts(client: Redis): ScriptedRedis {
  client.defineCommand('storeCreateKey', { numberOfKeys: 3, lua: CREATE_KEY });
  client.defineCommand('storeSetFields', { numberOfKeys: 1, lua: SET_FIELDS });
  client.defineCommand('storeRevokeKey', { numberOfKeys: 1, lua: REVOKE_KEY });
  client.defineCommand('storeAddCredits', { numberOfKeys: 1, lua: ADD_CREDITS });
  client.defineCommand('storeReserveCredits', { numberOfKeys: 1, lua: RESERVE_CREDITS });
  client.defineCommand('storeRateLimit', { numberOfKeys: 1, lua: RATE_LIMIT });
  client.defineCommand('storeChargeRate', { numberOfKeys: 1, lua: CHARGE_RATE });
  client.defineCommand('storeSemanticAdd', { numberOfKeys: 1, lua: SEMANTIC_ADD });
  return client as ScriptedRedis;
}
