import { assertCanSpend } from '../billing/index.ts';
import { AHEAD_TOKEN_USE_MS, cpsLimitFor, takeDialToken, verificationStatus, workspaceNumber, type DialToken, type NumberItem } from '../numbers/index.ts';
import { PaymentRequired } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { checkedAgentOverride } from './agent-override.ts';
import { batchCallIdFor } from './batch-links.ts';
import { admitWithSweep, callMetadata, chooseAgent, outboundAgent, outboundDialTarget, sandboxScript, type AgentChooser, type ChosenAgent } from './calls.ts';
import { acquireSlots, releaseSlot } from './concurrency.ts';
import { finishCall, scheduleFirstStep } from './engine/finish.ts';
import { batchDialKey, withIdempotency } from './idempotency.ts';
import { mediaKind } from './engine/media.ts';
import type { CallView } from './schemas.ts';
import { findCallItem, newCallItem, putNewCall, type CallItem } from './store.ts';
import { toCallView } from './view.ts';

/*
 * A batch task's dial: create-phone-call's path (the number, the outbound agent, spend, the
 * number's calls-per-second token, a concurrency slot of kind `batch`, the call record, the
 * first step) with three differences:
 *
 * - Idempotency key `batch_call:<batch>:task:<index>` (withIdempotency, as the create
 *   routes use it), so a pass that retries a task whose dial already ran gets that call
 *   back instead of dialling again.
 * - The call ID is derived from the task (the claim's time, then a hash of batch and task),
 *   so even a retry that runs again (the first run died after writing the call but before
 *   completing its idempotency claim, or after the one-hour window) finds the call already
 *   written and places nothing.
 * - A refused spend check does not throw: the task gets a `not_connected` call with
 *   `no_valid_payment` (spec: Batch task), ended through the engine's one end path.
 *
 * The call carries `batch_call_id` and `engine.batch`, which adds the `batch_dial` line to
 * its cost and lets the batches domain hear of it (call-listeners.ts).
 */

interface BatchTaskInput {
  to_number: string;
  override_agent_id?: string;
  override_agent_version?: string;
  retell_llm_dynamic_variables?: Record<string, string>;
  metadata?: unknown;
  custom_sip_headers?: Record<string, string>;
  /** The task's agent_override as given (checked again here: a voice may have gone since the create). */
  agent_override?: Record<string, unknown>;
}

/**
 * What one pass's dials of one batch share: the from-number and each (agent, version
 * reference) resolved once instead of once per task (five reads each: the agent's
 * reference twice, its engine, its version). A pass lasts about a second, and a change
 * to the agent within it is as if it had landed just after the pass.
 */
export interface BatchDialMemo {
  numbers: Map<string, Promise<NumberItem | undefined>>;
  agents: Map<string, Promise<ChosenAgent>>;
  /** Concurrency slots the pass took for its dials at once (prepareBatchDials), by call ID. */
  slots: Map<string, { burst: boolean }>;
  /** Calls-per-second tokens the pass took ahead for its dials (takeAvailableDialTokens), by from-number. */
  tokens: Map<string, DialToken[]>;
  /** The pass's spend check: one per pass, its answer shared by the dials (they would all read the same balance). */
  spend?: Promise<void>;
  /**
   * How long a dial without a token taken ahead may wait for one (takeDialToken's maxWaitMs).
   * A scheduler that takes its tokens ahead gives 0: such a dial is refused (429) and its task
   * waits for a later pass, so nothing sleeps inside the pass.
   */
  tokenWaitMs?: number;
  /** Where the tokens' freshness is timed and taken (the limiter's clock; tests give a virtual one). */
  clock?: { now(): number; sleep(ms: number): Promise<void> };
}

export const newBatchDialMemo = (): BatchDialMemo => ({ numbers: new Map(), agents: new Map(), slots: new Map(), tokens: new Map() });

/**
 * Takes the concurrency slots of a pass's dials from the workspace's counter in one write
 * (acquireSlots, in task order, as many as the caps allow): twenty dials taking theirs one by
 * one queue behind each other on that one item. The pass takes its calls-per-second tokens
 * itself (memo.tokens). A dial left without a reserved slot takes its own (and is refused as
 * before when none is left); a reserved slot no dial used is released (by the dial, or
 * releaseUnusedBatchDialSlots). Answers how many slots were reserved.
 */
