import type * as z from 'zod';
import { destinationUrlProblem } from '../../platform/http/schemas.ts';

/*
 * A `custom` tool (retell-sdk CustomTool) is an HTTP request Parley makes during a
 * conversation (shared/conversation/tools/custom-functions.ts), to the tool's `url` as written (no
 * placeholders are filled in it). The rest of the tool is kept as the client sends it.
 */

const MAX_URL_LENGTH = 2048;

/** Refuses a custom tool's `url` at write by the egress guard's rules, as any URL Parley calls later. */
export function refineCustomTool(tool: { type: string; url?: unknown }, ctx: z.RefinementCtx): void {
  if (tool.type !== 'custom' || tool.url === undefined) return;
  const problem =
    typeof tool.url !== 'string'
      ? 'Must be an http:// or https:// URL'
      : tool.url.length > MAX_URL_LENGTH
        ? `Must be at most ${MAX_URL_LENGTH} characters`
        : destinationUrlProblem(tool.url);
  if (problem) ctx.addIssue({ code: 'custom', path: ['url'], message: problem, input: tool.url });
}
