import type Retell from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { DEFAULT_VOICE_ID } from '../../shared/voices/voices.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent as newAgentVia, newChatAgent } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

const app = await startTestApp();
const retell = retellClient(app.url, app.workspace.api_key);


async function newLlm(overrides: Record<string, unknown> = {}) {
  return retell.llm.create({ general_prompt: 'You are a helpful receptionist.', ...overrides });
}

async function newAgent(overrides: Record<string, unknown> = {}) {
  const llm = await newLlm();
  const agent = await retell.agent.create({
    response_engine: { type: 'retell-llm', llm_id: llm.llm_id },
    ...overrides,
  } as Retell.AgentCreateParams);
  return { agent, llm };
}

describe('Retell LLMs', () => {
  it('creates with the default model and reads back through the client', async () => {
    const llm = await newLlm();
    expect(llm).toMatchObject({ version: 0, is_published: false, model: 'gpt-4.1', start_speaker: 'agent' });
    expect(llm.llm_id).toMatch(/^llm_[0-9a-f]{24}$/);
    expect(await retell.llm.retrieve(llm.llm_id)).toEqual(llm);
    const listed = await retell.llm.list();
    expect(listed.items.map((l) => l.llm_id)).toContain(llm.llm_id);
    expect(listed.has_more).toBe(false);
    const array = await app.api.get('/list-retell-llms');
    expect(array.body).toEqual(listed.items);
  });

  it.each([
    [{ model: 'gpt-3.5-turbo' }, 'model: Unknown model "gpt-3.5-turbo"; use one of gpt-4.1, gpt-4.1-mini, gpt-4.1-nano, gpt-5, gpt-5-mini, gpt-5-nano, gemini-3.0-flash, gemini-3.1-flash-lite, gemini-3.5-flash, gemini-3.5-flash-lite, gemini-3.6-flash, claude-4.5-sonnet, claude-4.6-sonnet, claude-4.5-haiku'],
    [{ s2s_model: 'gpt-4o' }, 'model'],
    [{ model_temperature: 2 }, 'model_temperature: Must be at most 1'],
    [
      { states: [{ name: 'greet', edges: [{ destination_state_name: 'nowhere', description: 'x' }] }], starting_state: 'greet' },
      'states.0.edges.0.destination_state_name: No state named "nowhere"',
    ],
    [{ states: [{ name: 'a' }], starting_state: 'b' }, 'starting_state: No state named "b"'],
  ])('rejects %j with a 400 naming the field, writing nothing', async (body, message) => {
    const before = (await retell.llm.list()).items.length;
    const res = await sdkFailure(retell.llm.create(body as Retell.LlmCreateParams));
    expect(res.status).toBe(400);
    if (message === 'model') expect(res.body.message).toMatch(/^s2s_model: Unknown realtime model "gpt-4o"/);
    else expect(res.body).toEqual({ status: 400, message });
    expect((await retell.llm.list()).items.length).toBe(before);
  });

  it('refuses to delete an engine an agent runs, unless forced', async () => {
    const { agent, llm } = await newAgent();
    const refused = await sdkFailure(retell.llm.delete(llm.llm_id));
    expect(refused.status).toBe(409);
    expect(refused.body.message).toBe(
      `Retell LLM ${llm.llm_id} is used by agent ${agent.agent_id}; point them at another engine first, or delete with force_delete=true`,
    );
    const forced = await app.api.delete(`/delete-retell-llm/${llm.llm_id}?force_delete=true`);
    expect(forced.status).toBe(204);
    expect((await sdkFailure(retell.llm.retrieve(llm.llm_id))).status).toBe(404);
  });
});

