import { tooManyRequests } from '../../platform/errors.ts';
import { acquireOutboundSlot, type OutboundSlot } from '../../platform/egress/outbound-slots.ts';
import { keys } from '../../platform/store/keys.ts';
import { ConditionFailed, table } from '../../platform/store/table.ts';
import type { Rubric, Selection } from '../cohorts/schemas.ts';
import type { QaRun } from './schemas.ts';

/*
 * A cohort's runs (docs/data-model.md), in the cohort's partition, `RUN#<run id>`
 * (time-ordered IDs): the rubric and selection as the run started (a run scores all its
 * calls under one rubric version, whatever PATCH does meanwhile), its cursor (the last
 * call ID it has walked past) and counts. Each page moves the cursor and adds its counts
 * in one write conditional on the cursor it read, so a page delivered twice counts once.
 * And the workspace's QA scoring slots, `WS#<ws>#QASLOTS`: a leased semaphore like the
 * test-run slots.
 */

export type RunItem = QaRun & {
  workspace_id: string;
  rubric: Rubric;
  selection: Selection;
  cursor?: string;
};

export const getRunItem = (workspaceId: string, cohortId: string, runId: string): Promise<RunItem | undefined> => table.get<RunItem>(keys.qaRun(workspaceId, cohortId, runId));

export const putRunItem = (run: RunItem): Promise<void> => table.put({ Item: { ...keys.qaRun(run.workspace_id, run.cohort_id, run.run_id), ...run }, ConditionExpression: 'attribute_not_exists(pk)' });

export type RunCounts = Pick<QaRun, 'examined_count' | 'scored_count' | 'already_scored_count' | 'failed_count' | 'not_sampled_count' | 'over_daily_cap_count'>;

/**
 * Moves the run past a page: its cursor to `next` (the page's last call; none: the run is
 * complete) and its counts up, conditional on the cursor still being `read`. False when
 * another delivery of the same page moved it first.
 */
export async function advanceRun(run: RunItem, next: string | undefined, counts: RunCounts, nowMs: number): Promise<boolean> {
  const adds = Object.entries(counts);
  try {
    await table.update({
      Key: keys.qaRun(run.workspace_id, run.cohort_id, run.run_id),
      UpdateExpression:
        `SET last_modification_timestamp = :now${next ? ', #cursor = :next' : ', #status = :complete'} ` + `ADD ${adds.map(([name], index) => `${name} :c${index}`).join(', ')}`,
      ConditionExpression: run.cursor === undefined ? 'attribute_not_exists(#cursor) AND #status = :running' : '#cursor = :read AND #status = :running',
      // CURSOR is one of DynamoDB's reserved words.
      ExpressionAttributeNames: { '#status': 'status', '#cursor': 'cursor' },
      ExpressionAttributeValues: {
        ':now': nowMs,
        ':running': 'running',
        ...(next ? { ':next': next } : { ':complete': 'complete' }),
        ...(run.cursor === undefined ? {} : { ':read': run.cursor }),
        ...Object.fromEntries(adds.map(([, value], index) => [`:c${index}`, value])),
      },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** Stamps a run that is waiting (every slot held, a call held elsewhere), so it does not look abandoned. */
export async function touchRun(run: RunItem, nowMs: number): Promise<void> {
  await table.update({
    Key: keys.qaRun(run.workspace_id, run.cohort_id, run.run_id),
    UpdateExpression: 'SET last_modification_timestamp = :now',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':now': nowMs },
  }).catch((error: unknown) => {
    if (!(error instanceof ConditionFailed)) throw error;
  });
}

/**
 * Takes one of the workspace's QA scoring slots for `leaseMs` (longer than scoring one
 * call may take), or undefined when all `cap` are held.
 */
export async function takeScoringSlot(workspaceId: string, cap: number, leaseMs: number): Promise<OutboundSlot | undefined> {
  try {
    return await acquireOutboundSlot(workspaceId, { cap, semaphore: { key: keys.qaSlots(workspaceId), leaseMs, refused: () => allSlotsHeld } });
  } catch (error) {
    if (error === allSlotsHeld) return undefined;
    throw error;
  }
}

const allSlotsHeld = tooManyRequests('Every QA scoring slot of the workspace is held', 1);
