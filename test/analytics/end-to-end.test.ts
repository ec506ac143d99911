import { DDSketch } from '@datadog/sketches-js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { runCallStep } from '../../shared/calls/engine/engine.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { timeOfOrderedId } from '../../shared/platform/ids.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * The analytics answer what the calls themselves say (docs/analytics.md): sandbox calls by
 * two agents, run end to end by the call engine's steps, some successful, some not, one not
 * connected, placed on both sides of midnight in New York (05:00 UTC), so New York's day
 * buckets split them where UTC's do not. GET /analytics/summary and POST /analytics/query
 * must then match, exactly, the figures computed from the calls as list-calls answers them;
 * a call whose ending step is delivered twice at once is counted once.
 */

vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
/** 9 December 00:00 in New York (UTC-5 in December): the calls straddle it, all on 9 December in UTC. */
const MIDNIGHT_NY = Date.parse('2026-12-09T05:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 86_400_000;
vi.setSystemTime(MIDNIGHT_NY - 10 * 60_000);

const app = await startTestApp();
// The call engine's steps (dial, lines, hang-up, analysis) run, as deployed, in call-steps.
const background = startBackgroundWork([jobNamed('call-steps')]);
afterAll(() => background.stop());

const callee = (lastFour: string) => `+1415555${lastFour}`;
/** What the offline analysis reads (shared/conversation/analysis): thanks are Positive and successful, complaints Negative and not. */
const PLEASED = ['Thank you, that is great.'];
const UPSET = ['This is terrible, I am upset.'];
const ASKING = ['I have a question about my order.'];
const script = (ms: number, says: string[]) => ({ sandbox_call_ms: ms, sandbox_user_says: says });

/** A call as retell-sdk lists it (the fields the figures come from). */
interface ListedCall {
  call_id: string;
  agent_id: string;
  call_status: string;
  start_timestamp?: number;
  duration_ms?: number;
  disconnection_reason?: string;
  call_cost?: { combined_cost?: number };
  latency?: { e2e?: { p50?: number } };
  call_analysis?: { call_successful?: boolean; user_sentiment?: string };
}

/** When the rollups bucket a call: its start, or its creation (its time-ordered ID's time) when it never started. */
const startOf = (call: ListedCall) => call.start_timestamp ?? timeOfOrderedId('call', call.call_id);
/** As the query answers sums and averages: to 6 decimals. */
const round6 = (value: number) => Math.round(value * 1e6) / 1e6;
const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/** The rows a day-step query grouped by agent must answer, computed from the calls: every bucket with every agent, agents sorted. */
function expectedRows(calls: ListedCall[], buckets: { start: number; date: string }[]) {
  const agents = [...new Set(calls.map((call) => call.agent_id))].sort();
  return buckets.flatMap((bucket, index) => {
    const end = buckets[index + 1]?.start ?? bucket.start + DAY;
    return agents.map((agent) => {
      const mine = calls.filter((call) => call.agent_id === agent && startOf(call) >= bucket.start && startOf(call) < end);
      const durations = mine.map((call) => call.duration_ms!);
      return {
        date: bucket.date,
        bucket_start_timestamp: bucket.start,
        agent_id: agent,
        count: mine.length,
        avg_duration_ms: durations.length === 0 ? null : round6(durations.reduce((a, b) => a + b, 0) / durations.length),
        sum_cost: round6(mine.reduce((sum, call) => sum + call.call_cost!.combined_cost!, 0)),
      };
    });
  });
}

/** The summary's calls block, computed from the calls. */
function expectedSummaryCalls(calls: ListedCall[]) {
  const analysed = calls.filter((call) => call.call_analysis !== undefined);
  const sentiment = (name: string) => analysed.filter((call) => call.call_analysis!.user_sentiment === name).length;
  const successful = analysed.filter((call) => call.call_analysis!.call_successful === true).length;
  const reasons: Record<string, number> = {};
  for (const call of calls) reasons[call.disconnection_reason ?? 'none'] = (reasons[call.disconnection_reason ?? 'none'] ?? 0) + 1;
  // The latency percentiles are DDSketch's (1 % relative accuracy) over each call's e2e p50: the same sketch built here.
  const sketch = new DDSketch({ relativeAccuracy: 0.01 });
  for (const call of calls) if (typeof call.latency?.e2e?.p50 === 'number') sketch.accept(call.latency.e2e.p50);
  const latency = (q: number) => (sketch.count === 0 ? null : round(sketch.getValueAtQuantile(q), 1));
  return {
    count: calls.length,
    minutes: round(calls.reduce((sum, call) => sum + call.duration_ms!, 0) / 60_000, 2),
    analyzed: analysed.length,
    successful,
    unsuccessful: analysed.filter((call) => call.call_analysis!.call_successful === false).length,
    success_rate: analysed.length === 0 ? null : round(successful / analysed.length, 4),
    sentiment: { positive: sentiment('Positive'), negative: sentiment('Negative'), neutral: sentiment('Neutral'), unknown: sentiment('Unknown') },
    disconnection_reasons: reasons,
    combined_cost: round(calls.reduce((sum, call) => sum + call.call_cost!.combined_cost!, 0), 2),
    latency_p50_ms: latency(0.5),
    latency_p90_ms: latency(0.9),
  };
}

describe('analytics over sandbox calls, end to end', () => {
  it('answers the summary and day buckets by agent, in New York and in UTC, exactly as the calls say; an end delivered twice counted once', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const a = await newAgentWithNumber(ws.api);
    const b = await newAgentWithNumber(ws.api);
    const settled = (callId: string) =>
      eventually(
        async () => (await client.call.retrieve(callId)) as unknown as ListedCall,
        (got) => got.call_analysis !== undefined || got.call_status === 'not_connected',
        60_000,
      );

    // Before midnight in New York (8 December there, 9 December in UTC): a pleased and an upset caller of agent A, and a busy line for agent B.
    vi.setSystemTime(MIDNIGHT_NY - 60_000);
    const evening = await Promise.all([
      client.call.createPhoneCall({ from_number: a.number, to_number: callee('7001'), metadata: script(1000, PLEASED) }),
      client.call.createPhoneCall({ from_number: a.number, to_number: callee('7002'), metadata: script(2500, UPSET) }),
      client.call.createPhoneCall({ from_number: b.number, to_number: callee('0001') }),
    ]);
    for (const call of await Promise.all(evening.map((call) => settled(call.call_id)))) expect(startOf(call)).toBeLessThan(MIDNIGHT_NY);

    // After it: a question to agent A, a pleased caller of agent B, and an upset one whose hang-up is delivered twice at once.
    vi.setSystemTime(Math.max(Date.now(), MIDNIGHT_NY + 1000));
    const morning = await Promise.all([
      client.call.createPhoneCall({ from_number: a.number, to_number: callee('7003'), metadata: script(1500, ASKING) }),
      client.call.createPhoneCall({ from_number: b.number, to_number: callee('7004'), metadata: script(3000, PLEASED) }),
    ]);
    // An hour long unless hung up: its own hang-up step is not due while the test runs.
    const twice = await client.call.createPhoneCall({ from_number: b.number, to_number: callee('7005'), metadata: script(HOUR, UPSET) });
    await eventually(
      async () => (await client.call.retrieve(twice.call_id)) as unknown as { call_status: string; transcript?: string },
      (got) => got.call_status === 'ongoing' && (got.transcript ?? '').includes(UPSET[0]!),
    );
    const hangup = { call_id: twice.call_id, workspace_id: ws.workspace_id, step: 'hangup' as const, seq: 0 };
    await Promise.all([runCallStep(hangup), runCallStep(hangup)]);
    const settledMorning = await Promise.all([...morning, twice].map((call) => settled(call.call_id)));
    for (const call of settledMorning) expect(startOf(call)).toBeGreaterThanOrEqual(MIDNIGHT_NY);
    // Redelivered once more after the analysis: the end and the analysis are not run again.
    await runCallStep(hangup);
    await runCallStep({ ...hangup, step: 'analyze' });

    const listed = (await client.call.list({ limit: 100 })) as unknown as { items: ListedCall[]; has_more: boolean };
    expect(listed.has_more).toBe(false);
    const calls = listed.items;
    const verdicts = (call: ListedCall) => [call.agent_id, call.call_status, call.disconnection_reason, call.call_analysis?.user_sentiment, call.call_analysis?.call_successful];
    const placed = [...evening, ...morning, twice].map((call) => call.call_id);
    expect(placed.map((id) => verdicts(calls.find((call) => call.call_id === id)!))).toEqual([
      [a.agent.agent_id, 'ended', 'user_hangup', 'Positive', true],
      [a.agent.agent_id, 'ended', 'user_hangup', 'Negative', false],
      [b.agent.agent_id, 'not_connected', 'dial_busy', undefined, undefined],
      [a.agent.agent_id, 'ended', 'user_hangup', 'Neutral', true],
      [b.agent.agent_id, 'ended', 'user_hangup', 'Positive', true],
      [b.agent.agent_id, 'ended', 'user_hangup', 'Negative', false],
    ]);
    expect(calls).toHaveLength(6);
    for (const call of calls) {
      expect(call.duration_ms).toEqual(expect.any(Number));
      expect(call.call_cost?.combined_cost).toEqual(expect.any(Number));
    }

    // The summary of the two hours around midnight: exactly the calls' figures; nothing in the two hours before.
    const summary = await eventually(
      async () => (await ws.api.get(`/analytics/summary?start_timestamp=${MIDNIGHT_NY - HOUR}&end_timestamp=${MIDNIGHT_NY + HOUR}`)).body,
      (body) => body.current?.calls?.analyzed === 5,
    );
    expect(summary.current).toEqual({
      start_timestamp: MIDNIGHT_NY - HOUR,
      end_timestamp: MIDNIGHT_NY + HOUR,
      calls: expectedSummaryCalls(calls),
      chats: { count: 0, analyzed: 0, successful: 0, success_rate: null, combined_cost: 0 },
    });
    expect(summary.previous.calls.count).toBe(0);

    // Day buckets by agent, in New York and in UTC, in one request.
    const operations = [{ operation: 'count' }, { operation: 'avg', column: 'duration_ms' }, { operation: 'sum', column: 'cost' }];
    const res = await ws.api.post('/analytics/query', {
      body: {
        queries: [
          {
            name: 'new_york',
            table: 'calls',
            time_range: { start_timestamp: MIDNIGHT_NY - DAY, end_timestamp: MIDNIGHT_NY + DAY, step: 'day', timezone: 'America/New_York' },
            group_by: ['agent_id'],
            operations,
          },
          {
            name: 'by_number',
            table: 'calls',
            time_range: { start_timestamp: MIDNIGHT_NY - DAY, end_timestamp: MIDNIGHT_NY + DAY },
            group_by: ['from_number'],
            operations: [{ operation: 'count' }],
          },
          {
            name: 'utc',
            table: 'calls',
            time_range: { start_timestamp: Date.parse('2026-12-08T00:00:00Z'), end_timestamp: Date.parse('2026-12-10T00:00:00Z'), step: 'day' },
            group_by: ['agent_id'],
            operations,
          },
        ],
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [newYork, byNumber, utc] = res.body.results;
    // The workspace's numbers that placed the calls (docs/analytics.md, "Recording"): three calls each.
    expect(byNumber.result).toEqual(
      [a.number, b.number].sort().map((number) => ({ date: '2026-12-08T05:00:00+00:00', bucket_start_timestamp: MIDNIGHT_NY - DAY, from_number: number, count: 3 })),
    );
    expect(newYork.result).toEqual(
      expectedRows(calls, [
        { start: MIDNIGHT_NY - DAY, date: '2026-12-08T00:00:00-05:00' },
        { start: MIDNIGHT_NY, date: '2026-12-09T00:00:00-05:00' },
      ]),
    );
    expect(utc.result).toEqual(
      expectedRows(calls, [
        { start: Date.parse('2026-12-08T00:00:00Z'), date: '2026-12-08T00:00:00+00:00' },
        { start: Date.parse('2026-12-09T00:00:00Z'), date: '2026-12-09T00:00:00+00:00' },
      ]),
    );
    // The split itself: New York's 8 December holds the evening's calls, UTC's 8 December none.
    expect(newYork.result.filter((row: { bucket_start_timestamp: number }) => row.bucket_start_timestamp === MIDNIGHT_NY - DAY).map((row: { agent_id: string; count: number }) => [row.agent_id, row.count]).sort()).toEqual([
      [a.agent.agent_id, 2],
      [b.agent.agent_id, 1],
    ].sort());
    expect(utc.result.slice(0, 2).map((row: { count: number }) => row.count)).toEqual([0, 0]);
  }, 180_000);
});