export async function prepareBatchDials(
  memo: BatchDialMemo,
  workspaceId: string,
  batchCallId: string,
  tasks: readonly { taskIndex: number; claimedAt: number }[],
): Promise<number> {
  if (tasks.length === 0) return 0;
  const callIds = tasks.map((task) => batchCallIdFor(batchCallId, task.taskIndex, task.claimedAt));
  // Taking them at once is an optimisation: when it fails (acquireSlots gave back what it
  // took), each dial takes its own as it would have.
  const admitted = await acquireSlots({ workspaceId, callIds, kind: 'batch' }).catch((error: unknown) => {
    logger.warn('could not reserve a pass\'s concurrency slots at once; its dials take their own', { workspace_id: workspaceId, error });
    return new Map<string, { burst: boolean }>();
  });
  for (const [callId, slot] of admitted) memo.slots.set(callId, slot);
  return admitted.size;
}

/** A token the pass took ahead for this number, still fresh enough to dial on, or a new one. */
async function dialToken(memo: BatchDialMemo | undefined, number: NumberItem): Promise<void> {
  const ahead = memo?.tokens.get(number.phone_number);
  const now = memo?.clock?.now() ?? Date.now();
  for (let token = ahead?.pop(); token; token = ahead?.pop()) {
    if (now - token.takenAt < AHEAD_TOKEN_USE_MS) return;
  }
  await takeDialToken(number.phone_number, cpsLimitFor(number), { maxWaitMs: memo?.tokenWaitMs, clock: memo?.clock });
}

function memoized<T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
  let hit = cache.get(key);
  if (!hit) {
    hit = load();
    cache.set(key, hit);
  }
  return hit;
}

export interface BatchDialInput {
  workspaceId: string;
  batchCallId: string;
  taskIndex: number;
  /** When the task was claimed (epoch ms): fixes the call's ID, so it sorts by the claim. */
  claimedAt: number;
  fromNumber: string;
  task: BatchTaskInput;
  /** The spend check (billing's, unless a test injects one). Throws PaymentRequired to refuse. */
  canSpend?: (workspaceId: string) => Promise<void>;
  /** Shared by the dials of one pass over one batch (newBatchDialMemo); none: every read is made. */
  memo?: BatchDialMemo;
}

export interface BatchDialResult {
  outcome: 'placed' | 'no_valid_payment';
  call: CallView;
  /** Why the spend check refused (no_valid_payment). */
  message?: string;
}

;


/** Gives back a reserved slot no call was written with; a failure is left to the sweep (its call never exists). */
const releaseUnusedSlot = (workspaceId: string, callId: string) =>
  releaseSlot(workspaceId, callId).then(
    () => undefined,
    (error: unknown) => logger.warn('could not release an unused batch dial slot; the sweep will', { workspace_id: workspaceId, call_id: callId, error }),
  );

/** Releases the reserved slots no dial took (tasks given back when the pass stopped early). */
export async function releaseUnusedBatchDialSlots(memo: BatchDialMemo, workspaceId: string): Promise<void> {
  const unused = [...memo.slots.keys()];
  memo.slots.clear();
  await Promise.all(unused.map((callId) => releaseUnusedSlot(workspaceId, callId)));
}

/**
 * Dials one batch task, exactly once per (batch, task). Throws what create-phone-call
 * would: NotFound (the number is gone), Invalid (no agent, the agent cannot run, a country
 * not allowed), TooManyRequests (calls-per-second or concurrency: try the task later),
 * Conflict (the same task's dial is running elsewhere right now).
 */
export async function placeBatchCall(input: BatchDialInput): Promise<BatchDialResult> {
  const callId = batchCallIdFor(input.batchCallId, input.taskIndex, input.claimedAt);
  const reserved = input.memo?.slots.get(callId);
  if (!reserved) return dialTask(input, callId);
  input.memo!.slots.delete(callId);
  /** Whether the call was written holding the reserved slot: from then on it is the call's to release. */
  let used = false;
  try {
    return await dialTask(input, callId, { burst: reserved.burst, taken: () => void (used = true) });
  } finally {
    if (!used) await releaseUnusedSlot(input.workspaceId, callId);
  }
}

