/**
 * What other domains may use of the conversation runtime (calls now, chats later): they
 * import it from here, never from its files (eslint no-restricted-imports).
 */
export { agentTurn, closeConversation, composeMessage, noteToAgent, openConversation, transcriptObject } from './conversation.ts';
export { analyzeConversation } from './analysis.ts';
export { transferOptions } from './model-turn.ts';
export { completeWithFallback, type FallbackUse } from './fallback.ts';
export { retrieveForAgent, type AgentRetrieval } from './knowledge.ts';
export { DEFAULT_LLM_TOKEN_LIMIT, MAX_LLM_TOKEN_LIMIT, MIN_LLM_TOKEN_LIMIT, REPLY_MAX_TOKENS } from './context-window.ts';
export { CustomLlmFailed, type CustomLlmFailure } from './custom-llm.ts';
export type {
  AgentNote,
  AgenticTransferConfig,
  HandoffOption,
  TransferAsk,
  TransferOptions,
  AnalyzeConversationInput,
  CallAnalysis,
  Channel,
  ConfigOverrides,
  ConversationState,
  EngineRef,
  LlmFallbackRecord,
  NodeTransition,
  OpenConversationInput,
  ToolCallInvocation,
  ToolCallResult,
  TranscriptEvent,
  TranscriptObject,
  TurnEvent,
  ToolMock,
  TurnResult,
} from './types.ts';
