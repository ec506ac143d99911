import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Retell from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { runPreCallWorkflow } from '../../shared/agent-tools/workflows.ts';
import { LLM_MODELS } from '../../shared/agents/llms/models.ts';
import { findShareLinkByToken } from '../../shared/agent-tools/share-links.ts';
import { DEFAULT_VOICE_ID, DEFAULT_VOICE_MODEL } from '../../shared/voices/voices.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent as newAgentWithLlm } from '../support/factories.ts';
import type { ApiClient } from '../support/http.ts';

const app = await startTestApp();
const newAgent = (api: ApiClient = app.api, agent: Record<string, unknown> = {}, llm: Record<string, unknown> = {}) =>
  newAgentWithLlm(api, { agent, llm });
const retell = new Retell({ apiKey: app.workspace.api_key, baseURL: app.url, maxRetries: 0 });

/** A scoped key of the main workspace that lacks `agents`. */
async function keyWithout(): Promise<ApiClient> {
  const key = (await app.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
  return app.api.withKey(key);
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A fake HTTP server on 127.0.0.1 answering with `reply`, recording requests. */
async function fakeServer(reply: (req: Recorded) => { status?: number; body?: unknown; headers?: Record<string, string>; delayMs?: number }) {
  const requests: Recorded[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(recorded);
      const answer = reply(recorded);
      const send = () => {
        if (res.destroyed) return;
        const payload = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
        res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
        res.end(payload);
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

/** Each request, made with `api` for another workspace's agent, is that agent's 404. */
async function expectNotFoundForeign(api: ApiClient, agentId: string, requests: ((api: ApiClient, id: string) => Promise<{ status: number; body: unknown }>)[]) {
  for (const request of requests) {
    const res = await request(api, agentId);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ status: 404, message: `Agent ${agentId} not found` });
  }
}

describe('share links', () => {
  it('creates a link with a long URL-safe token that resolves until it is revoked, at once', async () => {
    const { agent } = await newAgent();
    const created = await app.api.post(`/agents/${agent.agent_id}/share-links`);
    expect(created.status).toBe(201);
    const link = created.body;
    expect(link).toMatchObject({ agent_id: agent.agent_id, enabled: true, url_path: `/orb/${link.token}` });
    expect(link.share_link_id).toMatch(/^share_link_[0-9a-f]{24}$/);
    expect(link.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(link.token, 'base64url')).toHaveLength(32);
    expect(await findShareLinkByToken(link.token)).toEqual({
      workspace_id: app.workspace.workspace_id,
      agent_id: agent.agent_id,
      share_link_id: link.share_link_id,
    });

    const other = (await app.api.post(`/agents/${agent.agent_id}/share-links`)).body;
    expect(other.token).not.toBe(link.token);
    const listed = await app.api.get(`/agents/${agent.agent_id}/share-links`);
    expect(listed.body.map((l: { share_link_id: string }) => l.share_link_id)).toEqual([other.share_link_id, link.share_link_id]);

    const revoked = await app.api.delete(`/share-links/${link.share_link_id}`);
    expect(revoked.status).toBe(204);
    expect(await findShareLinkByToken(link.token)).toBeUndefined();
    expect(await findShareLinkByToken(other.token)).toBeDefined();
    const after = (await app.api.get(`/agents/${agent.agent_id}/share-links`)).body;
    expect(after.find((l: { share_link_id: string }) => l.share_link_id === link.share_link_id)).toMatchObject({
      enabled: false,
      revoked_timestamp: expect.any(Number),
    });
    // Revoking again changes nothing.
    expect((await app.api.delete(`/share-links/${link.share_link_id}`)).status).toBe(204);
    expect(await findShareLinkByToken(link.token)).toBeUndefined();
  });

  it('stops resolving when the agent is deleted, and ignores malformed or unknown tokens', async () => {
    const { agent } = await newAgent();
    const link = (await app.api.post(`/agents/${agent.agent_id}/share-links`)).body;
    await app.api.delete(`/delete-agent/${agent.agent_id}`);
    expect(await findShareLinkByToken(link.token)).toBeUndefined();
    expect((await app.api.delete(`/share-links/${link.share_link_id}`)).status).toBe(404);
    expect(await findShareLinkByToken('short')).toBeUndefined();
    expect(await findShareLinkByToken('A'.repeat(43))).toBeUndefined();
  });

  it('answers 404 for another workspace’s agent and link, and a missing link', async () => {
    const other = await app.newWorkspace();
    const { agent } = await newAgent(other.api);
    const link = (await other.api.post(`/agents/${agent.agent_id}/share-links`)).body;
    await expectNotFoundForeign(app.api, agent.agent_id, [
      (api, id) => api.get(`/agents/${id}/share-links`),
      (api, id) => api.post(`/agents/${id}/share-links`),
    ]);
    const res = await app.api.delete(`/share-links/${link.share_link_id}`);
    expect(res.body).toEqual({ status: 404, message: `Share link ${link.share_link_id} not found` });
    expect(await findShareLinkByToken(link.token)).toBeDefined();
    expect((await app.api.delete('/share-links/share_link_000000000000000000000000')).status).toBe(404);
    expect((await app.api.delete('/share-links/nope')).body).toEqual({
      status: 400,
      message: 'id: Must be a share link ID (share_link_ followed by 24 hex characters)',
    });
  });
});

describe('generate-agent (offline model)', () => {
  it('writes a Retell LLM and an agent from a description', async () => {
    const res = await app.api.post('/generate-agent', {
      body: { description: 'A receptionist for Harbour Dental that books cleanings and answers opening hours.' },
    });
    expect(res.status).toBe(201);
    const { agent, llm } = res.body;
    expect(llm).toMatchObject({ version: 0, model: 'gpt-4.1', begin_message: 'Hello, thanks for calling Harbour Dental! How can I help you today?' });
    expect(llm.general_prompt).toContain('You are Harbour Dental Receptionist');
    expect(agent).toMatchObject({
      agent_name: 'Harbour Dental Receptionist',
      language: 'en-US',
      voice_id: DEFAULT_VOICE_ID,
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id, version: 0 },
    });
    expect(await retell.agent.retrieve(agent.agent_id)).toEqual(agent);
    expect((await app.api.get(`/get-retell-llm/${llm.llm_id}`)).body).toEqual(llm);
  });

  it('lets the caller’s fields win over the model’s', async () => {
    const res = await app.api.post('/generate-agent', {
      body: { description: 'A scheduler for Acme Plumbing', agent_name: 'Mine', language: 'en-GB', voice_id: 'cartesia-Cleo', model: 'gpt-4.1-mini' },
    });
    expect(res.status).toBe(201);
    expect(res.body.agent).toMatchObject({ agent_name: 'Mine', language: 'en-GB', voice_id: 'cartesia-Cleo' });
    expect(res.body.llm.model).toBe('gpt-4.1-mini');
  });

  it.each([
    [{}, 'description: Required'],
    [{ description: '   ' }, 'description: Must be at least 1 characters'],
    [{ description: 'x', model: 'gpt-2' }, 'model: Unknown model "gpt-2"'],
    [{ description: 'x', language: 'xx-XX' }, 'language: Expected one of'],
    [{ description: 'x', voice_id: 'nobody-Nothing' }, 'voice_id: Unknown voice nobody-Nothing'],
  ])('rejects %j and writes nothing', async (body, message) => {
    const before = [(await app.api.get('/list-agents')).body.length, (await app.api.get('/list-retell-llms')).body.length];
    const res = await app.api.post('/generate-agent', { body });
    expect(res.status).toBe(400);
    expect(res.body.message.startsWith(message)).toBe(true);
    expect([(await app.api.get('/list-agents')).body.length, (await app.api.get('/list-retell-llms')).body.length]).toEqual(before);
  });
});

describe('copilot (offline model)', () => {
  it('answers about an agent version and proposes nothing offline; the agent is unchanged', async () => {
    const { agent } = await newAgent();
    const res = await app.api.post(`/agents/${agent.agent_id}/copilot`, { body: { message: 'Make it friendlier' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      agent_id: agent.agent_id,
      version: 0,
      reply: expect.stringContaining('You asked: "Make it friendlier"'),
      suggested_changes: null,
    });
    expect((await app.api.get(`/get-agent/${agent.agent_id}`)).body).toEqual(agent);
    expect((await app.api.post(`/agents/${agent.agent_id}/copilot`, { body: { message: '' } })).body).toEqual({
      status: 400,
      message: 'message: Must be at least 1 characters',
    });
  });
});

describe('agent estimates', () => {
  it('derives cost and latency from the model, the voice tier and the features', async () => {
    const { agent } = await newAgent();
    const res = await app.api.get(`/agent-estimates/${agent.agent_id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      agent_id: agent.agent_id,
      version: 0,
      currency: 'USD',
      price_table_version: '2025-06',
      // platform 0.055 + gpt-4.1 0.045 + ElevenLabs premium 0.07 + noise cancellation 0
      cost_per_minute: 0.17,
      // turn 300 + stt fast 200 + llm 500 + tts 350 + denoise 10 + network 80
      expected_latency_ms: 1440,
    });
    expect(res.body.cost_breakdown.map((c: { component: string }) => c.component)).toEqual(['platform', 'llm', 'voice', 'denoising']);
    expect(res.body.cost_breakdown[2].description).toBe(`Voice ${DEFAULT_VOICE_ID} (elevenlabs, ${DEFAULT_VOICE_MODEL}, premium tier)`);

    const cheaper = await newAgent(
      app.api,
      { voice_id: 'cartesia-Cleo', voice_model: 'sonic-turbo', denoising_mode: 'noise-and-background-speech-cancellation', enable_backchannel: true, responsiveness: 0.5, stt_mode: 'accurate' },
      { model: 'gpt-4.1-mini', knowledge_base_ids: ['knowledge_base_000000000000000000000001'] },
    );
    const estimate = (await app.api.get(`/agent-estimates/${cheaper.agent.agent_id}`)).body;
    // 0.055 + kb 0.005 + gpt-4.1-mini 0.016 + cartesia standard 0.05 + background speech 0.005 + backchannel 0
    expect(estimate.cost_per_minute).toBe(0.131);
    // turn 650 + stt 450 + kb 120 + llm 400 + tts 120 + denoise 20 + network 80
    expect(estimate.expected_latency_ms).toBe(1840);
    expect(estimate.cost_breakdown.map((c: { component: string }) => c.component)).toEqual([
      'platform', 'knowledge_base', 'llm', 'voice', 'denoising', 'backchannel',
    ]);
    // Deterministic: the same version, the same answer.
    expect((await app.api.get(`/agent-estimates/${cheaper.agent.agent_id}`)).body).toEqual(estimate);
  });

  it('estimates a given version and a custom LLM', async () => {
    const { agent } = await newAgent();
    await app.api.post(`/publish-agent-version/${agent.agent_id}`, { body: {} });
    await app.api.patch(`/update-agent/${agent.agent_id}`, {
      body: { response_engine: { type: 'custom-llm', llm_websocket_url: 'wss://llm.example.com/ws' }, denoising_mode: 'no-denoise' },
    });
    const latest = (await app.api.get(`/agent-estimates/${agent.agent_id}`)).body;
    expect(latest).toMatchObject({ version: 1, cost_per_minute: 0.125, expected_latency_ms: 1430 });
    expect(latest.cost_breakdown[1]).toEqual({ component: 'llm', description: 'Custom LLM on your server (no model charge)', cost_per_minute: 0 });
    expect((await app.api.get(`/agent-estimates/${agent.agent_id}?version=0`)).body).toMatchObject({ version: 0, cost_per_minute: 0.17 });
    expect((await app.api.get(`/agent-estimates/${agent.agent_id}?version=7`)).body).toEqual({
      status: 404,
      message: `Agent ${agent.agent_id} has no version 7`,
    });
  });
});

describe('repair-agent', () => {
  it('is a no-op when nothing needs fixing', async () => {
    const { agent } = await newAgent();
    const repaired = await retell.agent.repair(agent.agent_id);
    expect(repaired).toEqual(agent);
    expect((await app.api.get(`/agent-versions/${agent.agent_id}`)).body).toHaveLength(1);
  });

  it('remaps an unusable voice, drops missing fallbacks, knowledge bases, swap agents and MCP tools in the draft', async () => {
    const gone = (await newAgent()).agent;
    await app.api.delete(`/delete-agent/${gone.agent_id}`);
    const kept = (await newAgent()).agent;
    const tools = [
      { type: 'end_call', name: 'end' },
      { type: 'agent_swap', name: 'to_gone', agent_id: gone.agent_id },
      { type: 'agent_swap', name: 'to_kept', agent_id: kept.agent_id },
      { type: 'mcp', name: 'lookup', mcp_id: 'crm' },
      { type: 'mcp', name: 'orphan', mcp_id: 'removed' },
    ];
    const { agent, llm } = await newAgent(
      app.api,
      { voice_id: 'cartesia-Cleo', voice_model: 'sonic-3', fallback_voice_ids: ['openai-Alloy', 'nobody-Nothing'] },
      {
        knowledge_base_ids: ['knowledge_base_000000000000000000000001'],
        general_tools: tools,
        mcps: [{ name: 'crm', url: 'https://mcp.example.com' }],
        states: [{ name: 'start', tools: [{ type: 'mcp', name: 'state_orphan', mcp_id: 'removed' }, { type: 'end_call', name: 'bye' }] }],
        starting_state: 'start',
      },
    );
    const repaired = await retell.agent.repair(agent.agent_id);
    expect(repaired).toMatchObject({
      version: 0,
      voice_id: 'cartesia-Cleo',
      fallback_voice_ids: ['openai-Alloy'],
      response_engine: { llm_id: llm.llm_id, version: 0 },
    });
    const fixed = (await app.api.get(`/get-retell-llm/${llm.llm_id}`)).body;
    expect(fixed.knowledge_base_ids).toEqual([]);
    expect(fixed.general_tools.map((t: { name: string }) => t.name)).toEqual(['end', 'to_kept', 'lookup']);
    expect(fixed.states[0].tools.map((t: { name: string }) => t.name)).toEqual(['bye']);
    // A second repair finds nothing.
    const again = await retell.agent.repair(agent.agent_id);
    expect(again.last_modification_timestamp).toBe(repaired.last_modification_timestamp);
  });

  it('repairs a published agent in a new draft, leaving the published version and engine untouched', async () => {
    const { agent, llm } = await newAgent(app.api, {}, { knowledge_base_ids: ['knowledge_base_000000000000000000000002'] });
    await retell.agent.publish(agent.agent_id, { version: 0 });
    const refused = await app.api.post(`/repair-agent/${agent.agent_id}?version=0`);
    expect(refused.body).toEqual({
      status: 400,
      message: `Version 0 of agent ${agent.agent_id} is published and cannot be changed; create a new version from it`,
    });
    const repaired = await retell.agent.repair(agent.agent_id);
    expect(repaired).toMatchObject({ version: 1, is_published: false, base_version: 0, response_engine: { llm_id: llm.llm_id, version: 1 } });
    expect((await app.api.get(`/get-retell-llm/${llm.llm_id}?version=0`)).body.knowledge_base_ids).toEqual(['knowledge_base_000000000000000000000002']);
    expect((await app.api.get(`/get-retell-llm/${llm.llm_id}?version=1`)).body.knowledge_base_ids).toEqual([]);
    expect((await app.api.get(`/get-agent/${agent.agent_id}?version=0`)).body.is_published).toBe(true);
  });

  it('remaps a workspace voice that no longer exists to the default voice', async () => {
    const { PutCommand, DeleteCommand } = await import('@aws-sdk/lib-dynamodb');
    const { db, tableName } = await import('../../shared/platform/store/db.ts');
    const { keys } = await import('../../shared/platform/store/keys.ts');
    const voiceId = '11labs-custom_voice_0123456789abcdef01234567';
    const key = keys.workspaceVoice(app.workspace.workspace_id, voiceId);
    await db.send(new PutCommand({ TableName: tableName, Item: { ...key, voice_id: voiceId, voice_name: 'Mine', provider: 'elevenlabs', gender: 'female', created_timestamp: 1 } }));
    const { agent } = await newAgent(app.api, { voice_id: voiceId, voice_model: 'eleven_turbo_v2' });
    await db.send(new DeleteCommand({ TableName: tableName, Key: key }));
    const repaired = await retell.agent.repair(agent.agent_id, { version: 0 });
    expect(repaired).toMatchObject({ version: 0, voice_id: DEFAULT_VOICE_ID, voice_model: DEFAULT_VOICE_MODEL });
  });
});

describe('workflows', () => {
  const lookupStep = (url: string, extra: Record<string, unknown> = {}) => ({
    type: 'http',
    name: 'lookup',
    url: `${url}/customers?phone={{from_number}}`,
    headers: { authorization: 'Bearer {{crm_token}}' },
    outputs: { customer_name: 'customer.name', tier: 'customer.tier', lookup_status: '$status' },
    ...extra,
  });
  const greetStep = { type: 'llm', name: 'greet', prompt: 'Write a greeting for {{customer_name}} ({{tier}})', outputs: ['greeting'] };

  it('saves a workflow per stage with defaults filled, and lists them', async () => {
    const { agent } = await newAgent();
    expect((await app.api.get(`/agents/${agent.agent_id}/workflows`)).body).toEqual([]);
    const put = await app.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, {
      body: { steps: [lookupStep('https://crm.example.com'), greetStep] },
    });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      agent_id: agent.agent_id,
      stage: 'pre_call',
      enabled: true,
      steps: [
        { ...lookupStep('https://crm.example.com'), method: 'GET', timeout_ms: 5000, continue_on_error: false },
        { ...greetStep, model: 'gpt-4.1-mini', temperature: 0, timeout_ms: 10000, continue_on_error: false },
      ],
      last_modification_timestamp: expect.any(Number),
    });
    await app.api.put(`/agents/${agent.agent_id}/workflows/post_call`, {
      body: { enabled: false, steps: [{ type: 'http', name: 'notify', method: 'POST', url: 'https://hooks.example.com/done', body: { call: '{{call_id}}' } }] },
    });
    const listed = (await app.api.get(`/agents/${agent.agent_id}/workflows`)).body;
    expect(listed.map((w: { stage: string; enabled: boolean }) => [w.stage, w.enabled])).toEqual([['pre_call', true], ['post_call', false]]);
    expect(listed[0]).toEqual(put.body);
  });

  it.each([
    [{ steps: [{ type: 'ftp', name: 'a' }] }, 'steps.0.type: Expected one of "http", "llm"'],
    [{ steps: [{ type: 'http', name: 'a', url: 'https://{{host}}/x' }] }, 'steps.0.url: Must be an http:// or https:// URL with a literal host ({{variables}} may follow it)'],
    [{ steps: [{ type: 'http', name: 'a', url: 'ftp://x.example' }] }, 'steps.0.url: Must be an http:// or https:// URL with a literal host ({{variables}} may follow it)'],
    [{ steps: [{ type: 'http', name: 'a', url: 'https://x.example/{{bad name}}' }] }, 'steps.0.url: Malformed template {{bad name}}: use {{variable_name}}'],
    [{ steps: [{ type: 'http', name: 'a', url: 'https://x.example', body: 'hi' }] }, 'steps.0.body: A GET request has no body'],
    [{ steps: [{ type: 'http', name: 'a', url: 'https://x.example', headers: { Host: 'evil' } }] }, 'steps.0.headers.Host: This header is set by the request itself'],
    [{ steps: [{ type: 'http', name: 'a', url: 'https://x.example', outputs: { '1x': 'a' } }] }, 'steps.0.outputs.1x: Must be 1 to 64 letters, digits or "_", not starting with a digit'],
    [{ steps: [{ type: 'http', name: 'a', url: 'https://x.example', timeout_ms: 60000 }] }, 'steps.0.timeout_ms: Must be at most 10000'],
    [{ steps: [{ type: 'http', name: 'Bad', url: 'https://x.example' }] }, 'steps.0.name: Must be 1 to 64 lower-case letters, digits or "_", starting with a letter'],
    [{ steps: [{ type: 'llm', name: 'a', prompt: 'x', outputs: [] }] }, 'steps.0.outputs: Must have at least 1 items'],
    [{ steps: [{ type: 'llm', name: 'a', prompt: 'x', outputs: ['y'], model: 'gpt-2' }] }, `steps.0.model: Unknown model "gpt-2"; use one of ${LLM_MODELS.join(', ')}`],
    [{ steps: [{ type: 'llm', name: 'a', prompt: 'x', outputs: ['y'] }, { type: 'llm', name: 'a', prompt: 'x', outputs: ['z'] }] }, 'steps.1.name: Duplicate step name "a"'],
    [{ steps: [{ type: 'llm', name: 'a', prompt: 'x', outputs: ['y'] }, { type: 'llm', name: 'b', prompt: 'x', outputs: ['y'] }] }, 'steps.1.outputs.0: "y" is already an output of step "a"'],
    [{ steps: [{ type: 'llm', name: 'a', prompt: 'use {{later}}', outputs: ['y'] }, { type: 'llm', name: 'b', prompt: 'x', outputs: ['later'] }] }, 'steps.0.prompt: {{later}} is an output of a later step ("b")'],
    [{ steps: [{ type: 'llm', name: 'a', prompt: 'use {{ y }}', outputs: ['y'] }] }, 'steps.0.prompt: {{y}} is an output of this step'],
    [{ steps: [] , enabled: 'yes' }, 'enabled: Expected boolean, received string'],
    [{}, 'steps: Required'],
  ])('rejects %j with a 400 naming the field and writes nothing', async (body, message) => {
    const { agent } = await newAgent();
    const res = await app.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, { body });
    expect(res.body).toEqual({ status: 400, message });
    expect((await app.api.get(`/agents/${agent.agent_id}/workflows`)).body).toEqual([]);
  });

  it('refuses a stage that is not pre_call or post_call', async () => {
    const { agent } = await newAgent();
    for (const res of [
      await app.api.put(`/agents/${agent.agent_id}/workflows/mid_call`, { body: { steps: [] } }),
      await app.api.post(`/agents/${agent.agent_id}/workflows/mid_call/test`, { body: {} }),
    ]) {
      expect(res.body).toEqual({ status: 400, message: 'stage: Expected one of "pre_call", "post_call"' });
    }
    expect((await app.api.get(`/agents/${agent.agent_id}/workflows`)).body).toEqual([]);
  });

  it('tests a workflow against a live endpoint and the model, records the run, and lists runs newest first', async () => {
    const crm = await fakeServer((req) =>
      req.url.startsWith('/customers') ? { body: { customer: { name: 'Ada Lovelace', tier: 'gold' } } } : { status: 404 },
    );
    const { agent } = await newAgent();
    await app.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, { body: { steps: [lookupStep(crm.url), greetStep] } });
    const res = await app.api.post(`/agents/${agent.agent_id}/workflows/pre_call/test`, {
      body: { variables: { from_number: '+61 400 000 000', crm_token: 'secret-token' } },
    });
    expect(res.status).toBe(200);
    const run = res.body;
    expect(run).toMatchObject({
      agent_id: agent.agent_id,
      stage: 'pre_call',
      trigger: 'test',
      status: 'succeeded',
      outputs: {
        customer_name: 'Ada Lovelace',
        tier: 'gold',
        lookup_status: '200',
        greeting: 'greeting (offline) for: Write a greeting for Ada Lovelace (gold)',
      },
    });
    expect(run.run_id).toMatch(/^workflow_run_[0-9a-f]{24}$/);
    expect(run.steps).toEqual([
      {
        name: 'lookup',
        type: 'http',
        status: 'succeeded',
        duration_ms: expect.any(Number),
        outputs: ['customer_name', 'lookup_status', 'tier'],
        request: { method: 'GET', url: `${crm.url}/customers` },
        response_status: 200,
        response_excerpt: '{"customer":{"name":"Ada Lovelace","tier":"gold"}}',
      },
      { name: 'greet', type: 'llm', status: 'succeeded', duration_ms: expect.any(Number), outputs: ['greeting'], model: 'gpt-4.1-mini' },
    ]);
    expect(crm.requests[0]).toMatchObject({ method: 'GET', url: '/customers?phone=%2B61%20400%20000%20000' });
    expect(crm.requests[0]!.headers.authorization).toBe('Bearer secret-token');

    // An unsaved workflow, with a failing step that stops the run.
    const failing = await app.api.post(`/agents/${agent.agent_id}/workflows/pre_call/test`, {
      body: {
        workflow: {
          steps: [
            { type: 'http', name: 'broken', url: `${crm.url}/missing`, outputs: { x: 'a' } },
            { type: 'llm', name: 'after', prompt: 'x', outputs: ['y'] },
          ],
        },
      },
    });
    expect(failing.body).toMatchObject({ status: 'failed', outputs: {} });
    expect(failing.body.steps.map((s: { status: string; error?: string }) => [s.status, s.error])).toEqual([
      ['failed', 'Endpoint replied 404'],
      ['skipped', undefined],
    ]);

    const runs = (await app.api.get(`/agents/${agent.agent_id}/workflow-runs`)).body;
    expect(runs.map((r: { run_id: string }) => r.run_id)).toEqual([failing.body.run_id, run.run_id]);
    const { response_excerpt: _excerpt, ...storedLookup } = run.steps[0];
    expect(runs[1]).toEqual({ ...run, steps: [storedLookup, run.steps[1]] });
    const firstPage = (await app.api.get(`/agents/${agent.agent_id}/workflow-runs?limit=1`)).body;
    expect(firstPage.map((r: { run_id: string }) => r.run_id)).toEqual([failing.body.run_id]);
    const secondPage = (await app.api.get(`/agents/${agent.agent_id}/workflow-runs?limit=1&pagination_key=${firstPage[0].run_id}`)).body;
    expect(secondPage.map((r: { run_id: string }) => r.run_id)).toEqual([run.run_id]);
    expect((await app.api.get(`/agents/${agent.agent_id}/workflow-runs?stage=post_call`)).body).toEqual([]);
    expect((await app.api.get(`/agents/${agent.agent_id}/workflow-runs?pagination_key=workflow_run_000000000000000000000000`)).body).toEqual({
      status: 400,
      message: 'Invalid pagination_key',
    });
  });

  it('keeps going past a failed step with continue_on_error, and times out slow endpoints', async () => {
    const slow = await fakeServer(() => ({ body: { ok: true }, delayMs: 1000 }));
    const { agent } = await newAgent();
    const res = await app.api.post(`/agents/${agent.agent_id}/workflows/post_call/test`, {
      body: {
        variables: { call_id: 'call_1' },
        workflow: {
          steps: [
            { type: 'http', name: 'slow', method: 'POST', url: `${slow.url}/hook`, body: { call: '{{call_id}}' }, timeout_ms: 200, continue_on_error: true, outputs: { ok: 'ok' } },
            { type: 'llm', name: 'summary', prompt: 'Summarise {{call_id}}', outputs: ['summary'] },
          ],
        },
      },
    });
    expect(res.body.status).toBe('failed');
    expect(res.body.steps.map((s: { status: string; error?: string }) => [s.status, s.error])).toEqual([
      ['failed', 'Timed out after 200 ms'],
      ['succeeded', undefined],
    ]);
    expect(res.body.outputs).toEqual({ summary: 'summary (offline) for: Summarise call_1' });
    expect(JSON.parse(slow.requests[0]!.body)).toEqual({ call: 'call_1' });
    expect(slow.requests[0]!.headers['content-type']).toBe('application/json');
    expect((await app.api.post(`/agents/${agent.agent_id}/workflows/pre_call/test`, { body: {} })).body).toEqual({
      status: 404,
      message: `Agent ${agent.agent_id} has no pre_call workflow; save one or send it as "workflow"`,
    });
  });

  it('runs the pre-call workflow for a call and answers its outputs as string variables', async () => {
    const crm = await fakeServer(() => ({ body: { customer: { name: 'Grace', tier: 3, vip: true } } }));
    const { agent } = await newAgent();
    const ws = app.workspace.workspace_id;
    expect(await runPreCallWorkflow(ws, agent.agent_id, { variables: { from_number: '+61400000000' } })).toEqual({});
    await app.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, {
      body: { steps: [{ type: 'http', name: 'lookup', url: `${crm.url}/c/{{from_number}}`, outputs: { name: 'customer.name', tier: 'customer.tier', vip: 'customer.vip', nothing: 'customer.none' } }] },
    });
    const outputs = await runPreCallWorkflow(ws, agent.agent_id, { variables: { from_number: '+61400000000' }, call_id: 'call_0123456789abcdef01234567' });
    expect(outputs).toEqual({ name: 'Grace', tier: '3', vip: 'true' });
    expect(crm.requests[0]!.url).toBe('/c/%2B61400000000');
    const [run] = (await app.api.get(`/agents/${agent.agent_id}/workflow-runs`)).body;
    expect(run).toMatchObject({ trigger: 'call', call_id: 'call_0123456789abcdef01234567', status: 'succeeded' });
    expect(run.steps[0].missing_outputs).toEqual(['nothing']);

    await app.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, { body: { enabled: false, steps: [lookupStep(crm.url)] } });
    expect(await runPreCallWorkflow(ws, agent.agent_id, {})).toEqual({});
  });

  it('answers 404 for another workspace’s agent on every workflow route', async () => {
    const other = await app.newWorkspace();
    const { agent } = await newAgent(other.api);
    await other.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, { body: { steps: [greetStep] } });
    await expectNotFoundForeign(app.api, agent.agent_id, [
      (api, id) => api.get(`/agents/${id}/workflows`),
      (api, id) => api.put(`/agents/${id}/workflows/pre_call`, { body: { steps: [] } }),
      (api, id) => api.post(`/agents/${id}/workflows/pre_call/test`, { body: {} }),
      (api, id) => api.get(`/agents/${id}/workflow-runs`),
    ]);
    expect((await other.api.get(`/agents/${agent.agent_id}/workflows`)).body[0].steps).toHaveLength(1);
    expect((await other.api.get(`/agents/${agent.agent_id}/workflow-runs`)).body).toEqual([]);
  });
});

describe('access', () => {
  it('answers 404 for another workspace’s agent on generation, estimates, repair and MCP tools', async () => {
    const other = await app.newWorkspace();
    const { agent } = await newAgent(other.api);
    await expectNotFoundForeign(app.api, agent.agent_id, [
      (api, id) => api.post(`/agents/${id}/copilot`, { body: { message: 'hi' } }),
      (api, id) => api.get(`/agent-estimates/${id}`),
      (api, id) => api.post(`/repair-agent/${id}`),
      (api, id) => api.get(`/get-mcp-tools/${id}`),
    ]);
  });

  it('needs the agents scope on every route', async () => {
    const scoped = await keyWithout();
    const { agent } = await newAgent();
    const id = agent.agent_id;
    for (const res of [
      await scoped.get(`/agents/${id}/share-links`),
      await scoped.post(`/agents/${id}/share-links`),
      await scoped.delete('/share-links/share_link_000000000000000000000000'),
      await scoped.get(`/agents/${id}/workflows`),
      await scoped.put(`/agents/${id}/workflows/pre_call`, { body: { steps: [] } }),
      await scoped.post(`/agents/${id}/workflows/pre_call/test`, { body: {} }),
      await scoped.get(`/agents/${id}/workflow-runs`),
      await scoped.post('/generate-agent', { body: { description: 'x' } }),
      await scoped.post(`/agents/${id}/copilot`, { body: { message: 'x' } }),
      await scoped.get(`/agent-estimates/${id}`),
      await scoped.post(`/repair-agent/${id}`),
      await scoped.get(`/get-mcp-tools/${id}`),
      await scoped.post('/test-custom-llm-connection', { body: { llm_websocket_url: 'ws://127.0.0.1:1' } }),
    ]) {
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "agents" scope' });
    }
    expect((await app.api.get(`/agents/${id}/share-links`)).body).toEqual([]);
    expect((await app.api.get(`/agents/${id}/workflows`)).body).toEqual([]);
  });
});

/** A fake MCP server (Streamable HTTP) on 127.0.0.1: two pages of tools, the second as an SSE stream. */
async function fakeMcpServer() {
  const seen: { method: string; session?: string; authorization?: string; url: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'DELETE') {
        seen.push({ method: 'DELETE', session: req.headers['mcp-session-id'] as string | undefined, url: req.url ?? '' });
        res.writeHead(200).end();
        return;
      }
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      seen.push({
        method: message.method,
        session: req.headers['mcp-session-id'] as string | undefined,
        authorization: req.headers.authorization,
        url: req.url ?? '',
      });
      if (message.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'session-1' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'fake', version: '1' } } }));
      } else if (message.method === 'notifications/initialized') {
        res.writeHead(202).end();
      } else if (message.method === 'tools/list' && !message.params?.cursor) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({
          jsonrpc: '2.0',
          id: message.id,
          result: { tools: [{ name: 'find_customer', description: 'Find a customer by phone', inputSchema: { type: 'object', properties: { phone: { type: 'string' } } } }], nextCursor: 'page-2' },
        }));
      } else if (message.method === 'tools/list') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: {} })}\n\n`);
        res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { tools: [{ name: 'book', inputSchema: { type: 'object' } }] } })}\n\n`);
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe('get-mcp-tools', () => {
  it('lists the tools of the LLM’s MCP servers, asked of the servers', async () => {
    const mcp = await fakeMcpServer();
    const { agent } = await newAgent(app.api, {}, {
      mcps: [
        { name: 'crm', url: `${mcp.url}/mcp`, headers: { authorization: 'Bearer mcp-key' }, query_params: { tenant: 'acme' } },
        { name: 'down', url: `http://127.0.0.1:${await closedPort()}/mcp` },
      ],
    });
    const tools = await retell.mcpTool.getMcpTools(agent.agent_id, { mcp_id: 'crm' });
    expect(tools).toEqual([
      { name: 'find_customer', description: 'Find a customer by phone', inputSchema: { type: 'object', properties: { phone: { type: 'string' } } } },
      { name: 'book', description: '', inputSchema: { type: 'object' } },
    ]);
    expect(mcp.seen.filter((s) => s.method !== 'DELETE').map((s) => [s.method, s.session, s.authorization, s.url])).toEqual([
      ['initialize', undefined, 'Bearer mcp-key', '/mcp?tenant=acme'],
      ['notifications/initialized', 'session-1', 'Bearer mcp-key', '/mcp?tenant=acme'],
      ['tools/list', 'session-1', 'Bearer mcp-key', '/mcp?tenant=acme'],
      ['tools/list', 'session-1', 'Bearer mcp-key', '/mcp?tenant=acme'],
    ]);

    const missing = await app.api.get(`/get-mcp-tools/${agent.agent_id}?mcp_id=nope`);
    expect(missing.body).toEqual({ status: 404, message: `Agent ${agent.agent_id} has no MCP server "nope"` });
    const down = await app.api.get(`/get-mcp-tools/${agent.agent_id}?mcp_id=down`);
    expect(down.body).toEqual({ status: 502, message: 'MCP server "down" failed: request failed: ECONNREFUSED' });
  });

  it('reads the agent version a reference names: a number, latest, latest_published or a tag', async () => {
    const { agent, llm } = await newAgent(app.api, {}, { mcps: [{ name: 'crm', url: `http://127.0.0.1:${await closedPort()}/mcp` }] });
    const id = agent.agent_id;
    await retell.agent.publish(id, { version: 0 });
    // The next draft's LLM version no longer has the server.
    const draft = await retell.agent.update(id, { agent_name: 'next' });
    expect(draft.response_engine).toMatchObject({ llm_id: llm.llm_id, version: 1 });
    await retell.llm.update(llm.llm_id, { version: 1, mcps: [] });
    expect((await app.api.post(`/agents/${id}/tags`, { body: { name: 'prod', version: 0 } })).status).toBe(201);

    const withServer = { status: 502, message: 'MCP server "crm" failed: request failed: ECONNREFUSED' };
    const withoutServer = { status: 404, message: `Agent ${id} has no MCP server "crm"` };
    const cases: [string | number, { status: number; message: string }][] = [
      [0, withServer],
      ['latest_published', withServer],
      ['prod', withServer],
      ['latest', withoutServer],
      [1, withoutServer],
      ['staging', { status: 404, message: `Agent ${id} has no version or tag "staging"` }],
    ];
    for (const [version, expected] of cases) {
      const failed = await retell.mcpTool.getMcpTools(id, { mcp_id: 'crm', version }).then(
        () => undefined,
        (error: { status: number; error: unknown }) => ({ status: error.status, body: error.error }),
      );
      expect(failed).toEqual({ status: expected.status, body: expected });
    }
  });

  it('answers an empty list without MCP servers, and 400 for an engine without them', async () => {
    const { agent } = await newAgent();
    expect((await app.api.get(`/get-mcp-tools/${agent.agent_id}`)).body).toEqual([]);
    const custom = await app.api.post('/create-agent', {
      body: { response_engine: { type: 'custom-llm', llm_websocket_url: 'wss://llm.example.com/ws' } },
    });
    expect((await app.api.get(`/get-mcp-tools/${custom.body.agent_id}`)).body).toEqual({
      status: 400,
      message: `Agent ${custom.body.agent_id} does not run a Retell LLM, so it has no MCP servers`,
    });
  });
});

