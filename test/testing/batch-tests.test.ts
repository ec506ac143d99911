import type Retell from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { recordSmsCharge } from '../../shared/billing/index.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { newFlow, newLlm } from '../support/factories.ts';
import { startFunctionReceiver } from '../support/function-receiver.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Batch tests on the offline model (no LLM_BASE_URL): the runs go through the call-steps
 * queue's consumer, the conversation runtime and the offline caller and judge rules
 * (docs/testing.md), so every verdict here is deterministic.
 */

const app = await startTestApp();
const background = startBackgroundWork([jobNamed('call-steps')]);
afterAll(() => background.stop());
const receiver = await startFunctionReceiver();
const retell = retellClient(app.url, app.workspace.api_key);

const bookTable = () => ({
  type: 'custom',
  name: 'book_table',
  description: 'Books a table',
  url: `${receiver.url}/book`,
  parameters: { type: 'object', properties: { party_size: { type: 'integer' } }, required: ['party_size'] },
});

async function restaurantLlm(api = app.api) {
  return newLlm(api, {
    general_prompt: 'You take bookings for Luigi\'s.',
    begin_message: 'Welcome to Luigi\'s, how can I help?',
    general_tools: [bookTable(), { type: 'end_call', name: 'end_call' }],
  });
}

const definition = (llmId: string, fields: Partial<Retell.Tests.TestCreateTestCaseDefinitionParams>) =>
  retell.tests.createTestCaseDefinition({
    name: 'A case',
    user_prompt: 'You are Sam.',
    metrics: [],
    response_engine: { type: 'retell-llm', llm_id: llmId },
    ...fields,
  });

const finished = (batchId: string, client = retell) =>
  eventually(() => client.tests.getBatchTest(batchId), (batch) => batch.status === 'complete', 60_000);

