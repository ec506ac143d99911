import { verify as retellVerify } from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { evaluateAlert, runAlertTick } from '../../shared/analytics/alerts/index.ts';
import { claimDueAlert, DUE_PARTITION_COUNT, dueEntries, DueMoves } from '../../shared/analytics/alerts/store.ts';
import { addFunctionCall, recordConversation } from '../../shared/analytics/rollups/index.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { countApiError } from '../../shared/platform/http/error-counts.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * Alerts (docs/analytics.md, "Alerts"): rules over the rollups' metrics, evaluated by the
 * alert tick (called here with an injected time, never waited for) and on demand; a change
 * of state records an event and sends a signed webhook through the delivery queue (run
 * here by the local queue consumer); overlapping evaluations send a change once.
 */
const app = await startTestApp();
const background = startBackgroundWork([jobNamed('webhook-delivery')]);
afterAll(() => background.stop());

const MINUTE = 60_000;
const AGENT_A = `agent_${'a'.repeat(24)}`;
const AGENT_B = `agent_${'b'.repeat(24)}`;

let seq = 0;
/** Records an ended (and, with `analysis`, analysed) call starting at `at`, straight into the rollups. */
async function recordCall(workspaceId: string, at: number, options: { agent?: string; latency?: number; cost?: number; analysis?: { successful?: boolean; sentiment?: string } } = {}) {
  const facts = {
    table: 'calls' as const,
    workspace_id: workspaceId,
    id: `call_${(++seq).toString(16).padStart(24, '0')}`,
    start_timestamp: at,
    dimensions: { agent_id: options.agent ?? AGENT_A, call_type: 'phone_call', direction: 'inbound', call_status: 'ended', disconnection_reason: 'user_hangup' },
    figures: { duration_ms: 60_000, cost: options.cost ?? 10, latency_ms: options.latency ?? 800 },
  };
  await recordConversation(facts, 'ended', undefined, at);
  if (options.analysis) await recordConversation(facts, 'analyzed', options.analysis, at);
}

const rule = (overrides: Record<string, unknown> = {}) => ({
  name: 'Busy front desk',
  metric: 'call_count',
  comparator: 'gte',
  threshold: { type: 'absolute', value: 2 },
  window_minutes: 5,
  ...overrides,
});

/** The current whole minute: data and ticks are placed relative to it. */
const thisMinute = () => Math.floor(Date.now() / MINUTE) * MINUTE;

