import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { completion, startFakeOpenAi } from '../support/fake-openai.ts';

/*
 * generate-agent, copilot and workflow LLM steps against an OpenAI-compatible provider
 * (the scripted fake on 127.0.0.1): LLM_BASE_URL is a vendor setting, read from the
 * environment on first use, so it is set before the app starts.
 */
const llm = await startFakeOpenAi();
const newDeskAgent = async () => {
  const { agent, llm } = await newAgent(app.api, { agent: { agent_name: 'Desk' }, llm: { general_prompt: 'You are terse.' } });
  return { agent, engine: llm };
};
const app = await startTestApp({ LLM_BASE_URL: llm.url });

const json = (value: unknown) => ({ body: completion(JSON.stringify(value)) });

async function counts() {
  return [(await app.api.get('/list-agents')).body.length, (await app.api.get('/list-retell-llms')).body.length];
}

describe('generate-agent through the provider', () => {
  it('asks for a JSON agent definition and writes the LLM and agent from it', async () => {
    llm.reset();
    llm.enqueue(
      json({
        agent_name: 'Bondi Surf School',
        general_prompt: '## Identity\nYou book surf lessons.',
        begin_message: 'G’day! Want to book a lesson?',
        language: 'en-GB',
        extra: 'ignored',
      }),
    );
    const res = await app.api.post('/generate-agent', { body: { description: 'Books surf lessons at Bondi', voice_id: 'openai-Nova' } });
    expect(res.status).toBe(201);
    expect(res.body.llm).toMatchObject({ general_prompt: '## Identity\nYou book surf lessons.', begin_message: 'G’day! Want to book a lesson?', model: 'gpt-4.1' });
    expect(res.body.agent).toMatchObject({
      agent_name: 'Bondi Surf School',
      language: 'en-GB',
      voice_id: 'openai-Nova',
      response_engine: { type: 'retell-llm', llm_id: res.body.llm.llm_id, version: 0 },
    });

    expect(llm.requests).toHaveLength(1);
    const sent = llm.requests[0]!.body;
    expect(sent).toMatchObject({ model: 'gpt-4.1', response_format: { type: 'json_object' } });
    expect(sent.messages[0].role).toBe('system');
    expect(sent.messages[0].content).toContain('JSON');
    expect(sent.messages[1]).toEqual({ role: 'user', content: 'Books surf lessons at Bondi' });
  });

  it('ignores a language outside the list', async () => {
    llm.reset();
    llm.enqueue(json({ agent_name: 'X', general_prompt: 'Y', language: 'tlh-KL' }));
    const res = await app.api.post('/generate-agent', { body: { description: 'Speaks Klingon' } });
    expect(res.status).toBe(201);
    expect(res.body.agent.language).toBe('en-AU');
    expect(res.body.llm.begin_message).toBeNull();
  });

  it.each([
    [json({ agent_name: '', general_prompt: 42 }), 'Language model returned an unusable agent definition: agent_name: Must be at least 1 characters; general_prompt: Expected string, received number'],
    [json({ agent_name: 'x'.repeat(10), general_prompt: 'y'.repeat(100_001) }), 'Language model returned an unusable agent definition: general_prompt: Must be at most 100000 characters'],
    [{ body: completion('not json at all') }, 'Language model provider failed: the model did not return valid JSON'],
    [{ status: 400, body: { error: { message: 'bad', code: 'invalid_request' } } }, 'Language model provider failed: HTTP 400 invalid_request'],
  ])('answers 502 for an unusable answer and writes nothing (%#)', async (reply, message) => {
    llm.reset();
    llm.enqueue(reply);
    const before = await counts();
    const res = await app.api.post('/generate-agent', { body: { description: 'Anything' } });
    expect(res.status).toBe(502);
    expect(res.body.message).toBe(message);
    expect(await counts()).toEqual(before);
  });
});

