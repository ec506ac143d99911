import * as z from 'zod';
import { epochMs, idOf, lazySchema, queryInt } from '../../platform/http/schemas.ts';
import { QaRun } from '../runs/schemas.ts';

/*
 * QA cohorts (docs/qa.md): which calls belong (the selection), the rubric they are scored
 * against, and whether new matching calls are scored as their analysis lands. Scores are
 * 0 to 100 throughout (criteria, overall, pass threshold). Schemas are built on first use.
 */

/** The most cohorts a workspace keeps: the auto-scoring listener reads them all in one Query per analysed call. */
export const MAX_COHORTS = 100;
/** The most criteria a rubric holds: each is one line of the judging model's answer. */
const MAX_CRITERIA = 20;

/**
 * What a criterion is scored by offline (docs/qa.md, "Scoring offline"): the five built-in
 * rules, or `custom` (quoted phrases in its description). `latency` is measured, never
 * judged, online or offline.
 */
const CRITERION_TYPES = ['resolution', 'hallucination', 'tone', 'instruction_following', 'latency', 'custom'] as const;

/** The latency criterion's bound when none is given: a median response at or under it scores 100. */
export const DEFAULT_LATENCY_BOUND_MS = 2_000;

const CRITERION_NAME = /^[a-z][a-z0-9_]{0,63}$/;

const criterion = () =>
  z
    .object({
      name: z.string().regex(CRITERION_NAME, 'Must be 1 to 64 lowercase letters, digits or `_`, starting with a letter'),
      description: z.string().trim().min(1).max(2_000),
      weight: z.number().gt(0).max(100).describe('Relative weight in the overall score'),
      type: z.enum(CRITERION_TYPES).default('custom'),
      latency_bound_ms: z.number().int().min(100).max(60_000).optional().describe(`type latency only: the median response time that still scores 100 (default ${DEFAULT_LATENCY_BOUND_MS})`),
    })
    .superRefine((value, context) => {
      if (value.latency_bound_ms !== undefined && value.type !== 'latency') {
        context.addIssue({ code: 'custom', path: ['latency_bound_ms'], message: 'Only a criterion of type latency has a latency bound' });
      }
    });

export const RubricInput = () =>
  z.object({
    criteria: z
      .array(criterion())
      .min(1, 'A rubric needs at least one criterion')
      .max(MAX_CRITERIA)
      .superRefine((criteria, context) => {
        const seen = new Set<string>();
        criteria.forEach((item, index) => {
          if (seen.has(item.name)) context.addIssue({ code: 'custom', path: [index, 'name'], message: `Duplicate criterion name ${item.name}` });
          seen.add(item.name);
        });
      }),
    pass_threshold: z.number().min(0).max(100).default(70).describe('The overall score (0 to 100) at or above which a call passes'),
  });
export type RubricInput = z.infer<ReturnType<typeof RubricInput>>;
export type Criterion = RubricInput['criteria'][number];

const CALL_STATUS_VALUES = ['registered', 'not_connected', 'ongoing', 'ended', 'error'] as const;

/**
 * Which calls belong. Every filter is optional; a call matches when it matches all given.
 * `call_status` defaults to `ended` (a call that never connected has nothing to score).
 * The filter values are checked as list-calls checks its filter (400 naming the field).
 */
