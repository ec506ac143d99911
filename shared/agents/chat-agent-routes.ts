import * as z from 'zod';
import { defineRoutes } from '../platform/http/route.ts';
import { epochMs, idOf, queryInt, versionQuery } from '../platform/http/schemas.ts';
import { llmModel } from './models.ts';
import { publishVersionBody, responseEngine, sharedAgentFields, webhookEvents } from './agent-fields.ts';

/*
 * Chat agents and their versions (scope `agents`). The field set is the compatible API's
 * (retell-sdk ChatAgentCreateParams); the fields voice agents also carry are validated by
 * the same schemas (agent-fields.ts). Chat webhooks have no timeout field (chat events use
 * the workspace timeout), so a `webhook_timeout_ms` in a body is dropped like any unknown
 * field. Schemas are built on first use (z.lazy).
 */
export const CHAT_AGENT_WEBHOOK_EVENTS = ['chat_started', 'chat_ended', 'chat_analyzed'] as const;
export const DEFAULT_CHAT_AGENT_WEBHOOK_EVENTS = CHAT_AGENT_WEBHOOK_EVENTS;

/** Behaviour presets a chat agent can toggle (voice-only presets are not available to chat). */
export const CHAT_HANDBOOK_PRESETS = ['ai_disclosure', 'default_personality', 'high_empathy', 'scope_boundaries'] as const;

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
  };
};

/** Every chat agent field, optional: what an update may send (create requires the engine). */
const optionalChatAgentFields = () => z.object(chatAgentFields()).partial().shape;

export const CreateChatAgentBody = z.lazy(() => z.object({ ...optionalChatAgentFields(), response_engine: responseEngine() }));
export type CreateChatAgentInput = z.infer<typeof CreateChatAgentBody>;

export const UpdateChatAgentBody = z.lazy(() => z.object(optionalChatAgentFields()));
export type UpdateChatAgentInput = z.infer<typeof UpdateChatAgentBody>;

export const ChatAgent = z.lazy(() =>
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

export const ChatAgentListItem = z.lazy(() =>
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

const chatAgentId = () => idOf('chatAgent', 'a chat agent ID');
const versionNumber = () => z.string().regex(/^[0-9]{1,9}$/, 'Must be a version number').transform(Number);
const chatAgentIdParams = z.lazy(() => z.object({ chat_agent_id: chatAgentId() }));
const chatAgentVersionParams = z.lazy(() => z.object({ chat_agent_id: chatAgentId(), version: versionNumber() }));
const versionQueryParams = z.lazy(versionQuery);

export const chatAgentRoutes = defineRoutes({ domain: 'chat-agents', access: 'agents' }, {
  createChatAgent: {
    method: 'POST', path: '/create-chat-agent', status: 201,
    summary: 'Create a chat agent (version 0, a draft)', body: CreateChatAgentBody, response: ChatAgent,
  },
  getChatAgent: {
    method: 'GET', path: '/get-chat-agent/{chat_agent_id}', status: 200,
    summary: 'Get a chat agent: the latest version, or ?version=',
    params: chatAgentIdParams, query: versionQueryParams, response: ChatAgent,
  },
  listChatAgents: {
    method: 'GET', path: '/list-chat-agents', status: 200,
    summary: 'List chat agents (latest versions) a page at a time, newest first',
    query: z.lazy(() =>
      z.object({
        limit: queryInt({ min: 1, max: 1000, default: 1000 }),
        pagination_key: chatAgentId().optional(),
        sort_order: z.enum(['ascending', 'descending']).default('descending'),
      }),
    ),
    response: z.lazy(() =>
      z.object({ has_more: z.boolean(), items: z.array(ChatAgentListItem), pagination_key: z.string().optional() }),
    ),
  },
  updateChatAgent: {
    method: 'PATCH', path: '/update-chat-agent/{chat_agent_id}', status: 200,
    summary: 'Update the latest draft (a published latest version gets a new draft), or the draft ?version=',
    params: chatAgentIdParams, query: versionQueryParams, body: UpdateChatAgentBody, response: ChatAgent,
  },
  deleteChatAgent: {
    method: 'DELETE', path: '/delete-chat-agent/{chat_agent_id}', status: 204,
    summary: 'Delete a chat agent with all its versions', params: chatAgentIdParams,
  },
  publishChatAgent: {
    method: 'POST', path: '/publish-chat-agent/{chat_agent_id}', status: 200,
    summary: 'Publish a draft version (default: the latest) in place, with its response engine version',
    params: chatAgentIdParams,
    body: z.lazy(publishVersionBody),
    response: ChatAgent,
  },
  getChatAgentVersions: {
    method: 'GET', path: '/get-chat-agent-versions/{chat_agent_id}', status: 200,
    summary: 'Every version of a chat agent, in full, oldest first',
    params: chatAgentIdParams, response: z.lazy(() => z.array(ChatAgent)),
  },
  getChatAgentVersion: {
    method: 'GET', path: '/get-chat-agent-version/{chat_agent_id}/{version}', 
    status: 200, summary: 'One version of a chat agent', params: chatAgentVersionParams, response: ChatAgent,
  },
  restoreChatAgentVersion: {
    method: 'POST', path: '/restore-chat-agent-version/{chat_agent_id}/{version}', 
    status: 201,
    summary: 'Make a new latest draft with the configuration of an earlier version',
    params: chatAgentVersionParams, response: ChatAgent,
  },
  convertAgentToChat: {
    method: 'POST', path: '/convert-agent-to-chat/{agent_id}', status: 201,
    summary: 'Create a chat agent from a voice agent’s latest version (or ?version=), with the same response engine',
    params: z.lazy(() => z.object({ agent_id: idOf('agent', 'an agent ID') })),
    query: versionQueryParams, response: ChatAgent,
  },
});
