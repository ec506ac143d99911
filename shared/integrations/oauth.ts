import { randomBytes } from 'node:crypto';
import { clearedFlowCookie, flowCookie, startedInThisBrowser, type BrowserFlow } from '../platform/auth/flow-binding.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { config, isProduction } from '../platform/config.ts';
import { decryptSecret, encryptSecret } from '../platform/crypto/envelope.ts';
import { badRequest, conflict, notFound, routeNotFound } from '../platform/errors.ts';
import { MediaResponse, Redirect } from '../platform/http/handler.ts';
import { newId } from '../platform/ids.ts';
import { trimTrailing } from '../platform/text/text.ts';
import { logger } from '../platform/logger.ts';
import { TransactionCancelled } from '../platform/store/table.ts';
import { authorizeUrl, exchangeCode, GrantRevoked, newPkce, ProviderFailed, type TokenSet } from '../vendors/oauth/client.ts';
import { mockAuthorizePage as mockConsentPage, mockTokenEndpoint } from '../vendors/oauth/mock.ts';
import {
  MOCK_AUTHORIZE_PATH,
  MOCK_TOKEN_PATH,
  OAUTH_PROVIDERS,
  optionsProblem,
  PASTED_PROVIDERS,
  PROVIDER_TABLE,
  providerMode,
  publicBaseUrl,
  redirectUri,
  resolveProvider,
  type OAuthProviderName,
  type ProviderOptions,
} from '../vendors/oauth/providers.ts';
import { resolveAppClient } from './app-clients.ts';
import { providerEntry } from './catalogue.ts';
import { notOAuth, refreshable, refreshConnection, sealSecrets, type RefreshOutcome } from './connections.ts';
import type { StartInput } from './schemas.ts';
import {
  appEntity,
  appPutOp,
  connectionPutOp,
  consumeState,
  crmProviderPutOp,
  getConnection,
  getCrmProvider,
  putState,
  type AppItem,
  type ConnectionItem,
  type Target,
} from './store.ts';
import { table } from '../platform/store/table.ts';
import { queueNamed } from '../platform/aws/queue.ts';

/*
 * The OAuth flow (spec: OAuth, OAuth state parameter, Authentication 12): start builds the
 * vendor's authorize URL with a sealed, single-use, 10-minute state and binds it to the
 * browser that receives the answer (a cookie holding the state's hash, sent to the
 * callback only: shared/platform/auth/flow-binding.ts); the callback refuses a state that
 * browser did not start, consumes it, exchanges the code (with the PKCE verifier) and
 * stores the tokens sealed; refresh forces a refresh.
 */

const STATE_TTL_MS = 10 * 60_000;
const STATE_CONTEXT = { record: 'oauth_state' };

/**
 * The connection flow's binding cookie. Whatever the start's credential (the dashboard's
 * session, or a key), the cookie rides on its answer: only the browser that made the start
 * request can finish the flow. A start link that bound whichever browser opened it first
 * would bind the victim's browser as readily as the attacker's, and the session cookie
 * (SameSite=Strict) does not come with the vendor's cross-site redirect, so neither could
 * stand in for it.
 */
const connectionFlow = (): BrowserFlow => ({ name: 'parley_oauth_flow', path: new URL(redirectUri()).pathname, sameSite: 'Lax' });

/** What the sealed state carries: everything the callback needs, bound together. */
interface StatePayload {
  n: string;
  ws: string;
  target: Target;
  provider: OAuthProviderName;
  mock: boolean;
  verifier?: string;
  app_id?: string;
  name?: string;
  knowledge_base_id?: string;
  sync_config?: Record<string, string>;
  sync_id?: string;
  options?: ProviderOptions;
  /** The app's own OAuth client id, when the app has one (the exchange uses that client). */
  own_client?: string;
  return_to: string;
  exp: number;
}

/**
 * GET /oauth/providers: the redirect URI to register, and each provider as configured:
 * `available` false for one a production deployment has no client for (its start is 503).
 */
export async function listProviders() {
  const providers = await Promise.all(
    OAUTH_PROVIDERS.map(async (name) => {
      const mode = await providerMode(name);
      const spec = PROVIDER_TABLE[name];
      return { provider: name, targets: [...spec.targets], pkce: mode === 'mock' || spec.pkce, mock: mode === 'mock', available: mode !== 'unconfigured', scopes: [...spec.scopes] };
    }),
  );
  return { redirect_uri: redirectUri(), providers, pasted_providers: [...PASTED_PROVIDERS] };
}

/**
 * Start needs an admin or developer: a key with admin scope or full access (the route's
 * `admin` access). Answered with the flow's binding cookie.
 */
