import { releaseWorkspaceNumbers } from '../numbers/index.ts';
import { knowledgeBaseObjectStore, objectStore, type ObjectStore } from '../platform/aws/object-store.ts';
import { logger } from '../platform/logger.ts';
import { objectKeys } from '../platform/store/keys.ts';
import { enqueuePurgeStep, type WorkspacePurgeMessage } from './purge-queue.ts';
import { purgeItemsStep, type PurgeCursor } from './purge-sources.ts';
import { advancePurge, claimPurgeStep, purges, type PurgeItem } from './store.ts';

/*
 * The background purge of a deleted workspace (POST /workspace/delete marks it and revokes
 * every credential at once; this removes the rest). A chain of steps on the export-jobs
 * queue, each bounded, each ending with a conditional write of its progress to the purge
 * record (`step` as read → step + 1) and the next step's message:
 *
 *   numbers  release the workspace's numbers at their carriers (through the numbers index)
 *   objects  empty its prefixes in the recordings bucket (recordings, exports, assets) and
 *            the knowledge-base bucket
 *   items    walk the workspace's purge sources (purge-sources.ts: its partitions, its calls
 *            and chats through their listing index, the partitions and global items its
 *            records name) a few pages at a time from the saved cursor, deleting as it goes:
 *            the work is the workspace's items, never the table's
 *
 * Idempotent and safe on redelivery: every deletion may run twice; a step whose record has
 * moved on (a duplicate, or a redelivery after the progress was saved) does nothing; a step
 * that throws is redelivered by SQS and redone from the saved progress.
 */

/** How much one step does (tests lower them to make many steps). */
export const PURGE_LIMITS = {
  numbersPerStep: 20,
  /** Objects listed and deleted per request, and requests per step. */
  objectsPerRequest: 1000,
  objectRequestsPerStep: 20,
  /** Items per page read of a purge source (DynamoDB also stops a page at 1 MB), and pages per step. */
  pageSize: 1000,
  pagesPerStep: 25,
  /** Records per page of a source whose records head partitions (a page's partitions are kept in the cursor: about 10 KB). */
  headsPerPage: 100,
  /** Headed partitions (a call's, a chat's: one page each) emptied at once, and rounds of them per step. */
  partitionsAtOnce: 32,
  partitionRoundsPerStep: 400,
  /** A step stops taking new pages after this long (the job's timeout is 900 s). */
  stepBudgetMs: 60_000,
};

const KEEP_RECORD_SECONDS = 90 * 86_400;
/** A live chain saves progress every step (at most a minute or two apart). */
const STALLED_AFTER_MS = 5 * 60_000;

/**
 * How long a run holds its step: the export-jobs function's timeout (shared/jobs.ts), past
 * which the run is surely gone; SQS redelivers its message no sooner (the queue's visibility
 * timeout is at least the function's).
 */
const STEP_LEASE_MS = 900_000;

/** The prefixes the objects phase empties, in order, each with its bucket. */
function objectPrefixes(workspaceId: string): { store: () => ObjectStore; prefix: string }[] {
  return [
    ...objectKeys.workspaceRecordingsBucketPrefixes(workspaceId).map((prefix) => ({ store: objectStore, prefix })),
    { store: knowledgeBaseObjectStore, prefix: objectKeys.workspaceKnowledgeBasePrefix(workspaceId) },
  ];
}

/**
 * The items phase's saved position. A record saved by the scan this replaced holds a Scan's
 * LastEvaluatedKey instead: the walk then starts over (every deletion may run twice).
 */
function savedCursor(saved: string | undefined): PurgeCursor | undefined {
  const parsed = saved ? (JSON.parse(saved) as Partial<PurgeCursor>) : undefined;
  return typeof parsed?.source === 'number' && typeof parsed.place === 'number' ? (parsed as PurgeCursor) : undefined;
}

/** Runs one step of a workspace's purge (the export-jobs consumer calls it). */
export async function runPurgeStep(message: WorkspacePurgeMessage, nowMs = Date.now()): Promise<void> {
  const item = await purges.get(message.workspace_id);
  if (!item || item.phase === 'done' || item.step !== message.step) {
    // A redelivered step whose progress was saved but whose next message was never sent (the
    // send failed) would end the chain: the record, quiet for a while, one step on, gets it again.
    if (item && item.phase !== 'done' && item.step === message.step + 1 && nowMs - item.updated_timestamp > STALLED_AFTER_MS) {
      await enqueuePurgeStep(item.workspace_id, item.step);
      return;
    }
    logger.info('Workspace purge step skipped (already done or superseded)', { workspace_id: message.workspace_id, step: message.step, at_step: item?.step });
    return;
  }
  if (!(await claimPurgeStep(item, nowMs, STEP_LEASE_MS))) {
    logger.info('Workspace purge step already taken by a concurrent run of it', { workspace_id: item.workspace_id, step: item.step });
    return;
  }
  const next: PurgeItem = { ...item, updated_timestamp: nowMs };
  delete next.claimed_step;
  delete next.claimed_until;
  const started = Date.now();
  if (item.phase === 'numbers') {
    const { released, more } = await releaseWorkspaceNumbers(item.workspace_id, PURGE_LIMITS.numbersPerStep);
    next.numbers_released += released;
    if (!more) next.phase = 'objects';
  } else if (item.phase === 'objects') {
    const prefixes = objectPrefixes(item.workspace_id);
    let index = item.prefix_index ?? 0;
    for (let request = 0; request < PURGE_LIMITS.objectRequestsPerStep && index < prefixes.length; request++) {
      const { store, prefix } = prefixes[index]!;
      const { deleted, more } = await store().deletePrefix(prefix, PURGE_LIMITS.objectsPerRequest);
      next.objects_deleted += deleted;
      if (!more) index++;
    }
    next.prefix_index = index;
    if (index >= prefixes.length) {
      next.phase = 'items';
      delete next.prefix_index;
    }
  } else {
    const step = await purgeItemsStep(item.workspace_id, savedCursor(item.cursor), {
      pageSize: PURGE_LIMITS.pageSize,
      headsPerPage: PURGE_LIMITS.headsPerPage,
      pages: PURGE_LIMITS.pagesPerStep,
      rounds: PURGE_LIMITS.partitionRoundsPerStep,
      until: started + PURGE_LIMITS.stepBudgetMs,
      parallel: PURGE_LIMITS.partitionsAtOnce,
    });
    next.items_deleted += step.deleted;
    next.items_scanned += step.read;
    if (step.cursor) {
      next.cursor = JSON.stringify(step.cursor);
    } else {
      delete next.cursor;
      next.phase = 'done';
      next.completed_timestamp = nowMs;
      next.expires_at = Math.floor(nowMs / 1000) + KEEP_RECORD_SECONDS;
    }
  }
  if (!(await advancePurge(item, next))) {
    logger.info('Workspace purge step lost to a concurrent run of it', { workspace_id: item.workspace_id, step: item.step });
    return;
  }
  if (next.phase === 'done') {
    logger.info('Workspace purged', { workspace_id: item.workspace_id, numbers_released: next.numbers_released, objects_deleted: next.objects_deleted, items_deleted: next.items_deleted });
    return;
  }
  await enqueuePurgeStep(item.workspace_id, item.step + 1);
}

export { WorkspacePurgeMessage } from './purge-queue.ts';
