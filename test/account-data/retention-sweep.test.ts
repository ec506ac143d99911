import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

// The stack's addresses reach the functions as EGRESS_IP_ADDRESSES (lib/fixed-egress.ts);
// settings are read once, so the modules that read them load after.
const app = await startTestApp({ EGRESS_IP_ADDRESSES: '3.5.1.2,3.5.1.3' });
const { startBackgroundWork } = await import('../../local/background.ts');
const { localQueue } = await import('../../local/queues.ts');
const { runRetentionSweep, utcDay } = await import('../../shared/account-data/index.ts');
const { getRetentionSweep } = await import('../../shared/account-data/store.ts');
const { JOBS, jobNamed } = await import('../../shared/jobs.ts');

const DAY = 86_400_000;

/** A workspace whose agent keeps calls `days` (undefined: no setting), with `calls` sandbox calls. */
async function workspaceWithCalls(days: number | undefined, calls: number) {
  const ws = await app.newWorkspace();
  const { number: from } = await newAgentWithNumber(ws.api, { agent: days === undefined ? {} : { data_storage_retention_days: days } });
  const ids: string[] = [];
  for (let i = 0; i < calls; i++) ids.push((await ws.api.post('/v2/create-phone-call', { body: { from_number: from, to_number: '+14155550123' } })).body.call_id);
  const stored = async () => {
    let count = 0;
    for (const id of ids) if ((await ws.api.get(`/v2/get-call/${id}`)).status === 200) count++;
    return count;
  };
  return { ws, ids, stored };
}

describe('the daily retention sweep', () => {
  it('is a daily message on the export-jobs queue (EventBridge in AWS, the local schedule here)', () => {
    expect(jobNamed('export-jobs').scheduledMessages).toEqual([
      expect.objectContaining({ name: 'retention-sweep', every: 'day', atHourUtc: 3, message: { kind: 'retention-sweep' } }),
      expect.objectContaining({ name: 'listing-backfill', every: 'hour', message: { kind: 'listing-backfill' } }),
      expect.objectContaining({ name: 'rollup-backfill', every: 'hour', message: { kind: 'rollup-backfill' } }),
    ]);
  });

  it('sweeps every workspace with a retention setting in bounded runs, each going on from the recorded cursor, once a day', async () => {
    const short = await workspaceWithCalls(1, 3);
    const long = await workspaceWithCalls(30, 2);
    const none = await workspaceWithCalls(undefined, 2);
    const later = Date.now() + 2 * DAY;
    const day = utcDay(later);

    const outcomes: string[] = [];
    for (let run = 0; run < 20 && outcomes.at(-1) !== 'complete'; run++) {
      outcomes.push(await runRetentionSweep(day, { nowMs: () => later, limits: { pages: 2, ms: 60_000 } }));
    }
    // Four workspaces (the app's own has no agent): each a check, the two with a setting a
    // page of calls and one of chats each; two pages a run.
    expect(outcomes).toEqual(['continued', 'continued', 'continued', 'continued', 'complete']);
    expect(await short.stored()).toBe(0);
    expect(await long.stored()).toBe(2);
    expect(await none.stored()).toBe(2);
    expect(await getRetentionSweep(day)).toMatchObject({
      status: 'complete',
      workspaces_examined: 4,
      workspaces_swept: 2,
      calls_deleted: 3,
      chats_deleted: 0,
      runs: 5,
    });
    expect((await getRetentionSweep(day))!.lease_token).toBeUndefined();
    // The day is done: a duplicate of its message does nothing.
    expect(await runRetentionSweep(day, { nowMs: () => later })).toBe('skipped');
  }, 60_000);

  it('survives a run that dies mid-way: its lease keeps others out until it expires, then the run goes on from the last page', async () => {
    const short = await workspaceWithCalls(1, 2);
    const later = Date.now() + 3 * DAY;
    const otherDay = utcDay(later + DAY);
    let pages = 0;
    const dying = runRetentionSweep(otherDay, {
      nowMs: () => later,
      afterPage: () => {
        if (++pages === 3) throw new Error('Lambda timed out');
      },
    });
    await expect(dying).rejects.toThrow('Lambda timed out');
    const stopped = (await getRetentionSweep(otherDay))!;
    expect(stopped).toMatchObject({ status: 'running', runs: 1 });
    expect(stopped.lease_token).toBeDefined();
    // The redelivered message (or a duplicate) within the lease: nothing.
    expect(await runRetentionSweep(otherDay, { nowMs: () => later + 60_000 })).toBe('skipped');
    // After the lease (the job's 900 s): it goes on and finishes, deleting each call once.
    expect(await runRetentionSweep(otherDay, { nowMs: () => later + 16 * 60_000 })).toBe('complete');
    const done = (await getRetentionSweep(otherDay))!;
    expect(done).toMatchObject({ status: 'complete', runs: 2 });
    expect(await short.stored()).toBe(0);
    // Every call once: the earlier test's short-retention calls were gone already, this one's two are deleted now.
    expect(done.calls_deleted).toBe(2);
  }, 60_000);

  it('runs from a message on the export-jobs queue, as the schedule sends it', async () => {
    const background = startBackgroundWork(JOBS.filter((job) => job.name === 'export-jobs'));
    try {
      const scheduledAt = '2031-05-04T03:00:00Z';
      await localQueue('export-jobs').send({ kind: 'retention-sweep', scheduled_at: scheduledAt });
      const sweep = await eventually(
        () => getRetentionSweep('2031-05-04'),
        (item) => item?.status === 'complete',
        30_000,
      );
      // Every workspace of this file's table, in one run; their calls are all younger than a day.
      expect(sweep).toMatchObject({ status: 'complete', runs: 1, calls_deleted: 0 });
      expect(sweep!.workspaces_examined).toBeGreaterThanOrEqual(5);
    } finally {
      await background.stop();
    }
  }, 60_000);

  it('answers the fixed egress addresses the stack passes', async () => {
    expect((await app.api.get('/workspace/egress')).body).toEqual({ fixed: true, addresses: ['3.5.1.2', '3.5.1.3'] });
  });
});

