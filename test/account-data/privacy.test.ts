import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { applyRetention } from '../../shared/account-data/index.ts';
import { JOBS } from '../../shared/jobs.ts';
import { config } from '../../shared/platform/config.ts';
import { db } from '../../shared/platform/store/db.ts';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody, freshNumber, importNumber, newAgent, newAgentWithNumber, newChatAgent } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'export-jobs'));
afterAll(() => background.stop());

const DAY = 86_400_000;

async function setup(agentFields: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const { number: from } = await newAgentWithNumber(ws.api, { agent: agentFields });
  const dial = async (to: string) => (await ws.api.post('/v2/create-phone-call', { body: { from_number: from, to_number: to } })).body;
  return { ws, dial };
}

/** Every item of the table holding the text anywhere (a full scan). */
async function itemsMentioning(text: string): Promise<unknown[]> {
  const found: unknown[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(new ScanCommand({ TableName: config.TABLE_NAME, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) if (JSON.stringify(item).includes(text)) found.push(item);
    start = page.LastEvaluatedKey;
  } while (start);
  return found;
}

const completed = (ws: { api: any }, id: string) =>
  eventually(async () => (await ws.api.get(`/privacy/requests/${id}`)).body, (r) => r.status === 'complete' || r.status === 'failed', 30_000);

describe('privacy', () => {
  it('erases a number\'s calls, contact and exports, leaving no trace in a full table scan; a second erase finds nothing', async () => {
    const { ws, dial } = await setup();
    // A valid NANP number (an exchange starting 0 or 1 is not one, and contacts refuse it).
    const person = freshNumber();
    const kept = await dial('+14155550199');
    for (let i = 0; i < 3; i++) await dial(person);
    expect((await ws.api.post('/create-contact', { body: { phone_number: person, first_name: 'Ada' } })).status).toBe(201);
    // A call from the number, ended: the analytics rollups count it (docs/analytics.md, "Recording").
    const { agent } = await newAgent(ws.api);
    const ours = await importNumber(ws.api, { inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] });
    const inbound = await ws.api.post('/sandbox/inbound-call', { body: { from_number: person, to_number: ours } });
    expect(inbound.status).toBe(201);
    expect((await ws.api.post(`/v2/stop-call/${inbound.body.call_id}`)).status).toBe(200);
    const stopped = await eventually(async () => (await ws.api.get(`/v2/get-call/${inbound.body.call_id}`)).body, (call) => call.call_status !== 'registered');
    expect(stopped).toMatchObject({ direction: 'inbound', from_number: person });
    const exported = await ws.api.post('/exports', { body: { type: 'calls', format: 'csv' } });
    await eventually(async () => (await ws.api.get(`/exports/${exported.body.export_id}`)).body, (e) => e.status === 'complete', 30_000);
    expect((await itemsMentioning(person)).length).toBeGreaterThan(0);

    const started = await ws.api.post('/privacy/delete-phone-number', { body: { phone_number: person } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ kind: 'delete_phone_number', status: 'pending', phone_number_masked: `***${person.slice(-4)}` });
    const done = await completed(ws, started.body.request_id);
    expect(done).toMatchObject({
      status: 'complete',
      report: {
        calls_deleted: 4, recordings_deleted: 0, chats_deleted: 0, sms_deleted: 0, contacts_deleted: 1, exports_deleted: 1,
        batch_tasks_erased: 0, audit_entries_masked: 0, log_entries_deleted: 0,
      },
    });
    // Nothing holds the number, the rollups included: an inbound caller's number is no rollup value.
    expect(await itemsMentioning(person)).toEqual([]);
    expect((await ws.api.get(`/v2/get-call/${kept.call_id}`)).status).toBe(200);
    expect((await ws.api.get(`/exports/${exported.body.export_id}`)).status).toBe(404);
    const audit = (await ws.api.get('/audit-log')).body as any[];
    expect(audit[0]).toMatchObject({ action: 'privacy.delete_phone_number', target: { type: 'phone_number', id: `***${person.slice(-4)}` } });

    const again = await ws.api.post('/privacy/delete-phone-number', { body: { phone_number: person } });
    expect((await completed(ws, again.body.request_id)).report).toEqual({
      calls_deleted: 0, recordings_deleted: 0, chats_deleted: 0, sms_deleted: 0, contacts_deleted: 0, exports_deleted: 0,
      batch_tasks_erased: 0, audit_entries_masked: 0, log_entries_deleted: 0,
    });
    const bad = await ws.api.post('/privacy/delete-phone-number', { body: { phone_number: '555-0100' } });
    expect(bad.body).toEqual({ status: 400, message: 'phone_number: Must be an E.164 number, e.g. +14155550100' });
    const other = await app.newWorkspace();
    expect((await other.api.get(`/privacy/requests/${started.body.request_id}`)).status).toBe(404);
  }, 60_000);

  it('also erases the number\'s SMS chats and their thread, batch tasks (a pending one is skipped, never dialled) and log entries quoting it', async () => {
    const ws = await app.newWorkspace();
    const { chatAgent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You book tables.', begin_message: 'Hi, want a table?' } });
    const { agent } = await newAgent(ws.api);
    const ours = freshNumber();
    expect(
      (await ws.api.post('/import-phone-number', {
        body: {
          phone_number: ours,
          termination_uri: 'sip:trunk.example.com',
          outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }],
          outbound_sms_agents: [{ agent_id: chatAgent.agent_id, weight: 1 }],
        },
      })).status,
    ).toBe(201);
    const person = freshNumber();
    const other = freshNumber();
    const chat = await ws.api.post('/create-sms-chat', { body: { from_number: ours, to_number: person } });
    expect(chat.status).toBe(201);
    expect((await ws.api.post(`/sms-chats/${chat.body.chat_id}/simulate-inbound`, { body: { content: 'Table for two at 8' } })).status).toBe(200);
    expect((await ws.api.post('/send-sms', { body: { from_number: ours, to_number: person, content: 'See you at 8' } })).status).toBe(200);
    const kept = await ws.api.post('/create-sms-chat', { body: { from_number: ours, to_number: other } });
    // A batch due in 2030: its tasks are pending.
    const batch = await ws.api.post('/create-batch-call', {
      body: { from_number: ours, trigger_timestamp: 1_900_000_000_000, tasks: [{ to_number: person, retell_llm_dynamic_variables: { name: 'Ada' } }, { to_number: other }] },
    });
    expect(batch.status).toBe(201);
    expect((await itemsMentioning(person)).length).toBeGreaterThan(3);

    const started = await ws.api.post('/privacy/delete-phone-number', { body: { phone_number: person } });
    const done = await completed(ws, started.body.request_id);
    expect(done.report).toMatchObject({ sms_deleted: 1, batch_tasks_erased: 1, calls_deleted: 0 });
    // The provider operation log held the opening, the answer and the one-off SMS.
    expect(done.report.log_entries_deleted).toBeGreaterThanOrEqual(3);
    expect(await itemsMentioning(person)).toEqual([]);
    expect((await ws.api.get(`/get-sms-chat/${chat.body.chat_id}`)).status).toBe(404);
    expect((await ws.api.get(`/get-sms-chat/${kept.body.chat_id}`)).status).toBe(200);
    const batchNow = (await ws.api.get(`/get-batch-call/${batch.body.batch_call_id}`)).body;
    expect(batchNow).toMatchObject({ total_task_count: 2, skipped_count: 1 });
    expect((await itemsMentioning(other)).length).toBeGreaterThan(0);
  }, 60_000);

  it('applies the agents\' retention by day (a fake clock), and the call view tells when', async () => {
    const { ws, dial } = await setup({ data_storage_retention_days: 2 });
    const callId = (await dial('+14155550123')).call_id;
    const view = await ws.api.get(`/privacy/call/${callId}`);
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      call_id: callId,
      data_storage_setting: 'everything',
      data_storage_retention_days: 2,
      recording: false,
      scrubbed: false,
      unscrubbed_copy: false,
    });
    expect(view.body.personal_fields).toEqual(expect.arrayContaining(['from_number', 'to_number']));
    const createdAt = view.body.retention_timestamp - 2 * DAY;
    expect(Math.abs(createdAt - Date.now())).toBeLessThan(60_000);

    expect(await applyRetention(ws.workspace_id, createdAt + 2 * DAY - 1)).toEqual({ calls_deleted: 0, chats_deleted: 0, calls_examined: 1, chats_examined: 0 });
    expect((await ws.api.get(`/v2/get-call/${callId}`)).status).toBe(200);
    expect(await applyRetention(ws.workspace_id, createdAt + 2 * DAY)).toEqual({ calls_deleted: 1, chats_deleted: 0, calls_examined: 1, chats_examined: 0 });
    expect((await ws.api.get(`/v2/get-call/${callId}`)).status).toBe(404);
    expect((await ws.api.get(`/privacy/call/${callId}`)).status).toBe(404);

    const run = await ws.api.post('/privacy/run-retention');
    expect(run.status).toBe(202);
    expect((await completed(ws, run.body.request_id)).report).toEqual({ calls_deleted: 0, chats_deleted: 0, calls_examined: 0, chats_examined: 0 });
  }, 60_000);

  it('keeps privacy routes to admin keys', async () => {
    const ws = await app.newWorkspace();
    const scoped = await ws.api.post('/api-keys', { body: apiKeyBody({ scopes: ['calls'] }) });
    const res = await fetch(`${app.url}/privacy/run-retention`, { method: 'POST', headers: { authorization: `Bearer ${scoped.body.api_key}` } });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ status: 403, message: 'This API key lacks the "admin" scope' });
  });
});

