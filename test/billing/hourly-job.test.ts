import { describe, expect, it } from 'vitest';
import { runHourlyBilling } from '../../shared/billing/hourly-job.ts';

/*
 * The hourly billing run at volume: workspaces a bounded number at a time, a time budget (a
 * fake clock), and a cursor, so the workspaces one run leaves are the next run's first.
 */

const ids = Array.from({ length: 40 }, (_, i) => `ws_${String(i).padStart(4, '0')}`);

/** One workspace's work taking `stepMs` of the fake clock, recording order and overlap. */
function recorder(stepMs: number) {
  const seen: string[] = [];
  let running = 0;
  let most = 0;
  let clockMs = 0;
  const work = async (workspaceId: string) => {
    running++;
    most = Math.max(most, running);
    await Promise.resolve();
    seen.push(workspaceId);
    clockMs += stepMs;
    running--;
    return { charged: workspaceId.endsWith('0'), issued: false };
  };
  return { work, seen, most: () => most, clock: () => clockMs };
}

describe('the hourly billing run', () => {
  it('runs workspaces a few at a time, stops at its budget, and the next run starts with those it left', async () => {
    const limits = { parallel: 4, budgetMs: 10_000 };
    const first = recorder(1_000);
    const one = await runHourlyBilling({ limits, clock: first.clock, work: first.work, workspaces: async () => ids });
    expect(first.most()).toBeLessThanOrEqual(4);
    expect(first.seen.length).toBeGreaterThanOrEqual(10);
    expect(first.seen.length).toBeLessThan(40);
    expect(one).toMatchObject({ workspaces: first.seen.length, left: 40 - first.seen.length, failures: 0 });
    expect(first.seen.slice().sort()).toEqual(ids.slice(0, first.seen.length));

    // The next run goes round from there: the workspaces left first, then the others again.
    const second = recorder(0);
    const two = await runHourlyBilling({ limits, clock: second.clock, work: second.work, workspaces: async () => ids });
    expect(two.left).toBeUndefined();
    expect(second.seen.slice(0, 40 - first.seen.length).sort()).toEqual(ids.slice(first.seen.length));
    expect(second.seen.slice().sort()).toEqual(ids);
    expect(two.concurrency_charges).toBe(4);

    // A complete round clears the cursor: the next starts from the front.
    const third = recorder(0);
    await runHourlyBilling({ limits, clock: third.clock, work: third.work, workspaces: async () => ids });
    expect(third.seen.slice(0, 4).sort()).toEqual(ids.slice(0, 4));
  });

  it('counts a failing workspace and goes on with the rest', async () => {
    const result = await runHourlyBilling({
      limits: { parallel: 3, budgetMs: 60_000 },
      workspaces: async () => ids.slice(0, 6),
      work: async (workspaceId) => {
        if (workspaceId === ids[2]) throw new Error('store down');
        return { charged: false, issued: true };
      },
    });
    expect(result).toEqual({ workspaces: 6, concurrency_charges: 0, invoices_issued: 5, failures: 1 });
  });
});
