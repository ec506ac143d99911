import { conflict, notFound, unauthorized } from '../platform/errors.ts';
import { verifyWorkerReportToken } from '../vendors/media/index.ts';
import { countAddress } from '../platform/auth/gate.ts';
import { retrieveForAgent, type AgentRetrieval } from '../conversation/index.ts';
import type { WorkerRetrievalBody } from './schemas.ts';
import { findCallItem } from './store.ts';

/*
 * Knowledge-base retrieval for the LiveKit agent worker (docs/calls-media.md, the worker's
 * contract): `POST /internal/calls/{call_id}/kb-retrieve` with the call's report token. The
 * call decides everything but the words: its workspace, its agent version's Retell LLM or
 * conversation flow (and the call's agent_override) name the knowledge bases and kb_config,
 * as in the sandbox's turns; each retrieval is recorded under the call's ID, as the call's
 * data storage setting allows, and answered by `GET /kb-retrievals/{call_id}`.
 */

/**
 * The bearer token of a worker request; 401 unless it is the call's report token. The
 * worker routes authenticate themselves (the gate counts nothing for them): only a refused
 * token is counted in its address's window, so guessing is bounded while the workers'
 * reports, all from a few addresses, never write that window.
 */
export async function assertWorkerToken(callId: string, authorization: string | undefined, sourceIp: string): Promise<void> {
  const token = authorization?.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : undefined;
  if (token && (await verifyWorkerReportToken(callId, token))) return;
  const error = unauthorized();
  Object.assign(error.headers, await countAddress(sourceIp));
  throw error;
}

export async function retrieveForWorker(
  callId: string,
  authorization: string | undefined,
  sourceIp: string,
  body: WorkerRetrievalBody,
): Promise<{ call_id: string } & AgentRetrieval> {
  await assertWorkerToken(callId, authorization, sourceIp);
  const call = await findCallItem(callId);
  if (!call) throw notFound('Call not found');
  if (call.call_status !== 'ongoing' && call.call_status !== 'registered') throw conflict(`Call ${callId} has ended`);
  const retrieval = await retrieveForAgent({
    workspaceId: call.workspace_id,
    agentId: call.agent_id,
    agentVersion: call.agent_version,
    callId,
    query: body.query,
    ...(call.engine.agent_override ? { overrides: call.engine.agent_override } : {}),
    ...(call.data_storage_setting ? { dataStorageSetting: call.data_storage_setting } : {}),
  });
  return {
    call_id: callId,
    retrieval_id: retrieval.retrieval_id,
    knowledge_base_ids: retrieval.knowledge_base_ids,
    chunks: retrieval.chunks.map(({ knowledge_base_id, source_id, chunk_id, content, score, lexical_score, vector_score }) => ({
      knowledge_base_id,
      source_id,
      chunk_id,
      content,
      score,
      lexical_score,
      vector_score,
    })),
    prompt: retrieval.prompt,
  };
}
