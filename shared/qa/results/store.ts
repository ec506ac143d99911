import { createHash } from 'node:crypto';
import { callExistsCheck } from '../../calls/records/index.ts';
import { idPrefix } from '../../platform/ids.ts';
import { keys, type ItemKey } from '../../platform/store/keys.ts';
import { transactCounted } from '../../platform/store/listing-count.ts';
import { ConditionFailed, table, TransactionCancelled, type TransactOp } from '../../platform/store/table.ts';
import type { QaResult } from './schemas.ts';

/*
 * QA results (docs/data-model.md), in the cohort's partition `WS#<ws>#QACOHORT#<cohort>`:
 * - the result, `RESULT#V#<9-digit rubric version>#<call id>`: its key is the claim that
 *   scores a call once per rubric version. A scorer first writes it `scoring` with its own
 *   claim (new: `attribute_not_exists`; or taking over a `failed` one, or a `scoring` one
 *   whose claim went stale: its scorer died), then replaces it, conditional on still
 *   holding the claim, with the whole outcome (`scored` or `failed`): never half-written.
 *   Call IDs sort by time, so a version's results list oldest call first.
 * - a scored result's slim copy, `SCORE#V#<version>#<overall score in hundredths, 5
 *   digits>#<call id>`, written in the same transaction: the version's results by score,
 *   worst first, with the figures a filter needs (passed, each criterion's score).
 * - the version's per-day counter, `DAY#V#<version>#<yyyy-mm-dd>` (`n`), taken in the
 *   claim's transaction when the cohort has max_per_day: a claim over the cap is refused.
 * - `WS#<ws>#QARESULT`, `RESULT#<result id>` → which cohort, version and call, for
 *   `GET /qa/results/{id}`, which names only the result.
 * - `WS#<ws>#QACALL`, `CALL#<call id>#<result id>` → result, cohort and version: a call's results
 *   in every cohort and version, for deleting them with the call (deleteCallResults).
 *   Written in the claim's transaction with a check that the call still exists, so no
 *   result of a deleted call is claimed after its results were deleted.
 * Result IDs are the SHA-256 of workspace, cohort, version and call (24 hex): the same
 * call scored under the same rubric version is always the same result.
 */

/** A scorer that has held a claim this long died (the consumer's timeout is 120 s): another may take the call over. */
export const CLAIM_STALE_MS = 150_000;

/** Who reviewed or corrected a result. */
export interface Reviewer {
  type: 'member' | 'api_key';
  id: string;
}

/** A transcript correction as kept: its figures (the API's), the corrected caller lines and who gave them. */
export type WerCorrectionItem = NonNullable<QaResult['wer_correction']> & {
  transcript_object: { role: 'user'; content: string }[];
  corrected_by: Reviewer;
};

export type ResultItem = Omit<QaResult, 'status' | 'wer_correction'> & {
  wer_correction?: WerCorrectionItem;
  workspace_id: string;
  status: QaResult['status'] | 'scoring';
  /** Which attempt holds the result while it is `scoring`. */
  claim?: string;
  claimed_at?: number;
  /** The run that scored it, or `auto` (auto-scoring). */
  run_id: string;
};

export function resultIdOf(workspaceId: string, cohortId: string, rubricVersion: number, callId: string): string {
  return idPrefix.qaResult + createHash('sha256').update(`${workspaceId}:${cohortId}:${rubricVersion}:${callId}`).digest('hex').slice(0, 24);
}

const resultKey = (item: Pick<ResultItem, 'workspace_id' | 'cohort_id' | 'rubric_version' | 'call_id'>): ItemKey =>
  keys.qaResult(item.workspace_id, item.cohort_id, item.rubric_version, item.call_id);

/** An overall score (0 to 100, two decimals) as the score copy's sort key part. */
const hundredths = (score: number): number => Math.round(score * 100);

/** The claim transaction's check that the call exists (its index in the operations). */
const CALL_CHECK = 3;

export type ClaimOutcome = { claimed: ResultItem } | { done: ResultItem } | { held: true } | { capped: true };

/**
 * Takes the call for scoring under this claim (see above). `cap`: the cohort's max_per_day
 * and the call's day, counted only when the result is new (a failed result taken over
 * keeps the place it had).
 */
