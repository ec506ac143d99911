import { NotFound } from '../platform/errors.ts';
import { parseOrThrow } from '../platform/http/validation.ts';
import { listCallItems } from './listing.ts';
import { toCallView } from './view.ts';
import { CallFilter, type CallView } from './schemas.ts';
import { callListingPartitions, getCallItem, getCallWithTranscript, queryCallIdsByParty, type CallItem, type CallListingEntry } from './store.ts';
import { timeOfOrderedId, timeOrderedIdFloor } from '../platform/ids.ts';
import { firstEntries, mergedEntries, readListedItems, shardReadSizes } from '../platform/store/sharded-listing.ts';
import { withTranscripts } from './transcript.ts';

/** One call as the API shows it, with its transcript (its item and a Query of its lines). */
export async function getCall(workspaceId: string, callId: string): Promise<CallView> {
  return toCallView(await getCallWithTranscript(workspaceId, callId));
}

/** 404 unless the call is this workspace's (its item alone: no transcript is read). */
export async function assertCallOf(workspaceId: string, callId: string): Promise<void> {
  await getCallItem(workspaceId, callId);
}

/*
 * A workspace's call history page by page, oldest first, for jobs that walk it (the
 * contacts backfill, CRM syncs): a query of the listing index (gsi1), never a scan, and the
 * calls' transcripts (one Query per call with lines, a few at a time). `after` is the last
 * call ID of the previous page (call IDs sort by time).
 */
export async function callHistoryPage(
  workspaceId: string,
  input: { after?: string; limit: number },
): Promise<{ calls: CallView[]; next?: string }> {
  const { items, hasMore } = await listCallItems(workspaceId, {
    limit: input.limit,
    sort_order: 'ascending',
    pagination_key: input.after,
  });
  const calls = (await withTranscripts(items)).map((item) => toCallView(item));
  return { calls, ...(hasMore && items.length ? { next: items.at(-1)!.call_id } : {}) };
}

/**
 * A page of a workspace's calls for an export, oldest first, with the filter of
 * `POST /v3/list-calls` (already checked by parseCallFilter) and their transcripts: `after`
 * is the last call ID of the previous page.
 */
export async function callExportPage(
  workspaceId: string,
  input: { after?: string; limit: number; filter?: CallFilter },
): Promise<{ calls: CallView[]; next?: string }> {
  const { items, hasMore } = await listCallItems(workspaceId, {
    limit: input.limit,
    sort_order: 'ascending',
    pagination_key: input.after,
    ...(input.filter ? { filter_criteria: input.filter } : {}),
  });
  const calls = (await withTranscripts(items)).map((item) => toCallView(item));
  return { calls, ...(hasMore && items.length ? { next: items.at(-1)!.call_id } : {}) };
}

/** A call filter (retell-sdk's FilterCriteria, as list-calls takes it), or a 400 naming `field`. */
export function parseCallFilter(value: unknown, field: string): CallFilter {
  return parseOrThrow(CallFilter(), value, field);
}

/** The IDs of the workspace's phone calls with `e164` as the other party (a privacy erase). */
export const callIdsWithNumber = (workspaceId: string, e164: string): Promise<string[]> => queryCallIdsByParty(workspaceId, e164);

/**
 * A page of the workspace's calls created before `createdBeforeMs`, oldest first, as
 * retention judges them (agent version, creation time): index entries only (gsi1 projects
 * the agent and its version; the creation time is the time-ordered call ID's), never the
 * items, and the walk ends at the cutoff instead of going through the newest calls.
 */
export async function callRetentionPage(
  workspaceId: string,
  input: { after?: string; limit: number; createdBeforeMs: number },
): Promise<{ calls: { call_id: string; agent_id: string; agent_version?: number; created_timestamp: number }[]; next?: string }> {
  const entries = await firstEntries(
    mergedEntries<CallListingEntry>({
      gsi1pks: callListingPartitions(workspaceId),
      ascending: true,
      after: input.after,
      until: timeOrderedIdFloor('call', input.createdBeforeMs),
      idOf: (entry) => entry.call_id,
      ...shardReadSizes(input.limit + 1, callListingPartitions(workspaceId).length, false),
    }),
    input.limit + 1,
  );
  const page = entries.slice(0, input.limit);
  return {
    calls: page.map((entry) => ({
      call_id: entry.call_id,
      agent_id: entry.agent_id as string,
      agent_version: entry.agent_version as number | undefined,
      created_timestamp: timeOfOrderedId('call', entry.call_id),
    })),
    ...(entries.length > input.limit ? { next: page.at(-1)!.call_id } : {}),
  };
}

/**
 * A page of the workspace's calls, oldest first, as stored (items without their transcript
 * lines): what the analytics backfill adds to the rollups. `after` is the last call ID of
 * the previous page; a call deleted since is no obstacle (the index is read from the ID).
 */
export async function storedCallPage(workspaceId: string, input: { after?: string; limit: number }): Promise<{ calls: CallItem[]; next?: string }> {
  const gsi1pks = callListingPartitions(workspaceId);
  const entries = await firstEntries(
    mergedEntries<CallListingEntry>({ gsi1pks, ascending: true, after: input.after, idOf: (entry) => entry.call_id, ...shardReadSizes(input.limit + 1, gsi1pks.length, false) }),
    input.limit + 1,
  );
  const page = entries.slice(0, input.limit);
  return { calls: await readListedItems<CallItem>(page), ...(entries.length > input.limit ? { next: page.at(-1)!.call_id } : {}) };
}

/** One call of the workspace as stored (no transcript lines), or undefined when it is gone. */
export async function storedCall(workspaceId: string, callId: string): Promise<CallItem | undefined> {
  try {
    return await getCallItem(workspaceId, callId);
  } catch (error) {
    if (error instanceof NotFound) return undefined;
    throw error;
  }
}
