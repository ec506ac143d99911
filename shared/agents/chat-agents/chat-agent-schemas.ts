import * as z from 'zod';
import { epochMs, idOf, lazySchema, versionQuery, versionReferenceQuery } from '../../platform/http/schemas.ts';
import { llmModel } from '../llms/models.ts';
import { responseEngine, sharedAgentFields, webhookEvents } from '../versions/agent-fields.ts';

/*
 * Chat agents and their versions (scope `agents`). The field set is the compatible API's
 * (retell-sdk ChatAgentCreateParams); the fields voice agents also carry are validated by
 * the same schemas (agent-fields.ts). Chat webhooks have no timeout field (chat events use
 * the workspace timeout), so a `webhook_timeout_ms` in a body is dropped like any unknown
 * field. Schemas are built on first use (z.lazy).
 */
const CHAT_AGENT_WEBHOOK_EVENTS = ['chat_started', 'chat_ended', 'chat_analyzed'] as const;
export const DEFAULT_CHAT_AGENT_WEBHOOK_EVENTS = CHAT_AGENT_WEBHOOK_EVENTS;

/** Behaviour presets a chat agent can toggle (voice-only presets are not available to chat). */
const CHAT_HANDBOOK_PRESETS = ['ai_disclosure', 'default_personality', 'high_empathy', 'scope_boundaries'] as const;

const handbookConfig = () =>
  z.object(Object.fromEntries(CHAT_HANDBOOK_PRESETS.map((name) => [name, z.boolean().optional()])) as {
    [K in (typeof CHAT_HANDBOOK_PRESETS)[number]]: z.ZodOptional<z.ZodBoolean>;
  });

/** Fields a chat agent version carries, shared by create and update (update makes every one optional). */
const chatAgentFields = () => {
  const shared = sharedAgentFields();
  return {
    response_engine: shared.response_engine,
    agent_name: shared.agent_name,
    auto_close_message: z.string().max(2000).nullable(),
    data_storage_retention_days: shared.data_storage_retention_days,
    data_storage_setting: shared.data_storage_setting.nullable(),
    end_chat_after_silence_ms: z.number().int().min(120_000).max(259_200_000).nullable(),
    guardrail_config: shared.guardrail_config,
    handbook_config: handbookConfig(),
    language: shared.language,
    opt_in_signed_url: shared.opt_in_signed_url,
    pii_config: shared.pii_config,
    post_chat_analysis_data: z.array(z.looseObject({ name: z.string().max(200).optional() })).max(100).nullable(),
    post_chat_analysis_model: llmModel().nullable(),
    signed_url_expiration_ms: shared.signed_url_expiration_ms,
    timezone: shared.timezone,
    version_title: shared.version_title,
    webhook_url: shared.webhook_url,
    webhook_events: webhookEvents(CHAT_AGENT_WEBHOOK_EVENTS),
    imported_from: shared.imported_from,
  };
};

/** Every chat agent field, optional: what an update may send (create requires the engine). */
const optionalChatAgentFields = () => z.object(chatAgentFields()).partial().shape;

export const CreateChatAgentBody = lazySchema(() => z.object({ ...optionalChatAgentFields(), response_engine: responseEngine() }));
export type CreateChatAgentInput = z.infer<typeof CreateChatAgentBody>;

export const UpdateChatAgentBody = lazySchema(() => z.object(optionalChatAgentFields()));
export type UpdateChatAgentInput = z.infer<typeof UpdateChatAgentBody>;

export const ChatAgent = lazySchema(() =>
  z.looseObject({
    agent_id: z.string(),
    version: z.number().int(),
    is_published: z.boolean(),
    last_modification_timestamp: epochMs(),
    base_version: z.number().int().optional(),
    ...optionalChatAgentFields(),
    version_description: z.string().optional(),
  }),
);
export type ChatAgent = z.infer<typeof ChatAgent>;

export const ChatAgentListItem = lazySchema(() =>
  z.object({
    agent_id: z.string(),
    agent_name: z.string(),
    channel: z.literal('chat'),
    version: z.number().int(),
    is_published: z.boolean(),
    last_modification_timestamp: epochMs(),
    user_modified_timestamp: epochMs(),
    tags: z.record(z.string(), z.object({ version: z.number().int().optional(), dynamic_variables: z.record(z.string(), z.string()).optional() })),
  }),
);
export type ChatAgentListItem = z.infer<typeof ChatAgentListItem>;

export const chatAgentId = () => idOf('chatAgent', 'a chat agent ID');
const versionNumber = () => z.string().regex(/^[0-9]{1,9}$/, 'Must be a version number').transform(Number);
export const chatAgentIdParams = lazySchema(() => z.object({ chat_agent_id: chatAgentId() }));
export const chatAgentVersionParams = lazySchema(() => z.object({ chat_agent_id: chatAgentId(), version: versionNumber() }));
/** A version by reference in the path: a number, `latest` or `latest_published`. */
export const chatAgentVersionReferenceParams = lazySchema(() =>
  z.object({ chat_agent_id: chatAgentId(), version: versionReferenceQuery() }),
);
export const versionQueryParams = lazySchema(versionQuery);
