import { conflict } from '../../platform/errors.ts';
import { queryAll } from '../../platform/store/query.ts';
import { getHead, KIND_LABEL, type TransactItem } from '../../platform/store/versions.ts';
import { addReferenceOps, agentReferencesOf, removeReferenceOps, type AgentKind, type AgentReferrer } from '../store.ts';

/**
 * What uses an agent: phone numbers answer or dial with it, batch calls dial with it.
 * Deleting an agent something still uses would leave that number or batch with no agent
 * mid-flight, so the delete is refused (409 naming them) until they let go of it.
 *
 * The features that bind agents add the items below to the same transaction as the
 * binding; each reference is an item in the agent's partition plus a count on its head,
 * and the head's delete is conditional on the count being zero (shared/platform/store/versions.ts), so
 * a binding racing a delete cannot leave a reference to a deleted agent.
 */
export type { AgentReferrer };

export function addAgentReferenceItems(
  workspaceId: string,
  kind: AgentKind,
  agentId: string,
  referrer: AgentReferrer,
): TransactItem[] {
  return addReferenceOps(workspaceId, kind, agentId, referrer);
}

export function removeAgentReferenceItems(
  workspaceId: string,
  kind: AgentKind,
  agentId: string,
  referrer: AgentReferrer,
): TransactItem[] {
  return removeReferenceOps(workspaceId, kind, agentId, referrer);
}

async function agentReferrers(workspaceId: string, kind: AgentKind, agentId: string): Promise<AgentReferrer[]> {
  return (await queryAll<AgentReferrer>(agentReferencesOf(workspaceId, kind, agentId))).map(({ type, id }) => ({ type, id }));
}

const LABEL: Record<AgentReferrer['type'], string> = { phone_number: 'phone number', batch_call: 'batch call' };

/** 409 naming what uses the agent, when anything does. */
export async function assertAgentUnreferenced(workspaceId: string, kind: AgentKind, agentId: string): Promise<void> {
  await getHead(workspaceId, kind, agentId);
  const referrers = await agentReferrers(workspaceId, kind, agentId);
  if (referrers.length === 0) return;
  const named = referrers.map((referrer) => `${LABEL[referrer.type]} ${referrer.id}`).join(', ');
  throw conflict(`${KIND_LABEL[kind]} ${agentId} is used by ${named}; remove the agent from them before deleting it`);
}
