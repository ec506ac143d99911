import { describe, expect, it, vi } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { NOW, seedConversations } from './fixtures.ts';

vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
vi.setSystemTime(NOW);

const app = await startTestApp();
await seedConversations(app.workspace.workspace_id, 's');

const ms = (iso: string) => Date.parse(iso);
const near = (value: number, expected: number) => expect(Math.abs(value - expected) / expected).toBeLessThanOrEqual(0.01);
const EMPTY_CHATS = { count: 0, analyzed: 0, successful: 0, success_rate: null, combined_cost: 0 };

describe('GET /analytics/summary', () => {
  it('answers the totals of the range and of the period of equal length before it', async () => {
    const res = await app.api.get(`/analytics/summary?start_timestamp=${ms('2026-11-27T00:00:00Z')}&end_timestamp=${ms('2026-12-04T00:00:00Z')}`);
    expect(res.status).toBe(200);
    const { current, previous } = res.body;
    const { latency_p50_ms: p50, latency_p90_ms: p90, ...calls } = current.calls;
    expect(current.start_timestamp).toBe(ms('2026-11-27T00:00:00Z'));
    expect(current.end_timestamp).toBe(ms('2026-12-04T00:00:00Z'));
    expect(calls).toEqual({
      count: 5,
      minutes: 8,
      analyzed: 4,
      successful: 3,
      unsuccessful: 1,
      success_rate: 0.75,
      sentiment: { positive: 2, negative: 1, neutral: 1, unknown: 0 },
      disconnection_reasons: { user_hangup: 3, agent_hangup: 1, dial_no_answer: 1 },
      combined_cost: 80,
    });
    // Latencies 600, 800, 900, 1000 and 1200 ms: DDSketch ranks q × (n − 1), within its 1 %.
    near(p50, 900);
    near(p90, 1000);
    expect(current.chats).toEqual({ count: 1, analyzed: 1, successful: 1, success_rate: 1, combined_cost: 2 });
    expect(previous).toEqual({
      start_timestamp: ms('2026-11-20T00:00:00Z'),
      end_timestamp: ms('2026-11-27T00:00:00Z'),
      calls: {
        count: 1, minutes: 1, analyzed: 0, successful: 0, unsuccessful: 0, success_rate: null,
        sentiment: { positive: 0, negative: 0, neutral: 0, unknown: 0 },
        disconnection_reasons: { user_hangup: 1 },
        combined_cost: 10,
        latency_p50_ms: expect.any(Number),
        latency_p90_ms: expect.any(Number),
      },
      chats: EMPTY_CHATS,
    });
    near(previous.calls.latency_p50_ms, 700);
  });

  it('defaults to the 7 days before now, widened to whole hours', async () => {
    const res = await app.api.get('/analytics/summary');
    expect(res.status).toBe(200);
    // Now is 10 December 12:00 (and a little): 3 December 12:00 to 10 December 13:00, and the 169 hours before.
    expect([res.body.current.start_timestamp, res.body.current.end_timestamp]).toEqual([ms('2026-12-03T12:00:00Z'), ms('2026-12-10T13:00:00Z')]);
    expect(res.body.current.calls.count).toBe(0);
    expect(res.body.current.calls.latency_p50_ms).toBeNull();
    expect([res.body.previous.start_timestamp, res.body.previous.end_timestamp]).toEqual([ms('2026-11-26T11:00:00Z'), ms('2026-12-03T12:00:00Z')]);
    expect(res.body.previous.calls.count).toBe(5);
    expect(res.body.previous.calls.minutes).toBe(8);
    expect(res.body.previous.chats.count).toBe(1);
  });

  it('refuses a range that ends before it starts, or a malformed timestamp, naming the field', async () => {
    const backwards = await app.api.get(`/analytics/summary?start_timestamp=${ms('2026-12-04T00:00:00Z')}&end_timestamp=${ms('2026-12-01T00:00:00Z')}`);
    expect(backwards.status).toBe(400);
    expect(backwards.body).toEqual({ status: 400, message: 'end_timestamp: must be after start_timestamp' });
    const malformed = await app.api.get('/analytics/summary?start_timestamp=yesterday');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ status: 400, message: 'start_timestamp: Must be a whole number' });
    const long = await app.api.get(`/analytics/summary?start_timestamp=${ms('2024-01-01T00:00:00Z')}`);
    expect(long.body).toEqual({ status: 400, message: 'start_timestamp: a summary spans at most 400 days' });
  });

  it("shows another workspace none of this one's figures", async () => {
    const other = await app.newWorkspace();
    const res = await other.api.get(`/analytics/summary?start_timestamp=${ms('2026-11-27T00:00:00Z')}&end_timestamp=${ms('2026-12-04T00:00:00Z')}`);
    expect(res.body.current.calls.count).toBe(0);
    expect(res.body.previous.calls.count).toBe(0);
    expect(res.body.current.chats).toEqual(EMPTY_CHATS);
  });
});