describe('alert rules', () => {
  it('lists the metrics with their units and filters', async () => {
    const res = await app.api.get('/alerts/metrics');
    expect(res.status).toBe(200);
    expect(res.body.map((metric: { name: string; unit: string }) => [metric.name, metric.unit])).toEqual([
      ['call_count', 'calls'],
      ['concurrency_used', 'calls'],
      ['success_rate', 'percent'],
      ['negative_sentiment_rate', 'percent'],
      ['custom_function_latency', 'ms'],
      ['custom_function_failures', 'requests'],
      ['transfer_failures', 'calls'],
      ['total_cost', 'cents'],
      ['api_errors', 'requests'],
      ['api_client_errors', 'requests'],
      ['latency_p50', 'ms'],
      ['latency_p90', 'ms'],
    ]);
    expect(res.body[1]).toEqual({ name: 'concurrency_used', description: expect.any(String), unit: 'calls', filters: [], windowed: false });
    expect(res.body[0]).toEqual({ name: 'call_count', description: 'Calls started in the window', unit: 'calls', filters: ['agent_id'], windowed: true });
  });

  it('creates, reads, lists, edits and deletes a rule', async () => {
    const ws = await app.newWorkspace();
    const before = Date.now();
    const created = await ws.api.post('/alerts', { body: rule({ filters: { agent_id: AGENT_A }, webhook_url: 'https://hooks.example.com/alerts' }) });
    expect(created.status).toBe(201);
    expect(created.body.alert_id).toMatch(/^alert_[0-9a-f]{24}$/);
    expect(created.body).toEqual({
      alert_id: created.body.alert_id,
      name: 'Busy front desk',
      metric: 'call_count',
      filters: { agent_id: AGENT_A },
      comparator: 'gte',
      threshold: { type: 'absolute', value: 2 },
      window_minutes: 5,
      frequency_minutes: 1,
      webhook_url: 'https://hooks.example.com/alerts',
      enabled: true,
      state: 'ok',
      last_value: null,
      last_evaluation_timestamp: null,
      next_evaluation_timestamp: created.body.created_timestamp,
      created_timestamp: created.body.created_timestamp,
      last_modification_timestamp: created.body.created_timestamp,
    });
    expect(created.body.created_timestamp).toBeGreaterThanOrEqual(before);
    const id = created.body.alert_id as string;
    expect((await ws.api.get(`/alerts/${id}`)).body).toEqual(created.body);

    const second = (await ws.api.post('/alerts', { body: rule({ name: 'Errors', metric: 'api_errors', comparator: 'gt', threshold: { type: 'absolute', value: 0 }, enabled: false }) })).body;
    expect(second).toMatchObject({ enabled: false, next_evaluation_timestamp: null, webhook_url: null, filters: {} });
    expect((await ws.api.get('/alerts')).body.map((alert: { alert_id: string }) => alert.alert_id)).toEqual([second.alert_id, id]);

    const edited = await ws.api.patch(`/alerts/${id}`, { body: { name: 'Quiet front desk', comparator: 'lt', webhook_url: null, filters: null, frequency_minutes: 5 } });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ name: 'Quiet front desk', comparator: 'lt', webhook_url: null, filters: {}, frequency_minutes: 5, metric: 'call_count', enabled: true, state: 'ok' });
    expect(edited.body.next_evaluation_timestamp).toBe(created.body.next_evaluation_timestamp);
    expect((await ws.api.get(`/alerts/${id}`)).body).toEqual(edited.body);

    // Disabled: out of the schedule; enabled again: due at once.
    const disabled = (await ws.api.patch(`/alerts/${id}`, { body: { enabled: false } })).body;
    expect(disabled).toMatchObject({ enabled: false, next_evaluation_timestamp: null });
    const enabled = (await ws.api.patch(`/alerts/${id}`, { body: { enabled: true } })).body;
    expect(enabled.enabled).toBe(true);
    expect(enabled.next_evaluation_timestamp).toBe(enabled.last_modification_timestamp);

    expect((await ws.api.delete(`/alerts/${id}`)).status).toBe(204);
    for (const res of [await ws.api.get(`/alerts/${id}`), await ws.api.patch(`/alerts/${id}`, { body: { name: 'x' } }), await ws.api.delete(`/alerts/${id}`), await ws.api.post(`/alerts/${id}/evaluate`)]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Alert ${id} not found` });
    }
    expect((await ws.api.get('/alerts')).body.map((alert: { alert_id: string }) => alert.alert_id)).toEqual([second.alert_id]);
  });

  it('refuses a bad rule with a 400 naming the field', async () => {
    const ws = await app.newWorkspace();
    const refused = async (body: Record<string, unknown>, field: string, message?: string) => {
      const res = await ws.api.post('/alerts', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message.startsWith(`${field}: `), res.body.message).toBe(true);
      if (message) expect(res.body.message).toBe(`${field}: ${message}`);
    };
    const { metric: _metric, ...withoutMetric } = rule();
    await refused(withoutMetric, 'metric');
    await refused(rule({ metric: 'calls_per_hour' }), 'metric');
    await refused(rule({ comparator: 'eq' }), 'comparator');
    await refused(rule({ threshold: { type: 'absolute' } }), 'threshold.value');
    await refused(rule({ threshold: { type: 'relative', percent: 0 } }), 'threshold.percent');
    await refused(rule({ threshold: { type: 'sometimes', value: 1 } }), 'threshold.type');
    await refused(rule({ window_minutes: 0 }), 'window_minutes');
    await refused(rule({ window_minutes: 1441 }), 'window_minutes');
    await refused(rule({ frequency_minutes: 2.5 }), 'frequency_minutes');
    await refused(rule({ name: '' }), 'name');
    await refused(rule({ filters: { agent_id: 'front-desk' } }), 'filters.agent_id', 'Must be an agent ID');
    await refused(rule({ filters: { agent_version: 3 } }), 'filters');
    await refused(rule({ metric: 'api_errors', filters: { agent_id: AGENT_A } }), 'filters.agent_id', "api_errors is the workspace's alone: it takes no agent filter");
    await refused(rule({ metric: 'concurrency_used', threshold: { type: 'relative', percent: 50 } }), 'threshold.type', 'concurrency_used is read at evaluation, with no previous window: give an absolute threshold');
    // The egress guard, at write: never the platform's own network.
    await refused(rule({ webhook_url: 'http://169.254.169.254/latest/meta-data/' }), 'webhook_url', 'Destination not allowed: 169.254.169.254 is a link-local address');
    await refused(rule({ webhook_url: 'ftp://example.com/' }), 'webhook_url');
    await refused(rule({ state: 'triggered' }), 'body');

    // A patch is checked with the fields it keeps.
    const id = (await ws.api.post('/alerts', { body: rule({ filters: { agent_id: AGENT_A }, enabled: false }) })).body.alert_id;
    const patched = await ws.api.patch(`/alerts/${id}`, { body: { metric: 'api_errors' } });
    expect(patched.body).toEqual({ status: 400, message: "filters.agent_id: api_errors is the workspace's alone: it takes no agent filter" });
    expect((await ws.api.patch(`/alerts/${id}`, { body: { window_minutes: -1 } })).body.message).toMatch(/^window_minutes: /);
    expect((await ws.api.patch(`/alerts/${id}`, { body: { webhook_url: 'http://10.0.0.8/hook' } })).body.message).toMatch(/^webhook_url: Destination not allowed/);
    expect((await ws.api.get(`/alerts/${id}`)).body.metric).toBe('call_count');
    expect((await ws.api.get('/alerts')).body).toHaveLength(1);
  });

  it("answers another workspace's rule as not found and lists none of its events", async () => {
    const ws = await app.newWorkspace();
    const other = await app.newWorkspace();
    const hooks = await webhookReceiver();
    const foreign = (await other.api.post('/alerts', { body: rule({ metric: 'api_client_errors', comparator: 'gte', threshold: { type: 'absolute', value: 0 }, webhook_url: hooks.url, enabled: false }) })).body.alert_id;
    expect((await other.api.post(`/alerts/${foreign}/evaluate`)).body.state).toBe('triggered');
    expect((await other.api.get('/alert-events')).body).toHaveLength(1);
    for (const res of [
      await ws.api.get(`/alerts/${foreign}`),
      await ws.api.patch(`/alerts/${foreign}`, { body: { name: 'mine' } }),
      await ws.api.delete(`/alerts/${foreign}`),
      await ws.api.post(`/alerts/${foreign}/evaluate`),
      await ws.api.post(`/alerts/${foreign}/test`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Alert ${foreign} not found` });
    }
    expect((await ws.api.get('/alerts')).body).toEqual([]);
    expect((await ws.api.get('/alert-events')).body).toEqual([]);
    expect((await other.api.get(`/alerts/${foreign}`)).body.name).toBe('Busy front desk');
    await eventually(async () => hooks.hits.length, (n) => n === 1);
  });

  it('needs the analytics scope; a member reads, a developer writes', async () => {
    const ws = await app.newWorkspace();
    const id = (await ws.api.post('/alerts', { body: rule({ enabled: false }) })).body.alert_id;
    const key = (await ws.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
    const calls = ws.api.withKey(key);
    for (const res of [
      await calls.get('/alerts/metrics'),
      await calls.get('/alerts'),
      await calls.post('/alerts', { body: rule() }),
      await calls.get(`/alerts/${id}`),
      await calls.patch(`/alerts/${id}`, { body: { name: 'x' } }),
      await calls.delete(`/alerts/${id}`),
      await calls.post(`/alerts/${id}/evaluate`),
      await calls.post(`/alerts/${id}/test`),
      await calls.get('/alert-events'),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "analytics" scope' });
    }
    const analytics = (await ws.api.post('/api-keys', { body: { name: 'analytics', scopes: ['analytics'] } })).body.api_key;
    expect((await ws.api.withKey(analytics).get(`/alerts/${id}`)).status).toBe(200);

    expect((await ws.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } })).status).toBe(201);
    for (const [email, role] of [['member@example.com', 'member'], ['dev@example.com', 'developer']]) {
      expect((await ws.api.post('/workspace/members', { body: { email, role } })).status).toBe(201);
    }
    const as = (session: { session_token: string }) => ({ authorization: `Bearer ${session.session_token}` });
    const member = as(await createSessionFor(ws.workspace_id, 'member@example.com'));
    const developer = as(await createSessionFor(ws.workspace_id, 'dev@example.com'));
    for (const path of ['/alerts/metrics', '/alerts', `/alerts/${id}`, '/alert-events']) {
      expect((await call(app.url, 'GET', path, { headers: member })).status, path).toBe(200);
    }
    for (const res of [
      await call(app.url, 'POST', '/alerts', { headers: member, body: rule() }),
      await call(app.url, 'PATCH', `/alerts/${id}`, { headers: member, body: { name: 'x' } }),
      await call(app.url, 'DELETE', `/alerts/${id}`, { headers: member }),
      await call(app.url, 'POST', `/alerts/${id}/evaluate`, { headers: member }),
      await call(app.url, 'POST', `/alerts/${id}/test`, { headers: member }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'The member role is read-only' });
    }
    expect((await call(app.url, 'POST', '/alerts', { headers: developer, body: rule({ enabled: false }) })).status).toBe(201);
    expect((await call(app.url, 'PATCH', `/alerts/${id}`, { headers: developer, body: { name: 'Renamed' } })).body.name).toBe('Renamed');
  });
});

