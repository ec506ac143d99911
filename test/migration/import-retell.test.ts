import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { toFile } from 'retell-sdk';
import type { AgentListResponse, AgentResponse } from 'retell-sdk/resources/agent';
import type { KnowledgeBaseResponse } from 'retell-sdk/resources/knowledge-base';
import type { LlmResponse } from 'retell-sdk/resources/llm';
import type { PhoneNumberResponse } from 'retell-sdk/resources/phone-number';
import type { VoiceResponse } from 'retell-sdk/resources/voice';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startLocalServer } from '../../local/server.ts';
import { importRetell, type ImportOptions } from '../../local/migration/import-retell.ts';
import { FatalError } from '../../local/migration/client.ts';
import { mintImportKey, runImport } from '../../local/migration/command.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { runCli, runCliOnTerminal } from '../support/cli.ts';
import { freshNumber } from '../support/factories.ts';
import { html, startSite } from '../support/kb-fixtures.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * import-retell end to end: Parley speaks Retell's API, so one Parley workspace, served by
 * its own HTTP server, is the source account and fresh workspaces served by another are the
 * targets. The importer reaches both only by URL and key, as it reaches Retell.
 */

type Json = Record<string, any>;

const app = await startTestApp();
const targetServer = await startLocalServer({ port: 0, host: '127.0.0.1' });
afterAll(() => targetServer.close());
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'kb-jobs'));
afterAll(() => background.stop());
const site = await startSite({
  '/faq.html': ['text/html', html('FAQ', '<p>Parcels ship every Tuesday.</p>')],
  // A text source's content as Retell serves it at its content_url.
  '/returns.txt': ['text/plain', 'Returns within 30 days.'],
});

const dir = mkdtempSync(join(tmpdir(), 'import-retell-'));
let prefixes = 0;
const nextPrefix = () => join(dir, `mapping-${++prefixes}`);

const sourceWs = await app.newWorkspace();
const source = retellClient(app.url, sourceWs.api_key);

async function newTarget() {
  const ws = await app.newWorkspace();
  return { ws, client: retellClient(targetServer.url, ws.api_key) };
}

const options = (targetKey: string, overrides: Partial<ImportOptions> = {}): ImportOptions => ({
  from: { url: app.url, key: sourceWs.api_key },
  to: { url: targetServer.url, key: targetKey },
  mappingPrefix: nextPrefix(),
  sleep: async () => {},
  ...overrides,
});

const prompt = (text: string) => ({ type: 'prompt' as const, text });
const edge = (id: string, to: string) => ({ id, transition_condition: { type: 'prompt' as const, prompt: 'Then' }, destination_node_id: to });

// The source account: what a Retell customer has.
const s: Record<string, any> = {};
beforeAll(async () => {
  const kb = await source.knowledgeBase.create({
    knowledge_base_name: 'Shop help',
    knowledge_base_texts: [{ title: 'Hours', text: 'Open nine to five on weekdays.' }],
    knowledge_base_urls: [`${site.url}/faq.html`],
  });
  await eventually(() => source.knowledgeBase.retrieve(kb.knowledge_base_id), (k) => k.status === 'complete', 15_000);
  s.kb = kb;
  s.component = await source.conversationFlowComponent.create({
    name: 'Collect name',
    nodes: [
      { id: 'ask', type: 'conversation', instruction: prompt('Ask for their name.'), edges: [edge('got', 'done')] },
      { id: 'done', type: 'end' },
    ],
  } as never);
  // The agent transfers go to.
  s.supportLlm = await source.llm.create({ general_prompt: 'You are the support desk.' } as never);
  s.support = await source.agent.create({ agent_name: 'Support', response_engine: { type: 'retell-llm', llm_id: s.supportLlm.llm_id }, voice_id: '11labs-Adrian' } as never);
  // Sales: versions 0 and 1 published, 2 a draft; its LLM reads the knowledge base.
  s.salesLlm = await source.llm.create({
    general_prompt: 'You sell shoes. v0',
    begin_message: 'Hello!',
    knowledge_base_ids: [kb.knowledge_base_id],
    general_tools: [{ type: 'end_call', name: 'end_call', description: 'End the call.' }],
  } as never);
  s.sales = await source.agent.create({
    agent_name: 'Sales',
    response_engine: { type: 'retell-llm', llm_id: s.salesLlm.llm_id },
    voice_id: '11labs-Adrian',
    webhook_url: 'https://hooks.example.com/sales',
    post_call_analysis_data: [{ type: 'string', name: 'size', description: 'Shoe size' }],
    interruption_sensitivity: 0.5,
  } as never);
  await source.agent.publish(s.sales.agent_id, { version: 0, version_title: 'Launch' });
  await source.agent.update(s.sales.agent_id, { responsiveness: 0.7 } as never);
  await source.llm.update(s.salesLlm.llm_id, { general_prompt: 'You sell shoes. v1' } as never);
  await source.agent.publish(s.sales.agent_id, { version: 1 });
  await source.agent.update(s.sales.agent_id, { agent_name: 'Sales desk' } as never);
  await source.llm.update(s.salesLlm.llm_id, { general_prompt: 'You sell shoes. v2' } as never);
  await sourceWs.api.post(`/agents/${s.sales.agent_id}/tags`, { body: { name: 'production', version: 1, variables: { region: 'eu' } } });
  // A flow using the shared component, with a transfer to Support.
  s.flow = await source.conversationFlow.create({
    model_choice: { model: 'gpt-4.1', type: 'cascading' },
    start_speaker: 'agent',
    start_node_id: 'hi',
    global_prompt: 'Route callers.',
    knowledge_base_ids: [kb.knowledge_base_id],
    nodes: [
      { id: 'hi', type: 'conversation', instruction: prompt('Greet them.'), edges: [edge('to-name', 'name')] },
      { id: 'name', type: 'component', component_id: s.component.conversation_flow_component_id, component_type: 'shared', else_edge: edge('after', 'swap') },
      { id: 'swap', type: 'agent_swap', agent_id: s.support.agent_id, edge: edge('swapped', 'bye'), post_call_analysis_setting: 'both_agents' },
      { id: 'bye', type: 'end' },
    ],
  } as never);
  s.router = await source.agent.create({ agent_name: 'Router', response_engine: { type: 'conversation-flow', conversation_flow_id: s.flow.conversation_flow_id } } as never);
  // A chat agent, published once.
  s.chatLlm = await source.llm.create({ general_prompt: 'You answer chats.' } as never);
  s.chat = await source.chatAgent.create({ agent_name: 'Web chat', response_engine: { type: 'retell-llm', llm_id: s.chatLlm.llm_id }, auto_close_message: 'Bye' } as never);
  await source.chatAgent.publish(s.chat.agent_id, { version: 0 });
  // A number imported over SIP, bound to Sales.
  s.number = await source.phoneNumber.import({
    phone_number: freshNumber(),
    termination_uri: 'sip:trunk.example.com',
    sip_trunk_auth_username: 'shop',
    sip_trunk_auth_password: 'secret-pass',
    nickname: 'Front desk',
    inbound_agents: [{ agent_id: s.sales.agent_id, weight: 1 }],
  } as never);
  s.test = await source.tests.createTestCaseDefinition({
    name: 'Asks for a size',
    user_prompt: 'You want running shoes.',
    metrics: ['The agent asks for the shoe size'],
    response_engine: { type: 'retell-llm', llm_id: s.salesLlm.llm_id },
  } as never);
}, 30_000);

