import * as z from 'zod';
import { defineRoutes } from '../platform/http/route.ts';
import { epochMs, idOf, queryInt, requiredQueryInt, versionQuery } from '../platform/http/schemas.ts';
import { llmModel } from './models.ts';
import { config, publishVersionBody, responseEngine, sharedAgentFields, webhookEvents } from './agent-fields.ts';

export { LANGUAGES, RETELL_LLM_ENGINE, type ResponseEngine } from './agent-fields.ts';

/*
 * Voice agents, their versions and environment tags. The field set is the compatible
 * API's (retell-sdk AgentCreateParams); the fields Parley acts on are checked strictly,
 * nested configuration objects keep what the client sends. Schemas are built on first
 * use (z.lazy).
 */
export const AGENT_WEBHOOK_EVENTS = [
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
    opt_in_signed_url, signed_url_expiration_ms, pii_config, guardrail_config, version_title,
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
  };
};

/** Every agent field, optional: what an update may send (create requires the engine). */
const optionalAgentFields = () => z.object(agentFields()).partial().shape;

export const CreateAgentBody = z.lazy(() => z.object({ ...optionalAgentFields(), response_engine: responseEngine() }));
export type CreateAgentInput = z.infer<typeof CreateAgentBody>;

export const UpdateAgentBody = z.lazy(() => z.object(optionalAgentFields()));
export type UpdateAgentInput = z.infer<typeof UpdateAgentBody>;

export const Agent = z.lazy(() =>
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

export const AgentVersionSummary = z.lazy(() =>
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

const TAG_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const tagName = () =>
  z
    .string()
    .regex(TAG_NAME, 'Must be 1 to 64 letters, digits, "_", "-" or ".", starting with a letter or digit')
    .refine((name) => !/^\d+$/.test(name), 'Must not be a number (numbers name versions)')
    .refine((name) => name !== 'latest' && name !== 'latest_published', 'Must not be "latest" or "latest_published"');

const tagVariables = () => z.record(z.string().min(1).max(128), z.string().max(10_000)).refine((v) => Object.keys(v).length <= 100, 'Must have at most 100 variables');

export const AgentTag = z.lazy(() =>
  z.object({
    name: z.string(),
    version: z.number().int(),
    variables: z.record(z.string(), z.string()),
    created_timestamp: epochMs(),
    last_modification_timestamp: epochMs(),
  }),
);
export type AgentTag = z.infer<typeof AgentTag>;

export const CreateAgentTagBody = z.lazy(() =>
  z.object({ name: tagName(), version: z.number().int().min(0), variables: tagVariables().default({}) }),
);
export const UpdateAgentTagBody = z.lazy(() =>
  z.object({ version: z.number().int().min(0).optional(), variables: tagVariables().optional() }),
);

const agentIdParams = z.lazy(() => z.object({ agent_id: idOf('agent', 'an agent ID') }));
/** Paths the compatible client uses for voice and chat agents alike. */
const anyAgentIdParams = z.lazy(() =>
  z.object({
    agent_id: z
      .string()
      .regex(/^(?:chat_)?agent_[0-9a-f]{24}$/, 'Must be an agent or chat agent ID (agent_ or chat_agent_ followed by 24 hex characters)'),
  }),
);
const agentVersionParams = z.lazy(() =>
  z.object({
    agent_id: idOf('agent', 'an agent ID'),
    version: z.string().regex(/^[0-9]{1,9}$/, 'Must be a version number').transform(Number),
  }),
);
const agentTagParams = z.lazy(() => z.object({ agent_id: idOf('agent', 'an agent ID'), name: tagName() }));
const versionQueryParams = z.lazy(versionQuery);
const listQuery = () =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 1000 }),
    pagination_key: idOf('agent', 'an agent ID').optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  });
const versionListQuery = z.lazy(() =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 100 }),
    pagination_key: z.string().regex(/^[0-9]{1,9}$/, 'Must be a version number').transform(Number).optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  }),
);

