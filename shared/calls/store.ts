import { createHash } from 'node:crypto';
import { notFound } from '../platform/errors.ts';
import { canonicalE164 } from '../platform/phone.ts';
import { keys } from '../platform/store/keys.ts';
import { ConditionFailed, table, TransactionCancelled } from '../platform/store/table.ts';
import { setOrRemove } from '../platform/store/update-expression.ts';
import type { TransferOptions } from '../conversation/index.ts';
import type { AgentOverride } from './agent-override.ts';
import { linePuts, readCallWithLines, type TranscriptLine } from './line-store.ts';
import type { LiveLogEntry } from './live-frames.ts';
import { publishCallChange } from './live-push.ts';
import type { CallStatus, CallView, DisconnectionReason } from './schemas.ts';
import { assembleTranscript } from './transcript.ts';

/*
 * The calls domain's items. A call is one item in its own partition (`CALL#<id>`), with
 * the wire fields at the top level (so the listing index can project what lists filter
 * on) and the engine's working state beside them under `engine`. Its transcript is not on
 * it: each entry is a line item in the same partition, written once with the call's
 * `line_count` (line-store.ts), and assembled on read (transcript.ts), so the item stays
 * small however long the call runs. The workspace's listing is gsi1, sharded
 * (CALL_LISTING_SHARDS partitions a workspace, chosen by the call ID) so a busy
 * workspace's writes spread.
 */

export const CALL_LISTING_SHARDS = 4;

export const shardOf = (callId: string): number =>
  createHash('sha256').update(callId).digest()[0]! % CALL_LISTING_SHARDS;

/** What the engine keeps between steps; never answered. */
export interface EngineState {
  /** The sandbox's script: the callee's lines still to say, and how long the call may last. */
  sandbox?: {
    user_lines: string[];
    call_ms: number;
    /** The lines are the ordinary ones (metadata gave sandbox keys but no script): said while the call lasts, they do not hold its hang-up. */
    unscripted?: boolean;
    voicemail?: boolean;
    transfer_ring_ms?: number;
    /** What a sandbox transfer's destination says to an agentic warm transfer's mediator (`metadata.sandbox_transfer_says`). */
    transfer_lines?: string[];
  };
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
  /** The media server's room when it is not named after the call (an inbound SIP call's, made by LiveKit's dispatch rule). */
  room?: string;
  /** Why the call was created (outbound dial, web, register, inbound). */
  origin?: 'create-phone-call' | 'create-web-call' | 'register-phone-call' | 'inbound' | 'batch';
  /** The batch task that placed the call (shared/calls/batch-dial.ts); `dialled` adds the batch_dial cost line. */
  batch?: { batch_call_id: string; task_index: number; dialled: boolean };
  /** The caller's SIP participant identity in the room when it is not `callee` (inbound SIP calls): what a cold transfer REFERs. */
  sip_identity?: string;
  /** agent_override of the create request or the inbound webhook's answer, validated (agent-override.ts): this call's configuration only. */
  agent_override?: AgentOverride;
  /** How many of the call's `live_say` texts the sandbox agent has said (live-control.ts). */
  live_said?: number;
  /** The `live_patch.seq` the sandbox agent's conversation has taken in (update-live-call). */
  live_patch_seq?: number;
}

/** Where a call's recording is stored; on the call item, never answered. */
export interface RecordingState {
  key: string;
  content_type: string;
  /** The sandbox's tones (true), or a media server's recording. */
  synthetic: boolean;
  duration_ms: number;
  /** LiveKit Egress that records the room (its file lands at `key` when the egress ends). */
  egress_id?: string;
  /** The egress ended with its file written (egress_ended, complete). */
  ready?: boolean;
  /** The egress ended without a file: the call has no recording. */
  failed?: boolean;
  /** Turns silenced by remove-call-sensitive-data (indexes into transcript_object). */
  silenced_turns?: number[];
  /** A media server's recording removed by scrubbing (it cannot be silenced here), or any recording by the data storage setting basic_attributes_only. */
  removed?: boolean;
  /** The untouched recording, kept while the data storage setting allows (scrubbing.ts). */
  unscrubbed_key?: string;
}

