import { createHash, randomUUID } from 'node:crypto';
import { queueNamed } from '../platform/aws/queue.ts';
import { badGateway, badRequest, Conflict, conflict, Invalid, NotFound, notFound, Unprocessable, unprocessable } from '../platform/errors.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { TransactionCancelled, table } from '../platform/store/table.ts';
import {
  AppAuthRejected,
  AppUnsupported,
  AppVendorFailed,
  crmContactSchema,
  pushCrmCall,
  pushCrmContact,
  testAppAuth,
  type AppTarget,
  type CrmCall,
  type CrmContact,
} from '../vendors/apps/index.ts';
import { providerApiBase, type OAuthProviderName } from '../vendors/oauth/providers.ts';
import { CRM_PROVIDERS } from './catalogue.ts';
import { freshConnection } from './connections.ts';
import { analysisChange, checkCrmSettings, mappedFields, type AnalysisMapping, type ContactChange, type CustomFieldSpec, type ParleyContact } from './field-mappings.ts';
import type { CrmCallMessage, CrmScheduledSyncMessage, CrmSettingsInput, CrmSyncMessage, SyncJobView } from './schemas.ts';
import {
  appEntity,
  claimCallAnalysis,
  claimSyncedCall,
  connectionDeleteOp,
  createSyncJob,
  crmProviderDeleteOp,
  getConnection,
  getCrmProvider,
  getCrmSettings,
  getSyncedObject,
  getSyncJob,
  replaceCrmProvider,
  putCrmSettings,
  putSyncedObject,
  queryCrmProviders,
  querySyncJobs,
  recordSyncStep,
  releaseCallAnalysis,
  releaseSyncedClaim,
  releaseSyncLock,
  countCallPushed,
  setCrmLastSync,
  type ConnectionItem,
  type CrmProviderItem,
  type CrmSettingsItem,
  type SyncJobItem,
} from './store.ts';

/*
 * CRM connections (retell-sdk's `crm`, the spec's CRM routes): a config per provider
 * (enabled, sync_calls, sync_contacts, field mappings), the workspace's CRM settings
 * (retell-sdk's CRMConfig: the linked app, custom fields, analysis mappings), the vendor's
 * contact schema, an auth test, and sync jobs that push contacts and ended calls through
 * the integration-jobs queue, one page per step, idempotent per object.
 */

const SYNC_PAGE = 50;
const MAX_JOB_ERRORS = 20;
/** The workspace's sync lock outlives a stuck job by at most this much. */
const SYNC_LOCK_MS = 6 * 60 * 60_000;

function providerView(item: CrmProviderItem, connection: ConnectionItem | undefined) {
  return {
    provider: item.provider,
    enabled: item.enabled,
    sync_calls: item.sync_calls,
    sync_contacts: item.sync_contacts,
    field_mappings: item.field_mappings,
    connection_status: connection ? connection.status : ('not_connected' as const),
    mock: connection?.mode === 'mock',
    ...(connection?.token_expires_at !== undefined ? { token_expires_at: connection.token_expires_at } : {}),
    ...(item.last_sync_timestamp ? { last_sync_timestamp: item.last_sync_timestamp } : {}),
    calls_pushed: item.calls_pushed ?? 0,
    sync_interval_minutes: item.sync_interval_minutes ?? null,
    ...(item.sync_interval_minutes && item.next_sync_at !== undefined ? { next_sync_at: item.next_sync_at } : {}),
    created_timestamp: item.created_timestamp,
    updated_timestamp: item.updated_timestamp,
  };
}

