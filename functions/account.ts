import * as apiKeys from '../shared/account/api-keys.ts';
import { listAuditLog } from '../shared/account/audit-log.ts';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { withOutboundSlot } from '../shared/platform/egress/outbound-slots.ts';
import * as publicKeys from '../shared/account/public-keys.ts';
import { accountRoutes } from '../shared/account/routes.ts';
import { webhookRoutes } from '../shared/webhooks/routes.ts';
import * as webhooks from '../shared/webhooks/webhooks.ts';
import * as workspaces from '../shared/account/workspaces.ts';

export const handler = domainHandler({ ...accountRoutes, ...webhookRoutes }, {
  listApiKeys: ({ principal }) => apiKeys.listApiKeys(principal.workspaceId),
  createApiKey: ({ principal, body }) => apiKeys.createApiKey(principal, body),
  updateApiKey: ({ principal, params, body }) => apiKeys.updateApiKey(principal, params.id, body),
  deleteApiKey: ({ principal, params }) => apiKeys.deleteApiKey(principal, params.id),
  getApiKeyInfo: ({ principal }) => apiKeys.apiKeyInfo(principal),
  listPublicKeys: ({ principal }) => publicKeys.listPublicKeys(principal.workspaceId),
  createPublicKey: ({ principal, body }) => publicKeys.createPublicKey(principal, body),
  updatePublicKey: ({ principal, params, body }) => publicKeys.updatePublicKey(principal, params.id, body),
  deletePublicKey: ({ principal, params }) => publicKeys.deletePublicKey(principal, params.id),
  getWorkspace: ({ principal }) => workspaces.getWorkspace(principal.workspaceId),
  updateWorkspace: ({ principal, body }) => workspaces.updateWorkspace(principal, body),
  getWorkspaceSettings: ({ principal }) => workspaces.getWorkspaceSettings(principal.workspaceId),
  updateWorkspaceSettings: ({ principal, body }) => workspaces.updateWorkspaceSettings(principal, body),
  listAuditLog: ({ principal, query }) => listAuditLog(principal.workspaceId, query),
  listWebhookDeliveries: ({ principal, query }) => webhooks.listWebhookDeliveries(principal.workspaceId, query),
  testWorkspaceWebhook: ({ principal, body }) =>
    withOutboundSlot(principal.workspaceId, () => webhooks.sendTestWebhook(principal.workspaceId, body.url)),
});
