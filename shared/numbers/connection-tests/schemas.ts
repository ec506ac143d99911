import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { SIP_URI_MESSAGE, isSipUri } from '../sip-uri.ts';

/** SIP connection tests (SIP OPTIONS to a termination URI) (scope `numbers`). */

/** A SIP URI as a termination URI is written: `sip:host[:port][;transport=tcp|udp|tls]` or `sips:`. */
export const sipUri = () => z.string().max(2048).refine(isSipUri, SIP_URI_MESSAGE);

/** `tcp`, `udp` or `tls`, in either case (the compatible API writes `TCP`). */
export const sipTransport = () =>
  z
    .enum(['tcp', 'udp', 'tls', 'TCP', 'UDP', 'TLS'])
    .transform((value) => value.toLowerCase() as 'tcp' | 'udp' | 'tls');

export const SipConnectionResult = lazySchema(() =>
  z.object({
    reachable: z.boolean().describe('A final SIP response came back (any status: a 403 still proves a SIP server answers)'),
    status_code: z.number().int().nullable(),
    reason: z.string().nullable(),
    latency_ms: z.number().int().nullable().describe('From sending OPTIONS to the final response'),
    transport: z.enum(['tcp', 'udp', 'tls']),
    address: z.string().nullable().describe('The resolved address the request went to'),
    error_code: z
      .enum(['refused', 'timeout', 'dns_failure', 'malformed_response', 'connection_closed', 'tls_failure', 'network_error', 'invalid_uri'])
      .nullable(),
    error: z.string().nullable(),
  }),
);
export type SipConnectionResult = z.infer<typeof SipConnectionResult>;
