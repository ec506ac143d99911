import * as z from 'zod';
import { destinationUrl, epochMs, idOf, importedFrom, lazySchema, queryInt, versionQuery } from '../../platform/http/schemas.ts';
import { llmModel } from '../llms/models.ts';
import { APP_TOOL_DESCRIPTION, refineAppTool } from '../tools/app-tools.ts';
import { refineTransferCall } from '../tools/transfer-destination.ts';
import { refineCustomTool } from '../tools/custom-tool.ts';

/*
 * Conversation flows and shared flow components (scope `agents`). Field sets from the
 * compatible API (retell-sdk ConversationFlowCreateParams and
 * ConversationFlowComponentCreateParams). Nodes are checked on what Parley acts on: the
 * node type and the fields the SDK marks required for it, node IDs, every edge's
 * destination, component references and model choices; the rest of a node is
 * configuration kept as sent. The graph rules (unique IDs, start node, destinations,
 * components) are checked on the whole resulting flow by shared/agents/flows/flow-components.ts:
 * a draft is stored with their problems in `validation`; what runs it refuses them.
 * Schemas are built on first use (z.lazy).
 */
export const NODE_TYPES = [
  'conversation',
  'subagent',
  'end',
  'function',
  'code',
  'transfer_call',
  'press_digit',
  'branch',
  'sms',
  'extract_dynamic_variables',
  'agent_swap',
  'mcp',
  'component',
  'bridge_transfer',
  'cancel_transfer',
] as const;

;

const config = () => z.looseObject({});
const nodeId = () => z.string().min(1).max(128);
const text = (max: number) => z.string().max(max);

const modelChoice = () =>
  z.object({ model: llmModel(), type: z.literal('cascading'), high_priority: z.boolean().optional() });

const edge = () =>
  z.looseObject({
    id: z.string().min(1).max(128),
    destination_node_id: nodeId().optional(),
    transition_condition: z.looseObject({ type: z.enum(['prompt', 'equation']) }),
  });

const instruction = () =>
  z.looseObject({ type: z.enum(['prompt', 'static_text', 'template']), text: text(100_000).optional() });

/** Fields every node may carry that the published schema shows (the SDK's node types share them). */
const commonNodeFields = () => ({
  id: nodeId(),
  type: z.enum(NODE_TYPES),
  name: text(200).optional(),
  display_position: config().optional(),
  instruction: instruction().optional(),
  model_choice: modelChoice().optional(),
  edges: z.array(edge()).max(200).optional(),
});

/**
 * The other node fields Parley acts on: the single edges, go-back conditions and
 * transition examples (their destinations are graph references). Checked in the node's
 * refinement, with the fields its type requires, to keep the published schema small.
 */
const otherEdgeFields = () => ({
  always_edge: edge().optional(),
  else_edge: edge().optional(),
  skip_response_edge: edge().optional(),
  edge: edge().optional(),
  success_edge: edge().optional(),
  failed_edge: edge().optional(),
  global_node_setting: z
    .looseObject({ condition: text(10_000), go_back_conditions: z.array(edge()).max(64).optional() })
    .optional(),
  finetune_transition_examples: z
    .array(z.looseObject({ id: z.string().max(128), destination_node_id: nodeId().optional() }))
    .max(200)
    .optional(),
});

const waitForResult = () => z.boolean();

/** What each node type requires beyond the common fields (the SDK's required fields for that type). */
const requiredByType = (): Record<(typeof NODE_TYPES)[number], z.ZodRawShape> => ({
  conversation: { instruction: instruction() },
  subagent: { instruction: instruction() },
  end: {},
  function: { tool_id: z.string().min(1).max(128), tool_type: z.enum(['local', 'shared']), wait_for_result: waitForResult() },
  code: { code: text(100_000), wait_for_result: waitForResult() },
  transfer_call: { edge: edge(), transfer_destination: config(), transfer_option: config() },
  press_digit: { instruction: instruction() },
  branch: { else_edge: edge() },
  sms: { instruction: instruction(), success_edge: edge(), failed_edge: edge() },
  extract_dynamic_variables: { variables: z.array(config()).max(100) },
  agent_swap: {
    agent_id: z.string().min(1).max(128),
    edge: edge(),
    post_call_analysis_setting: z.enum(['both_agents', 'only_destination_agent']),
  },
  mcp: { mcp_id: z.string().min(1).max(128), mcp_tool_name: z.string().min(1).max(200), wait_for_result: waitForResult() },
  component: { component_id: z.string().min(1).max(200), component_type: z.enum(['local', 'shared']), else_edge: edge() },
  bridge_transfer: {},
  cancel_transfer: {},
});

/**
 * One node of a flow or component. The schema shows the common fields; a refinement
 * checks the single edges and what the node's `type` requires, so the published OpenAPI
 * document carries one small node schema rather than a union of fifteen.
 */
const FlowNode = lazySchema(() => {
  const others = otherEdgeFields();
  const byType = new Map<string, z.ZodType>(
    Object.entries(requiredByType()).map(([type, shape]) => [type, z.object({ ...others, ...shape })]),
  );
  return z
    .looseObject(commonNodeFields())
    .describe(
      'A node (shapes as in the compatible API). Also checked: always_edge, else_edge, skip_response_edge, edge, ' +
        'success_edge, failed_edge, global_node_setting.go_back_conditions and finetune_transition_examples, and the ' +
        'fields each type requires (e.g. conversation: instruction; component: component_id, component_type, else_edge; ' +
        'function: tool_id, tool_type, wait_for_result).',
    )
    .superRefine((node, ctx) => {
      const result = byType.get(node.type)!.safeParse(node, { reportInput: true });
      if (!result.success) for (const issue of result.error.issues) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
      refineTransferCall(node, ctx);
    });
});

