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
export const SHARD_WRITES_PER_SECOND = 500;

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
 * What this process last read of each key's N, so a request starts at a random shard
 * instead of always the record. A hint only: every share is computed from the N stored on
 * the item the request wrote, and a request whose hint names a shard that does not exist
 * starts again at the record, which always does. Bounded; forgetting costs one request
 * that starts at the record.
 */
const hints = new Map<string, number>();
const MAX_HINTS = 10_000;

export function shardHint(hash: string): number {
  return hints.get(hash) ?? 1;
}

export function rememberShards(hash: string, shards: number): void {
  if (hints.get(hash) === shards) return;
  if (hints.size >= MAX_HINTS) hints.clear();
  hints.set(hash, shards);
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
