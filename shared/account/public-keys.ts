import { auditPut } from './audit-log.ts';
import type { Principal } from '../platform/auth/gate.ts';
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
import { badRequest, conflict, notFound, NotFound } from '../platform/errors.ts';
import { idPrefix } from '../platform/ids.ts';
import { getHead } from '../platform/store/versions.ts';
import { getWorkspaceItem } from './workspaces.ts';
import { orgNameFields, withUnrenamedWorkspace } from './org-name.ts';
import { definedFields } from '../platform/objects.ts';
import type { CreatePublicKeyInput, PublicKey, UpdatePublicKeyInput } from './schemas.ts';
import { table, TransactionCancelled } from '../platform/store/table.ts';
import { indexPublicOrigins, unindexPublicOrigins } from '../platform/auth/public-origins.ts';
import { publicKeyRef, publicKeyRefs } from './store.ts';

/** Public keys are browser keys: they may only start web calls and chats, from allowed origins. */
const publicKeyNotFound = () => notFound('Public key not found');

function toPublicKey(item: CredentialItem): PublicKey {
  return {
    public_key_id: item.credential_id,
    name: item.name,
    masked_key: item.masked_key,
    allowed_origins: item.allowed_origins ?? [],
    allowed_agent_ids: item.allowed_agent_ids ?? [],
    created_timestamp: item.created_timestamp,
    last_used_timestamp: item.last_used_timestamp ?? null,
  };
}

export async function listPublicKeys(workspaceId: string): Promise<PublicKey[]> {
  return (await listCredentials(publicKeyRefs(workspaceId))).map(toPublicKey);
}

/**
 * Every agent a key is limited to must be a voice or chat agent of the workspace: another
 * workspace's or an unknown ID is 400 naming the entry, as a phone number's agents are.
 */
async function checkAllowedAgents(workspaceId: string, agentIds: readonly string[] | undefined): Promise<void> {
  const found = await Promise.allSettled(
    (agentIds ?? []).map((id) => getHead(workspaceId, id.startsWith(idPrefix.chatAgent) ? 'chat_agent' : 'agent', id)),
  );
  const index = found.findIndex((result) => result.status === 'rejected');
  if (index < 0) return;
  const reason = (found[index] as PromiseRejectedResult).reason as unknown;
  if (reason instanceof NotFound) throw badRequest(`allowed_agent_ids.${index}: ${reason.message}`);
  throw reason;
}

export async function createPublicKey(principal: Principal, input: CreatePublicKeyInput) {
  await checkAllowedAgents(principal.workspaceId, input.allowed_agent_ids);
  const secret = await issueSecret('public', principal.workspaceId);
  const nowMs = Date.now();
  const audit = auditPut(principal.workspaceId, principal, {
    action: 'public_key.create',
    target: { type: 'public_key', id: secret.id },
    changes: Object.keys(definedFields(input)),
  }, nowMs);
  // The origin index (CORS preflights) learns the origins before the key allows them.
  await indexPublicOrigins(secret.id, input.allowed_origins);
  for (let attempt = 1; ; attempt++) {
    // The key carries the workspace's name as read; the transaction holds only if no rename came between.
    const workspace = await getWorkspaceItem(principal.workspaceId);
    const puts = credentialPuts(principal.workspaceId, secret, {
      kind: 'public',
      name: input.name,
      allowed_origins: input.allowed_origins,
      ...(input.allowed_agent_ids.length ? { allowed_agent_ids: input.allowed_agent_ids } : {}),
      ...orgNameFields(workspace),
    }, nowMs);
    try {
      await table.transact(withUnrenamedWorkspace([...puts, audit], workspace));
    } catch (error) {
      if (!(error instanceof TransactionCancelled) || attempt >= 10) {
        if (error instanceof TransactionCancelled) throw conflict('The workspace is being renamed by another request; try again');
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
      continue;
    }
    return { ...toPublicKey(puts[0]!.Put.Item as CredentialItem), public_key: secret.value };
  }
}

export async function updatePublicKey(principal: Principal, id: string, input: UpdatePublicKeyInput) {
  const credential = await findCredential(publicKeyRef(principal.workspaceId, id));
  if (!credential || credential.kind !== 'public') throw publicKeyNotFound();
  const changes: Record<string, unknown> = definedFields(input);
  if (Object.keys(changes).length === 0) return toPublicKey(credential);
  await checkAllowedAgents(principal.workspaceId, input.allowed_agent_ids);
  const before = credential.allowed_origins ?? [];
  const after = input.allowed_origins ?? before;
  await indexPublicOrigins(id, after.filter((origin) => !before.includes(origin)));
  try {
    await table.transact([
      ...credentialUpdate(credential, changes),
      auditPut(principal.workspaceId, principal, {
        action: 'public_key.update',
        target: { type: 'public_key', id },
        changes: Object.keys(changes),
      }, Date.now()),
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw publicKeyNotFound();
    throw error;
  }
  const updated = await readCredential(credential);
  if (!updated) throw publicKeyNotFound();
  const allowedNow = updated.allowed_origins ?? [];
  await unindexPublicOrigins(id, before.filter((origin) => !allowedNow.includes(origin)));
  return toPublicKey(updated);
}

export async function deletePublicKey(principal: Principal, id: string): Promise<void> {
  const ref = publicKeyRef(principal.workspaceId, id);
  const credential = await findCredential(ref);
  if (!credential || credential.kind !== 'public') throw publicKeyNotFound();
  try {
    await table.transact([
      ...credentialDeletes(credential, ref),
      auditPut(principal.workspaceId, principal, {
        action: 'public_key.delete',
        target: { type: 'public_key', id },
        changes: [],
      }, Date.now()),
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw publicKeyNotFound();
    throw error;
  }
  await unindexPublicOrigins(id, credential.allowed_origins ?? []);
}
