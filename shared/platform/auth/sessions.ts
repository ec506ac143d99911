import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { decryptSecret, encryptSecret } from '../crypto/envelope.ts';
import type * as JoseSession from './jose-session.ts';
import { keys, type ItemKey } from '../store/keys.ts';
import { ConditionFailed, table } from '../store/table.ts';
import type { Role } from './roles.ts';
import { loadOnce } from '../lazy.ts';

/*
 * Dashboard sessions (members signed in with SSO, SAML or an invite): a short-lived token
 * signed with the platform's Ed25519 key (jose, `EdDSA`). Only the members function signs
 * (it opens the sealed private key); every gate verifies with the public key, kept in
 * clear beside it, so no other function needs KMS and reading the table cannot forge one.
 * The token names the member and the session; the gate reads both on every request (one
 * BatchGetItem, in parallel with the per-IP window), so a removed, deactivated or demoted
 * member, or a signed-out session, is refused or re-roled at its very next request.
 */

export const SESSION_TTL_SECONDS = 15 * 60;
export const SESSION_COOKIE = 'parley_session';
export const CSRF_HEADER = 'x-csrf-token';
const ISSUER = 'parley';
const AUDIENCE = 'parley-api';
const ALGORITHM = 'EdDSA';

/** What the gate needs of a member item (shared/members declares the whole item). */
export interface MemberAuthItem extends ItemKey {
  member_id: string;
  workspace_id: string;
  email: string;
  role: Role;
  active: boolean;
}

/** What the gate needs of a session item. */
export interface SessionAuthItem extends ItemKey {
  session_id: string;
  member_id: string;
  workspace_id: string;
}

export interface SessionClaims {
  workspaceId: string;
  memberId: string;
  sessionId: string;
  /** The CSRF token a cookie-authenticated write must echo in `x-csrf-token`. */
  csrf: string;
}

interface SigningKeyItem extends ItemKey {
  kid: string;
  public_key_pem: string;
  private_key_sealed: string;
  created_timestamp: number;
}

const SIGNING_CONTEXT = { workspace_id: 'platform', record: 'session-signing-key' };


/**
 * jose's sign and verify, loaded by the first token signed or verified: every HTTP function
 * reaches this module through the gate, and most of their requests carry an API key, not a
 * session (docs/performance.md, "Sizes: cold and lazy").
 */
const loadJose = loadOnce((): Promise<typeof JoseSession> => import('./jose-session.ts'));

let verifying: Promise<{ kid: string; key: KeyObject }> | undefined;
let signing: Promise<{ kid: string; key: KeyObject }> | undefined;

/** The key item, created on first need (the first of two racing writers wins; the other reads it). */
async function signingKeyItem(create: boolean): Promise<SigningKeyItem | undefined> {
  const existing = await table.get<SigningKeyItem>(keys.sessionSigningKey());
  if (existing || !create) return existing;
  const pair = generateKeyPairSync('ed25519');
  const kid = randomBytes(8).toString('hex');
  const item: SigningKeyItem = {
    ...keys.sessionSigningKey(),
    kid,
    public_key_pem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    private_key_sealed: await encryptSecret(pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), SIGNING_CONTEXT),
    created_timestamp: Date.now(),
  };
  try {
    await table.put({ Item: item, ConditionExpression: 'attribute_not_exists(pk)' });
    return item;
  } catch (error) {
    if (error instanceof ConditionFailed) return table.get<SigningKeyItem>(keys.sessionSigningKey());
    throw error;
  }
}

/** The public key, read once per instance (no key yet: no session can exist). */
function verificationKey(): Promise<{ kid: string; key: KeyObject } | undefined> {
  verifying ??= signingKeyItem(false).then((item) => {
    if (!item) throw new NoKeyYet();
    return { kid: item.kid, key: createPublicKey(item.public_key_pem) };
  });
  return verifying.catch((error: unknown) => {
    verifying = undefined;
    if (error instanceof NoKeyYet) return undefined;
    throw error;
  });
}
class NoKeyYet extends Error {}

