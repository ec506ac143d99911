import { invalidPaginationKey, NotFound } from '../platform/errors.ts';
import type { CallFilter, ListCallsInput } from './schemas.ts';
import { batchGetCalls, CALL_LISTING_SHARDS, getCallItem, queryCallListing, type CallItem, type CallListingEntry } from './store.ts';

/*
 * `POST /v3/list-calls`: a query of the listing index (gsi1), never a scan. A workspace's
 * calls are spread over CALL_LISTING_SHARDS index partitions; each is queried from the
 * page's starting point (the pagination key, a call ID, which sorts by time) with the
 * filter on the projected attributes, the shards' answers are merged by call ID, and the
 * page's full items are read by key (BatchGetItem).
 */

type Filter = { expression: string; names: Record<string, string>; values: Record<string, unknown> };

const LIST_FIELDS = [
  'agent_id', 'call_status', 'call_type', 'direction', 'from_number', 'to_number', 'batch_call_id',
  'disconnection_reason', 'user_sentiment', 'call_successful', 'in_voicemail',
] as const;

export function filterExpression(criteria: CallFilter | undefined): Filter | undefined {
  if (!criteria) return undefined;
  const parts: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  LIST_FIELDS.forEach((field, i) => {
    const wanted = criteria[field] as unknown[] | undefined;
    if (!wanted?.length) return;
    names[`#l${i}`] = field;
    const placeholders = wanted.map((value, j) => {
      values[`:l${i}_${j}`] = value;
      return `:l${i}_${j}`;
    });
    parts.push(`#l${i} IN (${placeholders.join(', ')})`);
  });
  (['start_timestamp', 'end_timestamp'] as const).forEach((field, i) => {
    const range = criteria[field];
    if (!range) return;
    names[`#t${i}`] = field;
    if (range.lower_threshold !== undefined) {
      values[`:t${i}lo`] = range.lower_threshold;
      parts.push(`#t${i} >= :t${i}lo`);
    }
    if (range.upper_threshold !== undefined) {
      values[`:t${i}hi`] = range.upper_threshold;
      parts.push(`#t${i} <= :t${i}hi`);
    }
  });
  return parts.length ? { expression: parts.join(' AND '), names, values } : undefined;
}

/** Up to `want` matching entries of one shard after `after`, reading index pages as needed. */
async function shardEntries(workspaceId: string, shard: number, ascending: boolean, after: string | undefined, filter: Filter | undefined, want: number) {
  const entries: CallListingEntry[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await queryCallListing({
      workspaceId,
      shard,
      ascending,
      after,
      filter,
      // Without a filter every entry read counts; with one, read in larger pages.
      limit: filter ? Math.max(100, want) : want,
      exclusiveStartKey: startKey,
    });
    entries.push(...page.items);
    startKey = page.lastKey;
  } while (startKey && entries.length < want);
  return entries.slice(0, want);
}

export async function listCallItems(
  workspaceId: string,
  input: Pick<ListCallsInput, 'limit' | 'sort_order' | 'pagination_key' | 'filter_criteria'>,
): Promise<{ items: CallItem[]; hasMore: boolean; total?: number }> {
  if (input.pagination_key) {
    try {
      await getCallItem(workspaceId, input.pagination_key);
    } catch (error) {
      if (error instanceof NotFound) throw invalidPaginationKey();
      throw error;
    }
  }
  const ascending = input.sort_order === 'ascending';
  const filter = filterExpression(input.filter_criteria);
  const want = input.limit + 1;
  const perShard = await Promise.all(
    Array.from({ length: CALL_LISTING_SHARDS }, (_, shard) => shardEntries(workspaceId, shard, ascending, input.pagination_key, filter, want)),
  );
  const merged = perShard
    .flat()
    .sort((a, b) => (a.call_id < b.call_id ? -1 : a.call_id > b.call_id ? 1 : 0) * (ascending ? 1 : -1));
  const page = merged.slice(0, input.limit);
  const items = await batchGetCalls(page);
  const byId = new Map(items.map((item) => [item.call_id, item]));
  return {
    // A call deleted between the index read and the item read drops out of the page.
    items: page.flatMap((entry) => byId.get(entry.call_id) ?? []),
    hasMore: merged.length > input.limit,
  };
}
