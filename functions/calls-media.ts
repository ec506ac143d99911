import { domainHandler } from '../shared/platform/http/handler.ts';
import { callMediaRoutes } from '../shared/calls/media-routes.ts';
import { retrieveForWorker } from '../shared/calls/index.ts';
import { receiveMediaWebhook, receiveWorkerEvent } from '../shared/calls/live/events.ts';
import { registerBatchCallCounters } from '../shared/batches/counters.ts';
import { registerRollupRecording } from '../shared/analytics/recording/index.ts';

// Batch counters hear of the calls this function moves (LiveKit events, the worker's call ends).
registerBatchCallCounters();
// The analytics rollups count every call this function ends or analyses (docs/analytics.md, Recording).
registerRollupRecording();

/**
 * The calls in progress, as the media server and the voice worker report them
 * (shared/calls/media-routes.ts): every request is about one live call, so this is the
 * function whose load grows with concurrent calls (docs/scale.md).
 */
export const handler = domainHandler(callMediaRoutes, {
  livekitWebhook: ({ request }) => receiveMediaWebhook(request.rawBody, request.headers.authorization, request.sourceIp),
  workerReport: ({ params, request, body }) => receiveWorkerEvent(params.call_id, request.headers.authorization, request.sourceIp, body),
  workerRetrieve: ({ params, request, body }) => retrieveForWorker(params.call_id, request.headers.authorization, request.sourceIp, body),
});