/** A phone number belongs to one workspace of a Parley: as it leaves Retell for Parley, the test releases it once read. */
const releaseNumber = async () => {
  await source.phoneNumber.delete(s.number.phone_number).catch(() => {});
};

/** Top-level fields that name or date the object itself. */
const OWN = ['llm_id', 'agent_id', 'conversation_flow_id', 'conversation_flow_component_id', 'knowledge_base_id', 'test_case_definition_id', 'version'];
/** An object as compared across accounts: no IDs of its own, no timestamps, references through the mapping. */
function comparable(object: Json, ids: Map<string, string>, drop: readonly string[] = []): Json {
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return ids.get(value) ?? value;
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    return value;
  };
  const kept = Object.fromEntries(
    Object.entries(object).filter(([key]) => !drop.includes(key) && !OWN.includes(key) && !key.endsWith('_timestamp') && key !== 'imported_from'),
  );
  return walk(kept) as Json;
}

describe('import into a fresh workspace', () => {
  let target: Awaited<ReturnType<typeof newTarget>>;
  let ids: Map<string, string>;
  let prefix: string;
  let firstRun: Awaited<ReturnType<typeof importRetell>>;

  beforeAll(async () => {
    target = await newTarget();
    prefix = nextPrefix();
    firstRun = await importRetell(options(target.ws.api_key, { mappingPrefix: prefix, afterRead: releaseNumber }));
    ids = new Map(firstRun.mapping.map((entry) => [entry.source_id, entry.parley_id]));
  }, 30_000);

  it('moves every object, reports each, and writes the mapping as JSON and CSV', async () => {
    const byKind = (kind: string) => firstRun.rows.filter((row) => row.kind === kind).map((row) => [row.source_id, row.status]);
    expect(firstRun.rows.filter((row) => row.status === 'failed')).toEqual([]);
    expect(firstRun.exitCode).toBe(0);
    expect(byKind('knowledge base')).toEqual([[s.kb.knowledge_base_id, 'moved']]);
    expect(byKind('component')).toEqual([[s.component.conversation_flow_component_id, 'moved']]);
    expect(byKind('llm').sort()).toEqual([[s.chatLlm.llm_id, 'moved'], [s.salesLlm.llm_id, 'moved'], [s.supportLlm.llm_id, 'moved']].sort());
    expect(byKind('flow')).toEqual([[s.flow.conversation_flow_id, 'moved']]);
    expect(byKind('agent').sort()).toEqual([[s.router.agent_id, 'moved'], [s.sales.agent_id, 'moved'], [s.support.agent_id, 'moved']].sort());
    expect(byKind('chat agent')).toEqual([[s.chat.agent_id, 'moved']]);
    expect(byKind('number')).toEqual([[s.number.phone_number, 'moved']]);
    expect(byKind('test case')).toEqual([[s.test.test_case_definition_id, 'moved']]);
    expect(firstRun.rows.find((row) => row.kind === 'secret')).toMatchObject({ status: 'not movable', source_id: s.number.phone_number, detail: expect.stringContaining('auth_password') });
    expect(firstRun.rows.find((row) => row.source_id === s.sales.agent_id)?.detail).toBe('versions 0, 1, 2; tags production');

    const json = JSON.parse(readFileSync(`${prefix}.json`, 'utf8'));
    expect(json).toMatchObject({ source_url: app.url, target_url: targetServer.url });
    expect(json.objects).toHaveLength(12);
    expect(json.objects.find((entry: Json) => entry.source_id === s.sales.agent_id)).toEqual({
      kind: 'agent', name: 'Sales desk', source_id: s.sales.agent_id, parley_id: ids.get(s.sales.agent_id), versions: { 0: 0, 1: 1, 2: 2 },
    });
    const csv = readFileSync(`${prefix}.csv`, 'utf8').trim().split('\n');
    expect(csv[0]).toBe('kind,source_id,parley_id,name');
    expect(csv).toContain(`agent,${s.sales.agent_id},${ids.get(s.sales.agent_id)},Sales desk`);
    expect(csv).toHaveLength(13);
    expect(existsSync(`${prefix}.state.json`)).toBe(false);
  });

  it('keeps each object as it was, field by field, with every reference pointing at the moved objects', async () => {
    const t = target.client;
    // Engines: the latest versions.
    for (const llm of [s.salesLlm, s.supportLlm, s.chatLlm]) {
      const [from, to] = [await source.llm.retrieve(llm.llm_id), await t.llm.retrieve(ids.get(llm.llm_id)!)];
      expect(comparable(to as Json, ids, ['is_published'])).toEqual(comparable(from as Json, ids, ['is_published']));
      expect((to as Json).imported_from).toBe(llm.llm_id);
    }
    const salesLlm = await t.llm.retrieve(ids.get(s.salesLlm.llm_id)!);
    expect(salesLlm.knowledge_base_ids).toEqual([ids.get(s.kb.knowledge_base_id)]);
    const flow = await t.conversationFlow.retrieve(ids.get(s.flow.conversation_flow_id)!);
    expect(comparable(flow as Json, ids)).toEqual(comparable((await source.conversationFlow.retrieve(s.flow.conversation_flow_id)) as Json, ids));
    expect((flow.nodes as Json[]).find((node) => node.id === 'swap')!.agent_id).toBe(ids.get(s.support.agent_id));
    expect((flow.nodes as Json[]).find((node) => node.id === 'name')!.component_id).toBe(ids.get(s.component.conversation_flow_component_id));
    expect(flow.knowledge_base_ids).toEqual([ids.get(s.kb.knowledge_base_id)]);
    const component = await t.conversationFlowComponent.retrieve(ids.get(s.component.conversation_flow_component_id)!);
    expect(comparable(component as Json, ids, ['linked_conversation_flow_ids'])).toEqual(
      comparable((await source.conversationFlowComponent.retrieve(s.component.conversation_flow_component_id)) as Json, ids, ['linked_conversation_flow_ids']),
    );
    expect(component.linked_conversation_flow_ids).toEqual([flow.conversation_flow_id]);

    // Every version of Sales, with the engine version each runs.
    const [fromVersions, toVersions] = [await source.agent.getVersions(s.sales.agent_id), await t.agent.getVersions(ids.get(s.sales.agent_id)!)];
    expect(toVersions.map((v) => [v.version, v.is_published])).toEqual(fromVersions.map((v) => [v.version, v.is_published]));
    for (const [i, from] of fromVersions.entries()) {
      const to = toVersions[i]!;
      expect(comparable(to as Json, ids)).toEqual(comparable(from as Json, ids));
      expect(to.response_engine).toEqual({ type: 'retell-llm', llm_id: ids.get(s.salesLlm.llm_id), version: (from.response_engine as Json).version });
      const [fromLlm, toLlm] = [
        await source.llm.retrieve(s.salesLlm.llm_id, { version: (from.response_engine as Json).version as number }),
        await t.llm.retrieve(ids.get(s.salesLlm.llm_id)!, { version: (to.response_engine as Json).version }),
      ];
      expect(toLlm.general_prompt).toBe(`You sell shoes. v${i}`);
      expect(comparable(toLlm as Json, ids)).toEqual(comparable(fromLlm as Json, ids));
    }
    expect((await target.ws.api.get(`/agents/${ids.get(s.sales.agent_id)}/tags`)).body).toEqual([
      expect.objectContaining({ name: 'production', version: 1, variables: { region: 'eu' } }),
    ]);
    for (const agent of [s.support, s.router]) {
      expect(comparable((await t.agent.retrieve(ids.get(agent.agent_id)!)) as Json, ids)).toEqual(comparable((await source.agent.retrieve(agent.agent_id)) as Json, ids));
    }
    const [fromChat, toChat] = [await source.chatAgent.getVersions(s.chat.agent_id), await t.chatAgent.getVersions(ids.get(s.chat.agent_id)!)];
    expect(toChat.map((v) => comparable(v as Json, ids))).toEqual(fromChat.map((v) => comparable(v as Json, ids)));

    // The knowledge base: its text re-ingested, its URL crawled again.
    const kb = await eventually(() => t.knowledgeBase.retrieve(ids.get(s.kb.knowledge_base_id)!), (k) => k.status === 'complete', 15_000);
    expect(kb).toMatchObject({ knowledge_base_name: 'Shop help', imported_from: s.kb.knowledge_base_id, max_chunk_size: 2000, min_chunk_size: 400 });
    expect(kb.knowledge_base_sources!.map((x: Json) => [x.type, x.title ?? x.url, x.status]).sort()).toEqual([
      ['text', 'Hours', 'complete'],
      ['url', `${site.url}/faq.html`, 'complete'],
    ]);
    const text = kb.knowledge_base_sources!.find((x: Json) => x.type === 'text') as Json;
    expect((await target.ws.api.get(`/get-knowledge-base-source-content/${kb.knowledge_base_id}/${text.source_id}`)).body.content).toBe('Open nine to five on weekdays.');

    // The number: created over SIP, then bound to the moved Sales.
    const number = await t.phoneNumber.retrieve(s.number.phone_number);
    expect(number).toMatchObject({
      phone_number_type: 'custom',
      nickname: 'Front desk',
      inbound_agents: [{ agent_id: ids.get(s.sales.agent_id), weight: 1 }],
      sip_outbound_trunk_config: { termination_uri: 'sip:trunk.example.com', auth_username: 'shop' },
    });
    const test = await t.tests.getTestCaseDefinition(ids.get(s.test.test_case_definition_id)!);
    expect(comparable(test as Json, ids)).toEqual(comparable(s.test, ids));
    expect(test.response_engine).toEqual({ type: 'retell-llm', llm_id: ids.get(s.salesLlm.llm_id) });
  });

  it('lets customer code find an object by its source ID (imported_from)', async () => {
    const agents = (await target.ws.api.get('/list-agents')).body as Json[];
    expect(agents.filter((agent) => agent.imported_from === s.sales.agent_id).map((agent) => agent.agent_id)).toEqual([ids.get(s.sales.agent_id)]);
  });

  it('reruns idempotently: nothing duplicated, a changed prompt updated, the rest skipped', async () => {
    await source.llm.update(s.supportLlm.llm_id, { general_prompt: 'You are the support desk, now polite.' } as never);
    await source.llm.update(s.salesLlm.llm_id, { general_prompt: 'You sell shoes. v2, edited' } as never);
    const rerun = await importRetell(options(target.ws.api_key, { mappingPrefix: prefix }));
    expect(rerun.exitCode).toBe(0);
    const status = (id: string) => rerun.rows.find((row) => row.source_id === id);
    expect(status(s.supportLlm.llm_id)).toMatchObject({ status: 'skipped', detail: 'its versions move with the agents that run it' });
    expect(status(s.support.agent_id)).toMatchObject({ status: 'updated', detail: 'changed: engine general_prompt' });
    expect(status(s.sales.agent_id)).toMatchObject({ status: 'updated', detail: 'changed: engine general_prompt' });
    expect(status(s.flow.conversation_flow_id)).toMatchObject({ status: 'skipped', detail: 'its versions move with the agents that run it' });
    for (const id of [s.router.agent_id, s.chat.agent_id, s.kb.knowledge_base_id, s.component.conversation_flow_component_id, s.test.test_case_definition_id]) {
      expect(status(id)).toMatchObject({ status: 'skipped', detail: 'unchanged' });
    }
    const t = target.client;
    expect((await t.llm.retrieve(ids.get(s.supportLlm.llm_id)!)).general_prompt).toBe('You are the support desk, now polite.');
    expect((await t.llm.retrieve(ids.get(s.salesLlm.llm_id)!)).general_prompt).toBe('You sell shoes. v2, edited');
    expect((await t.agent.getVersions(ids.get(s.sales.agent_id)!)).map((v) => v.version)).toEqual([0, 1, 2]);
    expect((await t.llm.list()).items).toHaveLength(3);
    expect(((await target.ws.api.get('/list-agents')).body as Json[])).toHaveLength(3);
    expect(await t.knowledgeBase.list()).toHaveLength(1);
    expect((await t.conversationFlow.list()).items).toHaveLength(1);
    expect((await t.conversationFlowComponent.list()).items).toHaveLength(1);
  });
});

