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
import { countRequest, presentShard, stampLastUse, uncountRequest, type CredentialCondition } from './request-counter.ts';
import { epochMinute, rateHeaders, readWindow, type WindowReading } from './rate-window.ts';
import { rateWindowAttribute } from '../store/keys.ts';
import { keyHint, otherShards, rememberKey, roomAt, shardCap, shardKey, shardShare, type KeyHint } from './key-shards.ts';
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
  /**
   * The assistant's session whose tool made this request (shared/conductor/tools/dispatch.ts):
   * set by the handler from the invocation's request context, which only a direct invocation
   * can carry (API Gateway builds it; no client header reaches it). The audit log marks it.
   */
  conductorSessionId?: string;
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
  /**
   * A public route that checks a credential of its own (a voice worker's per-call token):
   * the gate counts nothing; the route counts its refusals in the address's window
   * (countAddress), so a worker's reports never make its address's item hot.
   */
  ownCredential?: boolean;
}

export interface Admission {
  principal?: Principal;
  headers: Record<string, string>;
}

const TOKEN = /^(?:key|public_key)_[0-9a-f]{48}$/;
const IP_WINDOW_TTL_SECONDS = 180;
/** A key's last use is kept to the minute: its record is stamped only when its stamp is older. */
const LAST_USE_RESOLUTION_MS = 60_000;

/**
 * Everything that stands between a request and its handler. A key's request is one write:
 * a conditional UpdateItem on one shard of the key's rate window (key-shards.ts) that
 * counts it only if the record's rules (origin, public-key capability, allowlist, scope,
 * role) admit it and its shard's share has room, and returns the record. A request its
 * shard refuses tries the others, so a request is refused only when every shard is full
 * and exactly the limit is admitted (docs/scale.md, "Hot items: the request gate"). A
 * refused request changes nothing of its key.
 *
 * The per-IP window counts where nothing else bounds a request: public routes, sessions
 * (they have no window of their own), and failed authentications (no key, an unknown key,
 * a key its rules refuse), which is what stops guessing and floods before authentication.
 * A key's admitted requests are bounded by the key's own window and do not write the
 * address's, so one busy key never makes its address's item hot. docs/security.md.
 */
export async function admit(route: GateRoute, request: GateRequest, nowMs = Date.now()): Promise<Admission> {
  if (route.access !== 'public') {
    const session = presentedSession(request);
    if (session) return admitSession(route, request, session, nowMs);
  }
  if (route.access === 'public') {
    if (route.ownCredential) return { headers: {} };
    return { headers: await countAddress(request.sourceIp, nowMs) };
  }
  const token = bearerToken(request.authorization);
  if (!token) throw withHeaders(unauthorized(), await countAddress(request.sourceIp, nowMs));
  return admitKey(route, request, sha256(token), nowMs);
}

/**
 * Counts a failed authentication (or a request on a route that authenticates itself and
 * refused its credential) in the source address's window: 429 over the limit, else the
 * window's headers for the caller's own refusal.
 */
export async function countAddress(sourceIp: string, nowMs = Date.now()): Promise<Record<string, string>> {
  const ipKey = keys.ipRateWindow(sourceIp);
  const ipItem = await countRequest(ipKey, nowMs, { mustExist: false, ttlSeconds: IP_WINDOW_TTL_SECONDS });
  const ipWindow = readWindow(ipItem ?? {}, nowMs, config.RATE_LIMIT_PER_IP);
  if (!ipWindow.allowed) {
    await uncountRequest(ipKey, nowMs);
    throw withHeaders(
      tooManyRequests(
        `Rate limit exceeded for this IP address: ${ipWindow.limit} requests per minute. Retry in ${ipWindow.retryAfterSeconds}s.`,
        ipWindow.retryAfterSeconds,
        'ip',
      ),
      rateHeaders(ipWindow),
    );
  }
  return rateHeaders(ipWindow);
}

interface ShardReading {
  index: number;
  item: Record<string, unknown>;
  reading: WindowReading;
}

type ShardOutcome =
  | { outcome: 'unknown' }
  /** The record's rules refuse the request: `record` as read, this request counted in `shard`'s reading. */
  | { outcome: 'refused'; record: CredentialItem; shard: ShardReading }
  | { outcome: 'full'; record: CredentialItem; shard: ShardReading }
  | { outcome: 'admitted'; record: CredentialItem; shard: ShardReading };

