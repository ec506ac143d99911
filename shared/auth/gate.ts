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
import type { CredentialItem } from '../credentials.ts';
import { countRequest, stampLastUse, uncountRequest } from './request-counter.ts';
import { rateHeaders, readWindow } from './rate-window.ts';
import { assertScope, PUBLIC_KEY_CAPABILITIES, type Access, type PublicCapability, type Scope } from './scopes.ts';

export interface Principal {
  kind: CredentialItem['kind'];
  workspaceId: string;
  credentialId: string;
  /** A secret key's scopes (empty: full access). A public key's are empty and mean nothing: see `capabilities`. */
  scopes: Scope[];
  /** What a public key may do (the fixed set); a secret key's is empty, its scopes rule. */
  capabilities: readonly PublicCapability[];
  credential: CredentialItem;
}

export interface GateRequest {
  /** API Gateway's source IP (never a client-supplied header), canonicalised. */
  sourceIp: string;
  authorization?: string;
  origin?: string;
}

export interface GateRoute {
  access: Access;
  /** The capability a public (browser) key needs here; without it public keys are refused. */
  publicKey?: PublicCapability;
}

export interface Admission {
  principal?: Principal;
  headers: Record<string, string>;
  /**
   * The admitted key's last-use stamp, written while the handler runs; the pipeline waits
   * for it before answering so no write outlives the invocation.
   */
  lastUse?: Promise<void>;
}

const TOKEN = /^(?:key|public_key)_[0-9a-f]{48}$/;
const IP_WINDOW_TTL_SECONDS = 180;

/**
 * Everything that stands between a request and its handler, in one sequential round trip:
 * the per-IP window and the credential (lookup + key window) are written in parallel; the
 * rules are then applied in the spec's order. A refused request changes nothing of its
 * key: it is taken back out of the key's window, and only an admitted request stamps the
 * key's last use (in a write that runs beside the handler). The per-IP window keeps every
 * request, refused or not: it is what stops guessing and floods before authentication.
 */
export async function admit(route: GateRoute, request: GateRequest, nowMs = Date.now()): Promise<Admission> {
  const token = route.access === 'public' ? undefined : bearerToken(request.authorization);
  const ipKey = keys.ipRateWindow(request.sourceIp);
  const credentialKey = token ? keys.credential(sha256(token)) : undefined;

  const [ipItem, credential] = await Promise.all([
    countRequest(ipKey, nowMs, { mustExist: false, ttlSeconds: IP_WINDOW_TTL_SECONDS }),
    credentialKey ? (countRequest(credentialKey, nowMs, { mustExist: true }) as Promise<CredentialItem | undefined>) : undefined,
  ]);

  const ipWindow = readWindow(ipItem ?? {}, nowMs, config.RATE_LIMIT_PER_IP);
  if (!ipWindow.allowed) {
    await Promise.all([uncountRequest(ipKey, nowMs), credentialKey && uncountRequest(credentialKey, nowMs)]);
    throw withHeaders(
      tooManyRequests(
        `Rate limit exceeded for this IP address: ${ipWindow.limit} requests per minute. Retry in ${ipWindow.retryAfterSeconds}s.`,
        ipWindow.retryAfterSeconds,
      ),
      rateHeaders(ipWindow),
    );
  }
  if (route.access === 'public') return { headers: rateHeaders(ipWindow) };
  if (!credential || !credentialKey) throw withHeaders(unauthorized(), rateHeaders(ipWindow));

  const limit = credential.rate_limit_per_minute ?? config.RATE_LIMIT_PER_KEY;
  const keyWindow = readWindow(credential, nowMs, limit);
  const headers = rateHeaders(keyWindow);
  const refuse = async (error: ApiError): Promise<never> => {
    await uncountRequest(credentialKey, nowMs);
    throw withHeaders(error, headers);
  };

  const isPublic = credential.kind === 'public';
  if (isPublic) {
    const origins = credential.allowed_origins ?? [];
    if (origins.length > 0 && !(request.origin && origins.includes(request.origin.toLowerCase()))) await refuse(unauthorized());
    if (!route.publicKey || !PUBLIC_KEY_CAPABILITIES.includes(route.publicKey)) await refuse(publicKeyRestricted());
  }

  const allowedIps = credential.allowed_ips ?? [];
  if (allowedIps.length > 0 && !allowedIps.includes(request.sourceIp)) await refuse(ipNotAllowed(request.sourceIp));

  if (!keyWindow.allowed) {
    await refuse(
      tooManyRequests(
        `Rate limit exceeded for this API key: ${limit} requests per minute. Retry in ${keyWindow.retryAfterSeconds}s.`,
        keyWindow.retryAfterSeconds,
      ),
    );
  }

  // A public key passed on its capability above; it holds no scope to check.
  const scopes = isPublic ? [] : (credential.scopes ?? []);
  if (!isPublic && route.access !== 'any-key') {
    try {
      assertScope(scopes, route.access);
    } catch (error) {
      await refuse(error as ApiError);
    }
  }

  return {
    principal: {
      kind: credential.kind,
      workspaceId: credential.workspace_id,
      credentialId: credential.credential_id,
      scopes,
      capabilities: isPublic ? PUBLIC_KEY_CAPABILITIES : [],
      credential: { ...credential, last_used_timestamp: nowMs },
    },
    headers,
    lastUse: stampLastUse(credentialKey, nowMs),
  };
}

/** `Authorization: Bearer <key>`; the scheme is case-insensitive (RFC 9110), the key is not. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^bearer +(\S+) *$/i.exec(header);
  const token = match?.[1];
  return token && TOKEN.test(token) ? token : undefined;
}

function withHeaders(error: ApiError, headers: Record<string, string>): ApiError {
  Object.assign(error.headers, headers, error.headers);
  return error;
}
