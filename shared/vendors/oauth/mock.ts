import { createHash, randomBytes } from 'node:crypto';
import { decryptSecret, encryptSecret } from '../../platform/crypto/envelope.ts';
import { escapeHtml } from '../../platform/text/text.ts';
import { isOAuthProvider, PROVIDER_TABLE, redirectUri, type OAuthProviderName } from './providers.ts';

/*
 * The built-in mock OAuth provider (spec: without a client id a provider uses it; its
 * consent page states that no real account is used). A real authorization server from the
 * client's side: an authorize page with Approve and Deny links back to the callback, and a
 * token endpoint (RFC 6749 form body, JSON answer, RFC 6749 errors) that checks the
 * client, the redirect URI and the PKCE verifier (S256, always) and issues expiring access
 * tokens with refresh tokens (notion: a token that never expires, no refresh token, as
 * the real one). Codes and refresh tokens are sealed with envelope encryption, so the mock
 * keeps no state; codes live one minute.
 */

const MOCK_ACCESS_TOKEN_TTL_SECONDS = 3600;
const CODE_TTL_MS = 60_000;
const SEAL_CONTEXT = { record: 'oauth_mock' };

interface MockCode {
  kind: 'code';
  provider: OAuthProviderName;
  redirect_uri: string;
  code_challenge: string;
  subject: string;
  exp: number;
}

interface MockRefresh {
  kind: 'refresh';
  provider: OAuthProviderName;
  subject: string;
}


const providerOfClient = (clientId: string | null): OAuthProviderName | undefined => {
  const name = clientId?.startsWith('parley-mock-') ? clientId.slice('parley-mock-'.length) : undefined;
  return name && isOAuthProvider(name) ? name : undefined;
};

/** Why an authorize request is refused (shown on the page), or undefined. */
function authorizeProblem(query: Record<string, string | undefined>): string | undefined {
  if (query.response_type !== 'code') return 'response_type must be code';
  if (!providerOfClient(query.client_id ?? null)) return 'unknown client_id';
  if (query.redirect_uri !== redirectUri()) return 'redirect_uri is not the registered one';
  if (!query.state) return 'state is required';
  if (query.code_challenge_method !== 'S256' || !query.code_challenge) return 'PKCE (S256) is required';
  return undefined;
}

/** The consent page (HTML). */
export async function mockAuthorizePage(query: Record<string, string | undefined>): Promise<string> {
  const problem = authorizeProblem(query);
  const title = 'Mock OAuth provider';
  if (problem) {
    return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>This authorization request is invalid: ${escapeHtml(problem)}.</p></body></html>`;
  }
  const provider = providerOfClient(query.client_id!)!;
  const code: MockCode = {
    kind: 'code',
    provider,
    redirect_uri: query.redirect_uri!,
    code_challenge: query.code_challenge!,
    subject: `mock-user-${randomBytes(4).toString('hex')}`,
    exp: Date.now() + CODE_TTL_MS,
  };
  const approve = new URL(query.redirect_uri!);
  approve.searchParams.set('code', await encryptSecret(JSON.stringify(code), SEAL_CONTEXT));
  approve.searchParams.set('state', query.state!);
  const deny = new URL(query.redirect_uri!);
  deny.searchParams.set('error', 'access_denied');
  deny.searchParams.set('error_description', 'The user denied access');
  deny.searchParams.set('state', query.state!);
  const scopes = query.scope ? escapeHtml(query.scope) : '(none)';
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title></head>
<body>
<h1>${title}: ${escapeHtml(provider)}</h1>
<p><strong>No real account is used.</strong> This deployment has no OAuth client for ${escapeHtml(provider)}, so Parley stands in for it: approving connects a mock account, and the connection stays in mock mode.</p>
<p>Requested scopes: ${scopes}</p>
<p><a id="approve" href="${escapeHtml(approve.toString())}">Approve</a> &nbsp; <a id="deny" href="${escapeHtml(deny.toString())}">Deny</a></p>
</body></html>`;
}

const json = (status: number, body: object) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'cache-control': 'no-store' } });
const oauthError = (error: string, description: string) => json(400, { error, error_description: description });

async function open<T>(sealed: string | null): Promise<T | undefined> {
  if (!sealed) return undefined;
  try {
    return JSON.parse(await decryptSecret(sealed, SEAL_CONTEXT)) as T;
  } catch {
    return undefined;
  }
}

async function issue(provider: OAuthProviderName, subject: string): Promise<Response> {
  const spec = PROVIDER_TABLE[provider];
  const body: Record<string, unknown> = {
    access_token: `mock_at_${randomBytes(16).toString('hex')}`,
    token_type: 'bearer',
    scope: spec.scopes.join(' '),
  };
  if (!spec.neverRefreshed) {
    body.expires_in = MOCK_ACCESS_TOKEN_TTL_SECONDS;
    const refresh: MockRefresh = { kind: 'refresh', provider, subject };
    body.refresh_token = await encryptSecret(JSON.stringify({ ...refresh, n: randomBytes(4).toString('hex') }), SEAL_CONTEXT);
  }
  // The values the real vendors answer with, so kept values work in mock mode too.
  if (spec.kept.instance_url) body[spec.kept.instance_url] = 'https://mock.my.salesforce.com';
  if (spec.kept.api_domain) body[spec.kept.api_domain] = 'https://mock.zohoapis.com';
  if (spec.kept.location_id) body[spec.kept.location_id] = 'mock-location';
  if (spec.kept.workspace_id) body[spec.kept.workspace_id] = 'mock-notion-workspace';
  return json(200, body);
}

/** The token endpoint: `authorization_code` (with the PKCE check) and `refresh_token` grants. */
export async function mockTokenEndpoint(form: URLSearchParams): Promise<Response> {
  const provider = providerOfClient(form.get('client_id'));
  if (!provider) return json(401, { error: 'invalid_client', error_description: 'unknown client_id' });
  const grant = form.get('grant_type');
  if (grant === 'authorization_code') {
    const code = await open<MockCode>(form.get('code'));
    if (!code || code.kind !== 'code' || code.provider !== provider) return oauthError('invalid_grant', 'unknown code');
    if (code.exp < Date.now()) return oauthError('invalid_grant', 'the code has expired');
    if (form.get('redirect_uri') !== code.redirect_uri) return oauthError('invalid_grant', 'redirect_uri does not match');
    const verifier = form.get('code_verifier') ?? '';
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    if (challenge !== code.code_challenge) return oauthError('invalid_grant', 'PKCE verification failed');
    return issue(provider, code.subject);
  }
  if (grant === 'refresh_token') {
    if (PROVIDER_TABLE[provider].neverRefreshed) return oauthError('unsupported_grant_type', 'this provider has no refresh tokens');
    const refresh = await open<MockRefresh>(form.get('refresh_token'));
    if (!refresh || refresh.kind !== 'refresh' || refresh.provider !== provider) return oauthError('invalid_grant', 'unknown refresh token');
    return issue(provider, refresh.subject);
  }
  return oauthError('unsupported_grant_type', `grant_type ${grant ?? '(none)'} is not supported`);
}

;
