import { randomUUID } from 'node:crypto';
import { decryptSecret, DecryptionFailed, encryptSecret, recordContext } from '../platform/crypto/envelope.ts';
import { badGateway, badRequest, conflict, notFound, unprocessable } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { GrantRevoked, ProviderFailed, refreshGrant, type TokenSet } from '../vendors/oauth/client.ts';
import { isOAuthProvider, PROVIDER_TABLE, resolveProvider, type KeptValue, type OAuthProviderName, type ProviderOptions } from '../vendors/oauth/providers.ts';
import { resolveAppClient } from './app-clients.ts';
import {
  acquireRefreshLease,
  appEntity,
  deleteKbSyncConnection,
  getConnection,
  markNeedsReconnect,
  releaseRefreshLease,
  writeRefreshedTokens,
  type ConnectionItem,
} from './store.ts';

/*
 * Connections: the sealed credentials of a CRM, an app or a synced source, and their
 * refresh. Tokens are sealed with envelope encryption under a context naming the workspace
 * and the connection (a ciphertext moved to another connection or workspace fails to
 * decrypt) and never leave this module except as a fresh access token for a vendor call.
 */

/** Refresh before any use when fewer than 5 minutes remain (spec: OAuth refresh). */
const REFRESH_BEFORE_USE_MS = 5 * 60_000;
/** The minute job refreshes tokens expiring within 10 minutes. */
export const REFRESH_AHEAD_MS = 10 * 60_000;
/** A refresher's lease: longer than a token request may take (10 s). */
const REFRESH_LEASE_MS = 30_000;
/** How long a caller waits for another instance's refresh of the same connection. */
const REFRESH_WAIT_MS = 15_000;

export interface ConnectionSecrets {
  access_token?: string;
  refresh_token?: string;
  api_key?: string;
  password?: string;
}

const connectionContext = (workspaceId: string, connectionId: string) => recordContext(workspaceId, `integration_connection:${connectionId}`);

export const sealSecrets = (workspaceId: string, connectionId: string, secrets: ConnectionSecrets) =>
  encryptSecret(JSON.stringify(secrets), connectionContext(workspaceId, connectionId));

/** Opens a connection's secrets; a ciphertext that is not this connection's (moved, tampered) is a 422, never used. */
async function openSecrets(item: Pick<ConnectionItem, 'workspace_id' | 'connection_id' | 'secret' | 'provider'>): Promise<ConnectionSecrets> {
  try {
    return JSON.parse(await decryptSecret(item.secret, connectionContext(item.workspace_id, item.connection_id))) as ConnectionSecrets;
  } catch (error) {
    if (!(error instanceof DecryptionFailed)) throw error;
    logger.error('integration connection: stored credentials do not open', { workspace_id: item.workspace_id, connection_id: item.connection_id });
    throw unprocessable(`The stored credentials of this ${item.provider} connection cannot be opened; reconnect it`);
  }
}

/** Whether the minute job and use-time refresh apply to a provider's tokens (notion's never expire). */
export const refreshable = (provider: string) => isOAuthProvider(provider) && !PROVIDER_TABLE[provider].neverRefreshed;

export const notOAuth = () => badRequest('This connection does not use OAuth');

export interface RefreshOutcome {
  refreshed: boolean;
  expires_at: number | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Refreshes a connection's tokens when they expire within `withinMs` (always with
 * `force`). One refresher at a time per connection across instances: the lease item
 * (attributes of the connection) is taken with a conditional write; whoever finds it held
 * waits for that refresh and answers its result instead of using the refresh token again.
 * The new tokens are written only over the token version that was refreshed, so a stale
 * writer never overwrites a rotated refresh token.
 */
