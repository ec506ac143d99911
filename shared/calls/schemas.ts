import * as z from 'zod';
import { asVariableString, customSipHeaders, dynamicVariables, epochMs, lazySchema, llmFallback, versionRef } from '../platform/http/schemas.ts';
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
const DISCONNECTION_REASONS = [
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

export { asVariableString, dynamicVariables, versionRef };

/**
 * This call's configuration over the agent version's. The contract names the three parts;
 * each is checked with its update route's schema when the call is created
 * (agent-override.ts, 400 naming the field), so the OpenAPI document does not repeat the
 * agent, LLM and flow schemas in every create route.
 */
export const agentOverride = () =>
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

const callMetadata = () => z.unknown();

export const CreatePhoneCallBody = lazySchema(() =>
  z.object({
    from_number: z.string().min(1).max(32),
    to_number: z.string().min(1).max(32),
    override_agent_id: z.string().regex(idPattern('agent'), 'Must be an agent ID (agent_ followed by 24 hex characters)').optional(),
    override_agent_version: versionRef().optional(),
    agent_version: versionRef().optional(),
    retell_llm_dynamic_variables: dynamicVariables().optional(),
    metadata: callMetadata().optional(),
    custom_sip_headers: customSipHeaders().optional(),
    idempotency_key: IdempotencyKey.optional(),
    agent_override: agentOverride().optional(),
  }),
);
export type CreatePhoneCallInput = z.infer<typeof CreatePhoneCallBody>;

export const CreateWebCallBody = lazySchema(() =>
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

export const RegisterPhoneCallBody = lazySchema(() =>
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

export const UpdateCallBody = lazySchema(() =>
  z.object({
    metadata: callMetadata().optional(),
    data_storage_setting: z.enum(DATA_STORAGE_SETTINGS).optional(),
    custom_attributes: z.record(z.string().min(1).max(256), z.union([z.string().max(10_000), z.number(), z.boolean()])).optional(),
    opt_in_signed_url: z.boolean().optional(),
  }),
);
export type UpdateCallInput = z.infer<typeof UpdateCallBody>;

/*
 * list-calls filters (retell-sdk's CallListParams.FilterCriteria). Each field takes
 * retell-sdk's shape (`{op, type, value}`) or a plain form: a value or an array of values
 * (any of them), `{lower_threshold, upper_threshold}` for numbers, and `{key: value}` maps
 * for the keyed filters (metadata, dynamic variables, custom analysis data, custom
 * attributes). Plain values become arrays; the SDK's objects are kept as they are, and
 * shared/calls/listing.ts turns either into conditions. An unknown key is a 400 naming it.
 */

/** A filter value in the plain form (a value or values) becomes an array. */
const oneOrMany = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1).max(100)]).transform((v) => (Array.isArray(v) ? v : [v]));

const STRING_OPS = ['eq', 'ne', 'sw', 'ew', 'co'] as const;
const NUMBER_OPS = ['eq', 'ne', 'gt', 'ge', 'lt', 'le'] as const;
const keyName = () => z.string().min(1).max(256);

const stringFilter = (value: z.ZodType<string> = z.string().max(1024)) => z.object({ op: z.enum(STRING_OPS), type: z.literal('string'), value });
const enumFilter = <T extends z.ZodType<string>>(item: T) =>
  z.object({ op: z.literal('in'), type: z.literal('enum'), value: z.array(item).min(1).max(100) });
const booleanFilter = () => z.object({ op: z.literal('eq'), type: z.literal('boolean'), value: z.boolean() });
const numberFilter = () => z.object({ op: z.enum(NUMBER_OPS), type: z.literal('number'), value: z.number().finite() });
const rangeFilter = () =>
  z.object({
    op: z.literal('bt'),
    type: z.literal('range'),
    value: z
      .tuple([z.number().finite(), z.number().finite()])
      .refine(([low, high]) => low <= high, 'Must be [lower_bound, upper_bound] with lower_bound <= upper_bound'),
  });
const presentFilter = () => z.object({ op: z.enum(['pr', 'np']), type: z.literal('present') });
/** The plain form of a number filter (what list-calls took first). */
const thresholds = () =>
  z
    .object({ lower_threshold: z.number().finite().optional(), upper_threshold: z.number().finite().optional() })
    .strict();

const enumField = <T extends readonly [string, ...string[]]>(values: T) => z.union([enumFilter(z.enum(values)), oneOrMany(z.enum(values))]);
const stringField = (max = 1024) => z.union([stringFilter(z.string().max(max)), oneOrMany(z.string().max(max))]);
const booleanField = () => z.union([booleanFilter(), oneOrMany(z.boolean())]);
const numberField = () => z.union([numberFilter(), rangeFilter(), thresholds(), z.number().finite().transform((value) => ({ op: 'eq' as const, type: 'number' as const, value }))]);

