import * as z from 'zod';
import { lazySchema, queryInt, refuseDestination } from '../platform/http/schemas.ts';
import { OAUTH_PROVIDERS } from '../vendors/oauth/providers.ts';
import { APP_TYPES, CRM_PROVIDERS } from './catalogue.ts';

/*
 * The integrations API contract (spec: OAuth, the Integrations group; shapes it does not
 * show follow retell-sdk's `app` and `crm` types). Secrets are accepted, never answered.
 */

const MAX_NAME = 200;
const appId = () => z.string().regex(/^app_[0-9a-f]{24}$/, 'Must be an app ID (app_ + 24 hex)');

// ---------------------------------------------------------------------------------------
// OAuth

const ProviderOptionsBody = lazySchema(() =>
  z.object({
    instance_url: z.string().max(500).optional(),
    tenant: z.string().max(128).optional(),
    login_url: z.string().max(500).optional(),
    accounts_url: z.string().max(500).optional(),
  }),
);

/** A dashboard path: one leading slash, never `//host` or a scheme (no open redirect). */
const returnTo = () =>
  z
    .string()
    .max(500)
    .regex(/^\/(?![/\\])[^\s]*$/, 'Must be a path on the dashboard starting with a single /');

export const StartBody = lazySchema(() =>
  z.object({
    target: z.enum(['crm', 'app', 'kb_sync']),
    provider: z.enum(OAUTH_PROVIDERS),
    app_id: appId().optional(),
    name: z.string().max(MAX_NAME).optional(),
    knowledge_base_id: z.string().max(100).optional(),
    sync_config: z.record(z.string(), z.string().max(500)).optional(),
    sync_id: z.string().regex(/^sync_[0-9a-f]{24}$/).optional(),
    options: ProviderOptionsBody.optional(),
    return_to: returnTo().optional(),
  }),
);
export type StartInput = z.infer<typeof StartBody>;

export const StartResponse = lazySchema(() => z.object({ authorize_url: z.string(), mock: z.boolean(), provider: z.string(), pkce: z.boolean() }));

export const ProvidersResponse = lazySchema(() =>
  z.object({
    redirect_uri: z.string(),
    providers: z.array(
      z.object({
        provider: z.string(),
        targets: z.array(z.string()),
        pkce: z.boolean(),
        mock: z.boolean(),
        /** False in production without the provider's client (its start answers 503). */
        available: z.boolean(),
        scopes: z.array(z.string()),
      }),
    ),
    pasted_providers: z.array(z.string()),
  }),
);

export const CallbackQuery = lazySchema(() =>
  z.object({
    state: z.string().max(4000).optional(),
    code: z.string().max(4000).optional(),
    error: z.string().max(200).optional(),
    error_description: z.string().max(1000).optional(),
    iss: z.string().max(500).optional(),
  }),
);

export const RefreshBody = lazySchema(() =>
  z.discriminatedUnion('target', [
    z.object({ target: z.literal('crm'), provider: z.enum(CRM_PROVIDERS as [string, ...string[]]) }),
    z.object({ target: z.literal('app'), app_id: appId() }),
    z.object({ target: z.literal('kb_sync'), sync_id: z.string().regex(/^sync_[0-9a-f]{24}$/) }),
  ]),
);
export const RefreshResponse = lazySchema(() => z.object({ refreshed: z.boolean(), expires_at: z.number().int().nullable() }));

export const MockAuthorizeQuery = lazySchema(() => z.record(z.string(), z.string().max(4000)));

// ---------------------------------------------------------------------------------------
// Apps

const FieldMapping = lazySchema(() => z.object({ field_name: z.string().min(1).max(100), external_field_name: z.string().min(1).max(200) }));

const AppCrmConfig = lazySchema(() =>
  z.object({
    inbound_sync_mappings: z.array(FieldMapping).max(100).optional(),
    outbound_sync_mappings: z.array(FieldMapping).max(100).optional(),
    sync_conversation_activity: z.boolean().optional(),
    sync_new_contacts: z.boolean().optional(),
  }),
);

