import { defineRoutes } from '../../platform/http/route.ts';
import { lazySchema } from '../../platform/http/schemas.ts';
import * as z from 'zod';
import { SipConnectionResult, sipTransport, sipUri } from './schemas.ts';

export const connectionTestRoutes = defineRoutes({ domain: 'numbers', access: 'numbers' }, {
  testSipConnection: {
    method: 'POST', path: '/test-sip-connection', status: 200,
    throttle: 'outbound',
    summary: 'Send SIP OPTIONS to a termination URI and report whether and how it answered',
    body: lazySchema(() =>
      z.object({
        termination_uri: sipUri(),
        transport: sipTransport().optional().describe('Overrides the URI’s transport; default: the URI’s, else TCP (TLS for sips:)'),
        timeout_ms: z.number().int().min(500).max(10_000).default(5000),
      }).refine((body) => !body.transport || body.transport === 'tls' || !/^sips:/i.test(body.termination_uri), {
        path: ['transport'],
        message: 'Must be tls for a sips: URI',
      }),
    ),
    response: SipConnectionResult,
  },
});