/** One condition on a key of an open-ended map (retell-sdk: key optional in the type, required here). */
const keyedFilter = () =>
  z.union([
    stringFilter().extend({ key: keyName() }),
    numberFilter().extend({ key: keyName() }),
    booleanFilter().extend({ key: keyName() }),
    rangeFilter().extend({ key: keyName() }),
    enumFilter(z.string().max(1024)).extend({ key: keyName() }),
    presentFilter().extend({ key: keyName() }),
  ]);
export type KeyedFilter = z.infer<ReturnType<typeof keyedFilter>>;

/** retell-sdk's array of keyed conditions, or `{key: value}` (equal; an array: any of them). */
const keyedField = () =>
  z.union([
    z.array(keyedFilter()).min(1).max(50),
    z
      .record(keyName(), z.union([z.string().max(1024), z.number().finite(), z.boolean(), z.array(z.union([z.string().max(1024), z.number().finite(), z.boolean()])).min(1).max(100)]))
      .refine((map) => Object.keys(map).length >= 1 && Object.keys(map).length <= 50, 'Must have 1 to 50 keys')
      .transform((map): KeyedFilter[] =>
        Object.entries(map).map(([key, value]) =>
          Array.isArray(value)
            ? { key, op: 'in', type: 'enum', value: value.map(String) }
            : typeof value === 'number'
              ? { key, op: 'eq', type: 'number', value }
              : typeof value === 'boolean'
                ? { key, op: 'eq', type: 'boolean', value }
                : { key, op: 'eq', type: 'string', value },
        ),
      ),
  ]);

const toolCallFilter = () =>
  z
    .object({
      name: z.string().min(1).max(256).optional(),
      type: z.string().min(1).max(64).optional(),
      success: z.union([booleanFilter(), z.boolean()]).optional(),
      latency_ms: z.union([numberFilter(), rangeFilter(), thresholds()]).optional(),
    })
    .strict();

const agentFilter = () =>
  z.object({
    agent_id: z.string().min(1).max(64),
    version: z.array(z.number().int().min(0).max(999_999_999)).max(100).optional(),
  });

export const CallFilter = () =>
  z
    .object({
      agent: z.union([z.array(agentFilter()).min(1).max(100), agentFilter().transform((agent) => [agent])]).optional(),
      agent_id: stringField(64).optional(),
      agent_tag: z.union([enumFilter(z.string().min(1).max(64)), oneOrMany(z.string().min(1).max(64))]).optional(),
      batch_call_id: stringField(64).optional(),
      call_id: z.union([stringFilter(z.string().max(128)), enumFilter(z.string().max(128)), oneOrMany(z.string().max(128))]).optional(),
      call_status: enumField(CALL_STATUSES).optional(),
      call_successful: booleanField().optional(),
      call_type: enumField(['web_call', 'phone_call']).optional(),
      combined_cost: numberField().optional(),
      custom_analysis_data: keyedField().optional(),
      custom_attributes: keyedField().optional(),
      data_storage_setting: enumField(DATA_STORAGE_SETTINGS).optional(),
      direction: enumField(['inbound', 'outbound']).optional(),
      disconnection_reason: enumField(DISCONNECTION_REASONS).optional(),
      duration_ms: numberField().optional(),
      dynamic_variables: keyedField().optional(),
      e2e_latency_p50: numberField().optional(),
      end_timestamp: numberField().optional(),
      from_number: stringField(32).optional(),
      in_voicemail: booleanField().optional(),
      metadata: keyedField().optional(),
      start_timestamp: numberField().optional(),
      to_number: stringField(32).optional(),
      tool_calls: z.array(toolCallFilter()).min(1).max(20).optional(),
      user_sentiment: enumField(['Negative', 'Positive', 'Neutral', 'Unknown']).optional(),
    })
    // A filter this API does not know would be silently ignored and answer calls the caller excluded.
    .strict();
export type CallFilter = z.infer<ReturnType<typeof CallFilter>>;

/** Most calls `skip` may pass over: each is read from the index. */
const MAX_LIST_SKIP = 10_000;

export const ListCallsBody = lazySchema(() =>
  z
    .object({
      filter_criteria: CallFilter().optional(),
      limit: z.number().int().min(1).max(1000).default(50),
      sort_order: z.enum(['ascending', 'descending']).default('descending'),
      pagination_key: z.string().min(1).max(128).optional(),
      /** retell-sdk's: that many matching calls are passed over before the page (after pagination_key). */
      skip: z.number().int().min(0).max(MAX_LIST_SKIP).optional(),
      include_total: z.boolean().optional(),
    })
    .default({ limit: 50, sort_order: 'descending' }),
);
export type ListCallsInput = z.infer<typeof ListCallsBody>;

/** Any call ID shape is looked up (a well-formed ID of no call is 404, as retell-sdk's examples expect), within reason. */
export const callIdParams = lazySchema(() => z.object({ call_id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'Must be a call ID') }));

