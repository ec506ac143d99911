import { domainHandler, MediaResponse } from '../shared/platform/http/handler.ts';
import { integrationRoutes } from '../shared/integrations/routes.ts';
import * as integrations from '../shared/integrations/index.ts';
// What uses an app is the agents domain's to say (its engines' tools); integrations takes it as a function.
// The module itself, not agents/tools/index.ts, which also reaches the transfer checks and account data's assets.
import { appUsages } from '../shared/agents/tools/app-usages.ts';

export const handler = domainHandler(integrationRoutes, {
  oauthProviders: () => integrations.listProviders(),
  oauthStart: async ({ principal, body }) => (await integrations.startAuthorization(principal, body)) as never,
  oauthCallback: async ({ query, request }) => (await integrations.handleCallback(query, request.cookie)) as never,
  oauthRefresh: ({ principal, body }) => integrations.forceRefresh(principal.workspaceId, body),
  oauthMockAuthorize: ({ query }) => integrations.mockAuthorizePage(query),
  oauthMockToken: async ({ request }) => {
    const answer = await integrations.mockTokenHttp(request.rawBody);
    return new MediaResponse('application/json', answer.body, { 'cache-control': 'no-store' }, answer.status);
  },
  listAppTypes: () => integrations.appTypes(),
  createApp: ({ principal, body }) => integrations.createApp(principal.workspaceId, body),
  listApps: ({ principal, query }) => integrations.listApps(principal.workspaceId, query),
  getApp: ({ principal, params }) => integrations.getApp(principal.workspaceId, params.app_id),
  updateApp: ({ principal, params, body }) => integrations.updateApp(principal.workspaceId, params.app_id, body),
  deleteApp: ({ principal, params, query }) => integrations.deleteApp(principal.workspaceId, params.app_id, query.force_delete === 'true', appUsages),
  listAppUsages: ({ principal, params, query }) => integrations.listAppUsages(principal.workspaceId, params.app_id, query, appUsages),
  testAppAuth: ({ principal, params }) => integrations.testAuth(principal.workspaceId, params.app_id),
  getAppToolSchema: ({ principal, query }) =>
    query.app_id ? integrations.toolSchemaForApp(principal.workspaceId, query.app_id) : integrations.getToolSchema(query),
  executeApp: ({ principal, params, body }) => integrations.executeTool(principal.workspaceId, params.app_id, body.tool, body.arguments),
  getCrmConfig: ({ principal }) => integrations.getCrmConfig(principal.workspaceId),
  updateCrmProviderConfig: ({ principal, params, body }) => integrations.updateCrmProvider(principal.workspaceId, params.provider, body),
  updateCrmConfig: ({ principal, body }) => integrations.updateCrmSettings(principal.workspaceId, body),
  deleteCrmConfig: ({ principal, params }) => integrations.deleteCrmProvider(principal.workspaceId, params.provider),
  getCrmSchemaForProvider: ({ principal, params }) => integrations.crmSchema(principal.workspaceId, { provider: params.provider }),
  getCrmSchema: ({ principal, query }) => integrations.crmSchema(principal.workspaceId, query),
  testCrmAuth: ({ principal, params }) => integrations.testCrmAuth(principal.workspaceId, params.provider),
  runCrmSyncJob: ({ principal, body }) => integrations.startSync(principal.workspaceId, body),
  runSyncJob: ({ principal }) => integrations.startSyncForSdk(principal.workspaceId),
  getCrmSyncJob: ({ principal, params }) => integrations.getSyncJobView(principal.workspaceId, params.id),
  getSyncJobStatus: ({ principal }) => integrations.getSyncStatus(principal.workspaceId),
  listCrmSyncJobs: ({ principal, query }) => integrations.listSyncJobs(principal.workspaceId, query.limit),
});
