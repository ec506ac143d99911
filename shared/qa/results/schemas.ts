import * as z from 'zod';
import { epochMs, idOf, lazySchema, optionalQueryInt, queryInt } from '../../platform/http/schemas.ts';

/*
 * QA results (docs/qa.md, "Results"): one per call, cohort and rubric version. The
 * machine's scores sit under `machine`, so a human review can sit beside them, never over
 * them. Scores are 0 to 100; a criterion that could not be assessed on what the call kept
 * scores null and is left out of the weighted overall score.
 */

const criterionScore = () =>
  z.object({
    name: z.string(),
    type: z.string(),
    weight: z.number(),
    score: z.number().nullable().describe('0 to 100; null when it could not be assessed'),
    reason: z.string().describe("Why, quoting the transcript where the call kept one"),
  });
export type CriterionScore = z.infer<ReturnType<typeof criterionScore>>;

export const QaResult = lazySchema(() =>
  z.object({
    result_id: z.string(),
    cohort_id: z.string(),
    call_id: z.string(),
    agent_id: z.string(),
    agent_version: z.number().int().optional(),
    rubric_version: z.number().int(),
    status: z.enum(['scored', 'failed']),
    failure_reason: z.string().optional().describe('status failed: why (a later run scores the call again)'),
    machine: z
      .object({
        scorer: z.enum(['model', 'rules']).describe('`rules`: the built-in offline model (no language model configured)'),
        model: z.string().optional(),
        criteria: z.array(criterionScore()),
        overall_score: z.number().nullable().describe('The weighted mean of the assessed criteria, 0 to 100 (two decimals)'),
        passed: z.boolean().nullable().describe('overall_score at or above the pass threshold; null when nothing could be assessed'),
        pass_threshold: z.number(),
      })
      .optional(),
    review: z
      .object({
        reviewer: z.object({ type: z.enum(['member', 'api_key']), id: z.string() }).describe('Who reviewed: the signed-in member, or the API key'),
        criteria: z.array(
          z.object({
            name: z.string(),
            weight: z.number(),
            score: z.number().nullable(),
            source: z.enum(['reviewer', 'machine']).describe("`machine`: the reviewer left it out, so the machine's score stands"),
          }),
        ),
        overall_score: z.number().nullable().describe("The weighted mean of the review's assessed criteria (the rubric's weights), 0 to 100"),
        passed: z.boolean().nullable(),
        pass_threshold: z.number(),
        notes: z.string().optional(),
        reviewed_timestamp: epochMs(),
      })
      .optional()
      .describe("A reviewer's scores beside the machine's (PATCH /qa/results/{result_id}); a new review replaces it"),
    wer_correction: z
      .object({
        wer: z.number(),
        substitutions: z.number().int(),
        deletions: z.number().int(),
        insertions: z.number().int(),
        reference_words: z.number().int(),
        hypothesis_words: z.number().int(),
        corrected_timestamp: epochMs(),
      })
      .optional()
      .describe('The word error rate of the recognised transcript against the corrected one (PUT /qa/results/{result_id}/wer-corrections)'),
    transcript_available: z.boolean().describe('False when the call kept no transcript (data storage setting): scored on its metadata and analysis'),
    note: z.string().optional(),
    call: z.object({
      start_timestamp: epochMs().optional(),
      duration_ms: z.number().optional(),
      latency_p50_ms: z.number().optional().describe("The call's end-to-end latency p50"),
      user_sentiment: z.string().optional(),
      call_successful: z.boolean().optional(),
      data_storage_setting: z.string(),
    }),
    created_timestamp: epochMs(),
    scored_timestamp: epochMs().optional(),
  }),
);
export type QaResult = z.infer<typeof QaResult>;

export const QaResultPage = lazySchema(() => z.object({ items: z.array(QaResult), has_more: z.boolean(), pagination_key: z.string().optional() }));

/** A score in the query string: a number from 0 to 100. */
const score = () =>
  z
    .string()
    .regex(/^\d{1,3}(\.\d+)?$/, 'Must be a number from 0 to 100')
    .transform(Number)
    .pipe(z.number().max(100));

export const ResultListQuery = lazySchema(() =>
  z
    .object({
      limit: queryInt({ min: 1, max: 200, default: 50 }),
      pagination_key: idOf('qaResult', 'a QA result ID').optional(),
      rubric_version: optionalQueryInt({ min: 1, max: 1_000_000_000 }).describe("Default: the cohort's current version"),
      order: z.enum(['time', 'score']).default('time').describe('`time`: oldest call first; `score`: lowest overall score first (scored results only)'),
      status: z.enum(['scored', 'failed']).optional(),
      passed: z.enum(['true', 'false']).transform((value) => value === 'true').optional(),
      criterion: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'Must be a criterion name').optional().describe('min_score and max_score apply to this criterion instead of the overall score'),
      min_score: score().optional(),
      max_score: score().optional(),
    })
    .superRefine((value, context) => {
      if (value.min_score !== undefined && value.max_score !== undefined && value.max_score < value.min_score) {
        context.addIssue({ code: 'custom', path: ['max_score'], message: 'Must not be below min_score' });
      }
    }),
);
export type ResultListInput = z.infer<typeof ResultListQuery>;

export const resultIdParams = lazySchema(() => z.object({ result_id: idOf('qaResult', 'a QA result ID') }));
