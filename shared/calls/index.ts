/**
 * The calls domain's entry: the API operations (functions/calls.ts), the step handler the
 * call-steps consumer runs, and what other domains may use. A domain that only reads calls,
 * embeds their schemas or follows their lifecycle imports records/index.ts instead: this entry
 * reaches the engine, media (LiveKit), recordings (S3) and the conversation runtime (`ws`),
 * and esbuild keeps their side-effecting modules in every bundle that imports it.
 *
 * What only the calls function's routes use (SIP traces, live controls, the media webhook
 * and worker reports, deleting and scrubbing a call) is not here but in on-demand.ts, which
 * loads each with `import()` on its first request: esbuild makes every `import()` target a
 * chunk whether or not the importer's code is used, and the files a lazy chunk shares with
 * the entry are loaded cold whole, so lazy wrappers here cost the other importers of this
 * entry (public, call-steps) cold bytes (docs/performance.md, "One
 * import() target for a domain's rare routes"). The conversation runtime is loaded on first use by its own entry
 * (shared/conversation/index.ts).
 */
export {
  backfillCallAnalysis,
  createPhoneCall,
  createWebCall,
  getCallWithAccess,
  listCalls,
  registerPhoneCall,
  rerunCallAnalysis,
  stopCall,
  updateCall,
} from './calls.ts';
export { CallQueueMessageSchema,  runCallQueueMessage,  type CallQueueMessage, type CallStepMessage } from './engine/index.ts';
export { receiveInboundCall,   } from './inbound/index.ts';
export { getConcurrency, getConcurrencySettings, updateConcurrencySettings } from './concurrency.ts';
export { retrieveForWorker } from './worker-retrieval.ts';
export { assertCallOf,       } from './history.ts';
;
export {  newBatchDialMemo, placeBatchCall, releaseUnusedBatchDialSlots, prepareBatchDials } from './batch-dial.ts';
export {  unlinkBatchCall } from './batch-links.ts';
export type {  BatchDialMemo,   } from './batch-dial.ts';
export { onCallLifecycle } from './call-listeners.ts';
;
;
export { getCallRecordingUrl } from './artifacts/index.ts';
export { callStream, closeLiveConnection, lastEventId, monitorInfo, openLiveConnection, syncLiveConnection } from './live/index.ts';
;
