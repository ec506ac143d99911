import * as oauth from 'oauth4webapi';
import { isProduction } from '../../platform/config.ts';
import { egressFetch, EgressRefused } from '../../platform/egress/egress.ts';
import { traced } from '../../platform/observability/tracing.ts';
import { mockTokenEndpoint } from './mock.ts';
import { MOCK_TOKEN_PATH, redirectUri, type KeptValue, type ResolvedProvider } from './providers.ts';

/*
 * The OAuth client: oauth4webapi builds and checks every request and answer (authorize
 * URL, authorization-code grant with PKCE, refresh grant, RFC 6749 errors); Parley only
 * supplies the transport. Every token request goes through the egress guard (a tenant's
 * login or accounts host is the user's choice); the built-in mock's token endpoint is
 * Parley's own, answered in process by the same code its HTTP route runs.
 */

export interface TokenSet {
  accessToken: string;
  refreshToken?: string;
  /** Epoch ms; undefined: the token does not expire (notion). */
  expiresAt?: number;
  scope?: string;
  kept: Partial<Record<KeptValue, string>>;
}

/** The provider refused the grant (`invalid_grant`: revoked or expired refresh token, a used code). */
export class GrantRevoked extends Error {
  constructor(readonly detail: string) {
    super(`The provider refused the grant: ${detail}`);
    this.name = 'GrantRevoked';
  }
}

/** The provider failed otherwise (unreachable, 5xx, a malformed answer, an address the egress guard refused). */
export class ProviderFailed extends Error {
  constructor(readonly detail: string) {
    super(`The OAuth provider failed: ${detail}`);
    this.name = 'ProviderFailed';
  }
}

const TOKEN_TIMEOUT_MS = 10_000;

function transport(provider: ResolvedProvider) {
  return async (url: string, init: oauth.CustomFetchOptions<'POST', URLSearchParams>): Promise<Response> => {
    const body = init.body instanceof URLSearchParams ? init.body.toString() : String(init.body ?? '');
    if (provider.mock && new URL(url).pathname === MOCK_TOKEN_PATH) return mockTokenEndpoint(new URLSearchParams(body));
    return traced('oauth', () =>
      egressFetch(url, { method: init.method, headers: init.headers, body, timeoutMs: TOKEN_TIMEOUT_MS, maxResponseBytes: 256 * 1024 }),
    );
  };
}

function parts(provider: ResolvedProvider) {
  const token = new URL(provider.tokenUrl);
  const as: oauth.AuthorizationServer = {
    issuer: token.origin,
    authorization_endpoint: provider.authorizeUrl,
    token_endpoint: provider.tokenUrl,
  };
  const client: oauth.Client = { client_id: provider.clientId };
  const auth =
    provider.mock || !provider.clientSecret
      ? oauth.None()
      : provider.spec.clientAuth === 'client_secret_basic'
        ? oauth.ClientSecretBasic(provider.clientSecret)
        : oauth.ClientSecretPost(provider.clientSecret);
  const options = {
    [oauth.customFetch]: transport(provider),
    // http: endpoints only outside production (test fakes on 127.0.0.1; the local mock).
    [oauth.allowInsecureRequests]: !isProduction,
    signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
  } as oauth.TokenEndpointRequestOptions;
  return { as, client, auth, options };
}

/** The PKCE pair for a new authorization (S256). */
export async function newPkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) };
}

/** The vendor's authorize URL: response_type=code, client_id, redirect_uri, state, scope and PKCE when used. */
export function authorizeUrl(provider: ResolvedProvider, state: string, codeChallenge?: string): string {
  const url = new URL(provider.authorizeUrl);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', provider.clientId);
  url.searchParams.set('redirect_uri', redirectUri());
  url.searchParams.set('state', state);
  url.searchParams.set('scope', provider.scopes.join(' '));
  if (codeChallenge) {
    url.searchParams.set('code_challenge', codeChallenge);
    url.searchParams.set('code_challenge_method', 'S256');
  }
  for (const [name, value] of Object.entries(provider.spec.authorizeExtras ?? {})) url.searchParams.set(name, value);
  return url.toString();
}

function tokenSet(provider: ResolvedProvider, answer: oauth.TokenEndpointResponse, nowMs: number): TokenSet {
  const kept: TokenSet['kept'] = {};
  for (const [name, field] of Object.entries(provider.spec.kept) as [KeptValue, string][]) {
    const value = (answer as Record<string, unknown>)[field];
    if (typeof value === 'string' && value) kept[name] = value;
  }
  const neverExpires = provider.spec.neverRefreshed || answer.expires_in === undefined;
  return {
    accessToken: answer.access_token,
    refreshToken: provider.spec.neverRefreshed ? undefined : answer.refresh_token,
    expiresAt: neverExpires ? undefined : nowMs + answer.expires_in! * 1000,
    scope: answer.scope,
    kept,
  };
}

function translate(error: unknown): never {
  if (error instanceof oauth.ResponseBodyError) {
    if (error.error === 'invalid_grant') throw new GrantRevoked(error.error_description ?? error.error);
    throw new ProviderFailed(`${error.error}${error.error_description ? `: ${error.error_description}` : ''}`);
  }
  if (error instanceof EgressRefused) throw new ProviderFailed(error.message);
  if (error instanceof GrantRevoked || error instanceof ProviderFailed) throw error;
  throw new ProviderFailed(error instanceof Error ? error.message : String(error));
}

/**
 * Exchanges the callback's code (oauth4webapi checks the callback parameters: the state
 * Parley expects, an `error` answer, a missing code), with the PKCE verifier when used.
 */
export async function exchangeCode(provider: ResolvedProvider, callback: URLSearchParams, expectedState: string, verifier?: string): Promise<TokenSet> {
  const { as, client, auth, options } = parts(provider);
  try {
    const params = oauth.validateAuthResponse(as, client, callback, expectedState);
    const response = await oauth.authorizationCodeGrantRequest(as, client, auth, params, redirectUri(), verifier ?? oauth.nopkce, options);
    const answer = await oauth.processAuthorizationCodeResponse(as, client, response);
    return tokenSet(provider, answer, Date.now());
  } catch (error) {
    translate(error);
  }
}

/** One refresh grant. A rotated refresh token comes back in the set; one not rotated keeps the old. */
export async function refreshGrant(provider: ResolvedProvider, refreshToken: string): Promise<TokenSet> {
  const { as, client, auth, options } = parts(provider);
  try {
    const response = await oauth.refreshTokenGrantRequest(as, client, auth, refreshToken, options);
    const answer = await oauth.processRefreshTokenResponse(as, client, response);
    const set = tokenSet(provider, answer, Date.now());
    return { ...set, refreshToken: set.refreshToken ?? refreshToken };
  } catch (error) {
    translate(error);
  }
}
