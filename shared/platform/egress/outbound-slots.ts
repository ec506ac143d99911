import { randomBytes, randomInt } from 'node:crypto';
import { config } from '../config.ts';
import { tooManyRequests } from '../errors.ts';
import { logger } from '../logger.ts';
import { ConditionFailed, table } from '../store/table.ts';
import { keys, outboundSlotAttribute, outboundSlotOwnerAttribute, type ItemKey } from '../store/keys.ts';

/*
 * Per-workspace cap on slow outbound test requests (test webhook, workflow test, MCP tools,
 * custom LLM and SIP connection tests): each waits on an address the caller chose, for up
 * to 25 s, holding a Lambda instance; without a cap one workspace could hold the account's
 * whole Lambda concurrency with them.
 *
 * A semaphore held in the table, so it holds across every instance: the workspace's slot
 * item has OUTBOUND_TEST_CONCURRENCY slots, slot i being the attribute `s<i>` (the epoch ms
 * at which its lease ends) and `o<i>` (a random token naming the holder). Taking slot i is
 * one conditional UpdateItem, `SET s<i> = now + lease` if it is absent or its lease has
 * ended; DynamoDB applies conditional writes to an item one at a time, so two requests
 * never hold the same slot. Releasing removes the slot if the token is still ours. A
 * Lambda that dies mid-request releases nothing, and its slot comes back when the lease
 * ends: the lease (30 s) outlasts the API functions' 29 s timeout, so a live request never
 * loses its slot. With every slot held, the request is refused at once with 429 and a
 * retry-after (no waiting: the caller's request is itself slow).
 */

/** A slot's lease: longer than any API request may run (API functions time out at 29 s). */
export const OUTBOUND_SLOT_LEASE_MS = 30_000;
/** The longest retry-after answered: slots usually come back long before their lease ends. */
const MAX_RETRY_AFTER_SECONDS = 5;
/** The slot item expires (TTL) this long after its last lease would have ended. */
const IDLE_TTL_SECONDS = 300;

export interface SlotOptions {
  /** Slots per workspace (default OUTBOUND_TEST_CONCURRENCY). */
  cap?: number;
  /** The clock (tests). */
  now?: () => number;
  /**
   * Another of the workspace's semaphores with the same mechanics: its slot item, its lease
   * (longer than its holders may run) and the refusal when every slot is held. Without it,
   * the outbound test slots.
   */
  semaphore?: { key: ItemKey; leaseMs: number; refused: (cap: number, retryAfterSeconds: number) => Error };
}

export interface OutboundSlot {
  index: number;
  release(): Promise<void>;
}

const outboundLimitReached = (cap: number, retryAfterSeconds: number) =>
  tooManyRequests(
    `Outbound test request limit reached: ${cap} at a time per workspace (test webhook, workflow tests, MCP tools, connection tests). Retry in ${retryAfterSeconds}s.`,
    retryAfterSeconds,
    'outbound',
  );

/** Takes one of the workspace's slots or throws 429. */
export async function acquireOutboundSlot(workspaceId: string, options: SlotOptions = {}): Promise<OutboundSlot> {
  const cap = options.cap ?? config.OUTBOUND_TEST_CONCURRENCY;
  const now = options.now ?? Date.now;
  const key = options.semaphore?.key ?? keys.outboundSlots(workspaceId);
  const leaseMs = options.semaphore?.leaseMs ?? OUTBOUND_SLOT_LEASE_MS;
  const refused = options.semaphore?.refused ?? outboundLimitReached;
  const owner = randomBytes(9).toString('base64url');

  const tryTake = async (index: number): Promise<OutboundSlot | undefined> => {
    const at = now();
    try {
      await table.update({
        Key: key,
        UpdateExpression: 'SET #slot = :until, #owner = :owner, expires_at = :expires',
        ConditionExpression: 'attribute_not_exists(#slot) OR #slot <= :now',
        ExpressionAttributeNames: { '#slot': outboundSlotAttribute(index), '#owner': outboundSlotOwnerAttribute(index) },
        ExpressionAttributeValues: {
          ':now': at,
          ':until': at + leaseMs,
          ':owner': owner,
          ':expires': Math.ceil((at + leaseMs) / 1000) + IDLE_TTL_SECONDS,
        },
      });
    } catch (error) {
      if (error instanceof ConditionFailed) return undefined;
      throw error;
    }
    return { index, release: () => releaseSlot(workspaceId, key, index, owner) };
  };

  // Not busy is the common case: one write, no read.
  const first = await tryTake(randomInt(cap));
  if (first) return first;
  // A few rounds: others may take the slots this one saw free.
  for (let round = 0; round < 3; round++) {
    const read = await table.get(key);
    const at = now();
    const leases = Array.from({ length: cap }, (_, i) => {
      const value = read?.[outboundSlotAttribute(i)];
      return typeof value === 'number' ? value : 0;
    });
    const free = leases.flatMap((until, i) => (until <= at ? [i] : []));
    if (free.length === 0) {
      const retryAfter = Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil((Math.min(...leases) - at) / 1000)));
      throw refused(cap, retryAfter);
    }
    for (const index of free) {
      const slot = await tryTake(index);
      if (slot) return slot;
    }
  }
  throw refused(cap, 1);
}

async function releaseSlot(workspaceId: string, key: ItemKey, index: number, owner: string): Promise<void> {
  try {
    await table.update({
      Key: key,
      UpdateExpression: 'REMOVE #slot, #owner',
      // A lease that ended and was taken by another request is theirs now.
      ConditionExpression: '#owner = :owner',
      ExpressionAttributeNames: { '#slot': outboundSlotAttribute(index), '#owner': outboundSlotOwnerAttribute(index) },
      ExpressionAttributeValues: { ':owner': owner },
    });
  } catch (error) {
    // The lease ends by itself; a failed release only keeps the slot until then.
    if (!(error instanceof ConditionFailed)) logger.warn('could not release a workspace slot', { workspace_id: workspaceId, pk: key.pk, error });
  }
}

/** Runs `work` holding one of the workspace's outbound test slots (429 when all are held). */
export async function withOutboundSlot<T>(workspaceId: string, work: () => Promise<T> | T, options: SlotOptions = {}): Promise<T> {
  const slot = await acquireOutboundSlot(workspaceId, options);
  try {
    return await work();
  } finally {
    await slot.release();
  }
}
