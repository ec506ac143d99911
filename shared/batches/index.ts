/**
 * The batches domain's entry: the API operations (functions/batches.ts), the counters'
 * registration with the calls engine, a privacy erase's work on batch tasks, and the
 * dashboard CSV rules for other imports (contacts). The scheduler, which dials through the
 * calls engine, is not exported here: functions/batch-tick.ts imports scheduler.ts itself,
 * so that importing this entry (account data's privacy erase) never reaches the engine, the
 * conversation runtime or `ws` (docs/performance.md, "Narrow entries").
 */
;
;
/** A privacy erase of one number (shared/account-data): its pending tasks skipped, every task to it redacted. */
export { eraseNumberFromBatchTasks } from './store.ts';
export { insideWindow, nextOpening } from './windows.ts';
;
;
