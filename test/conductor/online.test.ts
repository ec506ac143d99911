import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { completion, defaultReply, startFakeOpenAi, toolCallCompletion, type RecordedRequest } from '../support/fake-openai.ts';

/*
 * The assistant with a language model (docs/assistant.md, "The model";
 * shared/conductor/model/online.ts), against the scripted OpenAI-compatible provider: the
 * model's tool calls run as the caller and their answers go back to it; a tool that asks to
 * confirm first becomes the pending action instead of running; the provider's token counts
 * are what the credits charge; the workspace's fallback model answers when the primary is
 * unavailable.
 */
const fake = await startFakeOpenAi();
const app = await startTestApp({ LLM_BASE_URL: fake.url });
const { OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');
// Short back-off so the primary's retries before the fallback take milliseconds.
useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, retryBaseMs: 5 }));
afterAll(() => useLanguageModel(undefined));
beforeEach(() => fake.reset());

const PRIMARY = 'gpt-4.1';
const FALLBACK = 'gpt-4.1-mini';
const PROMPT = 'You answer calls for a dental clinic.';

/** A completion with the given token counts. */
const withUsage = <T extends object>(body: T, prompt_tokens: number, completion_tokens: number) => ({
  ...body,
  usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens },
});

/** The last message of a recorded request (the tool's answer after a tool call). */
const lastMessage = (request: RecordedRequest) => request.body.messages.at(-1) as { role: string; content: string; tool_call_id?: string };

async function newSession(ws: Awaited<ReturnType<typeof app.newWorkspace>>) {
  const res = await ws.api.post('/conductor/sessions', { body: {} });
  expect(res.status).toBe(201);
  return res.body.session_id as string;
}