/**
 * A transfer of the call's phone party (docs/calls.md, Transfers): kept at the item's top
 * level, beside `transfer_seq`, so the engine's other writes (which replace `engine`) never
 * undo it.
 */
export interface TransferState {
  kind: 'cold' | 'warm';
  destination: string;
  status: 'dialing' | 'bridged' | 'cancelled' | 'ended';
  started_timestamp: number;
  /** The transfer_seq its start wrote (the `transfer` step carries it). */
  started_seq?: number;
  /** Why a cancelled transfer did not bridge (dial_busy, dial_no_answer, dial_failed, transfer_declined, transfer_timeout, or the call ended first). */
  reason?: string;
  /** The transfer option's fields the engine acts on (agentic config, hold music, bridge cue, public handoff, ring time). */
  options?: TransferOptions;
  /**
   * An agentic warm transfer whose destination answered: the mediator talks to it while the
   * caller stays on hold (`status` is still `dialing`). Absent: ringing.
   */
  phase?: 'consulting';
}

/** One `sip.callStatus` the call's SIP participant reached, when, and who said so. */
export interface SipStatusTransition {
  /** LiveKit's `sip.callStatus`: dialing, ringing, automation, active, hangup (any other value is kept as reported). */
  status: string;
  /** Epoch ms. */
  at: number;
  /** A LiveKit webhook carrying the participant's attributes, or the dial's own answer (CreateSIPParticipant). */
  source: 'webhook' | 'dial';
  /** The webhook event that carried it (participant_joined, participant_left, track_published, …). */
  event?: string;
}

/**
 * What LiveKit reported about a call's SIP leg (shared/calls/sip-leg.ts): the SIP
 * participant's identifiers (its `sip.*` attributes) and each callStatus it reached, from
 * LiveKit's webhooks and the dial's answer. Top-level (the engine's writes replace
 * `engine`), bounded (SIP_LEG_MAX_TRANSITIONS), written conditionally on `rev`. Never
 * answered on the call; the SIP trace is built from it.
 */
export interface SipLeg {
  /** Bumped by every write: each write is conditional on the value it read. */
  rev: number;
  participant_identity?: string;
  participant_sid?: string;
  /** `sip.callID`: LiveKit's SIP call ID (SCL_…). */
  livekit_call_id?: string;
  /** `sip.callIDFull`: the dialog's Call-ID header, as the trunk provider sees it. */
  call_id_full?: string;
  /** `sip.phoneNumber`: the phone party (the callee outbound, the caller inbound). */
  phone_number?: string;
  /** `sip.trunkPhoneNumber`: the workspace's number on the trunk. */
  trunk_phone_number?: string;
  /** `sip.hostname`: the host on the far side of LiveKit's SIP service. */
  hostname?: string;
  /** The termination host the outbound trunk dialled (from the dial, when LiveKit named none). */
  trunk_host?: string;
  /** `sip.trunkID`, `sip.ruleID`. */
  trunk_id?: string;
  rule_id?: string;
  /** `lk.sip.inviteTime`: when LiveKit received an inbound INVITE (epoch ms). */
  invite_time?: number;
  /** When LiveKit said the participant joined the room (participant_joined; an inbound caller's INVITE was just accepted). */
  joined_at?: number;
  /** When the dial (CreateSIPParticipant) was sent: the outbound INVITE. */
  dial_started_at?: number;
  /** The SIP status that refused the dial (CreateSIPParticipant's error), when it failed. */
  failure?: { status_code: number; reason: string; at: number };
  /** LiveKit's DisconnectReason when the participant left (CLIENT_INITIATED, ROOM_DELETED, USER_REJECTED, …). */
  disconnect_reason?: string;
  transitions: SipStatusTransition[];
}

