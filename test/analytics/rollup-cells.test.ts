import { describe, expect, it } from 'vitest';
import { quantile, readCells, recordConversation, type ConversationFacts } from '../../shared/analytics/rollups/index.ts';


const DAY = Date.parse('2026-11-30T00:00:00.000Z');

function call(workspaceId: string, id: string, overrides: Partial<ConversationFacts> = {}): ConversationFacts {
  return {
    table: 'calls',
    workspace_id: workspaceId,
    id,
    start_timestamp: DAY + 3_600_000 * 10 + 60_000 * 5,
    dimensions: { agent_id: 'agent_a', agent_version: 'agent_a@1', call_type: 'phone_call', direction: 'inbound', call_status: 'ended', disconnection_reason: 'user_hangup' },
    figures: { duration_ms: 60_000, cost: 12.5, latency_ms: 800 },
    ...overrides,
  };
}

describe('rollup cells', () => {
  it('counts a phase once, splits hot cells over shards and merges them on read', async () => {
    const ws = `ws_cells_${Date.now()}`;
    const ids = Array.from({ length: 12 }, (_, index) => `call_${index}`);
    const first = await Promise.all(ids.map((id, index) => recordConversation(call(ws, id, { figures: { duration_ms: 1000 * (index + 1), cost: 1, latency_ms: 100 * (index + 1) } }), 'ended')));
    expect(first.filter(Boolean)).toHaveLength(12);
    // The same phase again (a step delivered twice) writes nothing.
    expect(await recordConversation(call(ws, 'call_0'), 'ended')).toBe(false);
    const [all] = await readCells({ workspaceId: ws, table: 'calls', level: 'day', view: [], start: DAY, end: DAY + 86_400_000 });
    expect(all!.totals.count).toBe(12);
    expect(all!.totals.columns.duration_ms.sum).toBe(78_000);
    expect(all!.totals.columns.cost.sum).toBe(12);
    const p50 = quantile(all!.totals, 'latency_ms', 0.5)!;
    expect(Math.abs(p50 - 600) / 600).toBeLessThanOrEqual(0.01);
    // The sketch bins live in the cells' sketch items: a read without them has the counts and sums, no bins.
    const [counted] = await readCells({ workspaceId: ws, table: 'calls', level: 'day', view: [], start: DAY, end: DAY + 86_400_000, sketches: false });
    expect(counted!.totals.count).toBe(12);
    expect(counted!.totals.columns.latency_ms).toMatchObject({ count: 12, sum: 7800, bins: {} });
    expect(quantile(counted!.totals, 'latency_ms', 0.5)).toBeUndefined();
    const minutes = await readCells({ workspaceId: ws, table: 'calls', level: 'minute', view: ['agent_id'], start: DAY, end: DAY + 86_400_000 });
    expect(minutes.map((cell) => [cell.bucket, cell.values, cell.totals.count])).toEqual([['2026-11-30T10:05', ['agent_a'], 12]]);
  });

  it('adds the analysis to the counters of every view and the whole call to the sentiment views', async () => {
    const ws = `ws_analysis_${Date.now()}`;
    await recordConversation(call(ws, 'call_x'), 'ended');
    expect(await recordConversation(call(ws, 'call_x'), 'analyzed', { successful: true, sentiment: 'Negative' })).toBe(true);
    expect(await recordConversation(call(ws, 'call_x'), 'analyzed', { successful: true, sentiment: 'Negative' })).toBe(false);
    const [byAgent] = await readCells({ workspaceId: ws, table: 'calls', level: 'hour', view: ['agent_id'], start: DAY, end: DAY + 86_400_000 });
    expect(byAgent!.totals.count).toBe(1);
    expect(byAgent!.totals.counters).toMatchObject({ analyzed: 1, successful: 1, sentiment_negative: 1 });
    const bySentiment = await readCells({ workspaceId: ws, table: 'calls', level: 'day', view: ['agent_id', 'user_sentiment'], start: DAY, end: DAY + 86_400_000 });
    expect(bySentiment.map((cell) => [cell.values, cell.totals.count, cell.totals.columns.duration_ms.sum])).toEqual([[['agent_a', 'Negative'], 1, 60_000]]);
  });
});