describe('evaluation', () => {
  it('triggers on recorded calls, sends a signed alert_triggered, stays quiet while triggered, and resolves', async () => {
    const ws = await app.newWorkspace();
    const hooks = await webhookReceiver();
    const id = (await ws.api.post('/alerts', { body: rule({ filters: { agent_id: AGENT_A }, webhook_url: hooks.url }) })).body.alert_id as string;
    // After the create: the rule is due from its creation, so by the next minute's tick.
    const base = thisMinute();
    // Three calls of agent A a minute before, one of agent B (filtered out).
    for (let n = 0; n < 3; n++) await recordCall(ws.workspace_id, base - MINUTE + n * 1000, { agent: AGENT_A });
    await recordCall(ws.workspace_id, base - MINUTE, { agent: AGENT_B });

    // Tick 1, the next minute: the window [base - 4 min, base + 1 min) holds the three.
    const first = await runAlertTick({ now: base + MINUTE + 5_000 });
    expect(first).toEqual({ due: 1, evaluated: 1, triggered: 1, resolved: 0, failed: 0 });
    let read = (await ws.api.get(`/alerts/${id}`)).body;
    expect(read).toMatchObject({ state: 'triggered', last_value: 3, last_evaluation_timestamp: base + MINUTE + 5_000, next_evaluation_timestamp: base + 2 * MINUTE });

    const [hit] = await eventually(async () => hooks.hits, (hits) => hits.length === 1);
    const signature = hit!.headers['x-retell-signature'] as string;
    expect(hit!.headers['x-parley-signature']).toBe(signature);
    expect(await retellVerify(hit!.body, ws.api_key, signature)).toBe(true);
    expect(await retellVerify(hit!.body, 'key_wrong', signature)).toBe(false);
    const events = (await ws.api.get('/alert-events')).body;
    expect(events).toHaveLength(1);
    expect(events[0]).toEqual({
      alert_event_id: expect.stringMatching(/^alert_event_[0-9a-f]{24}$/),
      alert_id: id,
      event: 'alert_triggered',
      state: 'triggered',
      metric: 'call_count',
      value: 3,
      threshold_value: 2,
      comparator: 'gte',
      window_start_timestamp: base - 4 * MINUTE,
      window_end_timestamp: base + MINUTE,
      created_timestamp: base + MINUTE + 5_000,
    });
    expect(hit!.json).toEqual({ event: 'alert_triggered', alert: { ...read }, alert_event: events[0] });

    // Not due before its next evaluation; then still triggered: nothing sent.
    expect(await runAlertTick({ now: base + MINUTE + 50_000 })).toMatchObject({ due: 0, evaluated: 0 });
    expect(await runAlertTick({ now: base + 2 * MINUTE + 5_000 })).toEqual({ due: 1, evaluated: 1, triggered: 0, resolved: 0, failed: 0 });
    // The same value: only the claim wrote, and it recorded the evaluation's time.
    expect((await ws.api.get(`/alerts/${id}`)).body).toMatchObject({ state: 'triggered', last_value: 3, last_evaluation_timestamp: base + 2 * MINUTE + 5_000 });

    // The calls leave the window: resolved, once.
    expect(await runAlertTick({ now: base + 5 * MINUTE + 5_000 })).toEqual({ due: 1, evaluated: 1, triggered: 0, resolved: 1, failed: 0 });
    read = (await ws.api.get(`/alerts/${id}`)).body;
    expect(read).toMatchObject({ state: 'resolved', last_value: 0 });
    const hits = await eventually(async () => hooks.hits, (list) => list.length === 2);
    expect(hits[1]!.json.event).toBe('alert_resolved');
    expect(await retellVerify(hits[1]!.body, ws.api_key, hits[1]!.headers['x-retell-signature'] as string)).toBe(true);
    const listed = (await ws.api.get('/alert-events')).body;
    expect(listed.map((event: { event: string }) => event.event)).toEqual(['alert_resolved', 'alert_triggered']);
    expect(listed[0]).toMatchObject({ state: 'resolved', value: 0, threshold_value: 2, window_start_timestamp: base, window_end_timestamp: base + 5 * MINUTE });
    expect(hits[1]!.json).toEqual({ event: 'alert_resolved', alert: read, alert_event: listed[0] });

    // Quiet again: resolved becomes ok without an event.
    await runAlertTick({ now: base + 6 * MINUTE + 5_000 });
    expect((await ws.api.get(`/alerts/${id}`)).body.state).toBe('ok');
    expect((await ws.api.get('/alert-events')).body).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hooks.hits).toHaveLength(2);
    expect((await ws.api.delete(`/alerts/${id}`)).status).toBe(204);
  });

  it('compares with the previous window for a relative threshold', async () => {
    const ws = await app.newWorkspace();
    const base = thisMinute();
    const id = (await ws.api.post('/alerts', { body: rule({ comparator: 'gt', threshold: { type: 'relative', percent: 50 }, window_minutes: 2, enabled: false }) })).body.alert_id as string;
    // The window before [base - 4 min, base - 2 min): 2 calls; the window [base - 2 min, base): 3 calls.
    await recordCall(ws.workspace_id, base - 3 * MINUTE);
    await recordCall(ws.workspace_id, base - 3 * MINUTE + 1);
    for (let n = 0; n < 3; n++) await recordCall(ws.workspace_id, base - MINUTE + n);
    // 3 is not more than 2 × 1.5.
    expect(await evaluateAlert(ws.workspace_id, id, base + 1_000)).toEqual({
      value: 3, previous_value: 2, threshold_value: 3, state: 'ok', triggered: false, window_start_timestamp: base - 2 * MINUTE, window_end_timestamp: base,
    });
    await recordCall(ws.workspace_id, base - 30_000);
    expect(await evaluateAlert(ws.workspace_id, id, base + 1_000)).toMatchObject({ value: 4, previous_value: 2, threshold_value: 3, state: 'triggered', triggered: true });
    // A drop: lt 50 % below the window before.
    const drop = (await ws.api.post('/alerts', { body: rule({ comparator: 'lt', threshold: { type: 'relative', percent: 50 }, window_minutes: 2, enabled: false }) })).body.alert_id as string;
    expect(await evaluateAlert(ws.workspace_id, drop, base + 2 * MINUTE + 1_000)).toMatchObject({ value: 0, previous_value: 4, threshold_value: 2, state: 'triggered' });
    // No previous figure to compare with (no calls at all before): not crossed.
    expect(await evaluateAlert(ws.workspace_id, drop, base + 10 * MINUTE)).toMatchObject({ value: 0, previous_value: 0, threshold_value: 0, triggered: false, state: 'resolved' });
  });

  it('reads each metric from its cells', async () => {
    const ws = await app.newWorkspace();
    const base = thisMinute();
    const at = base - MINUTE;
    await recordCall(ws.workspace_id, at, { latency: 1000, cost: 12, analysis: { successful: true, sentiment: 'Negative' } });
    await recordCall(ws.workspace_id, at + 1, { latency: 2000, cost: 8, analysis: { successful: false, sentiment: 'Positive' } });
    await recordCall(ws.workspace_id, at + 2, { latency: 3000, cost: 5.5, analysis: { successful: true, sentiment: 'Neutral' } });
    await recordCall(ws.workspace_id, at + 3, { latency: 4000, cost: 4.5, agent: AGENT_B });
    await addFunctionCall({ workspaceId: ws.workspace_id, agentId: AGENT_A, latencyMs: 120, failed: false, at });
    await addFunctionCall({ workspaceId: ws.workspace_id, agentId: AGENT_A, latencyMs: 380, failed: true, at: at + 10 });
    await addFunctionCall({ workspaceId: ws.workspace_id, agentId: AGENT_B, latencyMs: 1000, failed: true, at: at + 20 });
    await countApiError(ws.workspace_id, 502, at);
    await countApiError(ws.workspace_id, 500, at + 1);
    await countApiError(ws.workspace_id, 404, at + 2);
    // Not counted: load shedding and an unavailable table (error-counts.ts).
    await countApiError(ws.workspace_id, 429, at + 3);
    await countApiError(ws.workspace_id, 503, at + 4);
    const value = async (metric: string, filters?: Record<string, string>) => {
      const id = (await ws.api.post('/alerts', { body: rule({ metric, enabled: false, ...(filters ? { filters } : {}) }) })).body.alert_id;
      return (await evaluateAlert(ws.workspace_id, id, base + 1_000)).value;
    };
    expect(await value('call_count')).toBe(4);
    expect(await value('call_count', { agent_id: AGENT_B })).toBe(1);
    expect(await value('success_rate')).toBe(66.6667);
    expect(await value('negative_sentiment_rate')).toBe(33.3333);
    expect(await value('success_rate', { agent_id: AGENT_B })).toBeNull();
    expect(await value('total_cost')).toBe(30);
    expect(await value('transfer_failures')).toBe(0);
    // Percentiles within the sketch's 1 % of a value seen (of four calls, the p90 is the third).
    expect(Math.abs((await value('latency_p50'))! - 2000)).toBeLessThanOrEqual(20);
    expect(Math.abs((await value('latency_p90'))! - 3000)).toBeLessThanOrEqual(30);
    expect(await value('custom_function_latency')).toBe(500);
    expect(await value('custom_function_latency', { agent_id: AGENT_A })).toBe(250);
    expect(await value('custom_function_failures')).toBe(2);
    expect(await value('custom_function_failures', { agent_id: AGENT_A })).toBe(1);
    expect(await value('api_errors')).toBe(2);
    expect(await value('api_client_errors')).toBe(1);
    expect(await value('concurrency_used')).toBe(0);
  });

  it("counts the API's error answers to a workspace", async () => {
    const ws = await app.newWorkspace();
    const id = (await ws.api.post('/alerts', { body: rule({ metric: 'api_client_errors', comparator: 'gte', threshold: { type: 'absolute', value: 3 }, window_minutes: 2, enabled: false }) })).body.alert_id;
    const missing = `alert_${'0'.repeat(24)}`;
    for (let n = 0; n < 3; n++) expect((await ws.api.get(`/alerts/${missing}`)).status).toBe(404);
    expect((await ws.api.post('/alerts', { body: { name: 'x' } })).status).toBe(400);
    // The answers are in this minute's cell: the rule reads whole minutes, so it sees them from the next.
    const evaluation = await evaluateAlert(ws.workspace_id, id, thisMinute() + MINUTE + 1);
    expect(evaluation).toMatchObject({ value: 4, state: 'triggered' });
  });

  it('evaluates on demand, sends once when two evaluations overlap, and falls back to the workspace URL', async () => {
    const ws = await app.newWorkspace();
    const hooks = await webhookReceiver();
    expect((await ws.api.patch('/workspace', { body: { webhook_url: hooks.url } })).status).toBe(200);
    const id = (await ws.api.post('/alerts', { body: rule({ threshold: { type: 'absolute', value: 1 }, enabled: false }) })).body.alert_id;
    await recordCall(ws.workspace_id, thisMinute() - 2 * MINUTE);
    const both = await Promise.all([ws.api.post(`/alerts/${id}/evaluate`), ws.api.post(`/alerts/${id}/evaluate`)]);
    for (const res of both) {
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ value: 1, threshold_value: 1, state: 'triggered', triggered: true });
      expect(res.body.previous_value).toBeUndefined();
    }
    expect((await ws.api.get('/alert-events')).body).toHaveLength(1);
    await eventually(async () => hooks.hits, (hits) => hits.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hooks.events()).toEqual(['alert_triggered']);
    expect(await retellVerify(hooks.hits[0]!.body, ws.api_key, hooks.hits[0]!.headers['x-retell-signature'] as string)).toBe(true);
  });

  it('sends one event when two ticks overlap', async () => {
    const ws = await app.newWorkspace();
    const hooks = await webhookReceiver();
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push((await ws.api.post('/alerts', { body: rule({ name: `Rule ${n}`, threshold: { type: 'absolute', value: 1 }, webhook_url: hooks.url }) })).body.alert_id);
    const base = thisMinute();
    await recordCall(ws.workspace_id, base - MINUTE);
    const ticks = await Promise.all([runAlertTick({ now: base + MINUTE }), runAlertTick({ now: base + MINUTE }), runAlertTick({ now: base + MINUTE })]);
    expect(ticks.reduce((sum, tick) => sum + tick.evaluated, 0)).toBe(5);
    expect(ticks.reduce((sum, tick) => sum + tick.triggered, 0)).toBe(5);
    expect((await ws.api.get('/alert-events')).body).toHaveLength(5);
    const hits = await eventually(async () => hooks.hits, (list) => list.length === 5);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hooks.hits).toHaveLength(5);
    expect(new Set(hits.map((hit) => (hit.json.alert as { alert_id: string }).alert_id))).toEqual(new Set(ids));
    // Each rule is due again a minute on, once.
    expect(await runAlertTick({ now: base + MINUTE + 30_000 })).toMatchObject({ due: 0 });
    expect(await runAlertTick({ now: base + 2 * MINUTE })).toMatchObject({ due: 5, evaluated: 5, triggered: 0 });
    for (const id of ids) expect((await ws.api.delete(`/alerts/${id}`)).status).toBe(204);
    expect(await runAlertTick({ now: base + 10 * MINUTE })).toMatchObject({ due: 0 });
  });

  it('sends a signed test event and answers what it sent', async () => {
    const ws = await app.newWorkspace();
    const hooks = await webhookReceiver();
    const id = (await ws.api.post('/alerts', { body: rule({ enabled: false }) })).body.alert_id;
    const nowhere = await ws.api.post(`/alerts/${id}/test`);
    expect(nowhere.body).toEqual({ status: 400, message: 'webhook_url: The rule has no webhook_url and the workspace no webhook URL: nowhere to send the test event' });
    await ws.api.patch(`/alerts/${id}`, { body: { webhook_url: hooks.url } });
    const sent = await ws.api.post(`/alerts/${id}/test`);
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ url: hooks.url, event: 'alert_triggered', webhook_delivery_id: expect.stringMatching(/^webhook_delivery_/) });
    expect(sent.body.payload).toMatchObject({ event: 'alert_triggered', test: true, alert: { alert_id: id, webhook_url: hooks.url }, alert_event: { alert_id: id, metric: 'call_count', state: 'triggered' } });
    const [hit] = await eventually(async () => hooks.hits, (hits) => hits.length === 1);
    expect(hit!.json).toEqual(sent.body.payload);
    expect(await retellVerify(hit!.body, ws.api_key, hit!.headers['x-retell-signature'] as string)).toBe(true);
    // Test events are not recorded as the rule's events.
    expect((await ws.api.get('/alert-events')).body).toEqual([]);
    const log = (await ws.api.get('/webhook-deliveries')).body;
    expect(log[0]).toMatchObject({ webhook_delivery_id: sent.body.webhook_delivery_id, event: 'alert_triggered', success: true });
  });

  it('pages the events newest first', async () => {
    const ws = await app.newWorkspace();
    const id = (await ws.api.post('/alerts', { body: rule({ threshold: { type: 'absolute', value: 1 }, window_minutes: 1, enabled: false }) })).body.alert_id;
    const base = thisMinute();
    await recordCall(ws.workspace_id, base - MINUTE);
    // triggered, resolved, ok, triggered: three events.
    await evaluateAlert(ws.workspace_id, id, base + 1);
    await evaluateAlert(ws.workspace_id, id, base + MINUTE + 1);
    await evaluateAlert(ws.workspace_id, id, base + 2 * MINUTE + 1);
    await recordCall(ws.workspace_id, base + 2 * MINUTE);
    await evaluateAlert(ws.workspace_id, id, base + 3 * MINUTE + 1);
    const all = (await ws.api.get('/alert-events')).body;
    expect(all.map((event: { event: string }) => event.event)).toEqual(['alert_triggered', 'alert_resolved', 'alert_triggered']);
    const first = (await ws.api.get('/alert-events?limit=2')).body;
    expect(first).toEqual(all.slice(0, 2));
    const rest = (await ws.api.get(`/alert-events?limit=2&pagination_key=${first[1].alert_event_id}`)).body;
    expect(rest).toEqual(all.slice(2));
    expect((await ws.api.get('/alert-events?limit=0')).body.message).toMatch(/^limit: /);
  });

  it('answers every rule of a pass as its own read would, from one read a source', async () => {
    const ws = await app.newWorkspace();
    const metrics = ['call_count', 'success_rate', 'negative_sentiment_rate', 'total_cost', 'latency_p50', 'latency_p90', 'custom_function_latency', 'custom_function_failures', 'api_errors', 'concurrency_used'];
    const ids: string[] = [];
    for (const [index, metric] of metrics.entries()) {
      for (const window of [1, 4, 9]) {
        const filters = metric !== 'api_errors' && metric !== 'concurrency_used' && window === 4 ? { filters: { agent_id: index % 2 ? AGENT_A : AGENT_B } } : {};
        const threshold = metric !== 'concurrency_used' && window === 9 ? { type: 'relative', percent: 10_000 } : { type: 'absolute', value: 1e9 };
        ids.push((await ws.api.post('/alerts', { body: rule({ name: `${metric} ${window}`, metric, comparator: 'gt', threshold, window_minutes: window, ...filters }) })).body.alert_id);
      }
    }
    // Due from their creation: the pass is now.
    const now = Date.now();
    const base = Math.floor(now / MINUTE) * MINUTE;
    // Calls over the last 20 minutes by two agents, analysed, with latencies and costs; function calls and API errors.
    for (let minutes = 1; minutes <= 20; minutes++) {
      const at = base - minutes * MINUTE + 1_000;
      await recordCall(ws.workspace_id, at, { agent: minutes % 3 === 0 ? AGENT_B : AGENT_A, latency: 500 + minutes * 37, cost: minutes * 1.25, analysis: { successful: minutes % 4 !== 0, sentiment: minutes % 5 === 0 ? 'Negative' : 'Positive' } });
      if (minutes % 2 === 0) await addFunctionCall({ workspaceId: ws.workspace_id, agentId: minutes % 4 === 0 ? AGENT_B : AGENT_A, latencyMs: 100 + minutes, failed: minutes % 6 === 0, at });
      if (minutes % 7 === 0) await countApiError(ws.workspace_id, 500, at);
    }
    expect(await runAlertTick({ now })).toEqual({ due: 30, evaluated: 30, triggered: 0, resolved: 0, failed: 0 });
    const values: unknown[] = [];
    for (const id of ids) values.push((await ws.api.get(`/alerts/${id}`)).body.last_value);
    // Read alone (POST /alerts/{id}/evaluate's way), at the same time.
    const alone: unknown[] = [];
    for (const id of ids) alone.push((await evaluateAlert(ws.workspace_id, id, now)).value);
    expect(values).toEqual(alone);
    // By metric, windows 1, 4 (one agent) and 9 minutes (relative).
    expect(values).toEqual([1, 1, 9, 100, 66.6667, 77.7778, 0, 0, 11.1111, 1.25, 8.75, 56.25, 539.2394, 607.9932, 685.5131, 539.2394, 572.5853, 788.5315, null, 104, 105, 0, 0, 1, 0, 0, 1, 0, 0, 0]);
    for (const id of ids) expect((await ws.api.delete(`/alerts/${id}`)).status).toBe(204);
  });

  it('sets right the due entries of a pass that stopped before moving them, and evaluates the rule once', async () => {
    const ws = await app.newWorkspace();
    const base = thisMinute();
    const id = (await ws.api.post('/alerts', { body: rule({ threshold: { type: 'absolute', value: 1 } }) })).body.alert_id as string;
    const created = (await ws.api.get(`/alerts/${id}`)).body.next_evaluation_timestamp as number;
    await recordCall(ws.workspace_id, base);
    const entriesOf = async () => {
      const all = (await Promise.all(Array.from({ length: DUE_PARTITION_COUNT }, (_, partition) => dueEntries(partition, base + 100 * MINUTE)))).flat();
      return all.filter((entry) => entry.alert_id === id).map((entry) => entry.due_at);
    };
    expect(await entriesOf()).toEqual([created]);
    // A pass at base + 1 min claims the rule and stops there: its due entry is never moved.
    const claimed = await claimDueAlert({ workspace_id: ws.workspace_id, alert_id: id, due_at: created }, base + MINUTE, base + MINUTE + 1_000, new DueMoves(), 'stopped pass');
    expect(claimed).toMatchObject({ alert_id: id, next_evaluation_timestamp: base + 2 * MINUTE, last_evaluation_timestamp: base + MINUTE + 1_000 });
    // The same claim sent again (the SDK's retry of a write whose answer was lost) is its pass's own; another pass's is refused.
    expect(await claimDueAlert({ workspace_id: ws.workspace_id, alert_id: id, due_at: created }, base + MINUTE, base + MINUTE + 1_000, new DueMoves(), 'stopped pass')).toMatchObject({ alert_id: id, next_evaluation_timestamp: base + 2 * MINUTE });
    expect(await claimDueAlert({ workspace_id: ws.workspace_id, alert_id: id, due_at: created }, base + MINUTE, base + MINUTE + 1_000, new DueMoves(), 'overlapping pass')).toBeUndefined();
    expect(await entriesOf()).toEqual([created]);
    const hooks = await webhookReceiver();
    await ws.api.patch('/workspace', { body: { webhook_url: hooks.url } });
    // The next pass finds the stale entry: it puts the rule's own and deletes the stale one, evaluating nothing.
    expect(await runAlertTick({ now: base + MINUTE + 2_000 })).toEqual({ due: 1, evaluated: 0, triggered: 0, resolved: 0, failed: 0 });
    expect(await entriesOf()).toEqual([base + 2 * MINUTE]);
    // A pass that stopped between its puts and its deletes: the old entry and the new both due at base + 3 min.
    expect(await claimDueAlert({ workspace_id: ws.workspace_id, alert_id: id, due_at: base + 2 * MINUTE }, base + 2 * MINUTE, base + 2 * MINUTE, new DueMoves(), 'another stopped pass')).toBeDefined();
    await table.put({ Item: { ...keys.alertDue(ws.workspace_id, id, base + 3 * MINUTE), workspace_id: ws.workspace_id, alert_id: id, due_at: base + 3 * MINUTE } });
    expect(await entriesOf()).toEqual([base + 2 * MINUTE, base + 3 * MINUTE]);
    // In one pass (one claim at a time, oldest first): the stale entry asks to put the new one, whose claim then asks
    // to delete it; the last asked wins, so one batch holds one write a key. The rule is evaluated once: one event.
    expect(await runAlertTick({ now: base + 3 * MINUTE + 1_000, concurrency: 1 })).toEqual({ due: 2, evaluated: 1, triggered: 1, resolved: 0, failed: 0 });
    expect(await entriesOf()).toEqual([base + 4 * MINUTE]);
    expect((await ws.api.get('/alert-events')).body).toHaveLength(1);
    await eventually(async () => hooks.hits, (hits) => hits.length === 1);
    expect((await ws.api.delete(`/alerts/${id}`)).status).toBe(204);
  });
});