describe('agents', () => {
  it('fills the spec defaults and pins the engine version', async () => {
    const { agent, llm } = await newAgent();
    expect(agent).toMatchObject({
      version: 0,
      is_published: false,
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id, version: 0 },
      voice_id: DEFAULT_VOICE_ID,
      language: 'en-AU',
      timezone: 'Australia/Sydney',
      responsiveness: 1,
      interruption_sensitivity: 0.9,
      stt_mode: 'fast',
      denoising_mode: 'noise-cancellation',
      end_call_after_silence_ms: 600000,
      max_call_duration_ms: 3600000,
      webhook_url: null,
      webhook_events: ['call_started', 'call_ended', 'call_analyzed'],
    });
    expect(agent).not.toHaveProperty('webhook_timeout_ms');
    expect(await retell.agent.retrieve(agent.agent_id)).toEqual(agent);
  });

  it('keeps given fields and drops unknown and server-controlled ones', async () => {
    const { agent } = await newAgent({
      agent_name: 'Front desk',
      language: 'en-US',
      webhook_url: 'https://hooks.example.com/calls',
      webhook_events: ['call_ended', 'transcript_updated', 'call_ended'],
      webhook_timeout_ms: 5000,
      version: 42,
      is_published: true,
      agent_id: 'agent_000000000000000000000000',
      favourite_colour: 'blue',
    });
    expect(agent).toMatchObject({
      agent_name: 'Front desk',
      language: 'en-US',
      webhook_url: 'https://hooks.example.com/calls',
      webhook_events: ['call_ended', 'transcript_updated'],
      webhook_timeout_ms: 5000,
      version: 0,
      is_published: false,
    });
    expect(agent.agent_id).not.toBe('agent_000000000000000000000000');
    expect(agent).not.toHaveProperty('favourite_colour');
  });

  it('lists through every spelling: GET array (and alias), the client’s paged POST', async () => {
    const own = await app.newWorkspace();
    const ownClient = retellClient(app.url, own.api_key);
    const llm = await ownClient.llm.create({});
    const created = [];
    for (const name of ['one', 'two', 'three']) {
      created.push(await ownClient.agent.create({ agent_name: name, response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } as Retell.AgentCreateParams));
    }
    const array = await own.api.get('/v2/list-agents');
    expect(array.body.map((a: { agent_name: string }) => a.agent_name)).toEqual(['three', 'two', 'one']);
    expect((await own.api.get('/list-agents')).body).toEqual(array.body);

    const page1 = await ownClient.agent.list({ limit: 2 });
    expect(page1.items.map((i) => i.agent_name)).toEqual(['three', 'two']);
    expect(page1).toMatchObject({ has_more: true, pagination_key: created[1]!.agent_id });
    const page2 = await ownClient.agent.list({ limit: 2, pagination_key: page1.pagination_key });
    expect(page2.items.map((i) => i.agent_name)).toEqual(['one']);
    expect(page2.has_more).toBe(false);
    expect(page2.items[0]).toMatchObject({ channel: 'voice', version: 0, tags: {} });

    const searched = await ownClient.agent.list({ filter_criteria: { query: 'tw' } });
    expect(searched.items.map((i) => i.agent_name)).toEqual(['two']);
    const chatOnly = await ownClient.agent.list({ filter_criteria: { channel: { op: 'eq', type: 'string', value: 'chat' } } });
    expect(chatOnly.items).toEqual([]);

    const bad = await own.api.get('/v2/list-agents?pagination_key=agent_000000000000000000000000');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('Invalid pagination_key');
  });

  it.each([
    [{ response_engine: { type: 'retell-llm', llm_id: 'llm_000000000000000000000000' } }, 'response_engine.llm_id: Retell LLM llm_000000000000000000000000 not found'],
    [{ response_engine: { type: 'retell-llm', llm_id: 'agent_000000000000000000000000' } }, 'response_engine.llm_id: Must be a Retell LLM ID (llm_ followed by 24 hex characters)'],
    [{ response_engine: { type: 'custom-llm', llm_websocket_url: 'https://x.example' } }, 'response_engine.llm_websocket_url: Must be a ws:// or wss:// URL'],
    [{ response_engine: { type: 'gpt' } }, 'response_engine.type'],
    [{ webhook_url: 'ftp://x.example' }, 'webhook_url: Must be an http:// or https:// URL'],
    [{ webhook_events: ['call_started', 'chat_started'] }, 'webhook_events.1: Expected one of'],
    [{ webhook_timeout_ms: 999 }, 'webhook_timeout_ms: Must be at least 1000'],
    [{ webhook_timeout_ms: 60_001 }, 'webhook_timeout_ms: Must be at most 60000'],
    [{ post_call_analysis_model: 'gpt-2' }, 'post_call_analysis_model: Unknown model "gpt-2"'],
    [{ timezone: 'Mars/Olympus' }, 'timezone: Must be an IANA time zone such as Australia/Sydney'],
    [{ voice_id: 'nobody-Nothing' }, 'voice_id'],
  ])('rejects %j and writes nothing', async (overrides, message) => {
    const llm = await newLlm();
    const before = (await app.api.get('/v2/list-agents')).body.length;
    const res = await app.api.post('/create-agent', {
      body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, ...overrides },
    });
    expect(res.status).toBe(400);
    expect(res.body.message.startsWith(message)).toBe(true);
    expect((await app.api.get('/v2/list-agents')).body.length).toBe(before);
  });

  it('refuses an engine of another workspace exactly like a missing one', async () => {
    const other = await app.newWorkspace();
    const foreign = (await other.api.post('/create-retell-llm', { body: {} })).body;
    const res = await app.api.post('/create-agent', { body: { response_engine: { type: 'retell-llm', llm_id: foreign.llm_id } } });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(`response_engine.llm_id: Retell LLM ${foreign.llm_id} not found`);
  });

  it('answers 404 for another workspace’s agent and for a missing one', async () => {
    const other = await app.newWorkspace();
    const llm = (await other.api.post('/create-retell-llm', { body: {} })).body;
    const foreign = (await other.api.post('/create-agent', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } })).body;
    for (const res of [
      await app.api.get(`/get-agent/${foreign.agent_id}`),
      await app.api.patch(`/update-agent/${foreign.agent_id}`, { body: { agent_name: 'mine' } }),
      await app.api.delete(`/delete-agent/${foreign.agent_id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Agent ${foreign.agent_id} not found` });
    }
    expect((await other.api.get(`/get-agent/${foreign.agent_id}`)).body.agent_name).toBeUndefined();
  });

  it('needs the agents scope', async () => {
    const key = (await app.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
    const res = await app.api.withKey(key).get('/v2/list-agents');
    expect(res.status).toBe(403);
    expect(res.body.message).toBe('This API key lacks the "agents" scope');
  });

  it('deletes an agent with its versions and tags', async () => {
    const { agent } = await newAgent();
    await retell.agent.publish(agent.agent_id, { version: 0 });
    await app.api.post(`/agents/${agent.agent_id}/tags`, { body: { name: 'prod', version: 0 } });
    await retell.agent.delete(agent.agent_id);
    expect((await sdkFailure(retell.agent.retrieve(agent.agent_id))).status).toBe(404);
    expect((await app.api.get(`/agent-versions/${agent.agent_id}`)).status).toBe(404);
    expect((await app.api.get(`/agents/${agent.agent_id}/tags`)).status).toBe(404);
  });
});

