import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { defineEntity, table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import type { KeptValue, ProviderOptions } from '../vendors/oauth/providers.ts';
import type { AppType } from './catalogue.ts';

/*
 * The integrations domain's items (docs/data-model.md). Everything of a workspace sits in
 * its integrations partition `WS#<ws>#INTEGRATION`; OAuth states have their own
 * partitions (single use, TTL); the expiry index is gsi1 `OAUTHEXPIRY`.
 */

type ConnectionMode = 'oauth' | 'mock' | 'pasted';
export type ConnectionStatus = 'connected' | 'needs_reconnect' | 'error';
export type Target = 'crm' | 'app' | 'kb_sync';

export interface ConnectionItem {
  type: 'integration_connection';
  workspace_id: string;
  connection_id: string;
  target: Target;
  provider: string;
  mode: ConnectionMode;
  status: ConnectionStatus;
  auth_type: 'oauth2' | 'api_key' | 'basic';
  /** Basic auth's user name (not secret). */
  username?: string;
  /** Sealed JSON of the secrets (tokens, API key or password); context: workspace and connection. */
  secret: string;
  /** When the access token expires (epoch ms); absent: it does not (notion, pasted credentials). */
  token_expires_at?: number;
  /** Bumped by every token write: a refresh writes only over the version it read. */
  token_version: number;
  kept?: Partial<Record<KeptValue, string>>;
  options?: ProviderOptions;
  scope?: string;
  knowledge_base_id?: string;
  sync_config?: Record<string, string>;
  /** `app`: made with the app's own OAuth client (its `oauth_client`), which its refreshes use too. */
  client?: 'app';
  refresh_lease_until?: number;
  refresh_lease_holder?: string;
  last_refreshed_timestamp?: number;
  status_reason?: string;
  created_timestamp: number;
  updated_timestamp: number;
  gsi1pk?: string;
  gsi1sk?: string;
}

const connectionKey = (workspaceId: string, connectionId: string) => keys.integrationConnection(workspaceId, connectionId);
const connections = defineEntity<ConnectionItem, [workspaceId: string, connectionId: string]>({
  key: connectionKey,
  notFound: (_workspaceId, connectionId) => notFound(`Connection ${connectionId} not found`),
});
const crmProviderConfigs = defineEntity<CrmProviderItem & { pk: string; sk: string }, [workspaceId: string, provider: string]>({
  key: keys.crmProviderConfig,
  notFound: (_workspaceId, provider) => notFound(`CRM ${provider} is not configured`),
});
const crmSettingsRecords = defineEntity<CrmSettingsItem & { pk: string; sk: string }, [workspaceId: string]>({
  key: keys.crmSettings,
  notFound: () => notFound('CRM settings not found'),
});

/** The expiry index entry of a refreshable connection (none for tokens that never expire or need a reconnect). */
function expiryIndex(item: Pick<ConnectionItem, 'workspace_id' | 'connection_id' | 'token_expires_at' | 'mode' | 'status'>, refreshable: boolean) {
  if (!refreshable || item.mode === 'pasted' || item.status !== 'connected' || item.token_expires_at === undefined) return undefined;
  return keys.oauthExpiry(item.token_expires_at, item.workspace_id, item.connection_id);
}

export const getConnection = (workspaceId: string, connectionId: string) => table.get<ConnectionItem>(connectionKey(workspaceId, connectionId));

/**
 * Writes a connection's new credentials (a callback, a reconnect, pasted credentials):
 * the whole item, its token version one past the stored one, any refresh lease dropped.
 */
export function connectionPutOp(
  item: Omit<ConnectionItem, 'token_version' | 'gsi1pk' | 'gsi1sk'>,
  previousVersion: number | undefined,
  refreshable: boolean,
): TransactOp {
  const index = expiryIndex(item, refreshable);
  return {
    Put: {
      Item: { ...connectionKey(item.workspace_id, item.connection_id), ...item, token_version: (previousVersion ?? 0) + 1, ...index },
      ...(previousVersion === undefined
        ? { ConditionExpression: 'attribute_not_exists(pk)' }
        : { ConditionExpression: 'token_version = :v', ExpressionAttributeValues: { ':v': previousVersion } }),
    },
  };
}

/**
 * Takes the connection's refresh lease (one refresher at a time across instances): only if
 * no lease is held or the holder's has run out. Answers the item as it stands, or undefined
 * when someone else holds the lease.
 */
export async function acquireRefreshLease(workspaceId: string, connectionId: string, holder: string, nowMs: number, leaseMs: number): Promise<ConnectionItem | undefined> {
  return connections.update([workspaceId, connectionId], {
    UpdateExpression: 'SET refresh_lease_until = :until, refresh_lease_holder = :holder',
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(refresh_lease_until) OR refresh_lease_until <= :now)',
    ExpressionAttributeValues: { ':until': nowMs + leaseMs, ':holder': holder, ':now': nowMs },
  });
}