export async function claimResult(fresh: ResultItem, claim: string, nowMs: number, cap?: { max: number; day: string }): Promise<ClaimOutcome> {
  const item: ResultItem = { ...fresh, status: 'scoring', claim, claimed_at: nowMs };
  const ops: TransactOp[] = [
    { Put: { Item: { ...item, ...resultKey(item) }, ConditionExpression: 'attribute_not_exists(pk)' } },
    { Put: { Item: { ...keys.qaResultRef(item.workspace_id, item.result_id), cohort_id: item.cohort_id, rubric_version: item.rubric_version, call_id: item.call_id } } },
    { Put: { Item: { ...keys.qaCallResult(item.workspace_id, item.call_id, item.result_id), result_id: item.result_id, cohort_id: item.cohort_id, rubric_version: item.rubric_version } } },
    callExistsCheck(item.workspace_id, item.call_id),
  ];
  if (cap) {
    ops.push({
      Update: {
        Key: keys.qaDayCount(item.workspace_id, item.cohort_id, item.rubric_version, cap.day),
        UpdateExpression: 'ADD n :one',
        ConditionExpression: 'attribute_not_exists(n) OR n < :max',
        ExpressionAttributeValues: { ':one': 1, ':max': cap.max },
      },
    });
  }
  try {
    await transactCounted(ops);
    return { claimed: item };
  } catch (error) {
    if (!(error instanceof TransactionCancelled)) throw error;
    // The call was deleted meanwhile: nothing is written; its page, read again, no longer lists it.
    if (error.conflicted || error.failedAt.includes(CALL_CHECK)) return { held: true };
    if (!error.failedAt.includes(0)) return { capped: true };
  }
  return takeOver(item, claim, nowMs);
}

/** The result exists: done when scored; taken over when failed or stale; else another attempt holds it. */
async function takeOver(item: ResultItem, claim: string, nowMs: number): Promise<ClaimOutcome> {
  const existing = await table.get<ResultItem>(resultKey(item), { consistent: true });
  if (!existing) return { held: true };
  if (existing.status === 'scored') return { done: existing };
  try {
    const taken = await table.update<ResultItem>({
      Key: resultKey(item),
      UpdateExpression: 'SET #status = :scoring, claim = :claim, claimed_at = :now, run_id = :run',
      ConditionExpression: '#status = :failed OR (#status = :scoring AND claimed_at < :stale)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':scoring': 'scoring', ':failed': 'failed', ':claim': claim, ':now': nowMs, ':run': item.run_id, ':stale': nowMs - CLAIM_STALE_MS },
      ReturnValues: 'ALL_NEW',
    });
    return { claimed: taken! };
  } catch (error) {
    if (error instanceof ConditionFailed) return { held: true };
    throw error;
  }
}

/**
 * Replaces a claimed result with its outcome, and writes a scored result's score copy, in
 * one transaction conditional on the claim still being this attempt's. False when it was not.
 */
export async function finishResult(outcome: ResultItem, claim: string): Promise<boolean> {
  const { claim: _claim, claimed_at: _at, ...stored } = outcome;
  const machine = outcome.machine;
  // Each assessed criterion's score beside the result too, for the listing's criterion filter.
  const criterionScores = Object.fromEntries((machine?.criteria ?? []).filter((item) => item.score !== null).map((item) => [item.name, item.score]));
  const ops: TransactOp[] = [
    {
      Put: {
        Item: { ...stored, ...resultKey(outcome), criterion_scores: criterionScores },
        ConditionExpression: '#status = :scoring AND claim = :claim',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':scoring': 'scoring', ':claim': claim },
      },
    },
  ];
  if (outcome.status === 'scored' && machine && machine.overall_score !== null) {
    ops.push({
      Put: {
        Item: {
          ...keys.qaScore(outcome.workspace_id, outcome.cohort_id, outcome.rubric_version, hundredths(machine.overall_score), outcome.call_id),
          result_id: outcome.result_id,
          call_id: outcome.call_id,
          overall_score: machine.overall_score,
          passed: machine.passed,
          criteria: criterionScores,
        },
      },
    });
  }
  try {
    await table.transact(ops);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled && !error.conflicted) return false;
    throw error;
  }
}

/** The results of these calls under one version, as stored (a run's page: which are scored already). */
export async function resultsOfCalls(workspaceId: string, cohortId: string, rubricVersion: number, callIds: readonly string[]): Promise<Map<string, ResultItem>> {
  const found = await table.batchGet<ResultItem>(callIds.map((callId) => keys.qaResult(workspaceId, cohortId, rubricVersion, callId)));
  return new Map(found.map((item) => [item.call_id, item]));
}

