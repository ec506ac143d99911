import { describe, expect, it } from 'vitest';
import { createWorkspace } from '../../shared/account/workspaces.ts';
import { listCallItems } from '../../shared/calls/listing.ts';
import { deleteCall } from '../../shared/calls/erasure/index.ts';
import {
  callListingPartitions,
  countCalls,
  countCallsWrittenBefore,
  deleteCallItem,
  newCallItem,
  putNewCall,
  type CallListingEntry,
} from '../../shared/calls/store.ts';
import { listChatItems } from '../../shared/chats/listing.ts';
import { countChats, countChatsWrittenBefore, deleteChatItems, newChatItem, putNewChat } from '../../shared/chats/store.ts';
import { newId, newTimeOrderedId } from '../../shared/platform/ids.ts';
import { countListing, firstEntries, mergedEntries } from '../../shared/platform/store/sharded-listing.ts';
import { table } from '../../shared/platform/store/table.ts';
import { COUNTED, markListingCountsComplete } from '../../shared/platform/store/listing-count.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { toCallView } from '../../shared/calls/view.ts';

/*
 * list-calls' and list-chats' unfiltered `include_total` is the workspace's listing counters
 * (platform/store/listing-count.ts), written in the same transaction as each create and
 * delete: exact however creates and deletes interleave, and one Query whatever the history.
 */

/** A workspace counted from its start, as one created through the API is (its counters complete). */
async function workspace(): Promise<string> {
  const id = newId('workspace');
  await markListingCountsComplete(keys.listingCountsComplete(id));
  return id;
}

function call(workspaceId: string, at = Date.now()) {
  return newCallItem({
    call_id: newTimeOrderedId('call', at),
    workspace_id: workspaceId,
    created_timestamp: at,
    call_type: 'web_call',
    call_status: 'ended',
    agent_id: 'agent_x',
    agent_version: 0,
    engine: { media: 'sandbox', origin: 'create-web-call' },
  });
}

function chat(workspaceId: string, at = Date.now()) {
  return newChatItem({
    chat_id: newTimeOrderedId('chat', at),
    workspace_id: workspaceId,
    chat_type: 'api_chat',
    chat_status: 'ended',
    agent_id: 'agent_x',
    agent_version: 0,
    retell_llm_dynamic_variables: {},
    created_timestamp: at,
    start_timestamp: at,
    message_count: 0,
    conversation: {},
  });
}

/** What the index holds (every shard counted, no cap reached at these sizes). */
const indexed = (workspaceId: string) => countListing({ gsi1pks: callListingPartitions(workspaceId), cap: 1e6, examineCap: 1e6 });

describe('the call total', () => {
  it('stays exact under concurrent creates and deletes, each delete counted once however many race', async () => {
    const ws = await workspace();
    const existing = Array.from({ length: 30 }, () => call(ws));
    await Promise.all(existing.map((item) => putNewCall(item)));
    expect(await countCalls(ws)).toBe(30);

    const created = Array.from({ length: 40 }, () => call(ws));
    const doomed = existing.slice(0, 20);
    const settled = await Promise.allSettled([
      ...created.map((item) => putNewCall(item)),
      // Every doomed call is deleted three times at once: one delete wins, the others find it gone.
      ...doomed.flatMap((item) => [1, 2, 3].map(() => deleteCallItem(ws, item.call_id))),
    ]);
    expect(settled.filter((result) => result.status === 'rejected')).toHaveLength(40);
    expect(await countCalls(ws)).toBe(50);
    expect(await indexed(ws)).toBe(50);
    const { total, items } = await listCallItems(ws, { limit: 1, sort_order: 'descending', include_total: true });
    expect(total).toBe(50);
    // The mark is storage, never answered.
    expect(items[0]).toHaveProperty(COUNTED, true);
    expect(toCallView(items[0]!)).not.toHaveProperty(COUNTED);
  });

  it('counts a duplicate create once (the ID is taken: nothing is written)', async () => {
    const ws = await workspace();
    const item = call(ws);
    await putNewCall(item);
    await expect(putNewCall(item)).rejects.toThrow();
    expect(await countCalls(ws)).toBe(1);
  });

  it('goes down with the deletes of delete-call, privacy erases and retention (deleteCall)', async () => {
    const ws = await workspace();
    const items = Array.from({ length: 6 }, () => call(ws));
    await Promise.all(items.map((item) => putNewCall(item)));
    await Promise.all(items.slice(0, 4).map((item) => deleteCall(ws, item.call_id)));
    expect(await countCalls(ws)).toBe(2);
    // Another workspace's delete of the same ID changes neither total.
    const other = await workspace();
    await expect(deleteCallItem(other, items[5]!.call_id)).rejects.toThrow();
    expect(await countCalls(ws)).toBe(2);
    expect(await countCalls(other)).toBe(0);
  });

  it('counts filtered totals on the index, newest first', async () => {
    const ws = await workspace();
    await Promise.all([call(ws), call(ws), { ...call(ws), call_type: 'phone_call' as const }].map((item) => putNewCall(item)));
    const { total } = await listCallItems(ws, { limit: 1, sort_order: 'descending', include_total: true, filter_criteria: { call_type: ['phone_call'] } });
    expect(total).toBe(1);
  });

  it('reads at most the examine cap of index entries for a count the index cannot filter', async () => {
    const ws = await workspace();
    await Promise.all(Array.from({ length: 30 }, () => putNewCall(call(ws))));
    const gsi1pks = callListingPartitions(ws);
    const read = await firstEntries(
      mergedEntries<CallListingEntry>({ gsi1pks, ascending: false, idOf: (entry) => entry.call_id, firstPage: 1000, laterPage: 1000, examineCap: 8 }),
      1000,
    );
    // Two a shard at most: the newest of each, however many the shard holds.
    expect(read.length).toBeLessThanOrEqual(8);
    expect(read.length).toBeGreaterThan(0);
  });
});

