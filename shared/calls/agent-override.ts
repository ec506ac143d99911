import { Invalid } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { assertVoiceUsable } from '../voices/index.ts';
import type * as OverrideSchema from './agent-override-schema.ts';
import { loadOnce } from '../platform/lazy.ts';

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

/**
 * The override's schema (the agent, LLM and flow update bodies), loaded by the first request
 * that carries one: most calls carry none (docs/performance.md, "Sizes: cold and lazy").
 */
const loadSchema = loadOnce((): Promise<typeof OverrideSchema> => import('./agent-override-schema.ts'));

const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

const nonEmpty = (value: unknown): Record<string, unknown> | undefined =>
  isObject(value) && Object.keys(value).length > 0 ? value : undefined;

/**
 * The parsed request field as the call keeps it, after the checks the update routes make
 * beyond the schema (a voice must exist: 400 `agent_override.agent.voice_id: …`; a transfer
 * tool's hold-music asset and transfer agent must be the workspace's, as when an LLM or flow
 * is saved: agent-override-schema.ts).
 * Undefined when nothing is overridden.
 */
export async function checkedAgentOverride(workspaceId: string, input: unknown): Promise<AgentOverride | undefined> {
  if (input === undefined) return undefined;
  const { LLM_KEY, assertOverrideTransferRefs, parseAgentOverride } = await loadSchema();
  const parts = parseAgentOverride(input);
  await assertOverrideTransferRefs(workspaceId, parts);
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
  try {
    return await checkedAgentOverride(workspaceId, raw);
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
