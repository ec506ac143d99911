import { auditPut } from './audit-log.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { credentialPuts, issueSecret } from '../platform/auth/credentials.ts';
import { newId } from '../platform/ids.ts';
import type { UpdateWorkspaceInput, UpdateWorkspaceSettingsInput, Workspace, WorkspaceSettings } from './schemas.ts';
import { table, TransactionCancelled } from '../platform/store/table.ts';
import { setOrRemove } from '../platform/store/update-expression.ts';
import { conflict, notFound } from '../platform/errors.ts';
import { copyOrgName, nameRev, unrenamedCondition } from './org-name.ts';
import { anyWorkspaceRegistered, countedFromStartOp, workspaceRegistrationOp, workspaces, type WorkspaceItem } from './store.ts';

export type { WorkspaceItem } from './store.ts';

const DEFAULT_CONCURRENCY_LIMIT = 20;
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
const DEFAULT_KEY_NAME = 'Default key';

function toWorkspace(item: WorkspaceItem): Workspace {
  return {
    workspace_id: item.workspace_id,
    name: item.name,
    webhook_url: item.webhook_url ?? null,
    concurrency_limit: item.concurrency_limit,
    created_timestamp: item.created_timestamp,
  };
}

/** The workspace; a deleted one (POST /workspace/delete, its purge under way) is as absent: 404. */
export async function getWorkspaceItem(workspaceId: string): Promise<WorkspaceItem> {
  const item = await workspaces.mustGet(workspaceId);
  if (item.deleted_timestamp !== undefined) throw notFound('Workspace not found');
  return item;
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
    // Its calls and chats are counted from the start: its totals need no backfill.
    countedFromStartOp(workspaceId, nowMs),
    ...credentialPuts(workspaceId, secret, {
      kind: 'secret',
      name: DEFAULT_KEY_NAME,
      is_webhook_key: true,
      scopes: [],
      allowed_ips: [],
      org_name: name,
      org_name_rev: 0,
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
  if (input.name === undefined) {
    await applyWorkspaceChange(principal, 'workspace.update', input);
    return getWorkspace(principal.workspaceId);
  }
  // A rename bumps name_rev (conditional on the one read) and then copies the name onto the
  // workspace's keys; see org-name.ts for why this cannot leave a key with a stale name.
  for (let attempt = 1; ; attempt++) {
    const current = await getWorkspaceItem(principal.workspaceId);
    const rev = nameRev(current) + 1;
    try {
      await applyWorkspaceChange(principal, 'workspace.update', { ...input, name_rev: rev }, unrenamedCondition(current));
      await copyOrgName(principal.workspaceId, input.name, rev);
      return getWorkspace(principal.workspaceId);
    } catch (error) {
      if (!(error instanceof TransactionCancelled) || attempt >= MAX_RENAME_ATTEMPTS) {
        if (error instanceof TransactionCancelled) throw conflict('The workspace is being renamed by another request; try again');
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
    }
  }
}

const MAX_RENAME_ATTEMPTS = 10;

function toSettings(item: WorkspaceItem): WorkspaceSettings {
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
  condition?: { expression: string; values: Record<string, unknown> },
  nowMs = Date.now(),
): Promise<void> {
  const fields = Object.keys(changes).filter((field) => changes[field] !== undefined && field !== 'name_rev');
  if (fields.length === 0) return;
  await table.transact([
    {
      Update: {
        Key: workspaces.key(principal.workspaceId),
        ...withCondition(setOrRemove(changes), condition),
      },
    },
    auditPut(principal.workspaceId, principal, {
      action,
      target: { type: 'workspace', id: principal.workspaceId },
      changes: fields,
    }, nowMs),
  ]);
}

/** Merges a condition (and its values) into an update built by setOrRemove; the item must exist. */
function withCondition<U extends { ExpressionAttributeValues?: Record<string, unknown> }>(
  update: U,
  condition: { expression: string; values: Record<string, unknown> } | undefined,
) {
  const values = { ...update.ExpressionAttributeValues, ...condition?.values };
  return {
    ...update,
    ConditionExpression: condition ? `attribute_exists(pk) AND (${condition.expression})` : 'attribute_exists(pk)',
    ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
  };
}

/** The workspace's reliability settings as the conversation and media code paths use them (one read of the workspace item). */
export interface WorkspaceReliability {
  /** Absent: the runtime's default (32,768). */
  llmTokenLimit?: number;
  /** Tried once when the provider cannot answer the primary model. */
  fallbackLlmModel?: string;
  /** Handed to the agent worker with the call, in order of preference. */
  fallbackVoiceIds: string[];
}

/**
 * `PUT /workspace/reliability`'s settings, read where a conversation opens (calls, chats, the
 * playground) and where a call's media starts (the worker's dispatch metadata).
 */
export async function workspaceReliability(workspaceId: string): Promise<WorkspaceReliability> {
  const item = (await getWorkspaceItem(workspaceId)) as { llm_token_limit?: unknown; fallback_llm_model?: unknown; fallback_voice_ids?: unknown };
  return {
    ...(typeof item.llm_token_limit === 'number' ? { llmTokenLimit: item.llm_token_limit } : {}),
    ...(typeof item.fallback_llm_model === 'string' && item.fallback_llm_model ? { fallbackLlmModel: item.fallback_llm_model } : {}),
    fallbackVoiceIds: Array.isArray(item.fallback_voice_ids) ? item.fallback_voice_ids.filter((id): id is string => typeof id === 'string') : [],
  };
}
