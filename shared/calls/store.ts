import { createHash } from 'node:crypto';
import { notFound, unavailable } from '../platform/errors.ts';
import { canonicalE164 } from '../platform/telephony/phone.ts';
import { keys } from '../platform/store/keys.ts';
import { completeCountedTotal, countChange, COUNTED, countedTotal, transactCounted, uncount, type CountedListing } from '../platform/store/listing-count.ts';
import { fieldChanges } from '../platform/store/update-expression.ts';
import { ConditionFailed, defineEntity, table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import { linePuts, readCallWithLines, type TranscriptLine } from './line-store.ts';
import type { CallItem } from './items.ts';
import { publishCallChange } from './live/push.ts';
import type { CallStatus } from './schemas.ts';
import { assembleTranscript } from './transcript.ts';

/*
 * The calls domain's items (the call item's type is in items.ts). A call is one item in its
 * own partition (`CALL#<id>`), with the wire fields at the top level (so the listing index
 * can project what lists filter on) and the engine's working state beside them under
 * `engine`. Its transcript is not on it: each entry is a line item in the same partition,
 * written once with the call's `line_count` (line-store.ts), and assembled on read
 * (transcript.ts), so the item stays small however long the call runs. The workspace's
 * listing is gsi1, sharded (CALL_LISTING_SHARDS partitions a workspace, chosen by the call
 * ID) so a busy workspace's writes spread; each shard has a counter of its calls
 * (platform/store/listing-count.ts), written in the call's create and delete.
 */

export const CALL_LISTING_SHARDS = 4;

const shardOf = (callId: string): number =>
  createHash('sha256').update(callId).digest()[0]! % CALL_LISTING_SHARDS;

export type { CallItem, EngineState, RecordingState, SipLeg, SipStatusTransition, TransferState } from './items.ts';

export const callNotFound = () => notFound('Call not found');

/** The call item: keyed by its ID alone (the engine's steps and webhooks find it without a workspace). */
const calls = defineEntity<CallItem, [callId: string]>({ key: keys.call, notFound: callNotFound });
/** A media room's claim: which call it carries (a caller-joined webhook creates at most one). */
const mediaRooms = defineEntity<{ pk: string; sk: string; call_id: string; claimed_timestamp: number; expires_at: number } & Partial<MediaRoomEnd>, [room: string]>({
  key: keys.mediaRoom,
  notFound: () => notFound('Media room not found'),
});

/** A call of this workspace, or 404 (another workspace's call is as absent as an unknown one). */
export async function getCallItem(workspaceId: string, callId: string): Promise<CallItem> {
  const item = await calls.get(callId);
  if (!item || item.workspace_id !== workspaceId) throw callNotFound();
  return item;
}

/** A call by ID alone, for the engine's own steps (they carry the workspace and check it). */
export async function findCallItem(callId: string): Promise<CallItem | undefined> {
  return calls.get(callId);
}

/** A call of this workspace with its transcript (the item and its lines, read side by side), or 404. */
export async function getCallWithTranscript(workspaceId: string, callId: string): Promise<CallItem> {
  const call = await findCallWithTranscript(callId);
  if (!call || call.workspace_id !== workspaceId) throw callNotFound();
  return call;
}

/** A call by ID alone with its transcript (the public call log names no workspace). */
export async function findCallWithTranscript(callId: string): Promise<CallItem | undefined> {
  const { call, lines } = await readCallWithLines(callId);
  return call ? assembleTranscript(call, lines) : undefined;
}

/** The call's item from its fields (the keys and the listing entry are derived here). */
export function newCallItem(
  fields: Partial<CallItem> & Pick<CallItem, 'call_id' | 'workspace_id' | 'call_type' | 'call_status' | 'agent_id' | 'agent_version' | 'engine' | 'created_timestamp'>,
): CallItem {
  const party = otherParty(fields);
  return {
    ...keys.call(fields.call_id),
    ...keys.callListing(fields.workspace_id, shardOf(fields.call_id)),
    gsi1sk: fields.call_id,
    ...(party ? keys.partyConversation(fields.workspace_id, party, fields.created_timestamp, fields.call_id) : {}),
    type: 'call',
    ...fields,
  } as CallItem;
}

/**
 * The other party of a phone call, as the contacts' conversation index (gsi2) files it:
 * the dialled number outbound, the caller inbound (when it is a valid E.164 number; an
 * anonymous caller has none). Web calls have no party.
 */
function otherParty(fields: Partial<CallItem>): string | undefined {
  if (fields.call_type !== 'phone_call') return undefined;
  const number = fields.direction === 'inbound' ? fields.from_number : fields.direction === 'outbound' ? fields.to_number : undefined;
  return typeof number === 'string' && canonicalE164(number) ? number : undefined;
}

/** The counter of the listing shard a call is in. */
const callCounter = (workspaceId: string, callId: string) => keys.listingCount(workspaceId, 'CALL', shardOf(callId));

/** A new call, counted in its workspace's total in the same transaction; ConditionFailed when the ID is taken. */
export async function putNewCall(item: CallItem): Promise<void> {
  try {
    await transactCounted([
      { Put: { Item: { ...item, [COUNTED]: true }, ConditionExpression: 'attribute_not_exists(pk)' } },
      countChange(callCounter(item.workspace_id, item.call_id), 1),
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) throw new ConditionFailed();
    throw error;
  }
}

/**
 * Writes many new whole call items at once (BatchWrite, no conditions), then adds them to
 * their counters: not atomic, and an item with the same key is replaced but counted again.
 * Only for new items built by newCallItem that the caller holds whole: the export-at-scale
 * test seeds thousands of ended calls this way (test/support/factories.ts).
 */
export async function putCallItems(items: readonly CallItem[]): Promise<void> {
  await table.batchPut(items.map((item) => ({ ...item, [COUNTED]: true })));
  const added = new Map<string, { key: ReturnType<typeof callCounter>; n: number }>();
  for (const item of items) {
    const key = callCounter(item.workspace_id, item.call_id);
    const entry = added.get(`${key.pk}\u0000${key.sk}`) ?? { key, n: 0 };
    entry.n++;
    added.set(`${key.pk}\u0000${key.sk}`, entry);
  }
  for (const { key, n } of added.values()) await transactCounted([countChange(key, n)]);
}

export interface Transition {
  from: readonly CallStatus[];
  to?: CallStatus;
  /** Fields to set (undefined values are skipped). */
  set?: Record<string, unknown>;
  /** Fields to remove. */
  remove?: readonly string[];
  /** Only while this engine counter has this value (a stale or repeated step changes nothing). */
  guard?: { field: 'step_seq' | 'analysis_seq' | 'report_seq' | 'transfer_seq' | 'dial_seq'; equals: number };
  /**
   * Transcript lines written with the change, in one transaction (line-store.ts), only while
   * the call's `line_count` is still `after` (the count read): keyed by `ordinal` (the
   * worker report's sequence; the engine's own writes use `after`, their first position).
   */
  append?: { workspaceId: string; ordinal: number; after: number; lines: readonly TranscriptLine[] };
}

/**
 * The lines of an append were written before (a redelivered or duplicated worker report):
 * nothing was written now.
 */
export class LinesAlreadyWritten extends Error {
  constructor() {
    super('These transcript lines were written already');
    this.name = 'LinesAlreadyWritten';
  }
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
    names['#seq'] = change.guard.field;
    values[':seq'] = change.guard.equals;
    // transfer_seq and dial_seq are top-level attributes; the others live under engine.
    let path = '#seq';
    if (change.guard.field !== 'transfer_seq' && change.guard.field !== 'dial_seq') {
      names['#engine'] = 'engine';
      path = '#engine.#seq';
    }
    // A counter not written yet reads as 0.
    condition += change.guard.equals === 0 ? ` AND (attribute_not_exists(${path}) OR ${path} = :seq)` : ` AND ${path} = :seq`;
  }
  const append = change.append;
  if (append) {
    names['#lines'] = 'line_count';
    values[':lines'] = append.after + append.lines.length;
    values[':linesRead'] = append.after;
    sets.push('#lines = :lines');
    condition += append.after === 0 ? ' AND (attribute_not_exists(#lines) OR #lines = :linesRead)' : ' AND #lines = :linesRead';
  }
  const expression = [sets.length ? `SET ${sets.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].join(' ').trim();
  const update = { Key: keys.call(callId), UpdateExpression: expression, ConditionExpression: condition, ExpressionAttributeNames: names, ExpressionAttributeValues: values };
  let updated: CallItem | undefined;
  try {
    if (append?.lines.length) {
      // The lines and the call's count together: a line is never there without the count, nor the count without it.
      await table.transact([{ Update: update }, ...linePuts({ call_id: callId, workspace_id: append.workspaceId }, append.ordinal, append.after, append.lines)]);
      updated = await table.get<CallItem>(keys.call(callId));
    } else {
      updated = await table.update<CallItem>({ ...update, ReturnValues: 'ALL_NEW' });
    }
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    if (error instanceof TransactionCancelled) {
      // Only the lines' keys were taken: the same lines were written before (the call's own condition held).
      if (!error.conflicted && error.failedAt.length > 0 && !error.failedAt.includes(0)) throw new LinesAlreadyWritten();
      return undefined;
    }
    throw error;
  }
  // WebSocket monitors of the call get what changed (live/push.ts; nothing when none watches).
  if (updated) await publishCallChange(updated);
  return updated;
}

/** Sets fields on a call of this workspace without a state change (update-call). */
export async function updateCallFields(workspaceId: string, callId: string, fields: Record<string, unknown>): Promise<CallItem> {
  const { set, remove } = fieldChanges(fields);
  if (Object.keys(set).length === 0 && remove.length === 0) return getCallItem(workspaceId, callId);
  const updated = await calls.setFields(
    [callId],
    {
      set,
      remove,
      condition: 'attribute_exists(pk) AND #ws = :ws',
      names: { '#ws': 'workspace_id' },
      values: { ':ws': workspaceId },
    },
    () => {
      throw callNotFound();
    },
  );
  return updated!;
}

/**
 * Deletes a call of this workspace: first out of the workspace's total (once, however many
 * deletes race), then the item, answered as it was.
 */
export async function deleteCallItem(workspaceId: string, callId: string): Promise<CallItem> {
  const owner = { expression: 'workspace_id = :ws', values: { ':ws': workspaceId } };
  for (let attempt = 0; attempt < 5; attempt++) {
    await uncount(keys.call(callId), callCounter(workspaceId, callId), owner);
    // Only while unmarked: an item counted in between (countCallsWrittenBefore) is uncounted again first.
    const old = await calls.take(
      [callId],
      { expression: 'attribute_exists(pk) AND workspace_id = :ws AND attribute_not_exists(#counted)', names: { '#counted': COUNTED }, values: owner.values },
      (current) => {
        if (current?.workspace_id === workspaceId) return undefined;
        throw callNotFound();
      },
    );
    if (old) return old;
  }
  throw unavailable('The call is being changed too fast to delete; retry', 1);
}

/**
 * A transaction's check that the call is still the workspace's: what another domain writes
 * about a call (a QA result) is then never written once the call is deleted, so deleting
 * what quotes it after the call's item is gone leaves nothing behind.
 */
export function callExistsCheck(workspaceId: string, callId: string): TransactOp {
  return { ConditionCheck: { Key: keys.call(callId), ConditionExpression: 'attribute_exists(pk) AND workspace_id = :ws', ExpressionAttributeValues: { ':ws': workspaceId } } };
}

/** The workspace's call listing as the listing backfill counts it (shared/platform/store/listing-count.ts). */
export function countedCallListing(workspaceId: string): CountedListing {
  return {
    partitions: callListingPartitions(workspaceId),
    idAttribute: 'call_id',
    item: keys.call,
    counter: (callId) => callCounter(workspaceId, callId),
    owner: { expression: 'workspace_id = :ws', values: { ':ws': workspaceId } },
  };
}

/** The listing index partitions (gsi1) of a workspace's calls. */
export function callListingPartitions(workspaceId: string): string[] {
  return Array.from({ length: CALL_LISTING_SHARDS }, (_, shard) => keys.callListing(workspaceId, shard).gsi1pk);
}

/** How many calls the workspace has (its listing counters: one Query, whatever the history's size). */
export function countCalls(workspaceId: string): Promise<number> {
  return countedTotal(keys.listingCounts(workspaceId, 'CALL'));
}

/** countCalls once the counters hold every call of the workspace; undefined before its backfill. */
export function countCallsIfComplete(workspaceId: string): Promise<number | undefined> {
  return completeCountedTotal(keys.listingCounts(workspaceId, 'CALL'), keys.listingCountsComplete(workspaceId));
}

export type CallListingEntry = Pick<CallItem, 'pk' | 'sk' | 'call_id' | 'gsi1sk'> & Record<string, unknown>;


/** How long a room's claim is kept: far longer than any call, then DynamoDB's TTL removes it. */
const ROOM_CLAIM_TTL_SECONDS = 7 * 86_400;

/**
 * Claims a media room for a call, once: the first claim wins (a conditional put), so a
 * redelivered or duplicated "caller joined" webhook never creates a second call. Answers
 * whether this claim won.
 */
export async function claimMediaRoom(room: string, callId: string, nowMs = Date.now()): Promise<boolean> {
  return mediaRooms.putIf({ call_id: callId, claimed_timestamp: nowMs, expires_at: Math.floor(nowMs / 1000) + ROOM_CLAIM_TTL_SECONDS }, [room]);
}

/** The call a claimed room carries, if any. */
export async function callOfMediaRoom(room: string): Promise<string | undefined> {
  return (await mediaRooms.get(room))?.call_id;
}

/** A claimed room's caller left (or the room finished): when, and by which event. */
export interface MediaRoomEnd {
  ended_timestamp: number;
  ended_by: string;
}

/**
 * Records on a claimed room that its caller is gone, for an admission still running (the
 * call not written yet) to honour: the first mark stays (a redelivery changes nothing).
 * Answers the claim's call ID; undefined when the room has no claim.
 */
export async function markMediaRoomEnded(room: string, end: MediaRoomEnd): Promise<string | undefined> {
  const claim = await mediaRooms.update([room], {
    UpdateExpression: 'SET ended_timestamp = if_not_exists(ended_timestamp, :at), ended_by = if_not_exists(ended_by, :by)',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':at': end.ended_timestamp, ':by': end.ended_by },
  });
  return claim?.call_id;
}

/** The end recorded on a claimed room (markMediaRoomEnded), if its caller is gone. */
export async function mediaRoomEnd(room: string): Promise<MediaRoomEnd | undefined> {
  const claim = await table.get<Partial<MediaRoomEnd>>(keys.mediaRoom(room));
  return claim?.ended_timestamp !== undefined ? { ended_timestamp: claim.ended_timestamp, ended_by: claim.ended_by ?? 'room_finished' } : undefined;
}

/** The media room a call lives in: its own name, unless the dispatch rule named it. */
export const roomOf = (call: Pick<CallItem, 'call_id' | 'engine'>): string => call.engine.room ?? call.call_id;

;

/**
 * The IDs of a workspace's calls whose other party is `e164` (gsi2, as the contacts'
 * timeline reads it), every page: what a privacy erase of that number deletes.
 */
export async function queryCallIdsByParty(workspaceId: string, e164: string): Promise<string[]> {
  const entries = await table.queryAll<{ call_id?: string; type?: string }>({
    IndexName: 'gsi2',
    KeyConditionExpression: 'gsi2pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.partyConversations(workspaceId, e164).gsi2pk },
  });
  return entries.filter((entry) => entry.type === 'call' && entry.call_id).map((entry) => entry.call_id!);
}