export async function getCrmConfig(workspaceId: string) {
  const [settings, providers] = await Promise.all([getCrmSettings(workspaceId), queryCrmProviders(workspaceId)]);
  const connections = await Promise.all(providers.map((item) => getConnection(workspaceId, `crm_${item.provider}`)));
  const lastSync = Math.max(0, ...providers.map((item) => item.last_sync_timestamp ?? 0));
  return {
    org_id: workspaceId,
    ...(settings?.app_id ? { app_id: settings.app_id } : {}),
    ...(settings?.contact_columns_order ? { contact_columns_order: settings.contact_columns_order } : {}),
    ...(settings?.contact_tags ? { contact_tags: settings.contact_tags } : {}),
    ...(settings?.crm_analysis_data_mappings ? { crm_analysis_data_mappings: settings.crm_analysis_data_mappings as never } : {}),
    ...(settings?.custom_fields ? { custom_fields: settings.custom_fields as never } : {}),
    ...(lastSync ? { last_sync_timestamp: lastSync } : {}),
    providers: providers.map((item, index) => providerView(item, connections[index])),
  };
}

export async function updateCrmProvider(
  workspaceId: string,
  provider: string,
  input: { enabled?: boolean; sync_calls?: boolean; sync_contacts?: boolean; field_mappings?: CrmProviderItem['field_mappings']; sync_interval_minutes?: number | null },
) {
  // Rewritten only over the config read (a push counted or a scheduled sync claimed meanwhile: read again).
  for (let attempt = 0; attempt < 5; attempt++) {
    const now = Date.now();
    const existing = await getCrmProvider(workspaceId, provider);
    // A scheduled sync: kept when not sent; a new interval counts from now; null switches it off.
    const interval = input.sync_interval_minutes === undefined ? existing?.sync_interval_minutes : (input.sync_interval_minutes ?? undefined);
    const keepNext = interval !== undefined && interval === existing?.sync_interval_minutes && existing.next_sync_at !== undefined;
    const schedule = interval ? { sync_interval_minutes: interval, next_sync_at: keepNext ? existing!.next_sync_at! : now + interval * 60_000 } : {};
    const item: CrmProviderItem = {
      workspace_id: workspaceId,
      provider,
      enabled: input.enabled ?? existing?.enabled ?? true,
      sync_calls: input.sync_calls ?? existing?.sync_calls ?? true,
      sync_contacts: input.sync_contacts ?? existing?.sync_contacts ?? true,
      field_mappings: input.field_mappings ?? existing?.field_mappings ?? [],
      ...(existing?.last_sync_timestamp ? { last_sync_timestamp: existing.last_sync_timestamp } : {}),
      ...(existing?.calls_pushed ? { calls_pushed: existing.calls_pushed } : {}),
      ...schedule,
      created_timestamp: existing?.created_timestamp ?? now,
      updated_timestamp: now,
    };
    if (await replaceCrmProvider(item, existing)) return providerView(item, await getConnection(workspaceId, `crm_${provider}`));
  }
  throw conflict(`The ${provider} CRM config kept changing meanwhile; retry`);
}

/** retell-sdk's update-crm-config: a sent field replaces its stored value in full. */
export async function updateCrmSettings(workspaceId: string, input: CrmSettingsInput) {
  const existing = (await getCrmSettings(workspaceId)) ?? { updated_timestamp: 0 };
  if (input.app_id) {
    const app = await appEntity.get(workspaceId, input.app_id);
    if (!app) throw notFound(`App ${input.app_id} not found`);
    if (app.app_type !== 'crm') throw badRequest(`App ${input.app_id} is a ${app.app_type} app, not a CRM`);
  }
  checkCrmSettings(
    (input.custom_fields ?? existing.custom_fields ?? []) as CustomFieldSpec[],
    (input.crm_analysis_data_mappings ?? existing.crm_analysis_data_mappings ?? []) as AnalysisMapping[],
    input.custom_fields !== undefined ? ((existing.custom_fields ?? []) as CustomFieldSpec[]) : undefined,
  );
  const { app_id: appId, ...rest } = input;
  const next = { ...existing, ...rest, updated_timestamp: Date.now() } as Record<string, unknown>;
  if (appId === null) delete next.app_id;
  else if (appId !== undefined) next.app_id = appId;
  delete next.pk;
  delete next.sk;
  await putCrmSettings(workspaceId, next as never);
  return getCrmConfig(workspaceId);
}

