import { randomBytes } from 'node:crypto';
import { badRequest, notFound, NotFound } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { definedFields } from '../platform/objects.ts';
import { queryAll } from '../platform/store/query.ts';
import { table, TransactionCancelled } from '../platform/store/table.ts';
import { getHead } from '../platform/store/versions.ts';
import { shareAgentHeadKey, shareAgentKind, shareLinks, shareLinksOf, shareTokenKey, type ShareLink, type ShareLinkItem, type TokenItem } from './store.ts';

/*
 * Share links (Voice Orb): a public page `/orb/<token>` that talks to one agent, billed to
 * the agent's workspace. The token is the only credential, so it is long (256 random
 * bits) and found by its SHA-256: the public lookup is one GetItem on
 * `SHARETOKEN#<sha256(token)>`, an item that exists only while the link is enabled.
 *
 * The raw token is also kept in the link's record (workspace partition): it is part of a
 * URL that is meant to be handed out, and the owner needs to see it again to share it
 * (unlike an API key, which is shown once). Its reach is a web call to one agent; it is
 * never logged and never part of a table key.
 */

/** How many links (enabled or revoked) one agent may have: a listing stays one small query. */
const MAX_SHARE_LINKS_PER_AGENT = 100;

/** 32 random bytes, base64url: 43 URL-safe characters. */
const SHARE_TOKEN = /^[A-Za-z0-9_-]{43}$/;

const toShareLink = (item: ShareLinkItem): ShareLink => ({
  share_link_id: item.share_link_id,
  agent_id: item.agent_id,
  token: item.token,
  enabled: item.enabled,
  url_path: item.url_path,
  created_timestamp: item.created_timestamp,
  ...definedFields({ revoked_timestamp: item.revoked_timestamp }),
});

const linkNotFound = (shareLinkId: string) => notFound(`Share link ${shareLinkId} not found`);

async function linksOf(workspaceId: string, agentId: string): Promise<ShareLinkItem[]> {
  return (await queryAll<ShareLinkItem>(shareLinksOf(workspaceId)))
    .filter((item) => item.agent_id === agentId)
    .sort((a, b) => b.created_timestamp - a.created_timestamp || (a.share_link_id < b.share_link_id ? 1 : -1));
}

/** An agent's links, newest first, revoked ones included (with `enabled: false`). */
export async function listShareLinks(workspaceId: string, agentId: string): Promise<ShareLink[]> {
  await getHead(workspaceId, shareAgentKind(agentId), agentId);
  return (await linksOf(workspaceId, agentId)).map(toShareLink);
}

export async function createShareLink(workspaceId: string, agentId: string, nowMs = Date.now()): Promise<ShareLink> {
  await getHead(workspaceId, shareAgentKind(agentId), agentId);
  if ((await linksOf(workspaceId, agentId)).length >= MAX_SHARE_LINKS_PER_AGENT) {
    throw badRequest(`Agent ${agentId} already has ${MAX_SHARE_LINKS_PER_AGENT} share links`);
  }
  const token = randomBytes(32).toString('base64url');
  const shareLinkId = newId('shareLink');
  const item: ShareLinkItem = {
    ...shareLinks.key(workspaceId, shareLinkId),
    workspace_id: workspaceId,
    share_link_id: shareLinkId,
    agent_id: agentId,
    token,
    enabled: true,
    url_path: `/orb/${token}`,
    created_timestamp: nowMs,
  };
  const tokenItem: TokenItem = {
    ...shareTokenKey(token),
    workspace_id: workspaceId,
    agent_id: agentId,
    share_link_id: shareLinkId,
  };
  await table
    .transact([
      { Put: { Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { Item: tokenItem, ConditionExpression: 'attribute_not_exists(pk)' } },
      // The agent must still exist when the link is written.
      { ConditionCheck: { Key: shareAgentHeadKey(workspaceId, agentId), ConditionExpression: 'attribute_exists(pk)' } },
    ])
    .catch((error: unknown) => {
      if (error instanceof TransactionCancelled) throw notFound(`Agent ${agentId} not found`);
      throw error;
    });
  return toShareLink(item);
}

/**
 * Revokes a link: in one transaction the record is marked disabled and the token item
 * is deleted, so the public lookup stops resolving the token immediately. Revoking a
 * revoked link changes nothing and answers it again.
 */
export async function revokeShareLink(workspaceId: string, shareLinkId: string, nowMs = Date.now()): Promise<ShareLink> {
  const item = await shareLinks.mustGet(workspaceId, shareLinkId);
  // A link of a deleted agent is gone with the agent.
  await getHead(workspaceId, shareAgentKind(item.agent_id), item.agent_id).catch((error: unknown) => {
    throw error instanceof NotFound ? linkNotFound(shareLinkId) : error;
  });
  if (!item.enabled) return toShareLink(item);
  const revoked: ShareLinkItem = { ...item, enabled: false, revoked_timestamp: nowMs };
  await table
    .transact([
      { Put: { Item: revoked, ConditionExpression: 'enabled = :true', ExpressionAttributeValues: { ':true': true } } },
      { Delete: { Key: shareTokenKey(item.token) } },
    ])
    .catch((error: unknown) => {
      // Revoked by a concurrent request in the meantime: the outcome is the same.
      if (!(error instanceof TransactionCancelled)) throw error;
    });
  return toShareLink(revoked);
}

/** What a public page needs to serve a share link. */
export interface ResolvedShareLink {
  workspace_id: string;
  agent_id: string;
  share_link_id: string;
}

/**
 * The lookup the public Voice Orb routes use: the link behind a token, only while it is
 * enabled and its agent exists. Strongly consistent, so a revoked link (or a deleted
 * agent) stops resolving with the next request. Anything else (malformed, unknown,
 * revoked) is `undefined`, without saying which.
 */
export async function findShareLinkByToken(token: string): Promise<ResolvedShareLink | undefined> {
  if (!SHARE_TOKEN.test(token)) return undefined;
  const item = await table.get<TokenItem>(shareTokenKey(token));
  if (!item) return undefined;
  const agent = await table.get(shareAgentHeadKey(item.workspace_id, item.agent_id), { projection: 'pk' });
  if (!agent) return undefined;
  return { workspace_id: item.workspace_id, agent_id: item.agent_id, share_link_id: item.share_link_id };
}

/**
 * Whether a link is still enabled (its token item exists and its agent too): the public chats
 * a share link started stop with the link (shared/public). By the link's record, strongly consistent.
 */
export async function isShareLinkEnabled(workspaceId: string, shareLinkId: string): Promise<boolean> {
  const item = await shareLinks.get(workspaceId, shareLinkId);
  if (!item?.enabled) return false;
  return (await findShareLinkByToken(item.token)) !== undefined;
}
