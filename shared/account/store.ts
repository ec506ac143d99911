import type { CredentialItem } from '../platform/auth/credentials.ts';
import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { listingCountsCompleteOp } from '../platform/store/listing-count.ts';
import { defineEntity, table, type TransactOp } from '../platform/store/table.ts';
import type { AuditEntry } from './schemas.ts';

/*
 * The account domain's items, each declared once with its key (the keys themselves are
 * built in shared/platform/store/keys.ts). Domain modules reach the table through these
 * and `table` (shared/platform/store/table.ts), never through key strings of their own.
 * Credentials (secret and public keys) are the platform's (shared/platform/auth/credentials.ts);
 * only the keys by which this domain addresses them are named here.
 */

/** An item's key as a type alias (an interface does not satisfy defineEntity's `Record`). */
type Keyed = { pk: string; sk: string };

// ── Workspaces ──────────────────────────────────────────────────────────────────────

export type WorkspaceItem = Keyed & {
  workspace_id: string;
  name: string;
  webhook_url?: string;
  concurrency_limit: number;
  created_timestamp: number;
  webhook_timeout_ms?: number;
  /** The key that signs webhooks; absent after it was deleted (signing then uses the oldest key). */
  webhook_key_id?: string;
  webhook_key_credential?: string;
  /** Counts renames; each credential holds the name as of one (see org-name.ts). Absent: never renamed. */
  name_rev?: number;
  /** Set by POST /workspace/delete: the workspace answers as absent while its purge runs. */
  deleted_timestamp?: number;
};

export const workspaces = defineEntity<WorkspaceItem, [workspaceId: string]>({
  key: keys.workspace,
  notFound: () => notFound('Workspace not found'),
});

/** The workspace's entry in the registry of all workspaces (its ID is new, so no condition). */
export const workspaceRegistrationOp = (workspaceId: string, createdTimestamp: number): TransactOp => ({
  Put: { Item: { ...keys.workspaceRegistration(workspaceId), created_timestamp: createdTimestamp } },
});

/** The mark that a new workspace's calls and chats are counted from its start (listing totals need no backfill). */
export const countedFromStartOp = (workspaceId: string, nowMs: number): TransactOp => listingCountsCompleteOp(keys.listingCountsComplete(workspaceId), nowMs);

/** Whether the registry holds any workspace (one item of one page). */
export async function anyWorkspaceRegistered(): Promise<boolean> {
  const { items } = await table.queryPage({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.workspaceRegistry().pk },
    Limit: 1,
  });
  return items.length > 0;
}

/** Every workspace's ID, oldest registration first as the keys sort (billing's hourly run). */
export async function registeredWorkspaceIds(): Promise<string[]> {
  const items = await table.queryAll<{ sk: string }>({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.workspaceRegistry().pk },
    ProjectionExpression: 'sk',
  });
  return items.map((item) => item.sk);
}

// ── Credentials (the platform's items), as this domain addresses them ───────────────

export const credentialKey = keys.credential;
export const apiKeyRef = keys.apiKeyRef;
export const apiKeyRefs = keys.apiKeyRefs;
export const publicKeyRef = keys.publicKeyRef;
export const publicKeyRefs = keys.publicKeyRefs;
/** A member (the members domain's item): a key's creation checks its creator's role on it. */
export const memberKey = keys.member;
/** A credential's own key, from the item as read. */
export const credentialItemKey = (credential: CredentialItem) => ({ pk: credential.pk, sk: credential.sk });


// ── Audit log ───────────────────────────────────────────────────────────────────────

/** An audit entry as stored: the wire entry, sorted by its time-ordered ID in the workspace's audit partition. */
export type AuditEntryItem = Keyed & AuditEntry;

/** The Put of an entry (no condition: its ID is new), for the transaction of the change it records. */
export const auditEntryOp = (workspaceId: string, entry: AuditEntry): TransactOp => ({
  Put: { Item: { ...keys.auditEntry(workspaceId, entry.audit_log_id), ...entry } },
});

/** One page of a workspace's audit entries, newest first, after the entry `after` when given. */
export async function auditEntriesPage(workspaceId: string, options: { limit: number; after?: string }): Promise<AuditEntryItem[]> {
  const { items } = await table.queryPage<AuditEntryItem>({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.auditLog(workspaceId).pk },
    ScanIndexForward: false,
    Limit: options.limit,
    ExclusiveStartKey: options.after ? keys.auditEntry(workspaceId, options.after) : undefined,
  });
  return items;
}

/** Audit entries of the workspace whose target is `e164` get the masked number instead. Answers how many. */
export async function maskAuditTargets(workspaceId: string, e164: string, masked: string): Promise<number> {
  const log = keys.auditLog(workspaceId);
  const entries = await table.queryAll<{ sk: string }>({
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: 'target.id = :number',
    ExpressionAttributeValues: { ':pk': log.pk, ':number': e164 },
    ProjectionExpression: 'sk',
  });
  for (const entry of entries) {
    await table.update({
      Key: keys.auditEntry(workspaceId, entry.sk),
      UpdateExpression: 'SET target.id = :masked',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':masked': masked },
    });
  }
  return entries.length;
}

// Reliability settings (PUT /workspace/reliability, shared/account-data): attributes of the workspace item.

export interface ReliabilityAttributes {
  llm_token_limit?: number;
  fallback_llm_model?: string | null;
  fallback_voice_ids?: string[];
}

/** The Update of the workspace item that sets the given settings (null removes the fallback model). */
export function reliabilityUpdate(workspaceId: string, input: ReliabilityAttributes): TransactOp {
  const sets: string[] = [];
  const removes: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (value === null) removes.push(name);
    else {
      sets.push(`${name} = :${name}`);
      values[`:${name}`] = value;
    }
  }
  const expression = [sets.length ? `SET ${sets.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].filter(Boolean).join(' ');
  return {
    Update: {
      Key: keys.workspace(workspaceId),
      UpdateExpression: expression,
      ConditionExpression: 'attribute_exists(pk)',
      ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
    },
  };
}