export async function deleteCrmProvider(workspaceId: string, provider: string): Promise<void> {
  try {
    await table.transact([crmProviderDeleteOp(workspaceId, provider), connectionDeleteOp(workspaceId, `crm_${provider}`)]);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw notFound(`No ${provider} CRM config in this workspace`);
    throw error;
  }
}

/** Which connection a CRM call uses: the provider's CRM connection, or a CRM app's. */
async function crmTarget(workspaceId: string, ref: { provider?: string; app_id?: string }): Promise<AppTarget> {
  let connectionId: string;
  let provider: string;
  if (ref.app_id) {
    const app = await appEntity.mustGet(workspaceId, ref.app_id);
    if (app.app_type !== 'crm') throw badRequest(`App ${ref.app_id} is a ${app.app_type} app, not a CRM`);
    connectionId = app.app_id;
    provider = app.provider;
  } else if (ref.provider) {
    connectionId = `crm_${ref.provider}`;
    provider = ref.provider;
  } else {
    throw badRequest('Name the CRM: provider or app_id (no CRM app is linked in the CRM config)');
  }
  const connection = await getConnection(workspaceId, connectionId);
  if (!connection) throw badRequest(`No ${provider} CRM is connected in this workspace; connect it through POST /oauth/start`);
  const usable = await freshConnection(workspaceId, connectionId);
  const baseUrl = await providerApiBase(provider as OAuthProviderName, usable.options, usable.kept);
  return { provider, baseUrl, credentials: usable.credentials, mock: usable.mode === 'mock', kept: usable.kept };
}

function mapVendorError(error: unknown): never {
  if (error instanceof AppAuthRejected) throw unprocessable(`${error.provider} refused the connection's credentials (HTTP ${error.status}); reconnect it`);
  if (error instanceof AppVendorFailed) {
    if (error.refused) throw badRequest(`The CRM's URL is not allowed: ${error.detail}`);
    throw badGateway(`${error.provider} failed: ${error.detail}`);
  }
  if (error instanceof AppUnsupported) throw unprocessable(error.message);
  throw error;
}

export async function crmSchema(workspaceId: string, ref: { provider?: string; app_id?: string }) {
  const resolved = ref.provider || ref.app_id ? ref : { app_id: (await getCrmSettings(workspaceId))?.app_id };
  const target = await crmTarget(workspaceId, resolved);
  try {
    return { provider: target.provider, fields: await crmContactSchema(target) };
  } catch (error) {
    mapVendorError(error);
  }
}

export async function testCrmAuth(workspaceId: string, provider: string): Promise<{ success: boolean; message?: string }> {
  const target = await crmTarget(workspaceId, { provider });
  try {
    await testAppAuth(target);
    return { success: true };
  } catch (error) {
    if (error instanceof AppAuthRejected) return { success: false, message: `${provider} refused the connection's credentials (HTTP ${error.status})` };
    mapVendorError(error);
  }
}

// ---------------------------------------------------------------------------------------
// Sync jobs

function jobView(job: SyncJobItem): SyncJobView {
  return {
    sync_job_id: job.sync_job_id,
    provider: job.provider,
    status: job.status,
    triggered_by: job.triggered_by,
    succeeded: job.succeeded,
    failed: job.failed,
    skipped: job.skipped,
    errors: job.errors,
    start_timestamp: job.start_timestamp,
    ...(job.end_timestamp ? { end_timestamp: job.end_timestamp } : {}),
    ...(job.failure_reason ? { failure_reason: job.failure_reason } : {}),
  };
}

/** retell-sdk's sync status: the job in flight, or `idle`. */
function sdkStatus(job: SyncJobItem | undefined) {
  if (!job || job.status === 'completed' || job.status === 'failed') {
    return { status: 'idle' as const, ...(job ? { sync_job_id: job.sync_job_id, provider: job.provider, succeeded: job.succeeded, failed: job.failed, start_timestamp: job.start_timestamp } : {}) };
  }
  return {
    status: job.status,
    succeeded: job.succeeded,
    failed: job.failed,
    start_timestamp: job.start_timestamp,
    triggered_by: job.triggered_by === 'manual' ? ('manual' as const) : ('cron' as const),
    sync_job_id: job.sync_job_id,
    provider: job.provider,
  };
}