describe('agent versions', () => {
  it('edits the draft in place, publishes it with its engine, and never changes a published version', async () => {
    const { agent, llm } = await newAgent({ agent_name: 'v0' });
    const edited = await retell.agent.update(agent.agent_id, { agent_name: 'v0 edited' });
    expect(edited).toMatchObject({ version: 0, is_published: false, agent_name: 'v0 edited' });

    await retell.agent.publish(agent.agent_id, { version: 0, version_title: 'launch' });
    const published = await retell.agent.retrieve(agent.agent_id, { version: 0 });
    expect(published).toMatchObject({ version: 0, is_published: true, version_title: 'launch' });
    expect(await retell.llm.retrieve(llm.llm_id, { version: 0 })).toMatchObject({ is_published: true });

    const refused = await sdkFailure(retell.agent.update(agent.agent_id, { agent_name: 'sneaky', version: 0 }));
    expect(refused).toEqual({
      status: 400,
      body: { status: 400, message: `Version 0 of agent ${agent.agent_id} is published and cannot be changed; create a new version from it` },
    });

    const next = await retell.agent.update(agent.agent_id, { agent_name: 'v1' });
    expect(next).toMatchObject({ version: 1, is_published: false, base_version: 0, agent_name: 'v1' });
    expect(next.response_engine).toEqual({ type: 'retell-llm', llm_id: llm.llm_id, version: 1 });
    expect(await retell.llm.retrieve(llm.llm_id)).toMatchObject({ version: 1, is_published: false });

    await retell.llm.update(llm.llm_id, { general_prompt: 'changed' });
    expect((await retell.llm.retrieve(llm.llm_id, { version: 0 })).general_prompt).toBe('You are a helpful receptionist.');
    expect(await retell.agent.retrieve(agent.agent_id, { version: 0 })).toEqual(published);
  });

  it('branches a new draft from any version, lists, compares and deletes versions', async () => {
    const { agent } = await newAgent({ agent_name: 'base' });
    await retell.agent.publish(agent.agent_id, { version: 0 });
    await retell.agent.update(agent.agent_id, { agent_name: 'second', responsiveness: 0.5 });
    const third = await retell.agent.createVersion(agent.agent_id, { base_version: 0 });
    expect(third).toMatchObject({ version: 2, base_version: 0, agent_name: 'base', is_published: false });

    const page = await retell.agent.listVersions(agent.agent_id, { limit: 2 });
    expect(page.items.map((i) => [i.version, i.is_published])).toEqual([[2, false], [1, false]]);
    expect(page).toMatchObject({ has_more: true, pagination_key: '1' });
    const rest = await retell.agent.listVersions(agent.agent_id, { limit: 2, pagination_key: page.pagination_key! });
    expect(rest.items.map((i) => i.version)).toEqual([0]);

    const full = await retell.agent.getVersions(agent.agent_id);
    expect(full.map((v) => v.version)).toEqual([0, 1, 2]);
    expect((await app.api.get(`/agent-versions/${agent.agent_id}`)).body).toEqual(full);

    const diff = (await app.api.get(`/compare-agent-versions/${agent.agent_id}?version_a=0&version_b=1`)).body;
    expect(diff.differences).toEqual([
      { field: 'agent_name', version_a: 'base', version_b: 'second' },
      { field: 'is_published', version_a: true, version_b: false },
      { field: 'response_engine.version', version_a: 0, version_b: 1 },
      { field: 'responsiveness', version_a: 1, version_b: 0.5 },
    ]);

    const described = await app.api.patch(`/agent-versions/${agent.agent_id}/0`, { body: { version_description: 'first release' } });
    expect(described.body).toMatchObject({ version: 0, is_published: true, version_description: 'first release' });

    expect((await app.api.delete(`/agent-versions/${agent.agent_id}/0`)).body.message).toBe(
      `Version 0 of agent ${agent.agent_id} is published and cannot be deleted`,
    );
    expect((await app.api.delete(`/agent-versions/${agent.agent_id}/2`)).body.message).toBe(
      `Version 2 is the latest version of agent ${agent.agent_id} and cannot be deleted`,
    );
    await retell.agent.deleteVersion(agent.agent_id, { version: 1 });
    expect((await retell.agent.getVersions(agent.agent_id)).map((v) => v.version)).toEqual([0, 2]);
    expect((await app.api.get(`/get-agent/${agent.agent_id}?version=1`)).status).toBe(404);
  });

  it('rejects versions that do not exist', async () => {
    const { agent } = await newAgent();
    expect((await app.api.get(`/get-agent/${agent.agent_id}?version=9`)).body).toEqual({
      status: 404,
      message: `Agent ${agent.agent_id} has no version 9`,
    });
    expect((await app.api.post(`/create-agent-version/${agent.agent_id}`, { body: { base_version: 9 } })).status).toBe(404);
    expect((await app.api.post(`/publish-agent-version/${agent.agent_id}`, { body: { version: 9 } })).status).toBe(404);
    expect((await app.api.get(`/get-agent/${agent.agent_id}?version=-1`)).status).toBe(400);
    expect((await app.api.get(`/agent-versions/${agent.agent_id}/x1`)).status).toBe(404);
  });
});

