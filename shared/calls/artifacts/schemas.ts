import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';

/** Answers of the call artifact routes (artifacts/routes.ts): the API contract only. */

export const RecordingUrlView = lazySchema(() =>
  z.object({
    call_id: z.string(),
    recording_url: z.string(),
    expires_at: z.number().int(),
    content_type: z.string(),
    duration_ms: z.number().int(),
    synthetic: z.boolean(),
    scrubbed: z.boolean(),
  }),
);
export type RecordingUrlView = z.infer<typeof RecordingUrlView>;

const SipMessage = lazySchema(() =>
z.object({
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
  /** LiveKit traces: the reported fact the message rests on, or `implied` (required by the protocol around those facts). */
  basis: z.string().optional(),
}),
);
/** What LiveKit reported about the call's SIP participant (LiveKit traces only). */
const SipParticipantFacts = lazySchema(() =>
z.object({
  participant_identity: z.string().nullable(),
  /** `sip.callID`: LiveKit's own SIP call ID. */
  livekit_call_id: z.string().nullable(),
  /** `sip.callIDFull`: the Call-ID header of the dialog. */
  call_id_full: z.string().nullable(),
  phone_number: z.string().nullable(),
  trunk_phone_number: z.string().nullable(),
  hostname: z.string().nullable(),
  trunk_id: z.string().nullable(),
  rule_id: z.string().nullable(),
  disconnect_reason: z.string().nullable(),
  failure: z.object({ status_code: z.number().int(), reason: z.string().nullable(), timestamp: z.number().int() }).nullable(),
  status_transitions: z.array(z.object({ status: z.string(), timestamp: z.number().int(), source: z.enum(['webhook', 'dial', 'worker']) })),
}),
);
export const SipTrace = lazySchema(() =>
z.object({
  call_id: z.string(),
  sip_call_id: z.string(),
  synthetic: z.boolean(),
  /** `sandbox` and `livekit`: reconstructed from the call record (synthetic); `livekit_sip_participant`: built from LiveKit's reports. */
  source: z.enum(['sandbox', 'livekit', 'livekit_sip_participant']),
  note: z.string(),
  sip_participant: SipParticipantFacts.optional(),
  messages: z.array(SipMessage),
}),
);
export type SipTrace = z.infer<typeof SipTrace>;