function signingKey(): Promise<{ kid: string; key: KeyObject }> {
  signing ??= signingKeyItem(true).then(async (item) => ({
    kid: item!.kid,
    key: createPrivateKey(await decryptSecret(item!.private_key_sealed, SIGNING_CONTEXT)),
  }));
  return signing.catch((error: unknown) => {
    signing = undefined;
    throw error;
  });
}

/** A signed session token for the member and session, valid SESSION_TTL_SECONDS. */
export async function signSessionToken(claims: SessionClaims, nowMs = Date.now()): Promise<string> {
  const [{ kid, key }, { SignJWT }] = await Promise.all([signingKey(), loadJose()]);
  return new SignJWT({ ws: claims.workspaceId, sid: claims.sessionId, csrf: claims.csrf })
    .setProtectedHeader({ alg: ALGORITHM, kid, typ: 'JWT' })
    .setSubject(claims.memberId)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt(Math.floor(nowMs / 1000))
    .setExpirationTime(Math.floor(nowMs / 1000) + SESSION_TTL_SECONDS)
    .sign(key);
}

/** The token's claims, or undefined for anything forged, expired, malformed or of another key. */
export async function verifySessionToken(token: string, nowMs = Date.now()): Promise<SessionClaims | undefined> {
  const key = await verificationKey();
  if (!key) return undefined;
  const { JOSEError, jwtVerify } = await loadJose();
  try {
    const { payload, protectedHeader } = await jwtVerify(token, key.key, {
      algorithms: [ALGORITHM],
      issuer: ISSUER,
      audience: AUDIENCE,
      currentDate: new Date(nowMs),
      clockTolerance: 5,
    });
    if (protectedHeader.kid !== key.kid) return undefined;
    const { sub, ws, sid, csrf } = payload as { sub?: unknown; ws?: unknown; sid?: unknown; csrf?: unknown };
    if (typeof sub !== 'string' || typeof ws !== 'string' || typeof sid !== 'string' || typeof csrf !== 'string') return undefined;
    return { workspaceId: ws, memberId: sub, sessionId: sid, csrf };
  } catch (error) {
    if (error instanceof JOSEError) return undefined;
    throw error;
  }
}

/** Reads the member and the session behind verified claims in one BatchGetItem. */
export async function readSession(claims: SessionClaims): Promise<{ member?: MemberAuthItem; session?: SessionAuthItem }> {
  const memberKey = keys.member(claims.workspaceId, claims.memberId);
  const sessionKey = keys.memberSession(claims.workspaceId, claims.sessionId);
  const items = await table.batchGet<MemberAuthItem & SessionAuthItem>([memberKey, sessionKey]);
  return {
    member: items.find((item) => item.pk === memberKey.pk && item.sk === memberKey.sk),
    session: items.find((item) => item.pk === sessionKey.pk && item.sk === sessionKey.sk),
  };
}

/** A JWS compact token (three base64url segments), as opposed to an API key. */
const SESSION_TOKEN = /^[\w-]{10,2000}\.[\w-]{10,4000}\.[\w-]{20,200}$/;
export const looksLikeSessionToken = (token: string) => SESSION_TOKEN.test(token);

/** One cookie's value from a Cookie header (or API Gateway's joined `cookies`); a repeated name is refused. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  let found: string | undefined;
  for (const part of header.split(/[;,]/)) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    if (found !== undefined) return undefined;
    found = part.slice(eq + 1).trim();
  }
  return found;
}

/** The Set-Cookie of a session: HttpOnly, Secure, SameSite=Strict, for the token's lifetime. */
export function sessionCookie(token: string): string {
  return `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${SESSION_TTL_SECONDS}; HttpOnly; Secure; SameSite=Strict`;
}
export const clearedSessionCookie = () => `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict`;
