import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp, signedWebhook } from '../support/fake-livekit.ts';
import { call, type ApiClient } from '../support/http.ts';
import { newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Retrieval for the LiveKit agent worker (docs/calls-media.md, the worker's contract):
 * `POST /internal/calls/{call_id}/kb-retrieve` with the call's report token from the
 * dispatch metadata. The call's workspace and agent version (with its agent_override) pick
 * the knowledge bases; each retrieval is recorded for `GET /kb-retrievals/{call_id}`.
 */

const { livekit, app } = await startLiveKitTestApp();

const FACTS: Record<string, string> = {
  hours: 'Opening hours: the clinic is open from 8 am to 6 pm Monday to Friday, and closed on weekends.',
  parking: 'Parking: free parking is available in the garage under the building; take a ticket at the barrier.',
  insurance: 'Insurance: we accept most dental insurance plans, including Delta and Cigna, and bill them directly.',
  whitening: 'Whitening: teeth whitening takes about one hour and costs 300 dollars per session.',
};

async function helpCentre(api: ApiClient) {
  const res = await api.post('/create-knowledge-base', {
    body: { knowledge_base_name: 'Clinic', knowledge_base_texts: Object.entries(FACTS).map(([title, text]) => ({ title, text })) },
  });
  expect(res.status).toBe(201);
  const kb = await eventually(
    async () => (await api.get(`/get-knowledge-base/${res.body.knowledge_base_id}`)).body,
    (body: any) => body.status === 'complete',
    30_000,
  );
  const sourceOf = Object.fromEntries(kb.knowledge_base_sources.map((source: any) => [source.title, source.source_id])) as Record<string, string>;
  return { kbId: kb.knowledge_base_id as string, sourceOf };
}

/** A web call on LiveKit and the report token its dispatch carried. */
async function liveWebCall(apiKey: string, body: Record<string, unknown>) {
  const web: any = await retellClient(app.url, apiKey).call.createWebCall(body as never);
  const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === web.call_id)!;
  const token = JSON.parse(dispatch.body.metadata).report_token as string;
  return { callId: web.call_id as string, token };
}

const retrieve = (callId: string, body: unknown, token?: string) =>
  call(app.url, 'POST', `/internal/calls/${callId}/kb-retrieve`, {
    rawBody: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });

describe('retrieval for the LiveKit worker', () => {
  it('answers the chunks of the agent version\'s knowledge bases and records the retrieval for kb-retrievals', async () => {
    const ws = await app.newWorkspace();
    const { kbId, sourceOf } = await helpCentre(ws.api);
    const { agent } = await newAgent(ws.api, {
      llm: { general_prompt: 'You are the clinic front desk.', knowledge_base_ids: [kbId], kb_config: { top_k: 2 } },
    });
    const { callId, token } = await liveWebCall(ws.api_key, { agent_id: agent.agent_id });
    const signed = await signedWebhook({ event: 'participant_joined', room: { name: callId }, participant: { identity: 'web_user', kind: 'STANDARD' } });
    const joined = await call(app.url, 'POST', '/livekit/webhook', { rawBody: signed.body, headers: { 'content-type': 'application/json', authorization: signed.authorization } });
    expect(joined.body).toEqual({ applied: 'ongoing' });

    const found = await retrieve(callId, { query: 'Where can I park my car?' }, token);
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ call_id: callId, knowledge_base_ids: [kbId] });
    expect(found.body.retrieval_id).toMatch(/^\S+$/);
    expect(found.body.chunks).toHaveLength(2);
    expect(found.body.chunks[0]).toMatchObject({ knowledge_base_id: kbId, source_id: sourceOf.parking, content: FACTS.parking });
    expect(found.body.chunks[0].score).toBeGreaterThanOrEqual(found.body.chunks[1].score);
    expect(found.body.prompt.split('\n\n')[0]).toBe('## Knowledge base');
    expect(found.body.prompt).toContain(`[1] ${FACTS.parking}`);

    const second = await retrieve(callId, { query: '  How much is whitening?  ' }, token);
    expect(second.status).toBe(200);
    expect(second.body.chunks[0].source_id).toBe(sourceOf.whitening);

    const recorded = await ws.api.get(`/kb-retrievals/${callId}`);
    expect(recorded.status).toBe(200);
    expect(recorded.body.call_id).toBe(callId);
    expect(recorded.body.retrievals).toHaveLength(2);
    expect(recorded.body.retrievals.map((entry: any) => entry.query)).toEqual(['Where can I park my car?', 'How much is whitening?']);
    expect(recorded.body.retrievals[0]).toMatchObject({ retrieval_id: found.body.retrieval_id, knowledge_base_ids: [kbId], chunks: found.body.chunks });

    // Bad bodies are 400s and record nothing.
    const empty = await retrieve(callId, { query: '   ' }, token);
    expect(empty.status).toBe(400);
    expect(empty.body.message).toBe('query: Must not be empty');
    const extra = await retrieve(callId, { query: 'parking', knowledge_base_ids: ['knowledge_base_other'] }, token);
    expect(extra.status).toBe(400);
    expect((await ws.api.get(`/kb-retrievals/${callId}`)).body.retrievals).toHaveLength(2);

    // An ended call retrieves no more (409), as its reports.
    const ended = await call(app.url, 'POST', `/internal/calls/${callId}/events`, {
      rawBody: JSON.stringify({ event: 'call_ended', sequence: 1, timestamp: Date.now(), disconnection_reason: 'agent_hangup' }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    });
    expect(ended.status).toBe(204);
    const late = await retrieve(callId, { query: 'parking' }, token);
    expect(late.status).toBe(409);
    expect(late.body.message).toBe(`Call ${callId} has ended`);
  });

  it('refuses a missing token, another call\'s token and another workspace\'s; another workspace sees no retrievals', async () => {
    const ws = await app.newWorkspace();
    const other = await app.newWorkspace();
    const { kbId } = await helpCentre(ws.api);
    const { agent } = await newAgent(ws.api, { llm: { knowledge_base_ids: [kbId] } });
    const { agent: otherAgent } = await newAgent(other.api);
    const mine = await liveWebCall(ws.api_key, { agent_id: agent.agent_id });
    const sibling = await liveWebCall(ws.api_key, { agent_id: agent.agent_id });
    const theirs = await liveWebCall(other.api_key, { agent_id: otherAgent.agent_id });

    const anonymous = await retrieve(mine.callId, { query: 'parking' });
    expect(anonymous.status).toBe(401);
    expect((await retrieve(mine.callId, { query: 'parking' }, sibling.token)).status).toBe(401);
    expect((await retrieve(mine.callId, { query: 'parking' }, theirs.token)).status).toBe(401);
    expect((await retrieve(mine.callId, { query: 'parking' }, `${mine.token}x`)).status).toBe(401);
    // A valid token of a call that does not exist: 404.
    const { workerReportToken } = await import('../../shared/vendors/media/index.ts');
    const ghost = 'call_000000000000000000000000';
    const missing = await retrieve(ghost, { query: 'parking' }, await workerReportToken(ghost));
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('Call not found');
    expect((await ws.api.get(`/kb-retrievals/${mine.callId}`)).status).toBe(404);

    expect((await retrieve(mine.callId, { query: 'parking' }, mine.token)).status).toBe(200);
    expect((await ws.api.get(`/kb-retrievals/${mine.callId}`)).body.retrievals).toHaveLength(1);
    const foreign = await other.api.get(`/kb-retrievals/${mine.callId}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe(`No knowledge base retrievals for ${mine.callId}`);
    // The other workspace's call uses its own agent, which has no knowledge base: nothing retrieved or recorded.
    const none = await retrieve(theirs.callId, { query: 'parking' }, theirs.token);
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ call_id: theirs.callId, retrieval_id: null, knowledge_base_ids: [], chunks: [], prompt: '' });
    expect((await other.api.get(`/kb-retrievals/${theirs.callId}`)).status).toBe(404);
  });

  it('answers the worker the chunks in full but records only what the call\'s data storage setting keeps (its own over its agent\'s)', async () => {
    const ws = await app.newWorkspace();
    const { kbId, sourceOf } = await helpCentre(ws.api);
    const { agent } = await newAgent(ws.api, { agent: { data_storage_setting: 'everything_except_pii' }, llm: { knowledge_base_ids: [kbId], kb_config: { top_k: 1 } } });
    const { callId, token } = await liveWebCall(ws.api_key, { agent_id: agent.agent_id });
    const asked = 'My SSN is 219-09-9999, where can I park my car?';

    const redacted = await retrieve(callId, { query: asked }, token);
    expect(redacted.status).toBe(200);
    expect(redacted.body.chunks[0]).toMatchObject({ source_id: sourceOf.parking, content: FACTS.parking });
    expect((await ws.api.patch(`/v2/update-call/${callId}`, { body: { data_storage_setting: 'basic_attributes_only' } })).status).toBe(200);
    const basic = await retrieve(callId, { query: asked }, token);
    expect(basic.status).toBe(200);
    // The worker still gets what its prompt needs.
    expect(basic.body.chunks[0]).toMatchObject({ source_id: sourceOf.parking, content: FACTS.parking });
    expect(basic.body.prompt).toContain(`[1] ${FACTS.parking}`);

    const recorded = await ws.api.get(`/kb-retrievals/${callId}`);
    expect(recorded.body.retrievals.map((entry: any) => entry.query)).toEqual(['My SSN is [ssn], where can I park my car?', null]);
    expect(recorded.body.retrievals.map((entry: any) => entry.chunks[0].content)).toEqual([FACTS.parking, null]);
    expect(recorded.body.retrievals[1].chunks[0]).toMatchObject({ knowledge_base_id: kbId, source_id: sourceOf.parking, chunk_id: basic.body.chunks[0].chunk_id });
    expect(JSON.stringify(recorded.body)).not.toContain('219-09-9999');
  });

  it('follows the call\'s agent_override: its Retell LLM fields name the knowledge bases and kb_config', async () => {
    const ws = await app.newWorkspace();
    const { kbId, sourceOf } = await helpCentre(ws.api);
    const { agent } = await newAgent(ws.api);
    const { callId, token } = await liveWebCall(ws.api_key, {
      agent_id: agent.agent_id,
      agent_override: { retell_llm: { knowledge_base_ids: [kbId], kb_config: { top_k: 1 } } },
    });
    const found = await retrieve(callId, { query: 'Do you take Cigna insurance?' }, token);
    expect(found.status).toBe(200);
    expect(found.body.knowledge_base_ids).toEqual([kbId]);
    expect(found.body.chunks.map((chunk: any) => chunk.source_id)).toEqual([sourceOf.insurance]);
  });
});
