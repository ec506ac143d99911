import { badGateway, badRequest, conflict, notFound, unprocessable } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { trimTrailing } from '../platform/text/text.ts';
import { TransactionCancelled, table } from '../platform/store/table.ts';
import {
  AppAuthRejected,
  AppUnsupported,
  AppVendorFailed,
  defaultAppBaseUrl,
  executeAppTool,
  testAppAuth,
  type AppTarget,
} from '../vendors/apps/index.ts';
import { isOAuthProvider, isPastedProvider, providerApiBase } from '../vendors/oauth/providers.ts';
import { appTypes, providerEntry, toolSchemas, TOOLS } from './catalogue.ts';
import { clientView, sealAppClient, takesOwnClient } from './app-clients.ts';
import { freshConnection, sealSecrets } from './connections.ts';
import type { AppUsageView, AppView, AuthConfigInput, CreateAppInput, ListAppUsagesInput, UpdateAppInput } from './schemas.ts';
import {
  appDeleteOp,
  appEntity,
  appPutOp,
  connectionDeleteOp,
  connectionPutOp,
  getConnection,
  queryApps,
  setAppConnectionStatus,
  setConnectionStatus,
  unlinkCrmApp,
  type AppItem,
  type ConnectionItem,
} from './store.ts';

/*
 * Integration apps (retell-sdk's `app`): one connection to an external system each. OAuth
 * providers connect through POST /oauth/start (target app); pasted-credential providers
 * (cal_com, zendesk) take `auth_config`, sealed in the app's connection and never answered.
 */

const MAX_APPS_PER_PROVIDER = 20;

export { appTypes,  };

function view(app: AppItem, connection: ConnectionItem | undefined): AppView {
  const status = connection?.status === 'needs_reconnect' ? 'needs_reconnect' : app.connection_status;
  return {
    app_id: app.app_id,
    org_id: app.workspace_id,
    provider: app.provider,
    type: app.app_type,
    ...(app.name !== undefined ? { name: app.name } : {}),
    connection_status: connection?.status === 'needs_reconnect' ? 'error' : app.connection_status,
    status,
    mock: connection?.mode === 'mock',
    ...(app.oauth_client
      ? { auth_config: clientView(app.oauth_client) }
      : connection
        ? { auth_config: connection.auth_type === 'basic' ? { type: 'basic', username: connection.username ?? '' } : { type: connection.auth_type } }
        : {}),
    ...(app.crm_config ? { crm_config: app.crm_config } : {}),
    ...(app.tenant_id ? { tenant_id: app.tenant_id } : {}),
    ...(app.tenant_url ? { tenant_url: app.tenant_url } : {}),
    ...(connection?.token_expires_at !== undefined ? { token_expires_at: connection.token_expires_at } : {}),
    created_timestamp: app.created_timestamp,
    user_modified_timestamp: app.user_modified_timestamp,
  };
}

function checkProvider(provider: string, type: string) {
  const entry = providerEntry(provider);
  if (!entry) throw badRequest(`provider ${provider} is not supported; GET /list-app-types lists the providers`);
  if (entry.type !== type) throw badRequest(`provider ${provider} is a ${entry.type} app, not ${type}`);
  return entry;
}

type PastedAuth = Exclude<AuthConfigInput, { type: 'oauth2' }>;

/** OAuth providers take only a caller's own OAuth client (`oauth2`); pasted providers their credential types. */
function checkAuthConfig(provider: string, auth: AuthConfigInput | undefined) {
  if (!auth) return;
  if (isOAuthProvider(provider)) {
    if (auth.type === 'oauth2' && takesOwnClient(provider)) return;
    if (!takesOwnClient(provider)) throw badRequest(`auth_config is not accepted for ${provider}: connect it through POST /oauth/start`);
    throw badRequest(`auth_config.type ${auth.type} is not accepted for ${provider}: connect it through POST /oauth/start, or give your own OAuth client (type oauth2)`);
  }
  const entry = providerEntry(provider)!;
  if (auth.type === 'oauth2' || !entry.auth_types?.includes(auth.type)) {
    throw badRequest(`auth_config.type ${auth.type} is not accepted for ${provider} (${entry.auth_types?.join(' or ')})`);
  }
}

