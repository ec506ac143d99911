import * as oidc from 'openid-client';
import { clearedFlowCookie, flowCookie, startedInThisBrowser, type BrowserFlow } from '../platform/auth/flow-binding.ts';
import type { Principal } from '../platform/auth/gate.ts';
import type { Role } from '../platform/auth/roles.ts';
import { config } from '../platform/config.ts';
import { decryptSecret, encryptSecret, recordContext } from '../platform/crypto/envelope.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { egressFetch, EgressRefused } from '../platform/egress/egress.ts';
import { ApiError, badRequest, conflict, forbidden, unauthorized, VendorFailed } from '../platform/errors.ts';
import { MASKED_SECRET as MASK } from '../platform/text/masking.ts';
import { keys } from '../platform/store/keys.ts';
import { table, TransactionCancelled } from '../platform/store/table.ts';
import { trimTrailing } from '../platform/text/text.ts';
import { auditOp, createMember, memberEmails } from './members.ts';
import { sessionCookie } from '../platform/auth/sessions.ts';
import { MediaResponse, Redirect } from '../platform/http/handler.ts';
import { startSession, withCookie, type IssuedSession } from './sessions.ts';
import { members, ssoConfigs, type MemberItem, type SsoConfigItem, type SsoStateItem } from './store.ts';

/*
 * OIDC single sign-on with openid-client: per-workspace issuer, client and sealed secret;
 * the authorization code flow with PKCE (S256), state and nonce, the state kept in the
 * table (single use, 10 minutes) and bound to the browser that started it (a cookie
 * holding its hash: shared/platform/auth/flow-binding.ts). Every request to the issuer
 * (discovery, JWKS, token) goes through the egress guard. An email the ID token says is
 * verified, in an allowed domain, signs in as its member, or joins just in time with the
 * default role.
 */

const STATE_TTL_MS = 10 * 60 * 1000;
const secretContext = (workspaceId: string) => recordContext(workspaceId, 'sso/client_secret');

