import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  App,
  AppPage,
  AppUsagePage,
  appIdParams,
  CallbackQuery,
  CreateAppBody,
  CrmConfig,
  CrmProviderConfig,
  crmProviderParams,
  CrmSchema,
  CrmSchemaQuery,
  DeleteAppQuery,
  ExecuteBody,
  ListAppsQuery,
  ListAppUsagesQuery,
  ListSyncJobsQuery,
  MockAuthorizeQuery,
  ProvidersResponse,
  RefreshBody,
  RefreshResponse,
  RunSyncBody,
  StartBody,
  StartResponse,
  SyncJob,
  syncJobParams,
  SyncJobStatus,
  TestAuthResponse,
  ToolSchemaQuery,
  UpdateAppBody,
  UpdateCrmProviderBody,
  UpdateCrmSettingsBody,
} from './schemas.ts';

/**
 * Integrations (spec: OAuth, the Integrations group, Authentication 12): no scope of the
 * spec's table covers them, so they need `admin` (a key with admin or full access: the
 * spec's admin or developer). The callback and the mock provider's pages are public: a
 * browser reaches them from the vendor (the callback checks the browser's binding cookie).
 */
export const integrationRoutes = defineRoutes({ domain: 'integrations', access: 'admin' }, {
  oauthProviders: {
    method: 'GET', path: '/oauth/providers', status: 200,
    summary: 'The redirect URI to register with each vendor, and each OAuth provider as configured (mock or real, PKCE; unavailable in production without its client)',
    response: ProvidersResponse,
  },
  oauthStart: {
    method: 'POST', path: '/oauth/start', status: 200,
    summary: 'Start an OAuth connection: the vendor authorize URL with a sealed single-use state (10 minutes) and PKCE where used, bound to this browser by a cookie; 503 in production without the provider\'s client',
    body: StartBody, response: StartResponse,
  },
  oauthCallback: {
    method: 'GET', path: '/oauth/callback', status: 200, access: 'public',
    summary: 'The vendor redirect target: refuses a state this browser did not start, consumes it, exchanges the code, stores the tokens sealed, redirects (302) to the dashboard',
    query: CallbackQuery,
  },
  oauthRefresh: {
    method: 'POST', path: '/oauth/refresh', status: 200,
    summary: 'Force a token refresh of a connection (400 for pasted credentials)',
    body: RefreshBody, response: RefreshResponse, throttle: 'outbound',
  },
  oauthMockAuthorize: {
    method: 'GET', path: '/oauth/mock/authorize', status: 200, access: 'public',
    summary: 'The built-in mock OAuth provider\'s consent page (no real account is used); not served in production',
    query: MockAuthorizeQuery, produces: 'text/html; charset=utf-8',
  },
  oauthMockToken: {
    method: 'POST', path: '/oauth/mock/token', status: 200, access: 'public',
    summary: 'The built-in mock OAuth provider\'s token endpoint (form body, RFC 6749 answers); not served in production',
  },
  listAppTypes: {
    method: 'GET', path: '/list-app-types', status: 200,
    summary: 'App types and their providers, how each connects, and their tools',
  },
  createApp: {
    method: 'POST', path: '/create-app', status: 201,
    summary: 'Create an app (pasted credentials sealed; OAuth providers connect through /oauth/start)',
    body: CreateAppBody, response: App,
  },
  listApps: {
    method: 'GET', path: '/list-apps', status: 200,
    summary: 'List apps (retell-sdk\'s page)',
    query: ListAppsQuery, response: AppPage,
  },
  getApp: {
    method: 'GET', path: '/get-app/{app_id}', status: 200,
    summary: 'Get an app (credentials are never returned)',
    params: appIdParams, response: App,
  },
  updateApp: {
    method: 'PATCH', path: '/update-app/{app_id}', status: 200,
    summary: 'Update an app (new credentials or tenant: not_connected until tested)',
    params: appIdParams, body: UpdateAppBody, response: App,
  },
  deleteApp: {
    method: 'DELETE', path: '/delete-app/{app_id}', status: 204,
    summary: 'Delete an app and its connection (409 naming its users unless force_delete=true)',
    params: appIdParams, query: DeleteAppQuery,
  },
  listAppUsages: {
    method: 'GET', path: '/list-app-usages/{app_id}', status: 200,
    summary: 'The agents (and the Retell LLMs and flows no agent runs) whose tools use an app, most recently configured first',
    params: appIdParams, query: ListAppUsagesQuery, response: AppUsagePage,
  },
  testAppAuth: {
    method: 'POST', path: '/test-app-auth/{app_id}', status: 200,
    summary: 'Test an app\'s credentials with one minimal vendor call',
    params: appIdParams, response: TestAuthResponse, throttle: 'outbound',
  },
  getAppToolSchema: {
    method: 'GET', path: '/get-app-tool-schema', status: 200,
    summary: 'The JSON-schema tools an agent can call through apps (by provider, type or app)',
    query: ToolSchemaQuery,
  },
  executeApp: {
    method: 'POST', path: '/apps/{app_id}/execute', status: 200,
    summary: 'Run one tool of an app through the vendor\'s API',
    params: appIdParams, body: ExecuteBody, throttle: 'outbound',
  },
  getCrmConfig: {
    method: 'GET', path: '/get-crm-config', status: 200,
    summary: 'The workspace\'s CRM configuration (retell-sdk\'s CRMConfig) with each provider\'s config',
    response: CrmConfig,
  },
  updateCrmProviderConfig: {
    method: 'PUT', path: '/update-crm-config/{provider}', status: 200,
    summary: 'Set a CRM provider\'s config: enabled, sync_calls, sync_contacts, field mappings',
    params: crmProviderParams, body: UpdateCrmProviderBody, response: CrmProviderConfig,
  },
  updateCrmConfig: {
    method: 'POST', path: '/update-crm-config', status: 200,
    summary: 'retell-sdk\'s update-crm-config: linked app, custom fields, analysis mappings (a sent field replaces its value)',
    body: UpdateCrmSettingsBody, response: CrmConfig,
  },
  deleteCrmConfig: {
    method: 'DELETE', path: '/delete-crm-config/{provider}', status: 204,
    summary: 'Delete a CRM provider\'s config and its connection',
    params: crmProviderParams,
  },
  getCrmSchemaForProvider: {
    method: 'GET', path: '/get-crm-schema/{provider}', status: 200,
    summary: 'The CRM\'s contact object fields (what field mappings may name)',
    params: crmProviderParams, response: CrmSchema, throttle: 'outbound',
  },
  getCrmSchema: {
    method: 'GET', path: '/get-crm-schema', status: 200,
    summary: 'The CRM\'s contact fields, by ?provider= or ?app_id= (default: the linked app)',
    query: CrmSchemaQuery, response: CrmSchema, throttle: 'outbound',
  },
  testCrmAuth: {
    method: 'POST', path: '/test-crm-auth/{provider}', status: 200,
    summary: 'Test a CRM connection with one minimal vendor call',
    params: crmProviderParams, response: TestAuthResponse, throttle: 'outbound',
  },
  runCrmSyncJob: {
    method: 'POST', path: '/run-crm-sync-job', status: 202,
    summary: 'Start a CRM sync job (contacts and ended calls pushed through the queue; one at a time)',
    body: RunSyncBody, response: SyncJob,
  },
  runSyncJob: {
    method: 'POST', path: '/run-sync-job', status: 202,
    summary: 'retell-sdk\'s runSyncJob: start a sync of the linked or only enabled CRM',
    response: SyncJobStatus,
  },
  getCrmSyncJob: {
    method: 'GET', path: '/get-crm-sync-job/{id}', status: 200,
    summary: 'A CRM sync job with its progress and errors',
    params: syncJobParams, response: SyncJob,
  },
  getSyncJobStatus: {
    method: 'GET', path: '/get-sync-job-status', status: 200,
    summary: 'retell-sdk\'s getSyncJobStatus: the sync in flight, or idle',
    response: SyncJobStatus,
  },
  listCrmSyncJobs: {
    method: 'GET', path: '/list-crm-sync-jobs', status: 200,
    summary: 'CRM sync jobs, newest first',
    query: ListSyncJobsQuery, response: lazySchema(() => z.array(SyncJob)),
  },
});
