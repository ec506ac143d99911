import { invalidPaginationKey, NotFound } from '../platform/errors.ts';
import { timeOrderedIdFloor } from '../platform/ids.ts';
import type { ChatFilter, ListChatsInput } from './schemas.ts';
import {
  countListing,
  firstEntries,
  ListingExpression,
  mergedEntries,
  readListedItems,
  shardReadSizes,
  type ListingCondition,
  type ListingFilter,
} from '../platform/store/sharded-listing.ts';
import { chatListingPartitions, countChatsIfComplete, getChatItem, type ChatItem, type ChatListingEntry } from './store.ts';

/*
 * Listing chats: the workspace's sharded listing index (platform/store/sharded-listing.ts),
 * chat IDs as sort keys, which start with the creation time. Every filter of ChatFilter is
 * on a projected attribute, so DynamoDB drops what does not match before it answers; the
 * page's full items are read by key.
 */

/**
 * A total without a filter is the workspace's chat counter (exact, one Query). A filtered
 * total counts matches among the newest TOTAL_EXAMINE_CAP entries (Select: COUNT): a total
 * at the cap means "at least".
 */
const TOTAL_EXAMINE_CAP = 10_000;

function listingFilter(filter: ChatFilter | undefined): ListingFilter | undefined {
  if (!filter) return undefined;
  const x = new ListingExpression();
  if (filter.agent?.length) {
    const agentId = x.name('agent_id');
    const version = x.name('agent_version');
    x.parts.push(
      `(${filter.agent
        .map((entry) =>
          entry.version?.length
            ? `(${agentId} = ${x.value(entry.agent_id)} AND ${version} IN (${entry.version.map((v) => x.value(v)).join(', ')}))`
            : `${agentId} = ${x.value(entry.agent_id)}`,
        )
        .join(' OR ')})`,
    );
  }
  if (filter.chat_id) x.add('chat_id', filter.chat_id as ListingCondition);
  if (filter.chat_status) x.add('chat_status', filter.chat_status);
  if (filter.chat_successful) x.add('chat_successful', filter.chat_successful);
  if (filter.user_sentiment) x.add('user_sentiment', filter.user_sentiment);
  for (const attribute of ['start_timestamp', 'end_timestamp', 'duration_ms', 'combined_cost'] as const) {
    // combined_cost is set with chat_cost when the chat ends: an ongoing chat has none and matches no cost range.
    if (filter[attribute]) x.add(attribute, filter[attribute] as ListingCondition);
  }
  return x.build();
}

/** SMS chats only: they alone carry `from_number` (projected, as `to_number`), so no other index is needed; optionally with these numbers. */
function smsOnly(filter: ListingFilter | undefined, numbers: SmsNumbers = {}): ListingFilter {
  const names: Record<string, string> = { ...(filter?.names ?? {}), '#smsfrom': 'from_number' };
  const values: Record<string, unknown> = { ...(filter?.values ?? {}) };
  const parts = [...(filter ? [`(${filter.expression})`] : []), 'attribute_exists(#smsfrom)'];
  if (numbers.from_number) {
    values[':smsfrom'] = numbers.from_number;
    parts.push('#smsfrom = :smsfrom');
  }
  if (numbers.to_number) {
    names['#smsto'] = 'to_number';
    values[':smsto'] = numbers.to_number;
    parts.push('#smsto = :smsto');
  }
  return { expression: parts.join(' AND '), names, values };
}

export interface SmsNumbers {
  from_number?: string;
  to_number?: string;
}

