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
 * is after the write, in a single round trip (per-IP windows; credentials use
 * presentCredential). Returns undefined when `mustExist` and
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

export type PresentedCredential =
  /** No such key (never was, or deleted). */
  | { outcome: 'unknown' }
  /** The record's own rules refuse the request: nothing was written, `item` is the record. */
  | { outcome: 'refused'; item: Record<string, unknown> }
  /** Counted in the key's window and stamped: `item` as it is now, `previousLastUse` to undo the stamp. */
  | { outcome: 'counted'; item: Record<string, unknown>; previousLastUse: number | undefined };

/**
 * Presents a key: one conditional UpdateItem that counts the request in the key's window
 * and stamps its last use only if the record's rules (allowlist, origin, public-key
 * capability, scope) admit the request. The rules a record decides are checked by
 * DynamoDB, so a refused request writes nothing, and an admitted one costs this single
 * round trip. On a refusal DynamoDB returns the record (ReturnValuesOnConditionCheckFailure)
 * so the gate can say which rule refused it, without a second read.
 */
export async function presentCredential(key: ItemKey, nowMs: number, rules: CredentialCondition): Promise<PresentedCredential> {
  const window = rateWindowAttribute(epochMinute(nowMs));
  try {
    const out = await table.update({
      Key: key,
      UpdateExpression: 'SET last_used_timestamp = :now ADD #window :one',
      ConditionExpression: `attribute_exists(pk) AND ${rules.expression}`,
      ExpressionAttributeNames: { '#window': window, ...rules.names },
      ExpressionAttributeValues: { ':one': 1, ':now': nowMs, ...rules.values },
      // The record before this write: the stamp it replaced can be put back if a later rule refuses.
      ReturnValues: 'ALL_OLD',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    const before = out ?? {};
    const item = { ...before, [window]: Number(before[window] ?? 0) + 1, last_used_timestamp: nowMs };
    const stale = staleWindowAttributes(item, nowMs);
    if (stale.length) await dropWindows(key, stale);
    const previous = before.last_used_timestamp;
    return { outcome: 'counted', item, previousLastUse: typeof previous === 'number' ? previous : undefined };
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    return error.item ? { outcome: 'refused', item: error.item } : { outcome: 'unknown' };
  }
}

/**
 * Takes back a counted key request that a later rule refused (its key limit, or the IP
 * limit): out of the window, and its last-use stamp back to what it was, unless another
 * request has stamped the key since.
 */
export async function takeBackCredential(key: ItemKey, nowMs: number, previousLastUse: number | undefined): Promise<void> {
  try {
    await table.update({
      Key: key,
      UpdateExpression: `${previousLastUse === undefined ? 'REMOVE last_used_timestamp' : 'SET last_used_timestamp = :previous'} ADD #window :minusOne`,
      ConditionExpression: 'last_used_timestamp = :now',
      ExpressionAttributeNames: { '#window': rateWindowAttribute(epochMinute(nowMs)) },
      ExpressionAttributeValues: {
        ':minusOne': -1,
        ':now': nowMs,
        ...(previousLastUse === undefined ? {} : { ':previous': previousLastUse }),
      },
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    // Stamped by a later request (or deleted): leave the stamp, take back the count.
    await uncountRequest(key, nowMs);
  }
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
