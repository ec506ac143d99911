import { auditPut, getWorkspaceItem, type AuditRecord } from '../account/index.ts';
import type { Principal } from '../platform/auth/gate.ts';
import type { Role } from '../platform/auth/roles.ts';
import { credentialDeletes, listCredentials, lowerMemberKeys } from '../platform/auth/credentials.ts';
import { unindexPublicOrigins } from '../platform/auth/public-origins.ts';
import { badRequest, conflict, forbidden, NotFound, notFound } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { keys } from '../platform/store/keys.ts';
import { table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import { enqueuePurgeStep } from './purge-queue.ts';
import type { Member } from './schemas.ts';
import {
  getRoster,
  listMemberItems,
  listSessionItems,
  memberEmails,
  members,
  purges,
  purgeStartOp,
  rosterKey,
  type MemberItem,
  type MemberSource,
  type RosterItem,
} from './store.ts';

/*
 * Members of a workspace and the rules that keep one in charge: at least one active admin
 * at all times (the roster's `admin_count`, changed only in the transaction that changes a
 * member and conditional on staying ≥ 1, so concurrent demotions cannot both pass), one
 * member per email, and an owner (the first admin; `transfer` moves it to another admin)
 * who cannot leave, be demoted or be removed while owner.
 */

export const alreadyMember = (email: string) => conflict(`${email} is already a member`);
const lastAdmin = () => conflict("This is the workspace's last admin: make another member an admin first");
const isOwnerConflict = () => conflict('The owner cannot be demoted, removed or leave: transfer ownership first (POST /workspace/transfer)');

export function toMember(item: MemberItem, roster?: RosterItem): Member {
  return {
    member_id: item.member_id,
    email: item.email,
    name: item.name ?? null,
    role: item.role,
    active: item.active !== false,
    is_owner: roster?.owner_member_id === item.member_id,
    source: item.source,
    created_timestamp: item.created_timestamp,
  };
}

export async function listMembers(workspaceId: string): Promise<Member[]> {
  const [items, roster] = await Promise.all([listMemberItems(workspaceId), getRoster(workspaceId)]);
  return items.sort((a, b) => a.created_timestamp - b.created_timestamp).map((item) => toMember(item, roster));
}

export const auditOp = (workspaceId: string, actor: Principal | undefined, record: AuditRecord) =>
  auditPut(workspaceId, actor, record, Date.now());

/** The roster change of an active admin arriving (+1) or leaving (-1); leaving needs another. */
function rosterOp(workspaceId: string, change: { admins: number; members: number; memberId: string; owner?: 'claim' }): Extract<TransactOp, { Update: unknown }> {
  const values: Record<string, unknown> = { ':a': change.admins, ':m': change.members };
  const conditions: string[] = [];
  let update = 'ADD admin_count :a, member_count :m';
  if (change.owner === 'claim') {
    update += ' SET owner_member_id = if_not_exists(owner_member_id, :id)';
    values[':id'] = change.memberId;
  }
  if (change.admins < 0) {
    conditions.push('admin_count > :one');
    values[':one'] = 1;
  }
  if (change.admins < 0 || change.members < 0) {
    conditions.push('(attribute_not_exists(owner_member_id) OR owner_member_id <> :self)');
    values[':self'] = change.memberId;
  }
  return {
    Update: {
      Key: rosterKey(workspaceId),
      UpdateExpression: update,
      ...(conditions.length ? { ConditionExpression: conditions.join(' AND ') } : {}),
      ExpressionAttributeValues: values,
    },
  };
}

export interface NewMember {
  email: string;
  role: Role;
  name?: string;
  source: MemberSource;
  externalId?: string;
  givenName?: string;
  familyName?: string;
  active?: boolean;
}

/**
 * The operations that add a member: the member, its email claim (409 `<email> is already
 * a member`), the roster (a workspace's first member must be an admin: it becomes the owner).
 */
export function memberCreateOps(workspaceId: string, input: NewMember, nowMs: number): { item: MemberItem; ops: TransactOp[] } {
  const memberId = newId('member');
  const active = input.active !== false;
  const item: MemberItem = {
    ...keys.member(workspaceId, memberId),
    member_id: memberId,
    workspace_id: workspaceId,
    email: input.email,
    role: input.role,
    active,
    source: input.source,
    created_timestamp: nowMs,
    ...(input.name ? { name: input.name } : {}),
    ...(input.externalId ? { external_id: input.externalId } : {}),
    ...(input.givenName ? { given_name: input.givenName } : {}),
    ...(input.familyName ? { family_name: input.familyName } : {}),
  };
  const countsAsAdmin = input.role === 'admin' && active;
  const roster = rosterOp(workspaceId, { admins: countsAsAdmin ? 1 : 0, members: 1, memberId, owner: countsAsAdmin ? 'claim' : undefined });
  if (!countsAsAdmin) {
    // Someone must be in charge before anyone else joins.
    roster.Update.ConditionExpression = 'admin_count >= :one';
    roster.Update.ExpressionAttributeValues = { ...roster.Update.ExpressionAttributeValues, ':one': 1 };
  }
  return {
    item,
    ops: [
      { Put: { Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { Item: { ...keys.memberEmail(workspaceId, input.email), member_id: memberId }, ConditionExpression: 'attribute_not_exists(pk)' } },
      roster,
    ],
  };
}

/** Maps a cancelled member creation (ops first, as memberCreateOps orders them) to its error. */
export function creationError(error: unknown, email: string): unknown {
  if (!(error instanceof TransactionCancelled)) return error;
  if (error.failedAt.includes(1)) return alreadyMember(email);
  if (error.failedAt.includes(2)) return conflict("A workspace's first member must be an admin");
  return error;
}

export async function createMember(workspaceId: string, actor: Principal | undefined, input: NewMember, extra: TransactOp[] = [], action: AuditRecord['action'] = 'member.create'): Promise<MemberItem> {
  const nowMs = Date.now();
  const { item, ops } = memberCreateOps(workspaceId, input, nowMs);
  try {
    await table.transact([
      ...ops,
      auditPut(workspaceId, actor, { action, target: { type: 'member', id: item.member_id }, changes: ['email', 'role'] }, nowMs),
      ...extra,
    ]);
  } catch (error) {
    throw creationError(error, input.email);
  }
  return item;
}

export async function addMember(principal: Principal, input: { email: string; role: Role; name?: string }): Promise<Member> {
  const item = await createMember(principal.workspaceId, principal, { ...input, source: 'api' });
  return toMember(item, await getRoster(principal.workspaceId));
}

export interface MemberChange {
  role?: Role;
  name?: string | null;
  active?: boolean;
  email?: string;
  externalId?: string | null;
  givenName?: string | null;
  familyName?: string | null;
}

/**
 * Changes a member in one transaction conditional on the member as read; an active admin
 * who stops being one (demoted or deactivated) moves the roster down, conditional on
 * another active admin remaining and on not being the owner. The member's keys are then
 * lowered to the role the member has now (none while deactivated), whenever the change
 * names the role or the state: repeating a change finishes a lowering cut short.
 */
export async function changeMember(workspaceId: string, actor: Principal | undefined, memberId: string, change: MemberChange): Promise<MemberItem> {
  const item = await applyMemberChange(workspaceId, actor, memberId, change);
  if (change.role !== undefined || change.active !== undefined) {
    await lowerMemberKeys(workspaceId, memberId, item.active === false ? 'none' : item.role);
  }
  return item;
}

async function applyMemberChange(workspaceId: string, actor: Principal | undefined, memberId: string, change: MemberChange): Promise<MemberItem> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await members.mustGet(workspaceId, memberId);
    const next: MemberItem = { ...current };
    if (change.role !== undefined) next.role = change.role;
    if (change.active !== undefined) next.active = change.active;
    if (change.name !== undefined) setOptional(next, 'name', change.name);
    if (change.externalId !== undefined) setOptional(next, 'external_id', change.externalId);
    if (change.givenName !== undefined) setOptional(next, 'given_name', change.givenName);
    if (change.familyName !== undefined) setOptional(next, 'family_name', change.familyName);
    if (change.email !== undefined) next.email = change.email;
    const wasAdmin = current.role === 'admin' && current.active !== false;
    const isAdmin = next.role === 'admin' && next.active !== false;
    const changed = (Object.keys(next) as (keyof MemberItem)[]).filter((field) => JSON.stringify(next[field]) !== JSON.stringify(current[field]));
    const removed = (Object.keys(current) as (keyof MemberItem)[]).filter((field) => !(field in next));
    if (changed.length === 0 && removed.length === 0) return current;

    const ops: TransactOp[] = [
      { Put: { Item: next, ConditionExpression: '#role = :role AND #email = :email AND attribute_exists(pk)', ExpressionAttributeNames: { '#role': 'role', '#email': 'email' }, ExpressionAttributeValues: { ':role': current.role, ':email': current.email } } },
    ];
    const rosterAt = ops.length;
    if (wasAdmin !== isAdmin) ops.push(rosterOp(workspaceId, { admins: isAdmin ? 1 : -1, members: 0, memberId }));
    const emailAt = ops.length;
    if (next.email !== current.email) {
      ops.push(
        { Delete: { Key: keys.memberEmail(workspaceId, current.email) } },
        { Put: { Item: { ...keys.memberEmail(workspaceId, next.email), member_id: memberId }, ConditionExpression: 'attribute_not_exists(pk)' } },
      );
    }
    ops.push(auditOp(workspaceId, actor, { action: 'member.update', target: { type: 'member', id: memberId }, changes: [...changed, ...removed].map(String) }));
    try {
      await table.transact(ops);
      return next;
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) throw error;
      if (error.failedAt.includes(rosterAt) && wasAdmin !== isAdmin) throw await adminGuardError(workspaceId, memberId);
      if (error.failedAt.includes(emailAt + 1)) throw alreadyMember(next.email);
      if (error.failedAt.length === 0 || error.failedAt.includes(0)) continue;
      throw error;
    }
  }
  throw conflict('The member changed meanwhile; retry');
}