function pastedConnection(workspaceId: string, appId: string, provider: string, auth: PastedAuth, secret: string, now: number, created?: number) {
  return {
    type: 'integration_connection' as const,
    workspace_id: workspaceId,
    connection_id: appId,
    target: 'app' as const,
    provider,
    mode: 'pasted' as const,
    status: 'connected' as const,
    auth_type: auth.type,
    ...(auth.type === 'basic' ? { username: auth.username } : {}),
    secret,
    created_timestamp: created ?? now,
    updated_timestamp: now,
  };
}

const sealAuth = (workspaceId: string, appId: string, auth: PastedAuth) =>
  sealSecrets(workspaceId, appId, auth.type === 'api_key' ? { api_key: auth.api_key } : { password: auth.password });

export async function createApp(workspaceId: string, input: CreateAppInput): Promise<AppView> {
  const entry = checkProvider(input.provider, input.type);
  checkAuthConfig(input.provider, input.auth_config);
  if (entry.requires_tenant_url && !input.tenant_url) throw badRequest(`tenant_url is required for ${input.provider} (e.g. https://yourcompany.zendesk.com)`);
  const existing = await queryApps(workspaceId);
  if (existing.filter((app) => app.provider === input.provider).length >= MAX_APPS_PER_PROVIDER) {
    throw conflict(`A workspace holds at most ${MAX_APPS_PER_PROVIDER} ${input.provider} apps`);
  }
  const now = Date.now();
  const app: AppItem = {
    type: 'integration_app',
    app_id: newId('app'),
    workspace_id: workspaceId,
    provider: input.provider,
    app_type: input.type,
    name: input.name ?? entry.display_name,
    ...(input.tenant_id ? { tenant_id: input.tenant_id } : {}),
    ...(input.tenant_url ? { tenant_url: trimTrailing(input.tenant_url, '/') } : {}),
    ...(input.crm_config ? { crm_config: input.crm_config } : {}),
    connection_status: 'not_connected',
    created_timestamp: now,
    user_modified_timestamp: now,
    revision: 1,
  };
  if (input.auth_config?.type === 'oauth2') app.oauth_client = await sealAppClient(workspaceId, app.app_id, input.auth_config);
  const ops = [appPutOp(app)];
  let connection: ConnectionItem | undefined;
  if (input.auth_config && input.auth_config.type !== 'oauth2') {
    const pasted = pastedConnection(workspaceId, app.app_id, app.provider, input.auth_config, await sealAuth(workspaceId, app.app_id, input.auth_config), now);
    ops.push(connectionPutOp(pasted, undefined, false));
    connection = { ...pasted, token_version: 1 };
  }
  await table.transact(ops);
  return view(app, connection);
}

export async function getApp(workspaceId: string, appId: string): Promise<AppView> {
  const [app, connection] = await Promise.all([appEntity.mustGet(workspaceId, appId), getConnection(workspaceId, appId)]);
  return view(app, connection);
}

export async function listApps(workspaceId: string, query: { limit: number; pagination_key?: string; sort_order: 'ascending' | 'descending' }) {
  const apps = (await queryApps(workspaceId)).sort((a, b) => a.created_timestamp - b.created_timestamp || a.app_id.localeCompare(b.app_id));
  if (query.sort_order === 'descending') apps.reverse();
  let start = 0;
  if (query.pagination_key) {
    const index = apps.findIndex((app) => app.app_id === query.pagination_key);
    if (index < 0) throw badRequest('Invalid pagination_key');
    start = index + 1;
  }
  const page = apps.slice(start, start + query.limit);
  const connections = await Promise.all(page.map((app) => getConnection(workspaceId, app.app_id)));
  const hasMore = start + query.limit < apps.length;
  return {
    items: page.map((app, index) => view(app, connections[index])),
    has_more: hasMore,
    ...(hasMore && page.length ? { pagination_key: page.at(-1)!.app_id } : {}),
  };
}

