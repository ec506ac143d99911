import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { artifactSettings } from '../../shared/calls/artifacts/recordings.ts';
import { syncs } from '../../shared/knowledge-bases/store.ts';
import { removeSyncsOf } from '../../shared/knowledge-bases/syncs.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { awsFailure, named } from '../support/aws-failures.ts';
import { newAgent, newChatAgent } from '../support/factories.ts';

/**
 * A store that does not answer (a timeout, throttling) is a 503 with retry-after wherever
 * it happens, never the 4xx of the condition the code meant to catch (an unknown key, a
 * missing item): each route below catches only its own error. The failure is injected at
 * the one table call it concerns, as the DynamoDB client throws it (tagged), so the gate's
 * and the rest of the request's store calls go through.
 */

const app = await startTestApp();
afterEach(() => {
  vi.restoreAllMocks();
});

const UNAVAILABLE = { status: 503, message: 'Service temporarily unavailable: the data store did not answer. Retry in 5s.' };

/** Every `method` call whose input names `needle` fails as a store timeout (or `error`); the others go through. */
function storeFailsOn(method: 'get' | 'delete' | 'transact', needle: string, error: Error = named('TimeoutError', 'socket timed out')) {
  const real = table[method].bind(table) as (...args: unknown[]) => Promise<unknown>;
  const spy = vi.spyOn(table, method).mockImplementation((async (...args: unknown[]) => {
    if (JSON.stringify(args[0]).includes(needle)) throw await awsFailure(error);
    return real(...args);
  }) as never);
  return spy;
}

function expectUnavailable(res: { status: number; headers: Record<string, string>; body: unknown }) {
  expect({ status: res.status, retryAfter: res.headers['retry-after'], body: res.body }).toEqual({ status: 503, retryAfter: '5', body: UNAVAILABLE });
}

const hex = () => randomBytes(12).toString('hex');

