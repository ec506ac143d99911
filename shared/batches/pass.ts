import { randomUUID } from 'node:crypto';
import { eachLimited } from '../platform/parallel.ts';
import { getConcurrency, newBatchDialMemo, placeBatchCall, releaseUnusedBatchDialSlots, prepareBatchDials, unlinkBatchCall, type BatchDialMemo } from '../calls/index.ts';
import { doNotCallNumbers } from '../contacts/lookups/index.ts';
import { cpsLimitFor, takeAvailableDialTokens, workspaceNumber } from '../numbers/index.ts';
import { ApiError, Conflict, TooManyRequests, Unavailable } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { countMetric } from '../platform/observability/metrics.ts';
import {
  claimTask,
  dueBatchEntries,
  getBatch,
  getTask,
  getTasks,
  moveBatch,
  openClaims,
  pendingTaskIndexes,
  releaseTask,
  resolveTask,
  setBatchDue,
  SCHEDULABLE,
  type BatchItem,
  type TaskItem,
} from './store.ts';
import { releaseAgentReferences } from './agent-references.ts';
import { BATCH_DUE_SHARDS } from './shards.ts';
import { insideWindow, nextOpening } from './windows.ts';

/*
 * One scheduler pass over one shard of the due-batch index (spec: Batch calls, Scheduler;
 * docs/batch-calls.md). For each batch in the shard whose due time has passed, planned or
 * ongoing, the batches of a workspace side by side and the workspaces side by side:
 *
 * 1. outside its call_time_window it waits (its due time moves to the window's next opening);
 * 2. free capacity = the workspace's concurrency limit − the batch's reserved_concurrency −
 *    calls in progress, shared evenly between the workspace's batches due in this pass;
 * 3. of that, as many of the from-number's calls-per-second tokens as are free right now are
 *    taken (never waited for: the batch comes due again when the next one returns);
 * 4. that many pending tasks are claimed (conditional writes) and dialled through
 *    placeBatchCall, create-phone-call's path, with an idempotency key of batch and task:
 *    each dial writes its call and queues its first step, the asynchronous dial;
 * 5. no pending task and no open claim left: the batch is `sent`.
 *
 * A claim older than CLAIM_RETRY_MS whose pass died before resolving it is dialled again
 * with the same key: the idempotency claim answers the call already placed, so the task is
 * resolved with it and nothing is dialled twice. Two passes over the same batch at once
 * (a redelivered invocation, an expired lease) are as safe: each task is won by one claim.
 */

/** Which of `numbers` are flagged do-not-call in the workspace's contacts, asked at dial time. */
type DoNotCallCheck = (workspaceId: string, numbers: readonly string[]) => Promise<Set<string>>;

/** The contacts domain's: numbers whose contact is flagged do_not_call. */
const doNotCallCheck: DoNotCallCheck = doNotCallNumbers;

/** A claim this old whose pass has not resolved it is taken to be a dead pass's (dials take seconds). */
export const CLAIM_RETRY_MS = 30_000;
/** Dials one batch runs at once (a dial writes its call and queues its first step; it never waits on the callee). */
const DIAL_PARALLELISM = 32;
/** Workspaces served at once in a pass over one shard. */
const WORKSPACE_PARALLELISM = 16;
/** A workspace's batches served at once (they split its free capacity evenly). */
const BATCH_PARALLELISM = 8;

/** Where the pass reads the time; the calls-per-second tokens are timed by it too (tests: virtual time). */
interface PassClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const wallClock: PassClock = { now: () => Date.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };

export interface BatchPassOptions {
  /** The shard of the due-batch index to pass; every shard at once unless given (tests). */
  shard?: number;
  /** The clock for due times, windows, claim ages and tokens (epoch ms; tests). */
  clock?: PassClock;
  /** The time of the pass, if not the clock's (tests). */
  now?: number;
  doNotCall?: DoNotCallCheck;
  /** The spend check (billing's unless given): throws PaymentRequired to refuse. */
  canSpend?: (workspaceId: string) => Promise<void>;
  /** Runs after a task's dial, before the task is marked (tests: a throw is a pass dying there). */
  afterDial?: (task: TaskItem) => Promise<void>;
}

export interface BatchPassResult {
  batches: number;
  /** Calls placed (dialled) in this pass. */
  dialled: number;
  failed: number;
  skipped: number;
  /** Claimed, then given back (calls per second, capacity taken meanwhile). */
  released: number;
}

