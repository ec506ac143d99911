import { invalidPaginationKey, NotFound } from '../platform/errors.ts';
import type { ChatFilter, ListChatsInput } from './schemas.ts';
import { batchGetChats, CHAT_LISTING_SHARDS, getChatItem, queryChatListing, type ChatItem, type ListingFilter } from './store.ts';

/*
 * Listing chats: a query of the listing index gsi1 (`WS#<ws>#CHAT#<shard>`, chat IDs as
 * sort keys, which start with the creation time), never a scan. The shards are read in
 * parallel from the page's starting point (the pagination key, a chat ID) with a
 * FilterExpression on the projected attributes, merged by chat ID, and the page's full
 * items read by key (BatchGetItem). Every filter of ChatFilter is on a projected attribute.
 */

class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  readonly parts: string[] = [];
  private n = 0;

  name(attribute: string): string {
    const existing = Object.entries(this.names).find(([, name]) => name === attribute);
    if (existing) return existing[0];
    const placeholder = `#f${Object.keys(this.names).length}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:v${this.n++}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  number(attribute: string, filter: { op: string; value: number | [number, number] }): void {
    const a = this.name(attribute);
    const ops: Record<string, string> = { eq: '=', ne: '<>', gt: '>', ge: '>=', lt: '<', le: '<=' };
    if (filter.op === 'bt') {
      const [low, high] = filter.value as [number, number];
      this.parts.push(`${a} BETWEEN ${this.value(low)} AND ${this.value(high)}`);
    } else {
      this.parts.push(`${a} ${ops[filter.op]} ${this.value(filter.value)}`);
    }
  }

  build(): ListingFilter | undefined {
    return this.parts.length ? { expression: this.parts.join(' AND '), names: this.names, values: this.values } : undefined;
  }
}

export function listingFilter(filter: ChatFilter | undefined): ListingFilter | undefined {
  if (!filter) return undefined;
  const x = new Expression();
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
  if (filter.chat_id) {
    const a = x.name('chat_id');
    const f = filter.chat_id;
    if (f.op === 'in') x.parts.push(`${a} IN (${f.value.map((v) => x.value(v)).join(', ')})`);
    else if (f.op === 'eq') x.parts.push(`${a} = ${x.value(f.value)}`);
    else if (f.op === 'ne') x.parts.push(`${a} <> ${x.value(f.value)}`);
    else if (f.op === 'sw') x.parts.push(`begins_with(${a}, ${x.value(f.value)})`);
    else x.parts.push(`contains(${a}, ${x.value(f.value)})`);
  }
  if (filter.chat_status) x.parts.push(`${x.name('chat_status')} IN (${filter.chat_status.value.map((v) => x.value(v)).join(', ')})`);
  if (filter.chat_successful) x.parts.push(`${x.name('chat_successful')} = ${x.value(filter.chat_successful.value)}`);
  if (filter.user_sentiment) x.parts.push(`${x.name('user_sentiment')} IN (${filter.user_sentiment.value.map((v) => x.value(v)).join(', ')})`);
  if (filter.start_timestamp) x.number('start_timestamp', filter.start_timestamp);
  if (filter.end_timestamp) x.number('end_timestamp', filter.end_timestamp);
  if (filter.duration_ms) x.number('duration_ms', filter.duration_ms);
  // Set with chat_cost when the chat ends: an ongoing chat has none and matches no cost filter.
  if (filter.combined_cost) x.number('combined_cost', filter.combined_cost);
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

/** A page of the workspace's chats (newest first by default), its `has_more`, and a total when asked for (capped at 10,000). */
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
  const want = skip + input.limit + 1;
  const shards = await Promise.all(
    Array.from({ length: CHAT_LISTING_SHARDS }, (_, shard) =>
      queryChatListing({ workspaceId, shard, ascending, after: input.pagination_key, filter, want }),
    ),
  );
  const merged = shards.flat().sort((a, b) => (ascending ? a.chat_id.localeCompare(b.chat_id) : b.chat_id.localeCompare(a.chat_id)));
  const page = merged.slice(skip, skip + input.limit);
  const items = await batchGetChats(page);
  const byId = new Map(items.map((item) => [item.chat_id, item]));
  let total: number | undefined;
  if (input.include_total) {
    const all = await Promise.all(
      Array.from({ length: CHAT_LISTING_SHARDS }, (_, shard) => queryChatListing({ workspaceId, shard, ascending, filter, want: 10_000 })),
    );
    total = all.reduce((sum, entries) => sum + entries.length, 0);
  }
  return {
    items: page.flatMap((entry) => (byId.has(entry.chat_id) ? [byId.get(entry.chat_id)!] : [])),
    hasMore: merged.length > skip + input.limit,
    ...(total !== undefined ? { total } : {}),
  };
}
