import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { contactBody, freshNumber, newAgent, newChatAgent, publicKeyBody } from '../support/factories.ts';
import { call, type ApiClient } from '../support/http.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const { PURGE_LIMITS, runPurgeStep } = await import('../../shared/members/purge.ts');
const { enqueuePurgeStep } = await import('../../shared/members/purge-queue.ts');
const { purges } = await import('../../shared/members/store.ts');
const { table } = await import('../../shared/platform/store/table.ts');
const { keys } = await import('../../shared/platform/store/keys.ts');
const { MockProvider } = await import('../../shared/vendors/telephony/mock.ts');
const { objectStore } = await import('../../shared/platform/aws/object-store.ts');
const { chargeAssistantMessage } = await import('../../shared/conductor/credits/index.ts');

// Small steps, so the purge of even a small workspace takes many resumed steps, and a
// partition a record heads (a call's, a batch's) is emptied over several pages and steps.
Object.assign(PURGE_LIMITS, { pageSize: 4, headsPerPage: 3, pagesPerStep: 3, partitionsAtOnce: 2, partitionRoundsPerStep: 3, numbersPerStep: 1 });

const UNAUTHORIZED = { status: 401, message: 'Missing or invalid API key / session' };
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('a png')]);

/**
 * Every item of the workspace, found by scanning the whole table (the purge never scans: this
 * is the check of what it reaches): its ID in the key, or its `workspace_id` on the item;
 * never the purge's own record.
 */
async function itemsOf(workspaceId: string): Promise<string[]> {
  const found: string[] = [];
  let cursor: Record<string, unknown> | undefined;
  do {
    const page = await table.scanPage<{ pk: string; sk: string }>({
      ExclusiveStartKey: cursor,
      ProjectionExpression: 'pk, sk',
      FilterExpression: '(contains(pk, :ws) OR workspace_id = :ws OR sk = :ws) AND pk <> :purge',
      ExpressionAttributeValues: { ':ws': workspaceId, ':purge': keys.workspacePurge(workspaceId).pk },
    });
    found.push(...page.items.map((item) => `${item.pk} ${item.sk}`));
    cursor = page.lastKey;
  } while (cursor);
  return found.sort();
}

