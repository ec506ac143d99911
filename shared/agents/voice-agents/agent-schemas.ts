import * as z from 'zod';
import { epochMs, idOf, lazySchema, queryInt, versionQuery } from '../../platform/http/schemas.ts';
import { llmModel } from '../llms/models.ts';
import { config, responseEngine, sharedAgentFields, webhookEvents } from '../versions/agent-fields.ts';
import { tagName } from './tag-name.ts';

export { LANGUAGES, RETELL_LLM_ENGINE,  } from '../versions/agent-fields.ts';

/*
 * Voice agents, their versions and environment tags. The field set is the compatible
 * API's (retell-sdk AgentCreateParams); the fields Parley acts on are checked strictly,
 * nested configuration objects keep what the client sends. Schemas are built on first
 * use (z.lazy).
 */
const AGENT_WEBHOOK_EVENTS = [
  'call_started',
  'call_ended',
  'call_analyzed',
  'transcript_updated',
  'transfer_started',
  'transfer_bridged',
  'transfer_cancelled',
  'transfer_ended',
] as const;
export const DEFAULT_AGENT_WEBHOOK_EVENTS = ['call_started', 'call_ended', 'call_analyzed'] as const;

const strings = (max: number) => z.array(z.string().max(200)).max(max);

/** Fields an agent version carries, shared by create and update (update makes every one optional). */
const agentFields = () => {
  // The fields chat agents share, in this table's order (which the OpenAPI document keeps).
  const {
    response_engine, agent_name, language, timezone, webhook_url, data_storage_setting, data_storage_retention_days,
    opt_in_signed_url, signed_url_expiration_ms, pii_config, guardrail_config, version_title, imported_from,
  } = sharedAgentFields();
  return {
    response_engine,
    voice_id: z.string().min(1).max(200),
    agent_name,
    language,
    timezone,
    responsiveness: z.number().min(0).max(1),
    interruption_sensitivity: z.number().min(0).max(1),
    stt_mode: z.enum(['fast', 'accurate', 'custom']),
    denoising_mode: z.enum(['no-denoise', 'noise-cancellation', 'noise-and-background-speech-cancellation']),
    end_call_after_silence_ms: z.number().int().min(10_000).max(3_600_000),
    max_call_duration_ms: z.number().int().min(60_000).max(7_200_000),
    webhook_url,
    webhook_events: webhookEvents(AGENT_WEBHOOK_EVENTS),
    webhook_timeout_ms: z.number().int().min(1000).max(60_000).nullable(),
    post_call_analysis_model: llmModel().nullable(),
    post_call_analysis_data: z.array(z.looseObject({ name: z.string().max(200).optional() })).max(100).nullable(),
    voice_model: z.string().max(64).nullable(),
    voice_speed: z.number().min(0.5).max(2),
    voice_temperature: z.number().min(0).max(2),
    voice_emotion: z.enum(['calm', 'sympathetic', 'happy', 'sad', 'angry', 'fearful', 'surprised']).nullable(),
    volume: z.number().min(0).max(2),
    fallback_voice_ids: strings(10).nullable(),
    ambient_sound: z
      .enum(['coffee-shop', 'convention-hall', 'summer-outdoor', 'mountain-outdoor', 'static-noise', 'call-center'])
      .nullable(),
    ambient_sound_volume: z.number().min(0).max(2),
    enable_backchannel: z.boolean(),
    backchannel_frequency: z.number().min(0).max(1),
    backchannel_words: strings(50).nullable(),
    begin_message_delay_ms: z.number().int().min(0).max(5000),
    boosted_keywords: strings(100).nullable(),
    pronunciation_dictionary: z.array(config()).max(200).nullable(),
    reminder_trigger_ms: z.number().int().min(0),
    reminder_max_count: z.number().int().min(0).max(100),
    ring_duration_ms: z.number().int().min(5_000).max(300_000),
    allow_user_dtmf: z.boolean(),
    allow_dtmf_interruption: z.boolean(),
    user_dtmf_options: config().nullable(),
    enable_dynamic_responsiveness: z.boolean(),
    enable_dynamic_voice_speed: z.boolean(),
    enable_expressive_mode: z.boolean(),
    expressive_emotion_tags: strings(20),
    expressive_mode_prompt: z.string().max(10_000).nullable(),
    vocab_specialization: z.enum(['general', 'medical']),
    data_storage_setting,
    data_storage_retention_days,
    opt_in_signed_url,
    signed_url_expiration_ms,
    pii_config,
    guardrail_config,
    handbook_config: config(),
    call_screening_option: config().nullable(),
    ivr_option: config().nullable(),
    voicemail_option: config().nullable(),
    custom_stt_config: config().nullable(),
    version_title,
    version_description: z.string().max(2000).nullable(),
    imported_from,
  };
};

