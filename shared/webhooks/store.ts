import { createHash } from 'node:crypto';
import { notFound } from '../platform/errors.ts';
import type { CredentialItem } from '../platform/auth/credentials.ts';
import { keys } from '../platform/store/keys.ts';
import { deleteItemsMentioning, queryAll } from '../platform/store/query.ts';
import { firstEntries, mergedEntries, shardReadSizes } from '../platform/store/sharded-listing.ts';
import { ConditionFailed, defineEntity, table } from '../platform/store/table.ts';

/*
 * The webhooks domain's items, each declared once with its key (the keys themselves are
 * built in shared/platform/store/keys.ts). Domain modules reach the table through these
 * and `table` (shared/platform/store/table.ts), never through key strings of their own.
 */

/** An item's key as a type alias (an interface does not satisfy the table's `Record`). */
type Keyed = { pk: string; sk: string };

/** One delivery attempt in a shard of the workspace's delivery log, sorted by its time-ordered ID; expires by TTL. */
export type DeliveryAttemptItem = Keyed & {
  webhook_attempt_id: string;
  webhook_delivery_id: string;
  event: string;
  url: string;
  attempt: number;
  success: boolean;
  status: number | null;
  error: string | null;
  latency_ms: number;
  will_retry: boolean;
  test: boolean;
  created_timestamp: number;
  expires_at: number;
};

/**
 * A workspace's delivery log is spread over this many partitions, the shard taken from the
 * attempt ID's hash: a receiver that is down makes four attempts a delivery, so the target
 * workspace's 350 deliveries a second can write 1,400 entries a second, more than one
 * partition takes (about 1,000 writes a second); four shards take 350 each.
 */
const DELIVERY_LOG_SHARDS = 4;
const deliveryShardOf = (attemptId: string): number => createHash('sha256').update(attemptId).digest()[0]! % DELIVERY_LOG_SHARDS;
export const deliveryLogPartitions = (workspaceId: string): string[] =>
  Array.from({ length: DELIVERY_LOG_SHARDS }, (_, shard) => keys.webhookDeliveries(workspaceId, shard).pk);

export const deliveryAttempts = {
  /** Records an attempt (no condition: its ID is new, or the same attempt recorded again). */
  async put(workspaceId: string, attempt: Omit<DeliveryAttemptItem, 'pk' | 'sk'>): Promise<void> {
    const id = attempt.webhook_attempt_id;
    await table.put({ Item: { ...keys.webhookDelivery(workspaceId, deliveryShardOf(id), id), ...attempt } });
  },

  /**
   * The workspace's attempts newest first, strictly older than the attempt `before` (the
   * previous page's last ID) when given: the shards are read from that point and merged by
   * ID, which orders by time and never ties, so pages neither skip nor repeat an entry.
   */
  async newest(workspaceId: string, limit: number, before?: string): Promise<DeliveryAttemptItem[]> {
    return firstEntries(
      mergedEntries<DeliveryAttemptItem>({
        gsi1pks: deliveryLogPartitions(workspaceId),
        onTable: true,
        ascending: false,
        after: before,
        idOf: (entry) => entry.webhook_attempt_id,
        ...shardReadSizes(limit, DELIVERY_LOG_SHARDS, false),
      }),
      limit,
    );
  },
};

/**
 * Bodies too large for a queue message, kept beside it in parts (each well under DynamoDB's
 * 400 KB item limit) until the delivery's last attempt; `expires_at` outlives the queue's
 * retention, so a part is never gone while its message may still arrive.
 */
export const webhookBodies = {
  async put(workspaceId: string, deliveryId: string, parts: readonly string[], expiresAt: number): Promise<void> {
    await table.batchPut(parts.map((part, index) => ({ ...keys.webhookBodyPart(deliveryId, index), workspace_id: workspaceId, part, expires_at: expiresAt })));
  },

  /** The parts in order; fewer than `count` when some are gone. */
  async read(deliveryId: string): Promise<string[]> {
    return (await queryAll<{ part: string }>(keys.webhookBodyParts(deliveryId))).map((item) => item.part);
  },

  async remove(deliveryId: string, count: number): Promise<void> {
    await table.batchDelete(Array.from({ length: count }, (_, index) => keys.webhookBodyPart(deliveryId, index)));
  },
};

/** What one POST of an attempt answered, kept on its claim until the attempt is recorded. */
export interface AttemptOutcomeRecord {
  success: boolean;
  status: number | null;
  error: string | null;
  latency_ms: number;
  started_at: number;
}

/**
 * The claim of one attempt of a delivery: at most one consumer holds it at a time, so one
 * queue message handled twice makes one POST. `claimed` (its holder is at work, or died
 * before its POST was answered), `posted` (the POST's outcome is saved; the log entry or
 * the retry may not be), `done` (recorded, the retry if any queued). Expires by TTL.
 */