describe('environment tags and version references', () => {
  it('names versions with tags that carry variables, and resolves every kind of reference', async () => {
    const { agent } = await newAgent();
    await retell.agent.publish(agent.agent_id, { version: 0 });
    await retell.agent.update(agent.agent_id, { agent_name: 'draft' });

    const tag = await app.api.post(`/agents/${agent.agent_id}/tags`, {
      body: { name: 'production', version: 0, variables: { region: 'au' } },
    });
    expect(tag.status).toBe(201);
    expect(tag.body).toMatchObject({ name: 'production', version: 0, variables: { region: 'au' } });

    const resolve = async (reference: string) =>
      (await app.api.get(`/resolve-agent-version/${agent.agent_id}?version=${reference}`)).body;
    expect(await resolve('latest')).toMatchObject({ version: 1, resolved_from: 'latest', is_published: false });
    expect(await resolve('latest_published')).toMatchObject({ version: 0, resolved_from: 'latest_published' });
    expect(await resolve('1')).toMatchObject({ version: 1, resolved_from: 'version' });
    expect(await resolve('production')).toMatchObject({ version: 0, resolved_from: 'tag', tag: 'production', variables: { region: 'au' } });
    expect((await app.api.get(`/resolve-agent-version/${agent.agent_id}?version=staging`)).body).toEqual({
      status: 404,
      message: `Agent ${agent.agent_id} has no version or tag "staging"`,
    });

    const moved = await app.api.patch(`/agents/${agent.agent_id}/tags/production`, { body: { version: 1 } });
    expect(moved.body).toMatchObject({ version: 1, variables: { region: 'au' } });
    expect((await app.api.get(`/agents/${agent.agent_id}/tags`)).body.map((t: { name: string }) => t.name)).toEqual(['production']);
    expect((await app.api.delete(`/agents/${agent.agent_id}/tags/production`)).status).toBe(204);
    expect((await app.api.delete(`/agents/${agent.agent_id}/tags/production`)).status).toBe(404);
  });

  it.each([
    [{ name: 'latest', version: 0 }, 400, 'name: Must not be "latest" or "latest_published"'],
    [{ name: '12', version: 0 }, 400, 'name: Must not be a number (numbers name versions)'],
    [{ name: 'has space', version: 0 }, 400, 'name: Must be 1 to 64 letters'],
    [{ name: 'ok', version: 5 }, 400, 'version: Agent'],
  ])('rejects the tag %j', async (body, status, message) => {
    const { agent } = await newAgent();
    const res = await app.api.post(`/agents/${agent.agent_id}/tags`, { body });
    expect(res.status).toBe(status);
    expect(res.body.message.startsWith(message)).toBe(true);
    expect((await app.api.get(`/agents/${agent.agent_id}/tags`)).body).toEqual([]);
  });

  it('refuses a clashing tag name and a deletion of a tagged version', async () => {
    const { agent } = await newAgent();
    await retell.agent.createVersion(agent.agent_id, { base_version: 0 });
    await app.api.post(`/agents/${agent.agent_id}/tags`, { body: { name: 'staging', version: 0 } });
    const clash = await app.api.post(`/agents/${agent.agent_id}/tags`, { body: { name: 'staging', version: 1 } });
    expect(clash.status).toBe(409);
    expect(clash.body.message).toBe(`A tag named "staging" already exists on agent ${agent.agent_id}`);
    const tagged = await app.api.delete(`/agent-versions/${agent.agent_id}/0`);
    expect(tagged.status).toBe(409);
    expect(tagged.body.message).toBe(`Version 0 of agent ${agent.agent_id} is named by tag "staging"; move or delete the tag first`);
  });
});

