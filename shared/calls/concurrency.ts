import { createHash, randomBytes, randomInt } from 'node:crypto';
import { getWorkspaceItem } from '../account/index.ts';
import { badRequest, tooManyRequests, unavailable } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { keys } from '../platform/store/keys.ts';
import { ConditionFailed, TransactionCancelled, table, type TransactOp } from '../platform/store/table.ts';
import { MAX_CONCURRENCY_LIMIT, type Concurrency, type ConcurrencySettings, type UpdateConcurrencySettingsInput } from './schemas.ts';

/*
 * Concurrent calls per workspace (spec Concurrency and Limits).
 *
 * One counter item per workspace (keys.concurrencyCounter: `in_use` and the settings) and one
 * slot item per admitted call (keys.concurrencySlot), in one partition of their own. Taking a
 * slot is one transaction: the counter's `in_use + 1`, conditional on `in_use` being below
 * the cap, and the slot's Put, conditional on the call holding none. Releasing is the
 * reverse: the slot's Delete, conditional on it existing, and `in_use - 1`. So `in_use` is
 * always exactly the number of slot items (never a count query, never negative), a call is
 * counted once however often it is admitted, and released once however many of its ends
 * (hang-up, failure, stop, timeout, a dial that never connected, duplicated events, a sweep)
 * race to release it: the second release finds no slot and changes nothing.
 *
 * Caps. limit L = the workspace's concurrency_limit (1..1000); R reserved inbound slots
 * (0..L, read as min(R, L) when the limit was lowered since); burst limit B = min(3L, L+300)
 * when burst is on, else L. Inbound calls may take the count to L, or B with burst; outbound,
 * web and batch calls to L − R, or B − R with burst, so R slots always stay for inbound
 * calls. A call admitted only because burst is on (the count was at or above its kind's
 * normal cap) is a burst call (`burst: true`, the `concurrency_burst` cost line).
 *
 * Each attempt reads the counter (strongly consistent) for the settings and the tier, then
 * writes conditional on both: `in_use` still inside the tier it read (below the normal cap,
 * or between it and the burst cap) and the settings unchanged (`settings_rev`). So the burst
 * flag is exact under concurrency, and a call admitted under old settings is impossible. A
 * condition that failed or a transaction that conflicted with another is simply tried again.
 *
 * Slot items have no TTL on purpose: DynamoDB deleting a slot would leave it counted for
 * ever. A crashed instance's slots are released by the sweep (sweepSlots), which asks the
 * calls domain whether each slot's call is still in progress.
 */

/** Included in the price (spec Limits); `purchased_concurrency` is the rest of the limit. */
const BASE_CONCURRENCY = 20;
/**
 * How long after a slot was taken the sweep leaves it alone whatever the calls domain says:
 * the call record is written after its slot, so a call being set up is not in progress yet.
 */
export const SLOT_SETUP_GRACE_MS = 120_000;
/** How long the scheduled sweep leaves a slot whose call is in progress before it looks again. */
export const SLOT_RECHECK_MS = 5 * 60_000;
/** The scheduled sweep's index is spread over this many gsi1 partitions (by call ID). */
const SLOT_SWEEP_SHARDS = 4;
const sweepShardOf = (callId: string): number => createHash('sha256').update(callId).digest()[0]! % SLOT_SWEEP_SHARDS;
/** The slot's entry in the scheduled sweep's index, due at `dueMs`. */
const sweepEntry = (workspaceId: string, callId: string, dueMs: number) => keys.concurrencySweepDue(sweepShardOf(callId), dueMs, workspaceId, callId);
/** Retry-after of a 429: calls last minutes, so a slot rarely comes back within a second. */
const FULL_RETRY_AFTER_SECONDS = 5;
const MAX_ATTEMPTS = 25;

export type CallKind = 'inbound' | 'outbound' | 'web' | 'batch';

// ── Items ───────────────────────────────────────────────────────────────────────────

type CounterItem = {
  pk: string;
  sk: string;
  /** Slots held: always the number of slot items. */
  in_use?: number;
  reserved_inbound_concurrency?: number;
  burst_enabled?: boolean;
  /** Counts settings changes: admission is conditional on the settings it decided by. */
  settings_rev?: number;
};