/**
 * Stores refreshed tokens: only while this holder's lease stands and the token version is
 * the one it refreshed from, so a stale refresher (its lease run out, someone else wrote)
 * never overwrites a rotated refresh token. Answers false when the condition failed.
 */
export async function writeRefreshedTokens(
  item: ConnectionItem,
  holder: string,
  update: { secret: string; token_expires_at?: number; kept?: ConnectionItem['kept']; nowMs: number },
  refreshable: boolean,
): Promise<boolean> {
  const next = { ...item, token_expires_at: update.token_expires_at };
  const index = expiryIndex(next, refreshable);
  const names: Record<string, string> = { '#status': 'status' };
  const values: Record<string, unknown> = {
    ':secret': update.secret,
    ':v': item.token_version,
    ':one': 1,
    ':holder': holder,
    ':now': update.nowMs,
    ':connected': 'connected',
    ':kept': update.kept ?? item.kept ?? {},
  };
  const set = ['secret = :secret', 'token_version = token_version + :one', 'last_refreshed_timestamp = :now', 'updated_timestamp = :now', '#status = :connected', 'kept = :kept'];
  const remove = ['refresh_lease_until', 'refresh_lease_holder', 'status_reason'];
  if (update.token_expires_at === undefined) remove.push('token_expires_at');
  else {
    set.push('token_expires_at = :expires');
    values[':expires'] = update.token_expires_at;
  }
  if (index) {
    set.push('gsi1pk = :gpk', 'gsi1sk = :gsk');
    values[':gpk'] = index.gsi1pk;
    values[':gsk'] = index.gsi1sk;
  } else remove.push('gsi1pk', 'gsi1sk');
  const written = await connections.update([item.workspace_id, item.connection_id], {
    UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}`,
    ConditionExpression: 'refresh_lease_holder = :holder AND token_version = :v',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  });
  return written !== undefined;
}

/** Ends this holder's lease (a failed refresh); nothing if it no longer holds it. */
export async function releaseRefreshLease(workspaceId: string, connectionId: string, holder: string): Promise<void> {
  await connections.update([workspaceId, connectionId], {
    UpdateExpression: 'REMOVE refresh_lease_until, refresh_lease_holder',
    ConditionExpression: 'refresh_lease_holder = :holder',
    ExpressionAttributeValues: { ':holder': holder },
  });
}

/** The provider revoked the grant: the connection needs a reconnect (and leaves the expiry index). */
export async function markNeedsReconnect(workspaceId: string, connectionId: string, holder: string, reason: string, nowMs: number): Promise<void> {
  await connections.update([workspaceId, connectionId], {
    UpdateExpression: 'SET #status = :status, status_reason = :reason, updated_timestamp = :now REMOVE refresh_lease_until, refresh_lease_holder, gsi1pk, gsi1sk',
    ConditionExpression: 'refresh_lease_holder = :holder',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':status': 'needs_reconnect', ':reason': reason, ':now': nowMs, ':holder': holder },
  });
}

/** Records a vendor's verdict on pasted credentials (test-auth, a tool call). */
export async function setConnectionStatus(workspaceId: string, connectionId: string, status: ConnectionStatus, nowMs: number): Promise<void> {
  await connections.update([workspaceId, connectionId], {
    UpdateExpression: 'SET #status = :status, updated_timestamp = :now',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':status': status, ':now': nowMs },
  });
}

export const connectionDeleteOp = (workspaceId: string, connectionId: string): TransactOp => ({ Delete: { Key: connectionKey(workspaceId, connectionId) } });

/** Deletes a kb_sync connection (its sealed tokens and its expiry index entry go with the item); false when there is no such connection. */
export async function deleteKbSyncConnection(workspaceId: string, connectionId: string): Promise<boolean> {
  const taken = await connections.take([workspaceId, connectionId], { expression: 'target = :target', values: { ':target': 'kb_sync' } });
  return taken !== undefined;
}

/** An expiring connection as the expiry index names it, with its index key (a walk's cursor). */
export interface ExpiringConnection {
  workspaceId: string;
  connectionId: string;
  /** The entry's key in the expiry index: an ExclusiveStartKey to go on after it. */
  position: Record<string, unknown>;
}

/**
 * A page of the connections whose access token expires before `beforeMs`, soonest first,
 * after `startKey` (a position): one query of the expiry index. `next` is undefined at the end.
 */
export async function queryExpiringConnections(
  beforeMs: number,
  limit: number,
  startKey?: Record<string, unknown>,
): Promise<{ connections: ExpiringConnection[]; next?: Record<string, unknown> }> {
  const page = await table.dueBefore<{ pk: string; sk: string; gsi1pk: string; gsi1sk: string }>(keys.oauthExpiring(beforeMs), limit, startKey);
  return {
    connections: page.items.map((item) => {
      const [, workspaceId, connectionId] = item.gsi1sk.split('#') as [string, string, string];
      return { workspaceId, connectionId, position: { pk: item.pk, sk: item.sk, gsi1pk: item.gsi1pk, gsi1sk: item.gsi1sk } };
    }),
    ...(page.lastKey ? { next: page.lastKey } : {}),
  };
}

// ---------------------------------------------------------------------------------------
// OAuth states

export interface StateItem {
  workspace_id: string;
  provider: string;
  target: Target;
  expires_ms: number;
  /** TTL (epoch seconds): DynamoDB removes it some time after it lapsed. */
  expires_at: number;
}

const oauthStates = defineEntity<StateItem, [nonce: string]>({
  key: keys.oauthState,
  notFound: () => notFound('OAuth state not found'),
});

export async function putState(nonce: string, item: StateItem): Promise<void> {
  // A nonce is random: an existing item would be a collision, never a retry.
  if (!(await oauthStates.putIf(item, [nonce]))) throw new Error('OAuth state nonce collision');
}

/** Consumes a state once (a conditional delete): undefined when it was used, never issued, or issued for another workspace or provider. */
export function consumeState(nonce: string, workspaceId: string, provider: string): Promise<StateItem | undefined> {
  return oauthStates.take([nonce], {
    expression: 'attribute_exists(pk) AND workspace_id = :ws AND provider = :provider',
    values: { ':ws': workspaceId, ':provider': provider },
  });
}

// ---------------------------------------------------------------------------------------
// Apps

export interface AppItem {
  type: 'integration_app';
  app_id: string;
  workspace_id: string;
  provider: string;
  app_type: AppType;
  name?: string;
  tenant_id?: string;
  tenant_url?: string;
  crm_config?: Record<string, unknown>;
  /** The caller's own OAuth client (retell-sdk's `oauth2` auth_config), its secret sealed. */
  oauth_client?: AppOAuthClient;
  /** `not_connected` until credentials are verified or an OAuth connect succeeds. */
  connection_status: 'not_connected' | 'connected' | 'error';
  created_timestamp: number;
  user_modified_timestamp: number;
  revision: number;
}

export interface AppOAuthClient {
  client_id: string;
  /** Sealed client secret; context: workspace and `integration_app_client:<app_id>`. */
  secret: string;
  authorize_url?: string;
  token_url?: string;
  scopes?: string[];
}

export const appEntity = defineEntity<AppItem, [workspaceId: string, appId: string]>({
  key: (workspaceId, appId) => keys.integrationApp(workspaceId, appId),
  notFound: (_workspaceId, appId) => notFound(`App ${appId} not found`),
});

export async function queryApps(workspaceId: string): Promise<AppItem[]> {
  const partition = keys.integrationApps(workspaceId);
  return table.queryAll<AppItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
}

export const appPutOp = (item: AppItem, expectedRevision?: number): TransactOp => ({
  Put: {
    Item: { ...keys.integrationApp(item.workspace_id, item.app_id), ...item },
    ...(expectedRevision === undefined
      ? { ConditionExpression: 'attribute_not_exists(pk)' }
      : { ConditionExpression: 'revision = :r', ExpressionAttributeValues: { ':r': expectedRevision } }),
  },
});

export const appDeleteOp = (workspaceId: string, appId: string): TransactOp => ({
  Delete: { Key: keys.integrationApp(workspaceId, appId), ConditionExpression: 'attribute_exists(pk)' },
});

export async function setAppConnectionStatus(workspaceId: string, appId: string, status: AppItem['connection_status'], nowMs: number): Promise<void> {
  await appEntity.update([workspaceId, appId], {
    UpdateExpression: 'SET connection_status = :status, revision = revision + :one',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':status': status, ':one': 1 },
  });
  void nowMs;
}

/** The apps among these IDs that exist in the workspace (strongly consistent batch reads; another workspace's IDs find nothing). */
export async function getApps(workspaceId: string, appIds: readonly string[]): Promise<AppItem[]> {
  return appIds.length ? table.batchGet<AppItem>([...new Set(appIds)].map((appId) => keys.integrationApp(workspaceId, appId))) : [];
}

// ---------------------------------------------------------------------------------------
// CRM

export interface CrmProviderItem {
  workspace_id: string;
  provider: string;
  enabled: boolean;
  sync_calls: boolean;
  sync_contacts: boolean;
  field_mappings: { field_name: string; external_field_name: string }[];
  last_sync_timestamp?: number;
  /** Calls logged in this CRM by the per-call push (carried over by every rewrite of the config). */
  calls_pushed?: number;
  /** Ours: a scheduled (`cron`) sync every this many minutes; absent: none. */
  sync_interval_minutes?: number;
  /** When the next scheduled sync is due (epoch ms); indexed in gsi1 `CRMSYNCDUE` while the config is enabled. */
  next_sync_at?: number;
  created_timestamp: number;
  updated_timestamp: number;
}

/** The item as written: its key, and its due-sync index entry when a scheduled sync applies. */
function crmProviderRecord(item: CrmProviderItem) {
  const { gsi1pk: _pk, gsi1sk: _sk, ...plain } = item as CrmProviderItem & { gsi1pk?: string; gsi1sk?: string };
  const due = plain.enabled && plain.sync_interval_minutes && plain.next_sync_at !== undefined ? keys.crmSyncDue(plain.next_sync_at, plain.workspace_id, plain.provider) : {};
  return { ...keys.crmProviderConfig(plain.workspace_id, plain.provider), ...plain, ...due };
}

export const getCrmProvider = (workspaceId: string, provider: string) => table.get<CrmProviderItem>(keys.crmProviderConfig(workspaceId, provider));
export const crmProviderPutOp = (item: CrmProviderItem): TransactOp => ({ Put: { Item: crmProviderRecord(item) } });

/** The fields other writers change in place (the push counter, the sync stamp, the scheduled sync's claim). */
const CARRIED = ['calls_pushed', 'last_sync_timestamp', 'next_sync_at'] as const;

/**
 * Rewrites a provider config only over the one read (`undefined`: none existed): the fields
 * other writers change in place must still hold the values carried over, so a rewrite never
 * undoes a counted push or a claimed scheduled sync. False when something changed meanwhile.
 */
export async function replaceCrmProvider(item: CrmProviderItem, read: CrmProviderItem | undefined): Promise<boolean> {
  const values: Record<string, unknown> = {};
  const condition = read
    ? ['attribute_exists(pk)', ...CARRIED.map((name) => (read[name] === undefined ? `attribute_not_exists(${name})` : ((values[`:${name}`] = read[name]), `${name} = :${name}`)))].join(' AND ')
    : 'attribute_not_exists(pk)';
  return crmProviderConfigs.putIf(crmProviderRecord(item), [item.workspace_id, item.provider], {
    expression: condition,
    ...(Object.keys(values).length ? { values } : {}),
  });
}

/** Provider configs whose scheduled sync is due before `beforeMs`, soonest first (gsi1 `CRMSYNCDUE`, keys only). */
export async function queryDueCrmSyncs(beforeMs: number, limit: number): Promise<{ workspaceId: string; provider: string; nextSyncAt: number }[]> {
  const page = await table.dueBefore(keys.crmSyncsDue(beforeMs), limit);
  return page.items.map((item) => {
    const [at, workspaceId, provider] = item.gsi1sk.split('#') as [string, string, string];
    return { workspaceId, provider, nextSyncAt: Number(at) };
  });
}

/**
 * Claims a due scheduled sync: moves the config's next sync to `nextMs`, only if it is
 * still the one read (so two passes, or a pass racing a config rewrite, claim it once).
 */
export async function advanceCrmSync(workspaceId: string, provider: string, dueMs: number, nextMs: number): Promise<boolean> {
  const due = keys.crmSyncDue(nextMs, workspaceId, provider);
  const written = await crmProviderConfigs.update([workspaceId, provider], {
    UpdateExpression: 'SET next_sync_at = :next, gsi1sk = :sk',
    ConditionExpression: 'next_sync_at = :due AND enabled = :on AND attribute_exists(sync_interval_minutes)',
    ExpressionAttributeValues: { ':next': nextMs, ':sk': due.gsi1sk, ':due': dueMs, ':on': true },
  });
  return written !== undefined;
}
export const crmProviderDeleteOp = (workspaceId: string, provider: string): TransactOp => ({
  Delete: { Key: keys.crmProviderConfig(workspaceId, provider), ConditionExpression: 'attribute_exists(pk)' },
});
export async function queryCrmProviders(workspaceId: string): Promise<CrmProviderItem[]> {
  const partition = keys.crmProviderConfigs(workspaceId);
  return table.queryAll<CrmProviderItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
}
export async function setCrmLastSync(workspaceId: string, provider: string, nowMs: number): Promise<void> {
  await crmProviderConfigs.update([workspaceId, provider], {
    UpdateExpression: 'SET last_sync_timestamp = :now',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':now': nowMs },
  });
}

/** Counts a call logged by the per-call push (nothing if the config was deleted meanwhile). */
export async function countCallPushed(workspaceId: string, provider: string): Promise<void> {
  await crmProviderConfigs.update([workspaceId, provider], {
    UpdateExpression: 'ADD calls_pushed :one',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':one': 1 },
  });
}

export interface CrmSettingsItem {
  app_id?: string;
  contact_columns_order?: string[];
  crm_analysis_data_mappings?: unknown[];
  custom_fields?: unknown[];
  contact_tags?: string[];
  updated_timestamp: number;
}
export const getCrmSettings = (workspaceId: string) => table.get<CrmSettingsItem>(keys.crmSettings(workspaceId));
export const putCrmSettings = (workspaceId: string, item: CrmSettingsItem) => table.put({ Item: { ...keys.crmSettings(workspaceId), ...item } });

/** Clears the CRM settings' link to an app (its app was deleted); nothing when another app is linked. */
export async function unlinkCrmApp(workspaceId: string, appId: string, nowMs: number): Promise<void> {
  await crmSettingsRecords.update([workspaceId], {
    UpdateExpression: 'REMOVE app_id SET updated_timestamp = :now',
    ConditionExpression: 'app_id = :app',
    ExpressionAttributeValues: { ':app': appId, ':now': nowMs },
  });
}

export interface SyncJobItem {
  sync_job_id: string;
  workspace_id: string;
  provider: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  triggered_by: 'manual' | 'cron' | 'call_ended';
  succeeded: number;
  failed: number;
  skipped: number;
  errors: { object_id: string; message: string }[];
  /** The step the next message runs (`<phase>:<after>`): a redelivered step is recorded once. */
  cursor: string;
  start_timestamp: number;
  end_timestamp?: number;
  failure_reason?: string;
}

/** Creates a job and takes the workspace's sync lock in one transaction (409 upstream when it is held). */
export async function createSyncJob(item: SyncJobItem, nowMs: number, lockMs: number): Promise<boolean> {
  try {
    await table.transact([
      {
        Put: {
          Item: { ...keys.crmSyncLock(item.workspace_id), sync_job_id: item.sync_job_id, lock_until: nowMs + lockMs },
          ConditionExpression: 'attribute_not_exists(pk) OR lock_until <= :now',
          ExpressionAttributeValues: { ':now': nowMs },
        },
      },
      { Put: { Item: { ...keys.crmSyncJob(item.workspace_id, item.sync_job_id), ...item }, ConditionExpression: 'attribute_not_exists(pk)' } },
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

export const getSyncJob = (workspaceId: string, jobId: string) => table.get<SyncJobItem>(keys.crmSyncJob(workspaceId, jobId));

export async function querySyncJobs(workspaceId: string, limit: number): Promise<SyncJobItem[]> {
  const partition = keys.crmSyncJobs(workspaceId);
  const page = await table.queryPage<SyncJobItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: false,
    Limit: limit,
  });
  return page.items;
}

/** Records one step's results, conditional on the cursor the step ran from. */
export function recordSyncStep(
  job: SyncJobItem,
  next: Pick<SyncJobItem, 'succeeded' | 'failed' | 'skipped' | 'errors' | 'cursor' | 'status'> & { end_timestamp?: number; failure_reason?: string },
): Promise<boolean> {
  return syncJobs.putIf({ ...job, ...next }, [job.workspace_id, job.sync_job_id], {
    expression: '#cursor = :cursor',
    names: { '#cursor': 'cursor' },
    values: { ':cursor': job.cursor },
  });
}

/** Releases the workspace's sync lock if this job holds it (another job's lock stays). */
export async function releaseSyncLock(workspaceId: string, jobId: string): Promise<void> {
  await syncLocks.take([workspaceId], { expression: 'sync_job_id = :job', values: { ':job': jobId } });
}

export interface SyncedObjectItem {
  external_id: string;
  digest: string;
  synced_timestamp: number;
}

/** A synced-object record while a per-call push holds it (no external_id yet). */
interface SyncedClaim {
  external_id?: string;
  claim_token?: string;
  claim_until?: number;
}

const syncJobs = defineEntity<SyncJobItem, [workspaceId: string, jobId: string]>({
  key: keys.crmSyncJob,
  notFound: (_workspaceId, jobId) => notFound(`Sync job ${jobId} not found`),
});
const syncLocks = defineEntity<{ sync_job_id: string; lock_until: number }, [workspaceId: string]>({
  key: keys.crmSyncLock,
  notFound: () => notFound('No sync is running'),
});
const syncedClaims = defineEntity<SyncedClaim, [workspaceId: string, provider: string, callId: string]>({
  key: keys.crmSyncedObject,
  notFound: (_workspaceId, provider, callId) => notFound(`Call ${callId} was not pushed to ${provider}`),
});
const analysisApplications = defineEntity<{ applied_timestamp: number; expires_at: number }, [workspaceId: string, callId: string]>({
  key: keys.crmCallAnalysisApplied,
  notFound: (_workspaceId, callId) => notFound(`Analysis of call ${callId} was not applied`),
});

/**
 * Claims a call's push to one provider: `claimed` when this caller may push it (no record,
 * or an unfinished claim whose holder's time ran out), `done` when it was pushed already,
 * `busy` while another holder pushes it. A call is logged in a CRM once.
 */
export async function claimSyncedCall(workspaceId: string, provider: string, callId: string, token: string, nowMs: number, leaseMs: number): Promise<'claimed' | 'done' | 'busy'> {
  const args: [string, string, string] = [workspaceId, provider, callId];
  const claimed = await syncedClaims.putIf({ claim_token: token, claim_until: nowMs + leaseMs }, args, {
    expression: 'attribute_not_exists(pk) OR (attribute_not_exists(external_id) AND claim_until < :now)',
    values: { ':now': nowMs },
  });
  if (claimed) return 'claimed';
  const existing = await syncedClaims.get(...args);
  return existing?.external_id ? 'done' : existing ? 'busy' : 'claimed';
}

/** Gives a failed push's claim back (only this holder's), so a retry may push. */
export async function releaseSyncedClaim(workspaceId: string, provider: string, callId: string, token: string): Promise<void> {
  await syncedClaims.take([workspaceId, provider, callId], { expression: 'claim_token = :token AND attribute_not_exists(external_id)', values: { ':token': token } });
}

/** Claims the one application of a call's analysis data to its contact (false: applied already). */
export function claimCallAnalysis(workspaceId: string, callId: string, nowMs: number): Promise<boolean> {
  return analysisApplications.putIf({ applied_timestamp: nowMs, expires_at: Math.floor(nowMs / 1000) + 90 * 86_400 }, [workspaceId, callId]);
}

/** Undoes a claim whose contact write failed, so the retry applies it. */
export const releaseCallAnalysis = (workspaceId: string, callId: string) => table.delete({ Key: keys.crmCallAnalysisApplied(workspaceId, callId) });
export const getSyncedObject = (workspaceId: string, provider: string, objectId: string) =>
  table.get<SyncedObjectItem>(keys.crmSyncedObject(workspaceId, provider, objectId));
export const putSyncedObject = (workspaceId: string, provider: string, objectId: string, item: SyncedObjectItem) =>
  table.put({ Item: { ...keys.crmSyncedObject(workspaceId, provider, objectId), ...item } });
