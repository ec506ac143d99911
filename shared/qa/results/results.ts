import { invalidPaginationKey, notFound } from '../../platform/errors.ts';
import { findCohortItem, getCohortItem } from '../cohorts/store.ts';
import type { QaResult, ResultListInput } from './schemas.ts';
import { findResultById, pageResults, type ResultItem, type WerCorrectionItem } from './store.ts';

/* Reading results (docs/qa.md, "Results"): a cohort's, paged and filtered, or one by its ID. */

/** A correction's figures, as the API answers them (the corrected lines stay in the table). */
export function werFigures(correction: WerCorrectionItem): NonNullable<QaResult['wer_correction']> {
  const { transcript_object: _lines, corrected_by: _by, ...figures } = correction;
  return figures;
}

export function toResult(item: ResultItem): QaResult {
  return {
    result_id: item.result_id,
    cohort_id: item.cohort_id,
    call_id: item.call_id,
    agent_id: item.agent_id,
    ...(item.agent_version === undefined ? {} : { agent_version: item.agent_version }),
    rubric_version: item.rubric_version,
    status: item.status as QaResult['status'],
    ...(item.failure_reason === undefined ? {} : { failure_reason: item.failure_reason }),
    ...(item.machine === undefined ? {} : { machine: item.machine }),
    ...(item.review === undefined ? {} : { review: item.review }),
    ...(item.wer_correction === undefined ? {} : { wer_correction: werFigures(item.wer_correction) }),
    transcript_available: item.transcript_available,
    ...(item.note === undefined ? {} : { note: item.note }),
    call: item.call,
    created_timestamp: item.created_timestamp,
    ...(item.scored_timestamp === undefined ? {} : { scored_timestamp: item.scored_timestamp }),
  };
}

const resultNotFound = (resultId: string) => notFound(`QA result ${resultId} not found`);

/** A result of the workspace; one still being scored, or of a deleted cohort, is not found. */
export async function findResult(workspaceId: string, resultId: string): Promise<ResultItem> {
  const item = await findResultById(workspaceId, resultId);
  if (!item || item.status === 'scoring' || !(await findCohortItem(workspaceId, item.cohort_id))) throw resultNotFound(resultId);
  return item;
}

export const getResult = async (workspaceId: string, resultId: string): Promise<QaResult> => toResult(await findResult(workspaceId, resultId));

export async function listResults(workspaceId: string, cohortId: string, query: ResultListInput) {
  const cohort = await getCohortItem(workspaceId, cohortId);
  const version = query.rubric_version ?? cohort.rubric.version;
  const after = query.pagination_key ? await findResultById(workspaceId, query.pagination_key) : undefined;
  if (query.pagination_key && (!after || after.cohort_id !== cohortId || after.rubric_version !== version)) {
    throw invalidPaginationKey();
  }
  const page = await pageResults(workspaceId, cohortId, version, {
    order: query.order,
    limit: query.limit,
    ...(after ? { after } : {}),
    filter: {
      ...(query.status ? { status: query.status } : {}),
      ...(query.passed === undefined ? {} : { passed: query.passed }),
      ...(query.criterion ? { criterion: query.criterion } : {}),
      ...(query.min_score === undefined ? {} : { minScore: query.min_score }),
      ...(query.max_score === undefined ? {} : { maxScore: query.max_score }),
    },
  });
  const last = page.items.at(-1);
  return { items: page.items.map(toResult), has_more: page.hasMore, ...(page.hasMore && last ? { pagination_key: last.result_id } : {}) };
}