export type SlotItem = {
  pk: string;
  sk: string;
  workspace_id: string;
  call_id: string;
  kind: CallKind;
  burst: boolean;
  /** Epoch ms; the sweep leaves the slot alone for SLOT_SETUP_GRACE_MS after it. */
  acquired_timestamp: number;
  /** Names this admission, so a cleanup or a sweep releases only the slot it means. */
  token: string;
  /** The scheduled sweep's index (keys.concurrencySweepDue): when it next looks at the slot. Absent on slots taken before it existed. */
  gsi1pk?: string;
  gsi1sk?: string;
};

// ── Limits ──────────────────────────────────────────────────────────────────────────

export const burstLimit = (limit: number) => Math.min(3 * limit, limit + 300);

interface Limits {
  limit: number;
  reserved: number;
  burstEnabled: boolean;
}

const limitsOf = (limit: number, counter: CounterItem | undefined): Limits => ({
  limit,
  // A limit lowered below the reservation reserves the whole (lower) limit.
  reserved: Math.min(counter?.reserved_inbound_concurrency ?? 0, limit),
  burstEnabled: counter?.burst_enabled ?? false,
});

/** The count a call of this kind may take the workspace to: without burst, and with it when on. */
function caps(kind: CallKind, limits: Limits): { normal: number; max: number } {
  const top = limits.burstEnabled ? burstLimit(limits.limit) : limits.limit;
  const keep = kind === 'inbound' ? 0 : limits.reserved;
  return { normal: limits.limit - keep, max: top - keep };
}

const concurrencyLimitReached = (inUse: number, kind: CallKind, limits: Limits) => {
  const notes = [`limit ${limits.limit}`];
  if (kind !== 'inbound' && limits.reserved > 0) notes.push(`${limits.reserved} reserved for inbound calls`);
  if (limits.burstEnabled) notes.push(`burst limit ${burstLimit(limits.limit)}`);
  return tooManyRequests(`Concurrency limit reached: ${inUse} calls in progress (${notes.join(', ')})`, FULL_RETRY_AFTER_SECONDS, 'concurrency');
};

const workspaceLimit = async (workspaceId: string) => (await getWorkspaceItem(workspaceId)).concurrency_limit;
const readCounter = (workspaceId: string) => table.get<CounterItem>(keys.concurrencyCounter(workspaceId));
const readSlot = (workspaceId: string, callId: string) => table.get<SlotItem>(keys.concurrencySlot(workspaceId, callId));

/** Jittered backoff between attempts that lost a race (transaction conflicts, a moved counter). */
const backoff = (attempt: number) => new Promise((resolve) => setTimeout(resolve, randomInt(1, Math.min(200, 5 * 2 ** attempt) + 1)));

const tooBusy = () => unavailable('Concurrency slots are changing too fast to take one; retry', 1);

/** `settings_rev` as read: the condition that the settings did not change since. */
function settingsUnchanged(counter: CounterItem | undefined): { expression: string; values: Record<string, unknown> } {
  return counter?.settings_rev === undefined
    ? { expression: 'attribute_not_exists(settings_rev)', values: {} }
    : { expression: 'settings_rev = :rev', values: { ':rev': counter.settings_rev } };
}

// ── Acquire, release, sweep ─────────────────────────────────────────────────────────

export interface AcquireSlotInput {
  workspaceId: string;
  callId: string;
  kind: CallKind;
  /** The workspace's concurrency_limit when the caller has just read the workspace (saves a read). */
  concurrencyLimit?: number;
  /** The clock, epoch ms (tests). */
  now?: () => number;
}

/**
 * Takes a slot for the call, or throws TooManyRequests (429) when its kind may not take one.
 * `burst` is true when only burst admitted it. A call that already holds a slot keeps it and
 * gets its flag back (nothing is counted twice).
 */
