import { assertCanSpend } from '../../billing/spend/index.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { setLastRun, getCohortItem, type CohortItem } from '../cohorts/store.ts';
import { queueQaMessage } from './message.ts';
import type { QaRun } from './schemas.ts';
import { getRunItem, putRunItem, type RunItem } from './store.ts';

/*
 * Starting a run (`POST /qa/cohorts/{id}/run`, 202): the run is written with the cohort's
 * rubric and selection as they are, then its first page is queued (runner.ts walks the
 * rest). A run still going (moved within RUN_ALIVE_MS) is answered again rather than a
 * second one started: two runs would walk the same calls, and the claims would make one
 * of them do nothing.
 */

/** A running run that has not moved for this long died (its message went to the dead letters): a new one may start. */
const RUN_ALIVE_MS = 10 * 60_000;

function toRun(item: RunItem): QaRun {
  return {
    run_id: item.run_id,
    cohort_id: item.cohort_id,
    rubric_version: item.rubric_version,
    status: item.status,
    examined_count: item.examined_count,
    scored_count: item.scored_count,
    already_scored_count: item.already_scored_count,
    failed_count: item.failed_count,
    not_sampled_count: item.not_sampled_count,
    over_daily_cap_count: item.over_daily_cap_count,
    created_timestamp: item.created_timestamp,
    last_modification_timestamp: item.last_modification_timestamp,
  };
}

/** The cohort's newest run as the API answers it, or null. */
export async function lastRunOf(cohort: CohortItem): Promise<QaRun | null> {
  if (!cohort.last_run_id) return null;
  const run = await getRunItem(cohort.workspace_id, cohort.cohort_id, cohort.last_run_id);
  return run ? toRun(run) : null;
}

export async function startRun(workspaceId: string, cohortId: string, nowMs = Date.now()): Promise<QaRun> {
  const cohort = await getCohortItem(workspaceId, cohortId);
  const last = cohort.last_run_id ? await getRunItem(workspaceId, cohortId, cohort.last_run_id) : undefined;
  if (last && last.status === 'running' && last.last_modification_timestamp > nowMs - RUN_ALIVE_MS) return toRun(last);
  // Scoring spends QA minutes: a workspace the spend check refuses starts no run (402).
  await assertCanSpend(workspaceId, 'qa_scoring');
  const run: RunItem = {
    workspace_id: workspaceId,
    run_id: newTimeOrderedId('qaRun', nowMs),
    cohort_id: cohortId,
    rubric_version: cohort.rubric.version,
    rubric: cohort.rubric,
    selection: cohort.selection,
    status: 'running',
    examined_count: 0,
    scored_count: 0,
    already_scored_count: 0,
    failed_count: 0,
    not_sampled_count: 0,
    over_daily_cap_count: 0,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
  };
  await putRunItem(run);
  await setLastRun(workspaceId, cohortId, run.run_id);
  await queueQaMessage({ kind: 'qa-run', workspace_id: workspaceId, cohort_id: cohortId, run_id: run.run_id });
  return toRun(run);
}
