import { randomUUID } from 'node:crypto';
import { callExportPage, getCall } from '../../calls/records/index.ts';
import { NotFound } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { keys } from '../../platform/store/keys.ts';
import { table } from '../../platform/store/table.ts';
import type { Rubric } from '../cohorts/schemas.ts';
import { callFilterOf, inSample, matchesSelection } from '../cohorts/selection.ts';
import { findCohortItem, type CohortItem } from '../cohorts/store.ts';
import { claimResult, CLAIM_STALE_MS, finishResult, resultIdOf, resultsOfCalls, resultSideKeys, type ResultItem } from '../results/store.ts';
import { scoreCall, type Scored, type ScoredCall } from '../scoring/scorer.ts';
import { chargeScoredResult, spendRefusal } from '../usage/charge.ts';
import { queueQaMessage, type QaMessage } from './message.ts';
import { advanceRun, getRunItem, takeScoringSlot, touchRun, type RunCounts } from './store.ts';

/*
 * QA's background work on the call-steps queue (docs/qa.md, "Runs"), one message at a
 * time:
 * - `qa-run`: one page of the cohort's matching calls after the run's cursor, oldest
 *   first; each call in the sample and not yet scored under the run's rubric version is
 *   scored (CALLS_AT_ONCE side by side), then the cursor moves past the page (one write
 *   conditional on the cursor read) and the next page is queued. A page whose calls are
 *   not all settled (every slot held, a call another attempt holds, a call ended moments
 *   ago whose analysis has not landed) is tried again later, from the same cursor.
 * - `qa-score`: one call, auto-scored after its analysis landed.
 * - `qa-cleanup`: a deleted cohort's partition emptied a page at a time.
 *
 * Exactly once: a call's result under a rubric version has one key, and a scorer claims it
 * before scoring (results/store.ts), so a message delivered twice, two runs or a run and
 * auto-scoring never score a call twice under one version; a dead scorer's claim goes
 * stale and is taken over. Over all its runs and auto-scoring, a workspace scores at most
 * WORKSPACE_SCORES_AT_ONCE calls at once (a leased semaphore in the table), so one
 * workspace's QA never fills the consumer every workspace's calls share.
 */

const PAGE_CALLS = 10;
const CALLS_AT_ONCE = 3;
const WORKSPACE_SCORES_AT_ONCE = 4;
/** A page that found every slot held is tried again this much later. */
const SLOT_RECHECK_MS = 5_000;
/** A page with a call held by another attempt, or awaiting its analysis, is tried again this much later. */
const HELD_RECHECK_MS = 30_000;
/** An ended call without an analysis yet is waited for this long after its end (then scored on what it has). */
const ANALYSIS_WAIT_MS = 2 * 60_000;
/** Items a cleanup message deletes. */
const CLEANUP_PAGE = 200;

/** What became of one call. */
type Outcome = 'scored' | 'failed' | 'already' | 'held' | 'capped' | 'no_slot';

const dayOf = (timestamp: number | undefined, fallbackMs: number) => new Date(timestamp ?? fallbackMs).toISOString().slice(0, 10);

/** Scores one call for the cohort under `rubric`, in one of the workspace's slots. */
async function scoreOne(cohort: CohortItem, rubric: Rubric, call: ScoredCall, runId: string, claim: string): Promise<Outcome> {
  const slot = await takeScoringSlot(cohort.workspace_id, WORKSPACE_SCORES_AT_ONCE, CLAIM_STALE_MS);
  if (!slot) return 'no_slot';
  try {
    const nowMs = Date.now();
    const fresh: ResultItem = {
      workspace_id: cohort.workspace_id,
      result_id: resultIdOf(cohort.workspace_id, cohort.cohort_id, rubric.version, call.call_id),
      cohort_id: cohort.cohort_id,
      call_id: call.call_id,
      agent_id: call.agent_id,
      ...(typeof call.agent_version === 'number' ? { agent_version: call.agent_version } : {}),
      rubric_version: rubric.version,
      status: 'scoring',
      transcript_available: false,
      call: { data_storage_setting: call.data_storage_setting ?? 'everything' },
      created_timestamp: nowMs,
      run_id: runId,
    };
    const max = cohort.selection.max_per_day;
    const claimed = await claimResult(fresh, claim, nowMs, max ? { max, day: dayOf(call.start_timestamp, nowMs) } : undefined);
    if ('done' in claimed) return claimed.done.run_id === runId ? 'scored' : 'already';
    if ('held' in claimed) return 'held';
    if ('capped' in claimed) return 'capped';
    // A failed result taken over keeps nothing of its failure: the outcome replaces it whole.
    const { claim: _claim, claimed_at: _at, failure_reason: _reason, machine: _machine, note: _note, scored_timestamp: _scored, ...held } = claimed.claimed as ResultItem & { failure_reason?: string };
    // Scoring spends (QA minutes): a workspace the spend check refuses gets a failed result, scored by a later run.
    const refusal = await spendRefusal(cohort.workspace_id);
    const scored: Scored = refusal
      ? { status: 'failed', failure_reason: `Not scored: the spend check refused (${refusal})`, transcript_available: held.transcript_available, call: held.call }
      : await scoreCall(cohort.workspace_id, call, rubric);
    // Charged before the result is written (once per result ID), so a scored result is never left unbilled.
    if (scored.status === 'scored') await chargeScoredResult(cohort.workspace_id, { result_id: held.result_id, call_id: held.call_id, ...(scored.call.duration_ms === undefined ? {} : { duration_ms: scored.call.duration_ms }) });
    const outcome: ResultItem = {
      ...held,
      ...(scored.status === 'scored'
        ? { status: 'scored', machine: scored.machine, ...(scored.note ? { note: scored.note } : {}), scored_timestamp: Date.now() }
        : { status: 'failed', failure_reason: scored.failure_reason }),
      transcript_available: scored.transcript_available,
      call: scored.call,
      run_id: runId,
    };
    if (scored.status === 'failed') logger.warn('A QA result failed', { result_id: outcome.result_id, reason: scored.failure_reason });
    return (await finishResult(outcome, claim)) ? scored.status : 'held';
  } finally {
    await slot.release();
  }
}

