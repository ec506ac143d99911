import { auditPut } from './audit-log.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { assertGrantable, type Scope } from '../platform/auth/scopes.ts';
import { keyRole } from '../platform/auth/roles.ts';
import { config } from '../platform/config.ts';
import {
  credentialDeletes,
  credentialPuts,
  credentialUpdate,
  findCredential,
  issueSecret,
  listCredentials,
  readCredential,
  type CredentialItem,
} from '../platform/auth/credentials.ts';
import { badRequest, conflict, forbidden, notFound } from '../platform/errors.ts';
import { definedFields } from '../platform/objects.ts';
import type { ApiKey, CreateApiKeyInput, UpdateApiKeyInput } from './schemas.ts';
import { table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import { apiKeyRef, apiKeyRefs, credentialItemKey, credentialKey, memberKey, workspaces, type WorkspaceItem } from './store.ts';
import { getWorkspaceItem } from './workspaces.ts';
import { orgNameFields, withUnrenamedWorkspace } from './org-name.ts';
import { extraShardKeys } from '../platform/auth/key-shards.ts';

const MAX_ATTEMPTS = 10;
const apiKeyNotFound = () => notFound('API key not found');

function toApiKey(item: CredentialItem): ApiKey {
  return {
    api_key_id: item.credential_id,
    name: item.name,
    masked_key: item.masked_key,
    is_webhook_key: item.is_webhook_key === true,
    created_timestamp: item.created_timestamp,
    last_used_timestamp: item.last_used_timestamp ?? null,
    scopes: item.scopes ?? [],
    allowed_ips: item.allowed_ips ?? [],
    rate_limit_per_minute: item.rate_limit_per_minute ?? config.RATE_LIMIT_PER_KEY,
  };
}

/**
 * The key making the request, as authentication already read it, with retell-sdk's
 * `identity.retrieve` fields: the key's name and its workspace's (the org). The workspace's
 * name is kept on the key (org-name.ts); only keys written before that read the workspace.
 */
export async function apiKeyInfo(principal: Principal) {
  const credential = principal.credential;
  if (!credential) throw badRequest('get-api-key-info describes an API key; this request is signed in with a session');
  const orgName = credential.org_name ?? (await workspaces.mustGet(principal.workspaceId)).name;
  return {
    ...toApiKey(credential),
    workspace_id: principal.workspaceId,
    api_key_name: credential.name,
    org_name: orgName,
  };
}

export async function listApiKeys(workspaceId: string): Promise<ApiKey[]> {
  return (await listCredentials(apiKeyRefs(workspaceId))).map(toApiKey);
}

export async function createApiKey(principal: Principal, input: CreateApiKeyInput) {
  assertGrantable(principal, input.scopes);
  const workspaceId = principal.workspaceId;
  const secret = await issueSecret('secret', workspaceId);
  const nowMs = Date.now();
  const fields = {
    kind: 'secret' as const,
    name: input.name,
    is_webhook_key: input.is_webhook_key,
    scopes: input.scopes,
    allowed_ips: input.allowed_ips,
    rate_limit_per_minute: input.rate_limit_per_minute,
    // The key acts for the member its creator acts for, with the creator's role (roles.ts
    // keyRole); a developer manages the keys they made (spec Authentication 11).
    ...(principal.actingMemberId ? { created_by_member: principal.actingMemberId } : {}),
    ...(principal.role ? { creator_role: principal.role } : {}),
  };
  const audit = auditPut(workspaceId, principal, {
    action: 'api_key.create',
    target: { type: 'api_key', id: secret.id },
    changes: Object.keys(definedFields(input)),
  }, nowMs);

  let puts!: ReturnType<typeof credentialPuts>;
  await withWebhookFlagRetry(async () => {
    // The key carries the workspace's name as read; the transaction holds only if no rename came between.
    const workspace = await getWorkspaceItem(workspaceId);
    puts = credentialPuts(workspaceId, secret, { ...fields, ...orgNameFields(workspace) }, nowMs);
    const move = input.is_webhook_key ? await webhookFlagMove(workspace, secret.id, secret.hash) : [];
    const { ops, checkedAt } = withActingRoleHeld(withUnrenamedWorkspace([...puts, ...move, audit], workspace), principal);
    try {
      await table.transact(ops);
    } catch (error) {
      if (error instanceof TransactionCancelled && checkedAt !== undefined && error.failedAt.includes(checkedAt)) {
        throw conflict('The role this request acts with changed meanwhile; retry');
      }
      throw error;
    }
  });
  const created = puts[0]!.Put.Item as CredentialItem;
  return { ...toApiKey(created), api_key: secret.value };
}

export async function updateApiKey(principal: Principal, apiKeyId: string, input: UpdateApiKeyInput): Promise<ApiKey> {
  const workspaceId = principal.workspaceId;
  const credential = await findCredential(apiKeyRef(workspaceId, apiKeyId));
  if (!credential || credential.kind !== 'secret') throw apiKeyNotFound();
  assertMayManage(principal, credential);
  if (input.scopes) assertGrantable(principal, input.scopes);

  const changes: Record<string, unknown> = definedFields(input);
  const movesFlag = input.is_webhook_key === true && credential.is_webhook_key !== true;
  if (!movesFlag) delete changes.is_webhook_key;
  if (Object.keys(changes).length === 0) return toApiKey(credential);

  const audit = auditPut(workspaceId, principal, {
    action: 'api_key.update',
    target: { type: 'api_key', id: apiKeyId },
    changes: Object.keys(changes),
  }, Date.now());
  const losesFullAccess = input.scopes !== undefined && hasFullAccess(credential) && !fullScopes(input.scopes);
  await withWebhookFlagRetry(async () => {
    const move = movesFlag
      ? await webhookFlagMove(await getWorkspaceItem(workspaceId), apiKeyId, credential.pk.slice('CREDENTIAL#'.length))
      : [];
    const guard = losesFullAccess ? await anotherFullAccessKeyCheck(workspaceId, apiKeyId, 'removing its full access') : [];
    await table.transact([...credentialUpdate(credential, changes), ...move, audit, ...guard]);
  }, apiKeyNotFound);
  const updated = await readCredential(credential);
  if (!updated) throw apiKeyNotFound();
  return toApiKey(updated);
}

/**
 * Deleting the webhook key leaves the workspace with none (signing falls back to the
 * oldest key). The last key with full access (no scopes, or `admin`, acting as an admin)
 * cannot be deleted: no other key can manage keys, so a workspace run by keys alone
 * would be locked out for good.
 */
export async function deleteApiKey(principal: Principal, apiKeyId: string): Promise<void> {
  const workspaceId = principal.workspaceId;
  const ref = apiKeyRef(workspaceId, apiKeyId);
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const credential = await findCredential(ref);
    if (!credential || credential.kind !== 'secret') throw apiKeyNotFound();
    assertMayManage(principal, credential);
    const fullAccess = hasFullAccess(credential);
    const [remove, removeRef, ...shardDeletes] = credentialDeletes(credential, ref);
    // The delete holds only for the key as read: one promoted to full access meanwhile is re-read.
    if (!fullAccess) {
      remove!.Delete.ConditionExpression = `attribute_exists(pk) AND NOT (${FULL_ACCESS_CONDITION})`;
      Object.assign(remove!.Delete, { ExpressionAttributeValues: FULL_ACCESS_VALUES });
    }
    const clearFlag: TransactOp[] = credential.is_webhook_key
      ? [
          {
            Update: {
              Key: workspaces.key(workspaceId),
              UpdateExpression: 'REMOVE webhook_key_id, webhook_key_credential',
              ConditionExpression: 'webhook_key_id = :id',
              ExpressionAttributeValues: { ':id': apiKeyId },
            },
          },
        ]
      : [];
    const guard = fullAccess ? await anotherFullAccessKeyCheck(workspaceId, apiKeyId, 'deleting it') : [];
    try {
      await table.transact([
        ...[remove!, removeRef!, ...shardDeletes],
        ...clearFlag,
        auditPut(workspaceId, principal, {
          action: 'api_key.delete',
          target: { type: 'api_key', id: apiKeyId },
          changes: [],
        }, Date.now()),
        ...guard,
      ]);
      return;
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) throw error;
      // Lost a race (the key, the flag or the other full-access key changed): read again.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
    }
  }
  throw conflict('The API key is being changed by another request; try again');
}