/** A result by its ID (through its pointer), or undefined. */
export async function findResultById(workspaceId: string, resultId: string): Promise<ResultItem | undefined> {
  const ref = await table.get<{ cohort_id: string; rubric_version: number; call_id: string }>(keys.qaResultRef(workspaceId, resultId));
  if (!ref) return undefined;
  return table.get<ResultItem>(keys.qaResult(workspaceId, ref.cohort_id, ref.rubric_version, ref.call_id));
}

export interface ResultFilter {
  status?: 'scored' | 'failed';
  passed?: boolean;
  criterion?: string;
  minScore?: number;
  maxScore?: number;
}

/**
 * A page of a version's results, oldest call first (`time`) or lowest overall score first
 * (`score`: the score copies, then the results read by key), after `after` (a result of
 * the same version), filtered in the query (results in progress are never listed).
 */
export async function pageResults(
  workspaceId: string,
  cohortId: string,
  rubricVersion: number,
  options: { order: 'time' | 'score'; limit: number; after?: ResultItem; filter: ResultFilter },
): Promise<{ items: ResultItem[]; hasMore: boolean }> {
  const { order, limit, after, filter } = options;
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const conditions: string[] = [];
  const scoreField = order === 'time' ? 'machine.overall_score' : 'overall_score';
  const passedField = order === 'time' ? 'machine.passed' : 'passed';
  if (order === 'time') {
    names['#status'] = 'status';
    values[':scoring'] = 'scoring';
    conditions.push('#status <> :scoring');
    if (filter.status) {
      values[':wanted'] = filter.status;
      conditions.push('#status = :wanted');
    }
  }
  if (filter.passed !== undefined) {
    values[':passed'] = filter.passed;
    conditions.push(`${passedField} = :passed`);
  }
  if (filter.minScore !== undefined || filter.maxScore !== undefined) {
    let field = scoreField;
    if (filter.criterion) {
      names['#criterion'] = filter.criterion;
      field = order === 'time' ? 'criterion_scores.#criterion' : 'criteria.#criterion';
    }
    if (filter.minScore !== undefined) {
      values[':min'] = filter.minScore;
      conditions.push(`${field} >= :min`);
    }
    if (filter.maxScore !== undefined) {
      values[':max'] = filter.maxScore;
      conditions.push(`${field} <= :max`);
    }
  } else if (filter.criterion) {
    names['#criterion'] = filter.criterion;
    conditions.push(order === 'time' ? 'attribute_exists(criterion_scores.#criterion)' : 'attribute_exists(criteria.#criterion)');
  }
  const partition = order === 'time' ? keys.qaResults(workspaceId, cohortId, rubricVersion) : keys.qaScores(workspaceId, cohortId, rubricVersion);
  const matched: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined = after
    ? {
        ...(order === 'time'
          ? resultKey(after)
          : keys.qaScore(workspaceId, cohortId, rubricVersion, hundredths(after.machine?.overall_score ?? 0), after.call_id)),
      }
    : undefined;
  // A filtered Query's Limit counts what it examined: read on until the page (and one more) matched.
  do {
    const page = await table.queryPage<Record<string, unknown>>({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ...(conditions.length ? { FilterExpression: conditions.join(' AND ') } : {}),
      ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
      ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix, ...values },
      Limit: Math.max(limit + 1, 50),
      ...(start ? { ExclusiveStartKey: start } : {}),
    });
    matched.push(...page.items);
    start = page.lastKey;
  } while (start && matched.length <= limit);
  const pageItems = matched.slice(0, limit);
  const items =
    order === 'time'
      ? (pageItems as ResultItem[])
      : await readInOrder(pageItems.map((copy) => keys.qaResult(workspaceId, cohortId, rubricVersion, copy.call_id as string)));
  return { items, hasMore: matched.length > limit };
}

async function readInOrder(resultKeys: ItemKey[]): Promise<ResultItem[]> {
  const found = await table.batchGet<ResultItem & ItemKey>(resultKeys);
  const bySk = new Map(found.map((item) => [item.sk, item]));
  return resultKeys.flatMap((key) => bySk.get(key.sk) ?? []);
}