export const publicBase = () => trimTrailing(config.PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`, '/');
const ssoRedirectUri = () => `${publicBase()}/auth/sso/callback`;

/** The OIDC sign-in's binding cookie: the callback is the identity provider's top-level redirect (Lax). */
const ssoFlow = (): BrowserFlow => ({ name: 'parley_sso_flow', path: new URL(ssoRedirectUri()).pathname, sameSite: 'Lax' });

/** The answer to a callback whose state this browser did not start (or whose cookie expired). */
const SIGN_IN_NOT_THIS_BROWSER = 'Sign-in was not started in this browser (its cookie is missing or belongs to another sign-in); start again here';

function toSsoConfig(item: SsoConfigItem | undefined) {
  return {
    enabled: item !== undefined,
    issuer: item?.issuer ?? null,
    client_id: item?.client_id ?? null,
    client_secret: item ? MASK : null,
    allowed_domains: item?.allowed_domains ?? [],
    default_role: item?.default_role ?? ('member' as const),
    redirect_uri: ssoRedirectUri(),
    updated_timestamp: item?.updated_timestamp ?? null,
  };
}

export async function getSso(workspaceId: string) {
  return toSsoConfig(await ssoConfigs.get(workspaceId));
}

export async function putSso(
  principal: Principal,
  input: { issuer: string; client_id: string; client_secret: string; allowed_domains: string[]; default_role: Role },
) {
  const workspaceId = principal.workspaceId;
  const existing = await ssoConfigs.get(workspaceId);
  let sealed: string;
  if (input.client_secret === MASK) {
    if (!existing) throw badRequest(`client_secret: Send the secret itself; ${MASK} is how a stored one is shown`);
    sealed = existing.client_secret_sealed;
  } else {
    sealed = await encryptSecret(input.client_secret, secretContext(workspaceId));
  }
  const item: SsoConfigItem = {
    ...keys.ssoConfig(workspaceId),
    issuer: input.issuer,
    client_id: input.client_id,
    client_secret_sealed: sealed,
    allowed_domains: [...new Set(input.allowed_domains)],
    default_role: input.default_role,
    updated_timestamp: Date.now(),
  };
  await table.transact([
    { Put: { Item: item } },
    auditOp(workspaceId, principal, { action: 'sso.update', target: { type: 'sso', id: workspaceId }, changes: ['issuer', 'client_id', 'client_secret', 'allowed_domains', 'default_role'] }),
  ]);
  return toSsoConfig(item);
}

export async function deleteSso(principal: Principal): Promise<void> {
  await table.transact([
    ssoConfigs.removeOp(principal.workspaceId),
    auditOp(principal.workspaceId, principal, { action: 'sso.delete', target: { type: 'sso', id: principal.workspaceId }, changes: [] }),
  ]).catch((error: unknown) => {
    // The config's removal is conditional on it existing: only that condition failing is "not
    // configured"; a lost race is the caller's to retry; a store that did not answer stays a 503.
    if (!(error instanceof TransactionCancelled)) throw error;
    throw error.failedAt.includes(0) ? badRequest('SSO is not configured') : conflict('The SSO settings are being changed by another request; retry');
  });
}

/** openid-client's fetch, through the egress guard (no redirects, capped, pinned to a checked address). */
const guardedFetch: oidc.CustomFetch = async (url, options) =>
  egressFetch(url, {
    method: options.method,
    headers: options.headers,
    body: typeof options.body === 'string' ? options.body : options.body instanceof URLSearchParams ? options.body.toString() : undefined,
    timeoutMs: 10_000,
    maxResponseBytes: 512 * 1024,
    signal: options.signal,
  });

async function clientFor(item: SsoConfigItem, workspaceId: string): Promise<oidc.Configuration> {
  const secret = await decryptSecret(item.client_secret_sealed, secretContext(workspaceId));
  try {
    const client = await oidc.discovery(new URL(item.issuer), item.client_id, { redirect_uris: [ssoRedirectUri()] }, oidc.ClientSecretPost(secret), {
      [oidc.customFetch]: guardedFetch,
      // http issuers only outside production (tests' fake issuer on 127.0.0.1).
      ...(config.PARLEY_ENV === 'production' ? {} : { execute: [oidc.allowInsecureRequests] }),
      timeout: 10,
    });
    // OIDC lets a client trust an ID token from the token endpoint unverified (it came over
    // TLS); we verify its signature against the issuer's JWKS anyway (a forged token failed
    // without this in the tests, and http issuers exist outside production).
    oidc.enableNonRepudiationChecks(client);
    return client;
  } catch (error) {
    throw issuerFailed(error);
  }
}

function issuerFailed(error: unknown): Error {
  if (error instanceof EgressRefused) return badRequest(`SSO issuer: ${error.message}`);
  return new VendorFailed(`SSO issuer failed: ${(error as Error).message}`);
}

export interface SsoStartOptions {
  respond: 'json' | 'redirect';
  returnTo?: string;
}

/**
 * Whether a start answers JSON (`?format=json`, or an `Accept` preferring
 * application/json over HTML, as an API client's) or a 302 (a browser's navigation).
 */
export function startResponds(format: string | undefined, accept: string | undefined): 'json' | 'redirect' {
  if (format === 'json' || format === 'redirect') return format;
  const wanted = (accept ?? '').toLowerCase();
  return wanted.includes('application/json') && !wanted.includes('text/html') ? 'json' : 'redirect';
}

export const DEFAULT_RETURN_TO = '/';

/** A started sign-in: where the browser goes, and the Set-Cookie that binds the flow to it. */
export interface StartedSignIn {
  authorization_url: string;
  binding_cookie: string;
}

/**
 * A start's answer, with the binding cookie either way (and any `more` cookies): a 302 for
 * a browser's navigation, or `{authorization_url}` for a script running in the browser that
 * will sign in (a client that is not that browser cannot finish the sign-in: the callback
 * needs the cookie).
 */
export function startAnswer(respond: 'json' | 'redirect', started: StartedSignIn, more: readonly string[] = []): MediaResponse | Redirect {
  const cookies = [started.binding_cookie, ...more];
  if (respond === 'redirect') return new Redirect(started.authorization_url, cookies);
  const body = JSON.stringify({ authorization_url: started.authorization_url });
  return new MediaResponse('application/json', body, { 'cache-control': 'no-store' }, undefined, cookies);
}

/**
 * The dashboard URL of a return path (DASHBOARD_URL, else PUBLIC_BASE_URL). The path was
 * checked at the start (one leading slash, no scheme, host or backslash); the origin is
 * checked again here, so nothing but the dashboard is ever a redirect target.
 */
export function dashboardUrl(returnTo: string, params: Record<string, string> = {}): string {
  const base = trimTrailing(config.DASHBOARD_URL ?? publicBase(), '/');
  const url = new URL(`${base}${returnTo}`);
  if (url.origin !== new URL(base).origin) return base + DEFAULT_RETURN_TO;
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.toString();
}

/** Starts a sign-in: the identity provider's authorization URL (PKCE S256, state, nonce) and the state's binding cookie. */
export async function startSso(workspaceId: string, options: SsoStartOptions = { respond: 'json' }, nowMs = Date.now()): Promise<StartedSignIn> {
  const item = await ssoConfigs.get(workspaceId);
  if (!item) throw badRequest('SSO is not configured for this workspace');
  const client = await clientFor(item, workspaceId);
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const stateItem: SsoStateItem = {
    ...keys.ssoState(sha256(state)),
    workspace_id: workspaceId,
    code_verifier: verifier,
    nonce,
    respond: options.respond,
    return_to: options.returnTo ?? DEFAULT_RETURN_TO,
    expires_timestamp: nowMs + STATE_TTL_MS,
    expires_at: Math.floor((nowMs + STATE_TTL_MS) / 1000),
  };
  await table.put({ Item: stateItem, ConditionExpression: 'attribute_not_exists(pk)' });
  const url = oidc.buildAuthorizationUrl(client, {
    redirect_uri: ssoRedirectUri(),
    scope: 'openid email profile',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  return { authorization_url: url.href, binding_cookie: flowCookie(ssoFlow(), state) };
}

type CallbackQuery = { code?: string; state: string; error?: string; error_description?: string };

/**
 * The identity provider's redirect back, answered as the start asked: a browser's gets the
 * session cookie and a 302 to the dashboard's return path (a refusal: a 302 there with
 * `sso=error&message=…`, no session); an API client's gets the session JSON (and the cookie).
 * A state this browser did not start is a 400 and is left alone (it is not this browser's
 * to spend); an unknown, expired or spent state is a 400 either way (nothing says where to
 * go). Once the state is taken, the binding cookie is cleared whatever follows.
 */
export async function ssoCallback(query: CallbackQuery, cookieHeader: string | undefined, nowMs = Date.now()): Promise<MediaResponse> {
  const flow = ssoFlow();
  if (!startedInThisBrowser(flow, cookieHeader, query.state)) throw badRequest(SIGN_IN_NOT_THIS_BROWSER);
  // The state is taken (deleted) first: single use, whatever follows.
  const taken = await table.delete<SsoStateItem>({ Key: keys.ssoState(sha256(query.state)), ReturnValues: 'ALL_OLD' });
  if (!taken || taken.expires_timestamp <= nowMs) throw badRequest('Sign-in state is invalid, expired or already used');
  const cleared = clearedFlowCookie(flow);
  if (taken.respond !== 'redirect') {
    try {
      return withCookie(await finishSso(taken, query), [cleared]);
    } catch (error) {
      if (error instanceof ApiError) error.headers['set-cookie'] = cleared;
      throw error;
    }
  }
  const returnTo = taken.return_to ?? DEFAULT_RETURN_TO;
  let issued: IssuedSession;
  try {
    issued = await finishSso(taken, query);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return redirectTo(dashboardUrl(returnTo, { sso: 'error', message: error.message }), [cleared]);
  }
  return redirectTo(dashboardUrl(returnTo), [sessionCookie(issued.session_token), cleared]);
}

const redirectTo = (location: string, cookies: string[]) =>
  new MediaResponse('text/plain; charset=utf-8', '', { location, 'cache-control': 'no-store' }, 302, cookies);

/** Exchanges the code, checks the ID token, signs in (the state already taken). */
async function finishSso(taken: SsoStateItem, query: CallbackQuery): Promise<IssuedSession> {
  if (query.error) throw unauthorizedWith(`The identity provider refused the sign-in: ${query.error}`);
  if (!query.code) throw badRequest('code: Required');
  const workspaceId = taken.workspace_id;
  const item = await ssoConfigs.get(workspaceId);
  if (!item) throw badRequest('SSO is not configured for this workspace');
  const client = await clientFor(item, workspaceId);
  const current = new URL(ssoRedirectUri());
  current.searchParams.set('code', query.code);
  current.searchParams.set('state', query.state);
  let claims: oidc.IDToken | undefined;
  try {
    const tokens = await oidc.authorizationCodeGrant(client, current, {
      pkceCodeVerifier: taken.code_verifier,
      expectedState: query.state,
      expectedNonce: taken.nonce,
      idTokenExpected: true,
    });
    claims = tokens.claims();
  } catch (error) {
    if (error instanceof oidc.ResponseBodyError || error instanceof oidc.AuthorizationResponseError) throw unauthorizedWith(`SSO sign-in failed: ${error.message}`);
    if (error instanceof Error && (error.name === 'OperationProcessingError' || error.name === 'JWSSignatureVerificationFailed' || (error as { code?: string }).code?.startsWith('OAUTH_'))) {
      throw unauthorizedWith(`SSO sign-in failed: ${error.message}`);
    }
    throw issuerFailed(error);
  }
  const email = typeof claims?.email === 'string' ? claims.email.toLowerCase() : undefined;
  if (!email) throw unauthorizedWith('The ID token has no email');
  // The email names the member it signs in as: one the provider has not verified (false,
  // or not said) could be anyone's address, typed into an account at that provider.
  if (claims?.email_verified !== true) throw unauthorizedWith('The ID token\'s email is not verified (email_verified must be true)');
  return signInByEmail(workspaceId, email, item.allowed_domains, item.default_role, 'sso', typeof claims?.name === 'string' ? claims.name : undefined);
}

function unauthorizedWith(message: string) {
  const error = unauthorized();
  Object.defineProperty(error, 'message', { value: message });
  return error;
}

/** 403 unless the email's domain is one the workspace allows (none listed: any). */
export function assertAllowedDomain(email: string, allowedDomains: readonly string[]): void {
  const domain = email.slice(email.lastIndexOf('@') + 1);
  if (allowedDomains.length > 0 && !allowedDomains.includes(domain)) throw forbidden(`${domain} is not an allowed email domain for this workspace`);
}

/** A verified email signs in as its member, or joins with the default role (just in time). */
export async function signInByEmail(
  workspaceId: string,
  email: string,
  allowedDomains: string[],
  defaultRole: Role,
  source: 'sso' | 'saml',
  name?: string,
): Promise<IssuedSession> {
  assertAllowedDomain(email, allowedDomains);
  const claim = await memberEmails.get(workspaceId, email);
  let member: MemberItem | undefined = claim ? await members.get(workspaceId, claim.member_id) : undefined;
  if (!member) member = await createMember(workspaceId, undefined, { email, role: defaultRole, name, source }, [], 'member.join');
  if (member.active === false) throw forbidden('This member is deactivated');
  return startSession(member);
}