describe('batch tests', () => {
  it('runs three cases in the background: one passes, one fails naming its criterion, one answers from a tool mock without calling the tool', async () => {
    const llm = await restaurantLlm();
    const passing = await definition(llm.llm_id, {
      name: 'Asks the hours',
      user_prompt: 'You are Sam. Ask "What are your opening hours?" and then say goodbye.',
      metrics: ['The agent says "opening hours"', 'The agent ends the call', 'The agent never calls `book_table`'],
    });
    const failing = await definition(llm.llm_id, {
      name: 'Asks for vegan food',
      user_prompt: 'You are Kim. Ask "Do you have vegan dishes?"',
      metrics: ['The agent says "Luigi"', 'The agent says "we have a vegan lasagne"'],
    });
    const mocked = await definition(llm.llm_id, {
      name: 'Books a table',
      user_prompt: 'You are Ada. Say "I want to book a table for two".',
      metrics: ['The agent calls `book_table`', 'The agent says "confirmed"'],
      tool_mocks: [{ tool_name: 'book_table', input_match_rule: { type: 'any' }, output: '{"confirmed":true,"table":7}' }],
    });
    receiver.requests.length = 0;

    const created = await retell.tests.createBatchTest({
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id },
      test_case_definition_ids: [passing.test_case_definition_id, failing.test_case_definition_id, mocked.test_case_definition_id],
    });
    expect(created).toMatchObject({
      status: 'in_progress',
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id, version: 0 },
      total_count: 3,
      pass_count: 0,
      fail_count: 0,
      error_count: 0,
    });
    expect(created.test_case_batch_job_id).toMatch(/^batch_test_[0-9a-f]{24}$/);

    const batch = await finished(created.test_case_batch_job_id);
    expect(batch).toMatchObject({ status: 'complete', total_count: 3, pass_count: 2, fail_count: 1, error_count: 0 });

    const runs = await retell.tests.listTestRuns(created.test_case_batch_job_id);
    expect(runs.has_more).toBe(false);
    expect(runs.items.map((run) => [run.test_case_definition_id, run.status])).toEqual([
      [passing.test_case_definition_id, 'pass'],
      [failing.test_case_definition_id, 'fail'],
      [mocked.test_case_definition_id, 'pass'],
    ]);
    for (const run of runs.items) expect(run.test_case_job_id).toMatch(/^test_run_[0-9a-f]{24}$/);
    const [pass, fail, mock] = runs.items as [Retell.Tests.TestCaseJobResponse, Retell.Tests.TestCaseJobResponse, Retell.Tests.TestCaseJobResponse];

    expect(pass.result_explanation).toContain('Criterion 2 met: "The agent ends the call": The agent ended the call');
    expect(pass.transcript_snapshot).toMatchObject({ ended_by: 'agent' });
    const passLines = (pass.transcript_snapshot as { messages: { role: string; content?: string; name?: string }[] }).messages;
    expect(passLines[0]).toMatchObject({ role: 'agent', content: 'Welcome to Luigi\'s, how can I help?' });
    expect(passLines[1]).toMatchObject({ role: 'user', content: 'What are your opening hours?' });
    expect(passLines.some((line) => line.role === 'tool_call_invocation' && line.name === 'end_call')).toBe(true);

    expect(fail.result_explanation).toBe('Criterion 2 not met: "The agent says "we have a vegan lasagne"": The agent never said "we have a vegan lasagne"');

    const mockLines = (mock.transcript_snapshot as { messages: { role: string; content?: string; name?: string }[] }).messages;
    expect(mockLines.filter((line) => line.role === 'tool_call_invocation').map((line) => line.name)).toContain('book_table');
    expect(mockLines.find((line) => line.role === 'tool_call_result')).toMatchObject({ content: '{"confirmed":true,"table":7}' });
    // The mocked tool's real endpoint was never called.
    expect(receiver.requests).toHaveLength(0);

    // The spec's spellings answer the same.
    const byQuery = await app.api.get(`/list-test-runs?test_case_batch_job_id=${created.test_case_batch_job_id}`);
    expect(byQuery.body).toEqual(runs);
    expect(await retell.tests.getTestRun(mock.test_case_job_id)).toEqual(mock);
    const listed = await retell.tests.listBatchTests({ type: 'retell-llm', llm_id: llm.llm_id });
    expect(listed.items).toEqual([batch]);
    expect((await app.api.get(`/list-batch-tests?type=retell-llm&llm_id=${llm.llm_id}&version=0`)).body).toEqual(listed);
    expect((await app.api.get(`/list-batch-tests?type=retell-llm&llm_id=${llm.llm_id}&version=3`)).body.items).toEqual([]);

    // A run stays readable, with the definition as it ran, after the definition changes or goes.
    await retell.tests.updateTestCaseDefinition(passing.test_case_definition_id, { name: 'Renamed' });
    await retell.tests.deleteTestCaseDefinition(failing.test_case_definition_id);
    expect((await retell.tests.getTestRun(pass.test_case_job_id)).test_case_definition_snapshot).toEqual(passing);
    expect((await retell.tests.getTestRun(fail.test_case_job_id)).test_case_definition_snapshot).toEqual(failing);
  });

  it('falls through to the real tool when no mock matches its arguments', async () => {
    const llm = await restaurantLlm();
    const unmatched = await definition(llm.llm_id, {
      user_prompt: 'Say "Book me a table"',
      metrics: ['The agent calls `book_table`'],
      tool_mocks: [{ tool_name: 'book_table', input_match_rule: { type: 'partial_match', args: { party_size: 99 } }, output: '{"confirmed":false}' }],
    });
    receiver.requests.length = 0;
    receiver.answer = () => ({ body: '{"booked":"for real"}' });
    const created = await retell.tests.createBatchTest({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [unmatched.test_case_definition_id] });
    expect(await finished(created.test_case_batch_job_id)).toMatchObject({ pass_count: 1 });
    expect(receiver.requests.map((request) => request.path)).toEqual(['/book']);
    const [run] = (await retell.tests.listTestRuns(created.test_case_batch_job_id)).items;
    const lines = (run!.transcript_snapshot as { messages: { role: string; content?: string }[] }).messages;
    expect(lines.find((line) => line.role === 'tool_call_result')?.content).toContain('for real');
  });

  it('runs a conversation flow', async () => {
    const flow = await newFlow(app.api, { nodes: [{ id: 'start', type: 'conversation', instruction: { type: 'static_text', text: 'Hello from the flow.' } }] });
    const onFlow = await retell.tests.createTestCaseDefinition({
      name: 'Greets',
      user_prompt: 'Say "Hi there"',
      metrics: ['The agent says "Hello from the flow"'],
      response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id },
    });
    const created = await retell.tests.createBatchTest({
      response_engine: { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id, version: 0 },
      test_case_definition_ids: [onFlow.test_case_definition_id],
    });
    expect(created.response_engine).toEqual({ type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id, version: 0 });
    expect(await finished(created.test_case_batch_job_id)).toMatchObject({ pass_count: 1, fail_count: 0, error_count: 0 });
    expect((await retell.tests.listBatchTests({ type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id })).items).toHaveLength(1);
  });

  it('refuses bad batches with 400 naming the field, keeps workspaces apart and needs the agents scope', async () => {
    const llm = await restaurantLlm();
    const mine = await definition(llm.llm_id, { user_prompt: 'Say "Hello"' });
    const other = await app.newWorkspace();
    const otherClient = retellClient(app.url, other.api_key);
    const otherLlm = await restaurantLlm(other.api);
    const theirs = await otherClient.tests.createTestCaseDefinition({ name: 'Theirs', user_prompt: 'Hi', metrics: [], response_engine: { type: 'retell-llm', llm_id: otherLlm.llm_id } });

    const refusals: [Record<string, unknown>, string][] = [
      [{ test_case_definition_ids: [] }, 'test_case_definition_ids'],
      [{ test_case_definition_ids: [theirs.test_case_definition_id] }, 'test_case_definition_ids.0'],
      [{ test_case_definition_ids: [mine.test_case_definition_id, mine.test_case_definition_id] }, 'test_case_definition_ids'],
      [{ test_case_definition_ids: Array.from({ length: 51 }, () => mine.test_case_definition_id) }, 'test_case_definition_ids'],
      [{ response_engine: { type: 'retell-llm', llm_id: otherLlm.llm_id } }, 'response_engine.llm_id'],
      [{ response_engine: { type: 'retell-llm', llm_id: llm.llm_id, version: 4 } }, 'response_engine.version'],
      [{ response_engine: { type: 'custom-llm', llm_websocket_url: 'wss://example.com' } }, 'response_engine'],
    ];
    for (const [overrides, field] of refusals) {
      const response = await app.api.post('/create-batch-test', {
        body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [mine.test_case_definition_id], ...overrides },
      });
      expect(response.status, JSON.stringify(overrides).slice(0, 120)).toBe(400);
      expect(response.body.message, JSON.stringify(overrides).slice(0, 120)).toContain(field);
    }

    const created = await retell.tests.createBatchTest({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [mine.test_case_definition_id] });
    await finished(created.test_case_batch_job_id);
    const [run] = (await retell.tests.listTestRuns(created.test_case_batch_job_id)).items;
    expect((await sdkFailure(otherClient.tests.getBatchTest(created.test_case_batch_job_id))).status).toBe(404);
    expect((await sdkFailure(otherClient.tests.listTestRuns(created.test_case_batch_job_id))).status).toBe(404);
    expect((await sdkFailure(otherClient.tests.getTestRun(run!.test_case_job_id))).status).toBe(404);
    expect((await otherClient.tests.listBatchTests({ type: 'retell-llm', llm_id: llm.llm_id })).items).toEqual([]);

    const key = await app.api.post('/api-keys', { body: { name: 'Calls only', scopes: ['calls'] } });
    const callsOnly = retellClient(app.url, key.body.api_key);
    for (const request of [
      () => callsOnly.tests.getBatchTest(created.test_case_batch_job_id),
      () => callsOnly.tests.getTestRun(run!.test_case_job_id),
      () => callsOnly.tests.createBatchTest({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [mine.test_case_definition_id] }),
    ]) {
      expect((await sdkFailure(request())).status).toBe(403);
    }
  });

  it('refuses a batch with 402 when the workspace may not spend, writing nothing', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const llm = await restaurantLlm(ws.api);
    const testCase = await client.tests.createTestCaseDefinition({ name: 'Hi', user_prompt: 'Say "Hi"', metrics: [], response_engine: { type: 'retell-llm', llm_id: llm.llm_id } });
    expect((await ws.api.patch('/billing/settings', { body: { monthly_budget_usd: 0.01 } })).status).toBe(200);
    for (const n of [0, 1]) await recordSmsCharge({ workspaceId: ws.workspace_id, messageId: `message_budget_spender_00000${n}` });
    const refused = await ws.api.post('/create-batch-test', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [testCase.test_case_definition_id] } });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ error_code: 'budget_reached' });
    expect((await client.tests.listBatchTests({ type: 'retell-llm', llm_id: llm.llm_id })).items).toEqual([]);
  });

  it('charges each run like a chat of the same length, on a line of its own, once', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const llm = await restaurantLlm(ws.api);
    const testCase = await client.tests.createTestCaseDefinition({ name: 'Hi', user_prompt: 'Say "Hi"', metrics: [], response_engine: { type: 'retell-llm', llm_id: llm.llm_id } });
    const created = await client.tests.createBatchTest({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [testCase.test_case_definition_id] });
    await finished(created.test_case_batch_job_id, client);
    const [run] = (await client.tests.listTestRuns(created.test_case_batch_job_id)).items;
    // The opening, "Hi", the agent's answer, "Goodbye." (then the agent ends the call): 4 messages × $0.002.
    const billing = (await ws.api.get('/billing?limit=100')).body;
    expect(billing.entries.filter((entry: { kind: string }) => entry.kind === 'simulation_charge')).toEqual([
      expect.objectContaining({ amount_usd: -0.008, lines: { simulation: 0.008 }, reference: run!.test_case_job_id, description: `Test run ${run!.test_case_job_id} (4 messages)` }),
    ]);
    expect((await ws.api.get('/billing/usage')).body.totals).toEqual({ simulation: 0.008 });
  });
});