export async function acquireSlot(input: AcquireSlotInput): Promise<{ burst: boolean }> {
  const { workspaceId, callId, kind } = input;
  const now = input.now ?? Date.now;
  const [limit, firstRead] = await Promise.all([
    input.concurrencyLimit ?? workspaceLimit(workspaceId),
    readCounter(workspaceId),
  ]);
  let counter = firstRead;

  for (let attempt = 1; ; attempt++) {
    const limits = limitsOf(limit, counter);
    const cap = caps(kind, limits);
    const inUse = counter?.in_use ?? 0;
    if (inUse >= cap.max) {
      // Refused: unless this call already holds its slot (a repeated admission).
      const held = await readSlot(workspaceId, callId);
      if (held) return { burst: held.burst };
      throw concurrencyLimitReached(inUse, kind, limits);
    }
    const burst = inUse >= cap.normal;
    const settings = settingsUnchanged(counter);
    // The tier read must still hold at the write, so the burst flag is exact.
    // (An absent `in_use` is 0: below any normal cap of at least 1, inside a burst tier from 0.)
    const tier = !burst
      ? { expression: '(attribute_not_exists(in_use) OR in_use < :normal)', values: { ':normal': cap.normal } }
      : cap.normal <= 0
        ? { expression: '(attribute_not_exists(in_use) OR in_use < :max)', values: { ':max': cap.max } }
        : { expression: 'in_use >= :normal AND in_use < :max', values: { ':normal': cap.normal, ':max': cap.max } };
    const acquiredAt = now();
    const slot: SlotItem = {
      ...keys.concurrencySlot(workspaceId, callId),
      workspace_id: workspaceId,
      call_id: callId,
      kind,
      burst,
      acquired_timestamp: acquiredAt,
      token: randomBytes(9).toString('base64url'),
      ...sweepEntry(workspaceId, callId, acquiredAt + SLOT_SETUP_GRACE_MS),
    };
    const ops: TransactOp[] = [
      {
        Update: {
          Key: keys.concurrencyCounter(workspaceId),
          UpdateExpression: 'SET in_use = if_not_exists(in_use, :zero) + :one',
          ConditionExpression: `${tier.expression} AND ${settings.expression}`,
          ExpressionAttributeValues: { ':zero': 0, ':one': 1, ...tier.values, ...settings.values },
        },
      },
      { Put: { Item: slot, ConditionExpression: 'attribute_not_exists(pk)' } },
    ];
    try {
      await table.transact(ops);
      return { burst };
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) {
        // A timeout or a dropped connection: the transaction may have been applied. The
        // caller creates no call, so release what this attempt may hold (if this fails too,
        // the sweep releases it after the grace period: no call record will ever exist).
        await release(workspaceId, callId, slot.token).catch((cleanup: unknown) =>
          logger.warn('could not clean up after a failed admission', { workspace_id: workspaceId, call_id: callId, error: cleanup }),
        );
        throw error;
      }
      if (error.failedAt.includes(1)) {
        const held = await readSlot(workspaceId, callId);
        if (held) return { burst: held.burst };
      }
      if (attempt >= MAX_ATTEMPTS) throw tooBusy();
      // Another admission or release moved the counter (or the settings changed), or the
      // transaction lost a race: look again.
      if (error.conflicted) await backoff(attempt);
      counter = await readCounter(workspaceId);
    }
  }
}

/** Slots one transaction takes at most: DynamoDB's 100 operations, one of them the counter. */
const SLOTS_PER_TRANSACTION = 99;

/**
 * Takes slots for several calls of one kind in as few transactions as possible: the counter's
 * `in_use + n` conditional on `in_use` being exactly what was read (so each slot's burst flag,
 * `in_use + i` against the normal cap, is exact) and the settings unchanged, with the n slot
 * Puts. The calls are admitted in order, as many as the caps allow; the answer holds the burst
 * flag of each admitted call (a call that already held a slot is left out: it keeps its own).
 *
 * Why: a batch pass's dials each taking their own slot from the same counter serialise on it
 * (and retry on conflict); one pass reserving its dials' slots at once costs one write. The
 * invariant is unchanged: `in_use` is the number of slot items, written in the same transaction.
 */
