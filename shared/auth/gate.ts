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
import { countRequest, uncountRequest } from './request-counter.ts';
import { rateHeaders, readWindow } from './rate-window.ts';
import { assertScope, type Access, type Scope } from './scopes.ts';

export interface Principal {
  kind: CredentialItem['kind'];
  workspaceId: string;
  credentialId: string;
  scopes: Scope[];
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
  /** A public (browser) key may call this route: starting web calls and chats. */
  publicKey?: boolean;
}

export interface Admission {
  principal?: Principal;
  headers: Record<string, string>;
}

const TOKEN = /^(?:key|public_key)_[0-9a-f]{48}$/;
const IP_WINDOW_TTL_SECONDS = 180;

/**
 * Everything that stands between a request and its handler, in one sequential round trip:
 * the per-IP window and the credential (lookup + key window + last use) are written in
 * parallel; the rules are then applied in the spec's order. Refused requests are taken
 * back out of the windows they were counted in.
 */
export async function admit(route: GateRoute, request: GateRequest, nowMs = Date.now()): Promise<Admission> {
  const token = route.access === 'public' ? undefined : bearerToken(request.authorization);
  const ipKey = keys.ipRateWindow(request.sourceIp);
  const credentialKey = token ? keys.credential(sha256(token)) : undefined;

  const [ipItem, credential] = await Promise.all([
    countRequest(ipKey, nowMs, { mustExist: false, ttlSeconds: IP_WINDOW_TTL_SECONDS }),
    credentialKey
      ? (countRequest(credentialKey, nowMs, { mustExist: true, touchLastUsed: true }) as Promise<
          CredentialItem | undefined
        >)
      : undefined,
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

  if (credential.kind === 'public') {
    const origins = credential.allowed_origins ?? [];
    if (origins.length > 0 && !(request.origin && origins.includes(request.origin.toLowerCase()))) {
      await uncountRequest(credentialKey, nowMs);
      throw withHeaders(unauthorized(), headers);
    }
    if (!route.publicKey) throw withHeaders(publicKeyRestricted(), headers);
  }

  const allowedIps = credential.allowed_ips ?? [];
  if (allowedIps.length > 0 && !allowedIps.includes(request.sourceIp)) {
    await uncountRequest(credentialKey, nowMs);
    throw withHeaders(ipNotAllowed(request.sourceIp), headers);
  }

  if (!keyWindow.allowed) {
    await uncountRequest(credentialKey, nowMs);
    throw withHeaders(
      tooManyRequests(
        `Rate limit exceeded for this API key: ${limit} requests per minute. Retry in ${keyWindow.retryAfterSeconds}s.`,
        keyWindow.retryAfterSeconds,
      ),
      headers,
    );
  }

  const scopes = credential.scopes ?? [];
  if (route.access !== 'any-key') {
    try {
      assertScope(scopes, route.access);
    } catch (error) {
      throw withHeaders(error as ApiError, headers);
    }
  }

  return {
    principal: {
      kind: credential.kind,
      workspaceId: credential.workspace_id,
      credentialId: credential.credential_id,
      scopes,
      credential,
    },
    headers,
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
