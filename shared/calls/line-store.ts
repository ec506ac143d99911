import { eachLimited } from '../platform/parallel.ts';
import { keys, type ItemKey } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query.ts';
import { ConditionFailed, table, type TransactOp } from '../platform/store/table.ts';
import type { CallItem, LiveLogEntry } from './items.ts';

/*
 * A call's transcript lines (docs/data-model.md, A call's transcript lines): every entry of
 * `transcript_with_tool_calls` is an item of its own in the call's partition
 * (`LINE#<ordinal>#<index>`), written once, in the same transaction as the call's
 * `line_count`, so the call item stays the same size however long the call runs (DynamoDB
 * refuses items over 400 KB). transcript.ts assembles the call's three transcript fields
 * from them on read. The call's live controls are items of their own likewise
 * (`CONTROL#<index>`, written by live/store.ts). Below store.ts (which writes lines in
 * transitionCall) and the live modules, so it imports neither.
 */

/** One transcript entry as it is stored. */
export interface TranscriptLine {
  /** The `transcript_with_tool_calls` entry, as the worker or the engine reported it. */
  entry: Record<string, unknown>;
  /** A line of the caller's transcript too (`transcript`, `transcript_object`): the agent's and user's utterances, not an agentic transfer's consultation. */
  in_transcript: boolean;
}

export type LineItem = TranscriptLine & {
  pk: string;
  sk: string;
  /** The call's workspace (the workspace purge deletes by it). */
  workspace_id: string;
  call_id: string;
  /** The order the lines arrived in (0, 1, …: the call's `line_count` before the write, plus the index): what the live monitors number. */
  position: number;
};

/**
 * The puts of a write's lines (each only if its key is free: a redelivered report's lines
 * are there already), for the transaction that also moves the call's `line_count`.
 */
export function linePuts(
  call: Pick<CallItem, 'call_id' | 'workspace_id'>,
  ordinal: number,
  firstPosition: number,
  lines: readonly TranscriptLine[],
): TransactOp[] {
  return lines.map((line, index) => ({
    Put: {
      Item: {
        ...keys.callLine(call.call_id, ordinal, index),
        workspace_id: call.workspace_id,
        call_id: call.call_id,
        entry: line.entry,
        in_transcript: line.in_transcript,
        position: firstPosition + index,
      } satisfies LineItem,
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  }));
}

/** A live control as stored (live/store.ts). */
export interface ControlItem {
  pk: string;
  sk: string;
  workspace_id: string;
  call_id: string;
  entry: LiveLogEntry;
}

const isLine = (item: { sk?: unknown }) => typeof item.sk === 'string' && item.sk.startsWith('LINE#');
const isControl = (item: { sk?: unknown }) => typeof item.sk === 'string' && item.sk.startsWith('CONTROL#');

/** The call's lines in the order they were said (their sort keys), strongly consistent. */
export async function readLines(callId: string): Promise<LineItem[]> {
  return queryAll<LineItem>(keys.callLines(callId));
}

/** The call's live controls and lines in one Query (`CONTROL#` to `LINE$`), each in its sort-key order. */
export async function readEntries(callId: string): Promise<{ controls: ControlItem[]; lines: LineItem[] }> {
  const range = keys.callEntries(callId);
  const items = await table.queryAll<Record<string, unknown>>({
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: { ':pk': range.pk, ':from': range.skFrom, ':to': range.skTo },
  });
  return { controls: items.filter(isControl) as unknown as ControlItem[], lines: items.filter(isLine) as unknown as LineItem[] };
}

/**
 * The call item and its lines, read side by side (a GetItem and a Query, both strongly
 * consistent): what a read of one call with its transcript costs.
 */
export async function readCallWithLines(callId: string): Promise<{ call?: CallItem; lines: LineItem[] }> {
  const [call, lines] = await Promise.all([table.get<CallItem>(keys.call(callId)), readLines(callId)]);
  return { ...(call ? { call } : {}), lines };
}

/**
 * Replaces the entries of lines and controls (scrubbing), each only while the item exists (a
 * call deleted meanwhile gets none back), a few at a time.
 */
export async function rewriteEntries(lines: readonly { key: ItemKey; entry: Record<string, unknown> }[]): Promise<void> {
  await eachLimited(lines, 16, async ({ key, entry }) => {
    try {
      await table.update({
        Key: key,
        UpdateExpression: 'SET #entry = :entry',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#entry': 'entry' },
        ExpressionAttributeValues: { ':entry': entry },
      });
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  });
}

/** Deletes the call's lines, their unscrubbed copy and its live controls (delete-call, a privacy erase, retention). */
export async function deleteLines(callId: string): Promise<void> {
  const range = keys.callEntries(callId);
  const [entries, parts] = await Promise.all([
    table.queryAll<ItemKey>({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': range.pk, ':from': range.skFrom, ':to': range.skTo },
      ProjectionExpression: 'pk, sk',
    }),
    queryAll<ItemKey>(keys.callUnscrubbedLinesParts(callId), 'pk, sk'),
  ]);
  await table.batchDelete([...entries, ...parts].map(({ pk, sk }) => ({ pk, sk })));
}
