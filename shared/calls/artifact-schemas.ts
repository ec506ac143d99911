import * as z from 'zod';

/** Answers of the call artifact routes (artifact-routes.ts): the API contract only. */

export const RecordingUrlView = z.object({
  call_id: z.string(),
  recording_url: z.string(),
  expires_at: z.number().int(),
  content_type: z.string(),
  duration_ms: z.number().int(),
  synthetic: z.boolean(),
  scrubbed: z.boolean(),
});
export type RecordingUrlView = z.infer<typeof RecordingUrlView>;

export const SipMessage = z.object({
  timestamp: z.number().int(),
  direction: z.enum(['sent', 'received']),
  src: z.string(),
  dst: z.string(),
  transport: z.literal('UDP'),
  method: z.string().nullable(),
  status_code: z.number().int().nullable(),
  reason: z.string().nullable(),
  cseq: z.string(),
  raw: z.string(),
});
export const SipTrace = z.object({
  call_id: z.string(),
  sip_call_id: z.string(),
  synthetic: z.boolean(),
  source: z.enum(['sandbox', 'livekit']),
  note: z.string(),
  messages: z.array(SipMessage),
});
export type SipTrace = z.infer<typeof SipTrace>;

