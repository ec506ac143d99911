import { randomInt } from 'node:crypto';
import type { ItemKey, PartitionQuery } from './keys.ts';
import { eachLimited } from '../parallel.ts';
import { queryAll } from './query.ts';
import { table, TransactionCancelled, type TransactOp } from './table.ts';

/*
 * Exact totals of a workspace's listing (calls, chats) without reading it: one counter item
 * per listing shard (keys.listingCount), ADDed in the same transaction that writes or
 * uncounts a listed item, so the sum of the counters is always the number of items marked
 * counted (COUNTED). Deletion is two writes: first the mark is removed with the counter's
 * `ADD -1` (conditional on the mark, so a retried or concurrent delete uncounts once), then
 * the item is deleted, only while unmarked (so an item countExisting marked in between is
 * uncounted first). Items written before the counters are counted once by countExisting
 * (the listing backfill job, shared/account-data/listing-backfill.ts). Counters are per shard so concurrent creates spread over items.
 */

/** The mark on an item the counters include. */
export const COUNTED = 'listing_counted';

/** Transactions that lost a race with another one on the same counter are tried again this many times. */
const ATTEMPTS = 8;

/** The counter change that goes in the transaction writing (1) or uncounting (-1) an item. */
export function countChange(counter: ItemKey, by: number): TransactOp {
  return { Update: { Key: counter, UpdateExpression: 'ADD #n :by', ExpressionAttributeNames: { '#n': 'n' }, ExpressionAttributeValues: { ':by': by } } };
}

/**
 * Runs a counted transaction, again when it only lost a race with another transaction (its
 * conditions held, nothing was written): concurrent creates of one workspace meet on the
 * counters. A failed condition is the caller's (TransactionCancelled with `failedAt`).
 */
export async function transactCounted(ops: readonly TransactOp[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await table.transact(ops);
      return;
    } catch (error) {
      if (!(error instanceof TransactionCancelled) || !error.conflicted || error.failedAt.length > 0 || attempt >= ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, randomInt(1, Math.min(100, 4 * 2 ** attempt) + 1)));
    }
  }
}

/**
 * Takes an item out of its counter before it is deleted: its mark removed and the counter
 * down by one, in one transaction conditional on the mark and on `condition` (the item's
 * owner). Answers false when there was nothing to uncount (no item, another owner's, or
 * uncounted already by an earlier or concurrent delete).
 */