describe('an interrupted run', () => {
  it('resumes from its state file and ends as a whole run would', async () => {
    const { ws, client } = await newTarget();
    const prefix = nextPrefix();
    const only = ['knowledge-bases', 'components', 'llms', 'flows', 'agents', 'chat-agents', 'tests'] as const;
    await expect(
      importRetell(options(ws.api_key, { mappingPrefix: prefix, only, beforeWrite: (n) => { if (n === 9) throw new Error('stopped'); } })),
    ).rejects.toThrow(FatalError);
    const state = JSON.parse(readFileSync(`${prefix}.state.json`, 'utf8'));
    expect(Object.keys(state.done).length).toBeGreaterThan(0);
    expect(existsSync(`${prefix}.json`)).toBe(false);

    const resumed = await importRetell(options(ws.api_key, { mappingPrefix: prefix, only }));
    expect(resumed.exitCode).toBe(0);
    expect(resumed.rows.filter((row) => row.status === 'failed')).toEqual([]);
    expect(existsSync(`${prefix}.state.json`)).toBe(false);
    expect((await client.llm.list()).items).toHaveLength(3);
    expect(((await ws.api.get('/list-agents')).body as Json[]).map((a) => a.imported_from).sort()).toEqual([s.router.agent_id, s.sales.agent_id, s.support.agent_id].sort());
    const ids = new Map(resumed.mapping.map((entry) => [entry.source_id, entry.parley_id]));
    const [fromVersions, toVersions] = [await source.agent.getVersions(s.sales.agent_id), await client.agent.getVersions(ids.get(s.sales.agent_id)!)];
    expect(toVersions.map((v) => comparable(v as Json, ids))).toEqual(fromVersions.map((v) => comparable(v as Json, ids)));
  });
});