const firstCursor = 'contacts:';

/** Starts a sync job (202): one per workspace at a time (409 while one runs). */
export async function startSync(workspaceId: string, input: { provider?: string }, triggeredBy: SyncJobItem['triggered_by'] = 'manual') {
  let provider = input.provider;
  if (!provider) {
    const settings = await getCrmSettings(workspaceId);
    const linked = settings?.app_id ? await appEntity.get(workspaceId, settings.app_id) : undefined;
    const enabled = (await queryCrmProviders(workspaceId)).filter((item) => item.enabled);
    if (linked) provider = linked.provider;
    else if (enabled.length === 1) provider = enabled[0]!.provider;
    else if (enabled.length > 1) throw badRequest(`Several CRMs are enabled (${enabled.map((item) => item.provider).join(', ')}); name one in provider`);
    else throw badRequest('No CRM is connected in this workspace; connect one through POST /oauth/start');
  }
  if (!(CRM_PROVIDERS as readonly string[]).includes(provider)) throw badRequest(`provider ${provider} is not a CRM`);
  const config = await getCrmProvider(workspaceId, provider);
  if (!config || !(await getConnection(workspaceId, `crm_${provider}`))) throw badRequest(`No ${provider} CRM is connected in this workspace; connect it through POST /oauth/start`);
  if (!config.enabled) throw badRequest(`The ${provider} CRM config is disabled`);
  const now = Date.now();
  const job: SyncJobItem = {
    sync_job_id: newTimeOrderedId('crmSyncJob', now),
    workspace_id: workspaceId,
    provider,
    status: 'queued',
    triggered_by: triggeredBy,
    succeeded: 0,
    failed: 0,
    skipped: 0,
    errors: [],
    cursor: firstCursor,
    start_timestamp: now,
  };
  if (!(await createSyncJob(job, now, SYNC_LOCK_MS))) throw conflict('A CRM sync is already running in this workspace');
  const message: CrmSyncMessage = { kind: 'crm-sync', workspace_id: workspaceId, sync_job_id: job.sync_job_id, phase: 'contacts' };
  try {
    await queueNamed('integration-jobs').send(message);
  } catch (error) {
    await recordSyncStep(job, { ...job, status: 'failed', failure_reason: 'The job could not be queued', end_timestamp: Date.now() });
    await releaseSyncLock(workspaceId, job.sync_job_id);
    throw error;
  }
  return jobView(job);
}

/**
 * A scheduled sync's message (the minute job queued it when the config's next sync came
 * due): starts a `cron` job as run-crm-sync-job would. A sync already running, a config
 * disabled or a CRM no longer connected skips this run (logged); the next one is already
 * scheduled.
 */
export async function runScheduledSync(message: CrmScheduledSyncMessage): Promise<void> {
  try {
    const job = await startSync(message.workspace_id, { provider: message.provider }, 'cron');
    logger.info('crm: scheduled sync started', { workspace_id: message.workspace_id, provider: message.provider, sync_job_id: job.sync_job_id });
  } catch (error) {
    if (!(error instanceof Conflict || error instanceof Invalid)) throw error;
    logger.info('crm: scheduled sync skipped', { workspace_id: message.workspace_id, provider: message.provider, reason: error.message });
  }
}

export async function startSyncForSdk(workspaceId: string) {
  const job = await startSync(workspaceId, {});
  return sdkStatus({ ...job, workspace_id: workspaceId, cursor: firstCursor } as SyncJobItem);
}

export async function getSyncJobView(workspaceId: string, jobId: string) {
  const job = await getSyncJob(workspaceId, jobId);
  if (!job) throw notFound(`CRM sync job ${jobId} not found`);
  return jobView(job);
}