/**
 * An admin (a session, or a key acting as one) changes and deletes any key; anyone else
 * only the keys made for the member they act for: a developer's own, and those its keys made.
 */
function assertMayManage(principal: Principal, credential: CredentialItem): void {
  if (principal.role === 'admin') return;
  if (principal.actingMemberId !== undefined && credential.created_by_member === principal.actingMemberId) return;
  throw forbidden('Requires role: admin');
}

/**
 * Adds to a key's creation the condition that the role it records is still the role its
 * creator acts with, as the gate read it: the signed-in member's (still active, same role),
 * or the creating key's recorded role. A demotion, removal or deactivation committed in
 * between fails the creation, so `lowerMemberKeys`, run after such a change, misses no key.
 * The creating key may already be in the transaction (as the webhook key losing its flag):
 * the condition then joins that operation. `checkedAt` is the index of the checked operation.
 */
function withActingRoleHeld(ops: TransactOp[], principal: Principal): { ops: TransactOp[]; checkedAt?: number } {
  if (principal.member) {
    const check: TransactOp = {
      ConditionCheck: {
        Key: memberKey(principal.workspaceId, principal.member.memberId),
        ConditionExpression: '#role = :actingRole AND (attribute_not_exists(active) OR active = :actingActive)',
        ExpressionAttributeNames: { '#role': 'role' },
        ExpressionAttributeValues: { ':actingRole': principal.member.role, ':actingActive': true },
      },
    };
    return { ops: [...ops, check], checkedAt: ops.length };
  }
  const credential = principal.credential;
  if (!credential?.created_by_member) return { ops };
  const key = credentialItemKey(credential);
  const condition = credential.creator_role === undefined
    ? { expression: 'attribute_not_exists(creator_role)', values: {} }
    : { expression: 'creator_role = :actingRole', values: { ':actingRole': credential.creator_role } };
  const at = ops.findIndex((op) => 'Update' in op && op.Update && op.Update.Key.pk === key.pk && op.Update.Key.sk === key.sk);
  if (at === -1) {
    const check: TransactOp = {
      ConditionCheck: {
        Key: key,
        ConditionExpression: condition.expression,
        ...(Object.keys(condition.values).length > 0 ? { ExpressionAttributeValues: condition.values } : {}),
      },
    };
    return { ops: [...ops, check], checkedAt: ops.length };
  }
  const update = (ops[at] as Extract<TransactOp, { Update: unknown }>).Update;
  const merged: TransactOp = {
    Update: {
      ...update,
      ConditionExpression: update.ConditionExpression ? `(${update.ConditionExpression}) AND ${condition.expression}` : condition.expression,
      ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ...condition.values },
    },
  };
  return { ops: ops.map((op, index) => (index === at ? merged : op)), checkedAt: at };
}

