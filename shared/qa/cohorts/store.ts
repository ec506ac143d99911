import { conflict, notFound } from '../../platform/errors.ts';
import { keys } from '../../platform/store/keys.ts';
import { createWithinLimit, transactCounted } from '../../platform/store/listing-count.ts';
import { defineEntity, table, TransactionCancelled } from '../../platform/store/table.ts';
import type { Rubric, Selection } from './schemas.ts';

/*
 * QA cohorts (docs/data-model.md), in the workspace's cohorts partition `WS#<ws>#QACOHORT`:
 * one item per cohort (`COHORT#<id>`, time-ordered IDs, so the list is newest first) and
 * the counter `COUNT` (`n`), changed in the same transaction as each create and delete, so
 * the limit holds under concurrent creates. A cohort's results, runs and counters live in
 * its own partition (results/store.ts, runs/store.ts).
 */

export interface CohortItem {
  workspace_id: string;
  cohort_id: string;
  name: string;
  description?: string;
  selection: Selection;
  rubric: Rubric;
  auto_score: boolean;
  /** The newest run (runs/store.ts), when there was one. */
  last_run_id?: string;
  created_timestamp: number;
  last_modification_timestamp: number;
}

const cohorts = defineEntity<CohortItem & { pk: string; sk: string }, [workspaceId: string, cohortId: string]>({
  key: keys.qaCohort,
  notFound: (_workspaceId, cohortId) => cohortNotFound(cohortId),
});

const cohortNotFound = (cohortId: string) => notFound(`QA cohort ${cohortId} not found`);

export const getCohortItem = (workspaceId: string, cohortId: string): Promise<CohortItem> => cohorts.mustGet(workspaceId, cohortId);

/** The cohort, or undefined when it is gone (background work stops then). */
export const findCohortItem = (workspaceId: string, cohortId: string): Promise<CohortItem | undefined> => cohorts.get(workspaceId, cohortId);

/** A page of the workspace's cohorts, newest first, after `after`. */
export async function pageCohortItems(workspaceId: string, options: { limit: number; after?: string }): Promise<{ items: CohortItem[]; hasMore: boolean }> {
  const partition = keys.qaCohorts(workspaceId);
  const page = await table.queryPage<CohortItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: false,
    Limit: options.limit + 1,
    ...(options.after ? { ExclusiveStartKey: keys.qaCohort(workspaceId, options.after) } : {}),
  });
  return { items: page.items.slice(0, options.limit), hasMore: page.items.length > options.limit };
}

/** Every cohort of the workspace that scores new calls as they are analysed (at most MAX_COHORTS read). */
export async function autoScoringCohorts(workspaceId: string): Promise<CohortItem[]> {
  const partition = keys.qaCohorts(workspaceId);
  return table.queryAll<CohortItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    FilterExpression: 'auto_score = :yes',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix, ':yes': true },
  });
}

/** Writes a new cohort and counts it, refused with 409 when the workspace already has `limit`. */
export async function createCohortItem(item: CohortItem, limit: number): Promise<void> {
  await createWithinLimit({
    create: cohorts.createOp(item, item.workspace_id, item.cohort_id),
    counter: keys.qaCohortCount(item.workspace_id),
    limit,
    overLimit: () => conflict(`A workspace can have at most ${limit} QA cohorts; delete one to make another`),
  });
}

/**
 * Writes a cohort's changed fields, conditional on its last modification being the one
 * read (a concurrent PATCH answers 409, since the rubric version depends on what was read).
 */
export async function updateCohortItem(current: CohortItem, next: CohortItem): Promise<CohortItem> {
  const { workspace_id: workspaceId, cohort_id: cohortId } = current;
  const { description, ...rest } = next;
  const written = await cohorts.setFields(
    [workspaceId, cohortId],
    {
      set: {
        name: rest.name,
        selection: rest.selection,
        rubric: rest.rubric,
        auto_score: rest.auto_score,
        last_modification_timestamp: rest.last_modification_timestamp,
        ...(description === undefined ? {} : { description }),
      },
      remove: description === undefined ? ['description'] : [],
      condition: 'attribute_exists(pk) AND last_modification_timestamp = :read',
      values: { ':read': current.last_modification_timestamp },
    },
    (found) => {
      if (!found) throw cohortNotFound(cohortId);
      throw conflict(`QA cohort ${cohortId} changed while it was being updated; read it again`);
    },
  );
  return written!;
}

/** Points the cohort at its newest run (only forward: run IDs are time-ordered). */
export async function setLastRun(workspaceId: string, cohortId: string, runId: string): Promise<void> {
  await cohorts.update([workspaceId, cohortId], {
    UpdateExpression: 'SET last_run_id = :run',
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(last_run_id) OR last_run_id < :run)',
    ExpressionAttributeValues: { ':run': runId },
  });
}

/** Deletes a cohort and uncounts it (404 when it is not there). Its partition is emptied after (runs/cleanup.ts). */
export async function deleteCohortItem(workspaceId: string, cohortId: string): Promise<void> {
  try {
    await transactCounted([
      cohorts.removeOp(workspaceId, cohortId),
      { Update: { Key: keys.qaCohortCount(workspaceId), UpdateExpression: 'ADD n :minus', ExpressionAttributeValues: { ':minus': -1 } } },
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) throw cohortNotFound(cohortId);
    throw error;
  }
}
