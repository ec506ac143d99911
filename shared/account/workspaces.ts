import { auditPut } from './audit-log.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { credentialPuts, issueSecret } from '../platform/auth/credentials.ts';
import { newId } from '../platform/ids.ts';
import type { UpdateWorkspaceInput, UpdateWorkspaceSettingsInput, Workspace, WorkspaceSettings } from './schemas.ts';
import { table } from '../platform/store/table.ts';
import { setOrRemove } from '../platform/store/update-expression.ts';
import { anyWorkspaceRegistered, workspaceRegistrationOp, workspaces, type WorkspaceItem } from './store.ts';

export type { WorkspaceItem } from './store.ts';

export const DEFAULT_CONCURRENCY_LIMIT = 20;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
export const DEFAULT_KEY_NAME = 'Default key';

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
  return workspaces.mustGet(workspaceId);
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
  const workspace: Omit<WorkspaceItem, 'pk' | 'sk'> = {
    workspace_id: workspaceId,
    name,
    concurrency_limit: DEFAULT_CONCURRENCY_LIMIT,
    created_timestamp: nowMs,
    webhook_key_id: secret.id,
    webhook_key_credential: secret.hash,
  };
  await table.transact([
    workspaces.createOp(workspace, workspaceId),
    workspaceRegistrationOp(workspaceId, nowMs),
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
  ]);
  return { workspace_id: workspaceId, name, api_key: secret.value };
}

export async function hasAnyWorkspace(): Promise<boolean> {
  return anyWorkspaceRegistered();
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
  await table.transact([
    {
      Update: {
        Key: workspaces.key(principal.workspaceId),
        ConditionExpression: 'attribute_exists(pk)',
        ...setOrRemove(changes),
      },
    },
    auditPut(principal.workspaceId, principal, {
      action,
      target: { type: 'workspace', id: principal.workspaceId },
      changes: fields,
    }, nowMs),
  ]);
}
