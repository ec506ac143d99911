import { defineRoutes } from '../platform/http/route.ts';
import {
  Chat,
  ChatCompletion,
  ChatList,
  ChatPage,
  chatIdParams,
  CreateChatBody,
  CreateChatCompletionBody,
  ListChatsBody,
  ListChatsQuery,
  PlaygroundCompletion,
  PlaygroundCompletionBody,
  PlaygroundQuery,
  PlaygroundSimulation,
  PlaygroundSimulationBody,
  playgroundAgentParams,
  UpdateChatBody,
} from './schemas.ts';

/** Chats (scope `calls`, which covers chats) and the agent playground (scope `agents`: it tests an agent). */
export const chatRoutes = defineRoutes({ domain: 'chats', access: 'calls' }, {
  createChat: {
    method: 'POST', path: '/create-chat', status: 201,
    summary: 'Start a chat with a chat agent (the agent\'s opening messages included)',
    spendChecked: true, publicKey: 'start_chat', throttle: 'conversation',
    body: CreateChatBody, response: Chat,
  },
  createChatCompletion: {
    method: 'POST', path: '/create-chat-completion', status: 200,
    summary: 'Send the user\'s message and answer the agent\'s new messages (completions of one chat run one at a time)',
    spendChecked: true, throttle: 'conversation',
    body: CreateChatCompletionBody, response: ChatCompletion,
  },
  getChat: {
    method: 'GET', path: '/get-chat/{chat_id}', status: 200,
    summary: 'Get a chat with its messages',
    params: chatIdParams, response: Chat,
  },
  listChats: {
    method: 'GET', path: '/list-chats', status: 200,
    summary: 'List chats, newest first (an array; the transcript fields are left out)',
    query: ListChatsQuery, response: ChatList,
  },
  listChatsPage: {
    method: 'POST', path: '/v3/list-chats', status: 200,
    summary: 'List chats with filters (retell-sdk\'s page {items, has_more, pagination_key})',
    body: ListChatsBody, response: ChatPage,
  },
  updateChat: {
    method: 'PATCH', path: '/update-chat/{chat_id}', status: 200,
    summary: 'Update a chat\'s metadata, custom attributes, data storage setting and dynamic variable overrides',
    params: chatIdParams, body: UpdateChatBody, response: Chat,
  },
  endChat: {
    method: 'PATCH', path: '/end-chat/{chat_id}', status: 200,
    summary: 'End an ongoing chat (then chat_ended, the analysis and chat_analyzed)',
    params: chatIdParams, response: Chat,
  },
  deleteChat: {
    method: 'DELETE', path: '/delete-chat/{chat_id}', status: 204,
    summary: 'Delete a chat and its messages',
    params: chatIdParams,
  },
  rerunChatAnalysis: {
    method: 'POST', path: '/rerun-chat-analysis/{chat_id}', aliases: [{ method: 'PUT', path: '/rerun-chat-analysis/{chat_id}' }], status: 200,
    summary: 'Run the post-chat analysis of an ended chat again',
    params: chatIdParams, response: Chat, throttle: 'vendor',
  },
  agentPlaygroundCompletion: {
    method: 'POST', path: '/agent-playground-completion/{agent_id}', status: 200, access: 'agents',
    summary: 'One turn of a voice or chat agent on the given messages (server-sent events when the request accepts text/event-stream)',
    throttle: 'vendor',
    params: playgroundAgentParams, query: PlaygroundQuery, body: PlaygroundCompletionBody, response: PlaygroundCompletion,
  },
  agentPlaygroundSimulation: {
    method: 'POST', path: '/agent-playground-simulation/{agent_id}', status: 200, access: 'agents',
    summary: 'Run a voice or chat agent against a simulated user for up to max_turns turns (no call is created)',
    throttle: 'vendor',
    params: playgroundAgentParams, body: PlaygroundSimulationBody, response: PlaygroundSimulation,
  },
});
