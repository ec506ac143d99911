import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../platform/auth/gate.ts';
import type { Role } from '../platform/auth/roles.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { badRequest, conflict, notFound } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { keys } from '../platform/store/keys.ts';
import { table, TransactionCancelled } from '../platform/store/table.ts';
import { alreadyMember, auditOp, creationError, memberCreateOps } from './members.ts';
import { startSession, type IssuedSession } from './sessions.ts';
import { invites, listInviteItems, memberEmails, type InviteItem } from './store.ts';

/*
 * Invites: a single-use token bound to an email and a role, valid 7 days, stored hashed.
 * Accepting deletes the invite (conditional on its hash and expiry) in the transaction
 * that creates the member, so a replayed token finds nothing and two acceptances cannot
 * both succeed.
 */

const INVITE_TTL_MS = 7 * 24 * 3600 * 1000;
const INVITE_TOKEN = /^pinv\.(ws_[0-9a-f]{24})\.(invite_[0-9a-f]{24})\.([0-9a-f]{64})$/;
const invalidInvite = () => badRequest('This invite is invalid, expired or already used');

const toInvite = (item: InviteItem) => ({
  invite_id: item.invite_id,
  email: item.email,
  role: item.role,
  created_timestamp: item.created_timestamp,
  expires_timestamp: item.expires_timestamp,
});

export async function listInvites(workspaceId: string, nowMs = Date.now()) {
  return (await listInviteItems(workspaceId))
    .filter((item) => item.expires_timestamp > nowMs)
    .sort((a, b) => a.created_timestamp - b.created_timestamp)
    .map(toInvite);
}

export async function createInvite(principal: Principal, input: { email: string; role: Role }, nowMs = Date.now()) {
  const workspaceId = principal.workspaceId;
  if (await memberEmails.get(workspaceId, input.email)) throw alreadyMember(input.email);
  const inviteId = newId('invite');
  const secret = randomBytes(32).toString('hex');
  const item: InviteItem = {
    ...keys.invite(workspaceId, inviteId),
    invite_id: inviteId,
    workspace_id: workspaceId,
    email: input.email,
    role: input.role,
    token_hash: sha256(secret),
    created_timestamp: nowMs,
    expires_timestamp: nowMs + INVITE_TTL_MS,
    expires_at: Math.floor((nowMs + INVITE_TTL_MS) / 1000),
  };
  await table.transact([
    { Put: { Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
    // Checked again at acceptance; here so the inviter hears it at once.
    { ConditionCheck: { Key: keys.memberEmail(workspaceId, input.email), ConditionExpression: 'attribute_not_exists(pk)' } },
    auditOp(workspaceId, principal, { action: 'member.invite', target: { type: 'invite', id: inviteId }, changes: ['email', 'role'] }),
  ]).catch((error: unknown) => {
    throw error instanceof TransactionCancelled && error.failedAt.includes(1) ? alreadyMember(input.email) : error;
  });
  return { ...toInvite(item), token: `pinv.${workspaceId}.${inviteId}.${secret}` };
}

export async function revokeInvite(principal: Principal, inviteId: string): Promise<void> {
  const workspaceId = principal.workspaceId;
  try {
    await table.transact([
      invites.removeOp(workspaceId, inviteId),
      auditOp(workspaceId, principal, { action: 'member.invite_revoke', target: { type: 'invite', id: inviteId }, changes: [] }),
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) throw notFound('Invite not found');
    throw error;
  }
}

/** Accepts an invite: creates the member and signs it in. */
export async function acceptInvite(token: string, name: string | undefined, nowMs = Date.now()): Promise<IssuedSession> {
  const match = INVITE_TOKEN.exec(token);
  if (!match) throw invalidInvite();
  const [, workspaceId, inviteId, secret] = match as unknown as [string, string, string, string];
  const invite = await invites.get(workspaceId, inviteId);
  const hash = sha256(secret);
  if (!invite || invite.expires_timestamp <= nowMs || !timingSafeEqual(Buffer.from(invite.token_hash), Buffer.from(hash))) throw invalidInvite();
  const { item, ops } = memberCreateOps(workspaceId, { email: invite.email, role: invite.role, name, source: 'invite' }, nowMs);
  try {
    await table.transact([
      ...ops,
      {
        Delete: {
          Key: keys.invite(workspaceId, inviteId),
          ConditionExpression: 'token_hash = :hash AND expires_timestamp > :now',
          ExpressionAttributeValues: { ':hash': hash, ':now': nowMs },
        },
      },
      auditOp(workspaceId, undefined, { action: 'member.join', target: { type: 'member', id: item.member_id }, changes: ['email', 'role'] }),
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(ops.length)) throw invalidInvite();
    const mapped = creationError(error, invite.email);
    if (mapped !== error) throw mapped;
    if (error instanceof TransactionCancelled) throw conflict('The invite changed meanwhile; retry');
    throw error;
  }
  return startSession(item, nowMs);
}
