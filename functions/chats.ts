import { domainHandler, MediaResponse } from '../shared/platform/http/handler.ts';
import { chatRoutes } from '../shared/chats/routes.ts';
import { smsRoutes } from '../shared/chats/sms/routes.ts';
import * as chats from '../shared/chats/index.ts';

/** Whether the request asks for server-sent events (`Accept: text/event-stream`). */
const wantsEventStream = (accept: string | undefined) => /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept ?? '');

const listQuery = (query: { limit?: number; sort_order?: 'ascending' | 'descending'; pagination_key?: string }) => ({
  limit: query.limit ?? 50,
  sort_order: query.sort_order ?? ('descending' as const),
  pagination_key: query.pagination_key,
});

export const handler = domainHandler({ ...chatRoutes, ...smsRoutes }, {
  createChat: async ({ principal, body }) => (await chats.startChat(principal.workspaceId, body)).chat,
  createChatCompletion: async ({ principal, body }) => ({
    messages: (await chats.completeChat(principal.workspaceId, body.chat_id, body.content)).messages,
  }),
  getChat: ({ principal, params }) => chats.getChat(principal.workspaceId, params.chat_id),
  listChats: ({ principal, query }) =>
    chats.listChats(
      principal.workspaceId,
      { limit: query.limit ?? 50, sort_order: query.sort_order ?? 'descending', pagination_key: query.pagination_key },
      { page: false },
    ) as never,
  listChatsPage: ({ principal, body }) => chats.listChats(principal.workspaceId, body, { page: true }) as never,
  updateChat: ({ principal, params, body }) => chats.updateChat(principal.workspaceId, params.chat_id, body),
  endChat: ({ principal, params }) => chats.endChat(principal.workspaceId, params.chat_id),
  deleteChat: ({ principal, params }) => chats.deleteChat(principal.workspaceId, params.chat_id),
  rerunChatAnalysis: ({ principal, params }) => chats.rerunChatAnalysis(principal.workspaceId, params.chat_id),
  agentPlaygroundCompletion: async ({ principal, params, query, body, request }) => {
    const result = await chats.playgroundCompletion(principal.workspaceId, params.agent_id, query.version, body);
    if (!wantsEventStream(request.headers.accept)) return result;
    // Buffered SSE: the whole stream in one response (docs/chats.md, The agent playground).
    return new MediaResponse('text/event-stream; charset=utf-8', chats.completionEvents(result), { 'cache-control': 'no-cache' }) as never;
  },
  agentPlaygroundSimulation: ({ principal, params, body }) => chats.playgroundSimulation(principal.workspaceId, params.agent_id, body),
  // SMS chats (docs/chats.md, SMS)
  createSmsChat: ({ principal, body }) => chats.createSmsChat(principal.workspaceId, body),
  getSmsChat: ({ principal, params }) => chats.getSmsChat(principal.workspaceId, params.chat_id),
  endSmsChat: ({ principal, params }) => chats.endSmsChat(principal.workspaceId, params.chat_id),
  listSmsChats: ({ principal, query }) =>
    chats.listSmsChats(principal.workspaceId, listQuery(query), { from_number: query.from_number, to_number: query.to_number }),
  listSmsMessages: ({ principal, query }) => chats.listSmsMessages(principal.workspaceId, query),
  sendSms: ({ principal, body }) => chats.sendSms(principal.workspaceId, body),
  simulateInboundSms: ({ principal, params, body }) => chats.simulateInboundSms(principal.workspaceId, params.chat_id, body.content),
  twilioSmsWebhook: async ({ request }) =>
    new MediaResponse('text/xml; charset=utf-8', await chats.receiveTwilioSms(request.rawBody, request.headers)),
  twilioSmsStatus: ({ request }) => chats.receiveTwilioSmsStatus(request.rawBody, request.headers),
});
