import * as z from 'zod';
import type { DispatchMetadata } from '../../shared/vendors/media/index.ts';

/*
 * The job's metadata: what Parley's dispatch tells the worker about the call
 * (docs/calls-media.md, Dispatch metadata; `DispatchMetadata` in shared/vendors/media).
 * Fields Parley adds later are ignored rather than refused, so an older worker keeps
 * answering calls while a newer Parley rolls out.
 */

const record = () => z.record(z.string(), z.unknown());

const dispatchSchema = () =>
  z.object({
    call_id: z.string().min(1).max(200),
    workspace_id: z.string().min(1).max(200),
    agent_id: z.string().min(1).max(200),
    agent_version: z.number().int().min(0),
    call_type: z.enum(['web_call', 'phone_call']),
    direction: z.enum(['inbound', 'outbound']).nullable(),
    from_number: z.string().nullable(),
    to_number: z.string().nullable(),
    dynamic_variables: z.record(z.string(), z.string()),
    agent_override: z.object({ agent: record().optional(), llm: record().optional(), flow: record().optional() }).optional(),
    reliability: z
      .object({ fallback_voice_ids: z.array(z.string().min(1)), fallback_llm_model: z.string().min(1).nullable() })
      .optional(),
    report_url: z.string().refine((value) => /^https?:\/\/[^/]/.test(value), 'Must be an http:// or https:// URL'),
    report_token: z.string().min(1),
  });

/** Metadata that is not a call's dispatch: the job is refused with this message (never the token). */
export class BadDispatchMetadata extends Error {
  override name = 'BadDispatchMetadata';
}

/** The job's metadata as `DispatchMetadata`, or `BadDispatchMetadata` naming what is wrong. */
export function parseDispatchMetadata(text: string | undefined): DispatchMetadata {
  if (!text?.trim()) throw new BadDispatchMetadata('Dispatch metadata is empty: the worker answers only Parley\'s dispatches');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new BadDispatchMetadata('Dispatch metadata is not JSON');
  }
  const parsed = dispatchSchema().safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'metadata'}: ${issue.message}`);
    throw new BadDispatchMetadata(`Dispatch metadata is not a call's: ${problems.join('; ')}`);
  }
  const { agent_override, reliability, ...call } = parsed.data;
  return {
    ...call,
    ...(agent_override ? { agent_override } : {}),
    ...(reliability ? { reliability } : {}),
  } satisfies DispatchMetadata;
}
