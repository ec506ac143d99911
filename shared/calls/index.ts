/**
 * The calls domain's entry: the API operations (functions/calls.ts), the step handler the
 * call-steps consumer runs, and what other domains (batches, contacts) may use.
 */
export {
  backfillCallAnalysis,
  createPhoneCall,
  createWebCall,
  deleteCall,
  getCall,
  listCalls,
  registerPhoneCall,
  rerunCallAnalysis,
  stopCall,
  updateCall,
} from './calls.ts';
export { runCallStep } from './engine.ts';
export { runCallQueueMessage } from './queue-consumer.ts';
export { CallQueueMessageSchema, CallStepSchema, type CallQueueMessage, type CallStepMessage } from './schedule.ts';
export { receiveInboundCall, type InboundCallInput, type InboundOutcome } from './inbound.ts';
export { getConcurrency, getConcurrencySettings, updateConcurrencySettings } from './concurrency.ts';
export { receiveMediaWebhook, receiveWorkerEvent } from './live-events.ts';
export { retrieveForWorker } from './worker-retrieval.ts';
export { callExportPage, callHistoryPage, callIdsWithNumber, callRetentionPage, callStorageFacts, parseCallFilter, type CallStorageFacts } from './history.ts';
export { checkedAgentOverride } from './agent-override.ts';
export { batchCallIdFor, batchDialKey, newBatchDialMemo, placeBatchCall, releaseUnusedBatchDialSlots, prepareBatchDials, unlinkBatchCall } from './batch-dial.ts';
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
