import type { CredentialItem } from '../platform/auth/credentials.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query.ts';
import { table } from '../platform/store/table.ts';

/*
 * The webhooks domain's items, each declared once with its key (the keys themselves are
 * built in shared/platform/store/keys.ts). Domain modules reach the table through these
 * and `table` (shared/platform/store/table.ts), never through key strings of their own.
 */

/** An item's key as a type alias (an interface does not satisfy the table's `Record`). */
type Keyed = { pk: string; sk: string };

/** One delivery attempt in the workspace's delivery log, sorted by its time-ordered ID; expires by TTL. */
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

export const deliveryAttempts = {
  key: keys.webhookDelivery,

  /** Records an attempt (no condition: its ID is new). */
  async put(workspaceId: string, attempt: Omit<DeliveryAttemptItem, 'pk' | 'sk'>): Promise<void> {
    await table.put({ Item: { ...keys.webhookDelivery(workspaceId, attempt.webhook_attempt_id), ...attempt } });
  },

  /** The workspace's latest attempts, newest first (one page of at most `limit`). */
  async newest(workspaceId: string, limit: number): Promise<DeliveryAttemptItem[]> {
    const { items } = await table.queryPage<DeliveryAttemptItem>({
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.webhookDeliveries(workspaceId).pk },
      ScanIndexForward: false,
      Limit: limit,
    });
    return items;
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
  let start: Record<string, unknown> | undefined;
  do {
    const page = await table.queryPage<DeliveryAttemptItem>({
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.webhookDeliveries(workspaceId).pk },
      Limit: 500,
      ...(start ? { ExclusiveStartKey: start } : {}),
    });
    for (const entry of page.items) {
      if (!JSON.stringify(entry).includes(text)) continue;
      await table.delete({ Key: keys.webhookDelivery(workspaceId, entry.webhook_attempt_id) });
      deleted++;
    }
    start = page.lastKey;
  } while (start);
  return deleted;
}
