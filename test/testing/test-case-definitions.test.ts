import type Retell from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newFlow, newLlm } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

const app = await startTestApp();
const retell = retellClient(app.url, app.workspace.api_key);

const definitionBody = (llmId: string, overrides: Record<string, unknown> = {}) =>
  ({
    name: 'Books a table',
    user_prompt: 'You are Sam. You want a table for two at 7pm tonight. You are polite and brief.',
    metrics: ['The agent says "booked"'],
    response_engine: { type: 'retell-llm', llm_id: llmId },
    ...overrides,
  }) as Retell.Tests.TestCreateTestCaseDefinitionParams;

describe('test case definitions', () => {
  it('creates, reads, lists, updates and deletes through retell-sdk, with the spec\'s prefix and defaults', async () => {
    const llm = await newLlm(app.api);
    const created = await retell.tests.createTestCaseDefinition(
      definitionBody(llm.llm_id, {
        dynamic_variables: { party_size: '2' },
        tool_mocks: [{ tool_name: 'book_table', input_match_rule: { type: 'partial_match', args: { party_size: 2 } }, output: '{"booked":true}' }],
      }),
    );
    expect(created).toMatchObject({
      type: 'simulation',
      name: 'Books a table',
      metrics: ['The agent says "booked"'],
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id },
      dynamic_variables: { party_size: '2' },
      llm_model: 'gpt-4.1',
      tool_mocks: [{ tool_name: 'book_table', input_match_rule: { type: 'partial_match', args: { party_size: 2 } }, output: '{"booked":true}' }],
    });
    expect(created.test_case_definition_id).toMatch(/^test_case_[0-9a-f]{24}$/);
    expect(created.creation_timestamp).toBe(created.user_modified_timestamp);
    expect(await retell.tests.getTestCaseDefinition(created.test_case_definition_id)).toEqual(created);

    const second = await retell.tests.createTestCaseDefinition(definitionBody(llm.llm_id, { name: 'Asks the hours', llm_model: 'gpt-5-mini' }));
    expect(second).toMatchObject({ llm_model: 'gpt-5-mini', dynamic_variables: {}, tool_mocks: [] });
    const page = await retell.tests.listTestCaseDefinitions({ type: 'retell-llm', llm_id: llm.llm_id });
    expect(page.items.map((item) => item.test_case_definition_id)).toEqual([second.test_case_definition_id, created.test_case_definition_id]);
    expect(page.has_more).toBe(false);

    const first = await retell.tests.listTestCaseDefinitions({ type: 'retell-llm', llm_id: llm.llm_id, limit: 1 });
    expect(first).toMatchObject({ has_more: true, pagination_key: second.test_case_definition_id });
    const rest = await retell.tests.listTestCaseDefinitions({ type: 'retell-llm', llm_id: llm.llm_id, limit: 1, pagination_key: first.pagination_key! });
    expect(rest.items.map((item) => item.test_case_definition_id)).toEqual([created.test_case_definition_id]);
    expect(rest.has_more).toBe(false);
    // The spec's spelling answers the same page.
    const spec = await app.api.get(`/list-test-case-definitions?type=retell-llm&llm_id=${llm.llm_id}`);
    expect(spec.status).toBe(200);
    expect(spec.body).toEqual(page);

    const updated = await retell.tests.updateTestCaseDefinition(created.test_case_definition_id, { metrics: ['The agent says "booked"', 'The agent ends the call'] });
    expect(updated).toMatchObject({ name: 'Books a table', metrics: ['The agent says "booked"', 'The agent ends the call'], dynamic_variables: { party_size: '2' } });
    expect(updated.user_modified_timestamp).toBeGreaterThanOrEqual(created.user_modified_timestamp);
    const patched = await app.api.patch(`/update-test-case-definition/${created.test_case_definition_id}`, { body: { name: 'Books a table for two' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Books a table for two', metrics: updated.metrics });

    await retell.tests.deleteTestCaseDefinition(created.test_case_definition_id);
    expect((await sdkFailure(retell.tests.getTestCaseDefinition(created.test_case_definition_id))).status).toBe(404);
    expect((await sdkFailure(retell.tests.deleteTestCaseDefinition(created.test_case_definition_id))).status).toBe(404);
    expect((await retell.tests.listTestCaseDefinitions({ type: 'retell-llm', llm_id: llm.llm_id })).items.map((item) => item.test_case_definition_id)).toEqual([
      second.test_case_definition_id,
    ]);
  });

  it('lists only the engine asked for, a conversation flow\'s included', async () => {
    const llm = await newLlm(app.api);
    const flow = await newFlow(app.api);
    const onLlm = await retell.tests.createTestCaseDefinition(definitionBody(llm.llm_id));
    const onFlow = await retell.tests.createTestCaseDefinition(
      definitionBody(llm.llm_id, { response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id, version: 0 } }),
    );
    expect(onFlow.response_engine).toEqual({ type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id, version: 0 });
    expect((await retell.tests.listTestCaseDefinitions({ type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id })).items.map((item) => item.test_case_definition_id)).toEqual([onFlow.test_case_definition_id]);
    expect((await retell.tests.listTestCaseDefinitions({ type: 'retell-llm', llm_id: llm.llm_id })).items.map((item) => item.test_case_definition_id)).toEqual([onLlm.test_case_definition_id]);
    const unnamed = await app.api.get('/v2/list-test-case-definitions?type=retell-llm');
    expect(unnamed.status).toBe(400);
    expect(unnamed.body.message).toContain('llm_id');
  });

  it('answers 400 naming the field for bad input', async () => {
    const llm = await newLlm(app.api);
    const other = await app.newWorkspace();
    const foreignLlm = await newLlm(other.api);
    const cases: [Record<string, unknown>, string][] = [
      [{ user_prompt: undefined }, 'user_prompt'],
      [{ metrics: 'be nice' }, 'metrics'],
      [{ metrics: [1, 2] }, 'metrics'],
      [{ llm_model: 'gpt-2' }, 'llm_model'],
      [{ tool_mocks: [{ tool_name: 'book_table', input_match_rule: { type: 'any' } }] }, 'tool_mocks'],
      [{ tool_mocks: [{ tool_name: 'book_table', input_match_rule: { type: 'sometimes' }, output: '{}' }] }, 'input_match_rule'],
      [{ response_engine: { type: 'custom-llm', llm_websocket_url: 'wss://example.com' } }, 'response_engine'],
      [{ response_engine: { type: 'retell-llm', llm_id: foreignLlm.llm_id } }, 'response_engine.llm_id'],
      [{ response_engine: { type: 'retell-llm', llm_id: llm.llm_id, version: 7 } }, 'response_engine.version'],
      [{ dynamic_variables: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`v${i}`, 'x'])) }, 'dynamic_variables'],
      // Every run stores its definition again, beside its transcript, in one item.
      [{ tool_mocks: Array.from({ length: 6 }, () => ({ tool_name: 'book_table', input_match_rule: { type: 'any' }, output: 'x'.repeat(19_000) })) }, 'at most 100 KB'],
    ];
    for (const [overrides, field] of cases) {
      const response = await app.api.post('/create-test-case-definition', { body: definitionBody(llm.llm_id, overrides) });
      expect(response.status, JSON.stringify(overrides)).toBe(400);
      expect(response.body.message, JSON.stringify(overrides)).toContain(field);
    }
    const created = await retell.tests.createTestCaseDefinition(definitionBody(llm.llm_id));
    const update = await app.api.put(`/update-test-case-definition/${created.test_case_definition_id}`, { body: { response_engine: { type: 'retell-llm', llm_id: foreignLlm.llm_id } } });
    expect(update.status).toBe(400);
    expect(update.body.message).toContain('response_engine.llm_id');
  });

  it('keeps workspaces apart and needs the agents scope', async () => {
    const llm = await newLlm(app.api);
    const created = await retell.tests.createTestCaseDefinition(definitionBody(llm.llm_id));
    const other = await app.newWorkspace();
    const otherClient = retellClient(app.url, other.api_key);
    const id = created.test_case_definition_id;
    expect((await sdkFailure(otherClient.tests.getTestCaseDefinition(id))).status).toBe(404);
    expect((await sdkFailure(otherClient.tests.updateTestCaseDefinition(id, { name: 'Mine now' }))).status).toBe(404);
    expect((await sdkFailure(otherClient.tests.deleteTestCaseDefinition(id))).status).toBe(404);
    expect((await otherClient.tests.listTestCaseDefinitions({ type: 'retell-llm', llm_id: llm.llm_id })).items).toEqual([]);
    expect((await retell.tests.getTestCaseDefinition(id)).name).toBe('Books a table');

    const key = await app.api.post('/api-keys', { body: { name: 'Calls only', scopes: ['calls'] } });
    expect(key.status).toBe(201);
    const callsOnly = retellClient(app.url, key.body.api_key);
    const refused = await sdkFailure(callsOnly.tests.getTestCaseDefinition(id));
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('agents');
  });
});