const nodes = () => z.array(FlowNode).max(500);
const tools = () =>
  z
    .array(
      z
        .looseObject({
          type: z.string().min(1).max(64),
          name: text(64).optional(),
          tool_id: z.string().max(128).optional(),
          description: text(10_000).optional(),
        })
        .describe(APP_TOOL_DESCRIPTION)
        .superRefine(refineAppTool)
        .superRefine(refineTransferCall)
        .superRefine(refineCustomTool),
    )
    .max(128);
const mcps = () => z.array(z.looseObject({ name: text(128).optional(), url: destinationUrl().optional() })).max(32);
const notes = () => z.array(config()).max(200);
const position = () => z.object({ x: z.number().optional(), y: z.number().optional() });

/** What a component carries besides its name and nodes (inline in a flow, or shared). */
const componentExtras = () => ({
  start_node_id: nodeId().nullable().optional(),
  tools: tools().nullable().optional(),
  mcps: mcps().nullable().optional(),
  notes: notes().nullable().optional(),
  flex_mode: z.boolean().nullable().optional(),
  begin_tag_display_position: position().nullable().optional(),
  imported_from: importedFrom().optional(),
});

/** A local component, inline in a flow's `components`; component nodes name it by `name`. */
const inlineComponent = () => z.object({ name: z.string().min(1).max(200), nodes: nodes(), ...componentExtras() });

const flowFields = () => ({
  model_choice: modelChoice(),
  nodes: nodes(),
  start_speaker: z.enum(['user', 'agent']),
  start_node_id: nodeId().nullable(),
  global_prompt: text(100_000).nullable(),
  components: z.array(inlineComponent()).max(100).nullable(),
  tools: tools().nullable(),
  mcps: mcps().nullable(),
  notes: notes().nullable(),
  model_temperature: z.number().min(0).max(1).nullable(),
  tool_call_strict_mode: z.boolean().nullable(),
  flex_mode: z.boolean().nullable(),
  is_transfer_cf: z.boolean().nullable(),
  begin_after_user_silence_ms: z.number().int().min(0).max(600_000).nullable(),
  begin_tag_display_position: position().nullable(),
  default_dynamic_variables: z.record(z.string().max(128), z.string().max(10_000)).nullable(),
  knowledge_base_ids: z.array(idOf('knowledgeBase', 'a knowledge base ID')).max(100).nullable(),
  kb_config: config(),
  imported_from: importedFrom(),
});

/** Every flow field, optional: what an update may send. */
const allOptional = () => z.object(flowFields()).partial().shape;

/** Create: model_choice, nodes and start_speaker are required, as the SDK types say. */
export const CreateFlowBody = lazySchema(() =>
  z.object({ ...allOptional(), model_choice: modelChoice(), nodes: nodes(), start_speaker: z.enum(['user', 'agent']) }),
);
export type CreateFlowInput = z.infer<typeof CreateFlowBody>;

/** Update: every field optional; is_transfer_cf can only be set at creation, so it is dropped. */
export const UpdateFlowBody = lazySchema(() => {
  const { is_transfer_cf: _ignored, ...fields } = allOptional();
  return z.object(fields);
});
export type UpdateFlowInput = z.infer<typeof UpdateFlowBody>;

/** The problems of a saved graph, each `path: issue`; empty when it is complete. */
const validation = () =>
  z
    .array(z.string())
    .describe(
      'Problems of the graph as saved, each `path: issue` (e.g. an edge to a node not added yet); empty when complete. ' +
        'A draft may have them; publishing an agent version that runs it, binding it to a number and starting a call or chat refuse it with 400 until it has none.',
    );

export const ConversationFlow = lazySchema(() =>
  z.looseObject({
    conversation_flow_id: z.string(),
    version: z.number().int(),
    is_published: z.boolean(),
    last_modification_timestamp: epochMs(),
    ...allOptional(),
    validation: validation(),
  }),
);
export type ConversationFlow = z.infer<typeof ConversationFlow>;

export const CreateComponentBody = lazySchema(() =>
  z.object({ name: z.string().min(1).max(200), nodes: nodes(), ...componentExtras() }),
);
export type CreateComponentInput = z.infer<typeof CreateComponentBody>;

export const UpdateComponentBody = lazySchema(() =>
  z.object({ name: z.string().min(1).max(200).optional(), nodes: nodes().optional(), ...componentExtras() }),
);
export type UpdateComponentInput = z.infer<typeof UpdateComponentBody>;

export const FlowComponent = lazySchema(() =>
  z.looseObject({
    conversation_flow_component_id: z.string(),
    name: z.string(),
    nodes: nodes(),
    user_modified_timestamp: epochMs(),
    linked_conversation_flow_ids: z.array(z.string()),
    ...componentExtras(),
    validation: validation(),
  }),
);
export type FlowComponent = z.infer<typeof FlowComponent>;

export const page = <T extends z.ZodType>(item: T) =>
  z.object({ has_more: z.boolean(), items: z.array(item), pagination_key: z.string().optional() });

export const flowIdParams = lazySchema(() => z.object({ conversation_flow_id: idOf('conversationFlow', 'a conversation flow ID') }));
export const componentIdParams = lazySchema(() =>
  z.object({ component_id: idOf('flowComponent', 'a conversation flow component ID') }),
);
export const versionQueryParams = lazySchema(versionQuery);
const listQuery = (kind: 'conversationFlow' | 'flowComponent', label: string) => () =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 1000 }),
    pagination_key: idOf(kind, label).optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  });
export const flowListQuery = lazySchema(listQuery('conversationFlow', 'a conversation flow ID'));
export const componentListQuery = lazySchema(listQuery('flowComponent', 'a conversation flow component ID'));