/** Runs `work` over `items`, at most `limit` at once, answering in order. */
async function inWaves<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += limit) results.push(...(await Promise.all(items.slice(start, start + limit).map(work))));
  return results;
}

async function runStep(message: Extract<QaMessage, { kind: 'qa-run' }>): Promise<void> {
  const run = await getRunItem(message.workspace_id, message.cohort_id, message.run_id);
  if (!run || run.status === 'complete') return;
  const cohort = await findCohortItem(message.workspace_id, message.cohort_id);
  if (!cohort) return;
  const nowMs = Date.now();
  const page = await callExportPage(run.workspace_id, { limit: PAGE_CALLS, filter: callFilterOf(run.selection), ...(run.cursor ? { after: run.cursor } : {}) });
  const counts: RunCounts = { examined_count: 0, scored_count: 0, already_scored_count: 0, failed_count: 0, not_sampled_count: 0, over_daily_cap_count: 0 };
  const existing = await resultsOfCalls(run.workspace_id, run.cohort_id, run.rubric_version, page.calls.map((call) => call.call_id));
  const toScore: ScoredCall[] = [];
  let waiting = false;
  for (const call of page.calls) {
    counts.examined_count++;
    if (!inSample(call.call_id, run.selection.sample_rate)) {
      counts.not_sampled_count++;
      continue;
    }
    const found = existing.get(call.call_id);
    if (found?.status === 'scored') {
      if (found.run_id === run.run_id) counts.scored_count++;
      else counts.already_scored_count++;
      continue;
    }
    const endedAt = (call as { end_timestamp?: number }).end_timestamp;
    if (call.call_status === 'ended' && !call.call_analysis && typeof endedAt === 'number' && endedAt > nowMs - ANALYSIS_WAIT_MS) {
      waiting = true;
      continue;
    }
    toScore.push(call as ScoredCall);
  }
  const claim = randomUUID();
  const outcomes = await inWaves(toScore, CALLS_AT_ONCE, (call) => scoreOne(cohort, run.rubric, call, run.run_id, claim));
  for (const outcome of outcomes) {
    if (outcome === 'scored') counts.scored_count++;
    else if (outcome === 'failed') counts.failed_count++;
    else if (outcome === 'already') counts.already_scored_count++;
    else if (outcome === 'capped') counts.over_daily_cap_count++;
  }
  const noSlot = outcomes.includes('no_slot');
  if (noSlot || waiting || outcomes.includes('held')) {
    // The page again later, from the same cursor: what was settled is found settled.
    await touchRun(run, Date.now());
    await queueQaMessage(message, Date.now() + (noSlot ? SLOT_RECHECK_MS : HELD_RECHECK_MS));
    return;
  }
  const next = page.next ?? undefined;
  if ((await advanceRun(run, next, counts, Date.now())) && next) await queueQaMessage(message);
}

async function scoreStep(message: Extract<QaMessage, { kind: 'qa-score' }>): Promise<void> {
  const cohort = await findCohortItem(message.workspace_id, message.cohort_id);
  if (!cohort?.auto_score) return;
  let call: ScoredCall & Parameters<typeof matchesSelection>[1];
  try {
    call = (await getCall(message.workspace_id, message.call_id)) as typeof call;
  } catch (error) {
    if (error instanceof NotFound) return;
    throw error;
  }
  if (!matchesSelection(cohort.selection, call) || !inSample(call.call_id, cohort.selection.sample_rate)) return;
  const outcome = await scoreOne(cohort, cohort.rubric, call, 'auto', randomUUID());
  if (outcome === 'no_slot') await queueQaMessage(message, Date.now() + SLOT_RECHECK_MS);
  else if (outcome === 'held') await queueQaMessage(message, Date.now() + HELD_RECHECK_MS);
}

/** Empties a deleted cohort's partition (results, score copies, counters, runs) and its results' pointers and call entries, a page a message. */
async function cleanupStep(message: Extract<QaMessage, { kind: 'qa-cleanup' }>): Promise<void> {
  if (await findCohortItem(message.workspace_id, message.cohort_id)) return;
  const partition = keys.qaCohortItems(message.workspace_id, message.cohort_id);
  const page = await table.queryPage<{ pk: string; sk: string; result_id?: string; call_id?: string }>({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': partition.pk },
    ProjectionExpression: 'pk, sk, result_id, call_id',
    Limit: CLEANUP_PAGE,
  });
  const refs = page.items.flatMap((item) =>
    item.sk.startsWith('RESULT#') && item.result_id && item.call_id ? resultSideKeys(message.workspace_id, { result_id: item.result_id, call_id: item.call_id }) : [],
  );
  await table.batchDelete([...refs, ...page.items.map(({ pk, sk }) => ({ pk, sk }))]);
  if (page.lastKey) await queueQaMessage(message);
}

/** The call-steps consumer's entry for QA messages. */
export async function runQaMessage(message: QaMessage): Promise<void> {
  switch (message.kind) {
    case 'qa-run':
      return runStep(message);
    case 'qa-score':
      return scoreStep(message);
    case 'qa-cleanup':
      return cleanupStep(message);
  }
}
