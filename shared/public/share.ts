import { findShareLinkByToken } from '../agent-tools/index.ts';
import { getAgent, getChatAgent } from '../agents/lookups/index.ts';
import { createWebCall } from '../calls/index.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { countTokenRequest } from '../platform/auth/token-window.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { badRequest, notFound } from '../platform/errors.ts';

/*
 * Share links' public routes (the Voice Orb page, docs/browser.md). The token is the only
 * credential: looked up by its hash, strongly consistent, so a revoked link is a 404 from the
 * next request on. Each route counts the token's own window (PUBLIC_RATE_LIMIT_PER_TOKEN).
 */

const shareLinkNotFound = () => notFound('Share link not found');

async function resolve(token: string) {
  await countTokenRequest('share', sha256(token));
  const link = await findShareLinkByToken(token);
  if (!link) throw shareLinkNotFound();
  return link;
}

/** GET /public/share/{token}: the agent's name and kind, and what the page may start. Nothing configured beyond that. */
export async function getPublicShare(token: string) {
  const link = await resolve(token);
  const chat = link.agent_id.startsWith('chat_agent_');
  const agent = chat ? await getChatAgent(link.workspace_id, link.agent_id) : await getAgent(link.workspace_id, link.agent_id);
  const base = `/public/share/${encodeURIComponent(token)}`;
  return {
    agent_id: link.agent_id,
    agent_name: (agent as { agent_name?: string | null }).agent_name ?? null,
    agent_type: chat ? ('chat' as const) : ('voice' as const),
    start: chat ? ('chat' as const) : ('web_call' as const),
    web_call_path: chat ? null : `${base}/web-call`,
    chat_path: chat ? `${base}/chat` : null,
  };
}

/**
 * POST /public/share/{token}/web-call: a web call with the link's voice agent, billed to the
 * agent's workspace (create-web-call's own spend check: 402 with its error_code), with
 * metadata.source `voice_orb`. Answers what the web SDK needs to join, not the call object.
 */
export async function startShareWebCall(token: string, input: { retell_llm_dynamic_variables?: Record<string, string> }) {
  const link = await resolve(token);
  if (link.agent_id.startsWith('chat_agent_')) throw badRequest('This share link is for a chat agent: start a chat instead');
  // The link stands in for a key of its workspace that may start web calls only.
  const principal: Principal = {
    kind: 'public',
    workspaceId: link.workspace_id,
    credentialId: link.share_link_id,
    scopes: [],
    capabilities: ['start_web_call'],
  };
  const call = await createWebCall(principal, {
    agent_id: link.agent_id,
    ...(input.retell_llm_dynamic_variables ? { retell_llm_dynamic_variables: input.retell_llm_dynamic_variables } : {}),
    metadata: { source: 'voice_orb', share_link_id: link.share_link_id },
  } as Parameters<typeof createWebCall>[1]);
  return {
    call_id: call.call_id,
    agent_id: call.agent_id,
    call_status: call.call_status,
    access_token: call.access_token,
    expires_at: call.expires_at,
    livekit_url: call.livekit_url,
    transport: call.transport,
    ice_servers: call.ice_servers,
  };
}
