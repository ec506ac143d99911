/**
 * The account-data domain's entry: the API operations (functions/account-data.ts), the
 * export-jobs consumer's work (functions/export-jobs.ts) and retention for a daily job.
 */
export { createExport, downloadExport, getExport, listExportRequests, listExports, runExport } from './exports.ts';
export { createAsset, deleteAsset, getAsset, listAssets, publicAsset } from './assets.ts';
export { createAssetFromUpload, createAssetUpload } from './asset-uploads.ts';
export { applyRetention, runRetentionSweep, utcDay } from './retention.ts';
export {
  
  getPrivacyRequest,
  requestPhoneNumberErase,
  requestRetentionRun,
  
} from './privacy.ts';
export { accountStatus, getReliability, privacyCallView, putReliability, workspaceEgress } from './settings.ts';
;
