import * as z from 'zod';
import { LlmBody, UpdateAgentBody, UpdateFlowBody } from '../agents/index.ts';
import { Invalid } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { wire } from '../platform/naming.ts';
import { assertVoiceUsable } from '../voices/index.ts';

/*
 * agent_override: one call's configuration over its agent version's (retell-sdk
 * CallCreatePhoneCallParams.AgentOverride; spec: call_inbound.agent_override). Each part
 * uses the field names and validation of its update route: `agent` update-agent's
 * (`response_engine` ignored), `retell_llm` the LLM update's, `conversation_flow` the flow
 * update's (its graph, `nodes`, `start_node_id` and `components`, ignored: a call cannot
 * run a graph nobody checked). The override is kept on the call (engine.agent_override);
 * nothing is written to the agent, the LLM or the flow.
 */

/** The override as the call keeps it: the parts as validated, under neutral names. */
export interface AgentOverride {
  agent?: Record<string, unknown>;
  llm?: Record<string, unknown>;
  flow?: Record<string, unknown>;
}

const LLM_KEY = `${wire.compat}_llm` as const;
/** Flow fields an override never changes: the graph. */
const FLOW_GRAPH_FIELDS = ['nodes', 'start_node_id', 'components'];

const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);
const without = (fields: readonly string[]) => (value: unknown) =>
  isObject(value) ? Object.fromEntries(Object.entries(value).filter(([name]) => !fields.includes(name))) : value;

/** The request field's schema (create-phone-call, create-web-call, register-phone-call). */
export const agentOverrideSchema = () =>
  z.object({
    agent: z.preprocess(without(['response_engine']), UpdateAgentBody).optional(),
    [LLM_KEY]: LlmBody.optional(),
    conversation_flow: z.preprocess(without(FLOW_GRAPH_FIELDS), UpdateFlowBody).optional(),
  });

export type AgentOverrideInput = z.infer<ReturnType<typeof agentOverrideSchema>>;

const nonEmpty = (value: unknown): Record<string, unknown> | undefined =>
  isObject(value) && Object.keys(value).length > 0 ? value : undefined;

/**
 * The parsed request field as the call keeps it, after the checks the update routes make
 * beyond the schema (a voice must exist: 400 `agent_override.agent.voice_id: …`).
 * Undefined when nothing is overridden.
 */
export async function checkedAgentOverride(workspaceId: string, input: AgentOverrideInput | undefined): Promise<AgentOverride | undefined> {
  if (!input) return undefined;
  const parts = input as Record<string, unknown>;
  const override: AgentOverride = {
    ...(nonEmpty(parts.agent) ? { agent: nonEmpty(parts.agent) } : {}),
    ...(nonEmpty(parts[LLM_KEY]) ? { llm: nonEmpty(parts[LLM_KEY]) } : {}),
    ...(nonEmpty(parts.conversation_flow) ? { flow: nonEmpty(parts.conversation_flow) } : {}),
  };
  const voiceId = override.agent?.voice_id;
  if (typeof voiceId === 'string') {
    try {
      await assertVoiceUsable(workspaceId, voiceId);
    } catch (error) {
      if (error instanceof Invalid) throw new Invalid(`agent_override.agent.${error.message}`);
      throw error;
    }
  }
  return Object.keys(override).length ? override : undefined;
}

/**
 * The inbound webhook's `call_inbound.agent_override`: validated like a create request's,
 * but an invalid one is dropped and logged, and the call goes on with the agent as it is
 * (the caller is already ringing; docs/calls.md).
 */
export async function inboundAgentOverride(workspaceId: string, callId: string, raw: unknown): Promise<AgentOverride | undefined> {
  if (raw === undefined) return undefined;
  const parsed = agentOverrideSchema().safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `agent_override.${issue.path.join('.')}: ${issue.message}`).join('; ');
    logger.warn('dropping an invalid agent_override from the call_inbound webhook', { call_id: callId, issues });
    return undefined;
  }
  try {
    return await checkedAgentOverride(workspaceId, parsed.data);
  } catch (error) {
    if (!(error instanceof Invalid)) throw error;
    logger.warn('dropping an invalid agent_override from the call_inbound webhook', { call_id: callId, issues: error.message });
    return undefined;
  }
}

/** The agent version's fields with the call's `agent` override over them (webhooks, analysis). */
export function withAgentOverride<T extends Record<string, unknown>>(agent: T, override: AgentOverride | undefined): T {
  return override?.agent ? { ...agent, ...override.agent } : agent;
}
