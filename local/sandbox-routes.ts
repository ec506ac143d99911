import * as z from 'zod';
import { receiveInboundCall } from '../shared/calls/index.ts';
import { Call, SandboxInboundBody } from '../shared/calls/schemas.ts';
import { domainHandler, OtherStatus } from '../shared/platform/http/handler.ts';
import { defineRoutes } from '../shared/platform/http/route.ts';

/*
 * Routes only the local runtime serves: never in the route table, so never in CDK, the
 * OpenAPI document or `npm run routes` (the architecture test keeps local/ out of every
 * deployed bundle). `POST /sandbox/inbound-call` plays a caller ringing a number of the
 * key's workspace, through the same function the SIP edge calls in AWS.
 */
export const sandboxRoutes = defineRoutes({ domain: 'calls', access: 'calls' }, {
  sandboxInboundCall: {
    method: 'POST', path: '/sandbox/inbound-call', status: 201,
    summary: 'Ring one of the workspace\'s numbers from a simulated caller (local runtime only)',
    body: SandboxInboundBody,
    response: z.lazy(() => z.union([Call, z.object({ call_id: z.null(), reason: z.string(), fallback_number: z.string().optional() })])),
  },
});

export const sandboxHandler = domainHandler(sandboxRoutes, {
  sandboxInboundCall: async ({ principal, body }) => {
    const outcome = await receiveInboundCall(
      { fromNumber: body.from_number, toNumber: body.to_number, sipHeaders: body.sip_headers },
      { workspaceId: principal.workspaceId },
    );
    if (outcome.accepted) return outcome.call;
    return new OtherStatus(200, { call_id: null, reason: outcome.reason, ...(outcome.fallback_number ? { fallback_number: outcome.fallback_number } : {}) }) as never;
  },
});
