import { defineRoutes } from '../platform/http/route.ts';
import * as z from 'zod';
import { lazySchema, queryInt } from '../platform/http/schemas.ts';
import { ApiKey, apiKeyIdParams, ApiKeyInfo, AuditEntry, CreateApiKeyBody, CreatedApiKey, CreatedPublicKey, CreatePublicKeyBody, PublicKey, publicKeyIdParams, UpdateApiKeyBody, UpdatePublicKeyBody, UpdateWorkspaceBody, UpdateWorkspaceSettingsBody, Workspace, WorkspaceSettings } from './schemas.ts';

export const accountRoutes = defineRoutes({ domain: 'account', access: 'admin' }, {
  listApiKeys: {
    method: 'GET', path: '/api-keys', status: 200, role: 'developer',
    summary: 'List the workspace API keys, masked',
    response: lazySchema(() => z.array(ApiKey)),
  },
  createApiKey: {
    method: 'POST', path: '/api-keys', status: 201,
    summary: 'Create an API key; the secret is returned once',
    body: CreateApiKeyBody, response: CreatedApiKey,
  },
  updateApiKey: {
    method: 'PATCH', path: '/api-keys/{id}', status: 200,
    summary: 'Rename a key, move the webhook flag to it, or change its access',
    params: apiKeyIdParams, body: UpdateApiKeyBody, response: ApiKey,
  },
  deleteApiKey: {
    method: 'DELETE', path: '/api-keys/{id}', status: 204,
    summary: 'Delete an API key; requests using it fail at once (a developer: only the keys they created)',
    params: apiKeyIdParams,
  },
  getApiKeyInfo: {
    method: 'GET', path: '/get-api-key-info', access: 'any-key', status: 200,
    summary: 'Describe the API key making the request',
    response: ApiKeyInfo,
  },
  listPublicKeys: {
    method: 'GET', path: '/public-keys', status: 200, role: 'developer',
    summary: 'List public (browser) keys, masked',
    response: lazySchema(() => z.array(PublicKey)),
  },
  createPublicKey: {
    method: 'POST', path: '/public-keys', status: 201,
    summary: 'Create a public key for web calls and chats from allowed origins',
    body: CreatePublicKeyBody, response: CreatedPublicKey,
  },
  updatePublicKey: {
    method: 'PATCH', path: '/public-keys/{id}', status: 200,
    summary: 'Rename a public key or change its allowed origins',
    params: publicKeyIdParams, body: UpdatePublicKeyBody, response: PublicKey,
  },
  deletePublicKey: {
    method: 'DELETE', path: '/public-keys/{id}', status: 204,
    summary: 'Delete a public key',
    params: publicKeyIdParams,
  },
  getWorkspace: {
    method: 'GET', path: '/workspace', status: 200,
    summary: 'Get the workspace', response: Workspace,
  },
  updateWorkspace: {
    method: 'PATCH', path: '/workspace', status: 200,
    summary: 'Update the workspace name, webhook URL or concurrency limit',
    body: UpdateWorkspaceBody, response: Workspace,
  },
  getWorkspaceSettings: {
    method: 'GET', path: '/workspace/settings', status: 200,
    summary: 'Get workspace settings', response: WorkspaceSettings,
  },
  updateWorkspaceSettings: {
    method: 'PATCH', path: '/workspace/settings', status: 200,
    summary: 'Update workspace settings',
    body: UpdateWorkspaceSettingsBody, response: WorkspaceSettings,
  },
  listAuditLog: {
    method: 'GET', path: '/audit-log', status: 200, role: 'developer',
    summary: 'Audit log, newest first',
    query: lazySchema(() =>
      z.object({
        limit: queryInt({ min: 1, max: 1000, default: 100 }),
        pagination_key: z.string().max(100).optional(),
      }),
    ),
    response: lazySchema(() => z.array(AuditEntry)),
  },
});
