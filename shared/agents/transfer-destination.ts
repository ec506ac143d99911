import type * as z from 'zod';
import { sipTransportProblem } from '../platform/sip-uri.ts';

/**
 * A transfer_call tool's (or node's) predefined SIP destination must carry a transport the
 * carrier knows (`;transport=udp|tcp|tls`): anything else is a 400 naming the field when
 * the LLM or flow is saved, rather than a transfer refused during a call.
 */
export function refineTransferDestination(tool: { type?: unknown; transfer_destination?: unknown }, ctx: z.RefinementCtx): void {
  if (tool.type !== 'transfer_call') return;
  const number = (tool.transfer_destination as { number?: unknown } | undefined)?.number;
  if (typeof number !== 'string' || !/^\s*sips?:/i.test(number)) return;
  const problem = sipTransportProblem(number);
  if (problem) ctx.addIssue({ code: 'custom', path: ['transfer_destination', 'number'], message: problem, input: number });
}