export async function startAuthorization(principal: Principal, input: StartInput): Promise<MediaResponse> {
  const workspaceId = principal.workspaceId;
  const spec = PROVIDER_TABLE[input.provider];
  if (!spec.targets.includes(input.target)) {
    throw badRequest(`provider ${input.provider} cannot be used for target ${input.target} (it serves ${spec.targets.join(', ')})`);
  }
  if (input.target !== 'app' && (input.app_id || input.name)) throw badRequest('app_id and name are for target app only');
  if (input.target !== 'kb_sync' && (input.knowledge_base_id || input.sync_config || input.sync_id)) {
    throw badRequest('knowledge_base_id, sync_config and sync_id are for target kb_sync only');
  }
  if (input.target === 'kb_sync') {
    if (!input.knowledge_base_id) throw badRequest('knowledge_base_id is required for target kb_sync');
    const config = input.sync_config ?? {};
    if (input.provider === 'google_drive' && !config.folder_id) throw badRequest('sync_config.folder_id is required for google_drive');
    if (input.provider === 'notion' && !config.page_id && !config.database_id) throw badRequest('sync_config.page_id (or database_id) is required for notion');
  }
  let app: AppItem | undefined;
  if (input.app_id) {
    app = await appEntity.mustGet(workspaceId, input.app_id);
    if (app.provider !== input.provider) throw badRequest(`App ${input.app_id} is a ${app.provider} app, not ${input.provider}`);
  }
  // An app with its own OAuth client (auth_config oauth2) authorizes with it, never the mock.
  const resolved = app?.oauth_client ? await resolveAppClient(app, input.options ?? {}) : await resolveProvider(input.provider, input.options ?? {});
  if (!resolved.mock) {
    const problem = optionsProblem(input.provider, input.options ?? {});
    if (problem) throw badRequest(problem);
  }
  const pkce = resolved.pkce ? await newPkce() : undefined;
  const nonce = randomBytes(16).toString('hex');
  const now = Date.now();
  const payload: StatePayload = {
    n: nonce,
    ws: workspaceId,
    target: input.target,
    provider: input.provider,
    mock: resolved.mock,
    ...(pkce ? { verifier: pkce.verifier } : {}),
    ...(input.app_id ? { app_id: input.app_id } : {}),
    ...(input.name ? { name: input.name } : {}),
    ...(input.knowledge_base_id ? { knowledge_base_id: input.knowledge_base_id } : {}),
    ...(input.sync_config ? { sync_config: input.sync_config } : {}),
    ...(input.sync_id ? { sync_id: input.sync_id } : {}),
    ...(input.options ? { options: input.options } : {}),
    ...(app?.oauth_client ? { own_client: app.oauth_client.client_id } : {}),
    return_to: input.return_to ?? (input.target === 'kb_sync' ? '/knowledge-base' : '/settings/integrations'),
    exp: now + STATE_TTL_MS,
  };
  const state = await encryptSecret(JSON.stringify(payload), STATE_CONTEXT);
  await putState(nonce, {
    workspace_id: workspaceId,
    provider: input.provider,
    target: input.target,
    expires_ms: payload.exp,
    expires_at: Math.ceil(payload.exp / 1000) + 60,
  });
  const answer = { authorize_url: authorizeUrl(resolved, state, pkce?.challenge), mock: resolved.mock, provider: input.provider, pkce: resolved.pkce };
  return new MediaResponse('application/json', JSON.stringify(answer), { 'cache-control': 'no-store' }, undefined, [flowCookie(connectionFlow(), state)]);
}