export async function updateApp(workspaceId: string, appId: string, input: UpdateAppInput): Promise<AppView> {
  const app = await appEntity.mustGet(workspaceId, appId);
  checkAuthConfig(app.provider, input.auth_config);
  const now = Date.now();
  const credentialsChanged = input.auth_config !== undefined || (input.tenant_url !== undefined && input.tenant_url !== app.tenant_url) || (input.tenant_id !== undefined && input.tenant_id !== app.tenant_id);
  const next: AppItem = {
    ...app,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.tenant_id !== undefined ? { tenant_id: input.tenant_id } : {}),
    ...(input.tenant_url !== undefined ? { tenant_url: trimTrailing(input.tenant_url, '/') } : {}),
    ...(input.crm_config !== undefined ? { crm_config: input.crm_config } : {}),
    // A new OAuth client: the tokens of the old one are dropped (below); connect again through /oauth/start.
    ...(input.auth_config?.type === 'oauth2' ? { oauth_client: await sealAppClient(workspaceId, appId, input.auth_config) } : {}),
    // New credentials or a new tenant: unverified until tested (retell-sdk's connection_status rule).
    ...((credentialsChanged && !isOAuthProvider(app.provider)) || input.auth_config?.type === 'oauth2' ? { connection_status: 'not_connected' as const } : {}),
    user_modified_timestamp: now,
    revision: app.revision + 1,
  };
  const ops = [appPutOp(next, app.revision)];
  const previous = await getConnection(workspaceId, appId);
  let connection = previous;
  if (input.auth_config && input.auth_config.type !== 'oauth2') {
    const pasted = pastedConnection(workspaceId, appId, app.provider, input.auth_config, await sealAuth(workspaceId, appId, input.auth_config), now, previous?.created_timestamp);
    ops.push(connectionPutOp(pasted, previous?.token_version, false));
    connection = { ...pasted, token_version: (previous?.token_version ?? 0) + 1 };
  }
  if (input.auth_config?.type === 'oauth2' && previous) {
    // retell-sdk: "Updating auth_config ... invalidates the cached provider token immediately."
    ops.push(connectionDeleteOp(workspaceId, appId));
    connection = undefined;
  }
  try {
    await table.transact(ops);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw conflict(`App ${appId} changed meanwhile; retry`);
    throw error;
  }
  return view(next, connection);
}

/**
 * What uses an app, as the agents domain computes it (`appUsages` of the agents index,
 * handed in by the integrations function: integrations does not import agents, whose
 * engine checks import integrations' narrow entry, app-refs/).
 */
export type AppUsers = (workspaceId: string, appId: string) => Promise<AppUsageView[]>;

const usageId = (usage: AppUsageView) => usage.agent_id ?? usage.llm_id ?? usage.conversation_flow_id ?? usage.knowledge_base_id ?? '';

/** GET /list-app-usages/{id}: retell-sdk's page, most recently configured first by default. */
export async function listAppUsages(workspaceId: string, appId: string, query: ListAppUsagesInput, usedBy: AppUsers) {
  await appEntity.mustGet(workspaceId, appId);
  const usages = (await usedBy(workspaceId, appId)).sort(
    (a, b) => a.configured_timestamp - b.configured_timestamp || usageId(a).localeCompare(usageId(b)),
  );
  if (query.sort_order === 'descending') usages.reverse();
  let start = 0;
  if (query.pagination_key) {
    const index = usages.findIndex((usage) => usageId(usage) === query.pagination_key);
    if (index < 0) throw badRequest('Invalid pagination_key');
    start = index + 1;
  }
  const page = usages.slice(start, start + query.limit);
  const hasMore = start + query.limit < usages.length;
  return { items: page, has_more: hasMore, ...(hasMore && page.length ? { pagination_key: usageId(page.at(-1)!) } : {}) };
}

const USAGE_LABEL: Record<AppUsageView['type'], string> = { agent: 'agent', llm: 'Retell LLM', conversation_flow: 'conversation flow', knowledge_base: 'knowledge base' };

const usageName = (usage: AppUsageView) => `${USAGE_LABEL[usage.type]} ${usageId(usage)}${usage.agent_name ? ` (${usage.agent_name})` : ''}`;

/**
 * Deletes an app with its connection (and the CRM settings' link to it); in use: 409 naming
 * the users (most recently configured first, as listed), unless forced (their app tools then answer the model an error until removed:
 * POST /repair-agent/{agent_id} drops them).
 */