describe('--dry-run', () => {
  it('prints the plan and writes nothing', async () => {
    const { ws, client } = await newTarget();
    const prefix = nextPrefix();
    const result = await importRetell(options(ws.api_key, { mappingPrefix: prefix, dryRun: true, beforeWrite: () => { throw new Error('a dry run wrote'); } }));
    expect(result.exitCode).toBe(0);
    expect(result.plan).toContain('create knowledge base "Shop help" with 2 sources');
    expect(result.plan).toContain('create agent Sales desk (publish 0, publish 1, draft 2; tags production)');
    expect((await client.llm.list()).items).toEqual([]);
    expect(await client.knowledgeBase.list()).toEqual([]);
    expect(existsSync(`${prefix}.json`)).toBe(false);
  });
});

describe('bad input', () => {
  it('stops on a wrong source key with a clear message and writes nothing', async () => {
    const { ws, client } = await newTarget();
    const run = importRetell({ ...options(ws.api_key), from: { url: app.url, key: 'key_wrong' } });
    await expect(run).rejects.toThrow(new FatalError(`the source (${app.url}) refused the key: 401 Missing or invalid API key / session`));
    expect((await client.llm.list()).items).toEqual([]);
  });

  it('stops when the source cannot be reached', async () => {
    const { ws } = await newTarget();
    await expect(importRetell({ ...options(ws.api_key), from: { url: 'http://127.0.0.1:9', key: 'k' } })).rejects.toThrow(/^cannot reach the source at http:\/\/127\.0\.0\.1:9/);
  });
});