describe('reliability, account status, egress', () => {
  it('validates, stores and audits the workspace LLM token limit and fallbacks', async () => {
    const ws = await app.newWorkspace();
    expect((await ws.api.get('/workspace/reliability')).body).toEqual({ llm_token_limit: 32768, fallback_llm_model: null, fallback_voice_ids: [] });
    const low = await ws.api.put('/workspace/reliability', { body: { llm_token_limit: 1023 } });
    expect(low.body).toEqual({ status: 400, message: 'llm_token_limit: Must be from 1024 to 131072' });
    const model = await ws.api.put('/workspace/reliability', { body: { fallback_llm_model: 'gpt-0' } });
    expect(model.body).toEqual({ status: 400, message: 'fallback_llm_model: Unknown model gpt-0' });
    const set = await ws.api.put('/workspace/reliability', { body: { llm_token_limit: 4096, fallback_llm_model: 'gpt-4.1-mini' } });
    expect(set.body).toEqual({ llm_token_limit: 4096, fallback_llm_model: 'gpt-4.1-mini', fallback_voice_ids: [] });
    expect((await ws.api.get('/workspace/reliability')).body.llm_token_limit).toBe(4096);
    expect((await ws.api.get('/audit-log')).body[0]).toMatchObject({ action: 'workspace.reliability.update', changes: ['llm_token_limit', 'fallback_llm_model'] });
    const cleared = await ws.api.put('/workspace/reliability', { body: { fallback_llm_model: null } });
    expect(cleared.body.fallback_llm_model).toBeNull();
  });

  it('answers the account status and the egress addresses', async () => {
    const ws = await app.newWorkspace();
    const status = await ws.api.get('/account-status');
    expect(status.body).toEqual({
      workspace_id: ws.workspace_id,
      status: 'active',
      can_work: true,
      reasons: [],
      verification: { status: 'not_submitted' },
      spend: { state: 'ok', codes: [] },
      concurrency: { limit: 20, in_use: 0 },
      rate_limits: { per_key_per_minute: 600, per_ip_per_minute: 3000 },
    });
    expect((await ws.api.get('/workspace/egress')).body).toEqual({ fixed: false, addresses: [] });
  });
});