/** The items beside a result that name it: its pointer and its call's entry (a deleted cohort's cleanup deletes them with it). */
export function resultSideKeys(workspaceId: string, item: { result_id: string; call_id: string }): ItemKey[] {
  return [keys.qaResultRef(workspaceId, item.result_id), keys.qaCallResult(workspaceId, item.call_id, item.result_id)];
}

/**
 * Sets one field of a scored result beside the machine's scores (a review, a transcript
 * correction), replacing what it held; false when the result is gone or is not scored.
 */
export async function setScoredResultField(item: ResultItem, field: 'review' | 'wer_correction', value: object): Promise<boolean> {
  try {
    await table.update({
      Key: resultKey(item),
      UpdateExpression: 'SET #field = :value',
      ConditionExpression: '#status = :scored',
      ExpressionAttributeNames: { '#field': field, '#status': 'status' },
      ExpressionAttributeValues: { ':value': value, ':scored': 'scored' },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** Every reviewed result of a version (scored results with a review), oldest call first. */
export function reviewedResults(workspaceId: string, cohortId: string, rubricVersion: number): Promise<ResultItem[]> {
  const partition = keys.qaResults(workspaceId, cohortId, rubricVersion);
  return table.queryAll<ResultItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    FilterExpression: '#status = :scored AND attribute_exists(review)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix, ':scored': 'scored' },
  });
}

/**
 * Deletes a call's QA results in every cohort and rubric version (a call's delete, a
 * privacy erase, retention): each result with its review and correction, its score copy
 * and its pointer, then the call's entries, last, so a delete cut short is finished by its
 * retry. Answers how many results there were.
 */
export async function deleteCallResults(workspaceId: string, callId: string): Promise<number> {
  const partition = keys.qaCallResults(workspaceId, callId);
  const entries = await table.queryAll<{ pk: string; sk: string; result_id: string; cohort_id: string; rubric_version: number }>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
  if (!entries.length) return 0;
  const resultKeys = entries.map((entry) => keys.qaResult(workspaceId, entry.cohort_id, entry.rubric_version, callId));
  const found = await table.batchGet<ResultItem>(resultKeys);
  const scoreCopies = found.flatMap((item) =>
    item.machine && typeof item.machine.overall_score === 'number'
      ? [keys.qaScore(workspaceId, item.cohort_id, item.rubric_version, hundredths(item.machine.overall_score), callId)]
      : [],
  );
  const pointers = entries.map((entry) => keys.qaResultRef(workspaceId, entry.result_id));
  await table.batchDelete([...resultKeys, ...scoreCopies, ...pointers]);
  await table.batchDelete(entries.map(({ pk, sk }) => ({ pk, sk })));
  return entries.length;
}

/** What the insights (overview, top questions, metrics) read of a result. */
export type InsightResult = Pick<ResultItem, 'result_id' | 'call_id' | 'agent_id' | 'status' | 'machine' | 'transcript_available' | 'call' | 'scored_timestamp'>;

/**
 * A version's results of calls created from `fromCallId` to `toCallId` (time-ordered call
 * ID bounds), newest call first, at most `cap` (truncated: more were left unread), with
 * only the fields the insights read. Results being scored are left out.
 */
export async function recentResults(
  workspaceId: string,
  cohortId: string,
  rubricVersion: number,
  options: { fromCallId: string; toCallId: string; cap: number },
): Promise<{ items: InsightResult[]; truncated: boolean }> {
  const partition = keys.qaResults(workspaceId, cohortId, rubricVersion);
  const items: InsightResult[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await table.queryPage<InsightResult>({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      FilterExpression: '#status <> :scoring',
      ProjectionExpression: 'result_id, call_id, agent_id, #status, machine, transcript_available, #call, scored_timestamp',
      ExpressionAttributeNames: { '#status': 'status', '#call': 'call' },
      ExpressionAttributeValues: { ':pk': partition.pk, ':from': partition.skPrefix + options.fromCallId, ':to': partition.skPrefix + options.toCallId, ':scoring': 'scoring' },
      ScanIndexForward: false,
      Limit: Math.min(500, options.cap + 1 - items.length),
      ...(start ? { ExclusiveStartKey: start } : {}),
    });
    items.push(...page.items);
    start = page.lastKey;
  } while (start && items.length <= options.cap);
  return { items: items.slice(0, options.cap), truncated: items.length > options.cap };
}