export const agentRoutes = defineRoutes({ domain: 'agents', access: 'agents' }, {
  createAgent: {
    method: 'POST', path: '/create-agent', status: 201,
    summary: 'Create a voice agent (version 0, a draft)', body: CreateAgentBody, response: Agent,
  },
  getAgent: {
    method: 'GET', path: '/get-agent/{agent_id}', status: 200,
    summary: 'Get an agent: the latest version, or ?version=', params: agentIdParams, query: versionQueryParams, response: Agent,
  },
  listAgents: {
    method: 'GET', path: '/v2/list-agents', aliases: [{ method: 'GET', path: '/list-agents' }],
    status: 200,
    summary: 'List agents (latest versions), newest first',
    query: z.lazy(listQuery), response: z.lazy(() => z.array(Agent)),
  },
  listAgentsPaged: {
    method: 'POST', path: '/v2/list-agents', status: 200,
    summary: 'List agents a page at a time with filters (the compatible client’s call)',
    query: z.lazy(listQuery),
    body: z.lazy(() =>
      z.object({
        filter_criteria: z
          .object({
            query: z.string().max(200).optional(),
            channel: z
              .object({ op: z.enum(['eq', 'ne', 'sw', 'ew', 'co']), type: z.literal('string'), value: z.enum(['voice', 'chat']) })
              .optional(),
          })
          .optional(),
      }),
    ),
  },
  updateAgent: {
    method: 'PATCH', path: '/update-agent/{agent_id}', status: 200,
    summary: 'Update the latest draft (a published latest version gets a new draft), or the draft ?version=',
    params: agentIdParams, query: versionQueryParams, body: UpdateAgentBody, response: Agent,
  },
  deleteAgent: {
    method: 'DELETE', path: '/delete-agent/{agent_id}', status: 204,
    summary: 'Delete an agent with all its versions and tags', params: agentIdParams,
  },
  publishAgentVersion: {
    method: 'POST', path: '/publish-agent-version/{agent_id}', status: 200,
    summary: 'Publish a draft version (default: the latest) of a voice or chat agent in place, with its response engine version',
    params: anyAgentIdParams,
    body: z.lazy(publishVersionBody),
    response: z.lazy(() => z.looseObject({ agent_id: z.string(), version: z.number().int(), is_published: z.boolean() })),
  },
  createAgentVersion: {
    method: 'POST', path: '/create-agent-version/{agent_id}', status: 201,
    summary: 'Create a new draft version of a voice or chat agent from a base version (default: the latest)',
    params: anyAgentIdParams,
    body: z.lazy(() => z.object({ base_version: z.number().int().min(0).optional() })),
    response: z.lazy(() => z.looseObject({ agent_id: z.string(), version: z.number().int(), is_published: z.boolean() })),
  },
  listAgentVersions: {
    method: 'GET', path: '/list-agent-versions/{agent_id}', status: 200,
    summary: 'List an agent’s versions a page at a time',
    params: agentIdParams, query: versionListQuery,
    response: z.lazy(() =>
      z.object({ has_more: z.boolean(), items: z.array(AgentVersionSummary), pagination_key: z.string().optional() }),
    ),
  },
  getAgentVersions: {
    method: 'GET', path: '/agent-versions/{agent_id}', aliases: [{ method: 'GET', path: '/get-agent-versions/{agent_id}' }],
    status: 200,
    summary: 'Every version of an agent, in full, oldest first',
    params: agentIdParams, response: z.lazy(() => z.array(Agent)),
  },
  describeAgentVersion: {
    method: 'PATCH', path: '/agent-versions/{agent_id}/{version}', status: 200,
    summary: 'Set a version’s title or description (any version)',
    params: agentVersionParams,
    body: z.lazy(() =>
      z.object({ version_title: z.string().max(200).nullable().optional(), version_description: z.string().max(2000).nullable().optional() }),
    ),
    response: Agent,
  },
  deleteAgentVersion: {
    method: 'DELETE', path: '/agent-versions/{agent_id}/{version}', status: 204,
    summary: 'Delete a draft version that is neither the latest nor named by a tag', params: agentVersionParams,
  },
  deleteAgentVersionByQuery: {
    method: 'DELETE', path: '/delete-agent-version/{agent_id}', status: 204,
    summary: 'Delete a draft version given as ?version= (the compatible client’s call)',
    params: anyAgentIdParams,
    query: z.lazy(() => z.object({ version: requiredQueryInt({ min: 0, max: 999_999_999 }) })),
  },
  compareAgentVersions: {
    method: 'GET', path: '/compare-agent-versions/{agent_id}', status: 200,
    summary: 'Field-level differences between two versions (?version_a=&version_b=)',
    params: agentIdParams,
    query: z.lazy(() =>
      z.object({
        version_a: requiredQueryInt({ min: 0, max: 999_999_999 }),
        version_b: requiredQueryInt({ min: 0, max: 999_999_999 }),
      }),
    ),
    response: z.lazy(() =>
      z.object({
        agent_id: z.string(),
        version_a: z.number().int(),
        version_b: z.number().int(),
        differences: z.array(z.object({ field: z.string(), version_a: z.unknown(), version_b: z.unknown() })),
      }),
    ),
  },
  resolveAgentVersion: {
    method: 'GET', path: '/resolve-agent-version/{agent_id}', status: 200,
    summary: 'Resolve a version reference (a number, latest, latest_published or a tag name) to one version',
    params: agentIdParams,
    query: z.lazy(() => z.object({ version: z.string().min(1).max(64).default('latest') })),
    response: z.lazy(() =>
      z.object({
        agent_id: z.string(),
        version: z.number().int(),
        is_published: z.boolean(),
        resolved_from: z.enum(['version', 'latest', 'latest_published', 'tag']),
        tag: z.string().optional(),
        variables: z.record(z.string(), z.string()).optional(),
      }),
    ),
  },
  listAgentTags: {
    method: 'GET', path: '/agents/{agent_id}/tags', status: 200,
    summary: 'Environment tags of an agent', params: agentIdParams, response: z.lazy(() => z.array(AgentTag)),
  },
  createAgentTag: {
    method: 'POST', path: '/agents/{agent_id}/tags', status: 201,
    summary: 'Name a version with an environment tag carrying variables',
    params: agentIdParams, body: CreateAgentTagBody, response: AgentTag,
  },
  updateAgentTag: {
    method: 'PATCH', path: '/agents/{agent_id}/tags/{name}', status: 200,
    summary: 'Point a tag at another version or change its variables',
    params: agentTagParams, body: UpdateAgentTagBody, response: AgentTag,
  },
  deleteAgentTag: {
    method: 'DELETE', path: '/agents/{agent_id}/tags/{name}', status: 204,
    summary: 'Delete an environment tag', params: agentTagParams,
  },
});
