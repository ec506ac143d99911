import { createHash } from 'node:crypto';

/*
 * The due-batch index's shards, apart from the store: the job list (shared/jobs.ts), which
 * CDK and the local runtime read to give each shard its own scheduled invocation, needs the
 * count without the table's code.
 */

/**
 * Shards of the due-batch index. Each is queried and passed under its own lease, in its own
 * scheduled invocation, so passes grow with shards instead of queueing behind one; a
 * workspace's batches stay in one shard, where its capacity is shared between them. Changing
 * it moves batches between shards only as they are rescheduled (setBatchDue rewrites the
 * shard), so raise it, then wait a minute.
 */
export const BATCH_DUE_SHARDS = 8;

/** The due-index shard of a workspace: a stable hash, so a workspace's batches share one. */
export function batchDueShard(workspaceId: string): number {
  return createHash('sha256').update(workspaceId).digest().readUInt32BE(0) % BATCH_DUE_SHARDS;
}