export async function refreshConnection(workspaceId: string, connectionId: string, options: { force?: boolean; withinMs?: number } = {}): Promise<RefreshOutcome> {
  const first = await getConnection(workspaceId, connectionId);
  if (!first) throw notFound('Connection not found');
  if (first.mode === 'pasted' || !isOAuthProvider(first.provider)) throw notOAuth();
  if (!refreshable(first.provider)) return { refreshed: false, expires_at: first.token_expires_at ?? null };
  if (first.status === 'needs_reconnect') throw needsReconnect(first);
  const due = (item: ConnectionItem) => item.token_expires_at !== undefined && item.token_expires_at - Date.now() < (options.withinMs ?? REFRESH_BEFORE_USE_MS);
  if (!options.force && !due(first)) return { refreshed: false, expires_at: first.token_expires_at ?? null };

  const holder = randomUUID();
  const deadline = Date.now() + REFRESH_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    const leased = await acquireRefreshLease(workspaceId, connectionId, holder, Date.now(), REFRESH_LEASE_MS);
    if (leased) {
      // Someone refreshed between our read and our lease: that refresh is ours too.
      if (leased.token_version !== first.token_version || (!options.force && !due(leased))) {
        await releaseRefreshLease(workspaceId, connectionId, holder);
        if (leased.status === 'needs_reconnect') throw needsReconnect(leased);
        return { refreshed: leased.token_version !== first.token_version, expires_at: leased.token_expires_at ?? null };
      }
      return runRefresh(leased, holder);
    }
    const now = await getConnection(workspaceId, connectionId);
    if (!now) throw notFound('Connection not found');
    if (now.token_version !== first.token_version) {
      if (now.status === 'needs_reconnect') throw needsReconnect(now);
      return { refreshed: true, expires_at: now.token_expires_at ?? null };
    }
    if (now.status === 'needs_reconnect') throw needsReconnect(now);
    if (Date.now() > deadline) throw conflict('A refresh of this connection is in progress; retry shortly');
    await sleep(Math.min(50 * 2 ** Math.min(attempt, 3), 400));
  }
}

const needsReconnect = (item: ConnectionItem) =>
  badRequest(`The ${item.provider} connection needs to be reconnected: the provider revoked its authorization`);

async function runRefresh(item: ConnectionItem, holder: string): Promise<RefreshOutcome> {
  const provider = item.provider as OAuthProviderName;
  let tokens: TokenSet;
  try {
    const secrets = await openSecrets(item);
    if (!secrets.refresh_token) {
      await markNeedsReconnect(item.workspace_id, item.connection_id, holder, 'The provider gave no refresh token', Date.now());
      throw needsReconnect(item);
    }
    tokens = await refreshGrant(await connectionProvider(item), secrets.refresh_token);
  } catch (error) {
    if (error instanceof GrantRevoked) {
      logger.warn('oauth refresh: grant revoked', { workspace_id: item.workspace_id, connection_id: item.connection_id, provider });
      await markNeedsReconnect(item.workspace_id, item.connection_id, holder, error.detail, Date.now());
      throw needsReconnect(item);
    }
    await releaseRefreshLease(item.workspace_id, item.connection_id, holder);
    if (error instanceof ProviderFailed) throw badGateway(`OAuth provider ${provider} failed: ${error.detail}`);
    throw error;
  }
  const secret = await sealSecrets(item.workspace_id, item.connection_id, { access_token: tokens.accessToken, refresh_token: tokens.refreshToken });
  const written = await writeRefreshedTokens(
    item,
    holder,
    { secret, token_expires_at: tokens.expiresAt, kept: { ...item.kept, ...tokens.kept }, nowMs: Date.now() },
    true,
  );
  if (!written) {
    // Our lease ran out and someone else refreshed: theirs stands (ours is discarded).
    const now = await getConnection(item.workspace_id, item.connection_id);
    return { refreshed: true, expires_at: now?.token_expires_at ?? null };
  }
  return { refreshed: true, expires_at: tokens.expiresAt ?? null };
}

/** The client a connection refreshes with: the app's own (made with it), the mock, or the deployment's. */
async function connectionProvider(item: ConnectionItem) {
  if (item.client === 'app') {
    const app = await appEntity.get(item.workspace_id, item.connection_id);
    if (!app?.oauth_client) throw badRequest(`App ${item.connection_id} has no OAuth client of its own any more; connect it again`);
    return resolveAppClient(app, item.options ?? {});
  }
  return resolveProvider(item.provider as OAuthProviderName, item.options ?? {}, item.mode === 'mock');
}

