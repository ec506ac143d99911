import type { AgentTag } from './voice-agents/agent-schemas.ts';
import { conflict, notFound } from '../platform/errors.ts';
import { keys, type VersionedKind } from '../platform/store/keys.ts';
import { defineEntity, table, type TransactOp } from '../platform/store/table.ts';

/*
 * The agents domain's own items, each declared once with its key (keys from the keys
 * module). Versioned resources (agents, chat agents, LLMs, flows: heads and versions) are
 * the versioned-resource store's (shared/platform/store/versions.ts), not declared here.
 */

/** The two agent kinds (voice and chat), which are versioned alike (agent-versions.ts) and referred to alike. */
export type AgentKind = Extract<VersionedKind, 'agent' | 'chat_agent'>;

/** An item's key as a type alias (an interface such as ItemKey does not satisfy defineEntity's `Record`). */
type Keyed = { pk: string; sk: string };

/** An environment tag: a name for a version of a voice agent, with variables for calls that choose it. */
export type TagItem = AgentTag & Keyed;

export const agentTags = defineEntity<TagItem, [workspaceId: string, agentId: string, name: string]>({
  key: keys.agentTag,
  notFound: (_workspaceId, agentId, name) => notFound(`Agent ${agentId} has no tag "${name}"`),
  exists: (_workspaceId, agentId, name) => conflict(`A tag named "${name}" already exists on agent ${agentId}`),
});
export const agentTagsOf = keys.agentTags;

/** A shared conversation flow component (not versioned). */
export type ComponentItem = Keyed & {
  conversation_flow_component_id: string;
  workspace_id: string;
  created_timestamp: number;
  user_modified_timestamp: number;
  /** Bumped by every write that references the component; its delete is conditional on it. */
  link_writes?: number;
  data: Record<string, unknown>;
};

export const flowComponents = defineEntity<ComponentItem, [workspaceId: string, componentId: string]>({
  key: keys.flowComponent,
  notFound: (_workspaceId, componentId) => notFound(`Conversation flow component ${componentId} not found`),
});
export const flowComponentsOf = keys.flowComponents;

/** Keeps a shared component in place for a write: fails when it is gone, bumps `link_writes`. */
export const componentLinkOp = (workspaceId: string, componentId: string): TransactOp => ({
  Update: {
    Key: flowComponents.key(workspaceId, componentId),
    UpdateExpression: 'ADD link_writes :one',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':one': 1 },
  },
});

/** Something that uses an agent (a phone number, a batch call): an item in the agent's partition. */
export interface AgentReferrer {
  type: 'phone_number' | 'batch_call';
  id: string;
}
export const agentReferencesOf = keys.agentReferences;
const referenceKey = (workspaceId: string, kind: AgentKind, agentId: string, referrer: AgentReferrer) =>
  keys.agentReference(workspaceId, kind, agentId, `${referrer.type}#${referrer.id}`);

/** Counts the reference on the agent's head (which must exist) and writes its item (which must not). */
export const addReferenceOps = (workspaceId: string, kind: AgentKind, agentId: string, referrer: AgentReferrer): TransactOp[] => [
  {
    Update: {
      Key: keys.resourceHead(workspaceId, kind, agentId),
      UpdateExpression: 'ADD reference_count :one',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':one': 1 },
    },
  },
  {
    Put: {
      Item: { ...referenceKey(workspaceId, kind, agentId, referrer), ...referrer },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  },
];

/** Uncounts the reference on the agent's head (which must exist) and deletes its item (which must exist). */
export const removeReferenceOps = (workspaceId: string, kind: AgentKind, agentId: string, referrer: AgentReferrer): TransactOp[] => [
  {
    Update: {
      Key: keys.resourceHead(workspaceId, kind, agentId),
      UpdateExpression: 'ADD reference_count :minusOne',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':minusOne': -1 },
    },
  },
  {
    Delete: {
      Key: referenceKey(workspaceId, kind, agentId, referrer),
      ConditionExpression: 'attribute_exists(pk)',
    },
  },
];

/**
 * Whether any of the workspace's voice or chat agents sets data_storage_retention_days (on
 * its latest version, which the head carries as `latest.data`): the daily sweep skips the others.
 */
export async function workspaceHasRetentionSetting(workspaceId: string): Promise<boolean> {
  for (const kind of ['agent', 'chat_agent'] as const) {
    const heads = keys.resourceHeads(workspaceId, kind);
    const found = await table.queryAll<{ sk: string }>({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      FilterExpression: 'attribute_type(latest.#data.data_storage_retention_days, :number)',
      ExpressionAttributeNames: { '#data': 'data' },
      ExpressionAttributeValues: { ':pk': heads.pk, ':prefix': heads.skPrefix, ':number': 'N' },
      ProjectionExpression: 'sk',
    });
    if (found.length) return true;
  }
  return false;
}
