import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  AccountStatus,
  Asset,
  ASSET_MAX_BODY_BYTES,
  ASSET_UPLOAD_LIMITS,
  assetParams,
  AssetUpload,
  CreateAssetBody,
  CreateAssetUploadBody,
  CreatedExport,
  CreateExportBody,
  DeletePhoneNumberBody,
  DownloadLink,
  Egress,
  ExportRequest,
  ExportRequestPage,
  exportParams,
  ListExportRequestsQuery,
  ListExportsQuery,
  privacyCallParams,
  PrivacyCallView,
  PrivacyRequest,
  privacyRequestParams,
  PutReliabilityBody,
  ReliabilitySettings,
} from './schemas.ts';

/**
 * Account data (spec: the Account group's exports, assets, egress, privacy, reliability and
 * account status; Public endpoints' assets). Scope `admin` (the spec: endpoints that match
 * no other scope), assets `agents` (widgets and share pages), account status any key.
 */
export const accountDataRoutes = defineRoutes({ domain: 'account-data', access: 'admin' }, {
  createExport: {
    method: 'POST', path: '/exports', status: 202,
    summary: 'Export calls, chats, contacts or SMS as CSV or JSONL in the background',
    body: CreateExportBody, response: CreatedExport,
  },
  listExports: {
    method: 'GET', path: '/exports', status: 200,
    summary: 'List exports, newest first',
    query: ListExportsQuery, response: lazySchema(() => z.array(ExportRequest)),
  },
  listExportRequests: {
    method: 'GET', path: '/v2/list-export-requests', status: 200,
    summary: 'List exports as retell-sdk\'s exportRequest.list page',
    query: ListExportRequestsQuery, response: ExportRequestPage,
  },
  getExport: {
    method: 'GET', path: '/exports/{id}', status: 200,
    summary: 'An export\'s status, row count and size',
    params: exportParams, response: ExportRequest,
  },
  downloadExport: {
    method: 'GET', path: '/exports/{id}/download', status: 200,
    summary: 'A short-lived URL of a complete export\'s file (409 before it is complete)',
    params: exportParams, response: DownloadLink,
  },
  createAsset: {
    method: 'POST', path: '/create-asset', status: 201, access: 'agents',
    summary: 'Upload an image or audio asset (multipart `file`, up to 10 MB, audio up to 210 s; the type is read from the bytes), or ingest a presigned upload (JSON `{upload_id}`)',
    bodyType: 'json-or-multipart', uploadLimits: ASSET_UPLOAD_LIMITS, maxBodyBytes: ASSET_MAX_BODY_BYTES,
    body: CreateAssetBody, response: Asset,
  },
  createAssetUpload: {
    method: 'POST', path: '/create-asset-upload', status: 201, access: 'agents',
    summary: 'A presigned URL to PUT one asset file (up to 10 MB) to, past the ~6 MB request limit; then POST /create-asset {upload_id}',
    body: CreateAssetUploadBody, response: AssetUpload,
  },
  listAssets: {
    method: 'GET', path: '/list-assets', status: 200, access: 'agents',
    summary: 'List assets, newest first',
    response: lazySchema(() => z.array(Asset)),
  },
  getAsset: {
    method: 'GET', path: '/get-asset/{asset_id}', status: 200, access: 'agents',
    summary: 'One asset',
    params: assetParams, response: Asset,
  },
  deleteAsset: {
    method: 'DELETE', path: '/delete-asset/{asset_id}', status: 204, access: 'agents',
    summary: 'Delete an asset and its file (its public URL stops at once)',
    params: assetParams,
  },
  getPublicAsset: {
    method: 'GET', path: '/public/assets/{asset_id}', status: 200, access: 'public',
    summary: 'An asset\'s bytes, without a key (the right type, nosniff, cached)',
    params: assetParams,
  },
  getEgress: {
    method: 'GET', path: '/workspace/egress', status: 200,
    summary: 'The fixed addresses outbound requests (webhooks, custom functions, workflows, MCP) leave from, to allowlist',
    response: Egress,
  },
  deletePhoneNumberData: {
    method: 'POST', path: '/privacy/delete-phone-number', status: 202,
    summary: 'Erase one phone number\'s calls, recordings, contact and exports in the background',
    body: DeletePhoneNumberBody, response: PrivacyRequest,
  },
  runRetention: {
    method: 'POST', path: '/privacy/run-retention', status: 202,
    summary: 'Apply every agent\'s data_storage_retention_days now, in the background',
    response: PrivacyRequest,
  },
  getPrivacyRequest: {
    method: 'GET', path: '/privacy/requests/{request_id}', status: 200,
    summary: 'A privacy request\'s status and report (ours: the spec shows no read of it)',
    params: privacyRequestParams, response: PrivacyRequest,
  },
  getPrivacyCall: {
    method: 'GET', path: '/privacy/call/{call_id}', status: 200,
    summary: 'What is stored for a call: fields, recording, scrubbed copy, retention date',
    params: privacyCallParams, response: PrivacyCallView,
  },
  getReliability: {
    method: 'GET', path: '/workspace/reliability', status: 200,
    summary: 'The workspace LLM token limit and fallbacks',
    response: ReliabilitySettings,
  },
  putReliability: {
    method: 'PUT', path: '/workspace/reliability', status: 200, role: 'admin',
    summary: 'Set the workspace LLM token limit (1,024 to 131,072) and fallbacks (admin)',
    body: PutReliabilityBody, response: ReliabilitySettings,
  },
  getAccountStatus: {
    method: 'GET', path: '/account-status', status: 200, access: 'any-key',
    summary: 'Whether the workspace can work, and why not',
    response: AccountStatus,
  },
});
