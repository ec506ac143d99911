import * as z from 'zod';
import { epochMs } from '../platform/http/schemas.ts';
import { idPattern } from '../platform/ids.ts';
import { wire } from '../platform/naming.ts';
import { IdempotencyKey } from './idempotency.ts';

/*
 * The calls API contract: request bodies as retell-sdk sends them (resources/call.d.ts
 * CallCreatePhoneCallParams, CallCreateWebCallParams, CallRegisterPhoneCallParams,
 * CallListParams, CallUpdateParams) and the call object it reads back. Schemas are built
 * on first use (z.lazy), so a cold start constructs none it does not need.
 */

export const CALL_STATUSES = ['registered', 'not_connected', 'ongoing', 'ended', 'error'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

/** retell-sdk's `disconnection_reason` values. */
export const DISCONNECTION_REASONS = [
  'user_hangup', 'agent_hangup', 'call_transfer', 'voicemail_reached', 'ivr_reached', 'inactivity',
  'max_duration_reached', 'concurrency_limit_reached', 'no_concurrency_fallback', 'no_valid_payment',
  'scam_detected', 'dial_busy', 'dial_failed', 'dial_no_answer', 'invalid_destination',
  'telephony_provider_permission_denied', 'telephony_provider_unavailable', 'sip_routing_error',
  'marked_as_spam', 'user_declined', 'error_llm_websocket_open', 'error_llm_websocket_lost_connection',
  'error_llm_websocket_runtime', 'error_llm_websocket_corrupt_payload', 'error_no_audio_received',
  'error_asr', 'error_retell', 'error_unknown', 'error_user_not_joined', 'registered_call_timeout',
  'transfer_bridged', 'transfer_cancelled', 'manual_stopped', 'call_take_over',
] as const;
export type DisconnectionReason = (typeof DISCONNECTION_REASONS)[number];

export const DATA_STORAGE_SETTINGS = ['everything', 'everything_except_pii', 'basic_attributes_only'] as const;

/** Longest sandbox call a request may ask for (metadata.sandbox_call_ms): one hour. */
export const MAX_SANDBOX_CALL_MS = 3_600_000;

/**
 * Dynamic variables: any JSON values, stored and sent as strings (spec: non-string values
 * are converted; `true` becomes `"true"`). Objects and arrays become their JSON text.
 */
export const dynamicVariables = () =>
  z
    .record(z.string().min(1).max(256), z.unknown())
    .refine((vars) => Object.keys(vars).length <= 500, 'Must have at most 500 variables')
    .transform((vars) => Object.fromEntries(Object.entries(vars).map(([name, value]) => [name, asVariableString(value)])));

export function asVariableString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A version reference as the client sends it: a number, a numeric string, `latest`, `latest_published` or a tag name. */
export const versionRef = () =>
  z.union([z.number().int().min(0).max(999_999_999), z.string().min(1).max(64)]).transform((value) => String(value));


/**
 * This call's configuration over the agent version's. The contract names the three parts;
 * each is checked with its update route's schema when the call is created
 * (agent-override.ts, 400 naming the field), so the OpenAPI document does not repeat the
 * agent, LLM and flow schemas in every create route.
 */
const agentOverride = () =>
  z
    .looseObject({
      agent: z.looseObject({}).optional().describe('update-agent fields for this call only; response_engine is ignored'),
      [`${wire.compat}_llm`]: z.looseObject({}).optional().describe('Retell LLM update fields, when the agent runs a Retell LLM'),
      conversation_flow: z
        .looseObject({})
        .optional()
        .describe('conversation flow update fields, when the agent runs a flow (nodes, start_node_id and components are ignored)'),
    })
    .describe('This call\'s configuration over the agent version\'s; nothing is stored on the agent');

const sipHeaders = () =>
  z.record(z.string().min(1).max(128), z.string().max(1024)).refine((headers) => Object.keys(headers).length <= 50, 'Must have at most 50 headers');

const callMetadata = () => z.unknown();

export const CreatePhoneCallBody = z.lazy(() =>
  z.object({
    from_number: z.string().min(1).max(32),
    to_number: z.string().min(1).max(32),
    override_agent_id: z.string().regex(idPattern('agent'), 'Must be an agent ID (agent_ followed by 24 hex characters)').optional(),
    override_agent_version: versionRef().optional(),
    agent_version: versionRef().optional(),
    retell_llm_dynamic_variables: dynamicVariables().optional(),
    metadata: callMetadata().optional(),
    custom_sip_headers: sipHeaders().optional(),
    idempotency_key: IdempotencyKey.optional(),
    agent_override: agentOverride().optional(),
  }),
);
export type CreatePhoneCallInput = z.infer<typeof CreatePhoneCallBody>;

export const CreateWebCallBody = z.lazy(() =>
  z.object({
    agent_id: z.string().regex(idPattern('agent'), 'Must be an agent ID (agent_ followed by 24 hex characters)'),
    agent_version: versionRef().optional(),
    retell_llm_dynamic_variables: dynamicVariables().optional(),
    metadata: callMetadata().optional(),
    agent_override: agentOverride().optional(),
    current_node_id: z.string().max(256).nullable().optional(),
    current_state: z.string().max(256).nullable().optional(),
  }),
);
export type CreateWebCallInput = z.infer<typeof CreateWebCallBody>;

export const RegisterPhoneCallBody = z.lazy(() =>
  z.object({
    agent_id: z.string().regex(idPattern('agent'), 'Must be an agent ID (agent_ followed by 24 hex characters)'),
    agent_version: versionRef().optional(),
    direction: z.enum(['inbound', 'outbound']).optional(),
    from_number: z.string().min(1).max(32).optional(),
    to_number: z.string().min(1).max(32).optional(),
    retell_llm_dynamic_variables: dynamicVariables().optional(),
    metadata: callMetadata().optional(),
    agent_override: agentOverride().optional(),
    /** from_number and to_number are only stored; with this they need not be E.164 (a PBX extension, a SIP user). */
    ignore_e164_validation: z.boolean().optional(),
    idempotency_key: IdempotencyKey.optional(),
  }),
);
export type RegisterPhoneCallInput = z.infer<typeof RegisterPhoneCallBody>;

export const UpdateCallBody = z.lazy(() =>
  z.object({
    metadata: callMetadata().optional(),
    data_storage_setting: z.enum(DATA_STORAGE_SETTINGS).optional(),
    custom_attributes: z.record(z.string().min(1).max(256), z.union([z.string().max(10_000), z.number(), z.boolean()])).optional(),
    opt_in_signed_url: z.boolean().optional(),
  }),
);
export type UpdateCallInput = z.infer<typeof UpdateCallBody>;

/** A filter value in the plain form (a string or strings) or retell-sdk's (an array). */
const oneOrMany = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1).max(100)]).transform((v) => (Array.isArray(v) ? v : [v]));