export async function listSyncJobs(workspaceId: string, limit: number) {
  return (await querySyncJobs(workspaceId, limit)).map(jobView);
}

export async function getSyncStatus(workspaceId: string) {
  const [latest] = await querySyncJobs(workspaceId, 1);
  return sdkStatus(latest);
}

/** An ended call as the CRM side reads it: the call log, the other party's number and the analysis data. */
export interface CallForCrm extends CrmCall {
  call_status: string;
  /** The other party's E.164 number (outbound: to, inbound: from), when there is one. */
  party_number?: string;
  /** The post-call analysis' custom data (what crm_analysis_data_mappings read). */
  analysis_data?: Record<string, unknown>;
}

/** What the CRM jobs read and write outside this domain: the job function (above the domains) hands these in. */
export interface SyncReaders {
  contacts(workspaceId: string, after: string | undefined, limit: number): Promise<{ items: ParleyContact[]; next?: string }>;
  endedCalls(workspaceId: string, after: string | undefined, limit: number): Promise<{ items: CrmCall[]; next?: string }>;
  /** One call of the workspace, or undefined (deleted, another workspace's). */
  call(workspaceId: string, callId: string): Promise<CallForCrm | undefined>;
  contactByPhone(workspaceId: string, phoneNumber: string): Promise<ParleyContact | undefined>;
  /** Applies a change to a contact (update-contact's rules; a bad value throws Invalid). */
  updateContact(workspaceId: string, contact: ParleyContact, change: ContactChange): Promise<ParleyContact>;
}

const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

const customFieldsOf = (settings: CrmSettingsItem | undefined) => (settings?.custom_fields ?? []) as CustomFieldSpec[];

/** A contact as a CRM receives it: its built-in fields, plus the provider's field mappings. */
function crmContact(contact: ParleyContact, config: CrmProviderItem, fields: readonly CustomFieldSpec[]): CrmContact {
  const mapped = mappedFields(contact, config.field_mappings, fields);
  return {
    contact_id: contact.contact_id,
    phone_number: contact.phone_number,
    ...(contact.first_name ? { first_name: contact.first_name } : {}),
    ...(contact.last_name ? { last_name: contact.last_name } : {}),
    ...(contact.email ? { email: contact.email } : {}),
    ...(mapped ? { fields: mapped } : {}),
  };
}

/** Pushes a contact unless the CRM already has this form of it (its digest): `skipped` or `pushed`. */
async function pushContactOnce(ws: string, provider: string, target: AppTarget, pushed: CrmContact): Promise<'pushed' | 'skipped'> {
  const hash = digest(pushed);
  const previous = await getSyncedObject(ws, provider, pushed.contact_id);
  if (previous?.digest === hash) return 'skipped';
  const result = await pushCrmContact(target, pushed);
  await putSyncedObject(ws, provider, pushed.contact_id, { external_id: result.external_id, digest: hash, synced_timestamp: Date.now() });
  return 'pushed';
}

/**
 * One step of a sync job: one page of contacts or ended calls pushed to the CRM. Each
 * contact's pushed form is remembered (its digest), so a re-run or a redelivered step
 * skips what the CRM already has; a call is logged once (whether by a sync or by the
 * per-call push); the job's record is conditional on the cursor the step ran from, so a
 * redelivered step never counts twice.
 */
