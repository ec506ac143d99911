import { keys } from '../../platform/store/keys.ts';
import { notFound, tooManyRequests } from '../../platform/errors.ts';
import { acquireOutboundSlot, type OutboundSlot } from '../../platform/egress/outbound-slots.ts';
import { queryAll } from '../../platform/store/query.ts';
import { ConditionFailed, defineEntity, table, TransactionCancelled } from '../../platform/store/table.ts';
import { pageByEngine, type EngineQuery } from '../definitions/index.ts';
import type { BatchTest, TestRun, TestRunStatus } from './schemas.ts';

/*
 * Batch tests and test runs (docs/data-model.md):
 * - the batch, `WS#<ws>#TESTBATCH`, `BATCH#<id>` (time-ordered IDs: newest first), with its
 *   counts: each ended run adds one to its count in the same transaction that ends it, so
 *   the counts add up whatever is redelivered;
 * - its runs, in the batch's own partition `WS#<ws>#TESTBATCH#<batch id>`, `RUN#<run id>`
 *   (the list of a batch is one Query), each with the definition as it was when the batch
 *   was made: a run stays readable after its definition is edited or deleted;
 * - `WS#<ws>#TESTRUN`, `RUN#<run id>` → the batch, for get-test-run, which names only the run;
 * - the workspace's testing settings (the publish gate), `WS#<ws>`, `TESTINGSETTINGS`.
 */

export type BatchTestItem = BatchTest & {
  workspace_id: string;
  /** pass + fail + error, kept beside them: a condition can compare two attributes but not add them. */
  ended_count: number;
};

export type TestRunItem = TestRun & {
  workspace_id: string;
  /** Which attempt holds the run while it is `in_progress` (a stale one may be taken over). */
  claim?: string;
};

const batchTests = defineEntity<BatchTestItem & { pk: string; sk: string }, [workspaceId: string, batchTestId: string]>({
  key: keys.batchTest,
  notFound: (_workspaceId, batchTestId) => notFound(`Batch test ${batchTestId} not found`),
});

const runNotFound = (testRunId: string) => notFound(`Test run ${testRunId} not found`);

/** The runs and their pointers first, then the batch: a listed batch always has its runs. */
export async function putBatchTest(batch: BatchTestItem, runs: readonly TestRunItem[]): Promise<void> {
  await table.batchPut([
    ...runs.map((run) => ({ ...keys.testRun(run.workspace_id, run.test_case_batch_job_id, run.test_case_job_id), ...run })),
    ...runs.map((run) => ({ ...keys.testRunBatch(run.workspace_id, run.test_case_job_id), batch_id: run.test_case_batch_job_id })),
  ]);
  await batchTests.create(batch, batch.workspace_id, batch.test_case_batch_job_id);
}

export const getBatchTest = (workspaceId: string, batchTestId: string): Promise<BatchTestItem> => batchTests.mustGet(workspaceId, batchTestId);

export async function getTestRun(workspaceId: string, testRunId: string): Promise<TestRunItem> {
  const pointer = await table.get<{ batch_id: string }>(keys.testRunBatch(workspaceId, testRunId));
  const run = pointer && (await table.get<TestRunItem>(keys.testRun(workspaceId, pointer.batch_id, testRunId)));
  if (!run) throw runNotFound(testRunId);
  return run;
}

/** A page of a batch's runs in ID order (the order they were made in), from `after`. */
export async function pageTestRuns(workspaceId: string, batchTestId: string, options: { limit: number; after?: string }): Promise<{ items: TestRunItem[]; hasMore: boolean }> {
  const partition = keys.testRuns(workspaceId, batchTestId);
  const page = await table.queryPage<TestRunItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ...(options.after ? { ExclusiveStartKey: keys.testRun(workspaceId, batchTestId, options.after) } : {}),
    Limit: options.limit + 1,
  });
  return { items: page.items.slice(0, options.limit), hasMore: page.items.length > options.limit };
}

/** Every run of a batch (at most MAX_CASES_PER_BATCH). */
export const allTestRuns = (workspaceId: string, batchTestId: string): Promise<TestRunItem[]> => queryAll<TestRunItem>(keys.testRuns(workspaceId, batchTestId));