/** The origin index's entries of `origin` (they name a key, not its workspace). */
const originEntries = async (origin: string) =>
  (await table.queryPage({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': keys.publicOrigins(origin).pk } })).items;

async function uploadAsset(key: string) {
  const form = new FormData();
  form.append('file', new Blob([PNG], { type: 'image/png' }), 'logo.png');
  const request = new Request('http://local/', { method: 'POST', body: form });
  const res = await call(app.url, 'POST', '/create-asset', {
    key,
    rawBody: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type')! },
  });
  expect(res.status).toBe(201);
  return res.body.asset_id as string;
}

/**
 * One of (nearly) everything: agents with webhooks, two numbers (one bought, one imported),
 * an ended call and its webhook deliveries, a contact, a chat, an SMS chat (its thread and
 * outbound links), an asset, a member, a public key allowing an origin and a chat started
 * through it, a share link, a draft batch call and one that dialled (its task's idempotency
 * claim), a knowledge base with its sources, and an assistant message charged beyond the
 * free credits (its counters, charge, ledger entry and billing entry).
 */
async function populated() {
  const ws = await app.newWorkspace();
  const api: ApiClient = ws.api;
  const receiver = await webhookReceiver();
  const { agent, llm } = await newAgent(api, { agent: { webhook_url: receiver.url } });
  const { chatAgent } = await newChatAgent(api);
  const bought = await api.post('/create-phone-number', { body: { phone_number: freshNumber() } });
  expect(bought.status).toBe(201);
  const imported = freshNumber();
  const sms = [{ agent_id: chatAgent.agent_id, weight: 1 }];
  expect(
    (
      await api.post('/import-phone-number', {
        body: { phone_number: imported, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }], outbound_sms_agents: sms, inbound_sms_agents: sms },
      })
    ).status,
  ).toBe(201);
  const placed = await api.post('/v2/create-phone-call', { body: { from_number: imported, to_number: '+14155550123', metadata: { sandbox_call_ms: 0 } } });
  expect(placed.status).toBe(201);
  await eventually(
    () => api.get(`/v2/get-call/${placed.body.call_id}`),
    (res) => ['ended', 'error', 'not_connected'].includes(res.body.call_status),
    20_000,
  );
  await eventually(async () => receiver.events(placed.body.call_id), (events) => events.includes('call_ended'), 20_000);
  expect((await api.post('/create-contact', { body: contactBody({ phone_number: freshNumber() }) })).status).toBe(201);
  const chat = await api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
  expect(chat.status).toBe(201);
  expect((await api.patch('/end-chat/' + chat.body.chat_id, {})).status).toBe(200);
  const smsChat = await api.post('/create-sms-chat', { body: { from_number: imported, to_number: freshNumber() } });
  expect(smsChat.status).toBe(201);
  expect((await api.post(`/sms-chats/${smsChat.body.chat_id}/simulate-inbound`, { body: { content: 'Yes please' } })).status).toBe(200);
  const assetId = await uploadAsset(ws.api_key);
  const admin = await api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } });
  expect(admin.status).toBe(201);
  const origin = `https://${ws.workspace_id}.example`;
  const publicKey = await api.post('/public-keys', { body: publicKeyBody({ allowed_origins: [origin] }) });
  expect(publicKey.status).toBe(201);
  const widgetChat = await call(app.url, 'POST', '/public/chat/start', { body: { agent_id: chatAgent.agent_id }, headers: { origin }, key: publicKey.body.public_key });
  expect(widgetChat.status).toBe(201);
  expect((await api.post(`/agents/${agent.agent_id}/share-links`)).status).toBe(201);
  const batch = await api.post('/create-batch-call', { body: { from_number: imported, draft: true, tasks: [{ to_number: freshNumber() }, { to_number: freshNumber() }] } });
  expect(batch.status).toBe(201);
  // A batch that dialled: each task's dial holds an idempotency claim.
  const dialled = await api.post('/create-batch-call', { body: { from_number: imported, tasks: [{ to_number: freshNumber(), metadata: { sandbox_call_ms: 0 } }] } });
  expect(dialled.status).toBe(201);
  const dialledTask = await eventually(
    async () => (await api.get(`/get-batch-call/${dialled.body.batch_call_id}`)).body.tasks[0],
    (task: any) => task.status === 'called',
    20_000,
  );
  await eventually(
    () => api.get(`/v2/get-call/${dialledTask.call_id}`),
    (res) => ['ended', 'error', 'not_connected'].includes(res.body.call_status) && res.body.call_analysis !== undefined,
    20_000,
  );
  const kb = await api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Clinic', knowledge_base_texts: [{ title: 'Hours', text: 'Open 9 to 5.' }] } });
  expect(kb.status).toBe(201);
  await eventually(async () => (await api.get(`/get-knowledge-base/${kb.body.knowledge_base_id}`)).body, (body: any) => body.status === 'complete', 20_000);
  // A test case, a batch test run to its end (its runs and their pointers) and the publish gate's setting.
  const testCase = await api.post('/create-test-case-definition', {
    body: { name: 'Greets', user_prompt: 'Say "Hi"', metrics: ['The agent says "Hi"'], response_engine: { type: 'retell-llm', llm_id: llm.llm_id } },
  });
  expect(testCase.status).toBe(201);
  const batchTest = await api.post('/create-batch-test', { body: { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [testCase.body.test_case_definition_id] } });
  expect(batchTest.status).toBe(201);
  await eventually(async () => (await api.get(`/get-batch-test/${batchTest.body.test_case_batch_job_id}`)).body, (body: any) => body.status === 'complete', 20_000);
  expect((await api.patch('/testing/settings', { body: { require_passing_batch_test_to_publish: true } })).status).toBe(200);
  // An assistant session with its messages (their own partition) and the walkthrough's marker.
  const conductorSession = await api.post('/conductor/sessions', { body: { title: 'Help', attachments: [{ type: 'llm', id: llm.llm_id }] } });
  expect(conductorSession.status).toBe(201);
  expect((await api.post(`/conductor/sessions/${conductorSession.body.session_id}/messages`, { body: { content: 'help' } })).status).toBe(200);
  const { markPlaygroundTurn } = await import('../../shared/conductor/sessions/store.ts');
  await markPlaygroundTurn(ws.workspace_id, Date.now());
  expect((await api.patch('/billing/settings', { body: { conductor_pay_as_you_go: true } })).status).toBe(200);
  await chargeAssistantMessage({ workspaceId: ws.workspace_id, sessionId: 'conductor_session_purge', messageId: `message_${randomBytes(12).toString('hex')}`, inputTokens: 500_000, outputTokens: 0, nowMs: Date.now() });
  return { ws, boughtNumber: bought.body.phone_number as string, callId: placed.body.call_id as string, assetId, origin };
}