/** Where the browser goes after the callback: the dashboard, with the spec's query parameters. */
function dashboardUrl(returnTo: string, params: Record<string, string | undefined>): string {
  const base = trimTrailing(config.DASHBOARD_URL ?? publicBaseUrl(), '/');
  const url = new URL(`${base}${returnTo}`);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

const DEFAULT_RETURN = '/settings/integrations';

class CallbackFailure extends Error {}

async function openState(state: string | undefined): Promise<StatePayload> {
  if (!state) throw new CallbackFailure('The state parameter is missing');
  let payload: StatePayload;
  try {
    payload = JSON.parse(await decryptSecret(state, STATE_CONTEXT)) as StatePayload;
  } catch {
    throw new CallbackFailure('The state parameter is invalid');
  }
  if (!payload || typeof payload.n !== 'string' || typeof payload.ws !== 'string' || !(OAUTH_PROVIDERS as readonly string[]).includes(payload.provider)) {
    throw new CallbackFailure('The state parameter is invalid');
  }
  return payload;
}

const NOT_THIS_BROWSER = 'This connection was not started in this browser (its cookie is missing or belongs to another connection); start it again here';

/**
 * GET /oauth/callback: answers a redirect either way; nothing is stored unless the state
 * is valid (authentic, started in this browser, this workspace's, unexpired, unused) and
 * the exchange succeeded. Once the state is taken the binding cookie is cleared; a state
 * this browser did not start is refused without being taken (it is not this browser's).
 */
export async function handleCallback(
  query: { state?: string; code?: string; error?: string; error_description?: string; iss?: string },
  cookieHeader: string | undefined,
): Promise<Redirect> {
  let payload: StatePayload | undefined;
  let taken = false;
  try {
    payload = await openState(query.state);
    if (!startedInThisBrowser(connectionFlow(), cookieHeader, query.state!)) throw new CallbackFailure(NOT_THIS_BROWSER);
    // Single use: the state item is deleted as it is checked, whatever follows.
    taken = true;
    const stored = await consumeState(payload.n, payload.ws, payload.provider);
    if (!stored) throw new CallbackFailure('This authorization was already used or was not issued here; start again');
    if (payload.exp <= Date.now() || stored.expires_ms <= Date.now()) throw new CallbackFailure('This authorization has expired; start again');
    if (query.error) throw new CallbackFailure(`The provider refused the authorization: ${query.error_description ?? query.error}`);
    if (!query.code) throw new CallbackFailure('The provider sent no code');
    const resolved = payload.own_client ? await ownClient(payload) : await resolveProvider(payload.provider, payload.options ?? {}, payload.mock);
    const callbackParams = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (typeof value === 'string') callbackParams.set(name, value);
    let tokens: TokenSet;
    try {
      tokens = await exchangeCode(resolved, callbackParams, query.state!, payload.verifier);
    } catch (error) {
      if (error instanceof GrantRevoked || error instanceof ProviderFailed) throw new CallbackFailure(`The code exchange failed: ${error.detail}`);
      throw error;
    }
    const result = await storeConnection(payload, tokens);
    return new Redirect(dashboardUrl(payload.return_to, { oauth: 'success', provider: payload.provider, ...result }), [clearedFlowCookie(connectionFlow())]);
  } catch (error) {
    const message = error instanceof CallbackFailure ? error.message : 'The connection could not be stored';
    if (!(error instanceof CallbackFailure)) logger.error('oauth callback failed', error as Error);
    const location = dashboardUrl(payload?.return_to ?? DEFAULT_RETURN, { oauth: 'error', provider: payload?.provider ?? '', message });
    return new Redirect(location, taken ? [clearedFlowCookie(connectionFlow())] : []);
  }
}

/** The app's own client as the start used it (a client changed meanwhile: start again). */
async function ownClient(payload: StatePayload) {
  const app = payload.app_id ? await appEntity.get(payload.ws, payload.app_id) : undefined;
  if (!app) throw new CallbackFailure(`App ${payload.app_id} no longer exists`);
  if (app.oauth_client?.client_id !== payload.own_client) throw new CallbackFailure('The app\'s OAuth client changed meanwhile; start again');
  return resolveAppClient(app, payload.options ?? {});
}

async function storeConnection(payload: StatePayload, tokens: TokenSet): Promise<Record<string, string>> {
  const now = Date.now();
  const ws = payload.ws;
  let connectionId: string;
  let result: Record<string, string> = {};
  const extraOps = [];
  if (payload.target === 'crm') {
    connectionId = `crm_${payload.provider}`;
    const existing = await getCrmProvider(ws, payload.provider);
    extraOps.push(
      crmProviderPutOp({
        workspace_id: ws,
        provider: payload.provider,
        enabled: true,
        sync_calls: true,
        sync_contacts: true,
        field_mappings: existing?.field_mappings ?? [],
        ...(existing?.last_sync_timestamp ? { last_sync_timestamp: existing.last_sync_timestamp } : {}),
        ...(existing?.calls_pushed ? { calls_pushed: existing.calls_pushed } : {}),
        ...(existing?.sync_interval_minutes ? { sync_interval_minutes: existing.sync_interval_minutes, next_sync_at: existing.next_sync_at ?? now } : {}),
        created_timestamp: existing?.created_timestamp ?? now,
        updated_timestamp: now,
      }),
    );
  } else if (payload.target === 'app') {
    const existing = payload.app_id ? await appEntity.get(ws, payload.app_id) : undefined;
    if (payload.app_id && !existing) throw new CallbackFailure(`App ${payload.app_id} no longer exists`);
    const app: AppItem = existing
      ? { ...existing, connection_status: 'connected', user_modified_timestamp: now, revision: existing.revision + 1 }
      : {
          type: 'integration_app',
          app_id: newId('app'),
          workspace_id: ws,
          provider: payload.provider,
          app_type: providerEntry(payload.provider)?.type ?? 'crm',
          name: payload.name ?? providerEntry(payload.provider)?.display_name ?? payload.provider,
          connection_status: 'connected',
          created_timestamp: now,
          user_modified_timestamp: now,
          revision: 1,
        };
    extraOps.push(appPutOp(app, existing?.revision));
    connectionId = app.app_id;
    result = { app_id: app.app_id };
  } else {
    connectionId = payload.sync_id ?? newId('syncedSource');
    result = { sync_id: connectionId, knowledge_base_id: payload.knowledge_base_id ?? '' };
  }
  const previous = await getConnection(ws, connectionId);
  const item: Omit<ConnectionItem, 'token_version' | 'gsi1pk' | 'gsi1sk'> = {
    type: 'integration_connection',
    workspace_id: ws,
    connection_id: connectionId,
    target: payload.target,
    provider: payload.provider,
    mode: payload.mock ? 'mock' : 'oauth',
    status: 'connected',
    auth_type: 'oauth2',
    secret: await sealSecrets(ws, connectionId, { access_token: tokens.accessToken, refresh_token: tokens.refreshToken }),
    ...(tokens.expiresAt !== undefined ? { token_expires_at: tokens.expiresAt } : {}),
    kept: tokens.kept,
    ...(payload.options ? { options: payload.options } : {}),
    ...(tokens.scope ? { scope: tokens.scope } : {}),
    ...(payload.knowledge_base_id ? { knowledge_base_id: payload.knowledge_base_id } : {}),
    ...(payload.sync_config ? { sync_config: payload.sync_config } : {}),
    ...(payload.own_client ? { client: 'app' as const } : {}),
    created_timestamp: previous?.created_timestamp ?? now,
    updated_timestamp: now,
  };
  try {
    await table.transact([connectionPutOp(item, previous?.token_version, refreshable(payload.provider)), ...extraOps]);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw new CallbackFailure('The connection changed while it was being stored; start again');
    throw error;
  }
  if (payload.target === 'kb_sync') {
    // The first sync starts at once (spec: kb_sync creates a synced source and starts it): the
    // knowledge bases' kb-jobs queue takes the connection (its message `connected`, see
    // shared/knowledge-bases/ingest.ts), creates the sync named by this ID and runs it. Sent,
    // not imported: the knowledge bases already depend on this domain.
    await queueNamed('kb-jobs').send({ kind: 'connected', workspace_id: ws, sync_id: connectionId });
  }
  return result;
}

/** POST /oauth/refresh: a forced refresh of the target's connection. */
export async function forceRefresh(workspaceId: string, body: { target: 'crm'; provider: string } | { target: 'app'; app_id: string } | { target: 'kb_sync'; sync_id: string }): Promise<RefreshOutcome> {
  let connectionId: string;
  if (body.target === 'crm') connectionId = `crm_${body.provider}`;
  else if (body.target === 'app') {
    await appEntity.mustGet(workspaceId, body.app_id);
    connectionId = body.app_id;
  } else connectionId = body.sync_id;
  const connection = await getConnection(workspaceId, connectionId);
  if (!connection) {
    if (body.target === 'app') throw conflict(`App ${body.app_id} has no connection yet; connect it first`);
    throw notFound(body.target === 'crm' ? `No ${body.provider} CRM connection in this workspace` : 'Connection not found');
  }
  if (connection.mode === 'pasted') throw notOAuth();
  return refreshConnection(workspaceId, connectionId, { force: true });
}

/** The mock provider's routes exist outside production only (a 404 there, as any unknown route). */
function mockRoute(method: string, path: string): void {
  if (isProduction) throw routeNotFound(method, path);
}

/** GET /oauth/mock/authorize: the mock provider's consent page. */
export async function mockAuthorizePage(query: Record<string, string | undefined>): Promise<string> {
  mockRoute('GET', MOCK_AUTHORIZE_PATH);
  return mockConsentPage(query);
}

/** POST /oauth/mock/token over HTTP: the same endpoint the client reaches in process. */
export async function mockTokenHttp(rawBody: string): Promise<{ status: number; body: string }> {
  mockRoute('POST', MOCK_TOKEN_PATH);
  const response = await mockTokenEndpoint(new URLSearchParams(rawBody));
  return { status: response.status, body: await response.text() };
}