/** Every agent field, optional: what an update may send (create requires the engine). */
const optionalAgentFields = () => z.object(agentFields()).partial().shape;

export const CreateAgentBody = lazySchema(() => z.object({ ...optionalAgentFields(), response_engine: responseEngine() }));
export type CreateAgentInput = z.infer<typeof CreateAgentBody>;

export const UpdateAgentBody = lazySchema(() => z.object(optionalAgentFields()));
export type UpdateAgentInput = z.infer<typeof UpdateAgentBody>;

export const Agent = lazySchema(() =>
  z.looseObject({
    agent_id: z.string(),
    version: z.number().int(),
    is_published: z.boolean(),
    last_modification_timestamp: epochMs(),
    base_version: z.number().int().optional(),
    ...optionalAgentFields(),
  }),
);
export type Agent = z.infer<typeof Agent>;

export const AgentVersionSummary = lazySchema(() =>
  z.object({
    version: z.number().int(),
    is_published: z.boolean(),
    last_modification_timestamp: epochMs(),
    base_version: z.number().int().optional(),
    version_title: z.string().optional(),
    version_description: z.string().optional(),
  }),
);
export type AgentVersionSummary = z.infer<typeof AgentVersionSummary>;

;

const tagVariables = () => z.record(z.string().min(1).max(128), z.string().max(10_000)).refine((v) => Object.keys(v).length <= 100, 'Must have at most 100 variables');

export const AgentTag = lazySchema(() =>
  z.object({
    name: z.string(),
    version: z.number().int(),
    variables: z.record(z.string(), z.string()),
    created_timestamp: epochMs(),
    last_modification_timestamp: epochMs(),
  }),
);
export type AgentTag = z.infer<typeof AgentTag>;

export const CreateAgentTagBody = lazySchema(() =>
  z.object({ name: tagName(), version: z.number().int().min(0), variables: tagVariables().default({}) }),
);
export const UpdateAgentTagBody = lazySchema(() =>
  z.object({ version: z.number().int().min(0).optional(), variables: tagVariables().optional() }),
);

export const agentIdParams = lazySchema(() => z.object({ agent_id: idOf('agent', 'an agent ID') }));
/** A voice or chat agent ID: the compatible client uses some paths for both. */
const anyAgentId = () =>
  z
    .string()
    .regex(/^(?:chat_)?agent_[0-9a-f]{24}$/, 'Must be an agent or chat agent ID (agent_ or chat_agent_ followed by 24 hex characters)');
/** Paths the compatible client uses for voice and chat agents alike. */
export const anyAgentIdParams = lazySchema(() => z.object({ agent_id: anyAgentId() }));
export const agentVersionParams = lazySchema(() =>
  z.object({
    agent_id: idOf('agent', 'an agent ID'),
    version: z.string().regex(/^[0-9]{1,9}$/, 'Must be a version number').transform(Number),
  }),
);
export const agentTagParams = lazySchema(() => z.object({ agent_id: idOf('agent', 'an agent ID'), name: tagName() }));
export const versionQueryParams = lazySchema(versionQuery);
export const listQuery = () =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 1000 }),
    pagination_key: idOf('agent', 'an agent ID').optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  });
/** `POST /v2/list-agents` lists voice and chat agents together: its pagination key is either kind's ID. */
export const mixedListQuery = () =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 1000 }),
    pagination_key: anyAgentId().optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  });
export const versionListQuery = lazySchema(() =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 100 }),
    pagination_key: z.string().regex(/^[0-9]{1,9}$/, 'Must be a version number').transform(Number).optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  }),
);
