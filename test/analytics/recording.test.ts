import { afterAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { localQueue } from '../../local/queues.ts';
import { runRollupBackfill } from '../../shared/analytics/backfill/index.ts';
import { callFacts } from '../../shared/analytics/recording/index.ts';
import { allCellPartitions, readCells, recordConversation, type RollupCell, type RollupView } from '../../shared/analytics/rollups/index.ts';
import { sendCallEvent } from '../../shared/calls/engine/call-webhooks.ts';
import { findCallItem } from '../../shared/calls/store.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { timeOfOrderedId } from '../../shared/platform/ids.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber, newChatAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Calls and chats reach the rollups (docs/analytics.md, "Recording" and "Backfill"):
 * sandbox calls by two agents through the local API, whose cells must hold exactly what the
 * calls' own records say; a step delivered twice counted once; a chat; the backfill of
 * conversations the rollups never saw, and the repair of a recording that failed.
 */
const app = await startTestApp();
// The call engine's steps (dial, lines, hang-up, analysis) run, as deployed, in call-steps.
const background = startBackgroundWork([jobNamed('call-steps')]);
afterAll(() => background.stop());

const DAY = 86_400_000;
const callee = (lastFour: string) => `+1415555${lastFour}`;
/** A short sandbox call with a line from the callee, so it is analysed. */
const quick = (ms: number) => ({ sandbox_call_ms: ms, sandbox_user_says: ['Hello, I have a question about my order.'] });
const dayOf = (timestamp: number) => new Date(timestamp).toISOString().slice(0, 10);
/** Cents to 1/10,000 of a cent (costs have 4 decimals): sums compared as integers, so exactly. */
const units = (cents: number) => Math.round(cents * 10_000);

/** The cells of one view at day level around now, as `key → {count, duration, cost units}`. */
async function dayCells(workspaceId: string, tableName: 'calls' | 'chats', view: RollupView) {
  const now = Date.now();
  const cells = await readCells({ workspaceId, table: tableName, level: 'day', view, start: now - 3 * DAY, end: now + 2 * DAY });
  return summarise(cells);
}

function summarise(cells: RollupCell[]) {
  return Object.fromEntries(
    cells.map((cell) => [
      [cell.bucket, ...cell.values].join('/'),
      { count: cell.totals.count, duration_ms: cell.totals.columns.duration_ms.sum, cost: units(cell.totals.columns.cost.sum) },
    ]),
  );
}

/** What the calls' own records say, grouped the same way. */
function expected(calls: any[], key: (call: any) => string[]) {
  const groups: Record<string, { count: number; duration_ms: number; cost: number }> = {};
  for (const call of calls) {
    // A call that never started is bucketed by its creation (its time-ordered ID's time).
    const id = [dayOf(call.start_timestamp ?? timeOfOrderedId('call', call.call_id)), ...key(call)].join('/');
    const group = (groups[id] ??= { count: 0, duration_ms: 0, cost: 0 });
    group.count++;
    group.duration_ms += call.duration_ms;
    group.cost += units(call.call_cost.combined_cost);
  }
  return groups;
}

/** Deletes every rollup item of a workspace (its facts and cells): as if it had never been recorded. */
async function forgetRollups(workspaceId: string) {
  const partitions = [keys.rollupFacts(workspaceId).pk, ...allCellPartitions().map((partition) => keys.rollupCells(workspaceId, partition).pk)];
  for (const pk of partitions) {
    const items = await table.queryAll<{ pk: string; sk: string }>({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } });
    await table.batchDelete(items.map(({ pk: itemPk, sk }) => ({ pk: itemPk, sk })));
  }
}