export async function acquireSlots(input: { workspaceId: string; callIds: readonly string[]; kind: CallKind; now?: () => number }): Promise<Map<string, { burst: boolean }>> {
  const { workspaceId, kind } = input;
  const now = input.now ?? Date.now;
  const admitted = new Map<string, { burst: boolean }>();
  let waiting = [...new Set(input.callIds)];
  if (waiting.length === 0) return admitted;
  const limit = await workspaceLimit(workspaceId);
  let counter = await readCounter(workspaceId);
  for (let attempt = 1; waiting.length > 0; ) {
    const limits = limitsOf(limit, counter);
    const cap = caps(kind, limits);
    const inUse = counter?.in_use ?? 0;
    const batch = waiting.slice(0, Math.min(SLOTS_PER_TRANSACTION, Math.max(0, cap.max - inUse)));
    if (batch.length === 0) break;
    const settings = settingsUnchanged(counter);
    const slots: SlotItem[] = batch.map((callId, i) => {
      const acquiredAt = now();
      return {
        ...keys.concurrencySlot(workspaceId, callId),
        workspace_id: workspaceId,
        call_id: callId,
        kind,
        burst: inUse + i >= cap.normal,
        acquired_timestamp: acquiredAt,
        token: randomBytes(9).toString('base64url'),
        ...sweepEntry(workspaceId, callId, acquiredAt + SLOT_SETUP_GRACE_MS),
      };
    });
    const unchanged =
      counter?.in_use === undefined
        ? { expression: 'attribute_not_exists(in_use)', values: {} }
        : { expression: 'in_use = :read', values: { ':read': counter.in_use } };
    const ops: TransactOp[] = [
      {
        Update: {
          Key: keys.concurrencyCounter(workspaceId),
          UpdateExpression: 'SET in_use = if_not_exists(in_use, :zero) + :n',
          ConditionExpression: `${unchanged.expression} AND ${settings.expression}`,
          ExpressionAttributeValues: { ':zero': 0, ':n': batch.length, ...unchanged.values, ...settings.values },
        },
      },
      ...slots.map((slot): TransactOp => ({ Put: { Item: slot, ConditionExpression: 'attribute_not_exists(pk)' } })),
    ];
    try {
      await table.transact(ops);
      for (const slot of slots) admitted.set(slot.call_id, { burst: slot.burst });
      waiting = waiting.slice(batch.length);
      counter = { ...(counter ?? keys.concurrencyCounter(workspaceId)), in_use: inUse + batch.length };
      attempt = 1;
      continue;
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) {
        // The transaction may have been applied: give back what this attempt may hold, and
        // what the earlier transactions took (the caller gets none of them).
        const earlier = [...admitted.keys()].map((callId) => ({ call_id: callId, token: undefined as string | undefined }));
        await Promise.all(
          [...slots, ...earlier].map((slot) =>
            release(workspaceId, slot.call_id, slot.token).catch((cleanup: unknown) =>
              logger.warn('could not clean up after a failed admission', { workspace_id: workspaceId, call_id: slot.call_id, error: cleanup }),
            ),
          ),
        );
        throw error;
      }
      // A call that holds a slot already keeps it and is left out; the others are tried again.
      const held = new Set(error.failedAt.filter((index) => index > 0).map((index) => batch[index - 1]!));
      if (held.size > 0) waiting = waiting.filter((callId) => !held.has(callId));
      // Too busy to take the rest at once: the caller's dials take theirs one by one.
      if (attempt++ >= MAX_ATTEMPTS) break;
      if (error.conflicted) await backoff(attempt);
      counter = await readCounter(workspaceId);
    }
  }
  return admitted;
}

/**
 * Releases the call's slot. True for the one release that did it; false when the call held
 * no slot (released already, or never admitted). Safe to call from every end of a call.
 */
export async function releaseSlot(workspaceId: string, callId: string): Promise<boolean> {
  return release(workspaceId, callId);
}

