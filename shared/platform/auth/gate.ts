import { config } from '../config.ts';
import { sha256 } from '../crypto/hash.ts';
import type {
  ApiError} from '../errors.ts';
import {
  ipNotAllowed,
  publicKeyRestricted,
  tooManyRequests,
  unauthorized,
} from '../errors.ts';
import { keys } from '../store/keys.ts';
import type { CredentialItem } from './credentials.ts';
import { countRequest, presentCredential, takeBackCredential, uncountRequest, type CredentialCondition } from './request-counter.ts';
import { epochMinute } from './rate-window.ts';
import { rateWindowAttribute } from '../store/keys.ts';
import { rateHeaders, readWindow } from './rate-window.ts';
import { assertScope, PUBLIC_KEY_CAPABILITIES, type Access, type PublicCapability, type Scope } from './scopes.ts';
import { assertKeyRole, assertRole, keyRole, keyRoleCondition, type Role, type RoleRoute } from './roles.ts';
import { CSRF_HEADER, SESSION_COOKIE, cookieValue, looksLikeSessionToken, readSession, verifySessionToken, type SessionClaims } from './sessions.ts';
import { forbidden } from '../errors.ts';
import { timingSafeEqual } from 'node:crypto';

export interface Principal {
  /** A secret or public API key, or a member's dashboard session. */
  kind: CredentialItem['kind'] | 'session';
  workspaceId: string;
  /** The API key's ID, or the signed-in member's ID. */
  credentialId: string;
  /** A secret key's scopes (empty: full access). A public key's are empty and mean nothing: see `capabilities`. */
  scopes: Scope[];
  /** What a public key may do (the fixed set); a secret key's is empty, its scopes rule. */
  capabilities: readonly PublicCapability[];
  /** The key's record (absent for a session). */
  credential?: CredentialItem;
  /** The signed-in member (sessions only): the role as read on this request. */
  member?: { memberId: string; email: string; role: Role; sessionId: string; viaCookie: boolean };
  /**
   * The role the request acts with: a session's member's, or a secret key's creator's
   * (roles.ts `keyRole`). Absent for a public key, or a principal no credential stands behind.
   */
  role?: Role;
  /** The member the request acts for: the signed-in member, or the member who made the secret key. */
  actingMemberId?: string;
}

export interface GateRequest {
  /** API Gateway's source IP (never a client-supplied header), canonicalised. */
  sourceIp: string;
  authorization?: string;
  origin?: string;
  /** The Cookie header (API Gateway's `cookies` joined): a session may come as a cookie. */
  cookie?: string;
  /** `x-csrf-token`: what a cookie-authenticated write must echo. */
  csrfToken?: string;
}

export interface GateRoute {
  access: Access;
  /** The capability a public (browser) key needs here; without it public keys are refused. */
  publicKey?: PublicCapability;
  /** For the role check of sessions and secret keys (roles.ts); without a method the route counts as a read. */
  method?: string;
  path?: string;
  role?: Role;
}

export interface Admission {
  principal?: Principal;
  headers: Record<string, string>;
}

const TOKEN = /^(?:key|public_key)_[0-9a-f]{48}$/;
const IP_WINDOW_TTL_SECONDS = 180;

/**
 * Everything that stands between a request and its handler, in one sequential round trip:
 * the per-IP window and the key are written in parallel; the rules are then applied in
 * the spec's order. A refused request changes nothing of its key: the rules its record
 * decides (origin, public-key capability, allowlist, scope) are the condition of the
 * key's write, so a request they refuse writes nothing; one refused by a limit is taken
 * back out of the key's window and its last-use stamp restored. The per-IP window keeps
 * every request but its own 429s: it is what stops guessing and floods before
 * authentication.
 */