describe('the version paths voice and chat agents share', () => {
  it('lets the client publish, branch, delete versions of and list chat agents through the agent paths', async () => {
    const own = await app.newWorkspace();
    const client = retellClient(app.url, own.api_key);
    const llm = await client.llm.create({});
    const voice = await client.agent.create({ agent_name: 'voice one', response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } as Retell.AgentCreateParams);
    const chat = await client.chatAgent.create({ agent_name: 'chat one', response_engine: { type: 'retell-llm', llm_id: llm.llm_id } } as Retell.ChatAgentCreateParams);

    await client.chatAgent.publish(chat.agent_id, { version: 0 });
    expect(await client.chatAgent.retrieve(chat.agent_id)).toMatchObject({ version: 0, is_published: true });
    const branched = await client.chatAgent.createVersion(chat.agent_id, { base_version: 0 });
    expect(branched).toMatchObject({ agent_id: chat.agent_id, version: 1, is_published: false });
    await client.chatAgent.createVersion(chat.agent_id, { base_version: 0 });
    await client.chatAgent.deleteVersion(chat.agent_id, { version: 1 });
    expect((await client.chatAgent.getVersions(chat.agent_id)).map((v) => v.version)).toEqual([0, 2]);
    const refused = await sdkFailure(client.chatAgent.deleteVersion(chat.agent_id, { version: 0 }));
    expect(refused.body.message).toBe(`Version 0 of chat agent ${chat.agent_id} is published and cannot be deleted`);

    const all = await client.agent.list();
    expect(all.items.map((i) => [i.agent_name, i.channel])).toEqual([
      ['chat one', 'chat'],
      ['voice one', 'voice'],
    ]);
    const chats = await client.chatAgent.list({ filter_criteria: { channel: { op: 'eq', type: 'string', value: 'chat' } } });
    expect(chats.items.map((i) => i.agent_id)).toEqual([chat.agent_id]);
    const voices = await client.agent.list({ filter_criteria: { channel: { op: 'ne', type: 'string', value: 'chat' } } });
    expect(voices.items.map((i) => i.agent_id)).toEqual([voice.agent_id]);

    const malformed = await own.api.post('/publish-agent-version/llm_000000000000000000000000', { body: {} });
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toBe(
      'agent_id: Must be an agent or chat agent ID (agent_ or chat_agent_ followed by 24 hex characters)',
    );
  });
});

