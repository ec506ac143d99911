import { SANDBOX_CSP } from '../shared/platform/http/download.ts';
import { domainHandler, BinaryResponse } from '../shared/platform/http/handler.ts';
import { parseMultipart } from '../shared/platform/http/multipart.ts';
import { accountDataRoutes } from '../shared/account-data/routes.ts';
import * as data from '../shared/account-data/index.ts';

export const handler = domainHandler(accountDataRoutes, {
  createExport: ({ principal, body }) => data.createExport(principal.workspaceId, body),
  listExports: ({ principal, query }) => data.listExports(principal.workspaceId, query.limit),
  listExportRequests: ({ principal, query }) => data.listExportRequests(principal.workspaceId, query),
  getExport: ({ principal, params }) => data.getExport(principal.workspaceId, params.id),
  downloadExport: ({ principal, params }) => data.downloadExport(principal.workspaceId, params.id),
  createAsset: ({ principal, body }) =>
    body.upload_id ? data.createAssetFromUpload(principal.workspaceId, body.upload_id) : data.createAsset(principal.workspaceId, body.file![0]!),
  createAssetUpload: ({ principal, body }) => data.createAssetUpload(principal.workspaceId, body),
  listAssets: ({ principal }) => data.listAssets(principal.workspaceId),
  getAsset: ({ principal, params }) => data.getAsset(principal.workspaceId, params.asset_id),
  deleteAsset: ({ principal, params }) => data.deleteAsset(principal.workspaceId, params.asset_id),
  getPublicAsset: async ({ params }) => {
    const asset = await data.publicAsset(params.asset_id);
    return new BinaryResponse(asset.contentType, asset.body, {
      'x-content-type-options': 'nosniff',
      // The bytes of an ID never change (a new upload is a new ID); a deleted one stops within the hour.
      'cache-control': 'public, max-age=3600',
      // An SVG opened directly runs nothing, even if a check were missed.
      'content-security-policy': SANDBOX_CSP,
      'cross-origin-resource-policy': 'cross-origin',
    });
  },
  getEgress: () => data.workspaceEgress(),
  deletePhoneNumberData: ({ principal, body }) => data.requestPhoneNumberErase(principal.workspaceId, body.phone_number),
  runRetention: ({ principal }) => data.requestRetentionRun(principal.workspaceId),
  getPrivacyRequest: ({ principal, params }) => data.getPrivacyRequest(principal.workspaceId, params.request_id),
  getPrivacyCall: ({ principal, params }) => data.privacyCallView(principal.workspaceId, params.call_id),
  getReliability: ({ principal }) => data.getReliability(principal.workspaceId),
  putReliability: ({ principal, body }) => data.putReliability(principal, body),
  getAccountStatus: ({ principal }) => data.accountStatus(principal),
}, { multipart: parseMultipart });