async function admitKey(route: GateRoute, request: GateRequest, hash: string, nowMs: number): Promise<Admission> {
  const rules = recordRules(route, request);
  const minute = epochMinute(nowMs);

  /** One shard: counted if its rules and share admit the request, else why not. Full shards are taken back. */
  const tryShard = async (index: number, capped = true): Promise<ShardOutcome> => {
    const hint = keyHint(hash);
    const cap = capped && hint ? shardCap(hint, index, nowMs) : undefined;
    const presented = await presentShard(shardKey(hash, index), nowMs, rules, cap);
    if (presented.outcome === 'unknown') return { outcome: 'unknown' };
    const counted = presented.outcome === 'counted';
    const item = counted ? presented.item : withThisRequest(presented.item, nowMs);
    const record = item as unknown as CredentialItem;
    const limit = record.rate_limit_per_minute ?? config.RATE_LIMIT_PER_KEY;
    const shards = record.rate_shards ?? 1;
    const known = rememberKey(hash, shards, limit);
    const current = Number(item[rateWindowAttribute(minute)] ?? 0);
    const previous = Number(item[rateWindowAttribute(minute - 1)] ?? 0);
    known.seen.set(index, { minute, current, previous });
    const share = shardShare(limit, shards, index);
    const shard = { index, item, reading: readWindow(item, nowMs, share) };
    if (counted && shard.reading.allowed) return { outcome: 'admitted', record, shard };
    if (!counted && ruleRefusal(route, request, record)) return { outcome: 'refused', record, shard };
    if (counted) {
      await uncountRequest(shardKey(hash, index), nowMs);
    } else if (shard.reading.allowed) {
      // Refused by a cap tighter than the shard (rounding, or an outdated hint): once more, uncapped.
      return capped ? tryShard(index, false) : { outcome: 'refused', record, shard };
    }
    // Full: nothing of this request stays counted. Until it has room, this process's requests skip it.
    known.fullUntil.set(index, roomAt(share, previous, current - 1, nowMs));
    return { outcome: 'full', record, shard };
  };

  // The process's hint of the key's shards picks where to start; the record always exists.
  const hint = keyHint(hash);
  const open = (shards: number, except = -1) => otherShards(shards, except).filter((index) => (keyHint(hash)?.fullUntil.get(index) ?? 0) <= nowMs);
  // With every shard seen full, one capped write still reads the key as it is now (a changed
  // limit, a deleted key), and refuses with nothing counted.
  const start = hint ? (startShard(hint, open(hint.shards), nowMs) ?? otherShards(hint.shards, -1)[0]!) : 0;
  let first = await tryShard(start);
  if (first.outcome === 'unknown' && start !== 0) first = await tryShard(0);
  if (first.outcome === 'unknown') throw withHeaders(unauthorized(), await countAddress(request.sourceIp, nowMs));

  const limit = first.record.rate_limit_per_minute ?? config.RATE_LIMIT_PER_KEY;
  if (first.outcome === 'refused') {
    // Refused by the record's rules: nothing of the key was written; the address's window counts it.
    const reading = keyReading(limit, [first.shard]);
    const error = ruleRefusal(route, request, first.record, first.shard.reading.allowed ? undefined : keyLimitRefusal(reading));
    const ipHeaders = await countAddress(request.sourceIp, nowMs);
    if (!error) throw new Error('The key record was refused by its write condition but passed every rule');
    throw withHeaders(error, { ...ipHeaders, ...rateHeaders(reading) });
  }

  let admitted = first.outcome === 'admitted' ? first.shard : undefined;
  const full: ShardReading[] = admitted ? [] : [first.shard];
  if (!admitted) {
    // Full here: every other shard in turn, until one has room (those seen full this minute without a write).
    for (const index of open(first.record.rate_shards ?? 1, first.shard.index)) {
      const next = await tryShard(index);
      if (next.outcome === 'admitted') {
        admitted = next.shard;
        break;
      }
      if (next.outcome === 'full') full.push(next.shard);
    }
  }
  if (!admitted) {
    const reading = keyReading(limit, full);
    throw withHeaders(keyLimitRefusal(reading), rateHeaders(reading));
  }

  const credential = { ...(admitted.item as unknown as CredentialItem), ...keys.credential(hash) };
  const headers = rateHeaders(keyReading(limit, [admitted]));
  // The write's condition held, so these rules hold too; they cannot disagree.
  const error = ruleRefusal(route, request, credential);
  if (error) throw withHeaders(error, headers);

  const lastUse = credential.last_used_timestamp;
  if (lastUse === undefined || lastUse < nowMs - LAST_USE_RESOLUTION_MS) {
    const stamped = [keys.credential(hash), ...(admitted.index === 0 ? [] : [shardKey(hash, admitted.index)])];
    await stampLastUse(stamped, nowMs, LAST_USE_RESOLUTION_MS);
    credential.last_used_timestamp = nowMs;
  }

  const isPublic = credential.kind === 'public';
  return {
    principal: {
      kind: credential.kind,
      workspaceId: credential.workspace_id,
      credentialId: credential.credential_id,
      // A public key passed on its capability; it holds no scope to check.
      scopes: isPublic ? [] : (credential.scopes ?? []),
      capabilities: isPublic ? PUBLIC_KEY_CAPABILITIES : [],
      credential,
      // The role check refused a key whose role is `none`.
      ...(isPublic ? {} : { role: keyRole(credential) as Role, actingMemberId: credential.created_by_member }),
    },
    headers,
  };
}

