import * as z from 'zod';
import { epochMs, lazySchema } from '../../platform/http/schemas.ts';

/*
 * A run of a cohort (docs/qa.md, "Runs"): the cohort's matching calls walked oldest first
 * in the background, each not yet scored under the run's rubric version scored once. The
 * counts are of the calls the run has walked so far.
 */

export const QaRun = lazySchema(() =>
  z.object({
    run_id: z.string(),
    cohort_id: z.string(),
    rubric_version: z.number().int(),
    status: z.enum(['running', 'complete']),
    examined_count: z.number().int().describe('Matching calls walked'),
    scored_count: z.number().int().describe('Calls this run scored'),
    already_scored_count: z.number().int().describe('Calls already scored under this rubric version (an earlier run, auto-scoring)'),
    failed_count: z.number().int().describe('Calls whose scoring failed (a later run tries them again)'),
    not_sampled_count: z.number().int().describe('Calls left out by the sample rate'),
    over_daily_cap_count: z.number().int().describe('Calls left out by max_per_day'),
    created_timestamp: epochMs(),
    last_modification_timestamp: epochMs(),
  }),
);
export type QaRun = z.infer<typeof QaRun>;
