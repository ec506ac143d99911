/**
 * The calls domain's entry: the API operations (functions/calls.ts), the step handler the
 * call-steps consumer runs, and what other domains may use. A domain that only reads calls,
 * embeds their schemas or follows their lifecycle imports records.ts instead: this entry
 * reaches the engine, media (LiveKit), recordings (S3) and the conversation runtime (`ws`),
 * and esbuild keeps their side-effecting modules in every bundle that imports it.
 */
export {
  backfillCallAnalysis,
  createPhoneCall,
  createWebCall,
  listCalls,
  registerPhoneCall,
  rerunCallAnalysis,
  stopCall,
  updateCall,
} from './calls.ts';
export { deleteCall } from './deletion.ts';
export { runCallStep } from './engine.ts';
export { runCallQueueMessage } from './queue-consumer.ts';
export { CallQueueMessageSchema, CallStepSchema, type CallQueueMessage, type CallStepMessage } from './schedule.ts';
export { receiveInboundCall, type InboundCallInput, type InboundOutcome } from './inbound.ts';
export { getConcurrency, getConcurrencySettings, updateConcurrencySettings } from './concurrency.ts';
export { receiveMediaWebhook, receiveWorkerEvent } from './live-events.ts';
export { retrieveForWorker } from './worker-retrieval.ts';
export { callExportPage, callHistoryPage, callIdsWithNumber, callRetentionPage, getCall, parseCallFilter } from './history.ts';
export { callStorageFacts, type CallStorageFacts } from './scrubbing.ts';
export { checkedAgentOverride } from './agent-override.ts';
export { batchDialKey, newBatchDialMemo, placeBatchCall, releaseUnusedBatchDialSlots, prepareBatchDials } from './batch-dial.ts';
export { batchCallIdFor, unlinkBatchCall } from './batch-links.ts';
export type { BatchDialInput, BatchDialMemo, BatchDialResult, BatchTaskInput } from './batch-dial.ts';
export { onCallLifecycle } from './call-listeners.ts';
export type { CallLifecycleEvent, CallLifecycleListener } from './call-listeners.ts';
export { dynamicVariables, versionRef } from './schemas.ts';
export { getCallRecordingUrl } from './recordings.ts';
export { getCallUnscrubbed, removeCallSensitiveData } from './scrubbing.ts';
export { getCallPcap, getCallSipTrace } from './sip-trace.ts';
export { updateLiveCall, listenLive, takeOverLive, supervisorSay, listViewers, leaveLive } from './live-control.ts';
export { callStream, lastEventId, monitorInfo } from './live-stream.ts';
export { openLiveConnection, syncLiveConnection, closeLiveConnection } from './live-push.ts';
export { findPublicCallLog, type PublicCallLog } from './public-call.ts';