export type AttemptClaimItem = Keyed & {
  workspace_id: string;
  webhook_delivery_id: string;
  attempt: number;
  state: 'claimed' | 'posted' | 'done';
  /** The consumer holding the claim (a random token per handling). */
  holder: string;
  /** Epoch ms: until then no other consumer may take the claim, unless it is done. */
  lease_until: number;
  /** The delivery log entry's ID, chosen by the first claim: recording again overwrites the same entry. */
  webhook_attempt_id: string;
  outcome?: AttemptOutcomeRecord;
  expires_at: number;
};

export interface ClaimRequest {
  workspaceId: string;
  deliveryId: string;
  attempt: number;
  holder: string;
  /** The log entry's ID if this claim is the first. */
  attemptId: string;
  nowMs: number;
  leaseUntil: number;
  expiresAt: number;
}

const claimNames = { '#state': 'state', '#attempt': 'attempt' };
const claimEntity = defineEntity<AttemptClaimItem, [workspaceId: string, deliveryId: string, attempt: number]>({
  key: keys.webhookAttemptClaim,
  notFound: (_workspaceId, deliveryId, attempt) => notFound(`Attempt ${attempt} of delivery ${deliveryId} not found`),
});

export const attemptClaims = {
  key: keys.webhookAttemptClaim,

  /**
   * Takes the attempt for `holder` when no one has it, or when it is not done and its
   * holder's lease has ended (that consumer died). The first claim's log entry ID and an
   * earlier holder's saved outcome are kept. Answers `claim` (the item as it now is) when
   * taken, else `current` (the item that stands in the way).
   */
  async claim(request: ClaimRequest): Promise<{ claim: AttemptClaimItem } | { current: AttemptClaimItem | undefined }> {
    try {
      const claim = await table.update<AttemptClaimItem>({
        Key: keys.webhookAttemptClaim(request.workspaceId, request.deliveryId, request.attempt),
        UpdateExpression:
          'SET workspace_id = :ws, webhook_delivery_id = :delivery, #attempt = :attempt, holder = :holder, lease_until = :lease, ' +
          'expires_at = :expires, #state = if_not_exists(#state, :claimed), webhook_attempt_id = if_not_exists(webhook_attempt_id, :attemptId)',
        ConditionExpression: 'attribute_not_exists(pk) OR (#state <> :done AND lease_until <= :now)',
        ExpressionAttributeNames: claimNames,
        ExpressionAttributeValues: {
          ':ws': request.workspaceId,
          ':delivery': request.deliveryId,
          ':attempt': request.attempt,
          ':holder': request.holder,
          ':lease': request.leaseUntil,
          ':expires': request.expiresAt,
          ':claimed': 'claimed',
          ':attemptId': request.attemptId,
          ':done': 'done',
          ':now': request.nowMs,
        },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
      return { claim: claim! };
    } catch (error) {
      if (error instanceof ConditionFailed) return { current: error.item as AttemptClaimItem | undefined };
      throw error;
    }
  },

  /** Saves the POST's outcome while `holder` still holds the claim; false when it no longer does. */
  async savePosted(claim: AttemptClaimItem, holder: string, outcome: AttemptOutcomeRecord): Promise<boolean> {
    const saved = await claimEntity.update([claim.workspace_id, claim.webhook_delivery_id, claim.attempt], {
      UpdateExpression: 'SET #state = :posted, outcome = :outcome',
      ConditionExpression: 'holder = :holder AND #state = :claimed',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':posted': 'posted', ':outcome': outcome, ':holder': holder, ':claimed': 'claimed' },
    });
    return saved !== undefined;
  },

  /** Marks the attempt done (recorded, retry queued): every later copy of its message does nothing. */
  async finish(claim: AttemptClaimItem, holder: string): Promise<void> {
    // Refused when a consumer that found the lease ended took the attempt over: it finishes it.
    await claimEntity.update([claim.workspace_id, claim.webhook_delivery_id, claim.attempt], {
      UpdateExpression: 'SET #state = :done',
      ConditionExpression: 'holder = :holder',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':done': 'done', ':holder': holder },
    });
  },
};

/** A credential (the platform's item) by the hash of its value, as the workspace's webhook key names it. */
export const credentialByHash = (hash: string): Promise<CredentialItem | undefined> => table.get<CredentialItem>(keys.credential(hash));

/** The workspace's pointers to its secret API keys (signing falls back to the oldest key). */
export const apiKeyRefs = keys.apiKeyRefs;

/**
 * A privacy erase (shared/account-data, through index.ts): deletes the workspace's delivery
 * log entries that quote `text` anywhere (an entry about the person goes whole), page by
 * page. Answers how many.
 */
export async function deleteDeliveriesMentioning(workspaceId: string, text: string): Promise<number> {
  let deleted = 0;
  for (const pk of deliveryLogPartitions(workspaceId)) deleted += await deleteItemsMentioning(pk, text);
  return deleted;
}