export async function runSyncStep(message: CrmSyncMessage, readers: SyncReaders): Promise<void> {
  const job = await getSyncJob(message.workspace_id, message.sync_job_id);
  if (!job || job.status === 'completed' || job.status === 'failed') return;
  const cursor = `${message.phase}:${message.after ?? ''}`;
  if (job.cursor !== cursor) return;
  const ws = job.workspace_id;
  const finish = async (next: Partial<SyncJobItem> & Pick<SyncJobItem, 'status'>) => {
    const recorded = await recordSyncStep(job, { ...job, ...next, end_timestamp: Date.now() });
    if (recorded) {
      await releaseSyncLock(ws, job.sync_job_id);
      if (next.status === 'completed') await setCrmLastSync(ws, job.provider, Date.now());
    }
  };
  const config = await getCrmProvider(ws, job.provider);
  if (!config) return finish({ status: 'failed', failure_reason: `The ${job.provider} CRM config was deleted` });
  let target: AppTarget;
  try {
    target = await crmTarget(ws, { provider: job.provider });
  } catch (error) {
    return finish({ status: 'failed', failure_reason: error instanceof Error ? error.message : String(error) });
  }
  const fields = customFieldsOf(await getCrmSettings(ws));
  const counts = { succeeded: job.succeeded, failed: job.failed, skipped: job.skipped, errors: [...job.errors] };
  let next: string | undefined;
  const wanted = message.phase === 'contacts' ? config.sync_contacts : config.sync_calls;
  if (wanted) {
    const page =
      message.phase === 'contacts' ? await readers.contacts(ws, message.after, SYNC_PAGE) : await readers.endedCalls(ws, message.after, SYNC_PAGE);
    next = page.next;
    for (const object of page.items) {
      const objectId = 'contact_id' in object ? object.contact_id : object.call_id;
      try {
        if ('contact_id' in object) {
          if ((await pushContactOnce(ws, job.provider, target, crmContact(object, config, fields))) === 'skipped') counts.skipped++;
          else counts.succeeded++;
          continue;
        }
        // A call is logged once: a record (pushed, or a per-call push holding it) means skip.
        const token = randomUUID();
        if ((await claimSyncedCall(ws, job.provider, object.call_id, token, Date.now(), CALL_PUSH_LEASE_MS)) !== 'claimed') {
          counts.skipped++;
          continue;
        }
        try {
          const result = await pushCrmCall(target, object);
          await putSyncedObject(ws, job.provider, object.call_id, { external_id: result.external_id, digest: digest(object), synced_timestamp: Date.now() });
        } catch (error) {
          await releaseSyncedClaim(ws, job.provider, object.call_id, token);
          throw error;
        }
        counts.succeeded++;
      } catch (error) {
        if (error instanceof AppAuthRejected) {
          return finish({ ...counts, status: 'failed', failure_reason: `${job.provider} refused the connection's credentials (HTTP ${error.status}); reconnect it` });
        }
        if (error instanceof AppUnsupported) return finish({ ...counts, status: 'failed', failure_reason: error.message });
        counts.failed++;
        if (counts.errors.length < MAX_JOB_ERRORS) counts.errors.push({ object_id: objectId, message: error instanceof Error ? error.message : String(error) });
      }
    }
  }
  let nextMessage: CrmSyncMessage | undefined;
  if (next) nextMessage = { ...message, after: next };
  else if (message.phase === 'contacts') nextMessage = { kind: 'crm-sync', workspace_id: ws, sync_job_id: job.sync_job_id, phase: 'calls' };
  if (!nextMessage) return finish({ ...counts, status: 'completed' });
  const recorded = await recordSyncStep(job, { ...counts, status: 'running', cursor: `${nextMessage.phase}:${nextMessage.after ?? ''}` });
  if (recorded) await queueNamed('integration-jobs').send(nextMessage);
}

/** A step that failed its last delivery stops its job (the job function calls this). */
export async function syncStepFailed(message: CrmSyncMessage, error: unknown): Promise<void> {
  const job = await getSyncJob(message.workspace_id, message.sync_job_id);
  if (!job || job.status === 'completed' || job.status === 'failed') return;
  logger.error('crm sync step failed', { sync_job_id: job.sync_job_id, error: error instanceof Error ? error.message : String(error) });
  const recorded = await recordSyncStep(job, { ...job, status: 'failed', failure_reason: 'A sync step failed repeatedly', end_timestamp: Date.now() });
  if (recorded) await releaseSyncLock(job.workspace_id, job.sync_job_id);
}

