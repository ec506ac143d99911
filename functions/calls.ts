import { domainHandler } from '../shared/platform/http/handler.ts';
import type { Handlers } from '../shared/platform/http/route.ts';
import { callArtifactRoutes } from '../shared/calls/artifacts/routes.ts';
import { callRoutes } from '../shared/calls/routes.ts';
import { liveCallRoutes } from '../shared/calls/live/routes.ts';
import * as calls from '../shared/calls/index.ts';
import { onDemand } from './calls/load.ts';
import { registerBatchCallCounters } from '../shared/batches/counters.ts';
import { registerRollupRecording } from '../shared/analytics/recording/index.ts';

// Batch counters hear of the calls this function moves (stop-call).
registerBatchCallCounters();
// The analytics rollups count every call this function ends or analyses (docs/analytics.md, Recording).
registerRollupRecording();

/** retell-sdk's `call.list` reads a page; its requests say so in their User-Agent (`Retell/JS <version>`). */
const fromRetellSdk = (userAgent: string | undefined) => /^Retell\/JS\b/.test(userAgent ?? '');

/** The call artifacts' routes (recordings, scrubbing, SIP traces), served by the same function. */
const artifactHandlers: Handlers<typeof callArtifactRoutes> = {
  getCallRecordingUrl: ({ principal, params }) => calls.getCallRecordingUrl(principal.workspaceId, params.call_id),
  removeCallSensitiveData: async ({ principal, params }) => (await onDemand()).scrubbing.removeCallSensitiveData(principal.workspaceId, params.call_id),
  getCallUnscrubbed: async ({ principal, params }) => (await onDemand()).scrubbing.getCallUnscrubbed(principal.workspaceId, params.call_id),
  getCallSipTrace: async ({ principal, params }) => (await onDemand()).sipTrace.getCallSipTrace(principal.workspaceId, params.call_id),
  getCallPcap: async ({ principal, params }) => (await onDemand()).sipTrace.getCallPcap(principal.workspaceId, params.call_id),
};

export const handler = domainHandler({ ...callRoutes, ...callArtifactRoutes, ...liveCallRoutes }, {
  ...artifactHandlers,
  createPhoneCall: ({ principal, body }) => calls.createPhoneCall(principal, body),
  createWebCall: ({ principal, body }) => calls.createWebCall(principal, body),
  registerPhoneCall: ({ principal, body }) => calls.registerPhoneCall(principal, body),
  getCall: ({ principal, params }) => calls.getCallWithAccess(principal.workspaceId, params.call_id),
  listCalls: ({ principal, body, request }) =>
    calls.listCalls(principal.workspaceId, body, { page: fromRetellSdk(request.headers['user-agent']) }),
  updateCall: ({ principal, params, body }) => calls.updateCall(principal.workspaceId, params.call_id, body),
  stopCall: ({ principal, params }) => calls.stopCall(principal.workspaceId, params.call_id),
  deleteCall: async ({ principal, params }) => (await onDemand()).deleteCall(principal.workspaceId, params.call_id),
  rerunCallAnalysis: ({ principal, params }) => calls.rerunCallAnalysis(principal.workspaceId, params.call_id),
  backfillCallAnalysis: ({ principal, body }) => calls.backfillCallAnalysis(principal.workspaceId, body),
  getConcurrency: ({ principal }) => calls.getConcurrency(principal.workspaceId),
  getConcurrencySettings: ({ principal }) => calls.getConcurrencySettings(principal.workspaceId),
  updateConcurrencySettings: ({ principal, body }) => calls.updateConcurrencySettings(principal.workspaceId, body),
  updateLiveCall: async ({ principal, params, body }) => (await onDemand()).liveControl.updateLiveCall(principal.workspaceId, params.call_id, body),
  listenLiveCall: async ({ principal, params }) => (await onDemand()).liveControl.listenLive(principal.workspaceId, params.call_id),
  takeOverLiveCall: async ({ principal, params, body }) => (await onDemand()).liveControl.takeOverLive(principal.workspaceId, params.call_id, body),
  supervisorSay: async ({ principal, params, body }) => (await onDemand()).liveControl.supervisorSay(principal.workspaceId, params.call_id, body),
  listCallViewers: async ({ principal, params }) => (await onDemand()).liveControl.listViewers(principal.workspaceId, params.call_id),
  leaveLiveCall: async ({ principal, params, body }) => (await onDemand()).liveControl.leaveLive(principal.workspaceId, params.call_id, body),
  streamCall: ({ principal, params, query, request }) =>
    calls.callStream(principal.workspaceId, params.call_id, calls.lastEventId(request.headers['last-event-id'], query.last_event_id)) as never,
  callMonitor: ({ principal, params, request }) =>
    calls.monitorInfo(principal.workspaceId, params.call_id, `http://${request.headers.host ?? '127.0.0.1'}`),
});