/**
 * A Retell account as Retell's API answers it: each answer is checked against retell-sdk's
 * response type (fields Parley does not have included). An agent on a cloned voice, a number
 * bought on Retell's carrier, an LLM Parley refuses, and a first answer of 429.
 */
async function fakeRetell() {
  const llm = (id: string, extra: Partial<LlmResponse> = {}): LlmResponse => ({
    llm_id: id, version: 0, is_published: true, last_modification_timestamp: 1_700_000_000_000,
    model: 'gpt-4.1', model_temperature: 0, general_prompt: 'You book tables.', begin_message: null,
    general_tools: [{ type: 'end_call', name: 'end_call', description: 'End the call.' }],
    knowledge_base_ids: [], start_speaker: 'agent', model_high_priority: false, tool_call_strict_mode: true, ...extra,
  });
  const agent: AgentResponse = {
    agent_id: 'agent_0a1b2c3d4e5f60718293a4b5', version: 0, is_published: true, last_modification_timestamp: 1_700_000_000_000,
    agent_name: 'Bookings', response_engine: { type: 'retell-llm', llm_id: 'llm_aaaaaaaaaaaaaaaaaaaaaaaa', version: 0 },
    voice_id: 'custom_voice_5f1e2d', voice_model: null, language: 'en-GB', responsiveness: 1, interruption_sensitivity: 1,
    enable_backchannel: true, webhook_url: null,
  };
  let llmLists = 0;
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    requests.push(`${req.method} ${url.pathname}`);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== 'Bearer key_retell') return send(401, { status: 401, message: 'Invalid API key' });
    const page = (items: unknown[]) => send(200, { has_more: false, items });
    switch (url.pathname) {
      case '/v2/list-retell-llms':
        if (++llmLists === 1) return send(429, { status: 429, message: 'Too many requests' }, { 'retry-after': '3' });
        return page([llm('llm_aaaaaaaaaaaaaaaaaaaaaaaa'), llm('llm_bbbbbbbbbbbbbbbbbbbbbbbb', { model_temperature: 7 })]);
      case '/get-retell-llm/llm_aaaaaaaaaaaaaaaaaaaaaaaa':
        return send(200, llm('llm_aaaaaaaaaaaaaaaaaaaaaaaa'));
      case '/v2/list-agents':
        return page([{ agent_id: agent.agent_id, agent_name: 'Bookings', channel: 'voice', tags: {}, user_modified_timestamp: 1 } satisfies AgentListResponse.Item]);
      case `/get-agent-versions/${agent.agent_id}`:
        return send(200, [agent]);
      case '/get-voice/custom_voice_5f1e2d':
        return send(200, { voice_id: 'custom_voice_5f1e2d', voice_name: 'My clone', provider: 'elevenlabs', gender: 'female', accent: 'British', age: 'Young' } satisfies VoiceResponse);
      case '/v2/list-phone-numbers':
        return page([{
          phone_number: '+14155550123', phone_number_type: 'retell-twilio', nickname: 'Main line', last_modification_timestamp: 1,
          inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }],
        } satisfies PhoneNumberResponse]);
      case '/list-knowledge-bases':
        return send(200, [{
          knowledge_base_id: 'knowledge_base_9f8e7d6c5b4a3921', knowledge_base_name: 'Policies', status: 'complete',
          knowledge_base_sources: [
            { type: 'text', source_id: 'source_1', title: 'Returns', content_url: `${site.url}/returns.txt` } satisfies KnowledgeBaseResponse.KnowledgeBaseSourceText,
            // Retell's type gives every document a file_url; one without it (as a source may answer) offers nothing to download.
            { type: 'document', source_id: 'source_2', filename: 'terms.pdf' } satisfies Omit<KnowledgeBaseResponse.KnowledgeBaseSourceDocument, 'file_url' | 'file_size'>,
          ],
        } satisfies Omit<KnowledgeBaseResponse, 'knowledge_base_sources'> & { knowledge_base_sources: unknown[] }]);
      default:
        return page([]);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

