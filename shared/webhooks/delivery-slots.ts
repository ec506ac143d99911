import { randomBytes, randomInt } from 'node:crypto';
import { logger } from '../platform/logger.ts';
import { keys, outboundSlotAttribute, outboundSlotOwnerAttribute } from '../platform/store/keys.ts';
import { ConditionFailed, table } from '../platform/store/table.ts';

/*
 * Per-workspace fairness of webhook delivery (docs/webhooks.md, "Fairness"). Every consumer
 * shares one queue and one pool of executions; a workspace whose receiver answers in 10 s,
 * or never, would otherwise hold as many of them as its events fill. So a delivery first
 * takes one of its workspace's in-flight slots, and one that finds them all taken is sent
 * back to the queue with a delay instead of waiting in a function: the workspace's slow
 * receiver holds at most its cap of deliveries, and every other workspace's deliveries go
 * straight through.
 *
 * A semaphore held in the table, exact across every consumer: the cap is split over group
 * items of SLOTS_PER_GROUP slots, each group an item in its own partition (so a busy
 * workspace's slot writes spread, and each write stays one write unit). Slot i of a group is
 * the attribute `s<i>` (the epoch ms its lease ends) and `o<i>` (the holder's token). Taking
 * it is one conditional UpdateItem (absent, or its lease ended), which DynamoDB applies to an
 * item one at a time, so no two deliveries hold one slot and never more than the cap hold
 * slots at once. Releasing removes it if the token is still the holder's. A consumer that
 * dies releases nothing; its slot comes back when its lease (the invocation's remaining time
 * plus a margin) ends. The common case costs two writes (take, release) and no read.
 */

/** ~30 bytes a slot: a group item stays under 1 KB, one write unit a write. */
const SLOTS_PER_GROUP = 25;
/** Groups tried before the delivery is deferred (a full group is read once for its free slots). */
const GROUPS_TRIED = 2;
/** Free slots of a read group tried before the next group. */
const FREE_SLOTS_TRIED = 3;
/** A group item expires (TTL) this long after its last lease would have ended. */
const IDLE_TTL_SECONDS = 300;

/**
 * In-flight deliveries a workspace may hold: 4 per call of its concurrent-call limit (a call
 * sends about 0.35 deliveries a second; at a 10 s receiver that is 3.5 in flight), at least
 * 100 (a small workspace's bursts: batch events, chats), at most 3,500 (the target workspace's
 * 350 deliveries a second at 10 s, and 70% of the platform's 5,000: docs/scale.md, "Webhook delivery").
 */
const PER_CONCURRENT_CALL = 4;
const MIN_IN_FLIGHT = 100;
const MAX_IN_FLIGHT = 3_500;

/**
 * The cap of a workspace whose receiver is slower than the sizing assumes (an attempt that
 * timed out, or took SLOW_ATTEMPT_MS or more): a batch's execution ends with its slowest
 * delivery, so a workspace holds up to its cap in *executions*, and the 400 the consumer has
 * are shared by everyone. At 25, one such workspace holds at most 25 of them (the largest
 * workspace's 3,500 would hold all), and it takes 16 slow at once to fill them.
 */
const SLOW_RECEIVER_CAP = 25;
/** An attempt this slow (or one that timed out) marks its workspace's receiver slow: 10 s is what the sizing assumes. */
export const SLOW_ATTEMPT_MS = 10_000;
/** How long the mark lasts after the last slow attempt that renewed it. */
const SLOW_FOR_MS = 5 * 60_000;
/** A process renews the mark at most this often per workspace (its slow attempts come in waves). */
const SLOW_RENEW_MS = 60_000;

export function deliveryCap(concurrencyLimit: number): number {
  return Math.min(MAX_IN_FLIGHT, Math.max(MIN_IN_FLIGHT, PER_CONCURRENT_CALL * concurrencyLimit));
}

/** Every partition the workspace's slot groups may be in, whatever its cap was (the purge empties them). */
export function deliverySlotPartitions(workspaceId: string): string[] {
  return Array.from({ length: Math.ceil(MAX_IN_FLIGHT / SLOTS_PER_GROUP) }, (_, group) => keys.webhookDeliverySlots(workspaceId, group).pk);
}

/** The cap while the workspace's receiver is slow. */
export const slowReceiverCap = (cap: number): number => Math.min(cap, SLOW_RECEIVER_CAP);