function setOptional(item: MemberItem, field: 'name' | 'external_id' | 'given_name' | 'family_name', value: string | null) {
  if (value === null || value === '') delete item[field];
  else item[field] = value;
}

async function adminGuardError(workspaceId: string, memberId: string) {
  const roster = await getRoster(workspaceId);
  return roster?.owner_member_id === memberId ? isOwnerConflict() : lastAdmin();
}

export async function updateMember(principal: Principal, memberId: string, input: { role?: Role; name?: string | null }): Promise<Member> {
  const item = await changeMember(principal.workspaceId, principal, memberId, input);
  return toMember(item, await getRoster(principal.workspaceId));
}

/**
 * Removes a member (its sessions die with it: the gate reads the member on every request)
 * and refuses its keys from then on (`lowerMemberKeys` to `none`). Removing a member that
 * is gone finishes that if it was cut short, and answers 404.
 */
export async function removeMember(workspaceId: string, actor: Principal | undefined, memberId: string, action: AuditRecord['action'] = 'member.remove'): Promise<void> {
  const current = await members.mustGet(workspaceId, memberId).catch(async (error: unknown) => {
    if (error instanceof NotFound) await lowerMemberKeys(workspaceId, memberId, 'none');
    throw error;
  });
  const wasAdmin = current.role === 'admin' && current.active !== false;
  try {
    await table.transact([
      { Delete: { Key: keys.member(workspaceId, memberId), ConditionExpression: '#role = :role', ExpressionAttributeNames: { '#role': 'role' }, ExpressionAttributeValues: { ':role': current.role } } },
      { Delete: { Key: keys.memberEmail(workspaceId, current.email) } },
      rosterOp(workspaceId, { admins: wasAdmin ? -1 : 0, members: -1, memberId }),
      auditOp(workspaceId, actor, { action, target: { type: 'member', id: memberId }, changes: [] }),
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(2)) throw await adminGuardError(workspaceId, memberId);
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) throw conflict('The member changed meanwhile; retry');
    throw error;
  }
  await Promise.all([deleteMemberSessions(workspaceId, memberId), lowerMemberKeys(workspaceId, memberId, 'none')]);
}