const AuthConfigBody = lazySchema(() =>
  z.discriminatedUnion('type', [
    z.object({ type: z.literal('api_key'), api_key: z.string().min(1).max(2000) }),
    z.object({ type: z.literal('basic'), username: z.string().min(1).max(300), password: z.string().min(1).max(2000) }),
    // retell-sdk's OAuthConfigRequest (a caller's own OAuth client), plus ours: the client's
    // authorize and token URLs and scopes (default: the provider table's).
    z.object({
      type: z.literal('oauth2'),
      client_id: z.string().min(1).max(300),
      client_secret: z.string().min(1).max(2000),
      authorize_url: z.string().min(1).max(500).optional(),
      token_url: z.string().min(1).max(500).optional(),
      scopes: z.array(z.string().min(1).max(200).regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'Must be an OAuth scope token (no spaces or quotes)')).max(50).optional(),
    }),
  ]),
);
export type AuthConfigInput = z.infer<typeof AuthConfigBody>;

/** The tenant's own API host (a help desk's `https://<company>.zendesk.com`): the app's requests go there. */
const tenantUrl = () => z.string().max(500).url('Must be a URL').superRefine(refuseDestination());

export const CreateAppBody = lazySchema(() =>
  z.object({
    provider: z.string().min(1).max(50),
    type: z.enum(APP_TYPES),
    auth_config: AuthConfigBody.optional(),
    crm_config: AppCrmConfig.optional(),
    name: z.string().max(MAX_NAME).optional(),
    tenant_id: z.string().max(200).optional(),
    tenant_url: tenantUrl().optional(),
  }),
);
export type CreateAppInput = z.infer<typeof CreateAppBody>;

export const UpdateAppBody = lazySchema(() =>
  z.object({
    auth_config: AuthConfigBody.optional(),
    crm_config: AppCrmConfig.optional(),
    name: z.string().max(MAX_NAME).optional(),
    tenant_id: z.string().max(200).optional(),
    tenant_url: tenantUrl().optional(),
  }),
);
export type UpdateAppInput = z.infer<typeof UpdateAppBody>;

export const App = lazySchema(() =>
z.object({
  app_id: z.string(),
  org_id: z.string(),
  provider: z.string(),
  type: z.enum(APP_TYPES),
  name: z.string().optional(),
  connection_status: z.enum(['not_connected', 'connected', 'error']),
  /** Ours: the OAuth connection's state (`needs_reconnect` once the provider revoked it). */
  status: z.enum(['not_connected', 'connected', 'needs_reconnect', 'error']),
  mock: z.boolean(),
  auth_config: z
    .object({
      type: z.string(),
      username: z.string().optional(),
      client_id: z.string().optional(),
      authorize_url: z.string().optional(),
      token_url: z.string().optional(),
      scopes: z.array(z.string()).optional(),
    })
    .optional(),
  crm_config: AppCrmConfig.optional(),
  tenant_id: z.string().optional(),
  tenant_url: z.string().optional(),
  token_expires_at: z.number().int().optional(),
  created_timestamp: z.number().int(),
  user_modified_timestamp: z.number().int(),
}),
);
export type AppView = z.infer<typeof App>;

export const AppPage = lazySchema(() => z.object({ items: z.array(App), has_more: z.boolean(), pagination_key: z.string().optional() }));

export const ListAppsQuery = lazySchema(() =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 100 }),
    pagination_key: z.string().max(100).optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  }),
);

export const appIdParams = lazySchema(() => z.object({ app_id: appId() }));
export const DeleteAppQuery = lazySchema(() => z.object({ force_delete: z.enum(['true', 'false']).optional() }));

/** One user of an app (retell-sdk's AgentAppUsage, KnowledgeBaseAppUsage; ours: an LLM or flow no agent runs). */
const AppUsage = lazySchema(() =>
  z.object({
    type: z.enum(['agent', 'llm', 'conversation_flow', 'knowledge_base']),
    agent_id: z.string().optional(),
    agent_name: z.string().optional().describe('The agent\'s current name'),
    agent_versions: z.array(z.number().int()).optional().describe('The agent versions whose engine version has a tool using the app, largest first'),
    llm_id: z.string().optional(),
    conversation_flow_id: z.string().optional(),
    knowledge_base_id: z.string().optional(),
    knowledge_base_name: z.string().optional(),
    configured_timestamp: z.number().int().describe('When the latest of those versions was last modified (ms)'),
  }),
);
export type AppUsageView = z.infer<typeof AppUsage>;