/** placeBatchCall's dial, with the slot the pass reserved for it, if any. */
async function dialTask(input: BatchDialInput, callId: string, reserved?: { burst: boolean; taken(): void }): Promise<BatchDialResult> {
  const { workspaceId, batchCallId, taskIndex, task } = input;
  const { memo } = input;
  const numberOf = memo
    ? (workspace: string, phoneNumber: string) => memoized(memo.numbers, phoneNumber, () => workspaceNumber(workspace, phoneNumber))
    : workspaceNumber;
  const choose: AgentChooser = memo
    ? (workspace, agentId, reference) => memoized(memo.agents, `${agentId}@${reference}`, () => chooseAgent(workspace, agentId, reference))
    : chooseAgent;
  const { toNumber, number } = await outboundDialTarget(workspaceId, input.fromNumber, task.to_number, numberOf);
  const sandbox = sandboxScript(task.metadata);
  const agentOverride = task.agent_override === undefined ? undefined : await checkedAgentOverride(workspaceId, task.agent_override);
  const canSpend = input.canSpend ?? ((id: string) => assertCanSpend(id, 'batch_call', { verificationStatus: () => verificationStatus(id) }));

  return withIdempotency<BatchDialResult>({
    workspaceId,
    key: batchDialKey(batchCallId, taskIndex),
    request: { route: 'batch-dial', batch_call_id: batchCallId, task_index: taskIndex, call_id: callId },
    run: async () => {
      // Written by an earlier run that died before completing its claim: that is the dial.
      const existing = await findCallItem(callId);
      if (existing) return resultOf(existing);

      const chosen = await outboundAgent(workspaceId, number, task, choose);
      const build = (status: 'registered', burst: boolean, dialled: boolean, nowMs: number): CallItem =>
        newCallItem({
          call_id: callId,
          workspace_id: workspaceId,
          created_timestamp: nowMs,
          call_type: 'phone_call',
          call_status: status,
          direction: 'outbound',
          agent_id: chosen.agentId,
          agent_version: chosen.version,
          ...(chosen.agentName ? { agent_name: chosen.agentName } : {}),
          from_number: number.phone_number,
          to_number: toNumber,
          batch_call_id: batchCallId,
          metadata: callMetadata(task.metadata ?? {}, chosen),
          retell_llm_dynamic_variables: { ...(chosen.tagVariables ?? {}), ...(task.retell_llm_dynamic_variables ?? {}) },
          ...(task.custom_sip_headers ? { custom_sip_headers: task.custom_sip_headers } : {}),
          concurrency_burst: burst,
          engine: {
            slot: dialled,
            media: mediaKind(),
            origin: 'batch',
            batch: { batch_call_id: batchCallId, task_index: taskIndex, dialled },
            ...(agentOverride ? { agent_override: agentOverride } : {}),
            ...(sandbox ? { sandbox } : {}),
          },
        });

      try {
        await (memo ? (memo.spend ??= canSpend(workspaceId)) : canSpend(workspaceId));
      } catch (error) {
        if (!(error instanceof PaymentRequired)) throw error;
        // No credit: the task gets a call that never dials (no slot, no token, no dial charge).
        const refused = build('registered', false, false, Date.now());
        await putNewCall(refused);
        const ended = await finishCall(refused, { status: 'not_connected', reason: 'no_valid_payment' });
        return { ...resultOf(ended ?? refused), outcome: 'no_valid_payment', message: error.message };
      }
      await dialToken(memo, number);
      const { burst } = reserved ?? (await admitWithSweep(workspaceId, callId, 'batch'));
      const call = build('registered', burst, true, Date.now());
      try {
        await putNewCall(call);
        reserved?.taken();
      } catch (error) {
        await releaseSlot(workspaceId, callId);
        throw error;
      }
      await scheduleFirstStep(call, 'dial', Date.now());
      return resultOf(call);
    },
  });
}

function resultOf(call: CallItem): BatchDialResult {
  return call.engine?.batch?.dialled === false
    ? { outcome: 'no_valid_payment', call: toCallView(call) }
    : { outcome: 'placed', call: toCallView(call) };
}