// ---------------------------------------------------------------------------------------
// The per-call push (an analysed call, queued by queueCrmCallPush)

/** How long a push of one call may hold it before another delivery may take it over. */
const CALL_PUSH_LEASE_MS = 5 * 60_000;

const callLog = (call: CallForCrm): CrmCall => {
  const { call_status: _status, party_number: _party, analysis_data: _data, ...log } = call;
  return log;
};

/**
 * The CRM side of one analysed call: its analysis data written into its contact (the
 * settings' crm_analysis_data_mappings, once per call), then for each enabled CRM config
 * with `sync_calls` on, the contact (with the config's field mappings, when `sync_contacts`
 * is on and the number has a contact) and the call log, each call logged once per CRM
 * however often its analysis is reported. A failure the vendor may get over is thrown (the
 * queue redelivers; what was pushed is not pushed again); refused credentials, an
 * unsupported provider or a missing connection are logged and leave the call to a sync.
 */
export async function runCallPush(message: CrmCallMessage, readers: SyncReaders): Promise<void> {
  const ws = message.workspace_id;
  const call = await readers.call(ws, message.call_id);
  if (!call || call.call_status !== 'ended') return;
  const [settings, providers] = await Promise.all([getCrmSettings(ws), queryCrmProviders(ws)]);
  const fields = customFieldsOf(settings);
  let contact = call.party_number ? await readers.contactByPhone(ws, call.party_number) : undefined;
  const mappings = (settings?.crm_analysis_data_mappings ?? []) as AnalysisMapping[];
  if (contact && mappings.length && call.analysis_data) {
    const change = analysisChange(contact, call.analysis_data, mappings, fields);
    if (change && (await claimCallAnalysis(ws, call.call_id, Date.now()))) {
      try {
        contact = await readers.updateContact(ws, contact, change);
      } catch (error) {
        if (error instanceof NotFound) contact = undefined;
        else if (error instanceof Invalid) logger.warn('crm: analysis data not written to the contact', { call_id: call.call_id, error: error.message });
        else {
          await releaseCallAnalysis(ws, call.call_id);
          throw error;
        }
      }
    }
  }
  for (const config of providers.filter((item) => item.enabled && item.sync_calls)) {
    await pushCallTo(ws, config, call, contact, fields);
  }
}

async function pushCallTo(ws: string, config: CrmProviderItem, call: CallForCrm, contact: ParleyContact | undefined, fields: readonly CustomFieldSpec[]): Promise<void> {
  const provider = config.provider;
  const token = randomUUID();
  if ((await claimSyncedCall(ws, provider, call.call_id, token, Date.now(), CALL_PUSH_LEASE_MS)) !== 'claimed') return;
  const giveUp = async (reason: string) => {
    await releaseSyncedClaim(ws, provider, call.call_id, token);
    logger.warn('crm: call not pushed', { call_id: call.call_id, provider, reason });
  };
  let target: AppTarget;
  try {
    target = await crmTarget(ws, { provider });
  } catch (error) {
    // No connection, one that needs a reconnect or does not open: a sync pushes the call later.
    if (error instanceof Invalid || error instanceof NotFound || error instanceof Unprocessable) return giveUp(error.message);
    await releaseSyncedClaim(ws, provider, call.call_id, token);
    throw error;
  }
  try {
    if (contact && config.sync_contacts) await pushContactOnce(ws, provider, target, crmContact(contact, config, fields));
    const log = callLog(call);
    const result = await pushCrmCall(target, log);
    await putSyncedObject(ws, provider, call.call_id, { external_id: result.external_id, digest: digest(log), synced_timestamp: Date.now() });
  } catch (error) {
    if (error instanceof AppAuthRejected || error instanceof AppUnsupported || (error instanceof AppVendorFailed && error.refused)) return giveUp(error.message);
    await releaseSyncedClaim(ws, provider, call.call_id, token);
    throw error;
  }
  await countCallPushed(ws, provider);
}
