import * as z from 'zod';
import { epochMs, idOf, lazySchema, optionalQueryInt, queryInt } from '../../platform/http/schemas.ts';
import { engineListQuery, engineNamed, TestCaseDefinition, testResponseEngine } from '../definitions/index.ts';

/*
 * Batch tests and their test runs (retell-sdk's BatchTestResponse and TestCaseJobResponse).
 * Schemas are built on first use (z.lazy).
 */

/** The most cases one batch runs: a batch is one suite of one engine, run a few at a time. */
const MAX_CASES_PER_BATCH = 50;

export const CreateBatchTestBody = lazySchema(() =>
  z.object({
    response_engine: testResponseEngine(),
    test_case_definition_ids: z
      .array(idOf('testCase', 'a test case definition ID'))
      .min(1, 'A batch test needs at least one test case definition')
      .max(MAX_CASES_PER_BATCH, `A batch test runs at most ${MAX_CASES_PER_BATCH} test cases`)
      .refine((ids) => new Set(ids).size === ids.length, 'Each test case definition may appear once'),
  }),
);
export type CreateBatchTestInput = z.infer<typeof CreateBatchTestBody>;

export const BatchTest = lazySchema(() =>
  z.object({
    test_case_batch_job_id: z.string(),
    status: z.enum(['in_progress', 'complete']),
    response_engine: testResponseEngine(),
    total_count: z.number().int(),
    pass_count: z.number().int(),
    fail_count: z.number().int(),
    error_count: z.number().int(),
    creation_timestamp: epochMs(),
    user_modified_timestamp: epochMs(),
  }),
);
export type BatchTest = z.infer<typeof BatchTest>;

const TEST_RUN_STATUSES = ['pending', 'in_progress', 'pass', 'fail', 'error'] as const;
export type TestRunStatus = (typeof TEST_RUN_STATUSES)[number];

export const TestRun = lazySchema(() =>
  z.object({
    test_case_job_id: z.string(),
    test_case_batch_job_id: z.string(),
    status: z.enum(TEST_RUN_STATUSES),
    test_case_definition_id: z.string(),
    test_case_definition_snapshot: TestCaseDefinition,
    result_explanation: z.string().nullable().optional(),
    transcript_snapshot: z.unknown().nullable().optional(),
    creation_timestamp: epochMs(),
    user_modified_timestamp: epochMs(),
  }),
);
export type TestRun = z.infer<typeof TestRun>;

export const batchTestIdParams = lazySchema(() => z.object({ test_case_batch_job_id: idOf('batchTest', 'a batch test ID') }));
export const testRunIdParams = lazySchema(() => z.object({ test_case_job_id: idOf('testRun', 'a test run ID') }));

export const BatchTestListQuery = lazySchema(() =>
  z
    .object({
      ...engineListQuery(),
      version: optionalQueryInt({ min: 0, max: 1_000_000 }),
      pagination_key: idOf('batchTest', 'a batch test ID').optional(),
    })
    .superRefine(engineNamed),
);

const runPageFields = () => ({
  limit: queryInt({ min: 1, max: 1000, default: 50 }),
  pagination_key: idOf('testRun', 'a test run ID').optional(),
});
export const TestRunListQuery = lazySchema(() => z.object(runPageFields()));
/** The spec's `GET /list-test-runs` names the batch in the query. */
export const TestRunListByQuery = lazySchema(() => z.object({ ...runPageFields(), test_case_batch_job_id: idOf('batchTest', 'a batch test ID') }));

export const BatchTestPage = lazySchema(() => z.object({ has_more: z.boolean(), items: z.array(BatchTest), pagination_key: z.string().optional() }));
export const TestRunPage = lazySchema(() => z.object({ has_more: z.boolean(), items: z.array(TestRun), pagination_key: z.string().optional() }));

export const TestingSettings = lazySchema(() => z.object({ require_passing_batch_test_to_publish: z.boolean() }));
export const UpdateTestingSettingsBody = lazySchema(() => z.object({ require_passing_batch_test_to_publish: z.boolean().optional() }));