describe('from Retell', () => {
  it('waits out a 429, reports what cannot move with the manual step, and reports a refusal by name while the run goes on', async () => {
    const retell = await fakeRetell();
    const { ws, client } = await newTarget();
    const waits: number[] = [];
    const result = await importRetell({
      from: { url: retell.url, key: 'key_retell' },
      to: { url: targetServer.url, key: ws.api_key },
      mappingPrefix: nextPrefix(),
      sleep: async (ms) => { waits.push(ms); },
    });
    expect(waits).toEqual([3000]);
    expect(retell.requests.filter((r) => r === 'GET /v2/list-retell-llms')).toHaveLength(3);
    const llmId = result.mapping.find((entry) => entry.source_id === 'llm_aaaaaaaaaaaaaaaaaaaaaaaa')!.parley_id;
    const agentId = result.mapping.find((entry) => entry.source_id === 'agent_0a1b2c3d4e5f60718293a4b5')!.parley_id;
    expect(result.rows.map(({ kind, source_id, status }) => [kind, source_id, status])).toEqual([
      ['knowledge base', 'knowledge_base_9f8e7d6c5b4a3921', 'moved'],
      ['file', 'knowledge_base_9f8e7d6c5b4a3921', 'not movable'],
      ['llm', 'llm_aaaaaaaaaaaaaaaaaaaaaaaa', 'moved'],
      ['llm', 'llm_bbbbbbbbbbbbbbbbbbbbbbbb', 'failed'],
      ['voice', 'custom_voice_5f1e2d', 'not movable'],
      ['agent', 'agent_0a1b2c3d4e5f60718293a4b5', 'moved'],
      ['number', '+14155550123', 'not movable'],
    ]);
    expect(result.rows[1]).toEqual({
      kind: 'file', name: 'terms.pdf', source_id: 'knowledge_base_9f8e7d6c5b4a3921', status: 'not movable',
      detail: 'file of knowledge base "Policies": the source offers no download; add it with add-knowledge-base-sources',
    });
    expect(result.rows[3]!.detail).toBe('Parley refused it: 400 model_temperature: Must be at most 1');
    expect(result.rows[4]).toMatchObject({ name: 'My clone', parley_id: expect.stringMatching(/^11labs-/), detail: expect.stringContaining('re-clone it (POST /clone-voice)') });
    expect(result.rows[6]!.detail).toContain('port it to a carrier of yours and import it over SIP');
    expect(result.exitCode).toBe(1);
    // The text source, read from its content_url; the file left for a person.
    const kbId = result.mapping.find((entry) => entry.source_id === 'knowledge_base_9f8e7d6c5b4a3921')!.parley_id;
    const kb = await eventually(() => client.knowledgeBase.retrieve(kbId), (k) => k.status === 'complete', 15_000);
    expect(kb.knowledge_base_sources!.map((x: Json) => [x.type, x.title])).toEqual([['text', 'Returns']]);
    const text = kb.knowledge_base_sources![0] as Json;
    expect((await ws.api.get(`/get-knowledge-base-source-content/${kbId}/${text.source_id}`)).body.content).toBe('Returns within 30 days.');

    const moved = await client.agent.retrieve(agentId);
    expect(moved).toMatchObject({
      agent_name: 'Bookings', language: 'en-GB', enable_backchannel: true, is_published: true, imported_from: 'agent_0a1b2c3d4e5f60718293a4b5',
      voice_id: result.rows[4]!.parley_id, response_engine: { type: 'retell-llm', llm_id: llmId, version: 0 },
    });
    const voice = await client.voice.retrieve(moved.voice_id);
    expect([voice.gender, voice.accent]).toEqual(['female', 'British']);
    expect(await client.llm.retrieve(llmId)).toMatchObject({ general_prompt: 'You book tables.', tool_call_strict_mode: true, imported_from: 'llm_aaaaaaaaaaaaaaaaaaaaaaaa' });
  });
});

describe('--only', () => {
  it('moves only the kinds named; an object referencing a kind left out is not written and its row names what to move first', async () => {
    const { ws, client } = await newTarget();
    const only = ['llms', 'agents'] as const;
    const first = await importRetell(options(ws.api_key, { only }));
    const row = (result: typeof first, id: string) => result.rows.find((r) => r.source_id === id);
    expect([...new Set(first.rows.map((r) => r.kind))]).toEqual(['llm', 'agent']);
    expect(row(first, s.salesLlm.llm_id)).toEqual({
      kind: 'llm', name: 'engine of Sales desk', source_id: s.salesLlm.llm_id, status: 'failed',
      detail: `references knowledge base ${s.kb.knowledge_base_id}, which this run leaves out (--only) and no earlier run moved: move it first (or in the same run)`,
    });
    expect(row(first, s.sales.agent_id)).toMatchObject({ status: 'failed', detail: `references ${s.salesLlm.llm_id}, which failed` });
    expect(row(first, s.router.agent_id)).toMatchObject({
      status: 'failed',
      detail: `references flow ${s.flow.conversation_flow_id}, which this run leaves out (--only) and no earlier run moved: move it first (or in the same run)`,
    });
    for (const id of [s.supportLlm.llm_id, s.chatLlm.llm_id, s.support.agent_id]) expect(row(first, id)?.status).toBe('moved');
    expect(first.rows).toHaveLength(6);
    expect(first.exitCode).toBe(1);

    // Nothing in the target names an object of the source.
    const llms = (await client.llm.list()).items;
    const agents = (await ws.api.get('/list-agents')).body as Json[];
    expect(llms.map((llm) => (llm as Json).imported_from).sort()).toEqual([s.chatLlm.llm_id, s.supportLlm.llm_id].sort());
    expect(agents.map((agent) => agent.imported_from)).toEqual([s.support.agent_id]);
    expect(await client.knowledgeBase.list()).toEqual([]);
    expect((await client.conversationFlow.list()).items).toEqual([]);
    const written = JSON.stringify([...llms, ...agents].map((object) => ({ ...object, imported_from: undefined })));
    for (const id of [s.kb.knowledge_base_id, s.flow.conversation_flow_id, s.salesLlm.llm_id, s.sales.agent_id, s.supportLlm.llm_id]) expect(written).not.toContain(id);

    // Once the knowledge bases are moved, the same --only resolves the reference to them.
    expect((await importRetell(options(ws.api_key, { only: ['knowledge-bases'] }))).exitCode).toBe(0);
    const kbId = (await client.knowledgeBase.list())[0]!.knowledge_base_id;
    const second = await importRetell(options(ws.api_key, { only }));
    expect(row(second, s.salesLlm.llm_id)?.status).toBe('moved');
    expect(row(second, s.sales.agent_id)?.status).toBe('moved');
    expect(row(second, s.router.agent_id)?.status).toBe('failed');
    const salesLlm = (await client.llm.list()).items.find((llm) => (llm as Json).imported_from === s.salesLlm.llm_id)!;
    expect(salesLlm.knowledge_base_ids).toEqual([kbId]);
  }, 30_000);
});

// The command as a user runs it, against this file's servers.
const cli = (...args: string[]) => runCli(args);
const importUsage =
  'usage: npm run cli -- import-retell --from-key <key> [--from-url <url>] (--to-url <url> --to-key <key> | --workspace <id>) [--only llms,flows,...] [--dry-run] [--mapping <file prefix>]\n';