describe('the assistant with a language model', () => {
  it("runs the model's tool calls as the caller, hands their answers back, and charges the provider's token counts", async () => {
    const ws = await app.newWorkspace();
    const id = await newSession(ws);
    fake.enqueue(
      { body: withUsage(toolCallCompletion([{ id: 'call_list', name: 'list_agents', arguments: {} }]), 1200, 20) },
      { body: withUsage(toolCallCompletion([{ id: 'call_llm', name: 'create_llm', arguments: { general_prompt: PROMPT } }]), 1300, 40) },
      // The agent goes on the LLM the model was just told about.
      (request) => {
        const llmId = (JSON.parse(lastMessage(request).content) as { result: { llm_id: string } }).result.llm_id;
        return {
          body: withUsage(
            toolCallCompletion([{ id: 'call_agent', name: 'create_agent', arguments: { agent_name: 'Front Desk', response_engine: { type: 'retell-llm', llm_id: llmId } } }]),
            1400,
            60,
          ),
        };
      },
      { body: withUsage(completion('I made the agent Front Desk.'), 1500, 80) },
    );

    const turn = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'Make me a dental front desk agent' } });
    expect(turn.status).toBe(200);
    expect(turn.body.pending_action).toBeNull();
    expect(turn.body.reply).toMatchObject({ role: 'assistant', content: 'I made the agent Front Desk.', usage: { input_tokens: 5400, output_tokens: 200 } });
    const calls = turn.body.reply.tool_calls as { tool: string; status: string; http_status: number; result: any }[];
    expect(calls.map((entry) => [entry.tool, entry.status, entry.http_status])).toEqual([
      ['list_agents', 'ok', 200],
      ['create_llm', 'ok', 201],
      ['create_agent', 'ok', 201],
    ]);
    const llmId = calls[1]!.result.llm_id as string;
    const agentId = calls[2]!.result.agent_id as string;

    // What the model was asked: the primary model, the tools, the user's message, then each tool's answer.
    expect(fake.requests).toHaveLength(4);
    const first = fake.requests[0]!.body;
    expect(first.model).toBe(PRIMARY);
    expect(first.messages[0].role).toBe('system');
    expect(first.messages.at(-1)).toEqual({ role: 'user', content: 'Make me a dental front desk agent' });
    const offered = (first.tools as { function: { name: string } }[]).map((tool) => tool.function.name);
    expect(offered).toEqual(expect.arrayContaining(['list_agents', 'create_llm', 'create_agent', 'delete_agent']));
    expect(lastMessage(fake.requests[1]!)).toEqual({ role: 'tool', tool_call_id: 'call_list', content: JSON.stringify({ status: 200, result: [] }) });
    expect(lastMessage(fake.requests[3]!)).toMatchObject({ role: 'tool', tool_call_id: 'call_agent' });
    expect(JSON.parse(lastMessage(fake.requests[3]!).content)).toMatchObject({ status: 201, result: { agent_id: agentId, agent_name: 'Front Desk' } });

    // Made by the API as the caller, and marked in the audit log.
    expect((await ws.api.get(`/get-agent/${agentId}`)).body).toMatchObject({ agent_name: 'Front Desk', response_engine: { type: 'retell-llm', llm_id: llmId } });
    expect((await ws.api.get(`/get-retell-llm/${llmId}`)).body.general_prompt).toBe(PROMPT);
    const audit = ((await ws.api.get('/audit-log')).body as { action: string; tool?: string; actor: { via?: string; conductor_session_id?: string } }[]).filter(
      (entry) => entry.action === 'conductor.tool_call',
    );
    expect(audit.map((entry) => [entry.tool, entry.actor.via, entry.actor.conductor_session_id]).sort()).toEqual([
      ['create_agent', 'conductor', id],
      ['create_llm', 'conductor', id],
    ]);

    // The credits charge the provider's counts: 5,600 tokens are 6 credits.
    const credits = (await ws.api.get('/conductor/credits')).body;
    expect(credits).toMatchObject({ used_credits: 6, remaining_free_credits: credits.free_credits - 6 });
    const ledger = (await ws.api.get('/conductor/ledger')).body as any[];
    expect(ledger).toEqual([expect.objectContaining({ session_id: id, message_id: turn.body.reply.message_id, input_tokens: 5400, output_tokens: 200, credits: 6 })]);

    // The next turn gives the model the session's earlier messages.
    fake.enqueue({ body: completion('You have one agent.') });
    const next = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'How many agents do I have?' } });
    expect(next.body.reply.content).toBe('You have one agent.');
    expect(fake.requests[4]!.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'Make me a dental front desk agent' },
      { role: 'assistant', content: 'I made the agent Front Desk.' },
      { role: 'user', content: 'How many agents do I have?' },
    ]);
  });

  it('does not run a tool that asks to confirm first: it becomes the pending action, run on "yes" without the model', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api, { agent: { agent_name: 'Old Desk' } });
    const id = await newSession(ws);
    fake.enqueue({ body: toolCallCompletion([{ id: 'call_delete', name: 'delete_agent', arguments: { agent_id: agent.agent_id } }], { content: 'Deleting Old Desk.' }) });

    const proposed = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'Delete Old Desk' } });
    expect(proposed.status).toBe(200);
    const summary = `delete_agent with {"agent_id":"${agent.agent_id}"}`;
    expect(proposed.body.pending_action).toEqual({
      action_id: expect.stringMatching(/^conductor_action_[0-9a-f]{24}$/),
      summary,
      steps: [{ tool: 'delete_agent', arguments: { agent_id: agent.agent_id } }],
      created_timestamp: expect.any(Number),
    });
    expect(proposed.body.reply.content).toBe(`Deleting Old Desk.\n\nI can do this: ${summary}. Reply "yes" (or send confirm_action_id) to go ahead; anything else cancels it.`);
    expect(proposed.body.reply.tool_calls).toBeUndefined();
    expect((await ws.api.get(`/get-agent/${agent.agent_id}`)).status).toBe(200);
    expect(fake.requests).toHaveLength(1);

    const done = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'yes' } });
    expect(done.body.pending_action).toBeNull();
    expect(done.body.reply.tool_calls).toMatchObject([{ tool: 'delete_agent', status: 'ok', http_status: 204 }]);
    expect(done.body.reply.content).toBe(`Done: ${summary}.\n- delete_agent`);
    expect((await ws.api.get(`/get-agent/${agent.agent_id}`)).status).toBe(404);
    expect(fake.requests).toHaveLength(1);
  });

  it("answers with the workspace's fallback model when the primary is unavailable, for the rest of the turn; without one, fails unless a tool already ran", async () => {
    const ws = await app.newWorkspace();
    expect((await ws.api.put('/workspace/reliability', { body: { fallback_llm_model: FALLBACK } })).status).toBe(200);
    const id = await newSession(ws);
    let rounds = 0;
    fake.setDefault((request) => {
      if (request.body.model === PRIMARY) return { status: 500, body: { error: { message: 'overloaded', type: 'server_error' } } };
      rounds++;
      return rounds === 1 ? { body: toolCallCompletion([{ id: 'call_list', name: 'list_agents', arguments: {} }]) } : defaultReply(request);
    });
    const turn = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'What agents do I have?' } });
    expect(turn.status).toBe(200);
    expect(turn.body.reply).toMatchObject({ content: 'fake reply', tool_calls: [{ tool: 'list_agents', status: 'ok' }] });
    // Three attempts at the primary (the adapter's two retries), then the fallback for both rounds.
    expect(fake.requests.map((request) => request.body.model)).toEqual([PRIMARY, PRIMARY, PRIMARY, FALLBACK, FALLBACK]);

    // Without a fallback the turn fails as the provider did, and nothing is kept or charged.
    const none = await app.newWorkspace();
    const other = await newSession(none);
    fake.reset();
    fake.setDefault({ status: 500, body: { error: { message: 'overloaded', type: 'server_error' } } });
    const failed = await none.api.post(`/conductor/sessions/${other}/messages`, { body: { content: 'What agents do I have?' } });
    expect(failed.status).toBe(502);
    expect(failed.body).toEqual({ status: 502, message: 'Language model provider failed: HTTP 500 after 3 attempts' });
    expect(fake.requests.map((request) => request.body.model)).toEqual([PRIMARY, PRIMARY, PRIMARY]);
    expect((await none.api.get(`/conductor/sessions/${other}`)).body).toMatchObject({ message_count: 0, messages: [] });
    expect((await none.api.get('/conductor/credits')).body.used_credits).toBe(0);

    // Failing after a tool made a change, the turn ends there and is kept: the change, its audit entry, the tokens so far.
    fake.reset();
    fake.enqueue({ body: withUsage(toolCallCompletion([{ id: 'call_llm', name: 'create_llm', arguments: { general_prompt: PROMPT } }]), 1500, 600) });
    fake.setDefault({ status: 500, body: { error: { message: 'overloaded', type: 'server_error' } } });
    const cut = await none.api.post(`/conductor/sessions/${other}/messages`, { body: { content: 'Make an LLM for a dental clinic' } });
    expect(cut.status).toBe(200);
    expect(cut.body.reply).toMatchObject({
      content: 'I stopped here: the language model did not answer (Language model provider failed: HTTP 500 after 3 attempts). The tool calls above were made; tell me how to go on.',
      tool_calls: [{ tool: 'create_llm', status: 'ok', http_status: 201 }],
      usage: { input_tokens: 1500, output_tokens: 600 },
    });
    const llmId = cut.body.reply.tool_calls[0].result.llm_id as string;
    expect((await none.api.get(`/get-retell-llm/${llmId}`)).body.general_prompt).toBe(PROMPT);
    const audit = ((await none.api.get('/audit-log')).body as { action: string; tool?: string; target: unknown }[]).filter((entry) => entry.action === 'conductor.tool_call');
    expect(audit.map(({ tool, target }) => ({ tool, target }))).toEqual([{ tool: 'create_llm', target: { type: 'llm', id: llmId } }]);
    expect((await none.api.get('/conductor/credits')).body.used_credits).toBe(3);
    expect((await none.api.get(`/conductor/sessions/${other}`)).body.message_count).toBe(2);
  });
});
