import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';

/*
 * Human review of QA results (docs/qa.md, "Review", "WER", "Calibration"): a reviewer's
 * scores beside the machine's, a corrected transcript's word error rate, and the machine's
 * agreement with reviewers per criterion.
 */

/** The most words either transcript may hold for WER: the alignment is O(n·m) in time. */
export const MAX_WER_WORDS = 10_000;

export const ReviewBody = lazySchema(() =>
  z
    .object({
      scores: z
        .record(z.string(), z.number().min(0).max(100).nullable())
        .optional()
        .describe("The reviewer's score (0 to 100, or null: cannot be judged) per criterion, by name; a criterion left out keeps the machine's score"),
      notes: z.string().max(10_000).optional(),
    })
    .strict()
    .superRefine((value, context) => {
      if (value.scores === undefined && value.notes === undefined) context.addIssue({ code: 'custom', path: ['scores'], message: 'Give scores, notes or both' });
    }),
);
export type ReviewInput = z.infer<typeof ReviewBody>;

export const WerCorrectionBody = lazySchema(() =>
  z
    .object({
      transcript_object: z
        .array(z.object({ role: z.enum(['agent', 'user']), content: z.string().max(100_000) }).passthrough())
        .min(1)
        .max(10_000)
        .describe("The call's utterances as they were said (get-call's transcript_object, corrected); only the caller's (`user`) lines are compared"),
    })
    .strict(),
);
export type WerCorrectionInput = z.infer<typeof WerCorrectionBody>;

export const WerAnswer = lazySchema(() =>
  z.object({
    wer: z.number().describe('(substitutions + deletions + insertions) / reference_words, 4 decimals'),
    substitutions: z.number().int(),
    deletions: z.number().int(),
    insertions: z.number().int(),
    reference_words: z.number().int().describe("Words in the corrected caller lines"),
    hypothesis_words: z.number().int().describe("Words in the recognised caller lines"),
  }),
);

export const CalibrateBody = lazySchema(() =>
  z
    .object({
      rubric_version: z.number().int().min(1).max(1_000_000_000).optional().describe("Default: the cohort's current version"),
      tolerance: z.number().min(0).max(100).default(10).describe('Scores at most this far apart agree (default 10 points)'),
    })
    .strict()
    .default({ tolerance: 10 }),
);
export type CalibrateInput = z.infer<typeof CalibrateBody>;

const figure = () => z.number().nullable().describe('Null when there is nothing to compare');

export const Calibration = lazySchema(() =>
  z.object({
    cohort_id: z.string(),
    rubric_version: z.number().int(),
    tolerance: z.number(),
    reviewed_count: z.number().int().describe('Reviewed results of the version'),
    message: z.string().optional().describe('Why there is nothing to compare (no reviewed results)'),
    overall: z.object({
      count: z.number().int(),
      mean_machine_score: figure(),
      mean_human_score: figure(),
      mean_absolute_difference: figure(),
      pass_threshold: z.number(),
      pass_agreement_rate: figure().describe("The share of calls where the machine's pass or fail is the reviewer's"),
      suggested_pass_threshold: z.number().describe('The threshold at which they would agree most (the current one when none does better)'),
    }),
    criteria: z.array(
      z.object({
        name: z.string(),
        weight: z.number(),
        count: z.number().int().describe('Results where a reviewer scored this criterion and the machine assessed it'),
        mean_machine_score: figure(),
        mean_human_score: figure(),
        mean_difference: figure().describe('Mean of machine minus reviewer: above 0, the machine scores higher'),
        mean_absolute_difference: figure(),
        agreement_rate: figure().describe('The share of pairs at most `tolerance` points apart'),
        pass_agreement_rate: figure().describe('The share of pairs on the same side of the pass threshold'),
      }),
    ),
    suggestions: z.array(
      z.object({
        kind: z.enum(['machine_scores_higher', 'machine_scores_lower', 'inconsistent', 'pass_threshold']),
        criterion: z.string().optional(),
        message: z.string(),
        suggested_weight: z.number().optional(),
        suggested_pass_threshold: z.number().optional(),
      }),
    ),
  }),
);
export type Calibration = z.infer<typeof Calibration>;