describe('the publish gate', () => {
  it('when on, publishing needs the newest complete batch test on the version\'s engine version to have passed, else 409 naming the runs', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const llm = await restaurantLlm(ws.api);
    const agent = await client.agent.create({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, voice_id: '11labs-Adrian' });
    const engine = { type: 'retell-llm' as const, llm_id: llm.llm_id, version: (agent.response_engine as { version: number }).version };
    expect((await ws.api.get('/testing/settings')).body).toEqual({ require_passing_batch_test_to_publish: false });
    expect((await ws.api.patch('/testing/settings', { body: { require_passing_batch_test_to_publish: true } })).body).toEqual({ require_passing_batch_test_to_publish: true });

    const untested = await ws.api.post(`/publish-agent-version/${agent.agent_id}`, { body: {} });
    expect(untested.status).toBe(409);
    expect(untested.body.message).toBe(`Publishing requires a passing batch test on Retell LLM ${llm.llm_id} version ${engine.version}; none has completed`);

    const greets = await client.tests.createTestCaseDefinition({ name: 'Greets', user_prompt: 'Say "Hi"', metrics: ['The agent says "Luigi"'], response_engine: engine });
    const cake = await client.tests.createTestCaseDefinition({ name: 'Cake', user_prompt: 'Say "Hi"', metrics: ['The agent says "free cake"'], response_engine: engine });
    const failed = await client.tests.createBatchTest({ response_engine: engine, test_case_definition_ids: [greets.test_case_definition_id, cake.test_case_definition_id] });
    await finished(failed.test_case_batch_job_id, client);
    const cakeRun = (await client.tests.listTestRuns(failed.test_case_batch_job_id)).items.find((run) => run.test_case_definition_id === cake.test_case_definition_id)!;
    const refused = await ws.api.post(`/publish-agent-version/${agent.agent_id}`, { body: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toBe(
      `Publishing requires a passing batch test on Retell LLM ${llm.llm_id} version ${engine.version}; batch test ${failed.test_case_batch_job_id} has runs that did not pass: ${cakeRun.test_case_job_id} (fail: Cake)`,
    );
    expect((await client.agent.retrieve(agent.agent_id)).is_published).toBe(false);

    const passed = await client.tests.createBatchTest({ response_engine: engine, test_case_definition_ids: [greets.test_case_definition_id] });
    await finished(passed.test_case_batch_job_id, client);
    const published = await ws.api.post(`/publish-agent-version/${agent.agent_id}`, { body: {} });
    expect(published.status).toBe(200);
    expect(published.body).toMatchObject({ agent_id: agent.agent_id, is_published: true });
  });
});