describe('POST /workspace/delete purges the workspace in the background', () => {
  it('refuses every request at once, releases numbers, empties the buckets and deletes every item; another workspace is untouched', async () => {
    const doomed = await populated();
    const kept = await populated();
    const keptItems = await itemsOf(kept.ws.workspace_id);
    const doomedBefore = await itemsOf(doomed.ws.workspace_id);
    expect(doomedBefore.length).toBeGreaterThan(30);
    for (const family of [`CALL#${doomed.callId} LINE#`, `CHAT#`, 'PUBLICCHAT#', `WS#${doomed.ws.workspace_id}#BATCH#`, `WS#${doomed.ws.workspace_id}#KB#`, `WS#${doomed.ws.workspace_id}#SMSTHREAD#`,
      `WS#${doomed.ws.workspace_id}#SMSOUT#`, `WS#${doomed.ws.workspace_id}#WEBHOOKCLAIM#`, `WS#${doomed.ws.workspace_id}#DELIVERY#`, 'SHARETOKEN#', 'ASSETPUB#', 'PHONECLAIM#', `CONTACTPHONE#`, `IDEMPOTENCY#${doomed.ws.workspace_id}#`,
      ...['CONDUCTORDAY#', 'CONDUCTORMONTH#', 'CONDUCTORCHARGE#', 'CONDUCTORENTRY#', 'SOURCE#conductor:'].map((sk) => `WS#${doomed.ws.workspace_id}#BILLING ${sk}`)]) {
      expect(doomedBefore.some((key) => key.startsWith(family)), family).toBe(true);
    }
    expect(await originEntries(doomed.origin)).toHaveLength(1);
    const release = vi.spyOn(MockProvider.prototype, 'release');

    const name = (await doomed.ws.api.get('/workspace')).body.name;
    const deleted = await doomed.ws.api.post('/workspace/delete', { body: { confirm: name } });
    expect(deleted.status).toBe(202);
    expect(deleted.body).toEqual({ workspace_id: doomed.ws.workspace_id, deleted: true });
    // Duplicates of the first step (a redelivery) change nothing: they lose the step's conditional advance.
    await Promise.all([enqueuePurgeStep(doomed.ws.workspace_id, 0), enqueuePurgeStep(doomed.ws.workspace_id, 0)]);

    // At once, before the purge: the key, and every route behind it, is refused.
    for (const path of ['/workspace', '/list-agents', '/list-phone-numbers', `/v2/get-call/${doomed.callId}`, '/workspace/members']) {
      const res = await doomed.ws.api.get(path);
      expect(res.status, path).toBe(401);
      expect(res.body, path).toEqual(UNAUTHORIZED);
    }
    expect((await doomed.ws.api.post('/workspace/delete', { body: { confirm: name } })).body).toEqual(UNAUTHORIZED);

    const done = await eventually(() => purges.get(doomed.ws.workspace_id), (item) => item?.phase === 'done', 50_000);
    // Objects: the asset, and the sandbox call's recording in two formats.
    expect(done).toMatchObject({ phase: 'done', numbers_released: 2 });
    expect(done!.objects_deleted).toBeGreaterThanOrEqual(3);
    expect(done!.step).toBeGreaterThan(5);
    expect(done!.items_deleted).toBeGreaterThanOrEqual(doomedBefore.length - 20);
    // The work is the workspace's items (each read about once, a head and its listing entry twice), not the table's.
    expect(done!.items_scanned).toBeLessThan(2 * doomedBefore.length);
    expect(done!.expires_at! - Math.floor(done!.completed_timestamp! / 1000)).toBe(90 * 86_400);

    // Every item of the workspace is gone, and the origin index's entry of its public key.
    expect(await itemsOf(doomed.ws.workspace_id)).toEqual([]);
    expect(await originEntries(doomed.origin)).toEqual([]);
    expect(await originEntries(kept.origin)).toHaveLength(1);
    // The bought number was released at its carrier (the imported one has no carrier number).
    expect(release.mock.calls.map(([ws, held]) => [ws, held.phoneNumber])).toEqual([[doomed.ws.workspace_id, doomed.boughtNumber]]);
    expect(await objectStore().get(`assets/${doomed.ws.workspace_id}/${doomed.assetId}`)).toBeUndefined();
    expect(await objectStore().get(`recordings/${doomed.ws.workspace_id}/${doomed.callId}/recording.wav`)).toBeUndefined();
    expect(await objectStore().get(`recordings/${kept.ws.workspace_id}/${kept.callId}/recording.wav`)).toBeDefined();
    expect((await fetch(`${app.url}/public/assets/${doomed.assetId}`)).status).toBe(404);

    // The other workspace: every item as it was, its asset still served, its API working.
    expect(await itemsOf(kept.ws.workspace_id)).toEqual(keptItems);
    expect((await fetch(`${app.url}/public/assets/${kept.assetId}`)).status).toBe(200);
    expect((await kept.ws.api.get('/list-phone-numbers')).body.items).toHaveLength(2);
    expect((await kept.ws.api.get(`/v2/get-call/${kept.callId}`)).status).toBe(200);

    // A late redelivery of any step finds the purge done and does nothing.
    await runPurgeStep({ kind: 'workspace-purge', workspace_id: doomed.ws.workspace_id, step: 0 });
    expect(await purges.get(doomed.ws.workspace_id)).toEqual(done);
    release.mockRestore();
  }, 90_000);

  it("goes on with a purge whose items phase saved a scan's cursor (a purge under way when the walk replaced the scan): the walk starts over", async () => {
    const workspaceId = `ws_${randomBytes(12).toString('hex')}`;
    const nowMs = Date.now();
    await table.batchPut([
      { ...keys.workspace(workspaceId), workspace_id: workspaceId, deleted_timestamp: nowMs },
      { ...keys.auditEntry(workspaceId, 'audit_01'), workspace_id: workspaceId },
      { ...keys.contact(workspaceId, 'contact_01'), workspace_id: workspaceId },
      {
        ...keys.workspacePurge(workspaceId),
        workspace_id: workspaceId,
        phase: 'items',
        step: 7,
        cursor: JSON.stringify({ pk: 'CALL#call_01', sk: 'CALL' }),
        numbers_released: 0,
        objects_deleted: 0,
        items_deleted: 0,
        items_scanned: 0,
        started_timestamp: nowMs,
        updated_timestamp: nowMs,
      },
    ]);
    expect(await itemsOf(workspaceId)).toHaveLength(3);
    await runPurgeStep({ kind: 'workspace-purge', workspace_id: workspaceId, step: 7 });
    const done = await eventually(() => purges.get(workspaceId), (item) => item?.phase === 'done', 30_000);
    expect(done!.step).toBeGreaterThan(7);
    expect(await itemsOf(workspaceId)).toEqual([]);
  }, 60_000);
});
