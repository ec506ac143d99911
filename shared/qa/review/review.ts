import { getCall } from '../../calls/records/index.ts';
import type { Principal } from '../../platform/auth/gate.ts';
import { badRequest, conflict, NotFound, notFound, unprocessable } from '../../platform/errors.ts';
import { findResult, toResult, werFigures } from '../results/results.ts';
import type { QaResult } from '../results/schemas.ts';
import { setScoredResultField, type ResultItem, type Reviewer, type WerCorrectionItem } from '../results/store.ts';
import { overallScore } from '../scoring/rules.ts';
import { MAX_WER_WORDS, type ReviewInput, type WerCorrectionInput } from './schemas.ts';
import { normalisedWords, wordErrorRate, type WerFigures } from './wer.ts';

/*
 * A reviewer's scores and a corrected transcript, kept on the result beside the machine's
 * scores (docs/qa.md, "Review" and "WER"). Only a scored result takes either: a failed one
 * has no machine scores to compare with.
 */

/** Who is acting, as a review records it: the signed-in member, or the API key. */
const reviewerOf = (principal: Principal): Reviewer =>
  principal.kind === 'session' ? { type: 'member', id: principal.credentialId } : { type: 'api_key', id: principal.credentialId };

async function scoredResult(workspaceId: string, resultId: string): Promise<ResultItem> {
  const item = await findResult(workspaceId, resultId);
  if (item.status !== 'scored' || !item.machine) throw conflict(`QA result ${resultId} is ${item.status}: only a scored result can be reviewed or corrected`);
  return item;
}

const resultGone = (resultId: string) => notFound(`QA result ${resultId} not found`);

/**
 * Records a review: each criterion the reviewer scored, the machine's score for the ones
 * left out, and the overall score and pass recomputed with the rubric's weights and pass
 * threshold. A second review replaces the first.
 */
export async function reviewResult(principal: Principal, resultId: string, body: ReviewInput, nowMs = Date.now()): Promise<QaResult> {
  const item = await scoredResult(principal.workspaceId, resultId);
  const machine = item.machine!;
  const names = machine.criteria.map((criterion) => criterion.name);
  const given = body.scores ?? {};
  for (const name of Object.keys(given)) {
    if (!names.includes(name)) throw badRequest(`scores.${name}: Not a criterion of this result's rubric (${names.join(', ')})`);
  }
  const criteria = machine.criteria.map((criterion) =>
    Object.hasOwn(given, criterion.name)
      ? { name: criterion.name, weight: criterion.weight, score: given[criterion.name]!, source: 'reviewer' as const }
      : { name: criterion.name, weight: criterion.weight, score: criterion.score, source: 'machine' as const },
  );
  const overall = overallScore(criteria);
  const review: NonNullable<QaResult['review']> = {
    reviewer: reviewerOf(principal),
    criteria,
    overall_score: overall,
    passed: overall === null ? null : overall >= machine.pass_threshold,
    pass_threshold: machine.pass_threshold,
    ...(body.notes === undefined ? {} : { notes: body.notes }),
    reviewed_timestamp: nowMs,
  };
  if (!(await setScoredResultField(item, 'review', review))) throw resultGone(resultId);
  return toResult({ ...item, review });
}

/** The caller's words of a transcript: only they were recognised (the agent's lines are its own text). */
const callerWords = (lines: readonly { role: string; content: string }[]): string[] =>
  lines.filter((line) => line.role === 'user').flatMap((line) => normalisedWords(line.content));

/**
 * Takes the corrected transcript, answers the word error rate of the caller's recognised
 * lines against it, and keeps the corrected caller lines and the figures on the result (a
 * later correction replaces them). The call must still keep its transcript.
 */
export async function correctTranscript(principal: Principal, resultId: string, body: WerCorrectionInput, nowMs = Date.now()): Promise<WerFigures> {
  const item = await scoredResult(principal.workspaceId, resultId);
  const reference = callerWords(body.transcript_object);
  if (!reference.length) throw badRequest('transcript_object: The corrected transcript has no caller (user) words to compare with');
  if (reference.length > MAX_WER_WORDS) throw badRequest(`transcript_object: The corrected caller lines have ${reference.length} words; at most ${MAX_WER_WORDS}`);
  const noTranscript = conflict(`The call ${item.call_id} kept no transcript (its data storage setting), so there is nothing recognised to compare with`);
  if (!item.transcript_available) throw noTranscript;
  let call: { transcript_object?: unknown };
  try {
    call = (await getCall(principal.workspaceId, item.call_id)) as typeof call;
  } catch (error) {
    if (error instanceof NotFound) throw resultGone(resultId);
    throw error;
  }
  if (!Array.isArray(call.transcript_object)) throw noTranscript;
  const recognised = (call.transcript_object as { role?: unknown; content?: unknown }[]).flatMap((line) =>
    typeof line.role === 'string' && typeof line.content === 'string' ? [{ role: line.role, content: line.content }] : [],
  );
  const hypothesis = callerWords(recognised);
  if (hypothesis.length > MAX_WER_WORDS) throw unprocessable(`The call's recognised caller lines have ${hypothesis.length} words; WER is computed for at most ${MAX_WER_WORDS}`);
  const figures = wordErrorRate(reference, hypothesis);
  const correction: WerCorrectionItem = {
    ...figures,
    corrected_timestamp: nowMs,
    transcript_object: body.transcript_object.filter((line) => line.role === 'user').map((line) => ({ role: 'user', content: line.content })),
    corrected_by: reviewerOf(principal),
  };
  if (!(await setScoredResultField(item, 'wer_correction', correction))) throw resultGone(resultId);
  const { corrected_timestamp: _at, ...answer } = werFigures(correction);
  return answer;
}