export async function uncount(item: ItemKey, counter: ItemKey, condition: { expression: string; values: Record<string, unknown> }): Promise<boolean> {
  try {
    await transactCounted([
      {
        Update: {
          Key: item,
          UpdateExpression: 'REMOVE #counted',
          ConditionExpression: `attribute_exists(#counted) AND ${condition.expression}`,
          ExpressionAttributeNames: { '#counted': COUNTED },
          ExpressionAttributeValues: condition.values,
        },
      },
      countChange(counter, -1),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) return false;
    throw error;
  }
}

/**
 * Counts an item written before the counters (or by a seed without the mark): its mark set
 * and the counter up by one, in one transaction conditional on the item being there,
 * unmarked and `condition`'s (its owner). Answers whether it counted it now. Exact beside
 * creates and deletes: a delete removes an item only while it is unmarked (after uncounting
 * it), so an item counted here meanwhile is uncounted by that delete's next attempt.
 */
async function countExisting(item: ItemKey, counter: ItemKey, condition: { expression: string; values: Record<string, unknown> }): Promise<boolean> {
  try {
    await transactCounted([
      {
        Update: {
          Key: item,
          UpdateExpression: 'SET #counted = :true',
          ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(#counted) AND ${condition.expression}`,
          ExpressionAttributeNames: { '#counted': COUNTED },
          ExpressionAttributeValues: { ...condition.values, ':true': true },
        },
      },
      countChange(counter, 1),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) return false;
    throw error;
  }
}

/** Where a backfill of one workspace's listing stands: the listing shard and the index page within it. */
export interface ListingBackfillPosition {
  shard: number;
  start_key?: Record<string, unknown>;
}

/** What one listing (calls or chats) gives countListingPage: its index partitions and how an entry is counted. */
export interface CountedListing {
  /** The listing index partitions (gsi1pk), one per listing shard. */
  partitions: string[];
  /** The entry's ID attribute in the index projection. */
  idAttribute: string;
  item: (id: string) => ItemKey;
  counter: (id: string) => ItemKey;
  /** The owner's condition on the item (its `workspace_id`). */
  owner: { expression: string; values: Record<string, unknown> };
}

/** Entries read per index page, and counted at once. */
const BACKFILL_PAGE = 500;
const BACKFILL_PARALLEL = 16;

/**
 * Counts one index page of a listing's items written before the counters (each once:
 * countExisting), from `position`; answers how many it counted now and where the next page
 * starts (undefined: the listing is done). A page replayed after a crash counts nothing twice.
 */
export async function countListingPage(listing: CountedListing, position: ListingBackfillPosition = { shard: 0 }): Promise<{ counted: number; next?: ListingBackfillPosition }> {
  const partition = listing.partitions[position.shard];
  if (partition === undefined) return { counted: 0 };
  const page = await table.queryPage<Record<string, unknown>>({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :gpk',
    ExpressionAttributeValues: { ':gpk': partition },
    Limit: BACKFILL_PAGE,
    ExclusiveStartKey: position.start_key,
  });
  let counted = 0;
  await eachLimited(page.items, BACKFILL_PARALLEL, async (entry) => {
    const id = String(entry[listing.idAttribute]);
    if (await countExisting(listing.item(id), listing.counter(id), listing.owner)) counted++;
  });
  if (page.lastKey) return { counted, next: { shard: position.shard, start_key: page.lastKey } };
  return { counted, next: position.shard + 1 < listing.partitions.length ? { shard: position.shard + 1 } : undefined };
}

/** Whether the workspace's counters hold all its listed items (`keys.listingCountsComplete`). */
export async function listingCountsComplete(marker: ItemKey): Promise<boolean> {
  return (await table.get(marker)) !== undefined;
}

/** Records that the counters hold every listed item of a workspace (in its creation, or after a backfill). */
export const listingCountsCompleteOp = (marker: ItemKey, nowMs: number): TransactOp => ({ Put: { Item: { ...marker, complete_timestamp: nowMs } } });

export async function markListingCountsComplete(marker: ItemKey, nowMs = Date.now()): Promise<void> {
  await table.put({ Item: { ...marker, complete_timestamp: nowMs } });
}

/**
 * The sum of a listing's counters when they hold every item (`marker` present), else
 * undefined: a workspace from before the counters, not yet backfilled, whose total must be
 * counted on the index instead of answered short.
 */
export async function completeCountedTotal(counters: PartitionQuery, marker: ItemKey): Promise<number | undefined> {
  // The marker shares the counters' partition: one Query of it (nine small items) reads both.
  if (marker.pk !== counters.pk) throw new Error('The listing marker must share its counters\' partition');
  const items = await queryAll<{ sk: string; n?: number }>({ pk: counters.pk });
  if (!items.some((item) => item.sk === marker.sk)) return undefined;
  return items.filter((item) => item.sk.startsWith(counters.skPrefix ?? '')).reduce((sum, item) => sum + (item.n ?? 0), 0);
}

/** The sum of a listing's counters (one strongly consistent Query of their partition). */
export async function countedTotal(counters: PartitionQuery): Promise<number> {
  const items = await queryAll<{ n?: number }>(counters);
  return items.reduce((sum, item) => sum + (item.n ?? 0), 0);
}

/**
 * Writes a new item (`create`, its condition at index 0) and counts it on `counter`, in one
 * transaction with `also`, refused with `overLimit()` when the counter is already at `limit`:
 * the per-workspace caps on dashboards, alert rules and QA cohorts, whose delete takes the
 * count back (`ADD n -1`) in its own transaction.
 */
export async function createWithinLimit(input: { create: TransactOp; counter: ItemKey; limit: number; also?: readonly TransactOp[]; overLimit: () => Error }): Promise<void> {
  try {
    await transactCounted([
      input.create,
      {
        Update: {
          Key: input.counter,
          UpdateExpression: 'ADD n :one',
          ConditionExpression: 'attribute_not_exists(n) OR n < :limit',
          ExpressionAttributeValues: { ':one': 1, ':limit': input.limit },
        },
      },
      ...(input.also ?? []),
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(1)) throw input.overLimit();
    throw error;
  }
}
