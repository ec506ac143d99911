import { addAgentReferenceItems, removeAgentReferenceItems, type AgentReferrer } from '../agents/lookups/index.ts';
import type { TransactOp } from '../platform/store/table.ts';
import type { BatchItem } from './store.ts';

/*
 * A batch's override agents are referenced (the agents domain's references: an item in the
 * agent's partition and a count on its head) from the create until the batch is sent,
 * stopped or deleted, so an agent a batch may still dial cannot be deleted (409 naming the
 * batch). Each side is written in the same transaction as the batch's own change, so only
 * the move that wins releases them, exactly once.
 */

/** Override agents one batch may reference: each is two writes of the create's one transaction (at most 100). */
export const MAX_OVERRIDE_AGENTS = 48;

const referrer = (batchCallId: string): AgentReferrer => ({ type: 'batch_call', id: batchCallId });

export const referenceAgents = (workspaceId: string, batchCallId: string, agentIds: readonly string[]): TransactOp[] =>
  agentIds.flatMap((agentId) => addAgentReferenceItems(workspaceId, 'agent', agentId, referrer(batchCallId)));

export const releaseAgentReferences = (batch: Pick<BatchItem, 'workspace_id' | 'batch_call_id' | 'agent_references'>): TransactOp[] =>
  (batch.agent_references ?? []).flatMap((agentId) => removeAgentReferenceItems(batch.workspace_id, 'agent', agentId, referrer(batch.batch_call_id)));
