import { findPublicCallLog } from '../calls/records/index.ts';
import type * as KnowledgeBases from '../knowledge-bases/index.ts';
import { countTokenRequest } from '../platform/auth/token-window.ts';
import { rawBearer } from '../platform/auth/gate.ts';
import { notFound, unauthorized } from '../platform/errors.ts';
import { verifyWebCallAccess } from '../vendors/media/index.ts';
import { loadOnce } from '../platform/lazy.ts';

/*
 * A web call's public log and knowledge-base retrievals (docs/browser.md): for the holder of
 * the call's own access token (the LiveKit token create-web-call or a share link answered),
 * as `Authorization: Bearer <access_token>` or `?access_token=<access_token>`. No token, or a
 * token for another call or expired, is 401; an unknown call behind a valid token cannot
 * happen, and is 404.
 */

/** The access token as presented: the header wins; the query is for clients that cannot set headers. */
function presentedToken(headers: Record<string, string | undefined>, query: { access_token?: string }): string | undefined {
  return rawBearer(headers.authorization) ?? query.access_token;
}

async function authorizedCall(callId: string, headers: Record<string, string | undefined>, query: { access_token?: string }) {
  await countTokenRequest('call', callId);
  const token = presentedToken(headers, query);
  if (!token || !(await verifyWebCallAccess(callId, token))) throw unauthorized();
  const log = await findPublicCallLog(callId);
  if (!log) throw notFound('Call not found');
  return log;
}

export async function getPublicCallLog(callId: string, headers: Record<string, string | undefined>, query: { access_token?: string }) {
  const { workspace_id: _workspace, ...log } = await authorizedCall(callId, headers, query);
  return log;
}

/**
 * The knowledge-bases entry, loaded by the first request for a call's retrievals: it also
 * holds retrieval itself (the embedder, the search index), which nothing else the public
 * function serves needs at its cold start (docs/performance.md, "Sizes: cold and lazy").
 */
const knowledgeBases = loadOnce((): Promise<typeof KnowledgeBases> => import('../knowledge-bases/index.ts'));

export async function getPublicCallKbRetrievals(callId: string, headers: Record<string, string | undefined>, query: { access_token?: string }) {
  const log = await authorizedCall(callId, headers, query);
  const { getKbRetrievals } = await knowledgeBases();
  return getKbRetrievals(log.workspace_id, callId);
}