/** A page of the workspace's batch tests on `engine` (a version, or any), newest first. */
export const pageBatchTestsByEngine = (workspaceId: string, engine: EngineQuery, options: { limit: number; after?: string }) =>
  pageByEngine<BatchTestItem>(keys.batchTests(workspaceId), (id) => keys.batchTest(workspaceId, id).sk, engine, options);

/**
 * Takes a run for this attempt: pending, or in progress under an attempt older than
 * `staleBeforeMs` (one that died). Answers the run as taken, or undefined when another
 * attempt holds it or it has ended.
 */
export async function claimTestRun(run: TestRunItem, claim: string, nowMs: number, staleBeforeMs: number): Promise<TestRunItem | undefined> {
  try {
    return await table.update<TestRunItem>({
      Key: keys.testRun(run.workspace_id, run.test_case_batch_job_id, run.test_case_job_id),
      UpdateExpression: 'SET #status = :in_progress, claim = :claim, user_modified_timestamp = :now',
      ConditionExpression: '#status = :pending OR (#status = :in_progress AND user_modified_timestamp < :stale)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':in_progress': 'in_progress', ':pending': 'pending', ':claim': claim, ':now': nowMs, ':stale': staleBeforeMs },
      ReturnValues: 'ALL_NEW',
    });
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

const COUNT_OF: Record<'pass' | 'fail' | 'error', string> = { pass: 'pass_count', fail: 'fail_count', error: 'error_count' };

/**
 * Ends a run this attempt holds with its verdict and adds it to its batch's count, in one
 * transaction (so a run is counted once); then marks the batch complete once every run
 * has ended. Answers false when the run was no longer this attempt's.
 */
export async function endTestRun(
  run: TestRunItem,
  claim: string,
  verdict: { status: Extract<TestRunStatus, 'pass' | 'fail' | 'error'>; explanation: string; transcript: unknown },
  nowMs: number,
): Promise<boolean> {
  try {
    await table.transact([
      {
        Update: {
          Key: keys.testRun(run.workspace_id, run.test_case_batch_job_id, run.test_case_job_id),
          UpdateExpression: 'SET #status = :status, result_explanation = :explanation, transcript_snapshot = :transcript, user_modified_timestamp = :now REMOVE claim',
          ConditionExpression: '#status = :in_progress AND claim = :claim',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':status': verdict.status, ':explanation': verdict.explanation, ':transcript': verdict.transcript, ':now': nowMs, ':in_progress': 'in_progress', ':claim': claim },
        },
      },
      {
        Update: {
          Key: keys.batchTest(run.workspace_id, run.test_case_batch_job_id),
          UpdateExpression: 'ADD #count :one, ended_count :one SET user_modified_timestamp = :now',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#count': COUNT_OF[verdict.status] },
          ExpressionAttributeValues: { ':one': 1, ':now': nowMs },
        },
      },
    ]);
  } catch (error) {
    // A lost race is retried by the message's redelivery; a failed condition means the run is no longer ours.
    if (error instanceof TransactionCancelled && !error.conflicted) return false;
    throw error;
  }
  await batchTests.update([run.workspace_id, run.test_case_batch_job_id], {
    UpdateExpression: 'SET #status = :complete',
    ConditionExpression: '#status = :in_progress AND ended_count >= total_count',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':complete': 'complete', ':in_progress': 'in_progress' },
  });
  return true;
}

/**
 * Takes one of the workspace's test-run slots for `leaseMs` (longer than a run may hold
 * it), or undefined when all `cap` are held: a semaphore item like the outbound test slots'.
 */
export async function takeTestRunSlot(workspaceId: string, cap: number, leaseMs: number): Promise<OutboundSlot | undefined> {
  try {
    return await acquireOutboundSlot(workspaceId, {
      cap,
      semaphore: { key: keys.testRunSlots(workspaceId), leaseMs, refused: () => allSlotsHeld },
    });
  } catch (error) {
    if (error === allSlotsHeld) return undefined;
    throw error;
  }
}

const allSlotsHeld = tooManyRequests('Every test-run slot of the workspace is held', 1);

/** The workspace's testing settings (the publish gate). */
export interface TestingSettings {
  require_passing_batch_test_to_publish: boolean;
}

export const readTestingSettings = (workspaceId: string) => table.get<Partial<TestingSettings>>(keys.testingSettings(workspaceId));

export const writeTestingSettings = (workspaceId: string, settings: TestingSettings) => table.put({ Item: { ...keys.testingSettings(workspaceId), ...settings } });
