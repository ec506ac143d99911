import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { agentOverride, DATA_STORAGE_SETTINGS } from '../schemas.ts';

/** The live calls' API contract (docs/calls.md, Live calls): retell-sdk's shapes where it has them. */

const participantId = () => z.string().regex(/^(listener|supervisor)_[0-9a-f]{24}$/, 'Must be a participant_id answered by listen or take-over');

/** retell-sdk CallUpdateLiveParams, plus agent_override (validated like create's). */
export const UpdateLiveCallBody = lazySchema(() =>
  z.object({
    call_control: z
      .object({
        additional_context: z.string().min(1).max(10_000).optional(),
        trigger_response: z.boolean().optional(),
      })
      .optional(),
    fields_to_override: z
      .object({
        data_storage_setting: z.enum(DATA_STORAGE_SETTINGS).optional(),
        metadata: z.unknown().optional(),
        override_dynamic_variables: z.record(z.string().min(1).max(256), z.string().max(10_000)).nullable().optional(),
      })
      .optional(),
    agent_override: agentOverride().optional(),
  }),
);
export type UpdateLiveCallInput = z.infer<typeof UpdateLiveCallBody>;

export const TakeOverBody = lazySchema(() => z.object({ participant_id: participantId().optional() }));
export const LeaveBody = lazySchema(() => z.object({ participant_id: participantId() }));
export const SupervisorSayBody = lazySchema(() => z.object({ text: z.string().trim().min(1).max(2000) }));

export const LiveSuccess = lazySchema(() => z.object({ success: z.boolean() }));

/** retell-sdk CallListenLiveResponse (transport `livekit`). */
export const LiveAccessView = lazySchema(() =>
  z.object({
    access_token: z.string(),
    expires_at: z.number(),
    participant_id: z.string(),
    room_name: z.string(),
    transport: z.literal('livekit'),
    url: z.string(),
    ice_servers: z.array(z.looseObject({})),
  }),
);
export const TakeOverView = lazySchema(() => LiveAccessView.extend({ success: z.boolean() }));

export const ViewerView = lazySchema(() =>
  z.array(z.object({ participant_id: z.string(), role: z.enum(['listener', 'supervisor']), joined_timestamp: z.number() })),
);

export const StreamQuery = lazySchema(() =>
  z.object({ last_event_id: z.string().regex(/^\d{1,15}$/, 'Must be a whole number').transform(Number).optional() }),
);
export const MonitorInfo = lazySchema(() => z.object({ call_id: z.string(), websocket_url: z.string(), protocol: z.string() }));
