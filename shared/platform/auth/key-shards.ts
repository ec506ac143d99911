import { keys, type ItemKey } from '../store/keys.ts';

/**
 * A key's rate window is counted on N items (shards): the record itself (shard 0) and N-1
 * copies of it (`keys.credentialShard`). DynamoDB takes at most 1,000 writes a second on
 * one item; every admitted request is one write on one shard, so a shard is sized for half
 * that, 500 a second: the other half is headroom for an uneven random spread, the
 * take-backs of refused requests, the once-a-minute stamps and the request bursts inside a
 * second. A key's N is therefore ceil(limit per minute ÷ 60 ÷ 500): 1 up to 30,000 a
 * minute (one item, as ever), 4 for the highest limit a key may have, 100,000 a minute
 * (1,667 a second, 417 a shard). docs/scale.md, "Hot items: the request gate".
 */
const SHARD_WRITES_PER_SECOND = 500;

/** How many shards a key with this limit gets; `writesPerSecond` is a shard's budget (scaled down in the load simulation). */
export function shardsFor(limitPerMinute: number, writesPerSecond = SHARD_WRITES_PER_SECOND): number {
  return Math.max(1, Math.ceil(limitPerMinute / 60 / writesPerSecond));
}

/**
 * Shard `index`'s share of the limit: the limit divided evenly, the remainder one each to
 * the first shards, so the shares add up to exactly the limit.
 */
export function shardShare(limit: number, shards: number, index: number): number {
  return Math.floor(limit / shards) + (index < limit % shards ? 1 : 0);
}

/** The item of shard `index` of the key whose value hashes to `hash`. */
export function shardKey(hash: string, index: number): ItemKey {
  return index === 0 ? keys.credential(hash) : keys.credentialShard(hash, index);
}

/** The shard items beside the record (shards 1…N-1). */
export function extraShardKeys(hash: string, shards: number): ItemKey[] {
  return Array.from({ length: Math.max(0, shards - 1) }, (_, i) => keys.credentialShard(hash, i + 1));
}

/** The hash a credential item (the record or a shard) is addressed by. */
export function credentialHash(key: ItemKey): string {
  return key.pk.slice('CREDENTIAL#'.length).split('#')[0]!;
}

/**
 * What this process last read of each key: its N and limit, so a request starts at a
 * random shard (instead of always the record); each shard's counts as last read, so the
 * request's write carries the shard's share as its condition (a full shard refuses it
 * without a count, so without a take-back); and until when each shard is known full, so a
 * request refuses there without a write at all. A hint only: every decision is checked
 * against the item the request read (a stale hint costs a write, never a wrong answer),
 * and a request whose hint names a shard that does not exist starts again at the record,
 * which always does. Bounded; forgetting costs one request that starts at the record.
 */
export interface KeyHint {
  shards: number;
  limit: number;
  /** Shard index → its counts as last read: the minute read in, that minute's and the one before's. */
  seen: Map<number, { minute: number; current: number; previous: number }>;
  /** Shard index → the epoch ms before which it has no room for one more request. */
  fullUntil: Map<number, number>;
}

const hints = new Map<string, KeyHint>();
const MAX_HINTS = 10_000;

export function keyHint(hash: string): KeyHint | undefined {
  return hints.get(hash);
}

export function rememberKey(hash: string, shards: number, limit: number): KeyHint {
  const known = hints.get(hash);
  if (known && known.shards === shards && known.limit === limit) return known;
  if (hints.size >= MAX_HINTS) hints.clear();
  const hint: KeyHint = { shards, limit, seen: new Map(), fullUntil: new Map() };
  hints.set(hash, hint);
  return hint;
}

const MINUTE_MS = 60_000;

/**
 * The most requests shard `index` can have counted in minute `minute` (as of `nowMs`) and
 * still admit one more, from what was last read of it: share − previous·(1 − elapsed),
 * rounded down. The previous minute as last read is at most what it is now (counts only
 * grow once a minute is over), so the cap is never below the true one but by rounding: a
 * request the cap refuses is checked against the item DynamoDB returns.
 */
export function shardCap(hint: KeyHint, index: number, nowMs: number): number {
  const minute = Math.floor(nowMs / MINUTE_MS);
  const seen = hint.seen.get(index);
  const previous = !seen ? 0 : seen.minute === minute ? seen.previous : seen.minute === minute - 1 ? seen.current : 0;
  const elapsed = (nowMs % MINUTE_MS) / MINUTE_MS;
  return Math.max(0, Math.floor(shardShare(hint.limit, hint.shards, index) - previous * (1 - elapsed) + 1e-9));
}

/**
 * When shard `index`, holding `current` admitted requests this minute and `previous` the
 * minute before, next has room for one: the first ms at which
 * previous·(1 − elapsed) + current + 1 ≤ share, or the minute's end when none does.
 */
export function roomAt(share: number, previous: number, current: number, nowMs: number): number {
  const minuteStart = nowMs - (nowMs % MINUTE_MS);
  if (current + 1 > share) return minuteStart + MINUTE_MS;
  if (previous <= 0) return nowMs;
  const elapsed = 1 - (share - current - 1) / previous;
  return Math.max(nowMs, minuteStart + Math.ceil(elapsed * MINUTE_MS));
}

/** The shards 0…n-1 but `except`, in a random order: where a request goes when its shard is full. */
export function otherShards(shards: number, except: number, random: () => number = Math.random): number[] {
  const order = Array.from({ length: shards }, (_, i) => i).filter((i) => i !== except);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}
