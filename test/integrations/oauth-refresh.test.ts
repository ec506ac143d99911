import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { handler as oauthRefresh } from '../../functions/oauth-refresh.ts';
import { localLambdaContext } from '../../local/local-context.ts';
import { acquireJobLease } from '../../shared/platform/store/job-lease.ts';
import { OAUTH_REFRESH_JOB, OAUTH_REFRESH_PERIOD_MS, refreshExpiringConnections, runOAuthRefresh } from '../../shared/integrations/oauth-refresh.ts';
import { db, tableName } from '../../shared/platform/store/db.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';

/** A refresh body that counts its runs and whether two ever ran at once. */
function refreshRecorder(ms = 50) {
  let runs = 0;
  let running = 0;
  let overlapped = false;
  const refresh = async () => {
    running += 1;
    if (running > 1) overlapped = true;
    runs += 1;
    await new Promise((resolve) => setTimeout(resolve, ms));
    running -= 1;
    return { refreshed: 3 };
  };
  return { refresh, runs: () => runs, overlapped: () => overlapped };
}

const minute = (n: number) => 1_000 * OAUTH_REFRESH_PERIOD_MS + n * OAUTH_REFRESH_PERIOD_MS;

describe('OAuth refresh job', () => {
  it('two concurrent runs: one does the work, the other skips', async () => {
    const { refresh, runs, overlapped } = refreshRecorder();
    const now = minute(0) + 1_234;
    const results = await Promise.all([
      runOAuthRefresh({ refresh, now, job: 'oauth-concurrent' }),
      runOAuthRefresh({ refresh, now, job: 'oauth-concurrent' }),
    ]);
    expect(runs()).toBe(1);
    expect(overlapped()).toBe(false);
    expect(results.map((result) => result.ran).sort()).toEqual([false, true]);
    expect(results.find((result) => result.ran)).toEqual({ slot: minute(0), ran: true, refreshed: 3 });
    expect(results.find((result) => !result.ran)).toEqual({ slot: minute(0), ran: false, refreshed: 0 });
  });

  it('a minute runs once, even for a late duplicate; the next minute runs after it', async () => {
    const { refresh, runs } = refreshRecorder(5);
    const job = 'oauth-minutes';
    expect((await runOAuthRefresh({ refresh, now: minute(1), job })).ran).toBe(true);
    // A Lambda retry or duplicate delivery of the same minute, after the first finished.
    expect((await runOAuthRefresh({ refresh, now: minute(1) + 59_000, job })).ran).toBe(false);
    expect((await runOAuthRefresh({ refresh, now: minute(2), job })).ran).toBe(true);
    expect(runs()).toBe(2);
  });

  it('a run still going blocks the next minute’s (no overlap), and a crashed one only until its lease expires', async () => {
    const job = 'oauth-overlap';
    const { refresh, runs } = refreshRecorder(5);
    expect(await acquireJobLease(job, minute(3), 'slow-run', 60_000)).toBe(true);
    expect((await runOAuthRefresh({ refresh, now: minute(4), job })).ran).toBe(false);
    expect(runs()).toBe(0);

    expect(await acquireJobLease('oauth-crash', minute(3), 'crashed-run', 30)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect((await runOAuthRefresh({ refresh, now: minute(4), job: 'oauth-crash' })).ran).toBe(true);
  });

  it('releases the lease when the refresh fails, so the next minute is not held up', async () => {
    const job = 'oauth-failure';
    await expect(
      runOAuthRefresh({ refresh: () => Promise.reject(new Error('provider down')), now: minute(5), job }),
    ).rejects.toThrow('provider down');
    expect((await runOAuthRefresh({ refresh: async () => ({ refreshed: 0 }), now: minute(6), job })).ran).toBe(true);
  });

  it('the Lambda handler takes the lease of the current minute', async () => {
    const event = {
      version: '0',
      id: 'test',
      'detail-type': 'Scheduled Event' as const,
      source: 'aws.events' as const,
      account: '000000000000',
      time: new Date().toISOString(),
      region: 'us-east-1',
      resources: [],
      detail: {},
    };
    const context = localLambdaContext('parley-oauth-refresh', 60_000);
    const [first, second] = await Promise.all([oauthRefresh(event, context), oauthRefresh(event, context)]);
    // Unless the two straddle a minute boundary, exactly one ran.
    if (first.slot === second.slot) expect([first.ran, second.ran].sort()).toEqual([false, true]);
    const lease = await db.send(
      new GetCommand({ TableName: tableName, Key: keys.jobLease(OAUTH_REFRESH_JOB), ConsistentRead: true }),
    );
    expect(lease.Item?.slot).toBe(Math.max(first.slot, second.slot));
  });
});

describe('a refresh pass at volume', () => {
  const NOW = 2_000_000_000_000;

  /** `n` connections in the expiry index, expiring a second apart from `NOW`; what a refresh needs is only the entry. */
  async function expiring(prefix: string, n: number, fromMs = NOW) {
    const ids = Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`);
    await table.batchPut(ids.map((id, i) => ({ pk: `TESTCONN#${id}`, sk: 'TESTCONN', ...keys.oauthExpiry(fromMs + i * 1000, 'ws_test', id) })));
    return ids;
  }

  /** A refresh that records what it refreshed and how many ran at once, advancing a fake clock by `stepMs` each. */
  function recorder(stepMs = 0) {
    const seen: string[] = [];
    let running = 0;
    let most = 0;
    let clockMs = 0;
    const refresh = async (_workspaceId: string, connectionId: string) => {
      running++;
      most = Math.max(most, running);
      await Promise.resolve();
      seen.push(connectionId);
      clockMs += stepMs;
      running--;
      return { refreshed: true };
    };
    return { refresh, seen, most: () => most, clock: () => clockMs };
  }

  it('pages through every due connection, a bounded number a pass, each pass going on from the last one\'s cursor', async () => {
    const ids = await expiring('a', 250);
    const job = 'oauth-volume';
    const limits = { perPass: 100, parallel: 8, budgetMs: 60_000, page: 30 };
    const passes: string[][] = [];
    for (let pass = 0; pass < 3; pass++) {
      const { refresh, seen, most } = recorder();
      const result = await refreshExpiringConnections(NOW, { job, limits, refresh });
      expect(result.refreshed).toBe(seen.length);
      expect(most()).toBeLessThanOrEqual(8);
      passes.push(seen);
    }
    expect(passes.map((pass) => pass.length)).toEqual([100, 100, 50]);
    expect(new Set(passes.flat()).size).toBe(250);
    expect([...passes.flat()].sort()).toEqual(ids);
    // The third reached the end: the next starts from the front (what is still due is tried again).
    const { refresh, seen } = recorder();
    await refreshExpiringConnections(NOW, { job, limits, refresh });
    expect(seen.slice().sort()).toEqual(ids.slice(0, 100));
  });

  it('stops taking connections when its time budget is spent (a fake clock), and the next pass goes on', async () => {
    // Sooner than the other test's: this pass meets them first.
    await expiring('b', 40, NOW - 3_600_000);
    const job = 'oauth-budget';
    const limits = { perPass: 1_000, parallel: 4, budgetMs: 10_000, page: 100 };
    const first = recorder(1_000);
    await refreshExpiringConnections(NOW, { job, limits, refresh: first.refresh, clock: first.clock });
    // Ten seconds of one-second refreshes, four at once: those in flight at the budget finish.
    expect(first.seen.length).toBeGreaterThanOrEqual(10);
    expect(first.seen.length).toBeLessThanOrEqual(14);
    const second = recorder();
    await refreshExpiringConnections(NOW, { job, limits, refresh: second.refresh });
    const both = [...first.seen, ...second.seen].filter((id) => id.startsWith('b'));
    expect(both).toHaveLength(40);
    expect(new Set(both).size).toBe(40);
    expect(first.seen.every((id) => id.startsWith('b'))).toBe(true);
  });
});
