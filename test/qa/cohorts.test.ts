import { describe, expect, it } from 'vitest';
import { DEFAULT_RUBRIC } from '../../shared/qa/cohorts/rubric.ts';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { call } from '../support/http.ts';

/*
 * QA cohorts (docs/qa.md, "Cohorts"): create with the default rubric, read, list a page at
 * a time, PATCH (a changed rubric is a new version, the same one is not), delete; each
 * invalid field a 400 naming it; another workspace's cohorts and results not found; the
 * analytics scope; members read, developers write.
 */
const app = await startTestApp();

const DEFAULT_SELECTION = { call_status: ['ended'], sample_rate: 1 };

describe('QA cohorts', () => {
  it('creates a cohort with the default rubric, reads, lists, updates and deletes it', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api);
    const created = await ws.api.post('/qa/cohorts', { body: { name: 'Front desk', selection: { agent_ids: [agent.agent_id], max_per_day: 20 } } });
    expect(created.status).toBe(201);
    expect(created.body.cohort_id).toMatch(/^qa_cohort_[0-9a-f]{24}$/);
    expect(created.body).toEqual({
      cohort_id: created.body.cohort_id,
      name: 'Front desk',
      selection: { ...DEFAULT_SELECTION, agent_ids: [agent.agent_id], max_per_day: 20 },
      rubric: { version: 1, ...DEFAULT_RUBRIC },
      auto_score: false,
      last_run: null,
      created_timestamp: created.body.created_timestamp,
      last_modification_timestamp: created.body.created_timestamp,
    });
    expect(created.body.rubric.criteria.map((criterion: { type: string }) => criterion.type)).toEqual(['resolution', 'hallucination', 'tone', 'instruction_following', 'latency']);
    const id = created.body.cohort_id as string;
    expect((await ws.api.get(`/qa/cohorts/${id}`)).body).toEqual(created.body);

    const second = (await ws.api.post('/qa/cohorts', { body: { name: 'Second', auto_score: true } })).body;
    const third = (await ws.api.post('/qa/cohorts', { body: { name: 'Third' } })).body;
    const first = await ws.api.get('/qa/cohorts?limit=2');
    expect(first.body.items.map((item: { cohort_id: string }) => item.cohort_id)).toEqual([third.cohort_id, second.cohort_id]);
    expect(first.body).toMatchObject({ has_more: true, pagination_key: second.cohort_id });
    const rest = await ws.api.get(`/qa/cohorts?limit=2&pagination_key=${second.cohort_id}`);
    expect(rest.body).toEqual({ items: [created.body], has_more: false });

    // The same rubric again is not a new version; a changed threshold is.
    const same = await ws.api.patch(`/qa/cohorts/${id}`, { body: { name: 'Desk', rubric: DEFAULT_RUBRIC } });
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ name: 'Desk', rubric: { version: 1 } });
    const rubric = { criteria: [{ name: 'greets', description: 'The agent says "welcome"', weight: 1 }], pass_threshold: 50 };
    const changed = await ws.api.patch(`/qa/cohorts/${id}`, { body: { rubric, auto_score: true, description: 'Desk calls' } });
    expect(changed.body).toMatchObject({
      name: 'Desk',
      description: 'Desk calls',
      auto_score: true,
      rubric: { version: 2, criteria: [{ name: 'greets', description: 'The agent says "welcome"', weight: 1, type: 'custom' }], pass_threshold: 50 },
      selection: { agent_ids: [agent.agent_id], max_per_day: 20 },
    });
    const cleared = await ws.api.patch(`/qa/cohorts/${id}`, { body: { description: null, selection: { sample_rate: 0.5 } } });
    expect(cleared.body.description).toBeUndefined();
    expect(cleared.body.selection).toEqual({ call_status: ['ended'], sample_rate: 0.5 });
    expect(cleared.body.rubric.version).toBe(2);

    expect((await ws.api.delete(`/qa/cohorts/${id}`)).status).toBe(204);
    expect((await ws.api.get(`/qa/cohorts/${id}`)).body).toEqual({ status: 404, message: `QA cohort ${id} not found` });
    expect((await ws.api.delete(`/qa/cohorts/${id}`)).status).toBe(404);
  });

  it('answers 400 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'name: Required'],
      [{ name: 'x', selection: { sample_rate: 2 } }, 'selection.sample_rate: Must be at most 1'],
      [{ name: 'x', selection: { agent_ids: ['nope'] } }, 'selection.agent_ids.0: Must be an agent ID (agent_ followed by 24 hex characters)'],
      [{ name: 'x', selection: { start_timestamp: 20, end_timestamp: 10 } }, 'selection.end_timestamp: Must not be before start_timestamp'],
      [{ name: 'x', selection: { disconnection_reason: ['hung_up_angrily'] } }, 'selection.disconnection_reason: Invalid value'],
      [{ name: 'x', selection: { colour: 'red' } }, 'selection: Unrecognized keys colour'],
      [{ name: 'x', rubric: { criteria: [] } }, 'rubric.criteria: A rubric needs at least one criterion'],
      [{ name: 'x', rubric: { criteria: [{ name: 'a', description: 'd', weight: 0 }] } }, 'rubric.criteria.0.weight: Must be greater than 0'],
      [{ name: 'x', rubric: { criteria: [{ name: 'a', description: 'd', weight: 1 }, { name: 'a', description: 'e', weight: 1 }] } }, 'rubric.criteria.1.name: Duplicate criterion name a'],
      [{ name: 'x', rubric: { criteria: [{ name: 'a', description: 'd', weight: 1, latency_bound_ms: 500 }] } }, 'rubric.criteria.0.latency_bound_ms: Only a criterion of type latency has a latency bound'],
      [{ name: 'x', rubric: { criteria: [{ name: 'a', description: 'd', weight: 1 }], pass_threshold: 101 } }, 'rubric.pass_threshold: Must be at most 100'],
    ];
    for (const [body, message] of cases) {
      const res = await app.api.post('/qa/cohorts', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message, JSON.stringify(body)).toBe(message);
    }
    const id = (await app.api.post('/qa/cohorts', { body: { name: 'ok' } })).body.cohort_id;
    const res = await app.api.patch(`/qa/cohorts/${id}`, { body: { selection: { call_type: ['fax'] } } });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('selection.call_type.0: Expected one of "web_call", "phone_call"');
    expect((await app.api.get('/qa/cohorts/qa_cohort_nope')).status).toBe(400);
    expect((await app.api.get(`/qa/cohorts/${id}/results?min_score=abc`)).body.message).toBe('min_score: Must be a number from 0 to 100');
  });

  it("answers another workspace's cohort and results as not found", async () => {
    const other = await app.newWorkspace();
    const foreign = (await other.api.post('/qa/cohorts', { body: { name: 'Theirs' } })).body.cohort_id;
    for (const res of [
      await app.api.get(`/qa/cohorts/${foreign}`),
      await app.api.patch(`/qa/cohorts/${foreign}`, { body: { name: 'Mine' } }),
      await app.api.post(`/qa/cohorts/${foreign}/run`),
      await app.api.get(`/qa/cohorts/${foreign}/results`),
      await app.api.delete(`/qa/cohorts/${foreign}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `QA cohort ${foreign} not found` });
    }
    expect((await other.api.get(`/qa/cohorts/${foreign}`)).body.name).toBe('Theirs');
  });

  it('needs the analytics scope; members read, developers write', async () => {
    const ws = await app.newWorkspace();
    const id = (await ws.api.post('/qa/cohorts', { body: { name: 'Scoped' } })).body.cohort_id;
    const callsOnly = (await ws.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
    for (const res of [
      await ws.api.withKey(callsOnly).get('/qa/cohorts'),
      await ws.api.withKey(callsOnly).post('/qa/cohorts', { body: { name: 'x' } }),
      await ws.api.withKey(callsOnly).post(`/qa/cohorts/${id}/run`),
      await ws.api.withKey(callsOnly).get(`/qa/cohorts/${id}/results`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "analytics" scope' });
    }
    const analytics = (await ws.api.post('/api-keys', { body: { name: 'analytics', scopes: ['analytics'] } })).body.api_key;
    expect((await ws.api.withKey(analytics).get(`/qa/cohorts/${id}`)).status).toBe(200);

    expect((await ws.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } })).status).toBe(201);
    for (const [email, role] of [['member@example.com', 'member'], ['dev@example.com', 'developer']]) {
      expect((await ws.api.post('/workspace/members', { body: { email, role } })).status).toBe(201);
    }
    const as = (session: { session_token: string }) => ({ authorization: `Bearer ${session.session_token}` });
    const member = as(await createSessionFor(ws.workspace_id, 'member@example.com'));
    const developer = as(await createSessionFor(ws.workspace_id, 'dev@example.com'));
    expect((await call(app.url, 'GET', '/qa/cohorts', { headers: member })).status).toBe(200);
    expect((await call(app.url, 'GET', `/qa/cohorts/${id}/results`, { headers: member })).status).toBe(200);
    for (const res of [
      await call(app.url, 'POST', '/qa/cohorts', { headers: member, body: { name: 'x' } }),
      await call(app.url, 'PATCH', `/qa/cohorts/${id}`, { headers: member, body: { name: 'x' } }),
      await call(app.url, 'POST', `/qa/cohorts/${id}/run`, { headers: member }),
      await call(app.url, 'DELETE', `/qa/cohorts/${id}`, { headers: member }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'The member role is read-only' });
    }
    expect((await call(app.url, 'POST', '/qa/cohorts', { headers: developer, body: { name: 'By a developer' } })).status).toBe(201);
  });
});
