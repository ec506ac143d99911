/**
 * The calls domain's entry: the API operations (functions/calls.ts), the step handler the
 * call-steps consumer runs, and what other domains may use. A domain that only reads calls,
 * embeds their schemas or follows their lifecycle imports records.ts instead: this entry
 * reaches the engine, media (LiveKit), recordings (S3) and the conversation runtime (`ws`),
 * and esbuild keeps their side-effecting modules in every bundle that imports it.
 *
 * The SIP trace and PCAP builders and the supervisor's live controls serve a few routes
 * and no other module: they are loaded with `import()` by the first such request, once per
 * process, so the calls function's cold start does not load them (docs/performance.md,
 * "Sizes: cold and lazy"). The conversation runtime is loaded the same way, by its own
 * entry (shared/conversation/index.ts).
 */
import type * as LiveControl from './live-control.ts';
import type * as SipTrace from './sip-trace.ts';

let sipTrace: Promise<typeof SipTrace> | undefined;
const sipTraceModule = () => (sipTrace ??= import('./sip-trace.ts'));
let liveControl: Promise<typeof LiveControl> | undefined;
const liveControlModule = () => (liveControl ??= import('./live-control.ts'));

/** GET /get-call-sip-trace (sip-trace.ts). */
export async function getCallSipTrace(...args: Parameters<typeof SipTrace.getCallSipTrace>): ReturnType<typeof SipTrace.getCallSipTrace> {
  return (await sipTraceModule()).getCallSipTrace(...args);
}
/** GET /get-call-pcap (sip-trace.ts). */
export async function getCallPcap(...args: Parameters<typeof SipTrace.getCallPcap>): ReturnType<typeof SipTrace.getCallPcap> {
  return (await sipTraceModule()).getCallPcap(...args);
}

/** The supervisor's live controls (live-control.ts). */
export async function updateLiveCall(...args: Parameters<typeof LiveControl.updateLiveCall>): ReturnType<typeof LiveControl.updateLiveCall> {
  return (await liveControlModule()).updateLiveCall(...args);
}
export async function listenLive(...args: Parameters<typeof LiveControl.listenLive>): ReturnType<typeof LiveControl.listenLive> {
  return (await liveControlModule()).listenLive(...args);
}
export async function takeOverLive(...args: Parameters<typeof LiveControl.takeOverLive>): ReturnType<typeof LiveControl.takeOverLive> {
  return (await liveControlModule()).takeOverLive(...args);
}
export async function supervisorSay(...args: Parameters<typeof LiveControl.supervisorSay>): ReturnType<typeof LiveControl.supervisorSay> {
  return (await liveControlModule()).supervisorSay(...args);
}
export async function listViewers(...args: Parameters<typeof LiveControl.listViewers>): ReturnType<typeof LiveControl.listViewers> {
  return (await liveControlModule()).listViewers(...args);
}
export async function leaveLive(...args: Parameters<typeof LiveControl.leaveLive>): ReturnType<typeof LiveControl.leaveLive> {
  return (await liveControlModule()).leaveLive(...args);
}

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
export { callStream, lastEventId, monitorInfo } from './live-stream.ts';
export { openLiveConnection, syncLiveConnection, closeLiveConnection } from './live-push.ts';
export { findPublicCallLog, type PublicCallLog } from './public-call.ts';