export const AppUsagePage = lazySchema(() =>
  z.object({
    items: z.array(AppUsage),
    has_more: z.boolean(),
    pagination_key: z.string().optional(),
  }),
);

export const ListAppUsagesQuery = lazySchema(() =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 100 }),
    pagination_key: z.string().max(100).optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  }),
);
export type ListAppUsagesInput = z.infer<typeof ListAppUsagesQuery>;

export const ToolSchemaQuery = lazySchema(() => z.object({ provider: z.string().max(50).optional(), type: z.enum(APP_TYPES).optional(), app_id: appId().optional() }));

export const ExecuteBody = lazySchema(() => z.object({ tool: z.string().min(1).max(100), arguments: z.record(z.string(), z.unknown()).default({}) }));

export const TestAuthResponse = lazySchema(() => z.object({ success: z.boolean(), message: z.string().optional() }));

// ---------------------------------------------------------------------------------------
// CRM

export const crmProviderParams = lazySchema(() => z.object({ provider: z.enum(CRM_PROVIDERS as [string, ...string[]]) }));

export const UpdateCrmProviderBody = lazySchema(() =>
  z.object({
    enabled: z.boolean().optional(),
    sync_calls: z.boolean().optional(),
    sync_contacts: z.boolean().optional(),
    field_mappings: z.array(FieldMapping).max(100).optional(),
    /** Ours: a scheduled (`cron`) sync every this many minutes (15 to 10,080, a week); null: none. */
    sync_interval_minutes: z.number().int().min(15).max(10_080).nullable().optional(),
  }),
);

const CustomField = lazySchema(() =>
  z.object({
    name: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'Must be snake_case'),
    type: z.enum(['string', 'number', 'boolean', 'date', 'datetime', 'enum']),
    description: z.string().max(500).optional(),
    label: z.string().max(200).optional(),
    options: z.array(z.string().max(200)).max(100).optional(),
  }),
);
const AnalysisMapping = lazySchema(() =>
  z.object({
    analysis_data_name: z.string().min(1).max(100),
    field_name: z.string().min(1).max(100),
    update_mode: z.enum(['overwrite', 'fill_if_empty', 'merge']),
  }),
);

export const UpdateCrmSettingsBody = lazySchema(() =>
  z.object({
    app_id: appId().nullable().optional(),
    contact_columns_order: z.array(z.string().max(100)).max(200).optional(),
    crm_analysis_data_mappings: z.array(AnalysisMapping).max(100).optional(),
    custom_fields: z.array(CustomField).max(100).optional(),
    contact_tags: z.array(z.string().max(64)).max(100).optional(),
  }),
);
export type CrmSettingsInput = z.infer<typeof UpdateCrmSettingsBody>;

export const CrmProviderConfig = lazySchema(() =>
  z.object({
    provider: z.string(),
    enabled: z.boolean(),
    sync_calls: z.boolean(),
    sync_contacts: z.boolean(),
    field_mappings: z.array(FieldMapping),
    connection_status: z.enum(['not_connected', 'connected', 'needs_reconnect', 'error']),
    mock: z.boolean(),
    token_expires_at: z.number().int().optional(),
    last_sync_timestamp: z.number().int().optional(),
    /** Ours: calls logged in this CRM as their analysis landed (the per-call push). */
    calls_pushed: z.number().int(),
    /** Ours: the scheduled sync's period in minutes (null: none) and when it next runs. */
    sync_interval_minutes: z.number().int().nullable(),
    next_sync_at: z.number().int().optional(),
    created_timestamp: z.number().int(),
    updated_timestamp: z.number().int(),
  }),
);

