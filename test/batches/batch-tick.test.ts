import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { handler as batchTick } from '../../functions/batch-tick.ts';
import { startBackgroundWork } from '../../local/background.ts';
import { localLambdaContext } from '../../local/local-context.ts';
import { JOBS } from '../../shared/jobs.ts';
import { BATCH_PASS_JOB, runBatchPass, runBatchTicks } from '../../shared/batches/scheduler.ts';
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
      task(() => runBatchTicks({ tickMs, passes, runPass, job: 'concurrent-test', clock })),
      task(() => runBatchTicks({ tickMs, passes, runPass, job: 'concurrent-test', clock })),
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

  it('a slot already run cannot be taken again, even by a late duplicate invocation', async () => {
    const tickMs = 200;
    const { clock, task } = virtualTime();
    const { ran, runPass } = passRecorder(clock);
    const first = await task(() => runBatchTicks({ tickMs, passes: 2, runPass, job: 'duplicate-test', clock }));
    // The same slots again (a duplicate EventBridge delivery arriving late).
    const lastSlot = first.slots.at(-1)!;
    const acquired = await acquireJobLease('duplicate-test', lastSlot, 'late-duplicate', 60_000);
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
    // Start well inside a 5 s slot: near its end, the next slot would come due before the abort.
    const tickMs = 250;
    const intoSlot = Date.now() % tickMs;
    if (intoSlot > tickMs - 1500) await new Promise((resolve) => setTimeout(resolve, tickMs - intoSlot + 50));
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
    expect(result.passes_run + result.passes_skipped).toBe(1);
    expect(result.passes_run).toBe(1);
    const lease = await db.send(new GetCommand({ TableName: tableName, Key: keys.jobLease(BATCH_PASS_JOB), ConsistentRead: true }));
    expect(lease.Item?.slot).toBe(result.slots[0]);
  });
});

describe('local schedules', () => {
  const leaseSlot = async () =>
    (await db.send(new GetCommand({ TableName: tableName, Key: keys.jobLease(BATCH_PASS_JOB), ConsistentRead: true }))).Item?.slot as
      | number
      | undefined;

  it('run the jobs of shared/jobs.ts that are live, and leave placeholders unscheduled', async () => {
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
    expect(await leaseSlot()).toBeGreaterThanOrEqual(Math.floor(startedAt / 5000) * 5000);
  });
});
