import { newTimeOrderedId } from '../../platform/ids.ts';
import { DEFAULT_LLM_MODEL } from '../../agents/llms/index.ts';
import { badRequest } from '../../platform/errors.ts';
import { assertWorkspaceEngine } from './engine.ts';
import { deleteTestCase, getTestCase, pageTestCasesByEngine, putTestCase, replaceTestCase, type TestCaseItem } from './store.ts';
import { MAX_DEFINITION_BYTES, type CreateTestCaseInput, type TestCaseDefinition, type UpdateTestCaseInput } from './schemas.ts';

/** A definition as the API answers it (the item without its workspace and keys). */
export function toDefinition(item: TestCaseItem): TestCaseDefinition {
  return {
    test_case_definition_id: item.test_case_definition_id,
    type: 'simulation',
    name: item.name,
    user_prompt: item.user_prompt,
    metrics: item.metrics,
    response_engine: item.response_engine,
    dynamic_variables: item.dynamic_variables,
    llm_model: item.llm_model,
    tool_mocks: item.tool_mocks,
    ...(item.imported_from != null ? { imported_from: item.imported_from } : {}),
    creation_timestamp: item.creation_timestamp,
    user_modified_timestamp: item.user_modified_timestamp,
  };
}

/** A definition too large to store with every run of it is refused, naming its size. */
function assertStorable(definition: TestCaseDefinition): void {
  const bytes = Buffer.byteLength(JSON.stringify(definition));
  if (bytes > MAX_DEFINITION_BYTES) {
    throw badRequest(`The test case definition is ${Math.ceil(bytes / 1000)} KB as JSON; at most ${MAX_DEFINITION_BYTES / 1000} KB (user_prompt, metrics, dynamic_variables and tool_mocks together)`);
  }
}

export async function createTestCaseDefinition(workspaceId: string, body: CreateTestCaseInput, nowMs = Date.now()): Promise<TestCaseDefinition> {
  await assertWorkspaceEngine(workspaceId, body.response_engine);
  const item: TestCaseItem = {
    workspace_id: workspaceId,
    test_case_definition_id: newTimeOrderedId('testCase', nowMs),
    type: 'simulation',
    name: body.name,
    user_prompt: body.user_prompt,
    metrics: body.metrics,
    response_engine: body.response_engine,
    dynamic_variables: body.dynamic_variables ?? {},
    llm_model: body.llm_model ?? DEFAULT_LLM_MODEL,
    tool_mocks: body.tool_mocks ?? [],
    ...(body.imported_from != null ? { imported_from: body.imported_from } : {}),
    creation_timestamp: nowMs,
    user_modified_timestamp: nowMs,
  };
  assertStorable(toDefinition(item));
  await putTestCase(item);
  return toDefinition(item);
}

export async function getTestCaseDefinition(workspaceId: string, testCaseId: string): Promise<TestCaseDefinition> {
  return toDefinition(await getTestCase(workspaceId, testCaseId));
}

export async function listTestCaseDefinitions(
  workspaceId: string,
  query: { type: 'retell-llm' | 'conversation-flow'; llm_id?: string; conversation_flow_id?: string; limit: number; pagination_key?: string },
): Promise<{ has_more: boolean; items: TestCaseDefinition[]; pagination_key?: string }> {
  const id = (query.type === 'retell-llm' ? query.llm_id : query.conversation_flow_id)!;
  const page = await pageTestCasesByEngine(workspaceId, { type: query.type, id }, { limit: query.limit, after: query.pagination_key });
  const last = page.items.at(-1);
  return { has_more: page.hasMore, items: page.items.map(toDefinition), ...(page.hasMore && last ? { pagination_key: last.test_case_definition_id } : {}) };
}

/** Changes the fields given; the engine, when changed, is checked as on create. */
export async function updateTestCaseDefinition(workspaceId: string, testCaseId: string, body: UpdateTestCaseInput, nowMs = Date.now()): Promise<TestCaseDefinition> {
  const current = await getTestCase(workspaceId, testCaseId);
  if (body.response_engine) await assertWorkspaceEngine(workspaceId, body.response_engine);
  const defined = Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined));
  const next: TestCaseItem = { ...current, ...defined, user_modified_timestamp: Math.max(nowMs, current.user_modified_timestamp) };
  assertStorable(toDefinition(next));
  await replaceTestCase(next);
  return toDefinition(next);
}

export const deleteTestCaseDefinition = (workspaceId: string, testCaseId: string): Promise<void> => deleteTestCase(workspaceId, testCaseId);
