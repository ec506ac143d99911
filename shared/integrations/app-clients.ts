import { isProduction } from '../platform/config.ts';
import { decryptSecret, DecryptionFailed, encryptSecret, recordContext } from '../platform/crypto/envelope.ts';
import { checkUrl, EgressRefused, HTTP_SCHEMES, portOf, resolveDestination } from '../platform/egress/egress.ts';
import { badRequest, unprocessable } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { isOAuthProvider, PROVIDER_TABLE, type OAuthProviderName, type ProviderOptions, type ResolvedProvider } from '../vendors/oauth/providers.ts';
import type { AuthConfigInput } from './schemas.ts';
import type { AppItem, AppOAuthClient } from './store.ts';

/*
 * An app's own OAuth client (retell-sdk's `oauth2` auth_config): the caller registered an
 * OAuth app with the vendor and gives its client id and secret (and, ours, its authorize
 * and token URLs and scopes). The secret is sealed on the app (never answered); the URLs
 * pass the egress guard's checks (https only in production, no credentials, no private
 * or reserved address). POST /oauth/start {target: app, app_id} then authorizes with this
 * client instead of the deployment's `<PREFIX>_OAUTH_CLIENT_ID`, and the callback's
 * exchange and every refresh use it too: the provider table's entry with the app's client
 * and endpoints, through the same oauth4webapi client.
 */

export type OAuthClientInput = Extract<AuthConfigInput, { type: 'oauth2' }>;

const clientContext = (workspaceId: string, appId: string) => recordContext(workspaceId, `integration_app_client:${appId}`);

/** Whether a provider takes a caller's own OAuth client: an OAuth provider that serves apps. */
export const takesOwnClient = (provider: string): provider is OAuthProviderName => isOAuthProvider(provider) && PROVIDER_TABLE[provider].targets.includes('app');

/**
 * Checks one of the client's URLs (400 naming the field): an http(s) URL (https only in
 * production), no credentials, no fragment, not a refused port, and no address the egress
 * guard refuses (an IP literal at once; a host name by its addresses when it resolves: a
 * host that does not resolve now is checked again on every request).
 */
export async function checkClientUrl(field: 'authorize_url' | 'token_url', value: string, production = isProduction): Promise<string> {
  const problem = (reason: string) => badRequest(`auth_config.${field}: ${reason}`);
  let url: URL;
  try {
    url = checkUrl(value, production ? ['https:'] : HTTP_SCHEMES);
  } catch (error) {
    if (error instanceof EgressRefused) throw problem(error.message);
    throw error;
  }
  if (url.hash) throw problem('must not have a fragment');
  try {
    await resolveDestination(url.hostname, portOf(url), { signal: AbortSignal.timeout(3_000) });
  } catch (error) {
    if (error instanceof EgressRefused) throw problem(error.message);
    // Not resolvable now (DNS down, a typo): the egress guard refuses it on use.
  }
  return url.toString();
}

/** Checks and seals a caller's OAuth client for an app. */
export async function sealAppClient(workspaceId: string, appId: string, input: OAuthClientInput): Promise<AppOAuthClient> {
  const authorizeUrl = input.authorize_url !== undefined ? await checkClientUrl('authorize_url', input.authorize_url) : undefined;
  const tokenUrl = input.token_url !== undefined ? await checkClientUrl('token_url', input.token_url) : undefined;
  return {
    client_id: input.client_id,
    secret: await encryptSecret(input.client_secret, clientContext(workspaceId, appId)),
    ...(authorizeUrl ? { authorize_url: authorizeUrl } : {}),
    ...(tokenUrl ? { token_url: tokenUrl } : {}),
    ...(input.scopes ? { scopes: [...new Set(input.scopes)] } : {}),
  };
}

/** What an app answers of its client: everything but the secret. */
export function clientView(client: AppOAuthClient) {
  return {
    type: 'oauth2',
    client_id: client.client_id,
    ...(client.authorize_url ? { authorize_url: client.authorize_url } : {}),
    ...(client.token_url ? { token_url: client.token_url } : {}),
    ...(client.scopes ? { scopes: client.scopes } : {}),
  };
}

/**
 * The app's provider as its own client uses it: the provider table's entry (PKCE, client
 * authentication, kept values) with the app's client id and secret, its endpoints (or the
 * table's) and its scopes (or the table's). Never the mock.
 */
export async function resolveAppClient(app: Pick<AppItem, 'workspace_id' | 'app_id' | 'provider' | 'oauth_client'>, options: ProviderOptions = {}): Promise<ResolvedProvider> {
  const client = app.oauth_client;
  if (!client || !takesOwnClient(app.provider)) throw badRequest(`App ${app.app_id} has no OAuth client of its own`);
  let clientSecret: string;
  try {
    clientSecret = await decryptSecret(client.secret, clientContext(app.workspace_id, app.app_id));
  } catch (error) {
    if (!(error instanceof DecryptionFailed)) throw error;
    logger.error('integration app: stored OAuth client secret does not open', { workspace_id: app.workspace_id, app_id: app.app_id });
    throw unprocessable(`The stored OAuth client of app ${app.app_id} cannot be opened; give its auth_config again`);
  }
  const spec = PROVIDER_TABLE[app.provider];
  const endpoints = spec.endpoints(options);
  return {
    spec: client.scopes ? { ...spec, scopes: client.scopes } : spec,
    mock: false,
    pkce: spec.pkce,
    clientId: client.client_id,
    clientSecret,
    authorizeUrl: client.authorize_url ?? endpoints.authorize,
    tokenUrl: client.token_url ?? endpoints.token,
    scopes: client.scopes ?? spec.scopesFor?.(options) ?? spec.scopes,
  };
}