async function deleteMemberSessions(workspaceId: string, memberId?: string): Promise<void> {
  const items = await listSessionItems(workspaceId);
  await table.batchDelete(items.filter((item) => !memberId || item.member_id === memberId).map((item) => ({ pk: item.pk, sk: item.sk })));
}

const signedInMember = (principal: Principal) => {
  if (!principal.member) throw badRequest('Only a signed-in member can do this; this request uses an API key');
  return principal.member;
};

export async function leaveWorkspace(principal: Principal): Promise<void> {
  await removeMember(principal.workspaceId, principal, signedInMember(principal).memberId, 'member.leave');
}

/**
 * Hands ownership to another active admin. Only the owner may, whatever the credential: the
 * owner's session, or a key acting for the owner (made by the owner, or by such a key; the
 * gate held it to the admin role). Another admin's session or key, or a key no member
 * made, is 403, and the transaction holds only while the owner is the one read.
 */
export async function transferOwnership(principal: Principal, targetId: string): Promise<Member> {
  const workspaceId = principal.workspaceId;
  const [roster, target] = await Promise.all([getRoster(workspaceId), members.get(workspaceId, targetId)]);
  if (principal.actingMemberId === undefined || roster?.owner_member_id !== principal.actingMemberId) {
    throw forbidden('Only the owner can transfer ownership');
  }
  if (!target) throw notFound('Member not found');
  if (target.role !== 'admin' || target.active === false) throw conflict('Ownership goes to an active admin: make the member an admin first');
  try {
    await table.transact([
      {
        Update: {
          Key: rosterKey(workspaceId),
          UpdateExpression: 'SET owner_member_id = :to',
          ConditionExpression: 'owner_member_id = :from',
          ExpressionAttributeValues: { ':to': targetId, ':from': roster?.owner_member_id ?? '' },
        },
      },
      { ConditionCheck: { Key: keys.member(workspaceId, targetId), ConditionExpression: '#role = :admin AND active = :true', ExpressionAttributeNames: { '#role': 'role' }, ExpressionAttributeValues: { ':admin': 'admin', ':true': true } } },
      auditOp(workspaceId, principal, { action: 'workspace.transfer', target: { type: 'member', id: targetId }, changes: ['owner_member_id'] }),
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw conflict('The owner or the member changed meanwhile; retry');
    throw error;
  }
  return toMember({ ...target }, { ...roster, pk: '', sk: '', owner_member_id: targetId });
}

/**
 * Deletes the workspace (an admin, confirming with its exact name): every API and public
 * key, member, session, invite and the SSO/SAML/SCIM settings go at once, so nothing can
 * authenticate to it after this answers; the workspace record is marked deleted and the
 * purge of everything else is queued (shared/members/purge.ts).
 */
export async function deleteWorkspace(principal: Principal, confirm: string): Promise<void> {
  const workspaceId = principal.workspaceId;
  const workspace = await getWorkspaceItem(workspaceId);
  if (confirm !== workspace.name) throw badRequest('confirm: Must be the workspace name, exactly');
  if (principal.credential && (principal.credential.scopes ?? []).length > 0 && !(principal.credential.scopes ?? []).includes('admin')) {
    throw forbidden('Deleting the workspace needs a key with full access');
  }
  const nowMs = Date.now();
  // Marked deleted (reads of the workspace answer 404 from here on, and a key written by a
  // request already past the gate fails its workspace condition), with the purge's record.
  await table.transact([
    { Update: { Key: keys.workspace(workspaceId), UpdateExpression: 'SET deleted_timestamp = if_not_exists(deleted_timestamp, :now)', ExpressionAttributeValues: { ':now': nowMs } } },
    auditOp(workspaceId, principal, { action: 'workspace.delete', target: { type: 'workspace', id: workspaceId }, changes: [] }),
    purgeStartOp(workspaceId, nowMs),
  ]);
  // Queued before the keys go: should the send fail, the caller's key still works to retry.
  await enqueuePurgeStep(workspaceId, (await purges.mustGet(workspaceId)).step);
  const credentials = [
    ...(await listCredentials(keys.apiKeyRefs(workspaceId))).map((c) => [c, keys.apiKeyRef(workspaceId, c.credential_id)] as const),
    ...(await listCredentials(keys.publicKeyRefs(workspaceId))).map((c) => [c, keys.publicKeyRef(workspaceId, c.credential_id)] as const),
  ];
  const credentialKeys = credentials.flatMap(([credential, ref]) => credentialDeletes(credential, ref).map((op) => ('Delete' in op ? op.Delete.Key : undefined)));
  const memberItems = await listMemberItems(workspaceId);
  const scim = await table.get<{ token_hash: string }>(keys.scimConfig(workspaceId));
  // Before the keys: a delete that stops in between leaves keys, which the purge follows to their origins (purge-sources.ts).
  await Promise.all(credentials.map(([credential]) => unindexPublicOrigins(credential.credential_id, credential.allowed_origins ?? [])));
  await table.batchDelete([
    ...credentialKeys.filter((key) => key !== undefined),
    ...memberItems.flatMap((item) => [keys.member(workspaceId, item.member_id), keys.memberEmail(workspaceId, item.email)]),
    rosterKey(workspaceId),
    keys.ssoConfig(workspaceId),
    keys.samlConfig(workspaceId),
    keys.scimConfig(workspaceId),
    ...(scim ? [keys.scimToken(scim.token_hash)] : []),
    keys.workspaceRegistration(workspaceId),
  ]);
  await deleteMemberSessions(workspaceId);
  const invites = await table.queryAll<{ pk: string; sk: string }>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
    ExpressionAttributeValues: { ':pk': keys.invites(workspaceId).pk, ':p': keys.invites(workspaceId).skPrefix },
  });
  await table.batchDelete(invites.map((item) => ({ pk: item.pk, sk: item.sk })));
}

export { memberEmails };
