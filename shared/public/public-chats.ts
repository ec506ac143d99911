import { randomBytes, timingSafeEqual } from 'node:crypto';
import { findShareLinkByToken, isShareLinkEnabled } from '../agent-tools/index.ts';
import { completeChat, endChat, startChat } from '../chats/index.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { assertAgentAllowed } from '../platform/auth/public-start.ts';
import { countTokenRequest } from '../platform/auth/token-window.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { badRequest, notFound, unauthorized } from '../platform/errors.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import type { StartPublicChatInput } from './schemas.ts';
import { findPublicKey, putPublicChat, publicChats, PUBLIC_CHAT_TTL_SECONDS, removePublicChat, type PublicChatItem, type PublicChatOrigin } from './store.ts';

/*
 * Public chats (docs/browser.md): a chat started from a browser, by a public key from one of
 * its allowed origins (the widget) or by a chat agent's share link. The starter gets the
 * chat's secret once; every later message or end needs it. Only its SHA-256 is stored, and a
 * wrong secret or another chat's ID is the same 404 as an unknown chat. A chat a public key
 * started answers only from that key's allowed origins, and stops when the key is deleted; a
 * chat a share link started stops when the link is revoked.
 */

const chatNotFound = () => notFound('Chat not found');
const shareLinkNotFound = () => notFound('Share link not found');

async function openChat(
  workspaceId: string,
  agentId: string,
  startedBy: PublicChatOrigin,
  input: { retell_llm_dynamic_variables?: Record<string, string>; metadata?: Record<string, unknown> },
  source: string,
) {
  const nowMs = Date.now();
  const chatId = newTimeOrderedId('chat', nowMs);
  const secret = randomBytes(32).toString('base64url');
  const item: PublicChatItem = {
    ...publicChats.key(chatId),
    chat_id: chatId,
    workspace_id: workspaceId,
    agent_id: agentId,
    secret_sha256: sha256(secret),
    started_by: startedBy,
    created_timestamp: nowMs,
    expires_at: Math.ceil(nowMs / 1000) + PUBLIC_CHAT_TTL_SECONDS,
  };
  // The pointer first, then the chat under its ID: a chat that fails to start leaves no pointer
  // (removed below), and a pointer never names a chat it cannot reach.
  await putPublicChat(item);
  try {
    const started = await startChat(
      workspaceId,
      {
        agent_id: agentId,
        ...(input.retell_llm_dynamic_variables ? { retell_llm_dynamic_variables: input.retell_llm_dynamic_variables } : {}),
        metadata: { ...(input.metadata ?? {}), source },
      },
      { chatId },
    );
    return { ...started, secret };
  } catch (error) {
    await removePublicChat(chatId);
    throw error;
  }
}

/** POST /public/chat/start: a chat with the workspace's chat agent, and its secret. */
export async function startPublicChat(principal: Principal, input: StartPublicChatInput) {
  const startedBy: PublicChatOrigin =
    principal.kind === 'public' ? { kind: 'public_key', public_key_id: principal.credentialId } : { kind: 'secret_key' };
  const { chat, secret } = await openChat(principal.workspaceId, input.agent_id, startedBy, input, 'widget');
  return { ...chat, chat_secret: secret };
}

/** POST /public/share/{token}/chat: a chat with a share link's chat agent. */
export async function startShareChat(token: string, input: { retell_llm_dynamic_variables?: Record<string, string> }) {
  await countTokenRequest('share', sha256(token));
  const link = await findShareLinkByToken(token);
  if (!link) throw shareLinkNotFound();
  if (!link.agent_id.startsWith('chat_agent_')) throw badRequest('This share link is for a voice agent: start a web call instead');
  const { chat, agentMessages, secret } = await openChat(
    link.workspace_id,
    link.agent_id,
    { kind: 'share_link', share_link_id: link.share_link_id },
    input,
    'share_link',
  );
  return { chat_id: chat.chat_id, chat_secret: secret, agent_id: link.agent_id, chat_status: chat.chat_status, messages: agentMessages };
}

/**
 * The public chat a request names, if its secret is right and what started it still allows
 * it: the chat's per-token window first (a flood on one chat is 429 whatever it sends), then
 * the secret (404 when wrong), then the starter (a public key: present and allowing the
 * request's Origin, else 401, and still allowing the chat's agent, else 403; a share link:
 * still enabled, else 404).
 */
async function authorizedChat(chatId: string, secret: string, origin: string | undefined): Promise<PublicChatItem> {
  await countTokenRequest('chat', chatId);
  const item = await publicChats.get(chatId);
  if (!item || !sameSecret(item.secret_sha256, secret) || item.expires_at * 1000 <= Date.now()) throw chatNotFound();
  const startedBy = item.started_by;
  if (startedBy.kind === 'public_key') {
    const key = await findPublicKey(item.workspace_id, startedBy.public_key_id);
    const origins = key?.allowed_origins ?? [];
    if (!key || (origins.length > 0 && (origin === undefined || !origins.includes(origin.toLowerCase())))) throw unauthorized();
    // A key limited to other agents since the chat started no longer reaches it.
    assertAgentAllowed(key, item.agent_id);
  } else if (startedBy.kind === 'share_link') {
    if (!(await isShareLinkEnabled(item.workspace_id, startedBy.share_link_id))) throw shareLinkNotFound();
  }
  return item;
}

function sameSecret(storedSha256: string, given: string): boolean {
  const a = Buffer.from(storedSha256, 'hex');
  const b = Buffer.from(sha256(given), 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** POST /public/chat/{chat_id}/message: the user's message, answered with the agent's new messages. */
export async function sendPublicChatMessage(chatId: string, body: { content: string; chat_secret: string }, origin: string | undefined) {
  const item = await authorizedChat(chatId, body.chat_secret, origin);
  const result = await completeChat(item.workspace_id, chatId, body.content);
  return { chat_id: chatId, chat_status: result.chat.chat_status, messages: result.messages };
}

/** POST /public/chat/{chat_id}/end. */
export async function endPublicChat(chatId: string, body: { chat_secret: string }, origin: string | undefined) {
  const item = await authorizedChat(chatId, body.chat_secret, origin);
  const chat = await endChat(item.workspace_id, chatId);
  return { chat_id: chatId, chat_status: chat.chat_status };
}