/**
 * The rule that refuses the request, in the spec's order (origin and capability of a
 * public key, the allowlist, the key's limit, scope and role), or undefined.
 */
function ruleRefusal(route: GateRoute, request: GateRequest, credential: CredentialItem, overLimit?: ApiError): ApiError | undefined {
  const isPublic = credential.kind === 'public';
  if (isPublic) {
    if (!originAllowed(credential, request.origin)) return unauthorized();
    if (!capabilityAllowed(route)) return publicKeyRestricted();
  }
  if (!ipAllowed(credential, request.sourceIp)) return ipNotAllowed(request.sourceIp);
  if (overLimit) return overLimit;
  if (isPublic) return undefined;
  try {
    if (route.access !== 'any-key' && route.access !== 'public') assertScope(credential.scopes ?? [], route.access);
    // A secret key never acts beyond the role of the member who made it.
    assertKeyRole(credential, roleRoute(route));
  } catch (error) {
    return error as ApiError;
  }
  return undefined;
}

/**
 * Where a request starts: the better of two random open shards, by the room this process
 * last saw in each. Two choices keep the shards filling evenly (so no shard is left alone
 * with room while the others are full, taking every request) while no shard gets more than
 * 1 − ((N−1)/N)² of the requests (7/16 with 4 shards: 730 writes a second at the target).
 */
function startShard(hint: KeyHint, open: number[], nowMs: number): number | undefined {
  const room = (index: number) => {
    const seen = hint.seen.get(index);
    const used = seen && seen.minute === epochMinute(nowMs) ? seen.current : 0;
    return shardCap(hint, index, nowMs) - used;
  };
  const [a, b] = open;
  if (a === undefined || b === undefined) return a;
  return room(b) > room(a) ? b : a;
}

const keyLimitRefusal = (reading: WindowReading) =>
  tooManyRequests(
    `Rate limit exceeded for this API key: ${reading.limit} requests per minute. Retry in ${reading.retryAfterSeconds}s.`,
    reading.retryAfterSeconds,
    'key',
  );

/**
 * The key's window as its headers tell it, from the shards read: the limit is the key's,
 * the reset the minute's; what remains is scaled from the last shard read to the whole key
 * (exact with one shard, an estimate with more); the wait is the shortest of the full shards'.
 */
function keyReading(limit: number, read: ShardReading[]): WindowReading {
  const last = read[read.length - 1]!.reading;
  const remaining = last.limit > 0 ? Math.min(limit, Math.floor((last.remaining * limit) / last.limit)) : 0;
  return {
    ...last,
    limit,
    remaining: last.allowed ? remaining : 0,
    retryAfterSeconds: Math.min(...read.map((shard) => shard.reading.retryAfterSeconds)),
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
