/**
 * What other domains may use of agents: they import it from here (or from a part's
 * index.ts, or a narrow entry: lookups/, bindings/), never from its files (eslint
 * no-restricted-imports). Keep it small: every name here can pull its module into another
 * domain's bundle. The parts: voice-agents/, chat-agents/, llms/, flows/ (each with its
 * routes, schemas and logic), versions/ (what both agent kinds share), tools/ (what an
 * engine's tools point at), bindings/ (the reference items of what binds an agent), and
 * store.ts (the domain's own items).
 */
export { Agent, CreateAgentBody, LANGUAGES, RETELL_LLM_ENGINE, UpdateAgentBody,  } from './voice-agents/index.ts';
export type { UpdateAgentInput } from './voice-agents/index.ts';
export { createAgent, getAgent, resolveAgentVersion,  updateAgent } from './voice-agents/index.ts';
export { Llm, LlmBody } from './llms/index.ts';
export type { LlmInput } from './llms/index.ts';
export { createLlm, deleteLlm, getLlm, updateLlm } from './llms/index.ts';
export { DEFAULT_LLM_MODEL, LLM_MODELS, llmModel } from './llms/index.ts';
export type { LlmModel, S2S_MODELS } from './llms/index.ts';
;
export { assertRunnable } from './versions/index.ts';
/** A call's agent_override is checked like a saved LLM or flow (shared/calls/agent-override-schema.ts, loaded on demand). */
export { assertTransferRefs, flowTransferRefs, llmTransferRefs } from './tools/index.ts';
export type { TransferRef } from './tools/index.ts';
;
export type { VersionReference } from './versions/index.ts';
export { getChatAgent } from './chat-agents/index.ts';
;
export { getFlow } from './flows/index.ts';
export type { ConversationFlow } from './flows/index.ts';
export { UpdateFlowBody } from './flows/index.ts';
export type { ResponseEngine } from './versions/index.ts';
export { knowledgeBaseUsers } from './tools/index.ts';
/** The daily retention sweep (shared/account-data) skips workspaces where this is false. */
export { workspaceHasRetentionSetting } from './store.ts';