export async function admit(route: GateRoute, request: GateRequest, nowMs = Date.now()): Promise<Admission> {
  if (route.access !== 'public') {
    const session = presentedSession(request);
    if (session) return admitSession(route, request, session, nowMs);
  }
  const token = route.access === 'public' ? undefined : bearerToken(request.authorization);
  const ipKey = keys.ipRateWindow(request.sourceIp);
  const credentialKey = token ? keys.credential(sha256(token)) : undefined;

  const [ipItem, presented] = await Promise.all([
    countRequest(ipKey, nowMs, { mustExist: false, ttlSeconds: IP_WINDOW_TTL_SECONDS }),
    credentialKey ? presentCredential(credentialKey, nowMs, recordRules(route, request)) : undefined,
  ]);
  const takeBack = () =>
    credentialKey && presented?.outcome === 'counted'
      ? takeBackCredential(credentialKey, nowMs, presented.previousLastUse)
      : undefined;

  const ipWindow = readWindow(ipItem ?? {}, nowMs, config.RATE_LIMIT_PER_IP);
  if (!ipWindow.allowed) {
    await Promise.all([uncountRequest(ipKey, nowMs), takeBack()]);
    throw withHeaders(
      tooManyRequests(
        `Rate limit exceeded for this IP address: ${ipWindow.limit} requests per minute. Retry in ${ipWindow.retryAfterSeconds}s.`,
        ipWindow.retryAfterSeconds,
        'ip',
      ),
      rateHeaders(ipWindow),
    );
  }
  if (route.access === 'public') return { headers: rateHeaders(ipWindow) };
  if (!presented || presented.outcome === 'unknown') throw withHeaders(unauthorized(), rateHeaders(ipWindow));

  // A refused record was not counted: read its window as if this request were in it.
  const credential = (
    presented.outcome === 'counted' ? presented.item : withThisRequest(presented.item, nowMs)
  ) as unknown as CredentialItem;
  const limit = credential.rate_limit_per_minute ?? config.RATE_LIMIT_PER_KEY;
  const keyWindow = readWindow(credential, nowMs, limit);
  const headers = rateHeaders(keyWindow);
  const refuse = async (error: ApiError): Promise<never> => {
    await takeBack();
    throw withHeaders(error, headers);
  };

  const isPublic = credential.kind === 'public';
  if (isPublic) {
    if (!originAllowed(credential, request.origin)) await refuse(unauthorized());
    if (!capabilityAllowed(route)) await refuse(publicKeyRestricted());
  }
  if (!ipAllowed(credential, request.sourceIp)) await refuse(ipNotAllowed(request.sourceIp));

  if (!keyWindow.allowed) {
    await refuse(
      tooManyRequests(
        `Rate limit exceeded for this API key: ${limit} requests per minute. Retry in ${keyWindow.retryAfterSeconds}s.`,
        keyWindow.retryAfterSeconds,
        'key',
      ),
    );
  }

  // A public key passed on its capability above; it holds no scope to check.
  const scopes = isPublic ? [] : (credential.scopes ?? []);
  if (!isPublic) {
    try {
      if (route.access !== 'any-key') assertScope(scopes, route.access);
      // A secret key never acts beyond the role of the member who made it.
      assertKeyRole(credential, roleRoute(route));
    } catch (error) {
      await refuse(error as ApiError);
    }
  }
  if (presented.outcome === 'refused') {
    // The write's condition and the rules above are the same rules; they cannot disagree.
    throw new Error('The key record was refused by its write condition but passed every rule');
  }

  return {
    principal: {
      kind: credential.kind,
      workspaceId: credential.workspace_id,
      credentialId: credential.credential_id,
      scopes,
      capabilities: isPublic ? PUBLIC_KEY_CAPABILITIES : [],
      credential,
      // assertKeyRole refused a key whose role is `none`.
      ...(isPublic ? {} : { role: keyRole(credential) as Role, actingMemberId: credential.created_by_member }),
    },
    headers,
  };
}

/** A session token from `Authorization: Bearer`, or else from the session cookie. */
function presentedSession(request: GateRequest): { token: string; viaCookie: boolean } | undefined {
  if (request.authorization) {
    const token = rawBearer(request.authorization);
    return token && looksLikeSessionToken(token) ? { token, viaCookie: false } : undefined;
  }
  const token = cookieValue(request.cookie, SESSION_COOKIE);
  return token && looksLikeSessionToken(token) ? { token, viaCookie: true } : undefined;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A member's session: the signature is checked in memory; the member and the session are
 * read in one BatchGetItem beside the per-IP window's write (one round trip, as for keys).
 * The role is the member's as read now, so a demotion holds at the next request; a removed
 * or deactivated member, or a signed-out session, is 401. A write authenticated by the
 * cookie must echo the session's CSRF token in `x-csrf-token` (a header another site's
 * form or image cannot set). Sessions are rate limited by the source IP's window.
 */
async function admitSession(route: GateRoute, request: GateRequest, presented: { token: string; viaCookie: boolean }, nowMs: number): Promise<Admission> {
  const ipKey = keys.ipRateWindow(request.sourceIp);
  const [ipItem, found] = await Promise.all([
    countRequest(ipKey, nowMs, { mustExist: false, ttlSeconds: IP_WINDOW_TTL_SECONDS }),
    verifySessionToken(presented.token, nowMs).then(async (claims) => (claims ? { claims, ...(await readSession(claims)) } : undefined)),
  ]);
  const ipWindow = readWindow(ipItem ?? {}, nowMs, config.RATE_LIMIT_PER_IP);
  const headers = rateHeaders(ipWindow);
  if (!ipWindow.allowed) {
    await uncountRequest(ipKey, nowMs);
    throw withHeaders(
      tooManyRequests(
        `Rate limit exceeded for this IP address: ${ipWindow.limit} requests per minute. Retry in ${ipWindow.retryAfterSeconds}s.`,
        ipWindow.retryAfterSeconds,
        'ip',
      ),
      headers,
    );
  }
  const member = found?.member;
  const session = found?.session;
  if (!found || !member || member.active === false || !session || session.member_id !== found.claims.memberId) {
    throw withHeaders(unauthorized(), headers);
  }
  if (presented.viaCookie && !SAFE_METHODS.has(route.method ?? 'GET') && !sameToken(request.csrfToken, found.claims)) {
    throw withHeaders(forbidden('Missing or invalid CSRF token: send the session\'s csrf_token in x-csrf-token'), headers);
  }
  try {
    assertRole(member.role, roleRoute(route));
  } catch (error) {
    throw withHeaders(error as ApiError, headers);
  }
  return {
    principal: {
      kind: 'session',
      workspaceId: member.workspace_id,
      credentialId: member.member_id,
      scopes: [],
      capabilities: [],
      member: { memberId: member.member_id, email: member.email, role: member.role, sessionId: session.session_id, viaCookie: presented.viaCookie },
      role: member.role,
      actingMemberId: member.member_id,
    },
    headers,
  };
}

