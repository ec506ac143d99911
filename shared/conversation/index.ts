import type * as RuntimeModule from './runtime.ts';
import type { StreamingTurn } from './types.ts';
import { loadOnce } from '../platform/lazy.ts';

/**
 * What other domains may use of the conversation runtime (calls, chats): they import it
 * from here, never from its files (eslint no-restricted-imports).
 *
 * The runtime itself (runtime.ts: the engines, the LLM vendors, tool execution with the
 * integrations' app tools and OAuth client, knowledge retrieval) is loaded with `import()`
 * by the first call that needs it, once per process: the functions that import this entry
 * (calls, call-steps, chats, public, batch-tick) serve many requests that never converse,
 * and esbuild puts a module reached only through `import()` in a chunk their cold start
 * does not load (docs/performance.md). What is cheap and synchronous (the transfer
 * options and the built-in mediator, notes, the transcript object, the variables, the
 * limits) comes from light modules: state.ts, variables.ts, limits.ts and transfers/index.ts.
 */

type Runtime = typeof RuntimeModule;

/** The runtime once loaded, for what must answer synchronously (streamAgentTurn). */
let loaded: Runtime | undefined;
/** Whether anything asked for the runtime yet (closeConversation has nothing to release before). */
let asked = false;
/** The runtime, loaded on first use, once per process (a failed load is tried again). */
const runtime = loadOnce((): Promise<Runtime> => {
  asked = true;
  return import('./runtime.ts').then((module) => (loaded = module));
});

/** Loads the agent version and its engine version, and answers the state of a new conversation (conversation.ts). */
export async function openConversation(...args: Parameters<Runtime['openConversation']>): ReturnType<Runtime['openConversation']> {
  return (await runtime()).openConversation(...args);
}

/** The agent's turn: its opening on `call_started`, its reply to the user's line on `user_said` (conversation.ts). */
export async function agentTurn(...args: Parameters<Runtime['agentTurn']>): ReturnType<Runtime['agentTurn']> {
  return (await runtime()).agentTurn(...args);
}

/**
 * The agent's turn as it happens (the voice worker): its words as the model writes them, its
 * tool calls and node moves as they run, then `commit` with what the caller heard
 * (conversation.ts; docs/conversation.md, "Streaming turns"). Answers at once: the runtime
 * loads (on a first use) behind `events`.
 */
export function streamAgentTurn(...args: Parameters<Runtime['streamAgentTurn']>): StreamingTurn {
  if (loaded) return loaded.streamAgentTurn(...args);
  let ready: StreamingTurn | undefined;
  const turn = runtime().then((module) => (ready = module.streamAgentTurn(...args)));
  return {
    events: {
      async *[Symbol.asyncIterator]() {
        yield* (await turn).events;
      },
    },
    commit(spoken) {
      if (!ready) throw new Error('The turn is still running: commit it once its events have ended');
      return ready.commit(spoken);
    },
    firstTokenMs: turn.then(
      (started) => started.firstTokenMs,
      () => undefined,
    ),
  };
}

/** A message the agent's model composes from an instruction and the conversation so far (conversation.ts). */
export async function composeMessage(...args: Parameters<Runtime['composeMessage']>): ReturnType<Runtime['composeMessage']> {
  return (await runtime()).composeMessage(...args);
}

/**
 * Releases what this process holds for the conversation (a custom LLM's socket); call it
 * when the call or chat ends. A process that never loaded the runtime holds nothing for it;
 * one still loading it releases once loaded.
 */
export function closeConversation(...args: Parameters<Runtime['closeConversation']>): void {
  if (loaded) loaded.closeConversation(...args);
  else if (asked) void runtime().then((module) => module.closeConversation(...args), () => undefined);
}

/** Post-call (or post-chat) analysis (analysis/analysis.ts). */
export async function analyzeConversation(...args: Parameters<Runtime['analyzeConversation']>): ReturnType<Runtime['analyzeConversation']> {
  return (await runtime()).analyzeConversation(...args);
}

/** One model call with the workspace's fallback model (engines/fallback.ts). */
export async function completeWithFallback(...args: Parameters<Runtime['completeWithFallback']>): ReturnType<Runtime['completeWithFallback']> {
  return (await runtime()).completeWithFallback(...args);
}

/** Knowledge retrieval for a turn someone else drives (engines/knowledge.ts). */
export async function retrieveForAgent(...args: Parameters<Runtime['retrieveForAgent']>): ReturnType<Runtime['retrieveForAgent']> {
  return (await runtime()).retrieveForAgent(...args);
}

/** An agentic transfer's transfer agent, opened and told who is waiting (transfers/transfer-agent.ts). */
export async function openTransferAgent(...args: Parameters<Runtime['openTransferAgent']>): ReturnType<Runtime['openTransferAgent']> {
  return (await runtime()).openTransferAgent(...args);
}

/** The transfer agent's turn with the destination: what it says, its entries, its decision (transfers/transfer-agent.ts). */
export async function transferAgentTurn(...args: Parameters<Runtime['transferAgentTurn']>): ReturnType<Runtime['transferAgentTurn']> {
  return (await runtime()).transferAgentTurn(...args);
}

export { noteToAgent, transcriptObject } from './state.ts';
export { mediatorDecision, mediatorGreeting, transferOptions } from './transfers/index.ts';
export { fillTemplate, variablesOf } from './variables.ts';
export { DEFAULT_LLM_TOKEN_LIMIT, MAX_LLM_TOKEN_LIMIT, MIN_LLM_TOKEN_LIMIT, REPLY_MAX_TOKENS } from './limits.ts';
export type { AgentRetrieval, CustomLlmFailure, FallbackUse } from './engines/index.ts';
export type { OpenTransferAgentInput, TransferAgentTurn } from './transfers/transfer-agent.ts';
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
  DataStorageSetting,
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
  StreamingTurn,
  StreamTurnOptions,
  TurnStreamEvent,
} from './types.ts';