describe('npm run cli -- import-retell', () => {
  it('prints the summary table on stdout and exits 0, exits 1 when an object failed, and 2 on a usage mistake', async () => {
    const { ws } = await newTarget();
    const ends = ['--from-url', app.url, '--from-key', sourceWs.api_key, '--to-url', targetServer.url, '--to-key', ws.api_key];
    const [ok, failing, missingTarget, badKind] = await Promise.all([
      cli('import-retell', ...ends, '--only', 'components', '--mapping', join(dir, 'cli-ok')),
      cli('import-retell', ...ends, '--only', 'tests', '--mapping', join(dir, 'cli-failing')),
      cli('import-retell', '--from-key', 'key_x'),
      cli('import-retell', '--from-key', 'key_x', '--workspace', 'ws_1', '--only', 'llms,voices'),
    ]);

    expect(ok.code).toBe(0);
    const table = ok.stdout.split('\n');
    expect(table[0]).toMatch(/^KIND +NAME +SOURCE ID +PARLEY ID +RESULT +DETAIL$/);
    expect(table[1]).toMatch(new RegExp(`^component +Collect name +${s.component.conversation_flow_component_id} +component_\\w+ +moved$`));
    expect(table.slice(2)).toEqual(['', '1 moved, 0 updated, 0 skipped, 0 not movable, 0 failed', '']);
    expect(ok.stderr).toBe(`Mapping written to ${join(dir, 'cli-ok')}.json and ${join(dir, 'cli-ok')}.csv\n`);
    expect(readFileSync(join(dir, 'cli-ok.csv'), 'utf8').split('\n')[1]).toMatch(new RegExp(`^component,${s.component.conversation_flow_component_id},component_\\w+,Collect name$`));

    // A test case whose engine this run leaves out fails, by name; the exit code says so.
    expect(failing.code).toBe(1);
    expect(failing.stdout).toMatch(new RegExp(`^test case +Asks for a size +${s.test.test_case_definition_id} +- +failed +references llm ${s.salesLlm.llm_id}, which this run leaves out`, 'm'));
    expect(failing.stdout.trimEnd().split('\n').at(-1)).toBe('0 moved, 0 updated, 0 skipped, 0 not movable, 1 failed');

    expect(missingTarget).toEqual({ code: 2, stdout: '', stderr: `--to-url and --to-key are required (or --workspace on the local runtime)\n${importUsage}` });
    expect(badKind).toEqual({
      code: 2, stdout: '',
      stderr: `--only: unknown kind voices (kinds: knowledge-bases, components, llms, flows, agents, chat-agents, numbers, tests)\n${importUsage}`,
    });
  }, 60_000);

  it('redraws one progress line in place on a terminal, and clears it before the table', async () => {
    const { ws } = await newTarget();
    const run = await runCliOnTerminal([
      'import-retell', '--from-url', app.url, '--from-key', sourceWs.api_key, '--to-url', targetServer.url, '--to-key', ws.api_key,
      '--only', 'components', '--mapping', nextPrefix(),
    ]);
    expect(run.code, run.terminal).toBe(0);
    // The terminal reports no width: the line is not cut to the 20-column floor.
    const progress = '\r\x1b[K[....................] 0/1 component Collect name\r\x1b[K';
    expect(run.terminal.slice(0, progress.length)).toBe(progress);
    expect(run.terminal.slice(progress.length)).toMatch(/^KIND +NAME +SOURCE ID +PARLEY ID +RESULT +DETAIL\r\n/);
    expect(run.terminal).toContain('\r\n1 moved, 0 updated, 0 skipped, 0 not movable, 0 failed\r\n');
  }, 60_000);
});

/**
 * A temporary folder standing in for this user's temp folder, where every running `npm start`
 * leaves an entry (local/runtime.ts): the run's own is shared with other test files' servers.
 * tsx's compile cache stays the run's, so a CLI started with it set is not compiled cold.
 */
function userTemp(): string {
  const tmp = mkdtempSync(join(dir, 'tmp-'));
  const tsxCache = `tsx-${userInfo().uid}`;
  if (existsSync(join(tmpdir(), tsxCache))) symlinkSync(join(tmpdir(), tsxCache), join(tmp, tsxCache));
  return tmp;
}

/** A running `npm start` as the CLI finds it: its data folder's runtime file, and its entry in the user's temp folder. */
function registerServer(tmp: string, dataDir: string, server: { pid: number; url: string }) {
  const runtime = { pid: server.pid, dynamodb_endpoint: process.env.DYNAMODB_ENDPOINT, table_name: process.env.TABLE_NAME, url: server.url, data_dir: dataDir };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, 'runtime.json'), JSON.stringify(runtime));
  mkdirSync(join(tmp, `parley-servers-${userInfo().uid}`), { recursive: true });
  writeFileSync(join(tmp, `parley-servers-${userInfo().uid}`, `${server.pid}.json`), JSON.stringify(runtime));
}

/** runImport in this process with TMPDIR and DATA_DIR set as given: its exit code and what it wrote to stderr. */
async function runImportWith(env: { TMPDIR: string; DATA_DIR: string }, workspace: string): Promise<{ code: number; stderr: string }> {
  const saved = { TMPDIR: process.env.TMPDIR, DATA_DIR: process.env.DATA_DIR };
  const stderr = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  const stdout = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  Object.assign(process.env, env);
  try {
    const code = await runImport({ fromKey: sourceWs.api_key, fromUrl: app.url, workspace, only: ['components'], dryRun: false, mapping: nextPrefix() });
    return { code, stderr: stderr.mock.calls.map((args) => `${args.join(' ')}\n`).join('') };
  } finally {
    Object.assign(process.env, saved);
    stderr.mockRestore();
    stdout.mockRestore();
  }
}