export async function deleteApp(workspaceId: string, appId: string, force: boolean, usedBy: AppUsers): Promise<void> {
  await appEntity.mustGet(workspaceId, appId);
  if (!force) {
    const usages = (await usedBy(workspaceId, appId)).sort((a, b) => b.configured_timestamp - a.configured_timestamp || usageId(a).localeCompare(usageId(b)));
    if (usages.length) {
      throw conflict(`App ${appId} is used by ${usages.map(usageName).join(', ')}; remove it from them first (or pass force_delete=true)`);
    }
  }
  try {
    await table.transact([appDeleteOp(workspaceId, appId), connectionDeleteOp(workspaceId, appId)]);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw notFound(`App ${appId} not found`);
    throw error;
  }
  // retell-sdk: "If a CRM config is linked to this App, the link is cleared."
  await unlinkCrmApp(workspaceId, appId, Date.now());
}

/** The vendor target of an app: its base URL (tenant or provider default) and a fresh credential. */
async function appTarget(workspaceId: string, app: AppItem): Promise<AppTarget> {
  const connection = await getConnection(workspaceId, app.app_id);
  if (!connection) throw badRequest(`App ${app.app_id} is not connected: ${isPastedProvider(app.provider) ? 'give it auth_config' : 'connect it through POST /oauth/start'}`);
  const usable = await freshConnection(workspaceId, app.app_id);
  let baseUrl: string | undefined;
  if (isOAuthProvider(app.provider)) baseUrl = await providerApiBase(app.provider, usable.options, usable.kept);
  else baseUrl = app.tenant_url ?? defaultAppBaseUrl(app.provider);
  if (!baseUrl) throw badRequest(`App ${app.app_id} has no tenant_url`);
  return { provider: app.provider, baseUrl, credentials: usable.credentials, mock: usable.mode === 'mock', kept: usable.kept };
}

/** Maps a vendor failure to the taxonomy (and records a rejected credential on the app). */
async function vendorCall<T>(workspaceId: string, app: AppItem, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof AppAuthRejected) {
      await Promise.all([setAppConnectionStatus(workspaceId, app.app_id, 'error', Date.now()), setConnectionStatus(workspaceId, app.app_id, 'error', Date.now())]);
      throw unprocessable(`${app.provider} refused the app's credentials (HTTP ${error.status})`);
    }
    if (error instanceof AppVendorFailed) {
      if (error.refused) throw badRequest(`The app's URL is not allowed: ${error.detail}`);
      throw badGateway(`${app.provider} failed: ${error.detail}`);
    }
    if (error instanceof AppUnsupported) throw unprocessable(error.message);
    throw error;
  }
}

export async function testAuth(workspaceId: string, appId: string): Promise<{ success: boolean; message?: string }> {
  const app = await appEntity.mustGet(workspaceId, appId);
  const target = await appTarget(workspaceId, app);
  try {
    await testAppAuth(target);
  } catch (error) {
    if (error instanceof AppAuthRejected) {
      await Promise.all([setAppConnectionStatus(workspaceId, appId, 'error', Date.now()), setConnectionStatus(workspaceId, appId, 'error', Date.now())]);
      return { success: false, message: `${app.provider} refused the app's credentials (HTTP ${error.status})` };
    }
    await vendorCall(workspaceId, app, () => Promise.reject(error));
  }
  await Promise.all([setAppConnectionStatus(workspaceId, appId, 'connected', Date.now()), setConnectionStatus(workspaceId, appId, 'connected', Date.now())]);
  return { success: true };
}

export async function executeTool(workspaceId: string, appId: string, tool: string, args: Record<string, unknown>) {
  const app = await appEntity.mustGet(workspaceId, appId);
  const entry = providerEntry(app.provider);
  if (!entry?.tools.includes(tool)) throw badRequest(`${app.provider} has no tool ${tool} (it has ${entry?.tools.join(', ') ?? 'none'})`);
  const definition = TOOLS[tool]!;
  const missing = definition.parameters.required.filter((name) => args[name] === undefined || args[name] === null || args[name] === '');
  if (missing.length) throw badRequest(missing.map((name) => `arguments.${name}: Required`).join('; '));
  const target = await appTarget(workspaceId, app);
  const result = await vendorCall(workspaceId, app, () => executeAppTool(target, tool, args));
  if (app.connection_status !== 'connected') await setAppConnectionStatus(workspaceId, appId, 'connected', Date.now());
  return { app_id: appId, tool, result };
}

export function getToolSchema(filter: { provider?: string; type?: string }) {
  return toolSchemas(filter);
}

export async function toolSchemaForApp(workspaceId: string, appId: string) {
  const app = await appEntity.mustGet(workspaceId, appId);
  return toolSchemas({ provider: app.provider });
}
