/**
 * What other domains may use of agents: they import it from here, never from its
 * files (eslint no-restricted-imports). Keep it small: every name here can pull its module
 * into another domain's bundle.
 */
export { Agent, CreateAgentBody, LANGUAGES, RETELL_LLM_ENGINE, UpdateAgentBody, tagName } from './agent-schemas.ts';
export type { UpdateAgentInput } from './agent-schemas.ts';
export { createAgent, getAgent, resolveAgentVersion, taggedAgentVersions, updateAgent } from './agents.ts';
export { Llm, LlmBody } from './llm-schemas.ts';
export type { LlmInput } from './llm-schemas.ts';
export { createLlm, deleteLlm, getLlm, updateLlm } from './llms.ts';
export { DEFAULT_LLM_MODEL, LLM_MODELS, llmModel } from './models.ts';
export type { LlmModel, S2S_MODELS } from './models.ts';
export { addAgentReferenceItems, removeAgentReferenceItems } from './references.ts';
export { assertRunnable } from './runnable.ts';
/** A call's agent_override is checked like a saved LLM or flow (shared/calls/agent-override-schema.ts, loaded on demand). */
export { assertTransferRefs, flowTransferRefs, llmTransferRefs } from './transfer-checks.ts';
export type { TransferRef } from './transfer-checks.ts';
export type { AgentReferrer } from './references.ts';
export type { VersionReference } from './version-references.ts';
export { getChatAgent } from './chat-agents.ts';
export type { ChatAgent } from './chat-agent-schemas.ts';
export { getFlow } from './conversation-flows.ts';
export type { ConversationFlow } from './flow-schemas.ts';
export { UpdateFlowBody } from './flow-schemas.ts';
export type { ResponseEngine } from './agent-fields.ts';
export { knowledgeBaseUsers } from './knowledge-base-users.ts';
/** The daily retention sweep (shared/account-data) skips workspaces where this is false. */
export { workspaceHasRetentionSetting } from './store.ts';
