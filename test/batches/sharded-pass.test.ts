import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { CLAIM_RETRY_MS } from '../../shared/batches/pass.ts';
import { runBatchPass, runBatchTicks } from '../../shared/batches/scheduler.ts';
import { BATCH_DUE_SHARDS, batchDueShard } from '../../shared/batches/shards.ts';
import { dueBatchEntries, rehomeUnshardedDueBatches } from '../../shared/batches/store.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { virtualTime } from '../support/virtual-time.ts';

/*
 * The sharded scheduler: every due batch progresses in one round of passes, however many
 * workspaces; a workspace's batches share a pass; dials follow the numbers' calls per second
 * without waiting inside a pass; and passes that overlap or come again dial nothing twice.
 */

const app = await startTestApp();
// The call engine's steps run; the batch passes run only when a test calls them.
const background = startBackgroundWork(JOBS.filter((job) => job.name !== 'batch-tick'));
afterAll(() => background.stop());

/** Numbers ending 0002 are not answered in the sandbox: their calls end at the dial step, lightly. */
const unanswered = (i: number) => `+1415${200 + i}0002`;

async function setup(options: { limit?: number; cps?: number } = {}) {
  const ws = await app.newWorkspace();
  if (options.limit) expect((await ws.api.patch('/workspace', { body: { concurrency_limit: options.limit } })).status).toBe(200);
  const { number } = await newAgentWithNumber(ws.api, { number: options.cps ? { cps_limit: options.cps } : {} });
  const createBatch = async (tasks: number) => {
    const created = await ws.api.post('/create-batch-call', { body: { from_number: number, tasks: Array.from({ length: tasks }, (_, i) => ({ to_number: unanswered(i) })) } });
    expect(created.status).toBe(201);
    return created.body.batch_call_id as string;
  };
  const batch = async (id: string) => (await ws.api.get(`/get-batch-call/${id}`)).body;
  const batchCalls = async (id: string) => (await ws.api.post('/v3/list-calls', { body: { limit: 1000, filter_criteria: { batch_call_id: [id] } } })).body as any[];
  return { ws, createBatch, batch, batchCalls };
}

