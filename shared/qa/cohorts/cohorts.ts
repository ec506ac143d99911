import { newTimeOrderedId } from '../../platform/ids.ts';
import { queueQaMessage } from '../runs/message.ts';
import { lastRunOf } from '../runs/runs.ts';
import { DEFAULT_RUBRIC, sameRubric } from './rubric.ts';
import { MAX_COHORTS, type Cohort, type CreateCohortInput, type RubricInput, type UpdateCohortInput } from './schemas.ts';
import { callFilterOf } from './selection.ts';
import { createCohortItem, deleteCohortItem, getCohortItem, pageCohortItems, updateCohortItem, type CohortItem } from './store.ts';

/*
 * Cohorts' API operations (docs/qa.md, "Cohorts"). A cohort's rubric has a version: 1 when
 * it is made, one more whenever a PATCH changes its criteria or threshold, so results
 * scored under the old rubric stay as they were and a run scores every call again under
 * the new one.
 */

const rubricOf = (input: RubricInput, version: number) => ({
  version,
  criteria: input.criteria.map((criterion) => ({ ...criterion })),
  pass_threshold: input.pass_threshold,
});

async function toCohort(item: CohortItem): Promise<Cohort> {
  return {
    cohort_id: item.cohort_id,
    name: item.name,
    ...(item.description === undefined ? {} : { description: item.description }),
    selection: item.selection,
    rubric: item.rubric,
    auto_score: item.auto_score,
    last_run: await lastRunOf(item),
    created_timestamp: item.created_timestamp,
    last_modification_timestamp: item.last_modification_timestamp,
  };
}

export async function createCohort(workspaceId: string, body: CreateCohortInput, nowMs = Date.now()): Promise<Cohort> {
  callFilterOf(body.selection);
  const item: CohortItem = {
    workspace_id: workspaceId,
    cohort_id: newTimeOrderedId('qaCohort', nowMs),
    name: body.name,
    ...(body.description === undefined ? {} : { description: body.description }),
    selection: body.selection,
    rubric: rubricOf(body.rubric ?? DEFAULT_RUBRIC, 1),
    auto_score: body.auto_score,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
  };
  await createCohortItem(item, MAX_COHORTS);
  return toCohort(item);
}

export const getCohort = async (workspaceId: string, cohortId: string): Promise<Cohort> => toCohort(await getCohortItem(workspaceId, cohortId));

export async function listCohorts(workspaceId: string, query: { limit: number; pagination_key?: string }) {
  const page = await pageCohortItems(workspaceId, { limit: query.limit, after: query.pagination_key });
  const last = page.items.at(-1);
  return { items: await Promise.all(page.items.map(toCohort)), has_more: page.hasMore, ...(page.hasMore && last ? { pagination_key: last.cohort_id } : {}) };
}

export async function updateCohort(workspaceId: string, cohortId: string, body: UpdateCohortInput, nowMs = Date.now()): Promise<Cohort> {
  const current = await getCohortItem(workspaceId, cohortId);
  if (body.selection) callFilterOf(body.selection);
  const rubric = body.rubric && !sameRubric(body.rubric, current.rubric) ? rubricOf(body.rubric, current.rubric.version + 1) : current.rubric;
  const { description: _description, ...rest } = current;
  const description = body.description === null ? undefined : (body.description ?? current.description);
  const next: CohortItem = {
    ...rest,
    ...(description === undefined ? {} : { description }),
    name: body.name ?? current.name,
    selection: body.selection ?? current.selection,
    rubric,
    auto_score: body.auto_score ?? current.auto_score,
    last_modification_timestamp: Math.max(nowMs, current.last_modification_timestamp + 1),
  };
  return toCohort(await updateCohortItem(current, next));
}

/** Deletes the cohort at once; its results, runs and counters go in the background (runs/runner.ts, `qa-cleanup`). */
export async function deleteCohort(workspaceId: string, cohortId: string): Promise<void> {
  await deleteCohortItem(workspaceId, cohortId);
  await queueQaMessage({ kind: 'qa-cleanup', workspace_id: workspaceId, cohort_id: cohortId });
}
