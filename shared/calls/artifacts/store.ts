import { randomBytes } from 'node:crypto';
import { keys } from '../../platform/store/keys.ts';
import { queryAll } from '../../platform/store/query.ts';
import { ConditionFailed, table, type TransactOp } from '../../platform/store/table.ts';
import { setAndRemove } from '../../platform/store/update-expression.ts';
import type { SipLeg } from '../store.ts';

/*
 * Items of a call's artifacts beside the call item (docs/data-model.md): the unscrubbed
 * copy that remove-call-sensitive-data keeps, sealed (shared/calls/artifacts/scrubbing.ts): the call's
 * own fields in `UNSCRUBBED`, its transcript lines' in `UNSCRUBBED#LINES` and its parts.
 */

export interface UnscrubbedItem {
  pk: string;
  sk: string;
  workspace_id: string;
  call_id: string;
  /** The fields as they were before scrubbing, as JSON, sealed with envelope encryption (context names the call). */
  sealed: string;
  created_timestamp: number;
  expires_at?: number;
}

export async function getUnscrubbed(callId: string): Promise<UnscrubbedItem | undefined> {
  return table.get<UnscrubbedItem>(keys.callUnscrubbed(callId));
}

/** The transaction operation that writes the copy once (a second scrub never replaces the original). */
export function putUnscrubbedOnce(item: Omit<UnscrubbedItem, 'pk' | 'sk'>): TransactOp {
  return { Put: { Item: { ...keys.callUnscrubbed(item.call_id), ...item }, ConditionExpression: 'attribute_not_exists(pk)' } };
}

export function deleteUnscrubbedOp(callId: string): TransactOp {
  return { Delete: { Key: keys.callUnscrubbed(callId) } };
}

export async function deleteUnscrubbed(callId: string): Promise<void> {
  await table.delete({ Key: keys.callUnscrubbed(callId) });
}

/**
 * The scrubbed call's update as a transaction operation: the call must still belong to the
 * workspace, be over, and be at the analysis counter read (an analysis written in between
 * would otherwise be overwritten with the scrubbed copy of the old one).
 */
export function scrubCallOp(
  callId: string,
  workspaceId: string,
  analysisSeq: number | undefined,
  set: Record<string, unknown>,
  remove: readonly string[],
): TransactOp {
  const update = setAndRemove(set, remove);
  const names: Record<string, string> = { ...update.names, '#ws': 'workspace_id', '#status': 'call_status', '#engine': 'engine', '#aseq': 'analysis_seq' };
  const values: Record<string, unknown> = { ...update.values, ':ws': workspaceId, ':ended': 'ended', ':nc': 'not_connected', ':error': 'error' };
  let condition = 'attribute_exists(pk) AND #ws = :ws AND #status IN (:ended, :nc, :error)';
  if (analysisSeq === undefined) {
    condition += ' AND attribute_not_exists(#engine.#aseq)';
  } else {
    values[':aseq'] = analysisSeq;
    condition += ' AND #engine.#aseq = :aseq';
  }
  return {
    Update: {
      Key: keys.call(callId),
      UpdateExpression: update.expression,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

export async function transact(ops: readonly TransactOp[]): Promise<void> {
  await table.transact(ops);
}

/**
 * Writes a call's SIP leg (sip-leg.ts) if nobody wrote it since it was read at `readRev`
 * (0: never written). Answers false when another writer got there first (read again and
 * merge). The call must exist and keep its workspace: a room's webhook writes only its call.
 */
export async function writeSipLeg(callId: string, workspaceId: string, readRev: number, leg: SipLeg): Promise<boolean> {
  try {
    await table.update({
      Key: keys.call(callId),
      UpdateExpression: 'SET #leg = :leg',
      ConditionExpression:
        readRev === 0
          ? 'attribute_exists(pk) AND #ws = :ws AND attribute_not_exists(#leg)'
          : 'attribute_exists(pk) AND #ws = :ws AND #leg.#rev = :rev',
      ExpressionAttributeNames: { '#leg': 'sip_leg', '#ws': 'workspace_id', ...(readRev === 0 ? {} : { '#rev': 'rev' }) },
      ExpressionAttributeValues: { ':leg': leg, ':ws': workspaceId, ...(readRev === 0 ? {} : { ':rev': readRev }) },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** The head of a call's lines' unscrubbed copy: which parts hold the sealed text. */
export interface UnscrubbedLinesItem {
  workspace_id: string;
  call_id: string;
  /** Names this copy's parts (`UNSCRUBBED#LINES#<token>#<index>`): a writer that lost the race to the head leaves its own parts unnamed. */
  token: string;
  parts: number;
  created_timestamp: number;
  expires_at?: number;
}

/** Characters of sealed text (base64url: one byte each) per part: well under DynamoDB's 400 KB item limit. */
const PART_CHARS = 300_000;

export async function getUnscrubbedLines(callId: string): Promise<UnscrubbedLinesItem | undefined> {
  return table.get<UnscrubbedLinesItem>(keys.callUnscrubbedLines(callId));
}

/**
 * Keeps the sealed text of a call's original lines, once: its parts under a new token, then
 * the head naming them, only if no head is there (the first original stays). Answers whether
 * this copy is the one kept.
 */
export async function putUnscrubbedLinesOnce(
  head: Omit<UnscrubbedLinesItem, 'token' | 'parts'>,
  sealed: string,
): Promise<boolean> {
  const token = randomBytes(6).toString('hex');
  const parts: string[] = [];
  for (let i = 0; i < sealed.length; i += PART_CHARS) parts.push(sealed.slice(i, i + PART_CHARS));
  const common = { workspace_id: head.workspace_id, call_id: head.call_id, ...(head.expires_at !== undefined ? { expires_at: head.expires_at } : {}) };
  await table.batchPut(parts.map((part, index) => ({ ...keys.callUnscrubbedLinesPart(head.call_id, token, index), ...common, sealed_part: part })));
  try {
    await table.put({
      Item: { ...keys.callUnscrubbedLines(head.call_id), ...head, token, parts: parts.length } satisfies UnscrubbedLinesItem & { pk: string; sk: string },
      ConditionExpression: 'attribute_not_exists(pk)',
    });
    return true;
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    await table.batchDelete(parts.map((_, index) => keys.callUnscrubbedLinesPart(head.call_id, token, index)));
    return false;
  }
}

/** The sealed text of the lines' copy the head names, or undefined when a part is missing. */
export async function readUnscrubbedLinesSealed(head: UnscrubbedLinesItem): Promise<string | undefined> {
  const parts = await queryAll<{ sealed_part: string }>(keys.callUnscrubbedLinesParts(head.call_id, head.token));
  return parts.length === head.parts ? parts.map((part) => part.sealed_part).join('') : undefined;
}

/** Deletes the lines' copy: its head and every part (the data storage setting keeps none). */
export async function deleteUnscrubbedLines(callId: string): Promise<void> {
  const items = await queryAll<{ pk: string; sk: string }>(keys.callUnscrubbedLinesParts(callId), 'pk, sk');
  await table.batchDelete(items.map(({ pk, sk }) => ({ pk, sk })));
}
