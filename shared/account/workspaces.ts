import { GetCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { auditPut } from './audit-log.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { credentialPuts, issueSecret } from '../platform/auth/credentials.ts';
import { notFound } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import type {
  UpdateWorkspaceInput,
  UpdateWorkspaceSettingsInput,
  Workspace,
  WorkspaceSettings,
} from './routes.ts';
import { db, tableName } from '../platform/store/db.ts';
import { keys, type ItemKey } from '../platform/store/keys.ts';
import { setOrRemove } from '../platform/store/update-expression.ts';

export const DEFAULT_CONCURRENCY_LIMIT = 20;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
export const DEFAULT_KEY_NAME = 'Default key';

export interface WorkspaceItem extends ItemKey {
  workspace_id: string;
  name: string;
  webhook_url?: string;
  concurrency_limit: number;
  created_timestamp: number;
  webhook_timeout_ms?: number;
  /** The key that signs webhooks; absent after it was deleted (signing then uses the oldest key). */
  webhook_key_id?: string;
  webhook_key_credential?: string;
}

export function toWorkspace(item: WorkspaceItem): Workspace {
  return {
    workspace_id: item.workspace_id,
    name: item.name,
    webhook_url: item.webhook_url ?? null,
    concurrency_limit: item.concurrency_limit,
    created_timestamp: item.created_timestamp,
  };
}

export async function getWorkspaceItem(workspaceId: string): Promise<WorkspaceItem> {
  const out = await db.send(
    new GetCommand({ TableName: tableName, Key: keys.workspace(workspaceId), ConsistentRead: true }),
  );
  if (!out.Item) throw notFound('Workspace not found');
  return out.Item as WorkspaceItem;
}

export interface CreatedWorkspace {
  workspace_id: string;
  name: string;
  api_key: string;
}

/** A workspace with its first key, "Default key", which is also its webhook key. One transaction. */
export async function createWorkspace(name: string, nowMs = Date.now()): Promise<CreatedWorkspace> {
  const workspaceId = newId('workspace');
  const secret = await issueSecret('secret', workspaceId);
  const workspace: WorkspaceItem = {
    ...keys.workspace(workspaceId),
    workspace_id: workspaceId,
    name,
    concurrency_limit: DEFAULT_CONCURRENCY_LIMIT,
    created_timestamp: nowMs,
    webhook_key_id: secret.id,
    webhook_key_credential: secret.hash,
  };
  await db.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: tableName, Item: workspace, ConditionExpression: 'attribute_not_exists(pk)' } },
        {
          Put: {
            TableName: tableName,
            Item: { ...keys.workspaceRegistration(workspaceId), created_timestamp: nowMs },
          },
        },
        ...credentialPuts(workspaceId, secret, {
          kind: 'secret',
          name: DEFAULT_KEY_NAME,
          is_webhook_key: true,
          scopes: [],
          allowed_ips: [],
        }, nowMs),
        auditPut(workspaceId, undefined, {
          action: 'api_key.create',
          target: { type: 'api_key', id: secret.id },
          changes: ['name', 'is_webhook_key'],
        }, nowMs),
      ],
    }),
  );
  return { workspace_id: workspaceId, name, api_key: secret.value };
}

export async function hasAnyWorkspace(): Promise<boolean> {
  const out = await db.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.workspaceRegistry().pk },
      Limit: 1,
    }),
  );
  return (out.Items?.length ?? 0) > 0;
}

export async function getWorkspace(workspaceId: string): Promise<Workspace> {
  return toWorkspace(await getWorkspaceItem(workspaceId));
}

export async function updateWorkspace(principal: Principal, input: UpdateWorkspaceInput): Promise<Workspace> {
  await applyWorkspaceChange(principal, 'workspace.update', input);
  return getWorkspace(principal.workspaceId);
}

export function toSettings(item: WorkspaceItem): WorkspaceSettings {
  return { webhook_timeout_ms: item.webhook_timeout_ms ?? DEFAULT_WEBHOOK_TIMEOUT_MS };
}

export async function getWorkspaceSettings(workspaceId: string): Promise<WorkspaceSettings> {
  return toSettings(await getWorkspaceItem(workspaceId));
}

export async function updateWorkspaceSettings(
  principal: Principal,
  input: UpdateWorkspaceSettingsInput,
): Promise<WorkspaceSettings> {
  await applyWorkspaceChange(principal, 'workspace.settings.update', input);
  return getWorkspaceSettings(principal.workspaceId);
}

/** SETs the given fields, REMOVEs those given as null, with the audit entry in the same transaction. */
async function applyWorkspaceChange(
  principal: Principal,
  action: 'workspace.update' | 'workspace.settings.update',
  changes: Record<string, unknown>,
  nowMs = Date.now(),
): Promise<void> {
  const fields = Object.keys(changes).filter((field) => changes[field] !== undefined);
  if (fields.length === 0) return;
  await db.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: tableName,
            Key: keys.workspace(principal.workspaceId),
            ConditionExpression: 'attribute_exists(pk)',
            ...setOrRemove(changes),
          },
        },
        auditPut(principal.workspaceId, principal, {
          action,
          target: { type: 'workspace', id: principal.workspaceId },
          changes: fields,
        }, nowMs),
      ],
    }),
  );
}