const SelectionInput = () =>
  z
    .object({
      agent_ids: z.array(idOf('agent', 'an agent ID')).min(1).max(100).optional(),
      start_timestamp: epochMs().optional().describe("Calls that started at or after this (epoch ms)"),
      end_timestamp: epochMs().optional().describe('Calls that started at or before this (epoch ms)'),
      call_status: z.array(z.enum(CALL_STATUS_VALUES)).min(1).max(5).default(['ended']),
      direction: z.array(z.enum(['inbound', 'outbound'])).min(1).max(2).optional(),
      call_type: z.array(z.enum(['web_call', 'phone_call'])).min(1).max(2).optional(),
      batch_call_id: z.array(idOf('batchCall', 'a batch call ID')).min(1).max(100).optional(),
      disconnection_reason: z.array(z.string().min(1).max(64)).min(1).max(50).optional(),
      sample_rate: z.number().min(0).max(1).default(1).describe("The share of matching calls scored, chosen by the call ID's hash (the same calls every time)"),
      max_per_day: z.number().int().min(1).max(100_000).optional().describe('The most calls scored per UTC day of their start, per rubric version'),
    })
    .strict()
    .superRefine((value, context) => {
      if (value.start_timestamp !== undefined && value.end_timestamp !== undefined && value.end_timestamp < value.start_timestamp) {
        context.addIssue({ code: 'custom', path: ['end_timestamp'], message: 'Must not be before start_timestamp' });
      }
    });
export type Selection = z.infer<ReturnType<typeof SelectionInput>>;

export const CreateCohortBody = lazySchema(() =>
  z
    .object({
      name: z.string().trim().min(1).max(200),
      description: z.string().trim().max(2_000).optional(),
      selection: SelectionInput().default(() => SelectionInput().parse({})),
      rubric: RubricInput().optional().describe('Left out: the default rubric (docs/qa.md)'),
      auto_score: z.boolean().default(false).describe('Score new matching calls once their analysis lands'),
    }),
);
export type CreateCohortInput = z.infer<typeof CreateCohortBody>;

/** PATCH: each field given replaces the cohort's (`selection` and `rubric` whole); a changed rubric is a new version. */
export const UpdateCohortBody = lazySchema(() =>
  z
    .object({
      name: z.string().trim().min(1).max(200).optional(),
      description: z.string().trim().max(2_000).nullable().optional(),
      selection: SelectionInput().optional(),
      rubric: RubricInput().optional(),
      auto_score: z.boolean().optional(),
    }),
);
export type UpdateCohortInput = z.infer<typeof UpdateCohortBody>;

const criterionView = () =>
  z.object({
    name: z.string(),
    description: z.string(),
    weight: z.number(),
    type: z.enum(CRITERION_TYPES),
    latency_bound_ms: z.number().int().optional(),
  });

export const Rubric = () =>
  z.object({
    version: z.number().int().describe('1 when the cohort is made, one more each time its criteria or threshold change'),
    criteria: z.array(criterionView()),
    pass_threshold: z.number(),
  });
export type Rubric = z.infer<ReturnType<typeof Rubric>>;

export const Cohort = lazySchema(() =>
  z.object({
    cohort_id: z.string(),
    name: z.string(),
    description: z.string().optional(),
    selection: z.object({
      agent_ids: z.array(z.string()).optional(),
      start_timestamp: epochMs().optional(),
      end_timestamp: epochMs().optional(),
      call_status: z.array(z.string()),
      direction: z.array(z.string()).optional(),
      call_type: z.array(z.string()).optional(),
      batch_call_id: z.array(z.string()).optional(),
      disconnection_reason: z.array(z.string()).optional(),
      sample_rate: z.number(),
      max_per_day: z.number().int().optional(),
    }),
    rubric: Rubric(),
    auto_score: z.boolean(),
    last_run: QaRun.nullable().describe('The newest run, or null before the first'),
    created_timestamp: epochMs(),
    last_modification_timestamp: epochMs(),
  }),
);
export type Cohort = z.infer<typeof Cohort>;

export const CohortPage = lazySchema(() => z.object({ items: z.array(Cohort), has_more: z.boolean(), pagination_key: z.string().optional() }));

export const CohortListQuery = lazySchema(() =>
  z.object({
    limit: queryInt({ min: 1, max: MAX_COHORTS, default: 50 }),
    pagination_key: idOf('qaCohort', 'a QA cohort ID').optional(),
  }),
);

export const cohortIdParams = lazySchema(() => z.object({ cohort_id: idOf('qaCohort', 'a QA cohort ID') }));