/** Full scopes: none, or the `admin` scope (spec Authentication 4). */
const fullScopes = (scopes: readonly Scope[] | undefined): boolean => !scopes || scopes.length === 0 || scopes.includes('admin');

/**
 * A key with full access: full scopes, acting as an admin (roles.ts `keyRole`), so it can
 * manage every key. A full-scoped key acting for a developer, or for a removed member, is
 * not one.
 */
const hasFullAccess = (credential: CredentialItem): boolean => fullScopes(credential.scopes) && keyRole(credential) === 'admin';
const FULL_ACCESS_CONDITION =
  '(attribute_not_exists(scopes) OR size(scopes) = :noScopes OR contains(scopes, :admin))' +
  ' AND (creator_role = :admin OR (attribute_not_exists(creator_role) AND attribute_not_exists(created_by_member)))';
const FULL_ACCESS_VALUES = { ':noScopes': 0, ':admin': 'admin' };

/**
 * A condition that another of the workspace's keys still has full access, for the
 * transaction that takes full access away from this one. Two such transactions on the
 * last two full-access keys cannot both commit: each checks the key the other changes.
 */
async function anotherFullAccessKeyCheck(workspaceId: string, apiKeyId: string, action: string): Promise<TransactOp[]> {
  const other = (await listCredentials(apiKeyRefs(workspaceId))).find(
    (credential) => credential.credential_id !== apiKeyId && hasFullAccess(credential),
  );
  if (!other) {
    throw conflict(
      `This is the workspace's last API key with full access (no scopes, or "admin"): create another such key before ${action}`,
    );
  }
  return [
    {
      ConditionCheck: {
        Key: credentialItemKey(other),
        ConditionExpression: `attribute_exists(pk) AND (${FULL_ACCESS_CONDITION})`,
        ExpressionAttributeValues: FULL_ACCESS_VALUES,
      },
    },
  ];
}

/**
 * Moves the webhook flag to a key: the workspace records the new holder only if the
 * holder it read is still current, and the previous holder's flag is cleared in the same
 * transaction, so exactly one key holds it even under concurrent moves.
 */
async function webhookFlagMove(workspace: WorkspaceItem, apiKeyId: string, credentialHash: string): Promise<TransactOp[]> {
  const previousHash = workspace.webhook_key_credential;
  const items: TransactOp[] = [
    {
      Update: {
        Key: workspaces.key(workspace.workspace_id),
        UpdateExpression: 'SET webhook_key_id = :id, webhook_key_credential = :hash',
        ConditionExpression: workspace.webhook_key_id
          ? 'webhook_key_id = :previous'
          : 'attribute_exists(pk) AND attribute_not_exists(webhook_key_id)',
        ExpressionAttributeValues: {
          ':id': apiKeyId,
          ':hash': credentialHash,
          ...(workspace.webhook_key_id ? { ':previous': workspace.webhook_key_id } : {}),
        },
      },
    },
  ];
  if (previousHash && previousHash !== credentialHash) {
    // The previous holder's record and its rate-window shards (copies the gate answers from).
    const previous = await table.get<Pick<CredentialItem, 'rate_shards'>>(credentialKey(previousHash));
    for (const key of [credentialKey(previousHash), ...extraShardKeys(previousHash, previous?.rate_shards ?? 1)]) {
      items.push({
        Update: {
          Key: key,
          UpdateExpression: 'SET is_webhook_key = :false ADD #rev :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#rev': 'rev' },
          ExpressionAttributeValues: { ':false': false, ':one': 1 },
        },
      });
    }
  }
  return items;
}

/** Retries a transaction that lost a race on the webhook flag, re-reading the workspace each time. */
async function withWebhookFlagRetry(attempt: () => Promise<void>, onGone?: () => Error): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) throw error;
      // The first item is the key itself (update) or its Put (create): gone means deleted meanwhile.
      if (onGone && error.failedAt.includes(0)) throw onGone();
      if (i >= MAX_ATTEMPTS) throw conflict('The webhook key is being changed by another request; try again');
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * i));
    }
  }
}
