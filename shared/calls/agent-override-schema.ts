import * as z from 'zod';
import { LlmBody, UpdateAgentBody, UpdateFlowBody } from '../agents/index.ts';
import { parseOrThrow } from '../platform/http/validation.ts';
import { wire } from '../platform/naming.ts';

/*
 * The schema of agent_override (agent-override.ts): the agent, LLM and flow update bodies.
 * Loaded by the first request that carries an override, so the calls functions do not load
 * the LLM and flow schemas at cold start (docs/performance.md, 2026-11-24, "margin under
 * 700 KiB").
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