async function release(workspaceId: string, callId: string, onlyToken?: string): Promise<boolean> {
  const slotCondition =
    onlyToken === undefined
      ? { ConditionExpression: 'attribute_exists(pk)' }
      : {
          // The sweep (or a cleanup) releases only the slot it means, never one the call took again since.
          ConditionExpression: '#token = :token',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':token': onlyToken },
        };
  for (let attempt = 1; ; attempt++) {
    try {
      await table.transact([
        { Delete: { Key: keys.concurrencySlot(workspaceId, callId), ...slotCondition } },
        {
          Update: {
            Key: keys.concurrencyCounter(workspaceId),
            UpdateExpression: 'SET in_use = in_use - :one',
            // Never below zero. With the counter kept in the slot's transactions this always
            // holds; were it ever broken, the slot is still released below.
            ConditionExpression: 'in_use >= :one',
            ExpressionAttributeValues: { ':one': 1 },
          },
        },
      ]);
      return true;
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) throw error;
      if (error.failedAt.includes(0)) return false;
      if (error.failedAt.includes(1)) return releaseUncounted(workspaceId, callId, slotCondition);
      if (attempt >= MAX_ATTEMPTS) throw tooBusy();
      await backoff(attempt);
    }
  }
}

/** A slot whose counter is already zero (an invariant broken by hand): delete it alone. */
async function releaseUncounted(
  workspaceId: string,
  callId: string,
  condition: { ConditionExpression: string; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, unknown> },
): Promise<boolean> {
  logger.error('concurrency slot held with the counter at zero', { workspace_id: workspaceId, call_id: callId });
  try {
    await table.delete({ Key: keys.concurrencySlot(workspaceId, callId), ...condition });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

export interface SweepOptions {
  /** The clock, epoch ms (tests). */
  now?: () => number;
  /** How long a new slot is left alone while its call is set up (default SLOT_SETUP_GRACE_MS). */
  graceMs?: number;
  /** At most this many slots are read, oldest first (slot keys end with the time-ordered call ID); all without. */
  limit?: number;
}

export interface SweepResult {
  /** Slots the sweep looked at. */
  checked: number;
  /** Calls whose slots this sweep released (not those another release got to first). */
  released: string[];
}

/** How many calls the sweep asks about at once. */
const SWEEP_PARALLELISM = 10;

/**
 * Reconciles the workspace's slots with its calls: a slot older than the grace period whose
 * call is not in progress (it ended and its instance crashed before releasing, or its record
 * was never written) is released. A call still being set up, or in progress, keeps its slot.
 * Safe beside any number of releases and other sweeps: each slot is released once.
 */
export async function sweepSlots(
  workspaceId: string,
  isCallInProgress: (callId: string) => Promise<boolean>,
  options: SweepOptions = {},
): Promise<SweepResult> {
  const now = options.now ?? Date.now;
  const graceMs = options.graceMs ?? SLOT_SETUP_GRACE_MS;
  const query = keys.concurrencySlots(workspaceId);
  const input = {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': query.pk, ':prefix': query.skPrefix },
  };
  const slots = options.limit === undefined ? await table.queryAll<SlotItem>(input) : (await table.queryPage<SlotItem>({ ...input, Limit: options.limit })).items;
  const released: string[] = [];
  for (let i = 0; i < slots.length; i += SWEEP_PARALLELISM) {
    await Promise.all(
      slots.slice(i, i + SWEEP_PARALLELISM).map(async (slot) => {
        if (slot.acquired_timestamp + graceMs > now()) return;
        if (await isCallInProgress(slot.call_id)) return;
        if (await release(workspaceId, slot.call_id, slot.token)) {
          logger.warn('released the concurrency slot of a call no longer in progress', {
            workspace_id: workspaceId,
            call_id: slot.call_id,
          });
          released.push(slot.call_id);
        }
      }),
    );
  }
  return { checked: slots.length, released };
}

/**
 * How often a workspace's on-demand sweep may run: a full workspace refuses calls many times
 * a second (a batch dialling at its numbers' CPS), and each refusal sweeping would read every
 * slot and every call again. The scheduled sweep frees crashed slots within minutes anyway.
 */
export const ON_DEMAND_SWEEP_INTERVAL_MS = 30_000;
/** The slots an on-demand sweep reads at most, oldest first (those most likely left by a crash). */
const ON_DEMAND_SWEEP_SLOTS = 100;

/**
 * The sweep a refused admission runs (a 429): at most one per workspace per
 * ON_DEMAND_SWEEP_INTERVAL_MS (a conditional write of `swept_at` on keys.concurrencySweepClaim,
 * apart from the hot counter), over the oldest ON_DEMAND_SWEEP_SLOTS slots. Undefined when
 * another ran within the interval: the refusal stands.
 */
export async function sweepSlotsWhenFull(
  workspaceId: string,
  isCallInProgress: (callId: string) => Promise<boolean>,
  options: Omit<SweepOptions, 'limit'> = {},
): Promise<SweepResult | undefined> {
  const nowMs = (options.now ?? Date.now)();
  try {
    await table.put({
      Item: { ...keys.concurrencySweepClaim(workspaceId), swept_at: nowMs, expires_at: Math.floor(nowMs / 1000) + 86_400 },
      ConditionExpression: 'attribute_not_exists(pk) OR swept_at <= :since',
      ExpressionAttributeValues: { ':since': nowMs - ON_DEMAND_SWEEP_INTERVAL_MS },
    });
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
  return sweepSlots(workspaceId, isCallInProgress, { ...options, limit: ON_DEMAND_SWEEP_SLOTS });
}

/**
 * What the scheduled sweep does with a due slot, from its call: keep it and look again at
 * `recheckAt` (epoch ms), or release it.
 */
export type SlotVerdict = { keep: true; recheckAt: number } | { keep: false };

export interface DueSweepOptions {
  /** The clock, epoch ms (tests). */
  now?: () => number;
  /** Index entries read at most per shard in one pass (the rest wait for the next pass). */
  maxPerShard?: number;
}

export interface DueSweepResult {
  /** Due slots the pass judged. */
  checked: number;
  /** Slots this pass released (not those another release got to first). */
  released: { workspace_id: string; call_id: string }[];
  /** Slots kept, whose next look was moved to their `recheckAt`. */
  rescheduled: number;
}

const SWEEP_PAGE = 100;
const SWEEP_MAX_PER_SHARD = 1000;

/**
 * The scheduled sweep (every workspace, no table scan): reads the slots the sweep index says
 * are due (keys.concurrencySweepDue: a slot is due SLOT_SETUP_GRACE_MS after it was taken, then
 * whenever a pass set it), asks `judge` about each one's call, and releases it (by its token,
 * so never a slot its call took again) or moves its next look to `recheckAt` (conditional on
 * the entry read, so two overlapping passes judge a slot once). Safe beside any number of
 * releases, on-demand sweeps and other passes: each slot is released once.
 */
export async function sweepDueSlots(judge: (slot: SlotItem) => Promise<SlotVerdict>, options: DueSweepOptions = {}): Promise<DueSweepResult> {
  const now = options.now ?? Date.now;
  const maxPerShard = options.maxPerShard ?? SWEEP_MAX_PER_SHARD;
  const startedAt = now();
  const result: DueSweepResult = { checked: 0, released: [], rescheduled: 0 };

  const sweepShard = async (shard: number) => {
    const bound = keys.concurrencySweepDueBefore(shard, startedAt);
    let startKey: Record<string, unknown> | undefined;
    for (let read = 0; read < maxPerShard; ) {
      const page = await table.dueBefore<Pick<SlotItem, 'workspace_id' | 'call_id' | 'gsi1sk'>>(bound, Math.min(SWEEP_PAGE, maxPerShard - read), startKey);
      read += page.items.length;
      for (let i = 0; i < page.items.length; i += SWEEP_PARALLELISM) {
        await Promise.all(page.items.slice(i, i + SWEEP_PARALLELISM).map((entry) => sweepOne(entry)));
      }
      startKey = page.lastKey;
      if (!startKey) break;
    }
  };

  const sweepOne = async (entry: Pick<SlotItem, 'workspace_id' | 'call_id' | 'gsi1sk'>) => {
    // The index is eventually consistent: the slot as it is now decides.
    const slot = await readSlot(entry.workspace_id, entry.call_id);
    if (!slot || slot.gsi1sk !== entry.gsi1sk) return; // released, or taken again or judged since
    result.checked++;
    const verdict = await judge(slot);
    if (verdict.keep) {
      if (await moveSweepEntry(slot, verdict.recheckAt)) result.rescheduled++;
      return;
    }
    if (await release(slot.workspace_id, slot.call_id, slot.token)) {
      logger.warn('scheduled sweep released the concurrency slot of a call no longer in progress', {
        workspace_id: slot.workspace_id,
        call_id: slot.call_id,
      });
      result.released.push({ workspace_id: slot.workspace_id, call_id: slot.call_id });
    }
  };

  await Promise.all(Array.from({ length: SLOT_SWEEP_SHARDS }, (_, shard) => sweepShard(shard)));
  return result;
}

/** Moves a kept slot's next look; false when the slot changed since it was read (released, taken again, judged by another pass). */
async function moveSweepEntry(slot: SlotItem, recheckAt: number): Promise<boolean> {
  try {
    await table.update({
      Key: keys.concurrencySlot(slot.workspace_id, slot.call_id),
      UpdateExpression: 'SET gsi1sk = :next',
      ConditionExpression: '#token = :token AND gsi1sk = :read',
      ExpressionAttributeNames: { '#token': 'token' },
      ExpressionAttributeValues: {
        ':next': sweepEntry(slot.workspace_id, slot.call_id, recheckAt).gsi1sk,
        ':token': slot.token,
        ':read': slot.gsi1sk,
      },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

// ── Reads and settings ──────────────────────────────────────────────────────────────

/** GET /get-concurrency. */
export async function getConcurrency(workspaceId: string): Promise<Concurrency> {
  const [limit, counter] = await Promise.all([workspaceLimit(workspaceId), readCounter(workspaceId)]);
  const limits = limitsOf(limit, counter);
  const purchased = Math.max(0, limit - BASE_CONCURRENCY);
  const purchaseLimit = MAX_CONCURRENCY_LIMIT - BASE_CONCURRENCY;
  return {
    current_concurrency: counter?.in_use ?? 0,
    concurrency_limit: limit,
    base_concurrency: Math.min(limit, BASE_CONCURRENCY),
    purchased_concurrency: purchased,
    reserved_inbound_concurrency: limits.reserved,
    concurrency_burst_enabled: limits.burstEnabled,
    concurrency_burst_limit: limits.burstEnabled ? burstLimit(limit) : 0,
    concurrency_purchase_limit: purchaseLimit,
    remaining_purchase_limit: purchaseLimit - purchased,
  };
}

/** GET /get-concurrency-settings. */
export async function getConcurrencySettings(workspaceId: string): Promise<ConcurrencySettings> {
  const [limit, counter] = await Promise.all([workspaceLimit(workspaceId), readCounter(workspaceId)]);
  return settingsView(limitsOf(limit, counter));
}

const settingsView = (limits: Limits): ConcurrencySettings => ({
  reserved_inbound_concurrency: limits.reserved,
  burst_enabled: limits.burstEnabled,
  concurrency_limit: limits.limit,
});

/**
 * PATCH /update-concurrency-settings: stored on the counter item (the settings admission
 * reads anyway, so admission costs no extra read). 400 when the reservation exceeds the limit.
 */
export async function updateConcurrencySettings(
  workspaceId: string,
  input: UpdateConcurrencySettingsInput,
): Promise<ConcurrencySettings> {
  const limit = await workspaceLimit(workspaceId);
  if (input.reserved_inbound_concurrency !== undefined && input.reserved_inbound_concurrency > limit) {
    throw badRequest(
      `reserved_inbound_concurrency ${input.reserved_inbound_concurrency} is above the concurrency limit ${limit}`,
    );
  }
  const sets = ['in_use = if_not_exists(in_use, :zero)'];
  const values: Record<string, unknown> = { ':zero': 0, ':one': 1 };
  if (input.reserved_inbound_concurrency !== undefined) {
    sets.push('reserved_inbound_concurrency = :reserved');
    values[':reserved'] = input.reserved_inbound_concurrency;
  }
  if (input.burst_enabled !== undefined) {
    sets.push('burst_enabled = :burst');
    values[':burst'] = input.burst_enabled;
  }
  // Bumping the revision makes every admission decided under the old settings try again.
  const counter = await table.update<CounterItem>({
    Key: keys.concurrencyCounter(workspaceId),
    UpdateExpression: `SET ${sets.join(', ')} ADD settings_rev :one`,
    ExpressionAttributeValues: values,
    ReturnValues: 'ALL_NEW',
  });
  return settingsView(limitsOf(limit, counter));
}