/** What a vendor call needs: a usable credential and where the vendor is. */
export interface UsableConnection {
  provider: string;
  mode: ConnectionItem['mode'];
  credentials: { kind: 'bearer'; token: string } | { kind: 'api_key'; apiKey: string } | { kind: 'basic'; username: string; password: string };
  kept: Partial<Record<KeptValue, string>>;
  options: ProviderOptions;
  expiresAt?: number;
}

/**
 * A connection's credential, fresh: an OAuth access token with under 5 minutes left is
 * refreshed first (one refresh per connection across instances). This is what other
 * domains (the knowledge bases' synced sources) call before using a connection.
 */
export async function freshConnection(workspaceId: string, connectionId: string): Promise<UsableConnection> {
  let item = await getConnection(workspaceId, connectionId);
  if (!item) throw notFound('Connection not found');
  if (item.status === 'needs_reconnect') throw needsReconnect(item);
  if (item.mode !== 'pasted' && refreshable(item.provider) && item.token_expires_at !== undefined && item.token_expires_at - Date.now() < REFRESH_BEFORE_USE_MS) {
    await refreshConnection(workspaceId, connectionId, { withinMs: REFRESH_BEFORE_USE_MS });
    item = (await getConnection(workspaceId, connectionId))!;
  }
  const secrets = await openSecrets(item);
  const base = { provider: item.provider, mode: item.mode, kept: item.kept ?? {}, options: item.options ?? {}, expiresAt: item.token_expires_at };
  if (item.auth_type === 'basic') return { ...base, credentials: { kind: 'basic', username: item.username ?? '', password: secrets.password ?? '' } };
  if (item.auth_type === 'api_key') return { ...base, credentials: { kind: 'api_key', apiKey: secrets.api_key ?? '' } };
  return { ...base, credentials: { kind: 'bearer', token: secrets.access_token ?? '' } };
}

/** A fresh access token for an OAuth connection (the knowledge bases' kb_sync target uses this). */
export async function freshAccessToken(workspaceId: string, connectionId: string): Promise<{ accessToken: string; provider: string; mock: boolean; kept: Partial<Record<KeptValue, string>>; expiresAt?: number }> {
  const usable = await freshConnection(workspaceId, connectionId);
  if (usable.credentials.kind !== 'bearer') throw notOAuth();
  return { accessToken: usable.credentials.token, provider: usable.provider, mock: usable.mode === 'mock', kept: usable.kept, expiresAt: usable.expiresAt };
}

/** What a connection is, without opening its secrets (the knowledge bases check a kb_sync connection before using it). */
export interface ConnectionSummary {
  connection_id: string;
  target: ConnectionItem['target'];
  provider: string;
  mode: ConnectionItem['mode'];
  status: ConnectionItem['status'];
  knowledge_base_id?: string;
  sync_config?: Record<string, string>;
}

/** The workspace's connection, or undefined (another workspace's ID is simply not found). */
export async function describeConnection(workspaceId: string, connectionId: string): Promise<ConnectionSummary | undefined> {
  const item = await getConnection(workspaceId, connectionId);
  if (!item) return undefined;
  return {
    connection_id: item.connection_id,
    target: item.target,
    provider: item.provider,
    mode: item.mode,
    status: item.status,
    ...(item.knowledge_base_id ? { knowledge_base_id: item.knowledge_base_id } : {}),
    ...(item.sync_config ? { sync_config: item.sync_config } : {}),
  };
}

/**
 * Deletes a knowledge-base sync's connection: the knowledge-bases domain calls it when the
 * last sync using the connection is deleted, so its tokens are not kept (and refreshed
 * every minute) for nothing. Only a kb_sync connection is deleted; false when there is none.
 */
export async function releaseKbSyncConnection(workspaceId: string, connectionId: string): Promise<boolean> {
  const released = await deleteKbSyncConnection(workspaceId, connectionId);
  if (released) logger.info('integrations: kb_sync connection released', { connection_id: connectionId });
  return released;
}
