import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { config } from '../platform/config.ts';
import { acquireJobLease, releaseJobLease } from '../platform/store/job-lease.ts';
import { logger } from '../platform/logger.ts';
import { runBatchPass } from './pass.ts';
import { BATCH_DUE_SHARDS } from './shards.ts';
import { anyBatchDue, rehomeUnshardedDueBatches } from './store.ts';

export { runBatchPass } from './pass.ts';

const BATCH_PASS_JOB = 'batch-pass';
/** The job lease of one shard's passes: shards never wait for each other. */
export const batchPassLease = (shard: number, job = BATCH_PASS_JOB) => `${job}#${shard}`;
/** Longer than the invocation that takes it can live (70 s), so only a crashed holder's lease expires. */
const BATCH_PASS_LEASE_MS = 75_000;
/** EventBridge's floor: the tick function is invoked once a minute and paces passes within it. */
const SCHEDULE_PERIOD_MS = 60_000;

export interface BatchTickOptions {
  tickMs?: number;
  passes?: number;
  /**
   * The shards of the due-batch index to pass, each its own loop and lease: every shard
   * unless told (a deployed invocation is given its one shard, shared/jobs.ts).
   */
  shards?: readonly number[];
  /** Aborting stops before the next pass; the pass under way finishes. */
  signal?: AbortSignal;
  runPass?: (slot: number, shard: number) => Promise<unknown>;
  /**
   * Whether the shard has work at the slot: an idle shard's pass takes no lease (its one
   * read instead of the lease's two writes, each second, for every shard). Given a runPass
   * and no hasWork, every pass runs.
   */
  hasWork?: (slot: number, shard: number) => Promise<boolean>;
  leaseMs?: number;
  /** The lease's job name; each job's slots are independent, and each shard's within it. */
  job?: string;
  /** Where slots are timed: the wall clock unless a test gives its own (slots are epoch ms). */
  clock?: { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<unknown> };
}

const wallClock = { now: () => Date.now(), sleep: (ms: number, signal?: AbortSignal) => sleep(ms, undefined, { signal }) };

export interface BatchTickResult {
  /** The slots this invocation tried, in order: each pass's scheduled start, epoch ms (the same for each of its shards). */
  slots: number[];
  /** Passes run, skipped (another invocation held the slot) and idle (nothing due), summed over the shards. */
  passes_run: number;
  passes_skipped: number;
  passes_idle: number;
}

/**
 * The tick function's body: for each shard of the due-batch index it is given (in the
 * deployed stack, one per invocation), its own loop of passes at each tick boundary for about
 * a minute, each pass under the shard's lease, so overlapping or duplicate invocations never
 * run a shard's slot twice, and a slow shard (a workspace with thousands of dials due) delays
 * no other.
 */
export async function runBatchTicks(options: BatchTickOptions = {}): Promise<BatchTickResult> {
  const tickMs = options.tickMs ?? config.BATCH_TICK_MS;
  const passes = options.passes ?? Math.max(1, Math.floor(SCHEDULE_PERIOD_MS / tickMs));
  const shards = options.shards ?? Array.from({ length: BATCH_DUE_SHARDS }, (_, shard) => shard);
  const runPass = options.runPass ?? ((_slot: number, shard: number) => runBatchPass({ shard }));
  const hasWork = options.hasWork ?? (options.runPass ? async () => true : (_slot: number, shard: number) => anyBatchDue(shard, clock.now()));
  const leaseMs = options.leaseMs ?? BATCH_PASS_LEASE_MS;
  const job = options.job ?? BATCH_PASS_JOB;
  const clock = options.clock ?? wallClock;
  const holder = randomUUID();
  // Slots are start times rather than tick counts, so they keep increasing when BATCH_TICK_MS changes.
  const firstSlot = Math.floor(clock.now() / tickMs) * tickMs;
  const result: BatchTickResult = { slots: [], passes_run: 0, passes_skipped: 0, passes_idle: 0 };
  // Shard 0's invocation alone moves what an upgrade left in the unsharded partition: one
  // mover is enough, and the others would race it for the same batches.
  if (!options.runPass && shards.includes(0)) {
    try {
      const moved = await rehomeUnshardedDueBatches();
      if (moved) logger.info('moved batches from the unsharded due index to their shards', { moved });
    } catch (error) {
      // The passes go on; the next invocation tries again.
      logger.warn('could not read the unsharded due index', { error: error instanceof Error ? error.message : String(error) });
    }
  }

  const shardLoop = async (shard: number) => {
    const lease = batchPassLease(shard, job);
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
      if (shard === shards[0]) result.slots.push(slot);
      try {
        if (!(await hasWork(slot, shard))) {
          result.passes_idle += 1;
          continue;
        }
      } catch (error) {
        // Unread is not idle: the pass runs, and its own read fails or finds the work.
        logger.warn('could not read a due-batch shard', { slot, shard, error: error instanceof Error ? error.message : String(error) });
      }
      if (!(await acquireJobLease(lease, slot, holder, leaseMs))) {
        result.passes_skipped += 1;
        continue;
      }
      result.passes_run += 1;
      try {
        await runPass(slot, shard);
      } catch (error) {
        // One failed pass must not stop the minute's remaining passes.
        logger.error('batch pass failed', { slot, shard, error: error instanceof Error ? error.message : String(error) });
      } finally {
        await releaseJobLease(lease, slot, holder);
      }
    }
  };
  await Promise.all(shards.map((shard) => shardLoop(shard)));
  return result;
}
