/**
 * The response engines (docs/conversation.md): a Retell LLM (retell-llm.ts), a conversation
 * flow walked node by node (flow.ts) and a custom LLM over its WebSocket (custom-llm.ts).
 * The two that ask the language model share its loop and a turn's output (model-turn.ts),
 * what the model sees within the token limit (context-window.ts), the workspace's fallback
 * model (fallback.ts) and the knowledge-base retrieval before answering (knowledge.ts).
 * This is what ../conversation.ts and ../runtime.ts use of them; every file here is part of
 * the runtime, so nothing that ../index.ts answers without loading it comes from here
 * (../index.ts takes only types).
 */
export { retellLlmTurn } from './retell-llm.ts';
export { flowTurn } from './flow.ts';
export { closeCustomLlm, customLlmTurn, CustomLlmFailed } from './custom-llm.ts';
export type { CustomLlmFailure } from './custom-llm.ts';
export { TurnDiscarded, TurnOutput, type TurnIo } from './model-turn.ts';
export { fitToTokenLimit, historyMessages } from './context-window.ts';
export { completeWithFallback } from './fallback.ts';
export type { FallbackUse } from './fallback.ts';
export { retrieveForAgent } from './knowledge.ts';
export type { AgentRetrieval } from './knowledge.ts';
