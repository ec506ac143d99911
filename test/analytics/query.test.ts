import { describe, expect, it, vi } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody } from '../support/factories.ts';
import { call } from '../support/http.ts';
import { recordConversation } from '../../shared/analytics/rollups/index.ts';
import { NOW, seedConversations } from './fixtures.ts';

vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
vi.setSystemTime(NOW);

const app = await startTestApp();
await seedConversations(app.workspace.workspace_id, 'q');

const ms = (iso: string) => Date.parse(iso);
const range = (start: string, end: string, extra: Record<string, unknown> = {}) => ({ start_timestamp: ms(start), end_timestamp: ms(end), ...extra });

async function query(queries: unknown[], api = app.api) {
  return api.post('/analytics/query', { body: { queries } });
}

async function rows(q: Record<string, unknown>) {
  const res = await query([q]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.results[0];
}

async function refused(queries: unknown[], message: string) {
  const res = await query(queries);
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ status: 400, message });
}

describe('POST /analytics/query', () => {
  it('answers day buckets by agent in UTC: dense rows, counts, sums and averages', async () => {
    const result = await rows({
      table: 'calls',
      time_range: range('2026-11-30T00:00:00Z', '2026-12-04T00:00:00Z', { step: 'day' }),
      group_by: ['agent_id'],
      operations: [{ operation: 'count' }, { operation: 'sum', column: 'duration_ms' }, { operation: 'avg', column: 'cost', alias: 'average_cost' }],
    });
    expect(result.time_range).toEqual({ start_timestamp: ms('2026-11-30T00:00:00Z'), end_timestamp: ms('2026-12-04T00:00:00Z'), step: 'day', timezone: 'UTC' });
    const row = (day: string, agent: string, count: number, sum: number, avg: number | null) => ({
      date: `${day}T00:00:00+00:00`, bucket_start_timestamp: ms(`${day}T00:00:00Z`), agent_id: agent, count, sum_duration_ms: sum, average_cost: avg,
    });
    expect(result.result).toEqual([
      row('2026-11-30', 'agent_a', 0, 0, null), row('2026-11-30', 'agent_b', 0, 0, null),
      row('2026-12-01', 'agent_a', 3, 360_000, 20), row('2026-12-01', 'agent_b', 0, 0, null),
      row('2026-12-02', 'agent_a', 0, 0, null), row('2026-12-02', 'agent_b', 1, 30_000, 5),
      row('2026-12-03', 'agent_a', 0, 0, null), row('2026-12-03', 'agent_b', 1, 90_000, 15),
    ]);
  });

  it('answers local days in a zone with an offset from hour cells: 03:00 UTC is the day before in New York', async () => {
    const result = await rows({
      table: 'calls',
      time_range: range('2026-11-30T05:00:00Z', '2026-12-04T05:00:00Z', { step: 'day', timezone: 'America/New_York' }),
      operations: [{ operation: 'count' }],
    });
    expect(result.result).toEqual([
      { date: '2026-11-30T00:00:00-05:00', bucket_start_timestamp: ms('2026-11-30T05:00:00Z'), count: 1 },
      { date: '2026-12-01T00:00:00-05:00', bucket_start_timestamp: ms('2026-12-01T05:00:00Z'), count: 2 },
      { date: '2026-12-02T00:00:00-05:00', bucket_start_timestamp: ms('2026-12-02T05:00:00Z'), count: 1 },
      { date: '2026-12-03T00:00:00-05:00', bucket_start_timestamp: ms('2026-12-03T05:00:00Z'), count: 1 },
    ]);
  });

  it('answers local days in a zone with a half-hour offset, buckets starting at local midnight', async () => {
    const result = await rows({
      table: 'calls',
      time_range: range('2026-11-30T18:30:00Z', '2026-12-02T18:30:00Z', { step: 'day', timezone: 'Asia/Kolkata' }),
      operations: [{ operation: 'count' }],
    });
    expect(result.result).toEqual([
      { date: '2026-12-01T00:00:00+05:30', bucket_start_timestamp: ms('2026-11-30T18:30:00Z'), count: 3 },
      { date: '2026-12-02T00:00:00+05:30', bucket_start_timestamp: ms('2026-12-01T18:30:00Z'), count: 1 },
    ]);
  });

  it('refuses an answer of more than 10,000 rows, naming group_by', async () => {
    const ws = await app.newWorkspace();
    for (let agent = 0; agent < 14; agent++) {
      await recordConversation({
        table: 'calls', workspace_id: ws.workspace_id, id: `many_${agent}`, start_timestamp: ms('2026-12-01T10:00:00Z'),
        dimensions: { agent_id: `agent_${String(agent).padStart(2, '0')}` }, figures: { duration_ms: 1000 },
      }, 'ended', undefined, NOW);
    }
    const res = await query([{ table: 'calls', time_range: range('2026-11-09T00:00:00Z', '2026-12-10T00:00:00Z', { step: 'hour' }), group_by: ['agent_id'], operations: [{ operation: 'count' }] }], ws.api);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message: 'queries.0.group_by: the answer would hold 10416 rows (744 buckets × 14 groups), more than 10000: filter, shorten the range or use a larger step' });
  });

  it('answers weeks from Monday and months, in UTC and in New York, several queries at once', async () => {
    const res = await query([
      { name: 'weeks', table: 'calls', time_range: range('2026-11-23T00:00:00Z', '2026-12-07T00:00:00Z', { step: 'week' }), operations: [{ operation: 'count' }] },
      { table: 'calls', time_range: range('2026-11-01T00:00:00Z', '2027-01-01T00:00:00Z', { step: 'month' }), operations: [{ operation: 'count' }] },
      { table: 'calls', time_range: range('2026-11-01T04:00:00Z', '2027-01-01T05:00:00Z', { step: 'month', timezone: 'America/New_York' }), operations: [{ operation: 'count' }] },
    ]);
    expect(res.status).toBe(200);
    const [weeks, utcMonths, localMonths] = res.body.results;
    expect(weeks.name).toBe('weeks');
    expect(weeks.result).toEqual([
      { date: '2026-11-23T00:00:00+00:00', bucket_start_timestamp: ms('2026-11-23T00:00:00Z'), count: 1 },
      { date: '2026-11-30T00:00:00+00:00', bucket_start_timestamp: ms('2026-11-30T00:00:00Z'), count: 5 },
    ]);
    expect(utcMonths.result.map((r: any) => [r.date, r.count])).toEqual([['2026-11-01T00:00:00+00:00', 1], ['2026-12-01T00:00:00+00:00', 5]]);
    // 1 November starts at 04:00 UTC in New York (daylight time), 1 December at 05:00 (standard time).
    expect(localMonths.result).toEqual([
      { date: '2026-11-01T00:00:00-04:00', bucket_start_timestamp: ms('2026-11-01T04:00:00Z'), count: 2 },
      { date: '2026-12-01T00:00:00-05:00', bucket_start_timestamp: ms('2026-12-01T05:00:00Z'), count: 4 },
    ]);
  });

  it('filters by a value, a list, a boolean and none, and groups by the other dimension of an agent pair', async () => {
    const span = range('2026-11-30T00:00:00Z', '2026-12-04T00:00:00Z');
    const count = [{ operation: 'count' }];
    const byDirection = await rows({ table: 'calls', time_range: span, group_by: ['direction'], filters: { agent_id: 'agent_a' }, operations: count });
    expect(byDirection.result.map((r: any) => [r.direction, r.count])).toEqual([['inbound', 2], ['outbound', 1]]);
    expect(byDirection.result[0].date).toBe('2026-11-30T00:00:00+00:00');
    const listed = await rows({ table: 'calls', time_range: span, filters: { disconnection_reason: ['agent_hangup', 'dial_no_answer'] }, operations: count });
    expect(listed.result[0].count).toBe(2);
    const successful = await rows({ table: 'calls', time_range: span, filters: { call_successful: true }, operations: count });
    expect(successful.result[0].count).toBe(3);
    const webCalls = await rows({ table: 'calls', time_range: span, filters: { direction: 'none' }, operations: count });
    expect(webCalls.result[0].count).toBe(1);
  });

  it('answers counters: count and sum the counted facts, avg their rate; groups by sentiment count analysed calls', async () => {
    const result = await rows({
      table: 'calls',
      time_range: range('2026-11-30T00:00:00Z', '2026-12-04T00:00:00Z'),
      group_by: ['user_sentiment'],
      operations: [{ operation: 'count' }, { operation: 'sum', column: 'successful' }, { operation: 'avg', column: 'successful', alias: 'success_rate' }, { operation: 'count', column: 'duration_ms' }],
    });
    expect(result.result.map((r: any) => [r.user_sentiment, r.count, r.sum_successful, r.success_rate, r.count_duration_ms])).toEqual([
      ['Negative', 1, 0, 0, 1],
      ['Neutral', 1, 1, 1, 1],
      ['Positive', 2, 2, 1, 2],
    ]);
    const all = await rows({
      table: 'calls',
      time_range: range('2026-11-30T00:00:00Z', '2026-12-04T00:00:00Z'),
      operations: [{ operation: 'avg', column: 'successful' }, { operation: 'p50', column: 'latency_ms' }, { operation: 'max', column: 'duration_ms' }, { operation: 'min', column: 'cost' }],
    });
    // 3 successful of 5 calls; latency 600, 800, 900, 1000, 1200: p50 900 within the sketches' 1 %.
    expect(all.result[0].avg_successful).toBe(0.6);
    expect(Math.abs(all.result[0].p50_latency_ms - 900) / 900).toBeLessThanOrEqual(0.01);
    expect(Math.abs(all.result[0].max_duration_ms - 180_000) / 180_000).toBeLessThanOrEqual(0.01);
    expect(Math.abs(all.result[0].min_cost - 5) / 5).toBeLessThanOrEqual(0.01);
  });

  it('answers chats from their own rollups', async () => {
    const result = await rows({
      table: 'chats',
      time_range: range('2026-11-30T00:00:00Z', '2026-12-04T00:00:00Z'),
      group_by: ['chat_successful'],
      operations: [{ operation: 'count' }, { operation: 'sum', column: 'cost' }],
    });
    expect(result.result).toEqual([{ date: '2026-11-30T00:00:00+00:00', bucket_start_timestamp: ms('2026-11-30T00:00:00Z'), chat_successful: 'true', count: 1, sum_cost: 2 }]);
  });

  it('widens a range that cuts a bucket to whole buckets, and says so in time_range', async () => {
    const days = await rows({ table: 'calls', time_range: range('2026-12-01T12:00:00Z', '2026-12-02T12:00:00Z', { step: 'day' }), operations: [{ operation: 'count' }] });
    expect(days.time_range).toMatchObject({ start_timestamp: ms('2026-12-01T00:00:00Z'), end_timestamp: ms('2026-12-03T00:00:00Z') });
    expect(days.result.map((r: any) => r.count)).toEqual([3, 1]);
    // Without a step, to whole hours (minute cells of 1 December have expired): 12:00 to 12:00 holds a2 only.
    const stepless = await rows({ table: 'calls', time_range: range('2026-12-01T12:30:00Z', '2026-12-02T11:59:00Z'), operations: [{ operation: 'count' }] });
    expect(stepless.time_range).toEqual({ start_timestamp: ms('2026-12-01T12:00:00Z'), end_timestamp: ms('2026-12-02T12:00:00Z'), timezone: 'UTC' });
    expect(stepless.result).toEqual([{ date: '2026-12-01T12:00:00+00:00', bucket_start_timestamp: ms('2026-12-01T12:00:00Z'), count: 1 }]);
  });

  it('refuses with a 400 naming the field', async () => {
    const span = range('2026-11-30T00:00:00Z', '2026-12-04T00:00:00Z');
    const count = [{ operation: 'count' }];
    await refused([{ table: 'chats', time_range: span, group_by: ['call_type'], operations: count }],
      'queries.0.group_by.0: call_type is not a dimension of chats; its dimensions: agent_id, agent_version, chat_type, chat_status, user_sentiment, chat_successful');
    await refused([{ table: 'calls', time_range: span, operations: count }, { table: 'calls', time_range: span, filters: { colour: 'red' }, operations: count }],
      'queries.1.filters.colour: colour is not a dimension of calls; its dimensions: agent_id, agent_version, call_type, direction, call_status, disconnection_reason, user_sentiment, call_successful, batch_call_id, from_number');
    await refused([{ table: 'calls', time_range: span, group_by: ['direction'], filters: { call_type: 'web_call' }, operations: count }],
      'queries.0.group_by: no view holds direction with call_type: group and filter by at most one dimension, or by agent_id with one of call_type, direction, call_status, disconnection_reason, user_sentiment, call_successful');
    await refused([{ table: 'calls', time_range: span, operations: [{ operation: 'count' }, { operation: 'p50', column: 'successful' }] }],
      'queries.0.operations.1.column: p50 takes a figure column (duration_ms, cost, latency_ms); successful is a counter (count, sum or avg it)');
    await refused([{ table: 'calls', time_range: span, operations: [{ operation: 'sum' }] }],
      'queries.0.operations.0.column: sum needs a column (duration_ms, cost, latency_ms, or a counter)');
    await refused([{ table: 'calls', time_range: span, operations: [{ operation: 'count' }, { operation: 'count' }] }],
      'queries.0.operations.1.operation: the result field count is already taken: give this operation an alias');
    await refused([{ table: 'calls', time_range: span, group_by: ['agent_id'], operations: [{ operation: 'count', alias: 'agent_id' }] }],
      'queries.0.operations.0.alias: the result field agent_id is already taken');
    await refused([{ table: 'calls', time_range: range('2026-12-08T00:00:00Z', '2026-12-10T00:00:00Z', { step: 'minute' }), operations: count }],
      'queries.0.time_range: a step of minute answers at most 1440 buckets: shorten the range or use a larger step');
    await refused([{ table: 'calls', time_range: range('2026-01-01T00:00:00Z', '2027-06-01T00:00:00Z', { step: 'day' }), operations: count }],
      'queries.0.time_range: a step of day answers at most 400 buckets: shorten the range or use a larger step');
    await refused([{ table: 'calls', time_range: range('2026-12-06T00:00:00Z', '2026-12-06T01:00:00Z', { step: 'minute' }), operations: count }],
      'queries.0.time_range.start_timestamp: a step of minute reads minute cells, kept 3 days: start at 2026-12-07T12:01:00.000Z or later');
    await refused([{ table: 'calls', time_range: range('2026-08-01T04:00:00Z', '2026-09-30T04:00:00Z', { step: 'day', timezone: 'America/New_York' }), operations: count }],
      'queries.0.time_range.start_timestamp: day buckets in America/New_York are composed of hour cells, kept 100 days: start at 2026-09-01T13:00:00.000Z or later');
    await refused([{ table: 'calls', time_range: range('2026-12-09T00:00:00Z', '2026-12-09T01:00:00Z', { step: 'minute' }), group_by: ['direction'], operations: count }],
      'queries.0.group_by: minute cells hold only the totals and agent_id: group or filter by agent_id alone, or use step hour');
    await refused([{ table: 'calls', time_range: range('2020-01-01T00:00:00Z', '2026-12-04T00:00:00Z'), operations: count }],
      'queries.0.time_range: a range without a step spans at most 400 days: shorten it or give a step');
    await refused([{ table: 'calls', time_range: { ...span, timezone: 'Mars/Olympus' }, operations: count }],
      'queries.0.time_range.timezone: Must be an IANA time zone name, such as America/New_York');
    await refused([{ table: 'calls', time_range: span, operations: [{ operation: 'median' }] }],
      'queries.0.operations.0.operation: Expected one of "count", "sum", "avg", "min", "max", "p50", "p90", "p99"');
  });

  it('needs the analytics scope (get-concurrency too); a member reads; another workspace sees nothing of these figures', async () => {
    const created = await app.api.post('/api-keys', { body: apiKeyBody({ scopes: ['calls'] }) });
    expect(created.status).toBe(201);
    const callsOnly = app.api.withKey(created.body.api_key);
    const span = range('2026-11-30T00:00:00Z', '2026-12-04T00:00:00Z');
    const body = [{ table: 'calls', time_range: span, operations: [{ operation: 'count' }] }];
    for (const res of [await query(body, callsOnly), await callsOnly.get('/analytics/summary'), await callsOnly.get('/get-concurrency')]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "analytics" scope' });
    }
    const analytics = app.api.withKey((await app.api.post('/api-keys', { body: apiKeyBody({ scopes: ['analytics'] }) })).body.api_key);
    expect((await analytics.get('/get-concurrency')).status).toBe(200);
    expect((await query(body, analytics)).body.results[0].result[0].count).toBe(5);

    expect((await app.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } })).status).toBe(201);
    const invite = await app.api.post('/workspace/invites', { body: { email: 'reader@example.com', role: 'member' } });
    const session = (await call(app.url, 'POST', '/auth/invites/accept', { body: { token: invite.body.token } })).body;
    const asMember = { authorization: `Bearer ${session.session_token}` };
    const memberQuery = await call(app.url, 'POST', '/analytics/query', { headers: asMember, body: { queries: body } });
    expect(memberQuery.status).toBe(200);
    expect(memberQuery.body.results[0].result[0].count).toBe(5);
    expect((await call(app.url, 'GET', '/analytics/summary', { headers: asMember })).status).toBe(200);

    const other = await app.newWorkspace();
    const theirs = await query(body, other.api);
    expect(theirs.body.results[0].result).toEqual([{ date: '2026-11-30T00:00:00+00:00', bucket_start_timestamp: ms('2026-11-30T00:00:00Z'), count: 0 }]);
  });
});