/** Two agents' sandbox calls in a fresh workspace, analysed (or not connected), as retell-sdk retrieves them. */
async function twoAgentsCalls() {
  const ws = await app.newWorkspace();
  const client = retellClient(app.url, ws.api_key);
  const a = await newAgentWithNumber(ws.api);
  const b = await newAgentWithNumber(ws.api);
  const placed: any[] = await Promise.all([
    client.call.createPhoneCall({ from_number: a.number, to_number: callee('6001'), metadata: quick(400) }),
    client.call.createPhoneCall({ from_number: a.number, to_number: callee('6002'), metadata: quick(900) }),
    client.call.createPhoneCall({ from_number: a.number, to_number: callee('6003'), metadata: quick(1500) }),
    client.call.createPhoneCall({ from_number: b.number, to_number: callee('6004'), metadata: quick(700) }),
    // Busy: not connected, never started (bucketed by its creation), never analysed.
    client.call.createPhoneCall({ from_number: b.number, to_number: callee('0001') }),
  ]);
  const calls = await Promise.all(
    placed.map((call) =>
      eventually(
        () => client.call.retrieve(call.call_id) as Promise<any>,
        (got) => got.call_analysis !== undefined || got.call_status === 'not_connected',
        60_000,
      ),
    ),
  );
  return { ws, client, agents: [a.agent.agent_id, b.agent.agent_id], calls };
}

describe('calls recorded when they end and when their analysis lands', () => {
  it('adds two agents\' sandbox calls to the day cells exactly as their records say, and a step delivered twice once', async () => {
    const { ws, agents, calls } = await twoAgentsCalls();
    const analysed = calls.filter((call) => call.call_analysis !== undefined);
    expect(analysed).toHaveLength(4);
    expect(calls.find((call) => call.call_status === 'not_connected')).toMatchObject({ agent_id: agents[1], duration_ms: 0 });
    // The analysed phase is recorded as call_analyzed is sent: wait for the sentiment views to hold all four.
    const bySentiment = await eventually(
      () => dayCells(ws.workspace_id, 'calls', ['agent_id', 'user_sentiment']),
      (cells) => Object.values(cells).reduce((sum, cell) => sum + cell.count, 0) === 4,
    );
    expect(bySentiment).toEqual(expected(analysed, (call) => [call.agent_id, call.call_analysis.user_sentiment]));
    expect(await dayCells(ws.workspace_id, 'calls', [])).toEqual(expected(calls, () => []));
    const byAgent = await dayCells(ws.workspace_id, 'calls', ['agent_id']);
    expect(byAgent).toEqual(expected(calls, (call) => [call.agent_id]));
    expect(Object.values(byAgent).map((cell) => cell.count).sort()).toEqual([2, 3]);

    // The counters: every analysed call counted once, its success and sentiment beside it.
    const now = Date.now();
    const withLatency = calls.filter((call) => typeof call.latency?.e2e?.p50 === 'number').length;
    const days = await readCells({ workspaceId: ws.workspace_id, table: 'calls', level: 'day', view: [], start: now - 3 * DAY, end: now + 2 * DAY });
    const sum = (pick: (cell: RollupCell) => number) => days.reduce((total, cell) => total + pick(cell), 0);
    expect(sum((cell) => cell.totals.columns.latency_ms.count)).toBe(withLatency);
    expect(sum((cell) => cell.totals.counters.analyzed)).toBe(4);
    expect(sum((cell) => cell.totals.counters.successful + cell.totals.counters.unsuccessful)).toBe(analysed.filter((call) => typeof call.call_analysis.call_successful === 'boolean').length);
    expect(sum((cell) => cell.totals.counters.error)).toBe(0);

    // call_ended and call_analyzed sent again for one call (a step delivered twice): its listener runs, nothing is added.
    const item = (await findCallItem(analysed[0].call_id))!;
    await sendCallEvent(item, 'call_ended');
    await sendCallEvent(item, 'call_analyzed');
    await sendCallEvent(item, 'call_ended');
    expect(await dayCells(ws.workspace_id, 'calls', ['agent_id'])).toEqual(byAgent);
    expect(await dayCells(ws.workspace_id, 'calls', ['agent_id', 'user_sentiment'])).toEqual(bySentiment);
  }, 120_000);
});

