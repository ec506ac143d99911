/**
 * The account-data work the export-jobs consumer runs (functions/export-jobs.ts): exports,
 * privacy erases and retention runs, the daily retention sweep. A narrow entry beside
 * index.ts, which also holds the API's settings, assets and uploads: through those it
 * reaches billing, numbers (the telephony vendors), voices and the agents' model list, none
 * of which a job runs, and esbuild keeps a reached module's side effects (docs/performance.md,
 * "Narrow entries").
 */
export { runExport } from './exports.ts';
export { runPrivacyRequest } from './privacy.ts';
export { runRetentionSweep, utcDay } from './retention.ts';
export { runListingBackfill } from './listing-backfill.ts';
export { AccountDataJobMessage } from './messages.ts';
