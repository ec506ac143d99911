import { defineRoutes } from '../../platform/http/route.ts';
import * as z from 'zod';
import { idOf, lazySchema, queryInt } from '../../platform/http/schemas.ts';
import { publishVersionBody } from '../versions/agent-fields.ts';
import { ChatAgent, chatAgentId, chatAgentIdParams, ChatAgentListItem, chatAgentVersionParams, chatAgentVersionReferenceParams, CreateChatAgentBody, UpdateChatAgentBody, versionQueryParams } from './chat-agent-schemas.ts';

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
    query: lazySchema(() =>
      z.object({
        limit: queryInt({ min: 1, max: 1000, default: 1000 }),
        pagination_key: chatAgentId().optional(),
        sort_order: z.enum(['ascending', 'descending']).default('descending'),
      }),
    ),
    response: lazySchema(() =>
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
    body: lazySchema(publishVersionBody),
    response: ChatAgent,
  },
  getChatAgentVersions: {
    method: 'GET', path: '/get-chat-agent-versions/{chat_agent_id}', status: 200,
    summary: 'Every version of a chat agent, in full, oldest first',
    params: chatAgentIdParams, response: lazySchema(() => z.array(ChatAgent)),
  },
  getChatAgentVersion: {
    method: 'GET', path: '/get-chat-agent-version/{chat_agent_id}/{version}', 
    status: 200, summary: 'One version of a chat agent (a number, latest or latest_published)', params: chatAgentVersionReferenceParams, response: ChatAgent,
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
    params: lazySchema(() => z.object({ agent_id: idOf('agent', 'an agent ID') })),
    query: versionQueryParams, response: ChatAgent,
  },
});
