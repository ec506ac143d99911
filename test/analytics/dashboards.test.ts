import { describe, expect, it, vi } from 'vitest';
import { createDashboard } from '../../shared/analytics/dashboards/index.ts';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { Invalid } from '../../shared/platform/errors.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { NOW } from './fixtures.ts';

/*
 * Dashboards: saved layouts of analytics queries (docs/analytics.md, "Dashboards"). Create,
 * read, list, replace and delete; each widget's query checked on save, errors naming the
 * field; the workspace's limit; members read, developers write; the analytics scope;
 * another workspace's IDs are not found.
 */
// Saving plans each query against the clock (the cells it needs must still be kept): a fixed one.
vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
vi.setSystemTime(NOW);

const app = await startTestApp();

const RANGE = { start_timestamp: Date.UTC(2026, 10, 1), end_timestamp: Date.UTC(2026, 11, 1) };

const widgets = () => [
  { title: 'Calls', type: 'number', query: { table: 'calls', time_range: RANGE, operations: [{ operation: 'count' }] } },
  {
    title: 'Calls a day by agent',
    type: 'line',
    query: { table: 'calls', time_range: { ...RANGE, step: 'day', timezone: 'America/New_York' }, group_by: ['agent_id'], operations: [{ operation: 'count', alias: 'calls' }] },
  },
  { title: 'Sentiment', type: 'pie', query: { table: 'calls', time_range: RANGE, group_by: ['user_sentiment'], operations: [{ operation: 'count' }] } },
  { title: 'Latency', type: 'table', query: { table: 'calls', time_range: { ...RANGE, step: 'week' }, operations: [{ operation: 'p50', column: 'latency_ms' }, { operation: 'p90', column: 'latency_ms' }] } },
];

const body = (overrides: Record<string, unknown> = {}) => ({ name: 'Support', description: 'How the front desk is doing', widgets: widgets(), ...overrides });

