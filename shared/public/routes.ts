import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  PublicCallLog,
  PublicChatEnded,
  PublicChatEndBody,
  PublicChatMessageBody,
  PublicChatReply,
  PublicChatStarted,
  PublicKbRetrievals,
  PublicShare,
  ShareChatBody,
  ShareChatStarted,
  ShareWebCall,
  ShareWebCallBody,
  StartPublicChatBody,
  publicCallParams,
  publicCallQuery,
  publicChatParams,
  shareTokenParams,
} from './schemas.ts';

/**
 * The public routes (spec: Public; docs/browser.md): what a customer's web page (the chat
 * widget, a page with a public key) and the Voice Orb page call without a secret key. Each
 * is rate-limited per IP (the gate) and per token (a public key's own window, or the share
 * token's, the chat's, the call's); the ones that spend are spend-checked (402).
 */
export const publicRoutes = defineRoutes({ domain: 'public', access: 'public' }, {
  startPublicChat: {
    method: 'POST', path: '/public/chat/start', status: 201, access: 'calls',
    summary: 'Start a chat with a chat agent from a browser (a public key from an allowed origin); answers the chat and its secret',
    publicKey: 'start_chat', spendChecked: true, throttle: 'conversation',
    body: StartPublicChatBody, response: PublicChatStarted,
  },
  publicChatMessage: {
    method: 'POST', path: '/public/chat/{chat_id}/message', status: 200,
    summary: 'Send the user\'s message in a public chat (its chat_secret) and answer the agent\'s new messages',
    cors: 'public-key-origins', spendChecked: true, throttle: 'conversation',
    params: publicChatParams, body: PublicChatMessageBody, response: PublicChatReply,
  },
  endPublicChat: {
    method: 'POST', path: '/public/chat/{chat_id}/end', status: 200,
    summary: 'End a public chat (its chat_secret)',
    cors: 'public-key-origins',
    params: publicChatParams, body: PublicChatEndBody, response: PublicChatEnded,
  },
  getPublicShare: {
    method: 'GET', path: '/public/share/{token}', status: 200,
    summary: 'What a share link\'s page needs: the agent\'s name and type (nothing secret); 404 once revoked',
    cors: 'same-origin',
    params: shareTokenParams, response: PublicShare,
  },
  shareWebCall: {
    method: 'POST', path: '/public/share/{token}/web-call', status: 201,
    summary: 'Start a web call with a share link\'s voice agent (metadata.source voice_orb), billed to its workspace',
    cors: 'same-origin', spendChecked: true,
    params: shareTokenParams, body: ShareWebCallBody, response: ShareWebCall,
  },
  shareChat: {
    method: 'POST', path: '/public/share/{token}/chat', status: 201,
    summary: 'Start a chat with a share link\'s chat agent; answers the chat ID, its secret and the opening messages',
    cors: 'same-origin', spendChecked: true, throttle: 'vendor',
    params: shareTokenParams, body: ShareChatBody, response: ShareChatStarted,
  },
  publicCallLog: {
    method: 'GET', path: '/public/calls/{call_id}/log', status: 200,
    summary: 'A web call\'s status and transcript so far, for the holder of its access token (Authorization: Bearer or ?access_token=)',
    params: publicCallParams, query: publicCallQuery, response: PublicCallLog,
  },
  publicCallKbRetrievals: {
    method: 'GET', path: '/public/calls/{call_id}/kb-retrievals', status: 200,
    summary: 'What a web call retrieved from its knowledge bases, for the holder of its access token',
    params: publicCallParams, query: publicCallQuery, response: PublicKbRetrievals,
  },
  getWidgetScript: {
    method: 'GET', path: '/widget.js', status: 200,
    summary: 'The chat widget: one <script src=".../widget.js" data-public-key data-agent-id> adds a chat to any page',
    produces: 'text/javascript; charset=utf-8', response: lazySchema(() => z.string()),
  },
});