/** A local WebSocket endpoint: completes the opening handshake (or misbehaves as told). */
async function fakeWebSocketServer(mode: 'accept' | 'wrong-accept' | 'refuse' | 'silent') {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    res.writeHead(404).end();
  });
  server.on('upgrade', (req, socket) => {
    paths.push(req.url ?? '');
    if (mode === 'silent') return;
    if (mode === 'refuse') {
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const key = String(req.headers['sec-websocket-key']);
    const accept = createHash('sha1').update(mode === 'accept' ? `${key}258EAFA5-E914-47DA-95CA-C5AB0DC11B65` : 'wrong').digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    socket.on('data', () => socket.end());
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/llm-websocket`, paths };
}

describe('test-custom-llm-connection', () => {
  const test = (body: Record<string, unknown>) => app.api.post('/test-custom-llm-connection', { body });

  it('opens a WebSocket at <url>/<call_id> and reports the handshake time', async () => {
    const ws = await fakeWebSocketServer('accept');
    const res = await test({ llm_websocket_url: ws.url });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, latency_ms: expect.any(Number), error: null });
    expect(ws.paths[0]).toMatch(/^\/llm-websocket\/call_[0-9a-f]{24}$/);
  });

  it.each([
    ['refuse', 'Server answered HTTP 403 instead of switching to WebSocket'],
    ['wrong-accept', 'Server answered with a wrong Sec-WebSocket-Accept'],
    ['silent', 'Timed out after 500 ms'],
  ] as const)('reports a server that does %s', async (mode, error) => {
    const ws = await fakeWebSocketServer(mode);
    const res = await test({ llm_websocket_url: ws.url, timeout_ms: 500 });
    expect(res.body).toEqual({ success: false, latency_ms: null, error });
  });

  it('reports a refused connection and rejects URLs that are not ws:// or wss://', async () => {
    expect((await test({ llm_websocket_url: `ws://127.0.0.1:${await closedPort()}/x` })).body).toEqual({
      success: false,
      latency_ms: null,
      error: 'Connection failed: ECONNREFUSED',
    });
    expect((await test({ llm_websocket_url: 'https://llm.example.com' })).body).toEqual({
      status: 400,
      message: 'llm_websocket_url: Must be a ws:// or wss:// URL',
    });
  });
});
