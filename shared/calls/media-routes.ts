import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import { MAX_WORKER_REPORT_BYTES, workerEventSchema } from '../vendors/media/index.ts';
import { callIdParams, WorkerRetrievalBody, WorkerRetrievalView } from './schemas.ts';

/**
 * What the media server and the voice worker send about calls in progress: LiveKit's webhooks,
 * the worker's reports and its knowledge-base retrievals. Each is one route for every call on
 * the platform, so they run in a function of their own (calls-media), whose reservation and
 * route limits are sized from the concurrent calls the platform serves (docs/scale.md), and
 * keyed API traffic can never take their executions nor they the API's. Each checks its own
 * credential (LiveKit's signature, the call's report token), so the gate counts none of them
 * in the per-IP window, which they would make hot (a platform's workers and media server
 * send from a few addresses): only a refused credential is counted there.
 */
export const callMediaRoutes = defineRoutes({ domain: 'calls-media', access: 'public' }, {
  livekitWebhook: {
    method: 'POST', path: '/livekit/webhook', status: 200, throttle: 'media', ownCredential: true,
    summary: 'LiveKit\'s room and participant webhooks (signed with the LiveKit API key; 401 otherwise)',
    response: lazySchema(() => z.object({ applied: z.string() })),
  },
  workerReport: {
    method: 'POST', path: '/internal/calls/{call_id}/events', status: 204, throttle: 'worker', ownCredential: true,
    summary: 'The agent worker reports a call\'s transcript, tool calls and end (Bearer: the call\'s report token)',
    params: callIdParams, body: lazySchema(() => workerEventSchema), maxBodyBytes: MAX_WORKER_REPORT_BYTES,
  },
  workerRetrieve: {
    method: 'POST', path: '/internal/calls/{call_id}/kb-retrieve', status: 200, throttle: 'worker', ownCredential: true,
    summary: 'The agent worker retrieves knowledge-base chunks for the user\'s words, recorded for kb-retrievals (Bearer: the call\'s report token)',
    params: callIdParams, body: lazySchema(() => WorkerRetrievalBody), response: lazySchema(() => WorkerRetrievalView),
  },
});
