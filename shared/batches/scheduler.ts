import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { config } from '../platform/config.ts';
import { acquireJobLease, releaseJobLease } from '../platform/store/job-lease.ts';
import { logger } from '../platform/logger.ts';
import { runBatchPass } from './pass.ts';

;
export { runBatchPass } from './pass.ts';

export const BATCH_PASS_JOB = 'batch-pass';
/** Longer than the invocation that takes it can live, so only a crashed holder's lease expires. */
const BATCH_PASS_LEASE_MS = 120_000;
/** EventBridge's floor: the tick function is invoked once a minute and paces passes within it. */
const SCHEDULE_PERIOD_MS = 60_000;

export interface BatchTickOptions {
  tickMs?: number;
  passes?: number;
  /** Aborting stops before the next pass; the pass under way finishes. */
  signal?: AbortSignal;
  runPass?: (slot: number) => Promise<unknown>;
  leaseMs?: number;
  /** The lease's job name; each job's slots are independent. */
  job?: string;
  /** Where slots are timed: the wall clock unless a test gives its own (slots are epoch ms). */
  clock?: { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<unknown> };
}

const wallClock = { now: () => Date.now(), sleep: (ms: number, signal?: AbortSignal) => sleep(ms, undefined, { signal }) };

export interface BatchTickResult {
  /** The slots this invocation tried, in order: each pass's scheduled start, epoch ms. */
  slots: number[];
  passes_run: number;
  passes_skipped: number;
}

/**
 * The tick function's body: passes at each tick boundary for about a minute, each taken
 * under the job lease, so overlapping or duplicate invocations never run a slot twice.
 */
export async function runBatchTicks(options: BatchTickOptions = {}): Promise<BatchTickResult> {
  const tickMs = options.tickMs ?? config.BATCH_TICK_MS;
  const passes = options.passes ?? Math.max(1, Math.floor(SCHEDULE_PERIOD_MS / tickMs));
  const runPass = options.runPass ?? (() => runBatchPass());
  const leaseMs = options.leaseMs ?? BATCH_PASS_LEASE_MS;
  const job = options.job ?? BATCH_PASS_JOB;
  const clock = options.clock ?? wallClock;
  const holder = randomUUID();
  // Slots are start times rather than tick counts, so they keep increasing when BATCH_TICK_MS changes.
  const firstSlot = Math.floor(clock.now() / tickMs) * tickMs;
  const result: BatchTickResult = { slots: [], passes_run: 0, passes_skipped: 0 };

  for (let i = 0; i < passes; i++) {
    const slot = firstSlot + i * tickMs;
    const wait = slot - clock.now();
    if (wait > 0) {
      try {
        await clock.sleep(wait, options.signal);
      } catch {
        break;
      }
    }
    if (options.signal?.aborted) break;
    result.slots.push(slot);
    if (!(await acquireJobLease(job, slot, holder, leaseMs))) {
      result.passes_skipped += 1;
      continue;
    }
    result.passes_run += 1;
    try {
      await runPass(slot);
    } catch (error) {
      // One failed pass must not stop the minute's remaining passes.
      logger.error('batch pass failed', { slot, error: error instanceof Error ? error.message : String(error) });
    } finally {
      await releaseJobLease(job, slot, holder);
    }
  }
  return result;
}