describe('a store failure is 503, not the 4xx of what the code meant to catch', () => {
  it('chats list: a timeout reading the pagination key is 503; a key that names no chat is still 400', async () => {
    const ws = await app.newWorkspace();
    const { chatAgent } = await newChatAgent(ws.api);
    const chat = await ws.api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
    expect(chat.status).toBe(201);

    const spy = storeFailsOn('get', `CHAT#${chat.body.chat_id}`);
    expectUnavailable(await ws.api.post('/v3/list-chats', { body: { pagination_key: chat.body.chat_id } }));
    expectUnavailable(await ws.api.get(`/list-chats?pagination_key=${chat.body.chat_id}`));
    expect(spy).toHaveBeenCalled();
    // Throttling too.
    spy.mockRestore();
    storeFailsOn('get', `CHAT#${chat.body.chat_id}`, named('ProvisionedThroughputExceededException'));
    expectUnavailable(await ws.api.post('/v3/list-chats', { body: { pagination_key: chat.body.chat_id } }));
    vi.restoreAllMocks();

    for (const key of ['chat_nope', `chat_${hex()}`]) {
      const bad = await ws.api.post('/v3/list-chats', { body: { pagination_key: key } });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ status: 400, message: 'Invalid pagination_key' });
    }
    // Another workspace's chat is no key of this one.
    const other = await app.newWorkspace();
    expect((await other.api.post('/v3/list-chats', { body: { pagination_key: chat.body.chat_id } })).body).toEqual({ status: 400, message: 'Invalid pagination_key' });
    const page = await ws.api.post('/v3/list-chats', { body: { pagination_key: chat.body.chat_id } });
    expect(page.status).toBe(200);
  });

  it('reliability settings: a timeout reading a fallback voice is 503; an unknown voice is still 400', async () => {
    const ws = await app.newWorkspace();
    const voiceId = `custom-${hex()}`;
    storeFailsOn('get', voiceId);
    expectUnavailable(await ws.api.put('/workspace/reliability', { body: { fallback_voice_ids: [voiceId] } }));
    vi.restoreAllMocks();
    expect((await ws.api.put('/workspace/reliability', { body: { fallback_voice_ids: [voiceId] } })).body).toEqual({
      status: 400,
      message: `fallback_voice_ids.0: Unknown voice ${voiceId}`,
    });
  });

  it('share links: a timeout reading the agent is 503, not "link not found"', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api);
    const link = await ws.api.post(`/agents/${agent.agent_id}/share-links`);
    expect(link.status).toBe(201);
    storeFailsOn('get', agent.agent_id);
    expectUnavailable(await ws.api.delete(`/share-links/${link.body.share_link_id}`));
    vi.restoreAllMocks();
    expect((await ws.api.delete(`/share-links/${link.body.share_link_id}`)).status).toBe(204);
  });

  it('backfill-call-analysis: a timeout reading a call is 503, not a call silently skipped', async () => {
    const ws = await app.newWorkspace();
    const callId = `call_${hex()}`;
    storeFailsOn('get', `CALL#${callId}`);
    expectUnavailable(await ws.api.post('/backfill-call-analysis', { body: { call_ids: [callId] } }));
    vi.restoreAllMocks();
    // A call ID that names no call is skipped.
    const skipped = await ws.api.post('/backfill-call-analysis', { body: { call_ids: [callId] } });
    expect([skipped.status, skipped.body]).toEqual([202, { status: 'accepted', queued: 0 }]);
  });

  it('knowledge-base sources: a timeout deleting a source is 503, not "source not found"', async () => {
    const ws = await app.newWorkspace();
    const kb = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Store failures' } });
    expect(kb.status).toBe(201);
    const sourceId = `source_${hex()}`;
    const path = `/delete-knowledge-base-source/${kb.body.knowledge_base_id}/source/${sourceId}`;
    storeFailsOn('delete', sourceId);
    expectUnavailable(await ws.api.delete(path));
    vi.restoreAllMocks();
    expect((await ws.api.delete(path)).body).toEqual({ status: 404, message: `Source ${sourceId} not found` });
  });

  it('SSO, SAML and SCIM settings: a timeout writing is 503, not "not configured" or "changed meanwhile"', async () => {
    const ws = await app.newWorkspace();
    await ws.api.post('/workspace/members', { body: { email: `admin-${hex()}@example.com`, role: 'admin' } });
    for (const [path, configured] of [['/workspace/sso', 'SSO is not configured'], ['/workspace/saml', 'SAML is not configured']] as const) {
      storeFailsOn('transact', ws.workspace_id);
      expectUnavailable(await ws.api.delete(path));
      vi.restoreAllMocks();
      expect((await ws.api.delete(path)).body).toEqual({ status: 400, message: configured });
    }
    storeFailsOn('transact', 'SCIMCONFIG');
    expectUnavailable(await ws.api.post('/workspace/scim-token'));
    vi.restoreAllMocks();
    expect((await ws.api.post('/workspace/scim-token')).status).toBe(201);
  });

  it("a call's artifact settings: a timeout reading its agent fails, rather than dropping the agent's PII settings", async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api, { agent: { data_storage_setting: 'everything_except_pii', pii_config: { mode: 'post_call', categories: ['ssn'] } } });
    const call = { workspace_id: ws.workspace_id, agent_id: agent.agent_id, agent_version: agent.version };
    expect(await artifactSettings(call)).toMatchObject({ dataStorage: 'everything_except_pii', piiCategories: ['ssn'] });
    storeFailsOn('get', agent.agent_id);
    await expect(artifactSettings(call)).rejects.toThrow('socket timed out');
    vi.restoreAllMocks();
    // A deleted agent leaves the defaults.
    expect(await artifactSettings({ ...call, agent_id: `agent_${hex()}` })).toMatchObject({ dataStorage: 'everything', piiCategories: undefined });
  });

  it("a knowledge base's syncs: a timeout removing one fails the removal rather than leave it behind", async () => {
    const ws = await app.newWorkspace();
    const knowledgeBaseId = `knowledge_base_${hex()}`;
    const syncId = `kb_sync_${hex()}`;
    const nowMs = Date.now();
    await syncs.create(
      {
        type: 'knowledge_base_sync', sync_id: syncId, workspace_id: ws.workspace_id, knowledge_base_id: knowledgeBaseId, connection_id: `connection_${hex()}`,
        provider: 'google_drive', folder_id: 'f', status: 'complete', document_count: 0, created_timestamp: nowMs, updated_timestamp: nowMs,
      } as never,
      ws.workspace_id,
      syncId,
    );
    storeFailsOn('delete', syncId);
    await expect(removeSyncsOf(ws.workspace_id, knowledgeBaseId)).rejects.toThrow('socket timed out');
    expect(await syncs.get(ws.workspace_id, syncId)).toBeDefined();
    vi.restoreAllMocks();
    await removeSyncsOf(ws.workspace_id, knowledgeBaseId);
    expect(await syncs.get(ws.workspace_id, syncId)).toBeUndefined();
  });
});
