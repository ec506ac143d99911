import { conflict } from '../../platform/errors.ts';
import { flowGraph, graphOf, linkItems, withStartNode, withValidation, type Graph } from './flow-components.ts';
import { newId } from '../../platform/ids.ts';
import { definedFields } from '../../platform/objects.ts';
import type { ConversationFlow, CreateFlowInput, UpdateFlowInput } from './flow-schemas.ts';
import {
  commit,
  createItems,
  deleteResource,
  draftFor,
  pageBody,
  pageOfHeads,
  readRecord,
  writeItems,
  type VersionRecord,
} from '../../platform/store/versions.ts';
import { readReferenced, type VersionReference } from '../versions/version-references.ts';
import { flowAppToolRefs } from '../tools/app-tools.ts';
import { assertAppTools } from '../tools/app-usages.ts';
import { assertTransferRefs, flowTransferRefs } from '../tools/transfer-checks.ts';

/**
 * Conversation flow response engines, versioned like agents and Retell LLMs
 * (shared/platform/store/versions.ts). An agent version pins a flow version; publishing the agent
 * publishes it, and a new agent draft gets a new flow draft (shared/agents/versions/response-engines.ts).
 */
const KIND = 'conversation_flow' as const;

const FLOW_DEFAULTS = {
  global_prompt: null,
  components: null,
  tools: null,
  default_dynamic_variables: null,
  knowledge_base_ids: null,
  is_transfer_cf: false,
} satisfies Partial<CreateFlowInput>;

type FlowData = Record<string, unknown> & Graph & { components?: Graph[] | null };

function toFlow(flowId: string, record: VersionRecord): ConversationFlow {
  return {
    conversation_flow_id: flowId,
    version: record.version,
    is_published: record.is_published,
    last_modification_timestamp: record.last_modification_timestamp,
    ...(record.data as Partial<CreateFlowInput>),
    // Versions saved before drafts could be incomplete were checked whole: no problems.
    validation: (record.data.validation as string[] | undefined) ?? [],
  };
}

/** The flow's and each inline component's start node default to their first node. */
function withStartNodes(data: FlowData): FlowData {
  const filled = withStartNode(data);
  return filled.components ? { ...filled, components: filled.components.map((component) => withStartNode(component)) } : filled;
}

/** Stores the flow, complete or not: the graph's problems are answered in `validation`. */
export async function createFlow(workspaceId: string, input: CreateFlowInput, nowMs = Date.now()): Promise<ConversationFlow> {
  const graph = withStartNodes({ ...FLOW_DEFAULTS, ...definedFields(input) } as FlowData);
  await assertAppTools(workspaceId, flowAppToolRefs(graph));
  await assertTransferRefs(workspaceId, flowTransferRefs(graph));
  const report = await flowGraph(workspaceId, graph);
  const flowId = newId('conversationFlow');
  const { items, record } = createItems(workspaceId, KIND, flowId, withValidation(graph, report), nowMs);
  await commit([...items, ...linkItems(workspaceId, report.linked)]);
  return toFlow(flowId, record);
}

/** The version a reference names (a number, `latest` or `latest_published`), or the latest. */
export async function getFlow(workspaceId: string, flowId: string, version?: VersionReference): Promise<ConversationFlow> {
  return toFlow(flowId, await readReferenced(workspaceId, KIND, flowId, version));
}

export async function listFlows(
  workspaceId: string,
  options: { limit: number; pagination_key?: string; sort_order: 'ascending' | 'descending' },
): Promise<{ has_more: boolean; items: ConversationFlow[]; pagination_key?: string }> {
  return pageBody(await pageOfHeads(workspaceId, KIND, options), (head) => toFlow(head.id, head.latest));
}

/**
 * Edits the latest draft, or the draft ?version=; a published latest version gets a new
 * draft. The whole resulting flow is checked, not only the fields sent, and its problems
 * stored in `validation`.
 */
export async function updateFlow(
  workspaceId: string,
  flowId: string,
  version: VersionReference | undefined,
  input: UpdateFlowInput,
  nowMs = Date.now(),
): Promise<ConversationFlow> {
  const draft = await draftFor(workspaceId, KIND, flowId, version, nowMs);
  const graph = withStartNodes({ ...graphOf(draft.record.data), ...definedFields(input) } as FlowData);
  // Only the tools sent are checked (as for Retell LLMs).
  await assertAppTools(workspaceId, flowAppToolRefs(definedFields(input) as Record<string, unknown>));
  await assertTransferRefs(workspaceId, flowTransferRefs(definedFields(input) as Record<string, unknown>));
  const report = await flowGraph(workspaceId, graph);
  const record: VersionRecord = { ...draft.record, data: withValidation(graph, report) };
  await commit([
    ...writeItems(workspaceId, KIND, flowId, draft.head, record, { isNew: draft.isNew, nowMs }),
    ...linkItems(workspaceId, report.linked),
  ]);
  return toFlow(flowId, { ...record, last_modification_timestamp: nowMs });
}

/**
 * Deleting a flow an agent still runs would break the agent's calls, so it is refused
 * (409 naming the agents) unless the caller forces it.
 */
export async function deleteFlow(
  workspaceId: string,
  flowId: string,
  options: { force: boolean; usedBy: (flowId: string) => Promise<string[]> },
): Promise<void> {
  await readRecord(workspaceId, KIND, flowId);
  if (!options.force) {
    const agents = await options.usedBy(flowId);
    if (agents.length > 0) {
      throw conflict(
        `Conversation flow ${flowId} is used by ${agents.length === 1 ? 'agent' : 'agents'} ${agents.join(', ')}; ` +
          'point them at another engine first, or delete with force_delete=true',
      );
    }
  }
  await deleteResource(workspaceId, KIND, flowId);
}