describe('paging the list of voice and chat agents', () => {
  /** Every page of `list`, following each pagination key it hands out. */
  async function walk(list: (key?: string) => Promise<{ items: { agent_id: string }[]; has_more: boolean; pagination_key?: string }>) {
    const seen: string[] = [];
    let key: string | undefined;
    for (let pages = 0; pages < 50; pages++) {
      const page = await list(key);
      seen.push(...page.items.map((item) => item.agent_id));
      if (!page.has_more) return seen;
      expect(page.pagination_key).toBe(page.items.at(-1)!.agent_id);
      key = page.pagination_key;
    }
    throw new Error('the list never ended');
  }

  it('takes back every pagination key it hands out, chat agent IDs included, and shows each agent once in both orders', async () => {
    const own = await app.newWorkspace();
    const client = retellClient(app.url, own.api_key);
    const created: string[] = [];
    for (let i = 0; i < 3; i++) {
      created.push((await newAgentVia(own.api, { agent: { agent_name: `voice ${i}` } })).agent.agent_id);
      created.push((await newChatAgent(own.api, { chatAgent: { agent_name: `chat ${i}` } })).chatAgent.agent_id);
    }
    const ids = async (sort_order: 'ascending' | 'descending') => (await client.agent.list({ sort_order })).items.map((item) => item.agent_id);
    const ascending = await ids('ascending');
    expect([...ascending].sort()).toEqual([...created].sort());
    expect(await ids('descending')).toEqual([...ascending].reverse());
    for (const [sort_order, expected] of [['descending', [...ascending].reverse()], ['ascending', ascending]] as const) {
      for (const limit of [1, 2, 4]) {
        expect(await walk((pagination_key) => client.agent.list({ limit, sort_order, pagination_key }))).toEqual(expected);
      }
      const chats = expected.filter((id) => id.startsWith('chat_agent_'));
      const chatOnly = { channel: { op: 'eq', type: 'string', value: 'chat' } } as const;
      expect(await walk((pagination_key) => client.chatAgent.list({ limit: 1, sort_order, pagination_key, filter_criteria: chatOnly }))).toEqual(chats);
    }

    const foreign = (await newChatAgent(app.api)).chatAgent.agent_id;
    expect(await sdkFailure(client.agent.list({ limit: 1, pagination_key: foreign }))).toEqual({
      status: 400,
      body: { status: 400, message: 'Invalid pagination_key' },
    });
    expect(await sdkFailure(client.agent.list({ limit: 1, pagination_key: 'llm_000000000000000000000000' }))).toEqual({
      status: 400,
      body: { status: 400, message: 'pagination_key: Must be an agent or chat agent ID (agent_ or chat_agent_ followed by 24 hex characters)' },
    });
  });
});

