/**
 * The batches domain's entry: the API operations (functions/batches.ts), the scheduler
 * (functions/batch-tick.ts), the counters' registration with the calls engine, and the
 * dashboard CSV rules for other imports (contacts).
 */
export {
  applyCallLifecycle,
  createBatchCall,
  deleteBatchCall,
  getBatchCall,
  listBatchCalls,
  registerBatchCallCounters,
  startBatchCall,
  stopBatchCall,
} from './batches.ts';
export { runBatchPass, runBatchTicks } from './scheduler.ts';
/** A privacy erase of one number (shared/account-data): its pending tasks skipped, every task to it redacted. */
export { eraseNumberFromBatchTasks } from './store.ts';
export type { BatchPassOptions, BatchPassResult, DoNotCallCheck } from './scheduler.ts';
export { insideWindow, nextOpening } from './windows.ts';
export { csvPhoneNumber, csvVariableName, parseDashboardCsv } from '../platform/csv.ts';
export type { CsvRow, CsvSkippedRow, DashboardCsv } from '../platform/csv.ts';
