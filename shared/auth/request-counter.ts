import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { logger } from '../logger.ts';
import { db, isConditionFailure, tableName } from '../store/db.ts';
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
 * is after the write, in a single round trip. For a credential this one call is the
 * lookup and the rate count (its last use is stamped only once it is admitted). Returns undefined when `mustExist` and
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
    const out = await db.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: `${sets.length ? `SET ${sets.join(', ')} ` : ''}ADD #window :one`,
        ConditionExpression: options.mustExist ? 'attribute_exists(pk)' : undefined,
        ExpressionAttributeNames: { '#window': rateWindowAttribute(epochMinute(nowMs)) },
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    const item = out.Attributes ?? {};
    const stale = staleWindowAttributes(item, nowMs);
    if (stale.length) await dropWindows(key, stale);
    return item;
  } catch (error) {
    if (options.mustExist && isConditionFailure(error)) return undefined;
    throw error;
  }
}

/**
 * Stamps an admitted key's last use. Never moves the stamp back (a slower write of an
 * earlier request loses), and a key deleted meanwhile is left deleted. Best effort: a
 * failed stamp is logged, never the request's failure.
 */
export async function stampLastUse(key: ItemKey, nowMs: number): Promise<void> {
  try {
    await db.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: 'SET last_used_timestamp = :now',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(last_used_timestamp) OR last_used_timestamp < :now)',
        ExpressionAttributeValues: { ':now': nowMs },
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) logger.warn('Could not stamp the last use of a key', { error });
  }
}

/**
 * Takes back a request that was refused (over a limit, or from a disallowed address), so
 * refused traffic never eats into the budget of the traffic that is let through.
 */
export async function uncountRequest(key: ItemKey, nowMs: number): Promise<void> {
  try {
    await db.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: 'ADD #window :minusOne',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#window': rateWindowAttribute(epochMinute(nowMs)) },
        ExpressionAttributeValues: { ':minusOne': -1 },
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}

/** Old minutes' counters are removed the first time a request sees them (after an idle gap). */
async function dropWindows(key: ItemKey, attributes: string[]): Promise<void> {
  const names = Object.fromEntries(attributes.map((name, i) => [`#w${i}`, name]));
  try {
    await db.send(
      new UpdateCommand({
        TableName: tableName,
        Key: key,
        UpdateExpression: `REMOVE ${Object.keys(names).join(', ')}`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: names,
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}
