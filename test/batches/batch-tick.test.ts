import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { handler as batchTick } from '../../functions/batch-tick.ts';
import { startBackgroundWork } from '../../local/background.ts';
import { localLambdaContext } from '../../local/local-context.ts';
import { JOBS } from '../../shared/jobs.ts';
import { batchPassLease, runBatchPass, runBatchTicks } from '../../shared/batches/scheduler.ts';
import { BATCH_DUE_SHARDS, batchDueShard } from '../../shared/batches/shards.ts';
import { acquireJobLease, releaseJobLease } from '../../shared/platform/store/job-lease.ts';
import { db, tableName } from '../../shared/platform/store/db.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { virtualTime, type TestClock } from '../support/virtual-time.ts';

const range = (from: number, count: number, step: number) => Array.from({ length: count }, (_, i) => from + i * step);

/** A pass body that records which slots ran and whether two ever ran at once. */
function passRecorder(clock: TestClock) {
  const ran: number[] = [];
  let running = 0;
  let overlapped = false;
  const runPass = async (slot: number) => {
    running += 1;
    if (running > 1) overlapped = true;
    ran.push(slot);
    await clock.sleep(20);
    running -= 1;
  };
  return { ran, runPass, overlapped: () => overlapped };
}

describe('batch tick', () => {
  it('two concurrent invocations never run the same pass twice', async () => {
    const tickMs = 250;
    const passes = 6;
    // On virtual time both invocations wake at each slot at the same instant, so every slot is
    // contended, and each pass ends long before the next slot.
    const { clock, task } = virtualTime();
    const { ran, runPass, overlapped } = passRecorder(clock);
    const [a, b] = await Promise.all([
      task(() => runBatchTicks({ tickMs, passes, shards: [0], runPass, job: 'concurrent-test', clock })),
      task(() => runBatchTicks({ tickMs, passes, shards: [0], runPass, job: 'concurrent-test', clock })),
    ]);

    expect(a.slots).toEqual(range(a.slots[0]!, passes, tickMs));
    expect(b.slots).toEqual(a.slots);
    expect(a.slots[0]! % tickMs).toBe(0);
    // Each slot ran exactly once, in one invocation or the other.
    expect(ran).toEqual(a.slots);
    expect(a.passes_run + b.passes_run).toBe(passes);
    expect(a.passes_run + a.passes_skipped).toBe(passes);
    expect(b.passes_run + b.passes_skipped).toBe(passes);
    expect(overlapped()).toBe(false);
  });

  it('each shard runs its own passes under its own lease: side by side, each slot of each shard once', async () => {
    // On the wall clock: a pass below waits for the others, which virtual time would not wait for.
    const tickMs = 300;
    const passes = 3;
    const shards = [0, 1, 2];
    const job = `sharded-test-${Date.now()}`;
    const ran: string[] = [];
    // Each pass waits until every shard's pass of its
    // slot has started: under one lease for all shards they would never all start.
    const started = new Map<number, { count: number; all: Promise<void>; open: () => void }>();
    let together = 0;
    const runPass = async (slot: number, shard: number) => {
      ran.push(`${slot}#${shard}`);
      let gate = started.get(slot);
      if (!gate) {
        let open = () => {};
        const all = new Promise<void>((resolve) => (open = resolve));
        gate = { count: 0, all, open };
        started.set(slot, gate);
      }
      gate.count += 1;
      if (gate.count === shards.length) gate.open();
      const met = await Promise.race([gate.all.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1000))]);
      if (met) together += 1;
    };
    const [a, b] = await Promise.all([
      runBatchTicks({ tickMs, passes, shards, runPass, job }),
      runBatchTicks({ tickMs, passes, shards, runPass, job }),
    ]);
    // Every (slot, shard) exactly once between the two invocations.
    expect(ran.length).toBe(passes * shards.length);
    expect(new Set(ran).size).toBe(passes * shards.length);
    expect(a.passes_run + b.passes_run).toBe(passes * shards.length);
    expect(a.passes_run + a.passes_skipped).toBe(passes * shards.length);
    // Every shard's pass of a slot ran at the same time as the others: no one lease serialises them.
    expect(together).toBe(passes * shards.length);
  });

  it('a slot already run cannot be taken again, even by a late duplicate invocation', async () => {
    const tickMs = 200;
    const { clock, task } = virtualTime();
    const { ran, runPass } = passRecorder(clock);
    const first = await task(() => runBatchTicks({ tickMs, passes: 2, shards: [0], runPass, job: 'duplicate-test', clock }));
    // The same slots again (a duplicate EventBridge delivery arriving late).
    const lastSlot = first.slots.at(-1)!;
    const acquired = await acquireJobLease(batchPassLease(0, 'duplicate-test'), lastSlot, 'late-duplicate', 60_000);
    expect(acquired).toBe(false);
    expect(ran).toEqual(first.slots);
  });

  it('a lease held by a running pass blocks the next slot until released or expired', async () => {
    const job = 'lease-test';
    expect(await acquireJobLease(job, 10, 'holder-a', 60_000)).toBe(true);
    expect(await acquireJobLease(job, 10, 'holder-b', 60_000)).toBe(false);
    expect(await acquireJobLease(job, 11, 'holder-b', 60_000)).toBe(false);
    await releaseJobLease(job, 10, 'holder-b');
    expect(await acquireJobLease(job, 11, 'holder-b', 60_000)).toBe(false);
    await releaseJobLease(job, 10, 'holder-a');
    expect(await acquireJobLease(job, 11, 'holder-b', 60_000)).toBe(true);
    // holder-b "crashes": its lease expires on its own.
    expect(await acquireJobLease(job, 12, 'holder-c', 60_000)).toBe(false);
    const lease = await db.send(new GetCommand({ TableName: tableName, Key: keys.jobLease(job), ConsistentRead: true }));
    expect(lease.Item).toMatchObject({ slot: 11, holder: 'holder-b' });

    expect(await acquireJobLease('short-lease', 1, 'holder-a', 50)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await acquireJobLease('short-lease', 2, 'holder-b', 50)).toBe(true);
    expect(await acquireJobLease('short-lease', 1, 'holder-c', 50)).toBe(false);
  });

  it('a pass with no batch due touches nothing', async () => {
    expect(await runBatchPass()).toEqual({ batches: 0, dialled: 0, failed: 0, skipped: 0, released: 0 });
  });

  it('the Lambda handler runs a pass at once and stops before the next when aborted', async () => {
    // Start well inside a slot: near its end, the next slot would come due before the abort.
    const tickMs = 1000;
    const intoSlot = Date.now() % tickMs;
    if (intoSlot > tickMs - 400) await new Promise((resolve) => setTimeout(resolve, tickMs - intoSlot + 50));
    const controller = new AbortController();
    const invocation = batchTick(
      {
        version: '0',
        id: 'test',
        'detail-type': 'Scheduled Event',
        source: 'aws.events',
        account: '000000000000',
        time: new Date().toISOString(),
        region: 'us-east-1',
        resources: [],
        detail: {},
      },
      localLambdaContext('parley-batch-tick', 90_000),
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 200);
    const result = await invocation;
    // One pass for each shard of the due-batch index: run where a batch was due, idle elsewhere.
    expect(result.slots).toHaveLength(1);
    expect(result.passes_run + result.passes_skipped + result.passes_idle).toBe(BATCH_DUE_SHARDS);
    expect(result.passes_skipped).toBe(0);
  });

  it('given a shard (the deployed schedule invokes it once per shard), the handler passes that shard alone', async () => {
    const tickMs = 1000;
    const intoSlot = Date.now() % tickMs;
    if (intoSlot > tickMs - 400) await new Promise((resolve) => setTimeout(resolve, tickMs - intoSlot + 50));
    const controller = new AbortController();
    const invocation = batchTick({ shard: BATCH_DUE_SHARDS - 1 }, localLambdaContext('parley-batch-tick', 90_000), { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const result = await invocation;
    expect(result.slots).toHaveLength(1);
    expect(result.passes_run + result.passes_skipped + result.passes_idle).toBe(1);
  });

  it('refuses a shard the due-batch index does not have, rather than pass nothing', async () => {
    for (const shard of [BATCH_DUE_SHARDS, -1, 1.5]) {
      await expect(batchTick({ shard }, localLambdaContext('parley-batch-tick', 90_000), {})).rejects.toThrow(`invoked for shard ${shard}`);
    }
  });
});