export async function runBatchPass(options: BatchPassOptions = {}): Promise<BatchPassResult> {
  const clock = options.clock ?? wallClock;
  const now = options.now ?? clock.now();
  const shards = options.shard === undefined ? Array.from({ length: BATCH_DUE_SHARDS }, (_, i) => i) : [options.shard];
  const entries = (await Promise.all(shards.map((shard) => dueBatchEntries(shard, now)))).flat();
  const result: BatchPassResult = { batches: entries.length, dialled: 0, failed: 0, skipped: 0, released: 0 };
  const byWorkspace = new Map<string, string[]>();
  for (const entry of entries) byWorkspace.set(entry.workspace_id, [...(byWorkspace.get(entry.workspace_id) ?? []), entry.batch_call_id]);
  // Which batch gets the odd slot of a workspace's capacity turns with the second, so none is always last.
  const turn = Math.floor(now / 1000);
  await eachLimited([...byWorkspace], WORKSPACE_PARALLELISM, async ([workspaceId, batchIds]) => {
    await eachLimited(batchIds, BATCH_PARALLELISM, async (batchCallId, index) => {
      const share = { of: batchIds.length, index: (index + turn) % batchIds.length };
      try {
        await runBatch(workspaceId, batchCallId, now, share, clock, options, result);
      } catch (error) {
        logger.error('batch pass failed for a batch', { batch_call_id: batchCallId, error: error instanceof Error ? error.message : String(error) });
      }
    });
  });
  return result;
}

/** This batch's part of `free`: an even split between the workspace's batches in the pass, the remainder taking turns. */
const shareOf = (free: number, share: { of: number; index: number }) =>
  Math.max(0, Math.floor(free / share.of) + (share.index < free % share.of ? 1 : 0));

async function runBatch(
  workspaceId: string,
  batchCallId: string,
  now: number,
  share: { of: number; index: number },
  clock: PassClock,
  options: BatchPassOptions,
  result: BatchPassResult,
): Promise<void> {
  const batch = await getBatch(workspaceId, batchCallId);
  // The index is eventually consistent: the record decides.
  if (!batch || !SCHEDULABLE.includes(batch.status)) return;
  if (batch.trigger_timestamp > now) {
    await setBatchDue(workspaceId, batchCallId, batch.trigger_timestamp);
    return;
  }
  if (!insideWindow(batch.call_time_window, now)) {
    await setBatchDue(workspaceId, batchCallId, nextOpening(batch.call_time_window!, now));
    return;
  }

  const [claims, concurrency, number] = await Promise.all([
    openClaims(workspaceId, batchCallId),
    getConcurrency(workspaceId),
    workspaceNumber(workspaceId, batch.from_number),
  ]);
  const stale = claims.filter((claim) => now - claim.claimed_at >= CLAIM_RETRY_MS);
  const free = concurrency.concurrency_limit - batch.reserved_concurrency - concurrency.current_concurrency;
  const capacity = Math.max(0, shareOf(free, share) - stale.length);
  // At least one, to tell "nothing pending" apart from "no capacity".
  const queryLimit = Math.max(1, capacity);
  const pending = await pendingTaskIndexes(workspaceId, batchCallId, queryLimit);

  if (pending.length === 0 && claims.length === 0) {
    await moveBatch(workspaceId, batchCallId, { from: SCHEDULABLE, to: 'sent', also: releaseAgentReferences(batch) });
    return;
  }

  // The number's tokens free now, never waited for; a missing number fails each task it is
  // asked for (placeBatchCall's 404), at capacity's pace.
  const wanted = Math.min(capacity, pending.length);
  const available = number && wanted > 0 ? await takeAvailableDialTokens(number.phone_number, cpsLimitFor(number), wanted, { clock }) : undefined;
  const budget = available ? available.tokens.length : wanted;

  // Claim up to the budget, in order; a task another pass claimed first is simply not ours.
  const claimedAt = clock.now();
  const won = await Promise.all(
    pending.slice(0, budget).map(async (index) => ((await claimTask(workspaceId, batchCallId, index, claimedAt, randomUUID())) ? index : undefined)),
  );
  const claimed = won.filter((index): index is number => index !== undefined);
  const [fresh, retried] = await Promise.all([getTasks(workspaceId, batchCallId, claimed), getTasks(workspaceId, batchCallId, stale.map((claim) => claim.task_index))]);
  fresh.sort((a, b) => a.task_index - b.task_index);

  // Do-not-call, asked now (a contact flagged after the batch was created is skipped).
  let toDial = fresh;
  if (batch.honor_internal_dnc && fresh.length > 0) {
    const check = options.doNotCall ?? doNotCallCheck;
    const flagged = await check(workspaceId, [...new Set(fresh.map((task) => task.to_number))]);
    toDial = [];
    for (const task of fresh) {
      if (!flagged.has(task.to_number)) {
        toDial.push(task);
        continue;
      }
      if (await resolveTask(workspaceId, batchCallId, task.task_index, { status: 'skipped', error: `${task.to_number} is flagged do-not-call`, counter: 'skipped_count' })) {
        result.skipped += 1;
      }
    }
  }

  const memo = newBatchDialMemo();
  memo.numbers.set(batch.from_number, Promise.resolve(number));
  // The dials use the tokens taken above; one without (a retried claim) takes one only if
  // it is free now, else its task goes back to pending: nothing waits for a token.
  memo.tokenWaitMs = 0;
  memo.clock = clock;
  // The fresh claims' concurrency slots in one write; a retried claim's dial (its call may
  // exist already, holding its slot) takes its own.
  await prepareBatchDials(
    memo,
    workspaceId,
    batchCallId,
    toDial.map((task) => ({ taskIndex: task.task_index, claimedAt: task.claimed_at ?? claimedAt })),
  );
  if (number && available) memo.tokens.set(number.phone_number, [...available.tokens]);
  let placed: number;
  try {
    placed = await dialTasks(batch, [...retried.filter((task) => task.status === 'dialing'), ...toDial], memo, options, result);
  } finally {
    await releaseUnusedBatchDialSlots(memo, workspaceId);
  }

  // Fewer pending than asked for: this pass took the last ones, so the batch may be done.
  const drained = pending.length < queryLimit && claimed.length === pending.length;
  if (drained && (await openClaims(workspaceId, batchCallId)).length === 0 && (await pendingTaskIndexes(workspaceId, batchCallId, 1)).length === 0) {
    await moveBatch(workspaceId, batchCallId, { from: SCHEDULABLE, to: 'sent', also: releaseAgentReferences(batch) });
    return;
  }
  if (placed > 0 && batch.status === 'planned') await moveBatch(workspaceId, batchCallId, { from: ['planned'], to: 'ongoing' });
  // The number's second is spent: the batch is due again when its next token comes back.
  if (available && available.tokens.length < wanted && available.nextAt > now) await setBatchDue(workspaceId, batchCallId, available.nextAt);
}