/** The call object (retell-sdk PhoneCallResponse / WebCallResponse); open-ended parts are described loosely. */
export const Call = lazySchema(() =>
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
    llm_fallback: llmFallback().optional(),
    concurrency_burst: z.boolean().optional(),
    data_storage_setting: z.enum(DATA_STORAGE_SETTINGS).nullable().optional(),
    batch_call_id: z.string().optional(),
    // A web call read by get-call, update-call or rerun-call-analysis: a fresh token to its room and its expiry (calls.ts, withWebCallToken).
    access_token: z.string().optional(),
    expires_at: epochMs().optional(),
  }),
);
export type CallView = z.infer<typeof Call>;

const iceServer = () => z.object({ urls: z.union([z.string(), z.array(z.string())]), username: z.string().optional(), credential: z.string().optional() });

export const WebCall = lazySchema(() =>
  z.looseObject({
    ...Call.shape,
    access_token: z.string(),
    livekit_url: z.string(),
    expires_at: epochMs(),
    transport: z.literal('livekit'),
    ice_servers: z.array(iceServer()),
  }),
);

/** retell-sdk's `call.list` page (its User-Agent asks for it; everyone else gets the spec's array). */
const CallPage = lazySchema(() =>
  z.object({ items: z.array(Call), has_more: z.boolean(), pagination_key: z.string().optional(), total: z.number().int().optional() }),
);

export const CallList = lazySchema(() => z.union([z.array(Call), CallPage]));

export const BackfillCallAnalysisBody = lazySchema(() =>
  z
    .object({
      call_ids: z.array(z.string().regex(idPattern('call'), 'Must be a call ID')).min(1).max(1000).optional(),
      start_timestamp: epochMs().optional(),
      end_timestamp: epochMs().optional(),
      agent_id: z.string().max(64).optional(),
    })
    .default({}),
);

export const BackfillAccepted = lazySchema(() => z.object({ status: z.literal('accepted'), queued: z.number().int() }));

export const SandboxInboundBody = lazySchema(() =>
  z.object({
    from_number: z.string().min(1).max(32),
    to_number: z.string().min(1).max(32),
    sip_headers: z.record(z.string().min(1).max(128), z.string().max(1024)).optional(),
  }),
);

/** `POST /internal/calls/{call_id}/kb-retrieve`: the LiveKit worker's retrieval (worker-retrieval.ts). */
export const WorkerRetrievalBody = lazySchema(() =>
  z
    .object({ query: z.string().trim().min(1, 'Must not be empty').max(4000, 'Must be at most 4000 characters') })
    .strict(),
);
export type WorkerRetrievalBody = z.output<typeof WorkerRetrievalBody>;

export const WorkerRetrievalView = lazySchema(() =>
  z.object({
    call_id: z.string(),
    retrieval_id: z.string().nullable(),
    knowledge_base_ids: z.array(z.string()),
    chunks: z.array(
      z.object({
        knowledge_base_id: z.string(),
        source_id: z.string(),
        chunk_id: z.string(),
        content: z.string(),
        score: z.number(),
        lexical_score: z.number(),
        vector_score: z.number(),
      }),
    ),
    prompt: z.string(),
  }),
);

// ── Concurrency (GET /get-concurrency, GET /get-concurrency-settings, PATCH /update-concurrency-settings: concurrency.ts) ──

/** The most concurrent calls a workspace may have (spec Limits): included and purchased together. */
export const MAX_CONCURRENCY_LIMIT = 1000;

/** PATCH /update-concurrency-settings body; `reserved_inbound_concurrency` above the limit is a 400 (checked against the limit). */
export const UpdateConcurrencySettingsBody = lazySchema(() =>
  z.object({
    reserved_inbound_concurrency: z.number().int().min(0).max(MAX_CONCURRENCY_LIMIT).optional(),
    burst_enabled: z.boolean().optional(),
  }),
);
export type UpdateConcurrencySettingsInput = z.infer<typeof UpdateConcurrencySettingsBody>;

/** GET /get-concurrency: the spec's shape, plus retell-sdk's purchase fields. */
export const ConcurrencyView = lazySchema(() =>
  z.object({
    current_concurrency: z.number().int(),
    concurrency_limit: z.number().int(),
    base_concurrency: z.number().int(),
    purchased_concurrency: z.number().int(),
    reserved_inbound_concurrency: z.number().int(),
    concurrency_burst_enabled: z.boolean(),
    /** min(3 × limit, limit + 300) with burst on; 0 with burst off (retell-sdk's documented value). */
    concurrency_burst_limit: z.number().int(),
    concurrency_purchase_limit: z.number().int(),
    remaining_purchase_limit: z.number().int(),
  }),
);
export type Concurrency = z.infer<typeof ConcurrencyView>;

/** GET /get-concurrency-settings and the answer of PATCH /update-concurrency-settings. */
export const ConcurrencySettingsView = lazySchema(() =>
  z.object({
    reserved_inbound_concurrency: z.number().int(),
    burst_enabled: z.boolean(),
    concurrency_limit: z.number().int(),
  }),
);
export type ConcurrencySettings = z.infer<typeof ConcurrencySettingsView>;