const timeRange = () =>
  z
    .object({ lower_threshold: epochMs().optional(), upper_threshold: epochMs().optional() })
    .strict();

export const FILTERABLE_FIELDS = [
  'agent_id', 'call_status', 'call_type', 'direction', 'from_number', 'to_number', 'batch_call_id',
  'disconnection_reason', 'user_sentiment', 'call_successful', 'in_voicemail', 'start_timestamp', 'end_timestamp',
] as const;

export const CallFilter = () =>
  z
    .object({
      agent_id: oneOrMany(z.string().max(64)).optional(),
      call_status: oneOrMany(z.enum(CALL_STATUSES)).optional(),
      call_type: oneOrMany(z.enum(['web_call', 'phone_call'])).optional(),
      direction: oneOrMany(z.enum(['inbound', 'outbound'])).optional(),
      from_number: oneOrMany(z.string().max(32)).optional(),
      to_number: oneOrMany(z.string().max(32)).optional(),
      batch_call_id: oneOrMany(z.string().max(64)).optional(),
      disconnection_reason: oneOrMany(z.enum(DISCONNECTION_REASONS)).optional(),
      user_sentiment: oneOrMany(z.enum(['Negative', 'Positive', 'Neutral', 'Unknown'])).optional(),
      call_successful: oneOrMany(z.boolean()).optional(),
      in_voicemail: oneOrMany(z.boolean()).optional(),
      start_timestamp: timeRange().optional(),
      end_timestamp: timeRange().optional(),
    })
    // Other retell-sdk filters (metadata, dynamic variables, custom analysis data, …) are accepted and not applied: docs/calls.md.
    .catchall(z.unknown());
