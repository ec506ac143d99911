import { keys } from '../../platform/store/keys.ts';
import { notFound } from '../../platform/errors.ts';
import { defineEntity, table } from '../../platform/store/table.ts';
import type { TestCaseDefinition, TestResponseEngine } from './schemas.ts';

/*
 * Test case definitions (docs/data-model.md), in the workspace's test cases partition
 * `WS#<ws>#TESTCASE`, `CASE#<id>` (time-ordered IDs: newest first). Each item is the
 * definition as the API answers it, plus its workspace.
 */

export type TestCaseItem = TestCaseDefinition & { workspace_id: string };

const testCases = defineEntity<TestCaseItem & { pk: string; sk: string }, [workspaceId: string, testCaseId: string]>({
  key: keys.testCase,
  notFound: (_workspaceId, testCaseId) => notFound(`Test case definition ${testCaseId} not found`),
});

export const putTestCase = (item: TestCaseItem): Promise<unknown> => testCases.create(item, item.workspace_id, item.test_case_definition_id);

export const getTestCase = (workspaceId: string, testCaseId: string): Promise<TestCaseItem> => testCases.mustGet(workspaceId, testCaseId);

/** The workspace's definitions of `ids` that exist (a missing one is simply absent). */
export const getTestCases = (workspaceId: string, ids: readonly string[]): Promise<TestCaseItem[]> =>
  table.batchGet<TestCaseItem>(ids.map((id) => keys.testCase(workspaceId, id)));

/** A page of the workspace's definitions on `engine`, newest first. */
export const pageTestCasesByEngine = (workspaceId: string, engine: EngineQuery, options: { limit: number; after?: string }) =>
  pageByEngine<TestCaseItem>(keys.testCases(workspaceId), (id) => keys.testCase(workspaceId, id).sk, engine, options);

/** Replaces a definition that still exists (an edit racing a delete answers 404). */
export async function replaceTestCase(item: TestCaseItem): Promise<void> {
  const written = await testCases.putIf(item, [item.workspace_id, item.test_case_definition_id], { expression: 'attribute_exists(pk)' });
  if (!written) throw notFound(`Test case definition ${item.test_case_definition_id} not found`);
}

export const deleteTestCase = (workspaceId: string, testCaseId: string): Promise<void> => testCases.remove(workspaceId, testCaseId);

/** An engine a list filters on: its type and ID, and a version or any. */
export type EngineQuery = Pick<TestResponseEngine, 'type'> & { id: string; version?: number };

/** The filter on one response engine. */
function engineFilter({ type, id, version }: EngineQuery) {
  const idField = type === 'retell-llm' ? 'llm_id' : 'conversation_flow_id';
  return {
    FilterExpression: `response_engine.#type = :type AND response_engine.#id = :id${version === undefined ? '' : ' AND response_engine.#version = :version'}`,
    ExpressionAttributeNames: { '#type': 'type', '#id': idField, ...(version === undefined ? {} : { '#version': 'version' }) },
    values: { ':type': type, ':id': id, ...(version === undefined ? {} : { ':version': version }) },
  };
}

/**
 * Up to `limit` items of a workspace partition whose response engine is `engine`, newest
 * first, from `after` (the last ID of the previous page), and whether more follow. The
 * filter runs on DynamoDB's side: a page reads the workspace's items of other engines too,
 * which stay few (a workspace's test cases and batch tests, not its calls).
 */
export async function pageByEngine<T>(
  partition: { pk: string; skPrefix?: string },
  skOf: (id: string) => string,
  engine: EngineQuery,
  options: { limit: number; after?: string },
): Promise<{ items: T[]; hasMore: boolean }> {
  const filter = engineFilter(engine);
  const items: T[] = [];
  let startKey: Record<string, unknown> | undefined = options.after ? { pk: partition.pk, sk: skOf(options.after) } : undefined;
  do {
    const page = await table.queryPage<T>({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      FilterExpression: filter.FilterExpression,
      ExpressionAttributeNames: filter.ExpressionAttributeNames,
      ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix ?? '', ...filter.values },
      ScanIndexForward: false,
      ExclusiveStartKey: startKey,
      Limit: options.limit + 1 - items.length,
    });
    items.push(...page.items);
    startKey = page.lastKey;
  } while (startKey && items.length <= options.limit);
  return { items: items.slice(0, options.limit), hasMore: items.length > options.limit };
}
