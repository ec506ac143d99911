import { keys, type ItemKey } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query.ts';
import { ConditionFailed, table, type TransactOp } from '../platform/store/table.ts';
import type { CallItem } from './store.ts';

/*
 * A call's transcript lines (docs/data-model.md, A call's transcript lines): every entry of
 * `transcript_with_tool_calls` is an item of its own in the call's partition
 * (`LINE#<ordinal>#<index>`), written once, in the same transaction as the call's
 * `line_count`, so the call item stays the same size however long the call runs (DynamoDB
 * refuses items over 400 KB). transcript.ts assembles the call's three transcript fields
 * from them on read. Below store.ts (which writes them in transitionCall) and the live
 * modules, so it imports neither.
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

/** The call's lines in the order they were said (their sort keys), strongly consistent. */
export async function readLines(callId: string): Promise<LineItem[]> {
  return queryAll<LineItem>(keys.callLines(callId));
}

/**
 * The call item and its lines in one Query of the call's partition (`CALL` to `LINE$`,
 * strongly consistent, every page): what a read of one call costs.
 */
export async function readCallWithLines(callId: string): Promise<{ call?: CallItem; lines: LineItem[] }> {
  const range = keys.callWithLines(callId);
  const items = await table.queryAll<Record<string, unknown>>({
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: { ':pk': range.pk, ':from': range.skFrom, ':to': range.skTo },
  });
  const call = items.find((item) => item.sk === keys.call(callId).sk) as CallItem | undefined;
  const lines = items.filter((item) => typeof item.sk === 'string' && item.sk.startsWith(keys.callLines(callId).skPrefix!)) as unknown as LineItem[];
  return { ...(call ? { call } : {}), lines };
}

/**
 * Replaces the entries of lines (scrubbing), each only while the line exists (a call deleted
 * meanwhile gets none back), a few at a time.
 */
export async function rewriteLines(lines: readonly { key: ItemKey; entry: Record<string, unknown> }[]): Promise<void> {
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

/** Deletes the call's lines and their unscrubbed copy (delete-call, a privacy erase, retention). */
export async function deleteLines(callId: string): Promise<void> {
  const [lines, parts] = await Promise.all([
    queryAll<ItemKey>(keys.callLines(callId), 'pk, sk'),
    queryAll<ItemKey>(keys.callUnscrubbedLinesParts(callId), 'pk, sk'),
  ]);
  await table.batchDelete([...lines, ...parts].map(({ pk, sk }) => ({ pk, sk })));
}

/** Runs `work` on every item, at most `limit` at once. */
export async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