describe('the sharded batch scheduler', () => {
  it('progresses every due batch of many workspaces in one round of passes (none starves behind the first few)', async () => {
    // Each number takes one dial a second: a pass that waited for tokens would spend three
    // seconds on each batch, eight workspaces at a time, and the last ones would wait their turn.
    const workspaces = await Promise.all(Array.from({ length: 24 }, () => setup({ cps: 1 })));
    const batches = await Promise.all(workspaces.map(async (w) => ({ ...w, id: await w.createBatch(3) })));
    // The workspaces land in several shards, each passed under its own lease.
    const shards = new Set(workspaces.map((w) => batchDueShard(w.ws.workspace_id)));
    expect(shards.size).toBeGreaterThan(1);
    const round = await runBatchTicks({ passes: 1, job: 'many-workspaces-test' });
    // Each shard with a batch due ran its pass; the others read their index and took no lease.
    expect(round.passes_run).toBeGreaterThanOrEqual(shards.size);
    expect(round.passes_run + round.passes_idle).toBe(BATCH_DUE_SHARDS);
    // Every batch got its number's second, and no pass waited for the next.
    const states = await Promise.all(batches.map((b) => b.batch(b.id)));
    expect(states.map((state) => [state.status, state.sent_count])).toEqual(batches.map(() => ['ongoing', 1]));
    // Stopped, so the passes of the tests below dial only their own batches.
    const stopped = await Promise.all(batches.map((b) => b.ws.api.post(`/stop-batch-call/${b.id}`)));
    expect(stopped.map((res) => res.status)).toEqual(batches.map(() => 200));
  }, 120_000);

  it("a workspace's two batches progress side by side, splitting its free capacity", async () => {
    const { createBatch, batch } = await setup({ limit: 4, cps: 100 });
    const first = await createBatch(6);
    const second = await createBatch(6);
    const pass = await runBatchPass();
    expect(pass.dialled).toBeGreaterThanOrEqual(4);
    // Served one after another, the first would have taken all four slots.
    expect((await batch(first)).sent_count).toBe(2);
    expect((await batch(second)).sent_count).toBe(2);
  });

  it('a number with cps 2 never gets more than 2 dials in any second, across overlapping passes', async () => {
    const { createBatch, batch, batchCalls } = await setup({ limit: 100, cps: 2 });
    const id = await createBatch(9);
    const { clock, task } = virtualTime();
    const dials: number[] = [];
    const afterDial = async (dialled: { pk: string }) => {
      if (dialled.pk.includes(id)) dials.push(clock.now());
    };
    for (let second = 0; second < 20 && (await batch(id)).status !== 'sent'; second++) {
      // Two passes at once (an overlap), and one half a second later.
      await Promise.all([
        task(() => runBatchPass({ clock, afterDial })),
        task(() => runBatchPass({ clock, afterDial })),
        task(async () => {
          await clock.sleep(500);
          await runBatchPass({ clock, afterDial });
        }),
      ]);
      await task(() => clock.sleep(500));
    }
    const done = await batch(id);
    expect(done.status).toBe('sent');
    expect(done.sent_count).toBe(9);
    expect(dials).toHaveLength(9);
    dials.sort((a, b) => a - b);
    // No three dials within any one second.
    for (let i = 2; i < dials.length; i++) expect(dials[i]! - dials[i - 2]!).toBeGreaterThanOrEqual(1000);
    // And no waiting: two a second, so the nine took about four and a half seconds.
    expect(dials.at(-1)! - dials[0]!).toBeLessThan(6000);
    expect(new Set((await batchCalls(id)).map((call) => call.to_number)).size).toBe(9);
  }, 120_000);

  it('a redelivered pass, and one running beside it, dial nothing twice', async () => {
    const { createBatch, batch, batchCalls } = await setup({ limit: 100, cps: 100 });
    const id = await createBatch(12);
    const now = Date.now();
    // The same invocation delivered twice at once, then again after it finished.
    await Promise.all([runBatchPass({ now }), runBatchPass({ now })]);
    await runBatchPass({ now });
    // A dial the store refused under the load stays claimed; a later pass retries it with the same key.
    for (let i = 0; i < 5 && (await batch(id)).status !== 'sent'; i++) await runBatchPass({ now: Date.now() + CLAIM_RETRY_MS });
    const done = await batch(id);
    expect(done.status).toBe('sent');
    expect(done.sent_count).toBe(12);
    expect(new Set(done.tasks.map((task: any) => task.call_id)).size).toBe(12);
    const calls = await batchCalls(id);
    expect(calls).toHaveLength(12);
    expect(new Set(calls.map((call) => call.to_number)).size).toBe(12);
  });
});

describe('batches indexed before the due index had shards', () => {
  it('are moved to their shard by the next tick, keeping their due time, and then dialled', async () => {
    const { ws, createBatch, batch } = await setup({ cps: 5 });
    const id = await createBatch(2);
    // As an older deploy indexed it: one partition for every batch, which no shard's pass reads.
    const record = keys.batchCall(ws.workspace_id, id);
    const before = await table.get<{ gsi1sk: string }>(record);
    await table.update({ Key: record, UpdateExpression: 'SET gsi1pk = :old', ExpressionAttributeValues: { ':old': 'BATCHDUE' } });
    const shard = batchDueShard(ws.workspace_id);
    expect(await dueBatchEntries(shard, Date.now() + 60_000)).not.toContainEqual(expect.objectContaining({ batch_call_id: id }));

    expect(await rehomeUnshardedDueBatches()).toBe(1);
    const after = await table.get<{ gsi1pk: string; gsi1sk: string }>(record);
    expect(after).toMatchObject({ gsi1pk: `BATCHDUE#${shard}`, gsi1sk: before!.gsi1sk });
    expect(await rehomeUnshardedDueBatches()).toBe(0);

    // A tick finds it where its shard's pass reads, and dials it.
    await table.update({ Key: record, UpdateExpression: 'SET gsi1pk = :old', ExpressionAttributeValues: { ':old': 'BATCHDUE' } });
    await runBatchTicks({ passes: 1, job: 'unsharded-test' });
    expect((await batch(id)).sent_count).toBe(2);
  });
});
