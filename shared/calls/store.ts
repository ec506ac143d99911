import { createHash } from 'node:crypto';
import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { ConditionFailed, table } from '../platform/store/table.ts';
import type { CallStatus, CallView, DisconnectionReason } from './schemas.ts';

/*
 * The calls domain's items. A call is one item in its own partition (`CALL#<id>`), with
 * the wire fields at the top level (so the listing index can project what lists filter
 * on) and the engine's working state beside them under `engine`. The workspace's listing
 * is gsi1, sharded (CALL_LISTING_SHARDS partitions a workspace, chosen by the call ID) so
 * a busy workspace's writes spread.
 */

export const CALL_LISTING_SHARDS = 4;

export const shardOf = (callId: string): number =>
  createHash('sha256').update(callId).digest()[0]! % CALL_LISTING_SHARDS;

/** What the engine keeps between steps; never answered. */
export interface EngineState {
  /** The sandbox's script: the callee's lines still to say, and how long the call may last. */
  sandbox?: { user_lines: string[]; call_ms: number; voicemail?: boolean };
  /** The response engine's own state (shared/conversation), plain JSON. */
  conversation?: unknown;
  /** Whether this call holds a concurrency slot (released exactly once on its end). */
  slot?: boolean;
  /** The index of the callee's next scripted line: a user step carries it, a stale one is dropped. */
  step_seq?: number;
  /** Counts analyses: an analysis step carries it, so a redelivered one changes nothing. */
  analysis_seq?: number;
  /** The last agent-worker report applied (LiveKit calls): reports at or below it change nothing. */
  report_seq?: number;
  /** Measured response-engine turn times (ms), for `latency`. */
  turn_ms?: number[];
  /** When transcript_updated was last sent (at most every 3 s). */
  transcript_sent_at?: number;
  /** The media layer in use when the call started. */
  media?: 'sandbox' | 'livekit';
  /** Why the call was created (outbound dial, web, register, inbound). */
  origin?: 'create-phone-call' | 'create-web-call' | 'register-phone-call' | 'inbound' | 'batch';
  /** The batch task that placed the call (shared/calls/batch-dial.ts); `dialled` adds the batch_dial cost line. */
  batch?: { batch_call_id: string; task_index: number; dialled: boolean };
}

export type CallItem = CallView & {
  pk: string;
  sk: string;
  gsi1pk: string;
  gsi1sk: string;
  type: 'call';
  workspace_id: string;
  created_timestamp: number;
  engine: EngineState;
  /** Flattened for the listing index (see docs/data-model.md, The listing index's projection). */
  user_sentiment?: string;
  call_successful?: boolean;
  in_voicemail?: boolean;
  combined_cost?: number;
  e2e_latency_p50?: number;
};

export const callNotFound = () => notFound('Call not found');

/** A call of this workspace, or 404 (another workspace's call is as absent as an unknown one). */
export async function getCallItem(workspaceId: string, callId: string): Promise<CallItem> {
  const item = await table.get<CallItem>(keys.call(callId));
  if (!item || item.workspace_id !== workspaceId) throw callNotFound();
  return item;
}

/** A call by ID alone, for the engine's own steps (they carry the workspace and check it). */
export async function findCallItem(callId: string): Promise<CallItem | undefined> {
  return table.get<CallItem>(keys.call(callId));
}

/** The call's item from its fields (the keys and the listing entry are derived here). */
export function newCallItem(
  fields: Partial<CallItem> & Pick<CallItem, 'call_id' | 'workspace_id' | 'call_type' | 'call_status' | 'agent_id' | 'agent_version' | 'engine' | 'created_timestamp'>,
): CallItem {
  return {
    ...keys.call(fields.call_id),
    ...keys.callListing(fields.workspace_id, shardOf(fields.call_id)),
    gsi1sk: fields.call_id,
    type: 'call',
    ...fields,
  } as CallItem;
}

export async function putNewCall(item: CallItem): Promise<void> {
  await table.put({ Item: item, ConditionExpression: 'attribute_not_exists(pk)' });
}

export interface Transition {
  from: readonly CallStatus[];
  to?: CallStatus;
  /** Fields to set (undefined values are skipped). */
  set?: Record<string, unknown>;
  /** Fields to remove. */
  remove?: readonly string[];
  /** Only while this engine counter has this value (a stale or repeated step changes nothing). */
  guard?: { field: 'step_seq' | 'analysis_seq' | 'report_seq'; equals: number };
}

/**
 * Moves a call between states with a conditional write: the call must be in one of `from`
 * (and at `stepSeq`, when given). A late or duplicated event finds the condition false and
 * changes nothing: the answer is then undefined.
 */
