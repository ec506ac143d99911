import { afterAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { contactBody, freshNumber, newAgent, newChatAgent } from '../support/factories.ts';
import { call, type ApiClient } from '../support/http.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const { PURGE_LIMITS, runPurgeStep } = await import('../../shared/members/purge.ts');
const { enqueuePurgeStep } = await import('../../shared/members/purge-queue.ts');
const { purges, workspaceItemsPage, workspacePartitionItems } = await import('../../shared/members/store.ts');
const { MockProvider } = await import('../../shared/vendors/telephony/mock.ts');
const { objectStore } = await import('../../shared/platform/aws/object-store.ts');

// Small steps, so the purge of even a small workspace takes many resumed steps.
Object.assign(PURGE_LIMITS, { scanPageSize: 15, scanPagesPerStep: 2, numbersPerStep: 1 });

const UNAUTHORIZED = { status: 401, message: 'Missing or invalid API key / session' };
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('a png')]);

/** Every item of the workspace, as the purge finds them (the whole table scanned). */
async function itemsOf(workspaceId: string): Promise<string[]> {
  const found: string[] = [];
  let cursor: Record<string, unknown> | undefined;
  do {
    const page = await workspaceItemsPage(workspaceId, cursor, 1000);
    found.push(...page.items.map((item) => `${item.pk} ${item.sk}`));
    cursor = page.lastKey;
  } while (cursor);
  return found.sort();
}

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

/** A workspace with agents, two numbers (one bought, one imported), an ended call, a contact, a chat, an asset and a member. */
async function populated() {
  const ws = await app.newWorkspace();
  const api: ApiClient = ws.api;
  const { agent } = await newAgent(api);
  const bought = await api.post('/create-phone-number', { body: { phone_number: freshNumber() } });
  expect(bought.status).toBe(201);
  const imported = freshNumber();
  expect(
    (await api.post('/import-phone-number', { body: { phone_number: imported, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] } })).status,
  ).toBe(201);
  const placed = await api.post('/v2/create-phone-call', { body: { from_number: imported, to_number: '+14155550123', metadata: { sandbox_call_ms: 0 } } });
  expect(placed.status).toBe(201);
  await eventually(
    () => api.get(`/v2/get-call/${placed.body.call_id}`),
    (res) => ['ended', 'error', 'not_connected'].includes(res.body.call_status),
    20_000,
  );
  expect((await api.post('/create-contact', { body: contactBody({ phone_number: freshNumber() }) })).status).toBe(201);
  const { chatAgent } = await newChatAgent(api);
  const chat = await api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
  expect(chat.status).toBe(201);
  expect((await api.patch('/end-chat/' + chat.body.chat_id, {})).status).toBe(200);
  const assetId = await uploadAsset(ws.api_key);
  const admin = await api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } });
  expect(admin.status).toBe(201);
  return { ws, boughtNumber: bought.body.phone_number as string, callId: placed.body.call_id as string, assetId };
}

describe('POST /workspace/delete purges the workspace in the background', () => {
  it('refuses every request at once, releases numbers, empties the buckets and deletes every item; another workspace is untouched', async () => {
    const doomed = await populated();
    const kept = await populated();
    const keptItems = await itemsOf(kept.ws.workspace_id);
    const doomedBefore = await itemsOf(doomed.ws.workspace_id);
    expect(doomedBefore.length).toBeGreaterThan(30);
    expect(doomedBefore.some((key) => key.startsWith(`CALL#${doomed.callId}`))).toBe(true);
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
    expect(done).toMatchObject({ phase: 'done', numbers_released: 2, objects_deleted: 3 });
    expect(done!.step).toBeGreaterThan(5);
    expect(done!.items_deleted).toBeGreaterThanOrEqual(doomedBefore.length - 20);
    expect(done!.expires_at! - Math.floor(done!.completed_timestamp! / 1000)).toBe(90 * 86_400);

    // The workspace partition and every other item of the workspace are gone.
    expect(await workspacePartitionItems(doomed.ws.workspace_id)).toEqual([]);
    expect(await itemsOf(doomed.ws.workspace_id)).toEqual([]);
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
});