const roleRoute = (route: GateRoute): RoleRoute => ({ method: route.method ?? 'GET', path: route.path ?? '', role: route.role });

function sameToken(sent: string | undefined, claims: SessionClaims): boolean {
  if (!sent) return false;
  const a = Buffer.from(sent);
  const b = Buffer.from(claims.csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}

export { CSRF_HEADER };

const originAllowed = (credential: CredentialItem, origin: string | undefined) => {
  const origins = credential.allowed_origins ?? [];
  return origins.length === 0 || (origin !== undefined && origins.includes(origin.toLowerCase()));
};
const capabilityAllowed = (route: GateRoute) => route.publicKey !== undefined && PUBLIC_KEY_CAPABILITIES.includes(route.publicKey);
const ipAllowed = (credential: CredentialItem, sourceIp: string) => {
  const allowedIps = credential.allowed_ips ?? [];
  return allowedIps.length === 0 || allowedIps.includes(sourceIp);
};

/**
 * The same rules as originAllowed, capabilityAllowed, ipAllowed, the scope and the role check, as
 * the condition of the key's write (a stored empty list means "any", like a missing one).
 */
function recordRules(route: GateRoute, request: GateRequest): CredentialCondition {
  const names: Record<string, string> = { '#kind': 'kind', '#ips': 'allowed_ips' };
  const values: Record<string, unknown> = { ':secret': 'secret', ':zero': 0, ':ip': request.sourceIp };
  const any = (attribute: string) => `attribute_not_exists(${attribute}) OR size(${attribute}) = :zero`;
  const clauses = [`(${any('#ips')} OR contains(#ips, :ip))`];
  if (capabilityAllowed(route)) {
    names['#origins'] = 'allowed_origins';
    // No Origin header matches no list entry (entries are origins, never empty).
    values[':origin'] = request.origin?.toLowerCase() ?? '';
    clauses.push(`(#kind = :secret OR ${any('#origins')} OR contains(#origins, :origin))`);
  } else {
    clauses.push('#kind = :secret');
  }
  if (route.access !== 'any-key' && route.access !== 'public') {
    names['#scopes'] = 'scopes';
    Object.assign(values, { ':public': 'public', ':admin': 'admin', ':scope': route.access });
    clauses.push(`(#kind = :public OR ${any('#scopes')} OR contains(#scopes, :admin) OR contains(#scopes, :scope))`);
  }
  const role = keyRoleCondition(roleRoute(route));
  Object.assign(names, role.names);
  Object.assign(values, role.values, { ':publicKind': 'public' });
  clauses.push(`(#kind = :publicKind OR ${role.expression})`);
  return { expression: clauses.join(' AND '), names, values };
}

function withThisRequest(item: Record<string, unknown>, nowMs: number): Record<string, unknown> {
  const window = rateWindowAttribute(epochMinute(nowMs));
  return { ...item, [window]: Number(item[window] ?? 0) + 1 };
}

/**
 * `Authorization: Bearer <key>`; the scheme is case-insensitive (RFC 9110), the key is not.
 * A request carries exactly one credential: API Gateway joins repeated headers with commas
 * (and the local server does the same), and no key contains one, so a joined value (two
 * Authorization headers, or one listing two credentials) is refused whole rather than
 * letting one of them win.
 */
export function bearerToken(header: string | undefined): string | undefined {
  const token = rawBearer(header);
  return token && TOKEN.test(token) ? token : undefined;
}

/** The one token of a Bearer header, whatever its form (a key or a session). */
export function rawBearer(header: string | undefined): string | undefined {
  if (!header || header.includes(',')) return undefined;
  return /^bearer +(\S+) *$/i.exec(header)?.[1];
}

function withHeaders(error: ApiError, headers: Record<string, string>): ApiError {
  Object.assign(error.headers, headers, error.headers);
  return error;
}