export async function transitionCall(callId: string, change: Transition): Promise<CallItem | undefined> {
  const names: Record<string, string> = { '#status': 'call_status' };
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const fields = { ...(change.set ?? {}), ...(change.to ? { call_status: change.to } : {}) };
  Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .forEach(([field, value], i) => {
      if (field === 'call_status') {
        sets.push('#status = :to');
        values[':to'] = value;
        return;
      }
      names[`#s${i}`] = field;
      values[`:s${i}`] = value;
      sets.push(`#s${i} = :s${i}`);
    });
  const removes = (change.remove ?? []).map((field, i) => {
    names[`#r${i}`] = field;
    return `#r${i}`;
  });
  const from = change.from.map((status, i) => {
    values[`:from${i}`] = status;
    return `:from${i}`;
  });
  let condition = `attribute_exists(pk) AND #status IN (${from.join(', ')})`;
  if (change.guard) {
    names['#engine'] = 'engine';
    names['#seq'] = change.guard.field;
    values[':seq'] = change.guard.equals;
    // A counter not written yet reads as 0.
    condition += change.guard.equals === 0 ? ' AND (attribute_not_exists(#engine.#seq) OR #engine.#seq = :seq)' : ' AND #engine.#seq = :seq';
  }
  const expression = [sets.length ? `SET ${sets.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].join(' ').trim();
  try {
    return await table.update<CallItem>({
      Key: keys.call(callId),
      UpdateExpression: expression,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    });
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

/** Sets fields on a call of this workspace without a state change (update-call). */
export async function updateCallFields(workspaceId: string, callId: string, fields: Record<string, unknown>): Promise<CallItem> {
  const names: Record<string, string> = { '#ws': 'workspace_id' };
  const values: Record<string, unknown> = { ':ws': workspaceId };
  const sets = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([field, value], i) => {
      names[`#f${i}`] = field;
      values[`:f${i}`] = value;
      return `#f${i} = :f${i}`;
    });
  if (sets.length === 0) return getCallItem(workspaceId, callId);
  try {
    return (await table.update<CallItem>({
      Key: keys.call(callId),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: 'attribute_exists(pk) AND #ws = :ws',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    }))!;
  } catch (error) {
    if (error instanceof ConditionFailed) throw callNotFound();
    throw error;
  }
}

export async function deleteCallItem(workspaceId: string, callId: string): Promise<CallItem> {
  try {
    const old = await table.delete<CallItem>({
      Key: keys.call(callId),
      ConditionExpression: 'attribute_exists(pk) AND workspace_id = :ws',
      ExpressionAttributeValues: { ':ws': workspaceId },
      ReturnValues: 'ALL_OLD',
    });
    return old!;
  } catch (error) {
    if (error instanceof ConditionFailed) throw callNotFound();
    throw error;
  }
}

/** One shard's listing entries after (or before) a call ID, as gsi1 projects them. */
export async function queryCallListing(input: {
  workspaceId: string;
  shard: number;
  ascending: boolean;
  /** Exclusive bound: entries strictly after this call ID in the sort order. */
  after?: string;
  filter?: { expression: string; names: Record<string, string>; values: Record<string, unknown> };
  limit: number;
  exclusiveStartKey?: Record<string, unknown>;
}): Promise<{ items: CallListingEntry[]; lastKey?: Record<string, unknown> }> {
  const names: Record<string, string> = { ...(input.filter?.names ?? {}) };
  const values: Record<string, unknown> = { ...(input.filter?.values ?? {}), ':gpk': keys.callListing(input.workspaceId, input.shard).gsi1pk };
  let keyCondition = 'gsi1pk = :gpk';
  if (input.after) {
    values[':after'] = input.after;
    keyCondition += input.ascending ? ' AND gsi1sk > :after' : ' AND gsi1sk < :after';
  }
  const page = await table.queryPage<CallListingEntry>({
    IndexName: 'gsi1',
    KeyConditionExpression: keyCondition,
    FilterExpression: input.filter?.expression,
    ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
    ExpressionAttributeValues: values,
    ScanIndexForward: input.ascending,
    Limit: input.limit,
    ExclusiveStartKey: input.exclusiveStartKey,
  });
  return { items: page.items, lastKey: page.lastKey };
}

export type CallListingEntry = Pick<CallItem, 'pk' | 'sk' | 'call_id' | 'gsi1sk'> & Record<string, unknown>;

export async function batchGetCalls(entries: readonly Pick<CallItem, 'pk' | 'sk'>[]): Promise<CallItem[]> {
  return table.batchGet<CallItem>(entries.map(({ pk, sk }) => ({ pk, sk })));
}

export type { CallStatus, DisconnectionReason };
