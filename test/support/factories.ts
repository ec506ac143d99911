import { randomBytes, randomInt } from 'node:crypto';

/** Object factories: valid request bodies with overridable fields. */
export const apiKeyBody = (overrides: Record<string, unknown> = {}) => ({
  name: `key ${randomBytes(3).toString('hex')}`,
  ...overrides,
});

export const publicKeyBody = (overrides: Record<string, unknown> = {}) => ({
  name: `browser ${randomBytes(3).toString('hex')}`,
  ...overrides,
});

/** A valid, random San Francisco number (E.164); tables are per test file, so collisions are left to chance. */
export const freshNumber = () => `+1415${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`;

interface Api {
  post(path: string, options: { body: unknown }): Promise<{ status: number; body: any }>;
}

async function created(res: Promise<{ status: number; body: any }>, what: string) {
  const { status, body } = await res;
  if (status !== 201) throw new Error(`creating ${what} answered ${status}: ${JSON.stringify(body)}`);
  return body;
}

/** A Retell LLM through the API (the compatible client's tests create theirs with retell-sdk). */
export const newLlm = (api: Api, overrides: Record<string, unknown> = {}) =>
  created(api.post('/create-retell-llm', { body: { general_prompt: 'You are helpful.', ...overrides } }), 'a Retell LLM');

/** A voice agent on a fresh Retell LLM, through the API. */
export async function newAgent(api: Api, options: { agent?: Record<string, unknown>; llm?: Record<string, unknown> } = {}) {
  const llm = await newLlm(api, options.llm);
  const agent = await created(
    api.post('/create-agent', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, ...options.agent } }),
    'an agent',
  );
  return { agent, llm };
}

/** A conversation flow through the API: one static conversation node unless `nodes` are given. */
export const newFlow = (api: Api, overrides: Record<string, unknown> = {}) =>
  created(
    api.post('/create-conversation-flow', {
      body: {
        model_choice: { model: 'gpt-4.1', type: 'cascading' },
        start_speaker: 'agent',
        nodes: [{ id: 'start', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }],
        ...overrides,
      },
    }),
    'a conversation flow',
  );

/** A voice agent on any response engine (`{type: 'conversation-flow', …}`, `{type: 'custom-llm', …}`), through the API. */
export const newAgentOn = (api: Api, responseEngine: Record<string, unknown>, overrides: Record<string, unknown> = {}) =>
  created(api.post('/create-agent', { body: { response_engine: responseEngine, ...overrides } }), 'an agent');
