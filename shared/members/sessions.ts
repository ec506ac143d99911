import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Principal } from '../platform/auth/gate.ts';
import { clearedSessionCookie, SESSION_TTL_SECONDS, sessionCookie, signSessionToken } from '../platform/auth/sessions.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { Unauthorized, unauthorized } from '../platform/errors.ts';
import { MediaResponse } from '../platform/http/handler.ts';
import { newId } from '../platform/ids.ts';
import { keys } from '../platform/store/keys.ts';
import { table } from '../platform/store/table.ts';
import { toMember } from './members.ts';
import { getRoster, memberEmails, members, sessions, type MemberItem, type SessionItem } from './store.ts';

/*
 * Sessions as the members domain issues them: a session item (its refresh token's hash)
 * and a short-lived signed token (shared/platform/auth/sessions.ts). Refresh rotates: each
 * refresh token works once and answers the next; presenting a spent one again is reuse (a
 * copy was taken), which signs the whole session out.
 */

const REFRESH_TTL_SECONDS = 30 * 24 * 3600;
const MAX_USED_HASHES = 50;
const REFRESH_TOKEN = /^prt\.(ws_[0-9a-f]{24})\.(session_[0-9a-f]{24})\.([0-9a-f]{64})$/;

class RefreshReused extends Unauthorized {
  override readonly message = 'Refresh token reuse detected: the session is signed out';
}

export interface IssuedSession {
  token_type: 'Bearer';
  session_token: string;
  expires_in: number;
  refresh_token: string;
  csrf_token: string;
  workspace_id: string;
  member: ReturnType<typeof toMember>;
}

async function tokensFor(member: MemberItem, sessionId: string, refreshSecret: string): Promise<IssuedSession> {
  const csrf = randomBytes(16).toString('hex');
  const token = await signSessionToken({ workspaceId: member.workspace_id, memberId: member.member_id, sessionId, csrf });
  return {
    token_type: 'Bearer',
    session_token: token,
    expires_in: SESSION_TTL_SECONDS,
    refresh_token: `prt.${member.workspace_id}.${sessionId}.${refreshSecret}`,
    csrf_token: csrf,
    workspace_id: member.workspace_id,
    member: toMember(member, await getRoster(member.workspace_id)),
  };
}

/** A new session for an active member. */
export async function startSession(member: MemberItem, nowMs = Date.now()): Promise<IssuedSession> {
  if (member.active === false) throw unauthorized();
  const sessionId = newId('session');
  const secret = randomBytes(32).toString('hex');
  const item: SessionItem = {
    ...keys.memberSession(member.workspace_id, sessionId),
    session_id: sessionId,
    member_id: member.member_id,
    workspace_id: member.workspace_id,
    refresh_hash: sha256(secret),
    used_hashes: [],
    created_timestamp: nowMs,
    expires_at: Math.floor(nowMs / 1000) + REFRESH_TTL_SECONDS,
  };
  await table.put({ Item: item, ConditionExpression: 'attribute_not_exists(pk)' });
  return tokensFor(member, sessionId, secret);
}

/** The session as JSON with its cookie (HttpOnly, Secure, SameSite=Strict), and any other cookies to set (a sign-in flow's cleared binding). */
export const withCookie = (issued: IssuedSession, also: readonly string[] = []) =>
  new MediaResponse('application/json', JSON.stringify(issued), { 'cache-control': 'no-store' }, undefined, [sessionCookie(issued.session_token), ...also]);

const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export async function refreshSession(refreshToken: string, nowMs = Date.now()): Promise<IssuedSession> {
  const match = REFRESH_TOKEN.exec(refreshToken);
  if (!match) throw unauthorized();
  const [, workspaceId, sessionId, secret] = match as unknown as [string, string, string, string];
  const hash = sha256(secret);
  const session = await sessions.get(workspaceId, sessionId);
  if (!session || session.expires_at * 1000 <= nowMs) throw unauthorized();
  if (!sameHash(session.refresh_hash, hash)) {
    if (session.used_hashes.includes(hash)) {
      await table.delete({ Key: keys.memberSession(workspaceId, sessionId) });
      throw new RefreshReused();
    }
    throw unauthorized();
  }
  const member = await members.get(workspaceId, session.member_id);
  if (!member || member.active === false) throw unauthorized();
  const next = randomBytes(32).toString('hex');
  const refreshed = await sessions.update([workspaceId, sessionId], {
    UpdateExpression: 'SET refresh_hash = :next, used_hashes = :used, refreshed_timestamp = :now',
    ConditionExpression: 'refresh_hash = :current',
    ExpressionAttributeValues: {
      ':next': sha256(next),
      ':current': hash,
      ':used': [...session.used_hashes, hash].slice(-MAX_USED_HASHES),
      ':now': nowMs,
    },
  });
  if (!refreshed) {
    // Two refreshes with one token: the loser presented a token already spent.
    await table.delete({ Key: keys.memberSession(workspaceId, sessionId) });
    throw new RefreshReused();
  }
  return tokensFor(member, sessionId, next);
}

/** Signs the calling session out (its token and refresh token stop working at once). */
export async function signOut(principal: Principal): Promise<MediaResponse> {
  if (principal.member) await table.delete({ Key: keys.memberSession(principal.workspaceId, principal.member.sessionId) });
  return new MediaResponse('application/json', JSON.stringify({ signed_out: principal.member !== undefined }), { 'set-cookie': clearedSessionCookie() });
}

/** The local CLI's `create-session`: a session for an existing member, without an identity provider. */
export async function createSessionFor(workspaceId: string, email: string): Promise<{ session_token: string; role: string }> {
  const claim = await memberEmails.get(workspaceId, email.trim().toLowerCase());
  const member = claim ? await members.get(workspaceId, claim.member_id) : undefined;
  if (!member) throw new Error(`${email} is not a member of ${workspaceId}`);
  const issued = await startSession(member);
  return { session_token: issued.session_token, role: member.role };
}
