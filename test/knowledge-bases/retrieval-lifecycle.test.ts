import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { applyRetention } from '../../shared/account-data/index.ts';
import { purges } from '../../shared/members/store.ts';
import { config } from '../../shared/platform/config.ts';
import { db } from '../../shared/platform/store/db.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, importNumber, newAgent, newChatAgent } from '../support/factories.ts';
import type { ApiClient } from '../support/http.ts';
import { DESK } from '../support/transfers.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Knowledge-base retrievals (`GET /kb-retrievals/{call_id}`) hold the user's words, so they
 * live and die with their call or chat (docs/privacy.md, docs/knowledge-bases.md): every
 * path that deletes one (delete-call, delete-chat, a privacy erase of a number with its
 * calls and SMS chats, retention, the workspace purge) deletes its retrievals, which a full
 * table scan confirms; and a retrieval keeps of the words only what the conversation's data
 * storage setting keeps (none under basic_attributes_only, redacted under
 * everything_except_pii). The offline embedder and model answer: no network.
 */

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const DAY = 86_400_000;
/** A social security number with a valid area (shared/platform/text/pii.ts finds it). */
const SSN = '219-09-9999';
const ASKED = `My SSN is ${SSN}, where can I park my car?`;

const FACTS: Record<string, string> = {
  parking: 'Parking: free parking is available in the garage under the building; take a ticket at the barrier.',
  hours: 'Opening hours: the clinic is open from 8 am to 6 pm Monday to Friday, and closed on weekends.',
};

async function helpCentre(api: ApiClient): Promise<string> {
  const res = await api.post('/create-knowledge-base', {
    body: { knowledge_base_name: 'Clinic', knowledge_base_texts: Object.entries(FACTS).map(([title, text]) => ({ title, text })) },
  });
  expect(res.status).toBe(201);
  await eventually(
    async () => (await api.get(`/get-knowledge-base/${res.body.knowledge_base_id}`)).body,
    (body: any) => body.status === 'complete',
    30_000,
  );
  return res.body.knowledge_base_id;
}

/** Every retrieval item in the table (a full scan) recorded for this call or chat ID, or holding `text`. */
async function retrievalItems(match: { id?: string; text?: string; workspaceId?: string }): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(new ScanCommand({ TableName: config.TABLE_NAME, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      const pk = String(item.pk);
      if (!pk.includes('#KBRET#')) continue;
      if (match.id && !pk.includes(match.id)) continue;
      if (match.workspaceId && !pk.includes(match.workspaceId)) continue;
      if (match.text && !JSON.stringify(item).includes(match.text)) continue;
      found.push(item);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return found;
}

const noRetrievals = (id: string) => ({ status: 404, message: `No knowledge base retrievals for ${id}` });

/** A workspace whose voice agent and chat agent retrieve from one knowledge base, and a number bound to both. */
async function setup(options: { agent?: Record<string, unknown>; chatAgent?: Record<string, unknown>; llm?: Record<string, unknown> } = {}) {
  const ws = await app.newWorkspace();
  const kbId = await helpCentre(ws.api);
  const llm = { general_prompt: 'You are the clinic front desk.', begin_message: 'Hello, clinic.', knowledge_base_ids: [kbId], ...options.llm };
  const { agent } = await newAgent(ws.api, { agent: options.agent ?? {}, llm });
  const { chatAgent } = await newChatAgent(ws.api, { chatAgent: options.chatAgent ?? {}, llm });
  const number = await importNumber(ws.api, {
    outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }],
    outbound_sms_agents: [{ agent_id: chatAgent.agent_id, weight: 1 }],
  });
  return { ws, kbId, agent, chatAgent, number };
}

type Setup = Awaited<ReturnType<typeof setup>>;

/** A sandbox phone call in which the user says `says`; answers its ID once it ended (and was analysed). */
async function endedCall({ ws, number }: Setup, says: string[], to = '+14155550123'): Promise<string> {
  const created = await ws.api.post('/v2/create-phone-call', {
    body: { from_number: number, to_number: to, metadata: { sandbox_call_ms: 1500, sandbox_user_says: says } },
  });
  expect(created.status).toBe(201);
  await eventually(() => ws.api.get(`/v2/get-call/${created.body.call_id}`), (res) => res.body.call_status === 'ended' && res.body.call_analysis !== undefined, 30_000);
  return created.body.call_id;
}

/** An API chat in which the user says `says`. */
async function chatSaying({ ws, chatAgent }: Setup, says: string[]): Promise<string> {
  const chat = await ws.api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
  expect(chat.status).toBe(201);
  for (const content of says) expect((await ws.api.post('/create-chat-completion', { body: { chat_id: chat.body.chat_id, content } })).status).toBe(200);
  return chat.body.chat_id;
}