export const CrmConfig = lazySchema(() =>
  z.object({
    org_id: z.string(),
    app_id: z.string().optional(),
    contact_columns_order: z.array(z.string()).optional(),
    contact_tags: z.array(z.string()).optional(),
    crm_analysis_data_mappings: z.array(AnalysisMapping).optional(),
    custom_fields: z.array(CustomField).optional(),
    last_sync_timestamp: z.number().int().optional(),
    providers: z.array(CrmProviderConfig),
  }),
);

export const CrmSchemaQuery = lazySchema(() => z.object({ provider: z.enum(CRM_PROVIDERS as [string, ...string[]]).optional(), app_id: appId().optional() }));
export const CrmSchema = lazySchema(() =>
  z.object({
    provider: z.string(),
    fields: z.array(
      z.object({
        name: z.string(),
        type: z.enum(['string', 'number', 'boolean', 'date', 'datetime', 'enum']),
        label: z.string().optional(),
        description: z.string().optional(),
        options: z.array(z.string()).optional(),
      }),
    ),
  }),
);

export const RunSyncBody = lazySchema(() => z.object({ provider: z.enum(CRM_PROVIDERS as [string, ...string[]]).optional() }));

export const SyncJob = lazySchema(() =>
  z.object({
    sync_job_id: z.string(),
    provider: z.string(),
    status: z.enum(['queued', 'running', 'completed', 'failed']),
    triggered_by: z.enum(['manual', 'cron', 'call_ended']),
    succeeded: z.number().int(),
    failed: z.number().int(),
    skipped: z.number().int(),
    errors: z.array(z.object({ object_id: z.string(), message: z.string() })),
    start_timestamp: z.number().int(),
    end_timestamp: z.number().int().optional(),
    failure_reason: z.string().optional(),
  }),
);
export type SyncJobView = z.infer<typeof SyncJob>;

/** retell-sdk's `getSyncJobStatus`/`runSyncJob` shape (status `idle` when nothing runs), with our job beside it. */
export const SyncJobStatus = lazySchema(() =>
  z.object({
    status: z.enum(['queued', 'running', 'idle']),
    succeeded: z.number().int().optional(),
    failed: z.number().int().optional(),
    start_timestamp: z.number().int().optional(),
    triggered_by: z.enum(['manual', 'cron']).optional(),
    sync_job_id: z.string().optional(),
    provider: z.string().optional(),
  }),
);

export const syncJobParams = lazySchema(() => z.object({ id: z.string().regex(/^crm_sync_[0-9a-f]{24}$/, 'Must be a CRM sync job ID') }));
export const ListSyncJobsQuery = lazySchema(() => z.object({ limit: queryInt({ min: 1, max: 100, default: 20 }) }));

/** A step of a CRM sync job on the integration-jobs queue. */
export const CrmSyncMessage = lazySchema(() =>
  z.object({
    kind: z.literal('crm-sync'),
    workspace_id: z.string(),
    sync_job_id: z.string(),
    phase: z.enum(['contacts', 'calls']),
    after: z.string().optional(),
  }),
);
export type CrmSyncMessage = z.infer<typeof CrmSyncMessage>;

/**
 * An analysed call to carry to the CRM side (queued by the call-steps function when a
 * call's analysis lands): the analysis data mapped into its contact, the contact and the
 * call log pushed to each CRM whose config asks for it. Idempotent by call ID.
 */
export const CrmCallMessage = lazySchema(() => z.object({ kind: z.literal('crm-call'), workspace_id: z.string(), call_id: z.string() }));
export type CrmCallMessage = z.infer<typeof CrmCallMessage>;

/** A provider config's scheduled sync is due (queued by the minute job): start a `cron` sync job. */
export const CrmScheduledSyncMessage = lazySchema(() => z.object({ kind: z.literal('crm-sync-due'), workspace_id: z.string(), provider: z.string() }));
export type CrmScheduledSyncMessage = z.infer<typeof CrmScheduledSyncMessage>;

export const IntegrationJobMessage = lazySchema(() => z.discriminatedUnion('kind', [CrmSyncMessage, CrmCallMessage, CrmScheduledSyncMessage]));
export type IntegrationJobMessage = z.infer<typeof IntegrationJobMessage>;