// The modules the phone-number and batch features will use to bind agents.
const { addAgentReferenceItems, removeAgentReferenceItems } = await import('../../shared/agents/bindings/references.ts');
const { commit } = await import('../../shared/platform/store/versions.ts');

describe('deleting an agent that phone numbers or batch calls use', () => {
  const ws = app.workspace.workspace_id;

  it('is refused with 409 naming them, until they let go of the agent', async () => {
    const { agent } = await newAgent();
    const number = { type: 'phone_number' as const, id: '+61290000000' };
    const batch = { type: 'batch_call' as const, id: 'batch_call_000000000000000000000001' };
    await commit(addAgentReferenceItems(ws, 'agent', agent.agent_id, number));
    await commit(addAgentReferenceItems(ws, 'agent', agent.agent_id, batch));

    const refused = await app.api.delete(`/delete-agent/${agent.agent_id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toBe(
      `Agent ${agent.agent_id} is used by batch call ${batch.id}, phone number ${number.id}; remove the agent from them before deleting it`,
    );
    expect((await app.api.get(`/get-agent/${agent.agent_id}`)).status).toBe(200);

    await commit(removeAgentReferenceItems(ws, 'agent', agent.agent_id, number));
    await commit(removeAgentReferenceItems(ws, 'agent', agent.agent_id, batch));
    expect((await app.api.delete(`/delete-agent/${agent.agent_id}`)).status).toBe(204);
  });

  it('never lets a delete and a new reference both succeed when they race', async () => {
    for (let round = 0; round < 8; round++) {
      const { agent } = await newAgent();
      const [deleted, referenced] = await Promise.all([
        app.api.delete(`/delete-agent/${agent.agent_id}`),
        commit(addAgentReferenceItems(ws, 'agent', agent.agent_id, { type: 'phone_number', id: `+6129000000${round}` })).then(
          () => true,
          () => false,
        ),
      ]);
      expect(deleted.status === 204 && referenced).toBe(false);
      expect(deleted.status === 204 || referenced).toBe(true);
      if (referenced) expect((await app.api.get(`/get-agent/${agent.agent_id}`)).status).toBe(200);
    }
  });
});
