import { assertCanSpend } from '../../billing/spend/index.ts';
import { badRequest } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { assertWorkspaceEngine, getTestCases, toDefinition } from '../definitions/index.ts';
import { queueTestBatch } from './message.ts';
import type { BatchTest, CreateBatchTestInput, TestRun } from './schemas.ts';
import { getBatchTest, getTestRun, pageBatchTestsByEngine, pageTestRuns, putBatchTest, type BatchTestItem, type TestRunItem } from './store.ts';

/*
 * Batch tests: every case of the batch runs against one response engine version, in the
 * background on the call-steps queue (the conversation engine's consumer: it holds the
 * runtime, the model credentials and the custom functions' signing key), a few at a time
 * (runner.ts).
 */

function toBatchTest(item: BatchTestItem): BatchTest {
  return {
    test_case_batch_job_id: item.test_case_batch_job_id,
    status: item.status,
    response_engine: item.response_engine,
    total_count: item.total_count,
    pass_count: item.pass_count,
    fail_count: item.fail_count,
    error_count: item.error_count,
    creation_timestamp: item.creation_timestamp,
    user_modified_timestamp: item.user_modified_timestamp,
  };
}

function toTestRun(item: TestRunItem): TestRun {
  return {
    test_case_job_id: item.test_case_job_id,
    test_case_batch_job_id: item.test_case_batch_job_id,
    status: item.status,
    test_case_definition_id: item.test_case_definition_id,
    test_case_definition_snapshot: item.test_case_definition_snapshot,
    result_explanation: item.result_explanation ?? null,
    transcript_snapshot: item.transcript_snapshot ?? null,
    creation_timestamp: item.creation_timestamp,
    user_modified_timestamp: item.user_modified_timestamp,
  };
}

/**
 * Creates the batch and one pending run per case (with the case as it is now), then queues
 * it. The workspace must be able to spend, the engine must be the workspace's, its version given or the latest (kept as a
 * number: the batch runs that version even if the engine changes meanwhile).
 */
export async function createBatchTest(workspaceId: string, body: CreateBatchTestInput, nowMs = Date.now()): Promise<BatchTest> {
  // Simulations are model conversations like chats: a workspace that may not chat may not run them (402).
  await assertCanSpend(workspaceId, 'chat');
  const version = await assertWorkspaceEngine(workspaceId, body.response_engine);
  const found = new Map((await getTestCases(workspaceId, body.test_case_definition_ids)).map((item) => [item.test_case_definition_id, item]));
  body.test_case_definition_ids.forEach((id, index) => {
    if (!found.has(id)) throw badRequest(`test_case_definition_ids.${index}: Test case definition ${id} not found`);
  });
  const batchId = newTimeOrderedId('batchTest', nowMs);
  const runs: TestRunItem[] = body.test_case_definition_ids.map((id, index) => ({
    workspace_id: workspaceId,
    // One millisecond apart: the runs list in the batch's order.
    test_case_job_id: newTimeOrderedId('testRun', nowMs + index),
    test_case_batch_job_id: batchId,
    status: 'pending',
    test_case_definition_id: id,
    test_case_definition_snapshot: toDefinition(found.get(id)!),
    creation_timestamp: nowMs,
    user_modified_timestamp: nowMs,
  }));
  const batch: BatchTestItem = {
    workspace_id: workspaceId,
    test_case_batch_job_id: batchId,
    status: 'in_progress',
    response_engine: { ...body.response_engine, version },
    total_count: runs.length,
    pass_count: 0,
    fail_count: 0,
    error_count: 0,
    ended_count: 0,
    creation_timestamp: nowMs,
    user_modified_timestamp: nowMs,
  };
  await putBatchTest(batch, runs);
  await queueTestBatch(workspaceId, batchId);
  return toBatchTest(batch);
}

export async function getBatchTestView(workspaceId: string, batchTestId: string): Promise<BatchTest> {
  return toBatchTest(await getBatchTest(workspaceId, batchTestId));
}

export async function listBatchTests(
  workspaceId: string,
  query: { type: 'retell-llm' | 'conversation-flow'; llm_id?: string; conversation_flow_id?: string; version?: number; limit: number; pagination_key?: string },
): Promise<{ has_more: boolean; items: BatchTest[]; pagination_key?: string }> {
  const id = (query.type === 'retell-llm' ? query.llm_id : query.conversation_flow_id)!;
  const page = await pageBatchTestsByEngine(workspaceId, { type: query.type, id, version: query.version }, { limit: query.limit, after: query.pagination_key });
  const last = page.items.at(-1);
  return { has_more: page.hasMore, items: page.items.map(toBatchTest), ...(page.hasMore && last ? { pagination_key: last.test_case_batch_job_id } : {}) };
}

/** A batch's runs, in the batch's order; another workspace's batch is 404. */
export async function listTestRuns(workspaceId: string, batchTestId: string, query: { limit: number; pagination_key?: string }) {
  await getBatchTest(workspaceId, batchTestId);
  const page = await pageTestRuns(workspaceId, batchTestId, { limit: query.limit, after: query.pagination_key });
  const last = page.items.at(-1);
  return { has_more: page.hasMore, items: page.items.map(toTestRun), ...(page.hasMore && last ? { pagination_key: last.test_case_job_id } : {}) };
}

export async function getTestRunView(workspaceId: string, testRunId: string): Promise<TestRun> {
  return toTestRun(await getTestRun(workspaceId, testRunId));
}
