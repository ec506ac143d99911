import { describe, expect, it } from 'vitest';
import { createWorkspace } from '../../shared/account/workspaces.ts';
import { listCallItems } from '../../shared/calls/listing.ts';
import { deleteCall } from '../../shared/calls/erasure/index.ts';
import {
  callListingPartitions,
  countCalls,
  countedCallListing,
  deleteCallItem,
  newCallItem,
  putNewCall,
  type CallListingEntry,
} from '../../shared/calls/store.ts';
import { listChatItems } from '../../shared/chats/listing.ts';
import { countChats, countedChatListing, deleteChatItems, newChatItem, putNewChat } from '../../shared/chats/store.ts';
import { newId, newTimeOrderedId } from '../../shared/platform/ids.ts';
import { countListing, firstEntries, mergedEntries } from '../../shared/platform/store/sharded-listing.ts';
import { table } from '../../shared/platform/store/table.ts';
import { COUNTED, countListingPage, markListingCountsComplete, type CountedListing, type ListingBackfillPosition } from '../../shared/platform/store/listing-count.ts';
import { runListingBackfill } from '../../shared/account-data/jobs.ts';
import { localQueue } from '../../local/queues.ts';
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

/** Counts a listing's uncounted items page by page to its end, as the backfill job does for one workspace. */
async function countAll(listing: CountedListing): Promise<number> {
  let counted = 0;
  let position: ListingBackfillPosition | undefined = { shard: 0 };
  while (position) {
    const page = await countListingPage(listing, position);
    counted += page.counted;
    position = page.next;
  }
  return counted;
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
      countAll(countedCallListing(ws)),
      ...fresh.map((item) => putNewCall(item)),
      // Deletes of old calls racing the backfill: each is counted and uncounted, or neither.
      ...old.slice(0, 10).map((item) => deleteCallItem(ws, item.call_id)),
    ]);
    expect(counted).toBeLessThanOrEqual(30);
    expect(await countCalls(ws)).toBe(30);
    expect(await indexed(ws)).toBe(30);
    // A second run counts nothing.
    expect(await countAll(countedCallListing(ws))).toBe(0);
    expect(await countAll(countedChatListing(ws))).toBe(5);
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

    // What the backfill job does for each workspace.
    expect(await countAll(countedCallListing(ws))).toBe(12);
    expect(await countAll(countedChatListing(ws))).toBe(3);
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

describe('the listing backfill job', () => {
  // Where a run out of budget queues its continuation (no consumer runs here: the test runs each one).
  const queue = localQueue('export-jobs');
  const continuations = () => queue.list().filter((message) => JSON.parse(message.body).kind === 'listing-backfill').length;

  /** A workspace from before the counters: registered, its calls and chats stored unmarked, no marker. */
  async function workspaceFromBefore(calls: number, chats: number): Promise<string> {
    const { workspace_id } = await createWorkspace('From before the counters');
    await table.delete({ Key: keys.listingCountsComplete(workspace_id) });
    await table.batchPut(Array.from({ length: calls }, () => call(workspace_id)) as unknown as Record<string, unknown>[]);
    await table.batchPut(Array.from({ length: chats }, () => chat(workspace_id)) as unknown as Record<string, unknown>[]);
    return workspace_id;
  }

  it('counts every unmarked workspace in budgeted runs from its cursor, marks each, then ends and costs one read a run', async () => {
    const first = await workspaceFromBefore(3, 2);
    const second = await workspaceFromBefore(4, 0);
    // The first run and those within half an hour of it count nothing: the deploy may still be
    // shifting traffic from a release that writes calls without counting them.
    const firstRun = Date.now();
    expect(await runListingBackfill({ clock: () => firstRun })).toMatchObject({ outcome: 'skipped', calls_counted: 0 });
    expect(await runListingBackfill({ clock: () => firstRun + 29 * 60_000 })).toMatchObject({ outcome: 'skipped', calls_counted: 0 });
    expect(await countCalls(first)).toBe(0);
    const later = () => firstRun + 30 * 60_000;
    // Each old workspace is 8 index pages (4 call shards, 4 chat shards); 4 pages a run.
    const outcomes: string[] = [];
    const totals = { workspaces_marked: 0, calls_counted: 0, chats_counted: 0 };
    for (let run = 0; run < 10 && outcomes.at(-1) !== 'complete'; run++) {
      const result = await runListingBackfill({ limits: { pages: 4, ms: 60_000, rolloutMs: 30 * 60_000 }, clock: later });
      outcomes.push(result.outcome);
      totals.workspaces_marked += result.workspaces_marked;
      totals.calls_counted += result.calls_counted;
      totals.chats_counted += result.chats_counted;
    }
    // Two runs a workspace, then one whose rounds find every workspace marked; each run out
    // of budget queued the next.
    expect(outcomes).toEqual(['continued', 'continued', 'continued', 'continued', 'complete']);
    expect(continuations()).toBe(4);
    expect(totals).toEqual({ workspaces_marked: 2, calls_counted: 7, chats_counted: 2 });
    expect([await countCalls(first), await countChats(first), await countCalls(second)]).toEqual([3, 2, 4]);
    expect(await table.get(keys.listingCountsComplete(first))).toBeDefined();
    expect(await table.get(keys.listingCountsComplete(second))).toBeDefined();
    // Totals now come from the counters.
    expect((await listCallItems(first, { limit: 1, sort_order: 'descending', include_total: true })).total).toBe(3);

    // Done: a workspace unmarked after the end is no longer looked for (new ones are marked at creation).
    const late = await workspaceFromBefore(1, 0);
    expect(await runListingBackfill()).toEqual({ outcome: 'skipped', workspaces_marked: 0, calls_counted: 0, chats_counted: 0 });
    expect(await countCalls(late)).toBe(0);
  }, 60_000);

  it('lets one run at a time hold the job: a run started beside another does nothing', async () => {
    // Started again (the cursor gone): the workspace the last test left unmarked (1 call) and this one.
    await table.delete({ Key: keys.jobCursor('listing-backfill') });
    await workspaceFromBefore(2, 1);
    const now = { limits: { pages: 400, ms: 60_000, rolloutMs: 0 } };
    const results = await Promise.all([runListingBackfill(now), runListingBackfill(now)]);
    expect(results.map((result) => result.outcome).sort()).toEqual(['complete', 'skipped']);
    expect(continuations()).toBe(4);
    expect(results.reduce((sum, result) => sum + result.calls_counted, 0)).toBe(3);
  }, 60_000);
});