describe('local schedules', () => {
  // A batch due in the index (its record already sent, so the pass leaves it be): its shard's pass takes the lease.
  const workspaceId = `ws_local_schedules_${Date.now()}`;
  const record = { ...keys.batchCall(workspaceId, 'batch_local'), workspace_id: workspaceId, batch_call_id: 'batch_local', status: 'sent' };
  const leaseSlot = async () =>
    (await db.send(new GetCommand({ TableName: tableName, Key: keys.jobLease(batchPassLease(batchDueShard(workspaceId))), ConsistentRead: true }))).Item
      ?.slot as number | undefined;
  afterAll(() => db.send(new DeleteCommand({ TableName: tableName, Key: keys.batchCall(workspaceId, 'batch_local') })));

  it('run the jobs of shared/jobs.ts that are live, and leave placeholders unscheduled', async () => {
    await db.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...record, ...keys.batchDueIndex(batchDueShard(workspaceId)), gsi1sk: keys.batchDueSort(0, 'batch_local') },
      }),
    );
    const before = await leaseSlot();
    // The batch tick is live: with it marked a placeholder, nothing schedules it.
    const placeholders = startBackgroundWork(JOBS.map((job) => (job.name === 'batch-tick' ? { ...job, live: false } : job)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await placeholders.stop();
    expect(await leaseSlot()).toBe(before);

    const startedAt = Date.now();
    const live = startBackgroundWork(JOBS.map((job) => ({ ...job, live: true })));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await live.stop();
    expect(await leaseSlot()).toBeGreaterThanOrEqual(Math.floor(startedAt / 1000) * 1000);
  });

  it('invoke batch-tick once per input of its schedule, each passing its own shard alone', async () => {
    const shard = batchDueShard(workspaceId);
    // The batch tick's schedule alone, with the inputs given: as EventBridge's targets would.
    const tickWith = (inputs: { shard: number }[]) =>
      JOBS.filter((job) => job.name === 'batch-tick').map((job) => (job.trigger.kind === 'schedule' ? { ...job, trigger: { ...job.trigger, inputs } } : job));
    expect(tickWith([{ shard }])[0]!.trigger).toMatchObject({ kind: 'schedule', inputs: [{ shard }] });
    const before = await leaseSlot();

    // Another shard's invocation leaves this shard's batch (and lease) alone.
    const elsewhere = startBackgroundWork(tickWith([{ shard: (shard + 1) % BATCH_DUE_SHARDS }]));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await elsewhere.stop();
    expect(await leaseSlot()).toBe(before);

    // Its own shard's takes the lease, in a second no earlier run had.
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
    const own = startBackgroundWork(tickWith([{ shard: (shard + 1) % BATCH_DUE_SHARDS }, { shard }]));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await own.stop();
    expect(await leaseSlot()).toBeGreaterThan(before ?? 0);
  });
});