async function expectRecorded(ws: { api: ApiClient }, id: string, count: number) {
  const res = await ws.api.get(`/kb-retrievals/${id}`);
  expect(res.status).toBe(200);
  expect(res.body.retrievals).toHaveLength(count);
  expect(await retrievalItems({ id })).toHaveLength(count);
  return res.body;
}

async function expectGone(ws: { api: ApiClient }, id: string) {
  const res = await ws.api.get(`/kb-retrievals/${id}`);
  expect(res.status).toBe(404);
  expect(res.body).toEqual(noRetrievals(id));
  expect(await retrievalItems({ id })).toEqual([]);
}

const completed = (ws: { api: ApiClient }, id: string) =>
  eventually(async () => (await ws.api.get(`/privacy/requests/${id}`)).body, (r: any) => r.status === 'complete' || r.status === 'failed', 30_000);

describe('retrievals are deleted with their call or chat', () => {
  it('delete-call deletes the call\'s retrievals; another call\'s stay', async () => {
    const s = await setup();
    const callId = await endedCall(s, ['Where can I park my car?']);
    const kept = await endedCall(s, ['When are you open?']);
    await expectRecorded(s.ws, callId, 1);

    expect((await s.ws.api.delete(`/v2/delete-call/${callId}`)).status).toBe(204);
    await expectGone(s.ws, callId);
    await expectRecorded(s.ws, kept, 1);
  }, 90_000);

  it('delete-chat deletes the chat\'s retrievals', async () => {
    const s = await setup();
    const chatId = await chatSaying(s, ['Where can I park my car?', 'When are you open?']);
    await expectRecorded(s.ws, chatId, 2);

    expect((await s.ws.api.delete(`/delete-chat/${chatId}`)).status).toBe(204);
    await expectGone(s.ws, chatId);
  }, 60_000);

  it('a privacy erase of a number deletes the retrievals of its calls and SMS chats: the SSN is nowhere in them', async () => {
    const s = await setup();
    const person = freshNumber();
    const callId = await endedCall(s, [ASKED], person);
    const sms = await s.ws.api.post('/create-sms-chat', { body: { from_number: s.number, to_number: person } });
    expect(sms.status).toBe(201);
    expect((await s.ws.api.post(`/sms-chats/${sms.body.chat_id}/simulate-inbound`, { body: { content: ASKED } })).status).toBe(200);
    await expectRecorded(s.ws, callId, 1);
    await expectRecorded(s.ws, sms.body.chat_id, 1);
    expect(await retrievalItems({ text: SSN, workspaceId: s.ws.workspace_id })).toHaveLength(2);

    const started = await s.ws.api.post('/privacy/delete-phone-number', { body: { phone_number: person } });
    expect(started.status).toBe(202);
    expect((await completed(s.ws, started.body.request_id)).report).toMatchObject({ calls_deleted: 1, sms_deleted: 1 });
    await expectGone(s.ws, callId);
    await expectGone(s.ws, sms.body.chat_id);
    expect(await retrievalItems({ text: SSN, workspaceId: s.ws.workspace_id })).toEqual([]);
  }, 90_000);

  it('retention deletes the retrievals of the calls and chats it deletes', async () => {
    const s = await setup({ agent: { data_storage_retention_days: 1 }, chatAgent: { data_storage_retention_days: 1 } });
    const callId = await endedCall(s, ['Where can I park my car?']);
    const chatId = await chatSaying(s, ['When are you open?']);
    await expectRecorded(s.ws, callId, 1);
    await expectRecorded(s.ws, chatId, 1);

    expect(await applyRetention(s.ws.workspace_id, Date.now() + 2 * DAY)).toMatchObject({ calls_deleted: 1, chats_deleted: 1 });
    await expectGone(s.ws, callId);
    await expectGone(s.ws, chatId);
  }, 90_000);

  it('the workspace purge deletes every retrieval of the workspace (the scan finds them by the workspace ID in their key)', async () => {
    const s = await setup();
    const chatId = await chatSaying(s, [ASKED]);
    const callId = await endedCall(s, ['Where can I park my car?']);
    expect(await retrievalItems({ workspaceId: s.ws.workspace_id })).toHaveLength(2);

    const name = (await s.ws.api.get('/workspace')).body.name;
    expect((await s.ws.api.post('/workspace/delete', { body: { confirm: name } })).status).toBe(202);
    await eventually(() => purges.get(s.ws.workspace_id), (item) => item?.phase === 'done', 60_000);
    expect(await retrievalItems({ workspaceId: s.ws.workspace_id })).toEqual([]);
    expect(await retrievalItems({ id: chatId })).toEqual([]);
    expect(await retrievalItems({ id: callId })).toEqual([]);
  }, 120_000);

  it('a transfer agent\'s retrievals during an agentic warm transfer belong to the call: answered with it and deleted with it', async () => {
    const ws = await app.newWorkspace();
    const kbId = await helpCentre(ws.api);
    const { agent: mediator } = await newAgent(ws.api, { llm: { begin_message: 'I have a caller waiting. Can you take them?', knowledge_base_ids: [kbId] } });
    const transfer = {
      type: 'transfer_call',
      name: 'transfer_to_desk',
      description: 'Transfer the caller to the front desk.',
      transfer_destination: { type: 'predefined', number: DESK },
      transfer_option: {
        type: 'agentic_warm_transfer',
        agentic_transfer_config: { transfer_agent: { agent_id: mediator.agent_id, agent_version: mediator.version }, action_on_timeout: 'cancel_transfer' },
      },
    };
    const { agent } = await newAgent(ws.api, { llm: { general_tools: [transfer] } });
    const number = await importNumber(ws.api, { outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] });
    const created = await ws.api.post('/v2/create-phone-call', {
      body: {
        from_number: number,
        to_number: '+14155550123',
        metadata: { sandbox_call_ms: 60_000, sandbox_user_says: ['Please transfer me to the desk.'], sandbox_transfer_says: ['Where can the caller park?'] },
      },
    });
    expect(created.status).toBe(201);
    const callId = created.body.call_id as string;
    // The transfer agent answered the destination's line (the consultation is in transcript_with_tool_calls).
    await eventually(
      () => ws.api.get(`/v2/get-call/${callId}`),
      (res) => (res.body.transcript_with_tool_calls ?? []).some((entry: any) => entry.role === 'transfer_target'),
      30_000,
    );
    const recorded = await eventually(() => ws.api.get(`/kb-retrievals/${callId}`), (res) => res.status === 200);
    expect(recorded.body.retrievals.map((r: any) => r.query)).toEqual(['Where can the caller park?']);
    expect(await retrievalItems({ id: `${callId}_transfer` })).toEqual([]);

    expect((await ws.api.post(`/v2/stop-call/${callId}`)).status).toBe(200);
    expect((await ws.api.delete(`/v2/delete-call/${callId}`)).status).toBe(204);
    await expectGone(ws, callId);
    expect(await retrievalItems({ workspaceId: ws.workspace_id })).toEqual([]);
  }, 120_000);
});

