import { ConditionFailed, table } from '../store/table.ts';
import { rateWindowAttribute, type ItemKey } from '../store/keys.ts';
import { epochMinute, staleWindowAttributes } from './rate-window.ts';

interface CountOptions {
  /** Only count on an existing item (credentials): a missing item means an unknown key. */
  mustExist: boolean;
  /** Let the item expire this long after its last request (per-IP windows). */
  ttlSeconds?: number;
}

/**
 * Adds one request to the item's current-minute counter and returns the whole item as it
 * is after the write, in a single round trip (per-IP and per-token windows; keys use
 * presentShard). Returns undefined when `mustExist` and
 * the item is absent (an unknown or deleted key).
 */
export async function countRequest(
  key: ItemKey,
  nowMs: number,
  options: CountOptions,
): Promise<Record<string, unknown> | undefined> {
  const sets: string[] = [];
  const values: Record<string, unknown> = { ':one': 1 };
  if (options.ttlSeconds !== undefined) {
    sets.push('expires_at = :expires');
    values[':expires'] = Math.ceil(nowMs / 1000) + options.ttlSeconds;
  }
  try {
    const out = await table.update({
      Key: key,
      UpdateExpression: `${sets.length ? `SET ${sets.join(', ')} ` : ''}ADD #window :one`,
      ConditionExpression: options.mustExist ? 'attribute_exists(pk)' : undefined,
      ExpressionAttributeNames: { '#window': rateWindowAttribute(epochMinute(nowMs)) },
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    });
    const item = out ?? {};
    const stale = staleWindowAttributes(item, nowMs);
    if (stale.length) await dropWindows(key, stale);
    return item;
  } catch (error) {
    if (options.mustExist && error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

/** The rules of a credential's admission that its stored record alone decides, as a condition. */
export interface CredentialCondition {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

export type PresentedShard =
  /** No such key (never was, or deleted), or no such shard of it. */
  | { outcome: 'unknown' }
  /** The record's own rules refuse the request, or the shard's share is used up this minute: nothing was written, `item` is the shard as it is. */
  | { outcome: 'refused'; item: Record<string, unknown> }
  /** Counted in the shard's window: `item` as it is now. */
  | { outcome: 'counted'; item: Record<string, unknown> };

/**
 * Presents a key at one shard of its rate window (key-shards.ts: the record itself, or a
 * copy of it): one conditional UpdateItem that counts the request in the shard's window
 * only if the record's rules (allowlist, origin, public-key capability, scope) admit the
 * request and, given a `cap` (the shard's share), only while the shard's current minute
 * holds fewer. The rules are checked by DynamoDB, so a refused request writes nothing; on a
 * refusal DynamoDB returns the record (ReturnValuesOnConditionCheckFailure) so the gate can
 * say which rule refused it, without a second read. Last use is not stamped here (see
 * stampLastUse), so an admitted request costs this single write.
 */
export async function presentShard(key: ItemKey, nowMs: number, rules: CredentialCondition, cap?: number): Promise<PresentedShard> {
  // Fewer than `cap` counted this minute: a full shard refuses in the write itself, with nothing to take back.
  const capped = cap === undefined ? '' : ' AND (attribute_not_exists(#window) OR #window < :cap)';
  try {
    const out = await table.update({
      Key: key,
      UpdateExpression: 'ADD #window :one',
      ConditionExpression: `attribute_exists(pk) AND ${rules.expression}${capped}`,
      ExpressionAttributeNames: { '#window': rateWindowAttribute(epochMinute(nowMs)), ...rules.names },
      ExpressionAttributeValues: { ':one': 1, ...rules.values, ...(cap === undefined ? {} : { ':cap': cap }) },
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    const item = out ?? {};
    const stale = staleWindowAttributes(item, nowMs);
    if (stale.length) await dropWindows(key, stale);
    return { outcome: 'counted', item };
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    return error.item ? { outcome: 'refused', item: error.item } : { outcome: 'unknown' };
  }
}

/**
 * Stamps a key's last use on the given items (the record, and the shard the request was
 * counted on, whose copy of the stamp tells the next request there that it is fresh), each
 * only if its stamp is older than `nowMs - staleMs`. The gate calls it only when the shard
 * it read showed a stamp that old, so a key's record is written for its last use at most
 * once a minute per shard, however many requests it serves.
 */
export async function stampLastUse(items: ItemKey[], nowMs: number, staleMs: number): Promise<void> {
  await Promise.all(
    items.map(async (key) => {
      try {
        await table.update({
          Key: key,
          UpdateExpression: 'SET last_used_timestamp = :now',
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(last_used_timestamp) OR last_used_timestamp < :fresh)',
          ExpressionAttributeValues: { ':now': nowMs, ':fresh': nowMs - staleMs },
        });
      } catch (error) {
        // Deleted meanwhile, or stamped by another request since: nothing to do.
        if (!(error instanceof ConditionFailed)) throw error;
      }
    }),
  );
}

/**
 * Takes back a request that was refused (over a limit, or from a disallowed address), so
 * refused traffic never eats into the budget of the traffic that is let through.
 */
export async function uncountRequest(key: ItemKey, nowMs: number): Promise<void> {
  try {
    await table.update({
      Key: key,
      UpdateExpression: 'ADD #window :minusOne',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#window': rateWindowAttribute(epochMinute(nowMs)) },
      ExpressionAttributeValues: { ':minusOne': -1 },
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

/** Old minutes' counters are removed the first time a request sees them (after an idle gap). */
async function dropWindows(key: ItemKey, attributes: string[]): Promise<void> {
  const names = Object.fromEntries(attributes.map((name, i) => [`#w${i}`, name]));
  try {
    await table.update({
      Key: key,
      UpdateExpression: `REMOVE ${Object.keys(names).join(', ')}`,
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: names,
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}