/** Dials the claimed tasks, DIAL_PARALLELISM at once; answers how many calls were placed. */
async function dialTasks(batch: BatchItem, tasks: readonly TaskItem[], memo: BatchDialMemo, options: BatchPassOptions, result: BatchPassResult): Promise<number> {
  const { workspace_id: workspaceId, batch_call_id: batchCallId } = batch;
  let placed = 0;
  /** Calls per second or capacity ran out: the rest go back to pending for the next pass. */
  let halted = false;
  let next = 0;
  const giveBack = async (task: TaskItem) => {
    if (task.claim_token && (await releaseTask(workspaceId, batchCallId, task.task_index, task.claim_token))) result.released += 1;
  };
  const dialOne = async (task: TaskItem) => {
    if (halted) return giveBack(task);
    try {
      const dial = await placeBatchCall({
        workspaceId,
        batchCallId,
        taskIndex: task.task_index,
        claimedAt: task.claimed_at ?? Date.now(),
        fromNumber: batch.from_number,
        task: {
          to_number: task.to_number,
          override_agent_id: task.override_agent_id,
          override_agent_version: task.override_agent_version,
          retell_llm_dynamic_variables: task.retell_llm_dynamic_variables,
          metadata: task.metadata,
          custom_sip_headers: task.custom_sip_headers,
          agent_override: task.agent_override,
        },
        canSpend: options.canSpend,
        memo,
      });
      await options.afterDial?.(task);
      const resolved =
        dial.outcome === 'placed'
          ? await resolveTask(workspaceId, batchCallId, task.task_index, { status: 'called', callId: dial.call.call_id, counter: 'sent_count' })
          : await resolveTask(workspaceId, batchCallId, task.task_index, {
              status: 'failed',
              callId: dial.call.call_id,
              error: `no_valid_payment: ${dial.message ?? 'the workspace cannot spend'}`,
              counter: 'failed_count',
            });
      if (resolved && dial.outcome === 'placed') placed += 1;
      if (resolved && dial.outcome !== 'placed') result.failed += 1;
      if (resolved) countMetric('BatchDial', { result: dial.outcome === 'placed' ? 'placed' : 'spend_blocked' });
      // The batch was deleted while the call was placed: the call stays in the history, unlinked.
      if (!resolved && !(await getTask(workspaceId, batchCallId, task.task_index))) await unlinkBatchCall(dial.call.call_id, batchCallId);
    } catch (error) {
      if (error instanceof TooManyRequests) {
        halted = true;
        countMetric('BatchDial', { result: 'deferred' });
        return giveBack(task);
      }
      // The same task's dial is running elsewhere, or the store did not answer (or the pass
      // is dying): the claim stays, and a later pass retries it with the same key.
      if (error instanceof Conflict || error instanceof Unavailable || !(error instanceof ApiError)) {
        logger.warn('batch task left claimed', { batch_call_id: batchCallId, task_index: task.task_index, error: (error as Error).message });
        return;
      }
      // It cannot be dialled (no agent, the agent cannot run, the number is gone, …).
      if (await resolveTask(workspaceId, batchCallId, task.task_index, { status: 'failed', error: error.message, counter: 'failed_count' })) {
        result.failed += 1;
        countMetric('BatchDial', { result: 'failed' });
      }
    }
  };
  const worker = async () => {
    while (next < tasks.length) await dialOne(tasks[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(DIAL_PARALLELISM, tasks.length) }, worker));
  result.dialled += placed;
  return placed;
}
