/**
 * The integrations domain's entry (docs/integrations.md): the API operations
 * (functions/integrations.ts), the CRM sync job's step (functions/integration-jobs.ts), the
 * minute refresh (functions/oauth-refresh.ts), and what other domains may use: a fresh
 * access token for a connection (the knowledge bases' kb_sync sources), running an app's tool
 * (the conversation runtime's `app` tools: executeTool), and the CRM push of an analysed call (queueCrmCallPush:
 * only a queue message, registered by the call-steps function as a call lifecycle listener).
 */
export { appTypes, createApp, deleteApp, executeTool, getApp, getToolSchema, listApps, listAppUsages, testAuth, toolSchemaForApp, updateApp } from './apps.ts';
;
export { appToolDefinition,    } from './app-refs/index.ts';
export { describeConnection, freshAccessToken,   releaseKbSyncConnection,   } from './connections.ts';
export {
  crmSchema,
  deleteCrmProvider,
  getCrmConfig,
  getSyncJobView,
  getSyncStatus,
  listSyncJobs,
  runCallPush,
  runScheduledSync,
  runSyncStep,
  startSync,
  startSyncForSdk,
  syncStepFailed,
  testCrmAuth,
  updateCrmProvider,
  updateCrmSettings,
  type CallForCrm,
  type SyncReaders,
} from './crm.ts';
;
export type {  ParleyContact } from './field-mappings.ts';
export { forceRefresh, handleCallback, listProviders, mockAuthorizePage, mockTokenHttp, startAuthorization } from './oauth.ts';
export { IntegrationJobMessage } from './schemas.ts';
