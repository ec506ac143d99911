import { randomUUID } from 'node:crypto';
import { getConcurrency, newBatchDialMemo, placeBatchCall, releaseUnusedBatchDialSlots, prepareBatchDials, unlinkBatchCall, type BatchDialMemo } from '../calls/index.ts';
import { doNotCallNumbers } from '../contacts/lookups/index.ts';
import { cpsLimitFor, workspaceNumber } from '../numbers/index.ts';
import { config } from '../platform/config.ts';
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
import { insideWindow, nextOpening } from './windows.ts';

/*
 * One scheduler pass (spec: Batch calls, Scheduler; docs/batch-calls.md). For each batch in
 * the due-batch index whose due time has passed, planned or ongoing:
 *
 * 1. outside its call_time_window it waits (its due time moves to the window's next opening);
 * 2. free capacity = the workspace's concurrency limit − the batch's reserved_concurrency −
 *    calls in progress, and at most the number's calls per second × the tick;
 * 3. that many pending tasks are claimed (conditional writes) and dialled in order through
 *    placeBatchCall, create-phone-call's path, with an idempotency key of batch and task;
 * 4. no pending task and no open claim left: the batch is `sent`.
 *
 * A claim older than CLAIM_RETRY_MS whose pass died before resolving it is dialled again
 * with the same key: the idempotency claim answers the call already placed, so the task is
 * resolved with it and nothing is dialled twice.
 */

/** Which of `numbers` are flagged do-not-call in the workspace's contacts, asked at dial time. */
type DoNotCallCheck = (workspaceId: string, numbers: readonly string[]) => Promise<Set<string>>;

/** The contacts domain's: numbers whose contact is flagged do_not_call. */
const doNotCallCheck: DoNotCallCheck = doNotCallNumbers;

/** A claim this old whose pass has not resolved it is taken to be a dead pass's (dials take seconds). */
export const CLAIM_RETRY_MS = 30_000;
/** Dials one batch runs at once (each may wait on its number's calls-per-second token). */
const DIAL_PARALLELISM = 32;
/** Workspaces served at once in a pass; a workspace's batches go one after another (they share its capacity). */
const WORKSPACE_PARALLELISM = 8;

export interface BatchPassOptions {
  /** The clock for due times, windows and claim ages (epoch ms; tests). */
  now?: number;
  /** The pass's spacing; with the number's cps it bounds the dials per batch per pass. */
  tickMs?: number;
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
  const now = options.now ?? Date.now();
  const entries = await dueBatchEntries(now);
  const result: BatchPassResult = { batches: entries.length, dialled: 0, failed: 0, skipped: 0, released: 0 };
  const byWorkspace = new Map<string, string[]>();
  for (const entry of entries) byWorkspace.set(entry.workspace_id, [...(byWorkspace.get(entry.workspace_id) ?? []), entry.batch_call_id]);
  const workspaces = [...byWorkspace];
  let next = 0;
  const worker = async () => {
    while (next < workspaces.length) {
      const [workspaceId, batchIds] = workspaces[next++]!;
      for (const batchCallId of batchIds) {
        try {
          await runBatch(workspaceId, batchCallId, now, options, result);
        } catch (error) {
          logger.error('batch pass failed for a batch', { batch_call_id: batchCallId, error: error instanceof Error ? error.message : String(error) });
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(WORKSPACE_PARALLELISM, workspaces.length) }, worker));
  return result;
}

async function runBatch(workspaceId: string, batchCallId: string, now: number, options: BatchPassOptions, result: BatchPassResult): Promise<void> {
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
  const tickMs = options.tickMs ?? config.BATCH_TICK_MS;
  // A missing number fails each task it is asked for (placeBatchCall's 404), at capacity's pace.
  const cpsBudget = number ? Math.max(1, Math.floor((cpsLimitFor(number) * tickMs) / 1000)) : Number.POSITIVE_INFINITY;
  const budget = Math.max(0, Math.min(free, cpsBudget) - stale.length);
  // At least one, to tell "nothing pending" apart from "no capacity".
  const queryLimit = Math.max(1, budget);
  const pending = await pendingTaskIndexes(workspaceId, batchCallId, queryLimit);

  if (pending.length === 0 && claims.length === 0) {
    await moveBatch(workspaceId, batchCallId, { from: SCHEDULABLE, to: 'sent', also: releaseAgentReferences(batch) });
    return;
  }

  // Claim up to the budget, in order; a task another pass claimed first is simply not ours.
  const claimedAt = Date.now();
  const wanted = pending.slice(0, budget);
  const won = await Promise.all(wanted.map(async (index) => ((await claimTask(workspaceId, batchCallId, index, claimedAt, randomUUID())) ? index : undefined)));
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
  // The fresh claims' concurrency slots and calls-per-second tokens in one write each; a
  // retried claim's dial (its call may exist already, holding its slot) takes its own.
  await prepareBatchDials(
    memo,
    workspaceId,
    batchCallId,
    number,
    toDial.map((task) => ({ taskIndex: task.task_index, claimedAt: task.claimed_at ?? claimedAt })),
  );
  let placed: number;
  try {
    placed = await dialTasks(batch, [...retried.filter((task) => task.status === 'dialing'), ...toDial], memo, options, result);
  } finally {
    await releaseUnusedBatchDialSlots(memo, workspaceId);
  }

  // Fewer pending than asked for: this pass took the last ones, so the batch may be done.
  const drained = pending.length < queryLimit;
  if (drained && (await openClaims(workspaceId, batchCallId)).length === 0 && (await pendingTaskIndexes(workspaceId, batchCallId, 1)).length === 0) {
    await moveBatch(workspaceId, batchCallId, { from: SCHEDULABLE, to: 'sent', also: releaseAgentReferences(batch) });
  } else if (placed > 0 && batch.status === 'planned') {
    await moveBatch(workspaceId, batchCallId, { from: ['planned'], to: 'ongoing' });
  }
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
