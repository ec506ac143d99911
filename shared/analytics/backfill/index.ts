/** The rollup backfill, for the export-jobs consumer (docs/analytics.md, "Backfill"). */
export { RollupBackfillMessage, runRollupBackfill } from './backfill.ts';