/** Until when the workspace's receiver counts as slow (epoch ms; 0 when it does not). */
export async function receiverSlowUntil(workspaceId: string): Promise<number> {
  const item = await table.get<{ slow_until?: number }>(keys.webhookSlowReceiver(workspaceId));
  return item?.slow_until ?? 0;
}

const renewedAt = new Map<string, number>();

/**
 * Marks the workspace's receiver slow for SLOW_FOR_MS from `nowMs` (one Put, at most once a
 * minute per workspace from a process); answers the new mark's end, or undefined when this
 * process renewed it within the minute.
 */
export async function markReceiverSlow(workspaceId: string, nowMs: number): Promise<number | undefined> {
  const last = renewedAt.get(workspaceId);
  if (last !== undefined && nowMs - last < SLOW_RENEW_MS) return undefined;
  renewedAt.set(workspaceId, nowMs);
  if (renewedAt.size > 10_000) renewedAt.delete(renewedAt.keys().next().value!);
  const until = nowMs + SLOW_FOR_MS;
  await table.put({ Item: { ...keys.webhookSlowReceiver(workspaceId), slow_until: until, expires_at: Math.ceil(until / 1000) + IDLE_TTL_SECONDS } });
  return until;
}

export interface DeliverySlot {
  release(): Promise<void>;
}

/** Takes one of the workspace's `cap` slots until `leaseMs` from now; undefined when every slot tried is held. */
export async function acquireDeliverySlot(
  workspaceId: string,
  cap: number,
  options: { leaseMs: number; now: () => number },
): Promise<DeliverySlot | undefined> {
  const groups = Math.ceil(cap / SLOTS_PER_GROUP);
  const slotsIn = (group: number) => Math.min(SLOTS_PER_GROUP, cap - group * SLOTS_PER_GROUP);
  const holder = randomBytes(9).toString('base64url');

  const tryTake = async (group: number, index: number): Promise<DeliverySlot | undefined> => {
    const at = options.now();
    const until = at + options.leaseMs;
    try {
      await table.update({
        Key: keys.webhookDeliverySlots(workspaceId, group),
        UpdateExpression: 'SET #slot = :until, #owner = :owner, expires_at = :expires',
        ConditionExpression: 'attribute_not_exists(#slot) OR #slot <= :now',
        ExpressionAttributeNames: { '#slot': outboundSlotAttribute(index), '#owner': outboundSlotOwnerAttribute(index) },
        ExpressionAttributeValues: { ':now': at, ':until': until, ':owner': holder, ':expires': Math.ceil(until / 1000) + IDLE_TTL_SECONDS },
      });
    } catch (error) {
      if (error instanceof ConditionFailed) return undefined;
      throw error;
    }
    return { release: () => releaseSlot(workspaceId, group, index, holder) };
  };

  const first = randomInt(groups);
  for (let tried = 0; tried < Math.min(GROUPS_TRIED, groups); tried++) {
    const group = (first + tried) % groups;
    // Not busy is the common case: one write, no read.
    const slot = await tryTake(group, randomInt(slotsIn(group)));
    if (slot) return slot;
    const item = await table.get(keys.webhookDeliverySlots(workspaceId, group));
    const at = options.now();
    const free = Array.from({ length: slotsIn(group) }, (_, index) => index).filter((index) => {
      const lease = item?.[outboundSlotAttribute(index)];
      return typeof lease !== 'number' || lease <= at;
    });
    // A few of the free ones, from a random point: others are taking them too.
    const start = free.length ? randomInt(free.length) : 0;
    for (let k = 0; k < Math.min(FREE_SLOTS_TRIED, free.length); k++) {
      const taken = await tryTake(group, free[(start + k) % free.length]!);
      if (taken) return taken;
    }
  }
  return undefined;
}

async function releaseSlot(workspaceId: string, group: number, index: number, holder: string): Promise<void> {
  try {
    await table.update({
      Key: keys.webhookDeliverySlots(workspaceId, group),
      UpdateExpression: 'REMOVE #slot, #owner',
      // A lease that ended and was taken by another delivery is theirs now.
      ConditionExpression: '#owner = :owner',
      ExpressionAttributeNames: { '#slot': outboundSlotAttribute(index), '#owner': outboundSlotOwnerAttribute(index) },
      ExpressionAttributeValues: { ':owner': holder },
    });
  } catch (error) {
    // The lease ends by itself; a failed release only keeps the slot until then.
    if (!(error instanceof ConditionFailed)) logger.warn('could not release a webhook delivery slot', { workspace_id: workspaceId, error });
  }
}