describe('--workspace on the local runtime', () => {
  it('finds the one running `npm start` whatever DATA_DIR says, mints a key in its store and imports into the workspace', async () => {
    const { ws, client } = await newTarget();
    const tmp = userTemp();
    registerServer(tmp, join(tmp, 'served'), { pid: process.pid, url: targetServer.url });
    // The store's settings come from the server's runtime file, not from the environment.
    const run = await runCli(
      ['import-retell', '--from-url', app.url, '--from-key', sourceWs.api_key, '--workspace', ws.workspace_id, '--only', 'components', '--mapping', nextPrefix()],
      { TMPDIR: tmp, DATA_DIR: join(tmp, 'unserved'), DYNAMODB_ENDPOINT: 'http://127.0.0.1:9', TABLE_NAME: 'not-the-servers-table' },
    );
    expect(run.code, run.stderr).toBe(0);
    const minted = /^Minted API key (\S+) \("import-retell"\) of workspace (\S+); delete it when the import is done\.$/m.exec(run.stderr);
    expect(minted?.[2]).toBe(ws.workspace_id);
    expect(((await ws.api.get('/api-keys')).body as Json[]).find((key) => key.api_key_id === minted?.[1])).toMatchObject({ name: 'import-retell' });
    expect(run.stdout).toMatch(new RegExp(`^component +Collect name +${s.component.conversation_flow_component_id} +component_\\w+ +moved$`, 'm'));
    expect((await client.conversationFlowComponent.list()).items.map((c) => (c as Json).imported_from)).toEqual([s.component.conversation_flow_component_id]);
  }, 60_000);

  it('takes the server of DATA_DIR among several, refuses to guess when DATA_DIR names none, and says how to start one when none runs', async () => {
    const { ws, client } = await newTarget();
    const tmp = userTemp();
    // Two live servers (two live processes): this one, and one at an address that answers nothing.
    registerServer(tmp, join(tmp, 'a'), { pid: process.pid, url: targetServer.url });
    registerServer(tmp, join(tmp, 'b'), { pid: process.ppid, url: 'http://127.0.0.1:9' });

    const unnamed = await runImportWith({ TMPDIR: tmp, DATA_DIR: join(tmp, 'c') }, ws.workspace_id);
    expect(unnamed).toEqual({ code: 1, stderr: `import-retell: 2 Parley servers are running and none uses ${join(tmp, 'c')}; name the one to use with DATA_DIR\n` });

    const none = await runImportWith({ TMPDIR: userTemp(), DATA_DIR: join(tmp, 'c') }, ws.workspace_id);
    expect(none).toEqual({ code: 1, stderr: 'import-retell: no Parley server is running: start one with `npm start`, or give --to-url and --to-key\n' });
    expect((await client.conversationFlowComponent.list()).items).toEqual([]);

    const named = await runImportWith({ TMPDIR: tmp, DATA_DIR: join(tmp, 'a') }, ws.workspace_id);
    expect(named.code, named.stderr).toBe(0);
    expect((await client.conversationFlowComponent.list()).items.map((c) => (c as Json).imported_from)).toEqual([s.component.conversation_flow_component_id]);
  });

  it('mints a full-access key named import-retell in the workspace, with which the import writes', async () => {
    const { ws, client } = await newTarget();
    const minted = await mintImportKey(ws.workspace_id);
    expect(((await ws.api.get('/api-keys')).body as Json[]).find((key) => key.api_key_id === minted.api_key_id)).toMatchObject({ name: 'import-retell' });
    const result = await importRetell(options(minted.api_key, { only: ['components'] }));
    expect(result.rows.map((r) => [r.kind, r.status])).toEqual([['component', 'moved']]);
    expect((await client.conversationFlowComponent.list()).items.map((c) => (c as Json).imported_from)).toEqual([s.component.conversation_flow_component_id]);
  });
});

describe('knowledge-base files', () => {
  it('downloads a file the source serves and uploads it to the moved knowledge base', async () => {
    const kb = await source.knowledgeBase.create({
      knowledge_base_name: 'Size charts',
      knowledge_base_files: [await toFile(Buffer.from(html('Sizes', '<p>EU 42 is UK 8.</p>')), 'sizes.html', { type: 'text/html' })],
    });
    await eventually(() => source.knowledgeBase.retrieve(kb.knowledge_base_id), (k) => k.status === 'complete', 15_000);
    const { ws, client } = await newTarget();
    const result = await importRetell(options(ws.api_key, { only: ['knowledge-bases'] }));
    expect(result.rows.find((r) => r.source_id === kb.knowledge_base_id)).toMatchObject({ kind: 'knowledge base', status: 'moved' });
    expect(result.exitCode).toBe(0);
    const movedId = result.mapping.find((entry) => entry.source_id === kb.knowledge_base_id)!.parley_id;
    const moved = await eventually(() => client.knowledgeBase.retrieve(movedId), (k) => k.status === 'complete', 15_000);
    const file = moved.knowledge_base_sources!.find((x: Json) => x.type === 'document') as Json;
    expect(moved.knowledge_base_sources!.map((x: Json) => [x.type, x.filename, x.status])).toEqual([['document', 'sizes.html', 'complete']]);
    const [from, to] = await Promise.all([
      source.knowledgeBase.retrieve(kb.knowledge_base_id).then((k) => fetch((k.knowledge_base_sources![0] as Json).file_url).then((r) => r.text())),
      fetch(file.file_url).then((r) => r.text()),
    ]);
    expect(to).toBe(from);
    expect((await ws.api.get(`/get-knowledge-base-source-content/${movedId}/${file.source_id}`)).body.content).toContain('EU 42 is UK 8.');
  }, 30_000);
});