describe('chats recorded', () => {
  it('counts a sandbox chat at its end, with its duration, cost and analysis', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const { chatAgent } = await newChatAgent(ws.api);
    const chat: any = await client.chat.create({ agent_id: chatAgent.agent_id });
    await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'Where is my order?' });
    await client.chat.end(chat.chat_id);
    const ended: any = await client.chat.retrieve(chat.chat_id);
    expect(ended.chat_analysis).toBeDefined();
    const cell = { count: 1, duration_ms: ended.end_timestamp - ended.start_timestamp, cost: units(ended.chat_cost.combined_cost) };
    const day = dayOf(ended.start_timestamp);
    expect(await dayCells(ws.workspace_id, 'chats', [])).toEqual({ [day]: cell });
    expect(await dayCells(ws.workspace_id, 'chats', ['agent_id', 'chat_type'])).toEqual({ [`${day}/${chatAgent.agent_id}/api_chat`]: cell });
    expect(await dayCells(ws.workspace_id, 'chats', ['user_sentiment'])).toEqual({ [`${day}/${ended.chat_analysis.user_sentiment}`]: cell });
  }, 60_000);
});

describe('the rollup backfill', () => {
  it('counts a workspace\'s calls and chats the rollups never saw in one run, and a second run adds nothing', async () => {
    const { ws, client, calls } = await twoAgentsCalls();
    const { chatAgent } = await newChatAgent(ws.api);
    const chat: any = await client.chat.create({ agent_id: chatAgent.agent_id });
    await client.chat.end(chat.chat_id);
    const analysed = calls.filter((call) => call.call_analysis !== undefined);
    await eventually(
      () => dayCells(ws.workspace_id, 'calls', ['agent_id', 'user_sentiment']),
      (cells) => Object.values(cells).reduce((sum, cell) => sum + cell.count, 0) === analysed.length,
    );
    await forgetRollups(ws.workspace_id);
    expect(await dayCells(ws.workspace_id, 'calls', [])).toEqual({});

    // Five calls ended (four analysed) and one chat ended and analysed: eleven phases.
    expect(await runRollupBackfill({ workspaceId: ws.workspace_id })).toEqual({ outcome: 'complete', calls_recorded: 9, chats_recorded: 2, repairs: 0 });
    expect(await dayCells(ws.workspace_id, 'calls', ['agent_id'])).toEqual(expected(calls, (call) => [call.agent_id]));
    expect(await dayCells(ws.workspace_id, 'calls', ['agent_id', 'user_sentiment'])).toEqual(expected(analysed, (call) => [call.agent_id, call.call_analysis.user_sentiment]));
    expect(Object.values(await dayCells(ws.workspace_id, 'chats', [])).map((cell) => cell.count)).toEqual([1]);

    expect(await runRollupBackfill({ workspaceId: ws.workspace_id })).toEqual({ outcome: 'complete', calls_recorded: 0, chats_recorded: 0, repairs: 0 });
    expect(await dayCells(ws.workspace_id, 'calls', ['agent_id'])).toEqual(expected(calls, (call) => [call.agent_id]));
  }, 120_000);

  it('walks a workspace in budgeted runs, each queueing its continuation from where it stopped', async () => {
    const { ws, calls } = await twoAgentsCalls();
    await eventually(
      () => dayCells(ws.workspace_id, 'calls', ['user_sentiment']),
      (cells) => Object.values(cells).reduce((sum, cell) => sum + cell.count, 0) === 4,
    );
    await forgetRollups(ws.workspace_id);
    // One page a run: the calls' page, then the chats' (none), then done.
    const first = await runRollupBackfill({ workspaceId: ws.workspace_id, limits: { pages: 1, ms: 60_000, rolloutMs: 0 } });
    expect(first).toEqual({ outcome: 'continued', calls_recorded: 9, chats_recorded: 0, repairs: 0 });
    // Its continuation names the workspace and where it stopped (no consumer runs here: the test runs it).
    const continuations = localQueue('export-jobs').list().map((message) => JSON.parse(message.body)).filter((body) => body.workspace_id === ws.workspace_id);
    expect(continuations).toEqual([{ kind: 'rollup-backfill', workspace_id: ws.workspace_id, table: 'chats' }]);
    const second = await runRollupBackfill({ workspaceId: ws.workspace_id, position: { table: 'chats' }, limits: { pages: 1, ms: 60_000, rolloutMs: 0 } });
    expect(second).toEqual({ outcome: 'complete', calls_recorded: 0, chats_recorded: 0, repairs: 0 });
    expect(await dayCells(ws.workspace_id, 'calls', [])).toEqual(expected(calls, () => []));
  }, 120_000);

  it('walks every workspace under the job\'s lease from its saved cursor, a page at a time, and saves where it stopped', async () => {
    const { ws, calls } = await twoAgentsCalls();
    await eventually(
      () => dayCells(ws.workspace_id, 'calls', ['user_sentiment']),
      (cells) => Object.values(cells).reduce((sum, cell) => sum + cell.count, 0) === 4,
    );
    await forgetRollups(ws.workspace_id);
    // A round under way (its first run long ago), at this workspace's calls.
    await table.put({ Item: { ...keys.jobCursor('rollup-backfill'), cursor: { first_run_timestamp: 1, current: { workspace_id: ws.workspace_id, table: 'calls' } } } });
    const queued = () => localQueue('export-jobs').list().filter((message) => JSON.parse(message.body).kind === 'rollup-backfill' && !JSON.parse(message.body).workspace_id).length;
    const before = queued();
    expect(await runRollupBackfill({ limits: { pages: 1, ms: 60_000, rolloutMs: 30 * 60_000 } })).toEqual({ outcome: 'continued', calls_recorded: 9, chats_recorded: 0, repairs: 0 });
    expect(queued()).toBe(before + 1);
    expect(await table.get(keys.jobCursor('rollup-backfill'))).toMatchObject({ cursor: { first_run_timestamp: 1, current: { workspace_id: ws.workspace_id, table: 'chats' } } });
    expect(await dayCells(ws.workspace_id, 'calls', ['agent_id'])).toEqual(expected(calls, (call) => [call.agent_id]));
  }, 120_000);

  it('repairs a recording that failed: the failure asks for it, the finished backfill\'s hourly run counts it, then is one read', async () => {
    const { ws, calls } = await twoAgentsCalls();
    await eventually(
      () => dayCells(ws.workspace_id, 'calls', ['user_sentiment']),
      (cells) => Object.values(cells).reduce((sum, cell) => sum + cell.count, 0) === 4,
    );
    await forgetRollups(ws.workspace_id);
    // The backfill of every workspace is over (no walk: the repair requests only).
    await table.put({ Item: { ...keys.jobCursor('rollup-backfill'), cursor: { done: true } } });
    const call = calls.find((c) => c.call_analysis !== undefined);
    const item = (await findCallItem(call.call_id))!;
    const spy = vi.spyOn(table, 'transact').mockRejectedValueOnce(Object.assign(new Error('Throughput exceeds the current capacity'), { name: 'ThrottlingException' }));
    try {
      await expect(recordConversation(callFacts(item), 'ended')).rejects.toThrow('Throughput exceeds the current capacity');
    } finally {
      spy.mockRestore();
    }
    expect(await table.get(keys.rollupRepair(ws.workspace_id, 'calls', call.call_id))).toMatchObject({ workspace_id: ws.workspace_id, table: 'calls', id: call.call_id });

    expect(await runRollupBackfill()).toEqual({ outcome: 'complete', calls_recorded: 2, chats_recorded: 0, repairs: 1 });
    expect(await table.get(keys.rollupRepair(ws.workspace_id, 'calls', call.call_id))).toBeUndefined();
    expect(await dayCells(ws.workspace_id, 'calls', ['agent_id', 'user_sentiment'])).toEqual(expected([call], (c) => [c.agent_id, c.call_analysis.user_sentiment]));
    expect(await dayCells(ws.workspace_id, 'calls', ['agent_id'])).toEqual(expected([call], (c) => [c.agent_id]));

    // Nothing left: the run reads the job's partition and stops.
    const queries = vi.spyOn(table, 'queryAll');
    try {
      expect(await runRollupBackfill()).toEqual({ outcome: 'skipped', calls_recorded: 0, chats_recorded: 0, repairs: 0 });
      // (Filtered by partition: the call-steps consumer's own sweeps may query meanwhile.)
      const partitions = queries.mock.calls.map(([input]) => String(input.ExpressionAttributeValues?.[':pk']));
      expect(partitions.filter((pk) => pk === keys.rollupBackfillPartition().pk)).toHaveLength(1);
      expect(partitions.filter((pk) => pk === keys.workspaceRegistry().pk)).toHaveLength(0);
    } finally {
      queries.mockRestore();
    }
  }, 120_000);
});