describe('retrievals keep what the data storage setting keeps', () => {
  it('basic_attributes_only: no query and no chunk text, in the answer or the table; the IDs and scores stay', async () => {
    const s = await setup({ agent: { data_storage_setting: 'basic_attributes_only' }, chatAgent: { data_storage_setting: 'basic_attributes_only' } });
    const chatId = await chatSaying(s, [ASKED]);
    const callId = await endedCall(s, [ASKED]);
    for (const id of [chatId, callId]) {
      const body = await expectRecorded(s.ws, id, 1);
      const [retrieval] = body.retrievals;
      expect(retrieval.query).toBeNull();
      expect(retrieval.knowledge_base_ids).toEqual([s.kbId]);
      expect(retrieval.chunks.length).toBeGreaterThanOrEqual(1);
      for (const chunk of retrieval.chunks) {
        expect(chunk).toEqual({
          knowledge_base_id: s.kbId,
          source_id: expect.any(String),
          chunk_id: expect.any(String),
          content: null,
          score: expect.any(Number),
          lexical_score: expect.any(Number),
          vector_score: expect.any(Number),
        });
      }
      expect(JSON.stringify(body)).not.toContain(SSN);
      expect(JSON.stringify(body)).not.toContain('park my car');
      const [item] = await retrievalItems({ id });
      expect(item).toMatchObject({ data_storage_setting: 'basic_attributes_only' });
      expect(item).not.toHaveProperty('query');
      expect(JSON.stringify(item)).not.toContain(SSN);
      expect(JSON.stringify(item)).not.toContain(FACTS.parking);
    }
  }, 90_000);

  it('everything_except_pii: the query with the personal data redacted, as remove-call-sensitive-data redacts a transcript', async () => {
    const s = await setup({ chatAgent: { data_storage_setting: 'everything_except_pii' } });
    const chatId = await chatSaying(s, [ASKED, 'Write to ada@example.com about parking.']);
    const body = await expectRecorded(s.ws, chatId, 2);
    expect(body.retrievals.map((r: any) => r.query)).toEqual(['My SSN is [ssn], where can I park my car?', 'Write to [email] about parking.']);
    expect(body.retrievals[0].chunks[0].content).toBe(FACTS.parking);
    expect(await retrievalItems({ text: SSN, workspaceId: s.ws.workspace_id })).toEqual([]);
  }, 60_000);

  it('everything_except_pii redacts only the agent\'s pii_config categories when it names some', async () => {
    const s = await setup({ chatAgent: { data_storage_setting: 'everything_except_pii', pii_config: { mode: 'post_call', categories: ['email'] } } });
    const chatId = await chatSaying(s, [`${ASKED} Mail ada@example.com.`]);
    const body = await expectRecorded(s.ws, chatId, 1);
    expect(body.retrievals[0].query).toBe(`${ASKED} Mail [email].`);
  }, 60_000);

  it('everything keeps the words; update-chat to basic_attributes_only stops keeping them from the next turn', async () => {
    const s = await setup();
    const chatId = await chatSaying(s, ['Where can I park my car?']);
    const updated = await s.ws.api.patch(`/update-chat/${chatId}`, { body: { data_storage_setting: 'basic_attributes_only' } });
    expect(updated.status).toBe(200);
    expect((await s.ws.api.post('/create-chat-completion', { body: { chat_id: chatId, content: ASKED } })).status).toBe(200);
    const body = await expectRecorded(s.ws, chatId, 2);
    expect(body.retrievals.map((r: any) => r.query)).toEqual(['Where can I park my car?', null]);
    expect(await retrievalItems({ text: SSN, workspaceId: s.ws.workspace_id })).toEqual([]);
  }, 60_000);

  it('a sandbox call\'s own setting (update-call) governs over its agent\'s', async () => {
    const s = await setup();
    const created = await s.ws.api.post('/v2/create-phone-call', {
      body: { from_number: s.number, to_number: '+14155550123', metadata: { sandbox_call_ms: 1500, sandbox_user_says: [ASKED] } },
    });
    expect(created.status).toBe(201);
    const callId = created.body.call_id as string;
    expect((await s.ws.api.patch(`/v2/update-call/${callId}`, { body: { data_storage_setting: 'basic_attributes_only' } })).status).toBe(200);
    await eventually(() => s.ws.api.get(`/v2/get-call/${callId}`), (res) => res.body.call_status === 'ended', 30_000);
    const body = await expectRecorded(s.ws, callId, 1);
    expect(body.retrievals[0].query).toBeNull();
    expect(await retrievalItems({ text: SSN, workspaceId: s.ws.workspace_id })).toEqual([]);
  }, 60_000);

  it('remove-call-sensitive-data redacts the words the call\'s retrievals recorded, as it redacts the transcript', async () => {
    const s = await setup();
    const callId = await endedCall(s, [ASKED]);
    expect((await expectRecorded(s.ws, callId, 1)).retrievals[0].query).toBe(ASKED);
    expect((await s.ws.api.post(`/v2/remove-call-sensitive-data/${callId}`)).status).toBe(200);
    const body = await expectRecorded(s.ws, callId, 1);
    expect(body.retrievals[0].query).toBe('My SSN is [ssn], where can I park my car?');
    expect(body.retrievals[0].chunks[0].content).toBe(FACTS.parking);
    expect(await retrievalItems({ text: SSN, workspaceId: s.ws.workspace_id })).toEqual([]);
  }, 60_000);

  it('a setting tightened after the call or chat ended applies to the retrievals it recorded', async () => {
    const s = await setup();
    const chatId = await chatSaying(s, [ASKED]);
    expect((await s.ws.api.patch(`/end-chat/${chatId}`)).status).toBe(200);
    const callId = await endedCall(s, [ASKED]);
    expect((await s.ws.api.patch(`/update-chat/${chatId}`, { body: { data_storage_setting: 'basic_attributes_only' } })).status).toBe(200);
    expect((await s.ws.api.patch(`/v2/update-call/${callId}`, { body: { data_storage_setting: 'basic_attributes_only' } })).status).toBe(200);
    for (const id of [chatId, callId]) {
      const [retrieval] = (await expectRecorded(s.ws, id, 1)).retrievals;
      expect(retrieval.query).toBeNull();
      expect(retrieval.chunks.every((chunk: any) => chunk.content === null)).toBe(true);
      const [item] = await retrievalItems({ id });
      expect(item).toMatchObject({ data_storage_setting: 'basic_attributes_only' });
    }
    expect(await retrievalItems({ text: SSN, workspaceId: s.ws.workspace_id })).toEqual([]);
    expect(await retrievalItems({ text: FACTS.parking!, workspaceId: s.ws.workspace_id })).toEqual([]);
  }, 90_000);

  it('the playground stores nothing, its retrievals included', async () => {
    const s = await setup();
    const res = await s.ws.api.post(`/agent-playground-completion/${s.chatAgent.agent_id}`, { body: { messages: [{ role: 'user', content: ASKED }] } });
    expect(res.status).toBe(200);
    expect(await retrievalItems({ workspaceId: s.ws.workspace_id })).toEqual([]);
  }, 60_000);
});