/** A page of the workspace's chats (newest first by default), its `has_more`, and a total when asked for (exact without a filter; with one, among the newest 10,000). */
export async function listChatItems(
  workspaceId: string,
  input: ListChatsInput,
  options: { smsOnly?: boolean; numbers?: SmsNumbers } = {},
): Promise<{ items: ChatItem[]; hasMore: boolean; total?: number }> {
  const ascending = input.sort_order === 'ascending';
  if (input.pagination_key) {
    // The key is a chat ID of this workspace (the last of the previous page). Only "no such
    // chat" makes it invalid: a store that did not answer is a 503, not the caller's fault.
    try {
      await getChatItem(workspaceId, input.pagination_key);
    } catch (error) {
      if (error instanceof NotFound) throw invalidPaginationKey();
      throw error;
    }
  }
  const filter = options.smsOnly ? smsOnly(listingFilter(input.filter_criteria), options.numbers) : listingFilter(input.filter_criteria);
  const skip = input.skip ?? 0;
  // One more than the page tells whether there is a next page.
  const want = skip + input.limit + 1;
  const gsi1pks = chatListingPartitions(workspaceId);
  const [entries, total] = await Promise.all([
    firstEntries(
      mergedEntries<ChatListingEntry>({
        gsi1pks,
        ascending,
        after: input.pagination_key,
        filter,
        idOf: (entry) => entry.chat_id,
        ...shardReadSizes(want, gsi1pks.length, filter !== undefined),
      }),
      want,
    ),
    !input.include_total
      ? undefined
      : filter === undefined
        ? // A workspace whose counters are not backfilled yet is counted on the index ("at least" past the cap).
          countChatsIfComplete(workspaceId).then((total) => total ?? countListing({ gsi1pks, cap: TOTAL_EXAMINE_CAP, examineCap: TOTAL_EXAMINE_CAP }))
        : countListing({ gsi1pks, filter, cap: TOTAL_EXAMINE_CAP, examineCap: TOTAL_EXAMINE_CAP }),
  ]);
  // The chats `skip` passes over are never read.
  const items = await readListedItems<ChatItem>(entries.slice(skip, skip + input.limit));
  return { items, hasMore: entries.length > skip + input.limit, ...(total !== undefined ? { total } : {}) };
}

/**
 * A page of the workspace's chats started before `startedBeforeMs`, oldest first, as
 * retention judges them (chat agent version, start): index entries only (gsi1 projects
 * them), never the items, and the walk ends at the cutoff (chat IDs start with the time the
 * chat started) instead of going through the newest chats.
 */
export async function chatRetentionPage(
  workspaceId: string,
  input: { after?: string; limit: number; startedBeforeMs: number },
): Promise<{ chats: { chat_id: string; agent_id: string; agent_version: number; start_timestamp: number }[]; next?: string }> {
  const gsi1pks = chatListingPartitions(workspaceId);
  const entries = await firstEntries(
    mergedEntries<ChatListingEntry>({
      gsi1pks,
      ascending: true,
      after: input.after,
      until: timeOrderedIdFloor('chat', input.startedBeforeMs),
      idOf: (entry) => entry.chat_id,
      ...shardReadSizes(input.limit + 1, gsi1pks.length, false),
    }),
    input.limit + 1,
  );
  const page = entries.slice(0, input.limit);
  return {
    chats: page.map((entry) => ({
      chat_id: entry.chat_id,
      agent_id: entry.agent_id as string,
      agent_version: entry.agent_version as number,
      start_timestamp: entry.start_timestamp as number,
    })),
    ...(entries.length > input.limit ? { next: page.at(-1)!.chat_id } : {}),
  };
}

/**
 * A page of the workspace's chats, oldest first, as stored (items without their messages):
 * what the analytics backfill adds to the rollups. `after` is the last chat ID of the
 * previous page; a chat deleted since is no obstacle (the index is read from the ID).
 */
export async function storedChatPage(workspaceId: string, input: { after?: string; limit: number }): Promise<{ chats: ChatItem[]; next?: string }> {
  const gsi1pks = chatListingPartitions(workspaceId);
  const entries = await firstEntries(
    mergedEntries<ChatListingEntry>({ gsi1pks, ascending: true, after: input.after, idOf: (entry) => entry.chat_id, ...shardReadSizes(input.limit + 1, gsi1pks.length, false) }),
    input.limit + 1,
  );
  const page = entries.slice(0, input.limit);
  return { chats: await readListedItems<ChatItem>(page), ...(entries.length > input.limit ? { next: page.at(-1)!.chat_id } : {}) };
}

/** One chat of the workspace as stored (no messages), or undefined when it is gone. */
export async function storedChat(workspaceId: string, chatId: string): Promise<ChatItem | undefined> {
  try {
    return await getChatItem(workspaceId, chatId);
  } catch (error) {
    if (error instanceof NotFound) return undefined;
    throw error;
  }
}