export type CallFilter = z.infer<ReturnType<typeof CallFilter>>;

export const ListCallsBody = z.lazy(() =>
  z
    .object({
      filter_criteria: CallFilter().optional(),
      limit: z.number().int().min(1).max(1000).default(50),
      sort_order: z.enum(['ascending', 'descending']).default('descending'),
      pagination_key: z.string().min(1).max(128).optional(),
      include_total: z.boolean().optional(),
    })
    .default({ limit: 50, sort_order: 'descending' }),
);
export type ListCallsInput = z.infer<typeof ListCallsBody>;

/** Any call ID shape is looked up (a well-formed ID of no call is 404, as retell-sdk's examples expect), within reason. */
export const callIdParams = z.lazy(() => z.object({ call_id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'Must be a call ID') }));

/** The call object (retell-sdk PhoneCallResponse / WebCallResponse); open-ended parts are described loosely. */
export const Call = z.lazy(() =>
  z.looseObject({
    call_id: z.string(),
    call_type: z.enum(['web_call', 'phone_call']),
    call_status: z.enum(CALL_STATUSES),
    agent_id: z.string(),
    agent_version: z.number().int(),
    agent_name: z.string().optional(),
    direction: z.enum(['inbound', 'outbound']).nullable().optional(),
    from_number: z.string().nullable().optional(),
    to_number: z.string().nullable().optional(),
    metadata: z.unknown().optional(),
    retell_llm_dynamic_variables: z.record(z.string(), z.string()).optional(),
    collected_dynamic_variables: z.record(z.string(), z.unknown()).optional(),
    start_timestamp: epochMs().optional(),
    end_timestamp: epochMs().optional(),
    duration_ms: z.number().int().optional(),
    disconnection_reason: z.enum(DISCONNECTION_REASONS).optional(),
    transcript: z.string().optional(),
    transcript_object: z.array(z.looseObject({ role: z.enum(['agent', 'user']), content: z.string() })).optional(),
    transcript_with_tool_calls: z.array(z.looseObject({ role: z.string() })).optional(),
    call_analysis: z.looseObject({}).optional(),
    call_cost: z.looseObject({}).optional(),
    latency: z.looseObject({}).optional(),
    concurrency_burst: z.boolean().optional(),
    data_storage_setting: z.enum(DATA_STORAGE_SETTINGS).nullable().optional(),
    batch_call_id: z.string().optional(),
  }),
);
export type CallView = z.infer<typeof Call>;

const iceServer = () => z.object({ urls: z.union([z.string(), z.array(z.string())]), username: z.string().optional(), credential: z.string().optional() });

export const WebCall = z.lazy(() =>
  z.looseObject({
    ...Call.unwrap().shape,
    access_token: z.string(),
    livekit_url: z.string(),
    expires_at: epochMs(),
    transport: z.literal('livekit'),
    ice_servers: z.array(iceServer()),
  }),
);

/** retell-sdk's `call.list` page (its User-Agent asks for it; everyone else gets the spec's array). */
export const CallPage = z.lazy(() =>
  z.object({ items: z.array(Call), has_more: z.boolean(), pagination_key: z.string().optional(), total: z.number().int().optional() }),
);

export const CallList = z.lazy(() => z.union([z.array(Call), CallPage]));

export const BackfillCallAnalysisBody = z.lazy(() =>
  z
    .object({
      call_ids: z.array(z.string().regex(idPattern('call'), 'Must be a call ID')).min(1).max(1000).optional(),
      start_timestamp: epochMs().optional(),
      end_timestamp: epochMs().optional(),
      agent_id: z.string().max(64).optional(),
    })
    .default({}),
);

export const BackfillAccepted = z.lazy(() => z.object({ status: z.literal('accepted'), queued: z.number().int() }));

export const SandboxInboundBody = z.lazy(() =>
  z.object({
    from_number: z.string().min(1).max(32),
    to_number: z.string().min(1).max(32),
    sip_headers: z.record(z.string().min(1).max(128), z.string().max(1024)).optional(),
  }),
);
export type SandboxInboundInput = z.infer<typeof SandboxInboundBody>;