export type CallItem = CallView & {
  pk: string;
  sk: string;
  gsi1pk: string;
  gsi1sk: string;
  /** The conversations-by-party entry (gsi2): phone calls with a valid other party only. */
  gsi2pk?: string;
  gsi2sk?: string;
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
  /** SHA-256 of the idempotency_key the call was created with (its claim: idempotency.ts), so deleting the call scrubs the stored response. */
  idempotency_claim?: string;
  /** The current (or last) transfer and its counter: each change of a transfer is a write conditional on the counter. */
  transfer_state?: TransferState;
  transfer_seq?: number;
  transfer_destination?: string | null;
  transfer_end_timestamp?: number;
  /** Where the recording is stored (shared/calls/recordings.ts); `recording_url` is the wire field. */
  recording?: RecordingState;
  recording_url?: string;
  /** When remove-call-sensitive-data last scrubbed the call (shared/calls/scrubbing.ts). */
  scrubbed_timestamp?: number;
  /** The data storage setting last applied to what the call stores once it was over (data-storage.ts); removed by a new analysis. Never answered. */
  data_storage_applied?: 'everything_except_pii' | 'basic_attributes_only';
  /**
   * Set with a new analysis and removed once its `call_analyzed` is queued: a step that stored
   * the analysis but failed to queue the event finds it on its retry and queues it then
   * (engine.ts `analyze`). Never answered.
   */
  analyzed_event_pending?: boolean;
  /** Live calls (live-store.ts): top-level, so the engine's writes (which replace `engine`) never undo them. Never answered. */
  /** The controls and supervisor-say texts of a call stored before controls were items of their own (read, never written now). */
  live_log?: LiveLogEntry[];
  live_say?: string[];
  /** How many live controls the call has (`CONTROL#` items), and how many of them are supervisor-say: moved with each control's item. */
  control_count?: number;
  say_count?: number;
  live_patch?: { seq: number; dynamic_variables?: Record<string, string>; agent_override?: AgentOverride };
  live_take_over?: { participant_id: string; timestamp: number };
  live_watched?: boolean;
  /** LiveKit's reports about the call's SIP leg (sip-leg.ts), for the SIP trace. Never answered. */
  sip_leg?: SipLeg;
  /**
   * How many transcript lines the call has (line-store.ts): their positions are 0 to
   * line_count - 1, and every write of lines moves it in the same transaction. Absent on a
   * call that has none yet, and on calls stored with their transcript on the item. Never answered.
   */
  line_count?: number;
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

export async function putNewCall(item: CallItem): Promise<void> {
  await table.put({ Item: item, ConditionExpression: 'attribute_not_exists(pk)' });
}

/**
 * Writes many whole call items at once (BatchWrite, no conditions: an item with the same
 * key is replaced). Only for items built by newCallItem that the caller holds whole: the
 * export-at-scale test seeds thousands of ended calls this way (test/support/factories.ts).
 */
export async function putCallItems(items: readonly CallItem[]): Promise<void> {
  await table.batchPut(items);
}

export interface Transition {
  from: readonly CallStatus[];
  to?: CallStatus;
  /** Fields to set (undefined values are skipped). */
  set?: Record<string, unknown>;
  /** Fields to remove. */
  remove?: readonly string[];
  /** Only while this engine counter has this value (a stale or repeated step changes nothing). */
  guard?: { field: 'step_seq' | 'analysis_seq' | 'report_seq' | 'transfer_seq'; equals: number };
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
    // transfer_seq is a top-level attribute (TransferState); the others live under engine.
    let path = '#seq';
    if (change.guard.field !== 'transfer_seq') {
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
  // WebSocket monitors of the call get what changed (live-push.ts; nothing when none watches).
  if (updated) await publishCallChange(updated);
  return updated;
}

/** Sets fields on a call of this workspace without a state change (update-call). */
export async function updateCallFields(workspaceId: string, callId: string, fields: Record<string, unknown>): Promise<CallItem> {
  const update = setOrRemove(fields);
  if (!update.UpdateExpression) return getCallItem(workspaceId, callId);
  try {
    return (await table.update<CallItem>({
      Key: keys.call(callId),
      UpdateExpression: update.UpdateExpression,
      ConditionExpression: 'attribute_exists(pk) AND #ws = :ws',
      ExpressionAttributeNames: { ...update.ExpressionAttributeNames, '#ws': 'workspace_id' },
      ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':ws': workspaceId },
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

/** A FilterExpression on the listing index's projected attributes. */
export interface ListingFilter {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/** One shard's listing entries after (or before) a call ID, as gsi1 projects them. */
export async function queryCallListing(input: {
  workspaceId: string;
  shard: number;
  ascending: boolean;
  /** Exclusive bound: entries strictly after this call ID in the sort order. */
  after?: string;
  filter?: ListingFilter;
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

/**
 * How many of one shard's listing entries match the filter (Select: COUNT, newest first,
 * pages followed), stopping once `cap` have matched or `examineCap` have been examined.
 */
export async function countCallListing(input: {
  workspaceId: string;
  shard: number;
  filter?: ListingFilter;
  cap: number;
  examineCap: number;
}): Promise<{ count: number; complete: boolean }> {
  let count = 0;
  let scanned = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await table.queryPage({
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :gpk',
      FilterExpression: input.filter?.expression,
      ExpressionAttributeNames: input.filter && Object.keys(input.filter.names).length ? input.filter.names : undefined,
      ExpressionAttributeValues: { ...(input.filter?.values ?? {}), ':gpk': keys.callListing(input.workspaceId, input.shard).gsi1pk },
      Select: 'COUNT',
      ScanIndexForward: false,
      Limit: input.examineCap - scanned,
      ExclusiveStartKey: startKey,
    });
    count += page.count;
    scanned += page.scanned;
    startKey = page.lastKey;
  } while (startKey && count < input.cap && scanned < input.examineCap);
  return { count, complete: !startKey };
}

export type CallListingEntry = Pick<CallItem, 'pk' | 'sk' | 'call_id' | 'gsi1sk'> & Record<string, unknown>;

export async function batchGetCalls(entries: readonly Pick<CallItem, 'pk' | 'sk'>[]): Promise<CallItem[]> {
  return table.batchGet<CallItem>(entries.map(({ pk, sk }) => ({ pk, sk })));
}

/** How long a room's claim is kept: far longer than any call, then DynamoDB's TTL removes it. */
const ROOM_CLAIM_TTL_SECONDS = 7 * 86_400;

/**
 * Claims a media room for a call, once: the first claim wins (a conditional put), so a
 * redelivered or duplicated "caller joined" webhook never creates a second call. Answers
 * whether this claim won.
 */
export async function claimMediaRoom(room: string, callId: string, nowMs = Date.now()): Promise<boolean> {
  try {
    await table.put({
      Item: { ...keys.mediaRoom(room), call_id: callId, claimed_timestamp: nowMs, expires_at: Math.floor(nowMs / 1000) + ROOM_CLAIM_TTL_SECONDS },
      ConditionExpression: 'attribute_not_exists(pk)',
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** The call a claimed room carries, if any. */
export async function callOfMediaRoom(room: string): Promise<string | undefined> {
  return (await table.get<{ call_id: string }>(keys.mediaRoom(room)))?.call_id;
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
  try {
    const claim = await table.update<{ call_id: string }>({
      Key: keys.mediaRoom(room),
      UpdateExpression: 'SET ended_timestamp = if_not_exists(ended_timestamp, :at), ended_by = if_not_exists(ended_by, :by)',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':at': end.ended_timestamp, ':by': end.ended_by },
      ReturnValues: 'ALL_NEW',
    });
    return claim?.call_id;
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

/** The end recorded on a claimed room (markMediaRoomEnded), if its caller is gone. */
export async function mediaRoomEnd(room: string): Promise<MediaRoomEnd | undefined> {
  const claim = await table.get<Partial<MediaRoomEnd>>(keys.mediaRoom(room));
  return claim?.ended_timestamp !== undefined ? { ended_timestamp: claim.ended_timestamp, ended_by: claim.ended_by ?? 'room_finished' } : undefined;
}

/** The media room a call lives in: its own name, unless the dispatch rule named it. */
export const roomOf = (call: Pick<CallItem, 'call_id' | 'engine'>): string => call.engine.room ?? call.call_id;

export type { CallStatus, DisconnectionReason };

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