describe('copilot through the provider', () => {
  it('shows the model the configuration and keeps only valid proposed changes, applying none', async () => {
    const { agent, engine } = await newDeskAgent();
    llm.reset();
    llm.enqueue(
      json({
        reply: 'Rename it and warm up the prompt.',
        suggested_changes: {
          agent: { agent_name: 'Friendly desk', responsiveness: 5, response_engine: { type: 'custom-llm', llm_websocket_url: 'wss://x' } },
          llm: { general_prompt: 'You are warm.', model: 'gpt-9' },
        },
      }),
    );
    const res = await app.api.post(`/agents/${agent.agent_id}/copilot`, {
      body: { message: 'Make it friendlier', history: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      agent_id: agent.agent_id,
      version: 0,
      reply: 'Rename it and warm up the prompt.',
      suggested_changes: { agent: { agent_name: 'Friendly desk' }, llm: { general_prompt: 'You are warm.' } },
    });
    const sent = llm.requests[0]!.body;
    expect(sent.response_format).toEqual({ type: 'json_object' });
    expect(sent.messages[0].content).toContain(`"agent_id": "${agent.agent_id}"`);
    expect(sent.messages[0].content).toContain('"general_prompt": "You are terse."');
    expect(sent.messages.slice(1)).toEqual([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello' },
      { role: 'user', content: 'Make it friendlier' },
    ]);
    expect((await app.api.get(`/get-agent/${agent.agent_id}`)).body).toEqual(agent);
    expect((await app.api.get(`/get-retell-llm/${engine.llm_id}`)).body.general_prompt).toBe('You are terse.');
  });

  it('answers suggested_changes null when nothing proposed is valid', async () => {
    const { agent } = await newDeskAgent();
    llm.reset();
    llm.enqueue(json({ reply: 'It uses gpt-4.1.', suggested_changes: { agent: { nonsense: true } } }));
    const res = await app.api.post(`/agents/${agent.agent_id}/copilot`, { body: { message: 'Which model?' } });
    expect(res.body).toMatchObject({ reply: 'It uses gpt-4.1.', suggested_changes: null });
  });
});

describe('workflow LLM steps through the provider', () => {
  it('sends the rendered prompt with the step’s model and maps the JSON answer to outputs', async () => {
    const { agent } = await newDeskAgent();
    llm.reset();
    llm.enqueue(json({ greeting: 'Hi Ada!', priority: 2 }));
    const res = await app.api.post(`/agents/${agent.agent_id}/workflows/pre_call/test`, {
      body: {
        variables: { name: 'Ada' },
        workflow: { steps: [{ type: 'llm', name: 'greet', model: 'claude-4.5-haiku', prompt: 'Greet {{name}}', outputs: ['greeting', 'priority', 'mood'] }] },
      },
    });
    expect(res.body).toMatchObject({
      status: 'succeeded',
      outputs: { greeting: 'Hi Ada!', priority: '2' },
      steps: [{ name: 'greet', status: 'succeeded', outputs: ['greeting', 'priority'], missing_outputs: ['mood'], model: 'claude-4.5-haiku' }],
    });
    const sent = llm.requests[0]!.body;
    expect(sent).toMatchObject({ model: 'claude-4.5-haiku', temperature: 0, response_format: { type: 'json_object' } });
    expect(sent.messages[1]).toEqual({ role: 'user', content: 'Greet Ada' });
  });

  it('records a provider failure as a failed step', async () => {
    const { agent } = await newDeskAgent();
    llm.reset();
    llm.enqueue({ status: 401, body: { error: { message: 'no', code: 'invalid_api_key' } } });
    const res = await app.api.post(`/agents/${agent.agent_id}/workflows/pre_call/test`, {
      body: { workflow: { steps: [{ type: 'llm', name: 'greet', prompt: 'Hi', outputs: ['greeting'] }] } },
    });
    expect(res.body).toMatchObject({ status: 'failed', outputs: {} });
    expect(res.body.steps[0].error).toBe('Language model provider failed: HTTP 401 invalid_api_key');
  });
});
