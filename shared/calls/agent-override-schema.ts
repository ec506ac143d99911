import * as z from 'zod';
import { assertTransferRefs, flowTransferRefs, llmTransferRefs, LlmBody, UpdateAgentBody, UpdateFlowBody, type TransferRef } from '../agents/index.ts';
import { parseOrThrow } from '../platform/http/validation.ts';
import { wire } from '../platform/naming.ts';

/*
 * The schema of agent_override (agent-override.ts): the agent, LLM and flow update bodies.
 * Loaded by the first request that carries an override, so the calls functions do not load
 * the LLM and flow schemas at cold start (docs/performance.md, "Sizes:
 * cold and lazy").
 */

export const LLM_KEY = `${wire.compat}_llm` as const;
/** Flow fields an override never changes: the graph. */
const FLOW_GRAPH_FIELDS = ['nodes', 'start_node_id', 'components'];

const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);
const without = (fields: readonly string[]) => (value: unknown) =>
  isObject(value) ? Object.fromEntries(Object.entries(value).filter(([name]) => !fields.includes(name))) : value;

/** The full check of the request field (create-phone-call, create-web-call, the inbound answer); the route's contract only names its parts (schemas.ts). */
export const agentOverrideSchema = () =>
  z.object({
    agent: z.preprocess(without(['response_engine']), UpdateAgentBody).optional(),
    [LLM_KEY]: LlmBody.optional(),
    conversation_flow: z.preprocess(without(FLOW_GRAPH_FIELDS), UpdateFlowBody).optional(),
  });

/** The request field parsed (400 naming `agent_override.…` on a bad part), its parts under their wire names. */
export const parseAgentOverride = (input: unknown): Record<string, unknown> =>
  parseOrThrow(z.object({ agent_override: agentOverrideSchema() }), { agent_override: input }, 'agent_override').agent_override as Record<string, unknown>;

/**
 * The workspace checks a saved LLM or flow gets (shared/agents/tools/transfer-checks.ts), on the
 * override's transfer tools: custom hold music must name an audio asset of the workspace, an
 * agentic transfer's `transfer_agent` an agent (and version) of the workspace; another
 * workspace's is not found. 400 with the same messages, paths under `agent_override.…`
 * (`agent_override.retell_llm.general_tools.0.transfer_option.custom_on_hold_music_asset_id:
 * Asset … not found`). `parts` is parseAgentOverride's answer (a flow part has no graph).
 */
export async function assertOverrideTransferRefs(workspaceId: string, parts: Record<string, unknown>): Promise<void> {
  const under = (prefix: string, refs: TransferRef[]) => refs.map((ref) => ({ ...ref, path: `agent_override.${prefix}.${ref.path}` }));
  const llm = parts[LLM_KEY];
  const flow = parts.conversation_flow;
  await assertTransferRefs(workspaceId, [
    ...(isObject(llm) ? under(LLM_KEY, llmTransferRefs(llm)) : []),
    ...(isObject(flow) ? under('conversation_flow', flowTransferRefs(flow)) : []),
  ]);
}
