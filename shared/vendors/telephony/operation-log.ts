import { randomBytes } from 'node:crypto';
import { table } from '../../platform/store/table.ts';
import { keys } from '../../platform/store/keys.ts';
import { deleteItemsMentioning } from '../../platform/store/query.ts';

/**
 * The provider operation log: one item per request Parley makes to a telephony provider
 * (the offline mock and Twilio alike), newest first, kept 30 days. Secrets are never
 * recorded (passwords appear as `[redacted]`). `GET /telephony/operations` reads it.
 */
export interface ProviderOperation {
  operation_id: string;
  provider: 'twilio' | 'mock';
  operation: string;
  request: Record<string, unknown>;
  outcome: 'ok' | 'error';
  error?: string;
  created_timestamp: number;
}

const RETENTION_SECONDS = 30 * 24 * 3600;

/** 12 hex digits of the time, then 12 random ones: IDs sort by time. */
function operationId(nowMs: number): string {
  return `op_${nowMs.toString(16).padStart(12, '0')}${randomBytes(6).toString('hex')}`;
}

export async function recordProviderOperation(
  workspaceId: string,
  entry: Omit<ProviderOperation, 'operation_id' | 'created_timestamp'>,
  nowMs = Date.now(),
): Promise<ProviderOperation> {
  const operation: ProviderOperation = { operation_id: operationId(nowMs), created_timestamp: nowMs, ...entry };
  await table.put({
    Item: {
      ...keys.providerOperation(workspaceId, operation.operation_id),
      ...operation,
      expires_at: Math.floor(nowMs / 1000) + RETENTION_SECONDS,
    },
  });
  return operation;
}

/** The workspace's provider operations, newest first (`limit` 1–1000, default 100). */
export async function listProviderOperations(
  workspaceId: string,
  options: { limit?: number } = {},
): Promise<ProviderOperation[]> {
  const { pk } = keys.providerOperations(workspaceId);
  const { items } = await table.queryPage<ProviderOperation>({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ScanIndexForward: false,
    Limit: Math.min(Math.max(options.limit ?? 100, 1), 1000),
  });
  return items.map(({ operation_id, provider, operation, request, outcome, error, created_timestamp }) => ({
    operation_id, provider, operation, request, outcome, ...(error ? { error } : {}), created_timestamp,
  })) as ProviderOperation[];
}

/**
 * A privacy erase (shared/account-data): deletes the workspace's operations whose request,
 * outcome or error quotes `text` anywhere (requests carry numbers and SMS bodies), page by
 * page. Answers how many.
 */
export function deleteProviderOperationsMentioning(workspaceId: string, text: string): Promise<number> {
  return deleteItemsMentioning(keys.providerOperations(workspaceId).pk, text);
}
