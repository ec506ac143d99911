/**
 * The agents domain's narrow entry for what reads agents while running calls, chats and
 * batches (the calls, chats and batches domains, the public share links): an agent version, its tags, a
 * version reference resolved, whether a version can run, and the reference items a batch
 * writes. It reaches the agent and chat agent schemas (an agent's view is built with them)
 * but not the LLM or flow schemas or the agent, LLM and flow writes: esbuild keeps every
 * reached module's top-level code, so taking these from index.ts put the flow and LLM
 * schemas into the calls functions' cold start for the one request field that needs them,
 * `agent_override` (shared/calls/agent-override.ts loads them when a request carries one;
 * docs/performance.md, "Narrow entries"). Everything here is exported by the
 * agents index.ts too.
 */
export { getAgent, resolveAgentVersion, taggedAgentVersions } from '../voice-agents/agents.ts';
export { getChatAgent } from '../chat-agents/chat-agents.ts';
export { assertRunnable } from '../versions/runnable.ts';
export { DEFAULT_LLM_MODEL } from '../llms/models.ts';
export { addAgentReferenceItems, removeAgentReferenceItems } from '../bindings/references.ts';
export type { AgentReferrer } from '../bindings/references.ts';