describe('dashboards', () => {
  it('creates, reads, lists, replaces and deletes a dashboard', async () => {
    const ws = await app.newWorkspace();
    const created = await ws.api.post('/dashboards', { body: body() });
    expect(created.status).toBe(201);
    expect(created.body.dashboard_id).toMatch(/^dashboard_[0-9a-f]{24}$/);
    expect(created.body).toMatchObject({ name: 'Support', description: 'How the front desk is doing', revision: 1 });
    expect(created.body.created_timestamp).toBe(created.body.last_modification_timestamp);
    expect(created.body.widgets).toHaveLength(4);
    expect(created.body.widgets.map((widget: { type: string }) => widget.type)).toEqual(['number', 'line', 'pie', 'table']);
    for (const widget of created.body.widgets) expect(widget.widget_id).toMatch(/^widget_[0-9a-f]{12}$/);
    expect(created.body.widgets[1].query).toEqual(widgets()[1]!.query);
    const id = created.body.dashboard_id as string;

    const read = await ws.api.get(`/dashboards/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);

    const second = await ws.api.post('/dashboards', { body: { name: 'Empty', widgets: [] } });
    expect(second.status).toBe(201);
    expect(second.body.description).toBeUndefined();
    const listed = await ws.api.get('/dashboards');
    expect(listed.status).toBe(200);
    expect(listed.body.map((dashboard: { dashboard_id: string }) => dashboard.dashboard_id)).toEqual([second.body.dashboard_id, id]);
    expect(listed.body[1]).toEqual(created.body);

    // A replace keeps the widget IDs it is given, makes up the others, and drops a description left out.
    const kept = created.body.widgets[0];
    const replaced = await ws.api.put(`/dashboards/${id}`, { body: { name: 'Support, weekly', widgets: [kept, widgets()[2]] } });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ dashboard_id: id, name: 'Support, weekly', revision: 2, created_timestamp: created.body.created_timestamp });
    expect(replaced.body.description).toBeUndefined();
    expect(replaced.body.widgets[0]).toEqual(kept);
    expect(replaced.body.widgets[1].widget_id).not.toBe(created.body.widgets[2].widget_id);
    expect(replaced.body.last_modification_timestamp).toBeGreaterThanOrEqual(created.body.last_modification_timestamp);
    expect((await ws.api.get(`/dashboards/${id}`)).body).toEqual(replaced.body);

    const deleted = await ws.api.delete(`/dashboards/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    for (const res of [await ws.api.get(`/dashboards/${id}`), await ws.api.delete(`/dashboards/${id}`), await ws.api.put(`/dashboards/${id}`, { body: body() })]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Dashboard ${id} not found` });
    }
    expect((await ws.api.get('/dashboards')).body.map((dashboard: { dashboard_id: string }) => dashboard.dashboard_id)).toEqual([second.body.dashboard_id]);
    // The counter followed the create, the create and the delete (not the delete of nothing).
    expect((await table.get<{ n: number }>(keys.dashboardCount(ws.workspace_id)))!.n).toBe(1);
  });

  it("refuses a query the query language refuses, and a widget its chart type cannot draw, naming each field", async () => {
    const cases: [unknown[], string][] = [
      [
        [widgets()[0], widgets()[1], { ...widgets()[2], query: { ...widgets()[2]!.query, operations: [{ operation: 'avg', column: 'height' }] } }],
        'widgets.2.query.operations.0.column: Expected one of "duration_ms", "cost", "latency_ms", "successful", "unsuccessful", "analyzed", "sentiment_positive", "sentiment_negative", "sentiment_neutral", "sentiment_unknown", "transfer_failed", "voicemail", "error"',
      ],
      [[{ ...widgets()[0], query: { ...widgets()[0]!.query, operations: [{ operation: 'median' }] } }], 'widgets.0.query.operations.0.operation: Expected one of "count", "sum", "avg", "min", "max", "p50", "p90", "p99"'],
      [[{ ...widgets()[0], query: { ...widgets()[0]!.query, time_range: { start_timestamp: 10, end_timestamp: 5 } } }], 'widgets.0.query.time_range.end_timestamp: end_timestamp must be after start_timestamp'],
      [[{ ...widgets()[0], type: 'gauge' }], 'widgets.0.type: Expected one of "number", "line", "bar", "pie", "table"'],
      [[{ ...widgets()[0], title: ' ' }], 'widgets.0.title: Must be at least 1 characters'],
      [[{ ...widgets()[0], query: { ...widgets()[0]!.query, time_range: { ...RANGE, step: 'day' } } }], 'widgets.0.query.time_range.step: A number widget shows one figure: leave out step'],
      [[{ ...widgets()[0], query: { ...widgets()[0]!.query, group_by: ['agent_id'] } }], 'widgets.0.query.group_by: A number widget shows one figure: leave out group_by'],
      [
        [{ ...widgets()[0], query: { ...widgets()[0]!.query, operations: [{ operation: 'count' }, { operation: 'avg', column: 'cost' }] } }],
        'widgets.0.query.operations: A number widget shows one figure: give exactly one operation',
      ],
      [[widgets()[0], { ...widgets()[1], type: 'bar', query: { ...widgets()[1]!.query, time_range: RANGE } }], 'widgets.1.query.time_range.step: A bar widget draws buckets along time: give a step (minute, hour, day, week or month)'],
      [
        [{ ...widgets()[2], query: { ...widgets()[2]!.query, group_by: [] } }],
        'widgets.0.query.group_by: A pie widget needs exactly one group_by dimension (its slices)',
      ],
      [[{ ...widgets()[0], widget_id: 'a' }, { ...widgets()[2], widget_id: 'a' }], 'widgets.1.widget_id: Duplicate widget_id a'],
      [[{ ...widgets()[0], widget_id: 'has space' }], 'widgets.0.widget_id: Must be 1 to 64 letters, digits, `_` or `-`'],
      [Array.from({ length: 25 }, () => widgets()[0]), 'widgets: Must have at most 24 items'],
      // What the query planner refuses, as POST /analytics/query would when the page runs it.
      [[{ ...widgets()[0], query: { ...widgets()[0]!.query, operations: [{ operation: 'sum' }] } }], 'widgets.0.query.operations.0.column: sum needs a column (duration_ms, cost, latency_ms, or a counter)'],
      [
        [widgets()[0], { ...widgets()[3], query: { ...widgets()[3]!.query, operations: [{ operation: 'p90', column: 'successful' }] } }],
        'widgets.1.query.operations.0.column: p90 takes a figure column (duration_ms, cost, latency_ms); successful is a counter (count, sum or avg it)',
      ],
      [
        [{ ...widgets()[3], query: { ...widgets()[3]!.query, group_by: ['chat_type'] } }],
        'widgets.0.query.group_by.0: chat_type is not a dimension of calls; its dimensions: agent_id, agent_version, call_type, direction, call_status, disconnection_reason, user_sentiment, call_successful, batch_call_id, from_number',
      ],
      [
        [{ ...widgets()[3], query: { ...widgets()[3]!.query, group_by: ['direction'], filters: { call_type: 'web_call' } } }],
        'widgets.0.query.group_by: no view holds direction with call_type: group and filter by at most one dimension, or by agent_id with one of call_type, direction, call_status, disconnection_reason, user_sentiment, call_successful',
      ],
      [[widgets()[0], { ...widgets()[1], query: { ...widgets()[1]!.query, time_range: { ...RANGE, step: 'minute' } } }], 'widgets.1.query.time_range: a step of minute answers at most 1440 buckets: shorten the range or use a larger step'],
      [
        [widgets()[0], widgets()[1], widgets()[2], { ...widgets()[3], query: { ...widgets()[3]!.query, time_range: { start_timestamp: Date.UTC(2026, 5, 1), end_timestamp: Date.UTC(2026, 5, 2), step: 'hour' } } }],
        'widgets.3.query.time_range.start_timestamp: a step of hour reads hour cells, kept 100 days: start at 2026-09-01T13:00:00.000Z or later',
      ],
    ];
    for (const [given, message] of cases) {
      const res = await app.api.post('/dashboards', { body: body({ widgets: given }) });
      expect(res.status, message).toBe(400);
      expect(res.body).toEqual({ status: 400, message });
    }
    const unnamed = await app.api.post('/dashboards', { body: { widgets: [] } });
    expect(unnamed.body).toEqual({ status: 400, message: 'name: Required' });
    const long = await app.api.post('/dashboards', { body: body({ name: 'x'.repeat(201) }) });
    expect(long.body).toEqual({ status: 400, message: 'name: Must be at most 200 characters' });
    // The item's size is checked after the schema: 24 widgets with long filter lists, each
    // valid alone, are too large together (the logic is called directly: the filters'
    // shape belongs to the query language).
    const heavy = { ...widgets()[3], widget_id: undefined, query: { ...widgets()[3]!.query, filters: { agent_id: Array.from({ length: 100 }, (_, n) => `${n}`.padStart(60, 'a')) } } };
    const large = await createDashboard(app.workspace.workspace_id, { name: 'Large', widgets: Array.from({ length: 24 }, () => heavy) as never }).catch((error: unknown) => error);
    expect(large).toBeInstanceOf(Invalid);
    expect((large as Invalid).message).toMatch(/^widgets: The dashboard is \d+ KB as JSON; at most 100 KB$/);
    // A replace is planned the same way, and an invalid one changes nothing.
    const saved = (await app.api.post('/dashboards', { body: body() })).body;
    const unplannable = await app.api.put(`/dashboards/${saved.dashboard_id}`, {
      body: body({ widgets: [{ ...widgets()[0], query: { ...widgets()[0]!.query, table: 'chats', filters: { call_type: 'web_call' } } }] }),
    });
    expect(unplannable.body).toEqual({
      status: 400,
      message: 'widgets.0.query.filters.call_type: call_type is not a dimension of chats; its dimensions: agent_id, agent_version, chat_type, chat_status, user_sentiment, chat_successful',
    });
    expect((await app.api.get(`/dashboards/${saved.dashboard_id}`)).body).toEqual(saved);
    const badId = await app.api.get('/dashboards/dash_1');
    expect(badId.body).toEqual({ status: 400, message: 'dashboard_id: Must be a dashboard ID (dashboard_ followed by 24 hex characters)' });
  });

  it('keeps a workspace to 100 dashboards, even when created at once', async () => {
    const ws = await app.newWorkspace();
    const results = await Promise.all(Array.from({ length: 104 }, (_, n) => ws.api.post('/dashboards', { body: { name: `Dashboard ${n}`, widgets: [] } })));
    expect(results.filter((res) => res.status === 201)).toHaveLength(100);
    const refused = results.filter((res) => res.status !== 201);
    expect(refused).toHaveLength(4);
    for (const res of refused) expect(res.body).toEqual({ status: 409, message: 'A workspace can have at most 100 dashboards; delete one to make another' });
    expect((await ws.api.get('/dashboards')).body).toHaveLength(100);
    const first = results.find((res) => res.status === 201)!.body.dashboard_id;
    expect((await ws.api.delete(`/dashboards/${first}`)).status).toBe(204);
    expect((await ws.api.post('/dashboards', { body: { name: 'One more', widgets: [] } })).status).toBe(201);
  }, 60_000);

  it('replaces last-writer-wins, or only at the revision the body names', async () => {
    const id = (await app.api.post('/dashboards', { body: body() })).body.dashboard_id;
    const [a, b] = await Promise.all([
      app.api.put(`/dashboards/${id}`, { body: body({ name: 'A', revision: 1 }) }),
      app.api.put(`/dashboards/${id}`, { body: body({ name: 'B', revision: 1 }) }),
    ]);
    const statuses = [a!.status, b!.status].sort();
    expect(statuses).toEqual([200, 409]);
    const lost = a!.status === 409 ? a! : b!;
    expect(lost.body).toEqual({ status: 409, message: `Dashboard ${id} is at revision 2, not 1: read it again and replace that` });
    const won = a!.status === 200 ? a! : b!;
    expect((await app.api.get(`/dashboards/${id}`)).body).toMatchObject({ name: won.body.name, revision: 2 });
    // Without a revision, each replace applies in turn.
    const unconditional = await Promise.all(['C', 'D'].map((name) => app.api.put(`/dashboards/${id}`, { body: body({ name }) })));
    expect(unconditional.map((res) => res.status)).toEqual([200, 200]);
    expect((await app.api.get(`/dashboards/${id}`)).body.revision).toBe(4);
  });

  it("answers another workspace's dashboard as not found", async () => {
    const other = await app.newWorkspace();
    const foreign = (await other.api.post('/dashboards', { body: body() })).body.dashboard_id;
    for (const res of [
      await app.api.get(`/dashboards/${foreign}`),
      await app.api.put(`/dashboards/${foreign}`, { body: body() }),
      await app.api.delete(`/dashboards/${foreign}`),
      await app.api.get(`/dashboards/${foreign}/page`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Dashboard ${foreign} not found` });
    }
    expect((await app.api.get('/dashboards')).body.map((dashboard: { dashboard_id: string }) => dashboard.dashboard_id)).not.toContain(foreign);
    expect((await other.api.get(`/dashboards/${foreign}`)).body.name).toBe('Support');
  });

  it('needs the analytics scope', async () => {
    const key = (await app.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
    const id = (await app.api.post('/dashboards', { body: body() })).body.dashboard_id;
    for (const res of [
      await app.api.withKey(key).get('/dashboards'),
      await app.api.withKey(key).post('/dashboards', { body: body() }),
      await app.api.withKey(key).get(`/dashboards/${id}`),
      await app.api.withKey(key).put(`/dashboards/${id}`, { body: body() }),
      await app.api.withKey(key).delete(`/dashboards/${id}`),
      await app.api.withKey(key).get(`/dashboards/${id}/page`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "analytics" scope' });
    }
    const analytics = (await app.api.post('/api-keys', { body: { name: 'analytics', scopes: ['analytics'] } })).body.api_key;
    expect((await app.api.withKey(analytics).get(`/dashboards/${id}`)).status).toBe(200);
  });

  it('lets a member read and a developer write', async () => {
    const ws = await app.newWorkspace();
    expect((await ws.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } })).status).toBe(201);
    for (const [email, role] of [['member@example.com', 'member'], ['dev@example.com', 'developer']]) {
      expect((await ws.api.post('/workspace/members', { body: { email, role } })).status).toBe(201);
    }
    const member = await createSessionFor(ws.workspace_id, 'member@example.com');
    const developer = await createSessionFor(ws.workspace_id, 'dev@example.com');
    const as = (session: { session_token: string }) => ({ authorization: `Bearer ${session.session_token}` });
    const id = (await ws.api.post('/dashboards', { body: body() })).body.dashboard_id;

    expect((await call(app.url, 'GET', '/dashboards', { headers: as(member) })).status).toBe(200);
    expect((await call(app.url, 'GET', `/dashboards/${id}`, { headers: as(member) })).status).toBe(200);
    for (const res of [
      await call(app.url, 'POST', '/dashboards', { headers: as(member), body: body() }),
      await call(app.url, 'PUT', `/dashboards/${id}`, { headers: as(member), body: body() }),
      await call(app.url, 'DELETE', `/dashboards/${id}`, { headers: as(member) }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'The member role is read-only' });
    }
    expect((await call(app.url, 'POST', '/dashboards', { headers: as(developer), body: body() })).status).toBe(201);
    expect((await call(app.url, 'PUT', `/dashboards/${id}`, { headers: as(developer), body: body({ name: 'Renamed' }) })).body.name).toBe('Renamed');
    // The session cookie writes only with the session's CSRF token (a claim of the signed token).
    const csrf = (JSON.parse(Buffer.from(developer.session_token.split('.')[1]!, 'base64url').toString()) as { csrf: string }).csrf;
    const cookie = { cookie: `parley_session=${developer.session_token}` };
    expect((await call(app.url, 'DELETE', `/dashboards/${id}`, { headers: cookie })).status).toBe(403);
    expect((await call(app.url, 'DELETE', `/dashboards/${id}`, { headers: { ...cookie, 'x-csrf-token': csrf } })).status).toBe(204);
  });
});