describe('the chat total', () => {
  it('stays exact under concurrent creates and deletes', async () => {
    const ws = await workspace();
    const existing = Array.from({ length: 20 }, () => chat(ws));
    await Promise.all(existing.map((item) => putNewChat(item, [])));
    const created = Array.from({ length: 25 }, () => chat(ws));
    const doomed = existing.slice(0, 10);
    await Promise.allSettled([
      ...created.map((item) => putNewChat(item, [])),
      ...doomed.flatMap((item) => [1, 2].map(() => deleteChatItems(ws, item.chat_id))),
    ]);
    expect(await countChats(ws)).toBe(35);
    const { total } = await listChatItems(ws, { limit: 1, sort_order: 'descending', include_total: true } as Parameters<typeof listChatItems>[1]);
    expect(total).toBe(35);
  });
});

describe('calls and chats written before the counters', () => {
  it('are counted once by the backfill, exactly, beside concurrent creates and deletes', async () => {
    // A workspace from before the counters: no mark that they are complete.
    const ws = newId('workspace');
    // Written as a store before the counters held them: no mark, no count.
    const old = Array.from({ length: 30 }, () => call(ws));
    await table.batchPut(old as unknown as Record<string, unknown>[]);
    await table.batchPut(Array.from({ length: 5 }, () => chat(ws) as unknown as Record<string, unknown>));
    expect(await countCalls(ws)).toBe(0);

    const fresh = Array.from({ length: 10 }, () => call(ws));
    const [counted] = await Promise.all([
      countCallsWrittenBefore(ws),
      ...fresh.map((item) => putNewCall(item)),
      // Deletes of old calls racing the backfill: each is counted and uncounted, or neither.
      ...old.slice(0, 10).map((item) => deleteCallItem(ws, item.call_id)),
    ]);
    expect(counted).toBeLessThanOrEqual(30);
    expect(await countCalls(ws)).toBe(30);
    expect(await indexed(ws)).toBe(30);
    // A second run counts nothing.
    expect(await countCallsWrittenBefore(ws)).toBe(0);
    expect(await countChatsWrittenBefore(ws)).toBe(5);
    expect(await countChats(ws)).toBe(5);
  });

  it('are totalled on the index until the backfill marks the counters complete, never answered short', async () => {
    const ws = newId('workspace');
    await table.batchPut(Array.from({ length: 12 }, () => call(ws)) as unknown as Record<string, unknown>[]);
    await table.batchPut(Array.from({ length: 3 }, () => chat(ws) as unknown as Record<string, unknown>));
    await putNewCall(call(ws));
    // The counters hold only the one call created since; the total is the index's.
    expect(await countCalls(ws)).toBe(1);
    expect((await listCallItems(ws, { limit: 1, sort_order: 'descending', include_total: true })).total).toBe(13);
    expect((await listChatItems(ws, { limit: 1, sort_order: 'descending', include_total: true } as Parameters<typeof listChatItems>[1])).total).toBe(3);

    // What scripts/count-listings.ts does for each workspace.
    expect(await countCallsWrittenBefore(ws)).toBe(12);
    expect(await countChatsWrittenBefore(ws)).toBe(3);
    await markListingCountsComplete(keys.listingCountsComplete(ws));
    // The index is no longer read: an entry the counters do not hold would not be counted.
    await table.batchPut([call(ws) as unknown as Record<string, unknown>]);
    expect((await listCallItems(ws, { limit: 1, sort_order: 'descending', include_total: true })).total).toBe(13);
    expect((await listChatItems(ws, { limit: 1, sort_order: 'descending', include_total: true } as Parameters<typeof listChatItems>[1])).total).toBe(3);
  });
});

describe('a workspace created through Parley', () => {
  it('has its counters complete from its creation, in the same transaction', async () => {
    const { workspace_id } = await createWorkspace('Counted from the start');
    expect(await table.get(keys.listingCountsComplete(workspace_id))).toMatchObject({ complete_timestamp: expect.any(Number) });
    await putNewCall(call(workspace_id));
    // Created calls are counted: the total comes from the counters, not the index.
    await table.batchPut([call(workspace_id) as unknown as Record<string, unknown>]);
    expect((await listCallItems(workspace_id, { limit: 1, sort_order: 'descending', include_total: true })).total).toBe(1);
  });
});
