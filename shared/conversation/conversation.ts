import { DEFAULT_LLM_MODEL, getAgent, getChatAgent, getFlow, getLlm, type ResponseEngine } from '../agents/index.ts';
import { badRequest } from '../platform/errors.ts';
import { DEFAULT_LLM_TOKEN_LIMIT, MAX_LLM_TOKEN_LIMIT, MIN_LLM_TOKEN_LIMIT, REPLY_MAX_TOKENS } from './limits.ts';
import {
  closeCustomLlm,
  completeWithFallback,
  customLlmTurn,
  fitToTokenLimit,
  flowTurn,
  historyMessages,
  retellLlmTurn,
  TurnDiscarded,
  TurnOutput,
  type TurnIo,
} from './engines/index.ts';
import { EventQueue } from './event-queue.ts';
import type {
  ConfigOverrides,
  ConversationState,
  EngineRef,
  OpenConversationInput,
  StreamingTurn,
  StreamTurnOptions,
  TurnEvent,
  TurnResult,
  TurnStreamEvent,
} from './types.ts';

/*
 * The text-level conversation runtime: the call engine's sandbox (and later the LiveKit
 * agent worker and chats) open a conversation, then drive it turn by turn. Nothing here
 * knows about calls beyond their ID and numbers: the state is plain JSON the caller
 * stores between turns. See docs/conversation.md.
 */

/** Loads the agent version and its engine version, and answers the state of a new conversation. */
export async function openConversation(input: OpenConversationInput): Promise<ConversationState> {
  const engine = input.engine ?? engineRef((await agentOf(input)).response_engine as ResponseEngine);
  const defaults = await engineDefaults(input.workspaceId, engine, input.overrides);
  const limit = input.llmTokenLimit ?? DEFAULT_LLM_TOKEN_LIMIT;
  if (!Number.isInteger(limit) || limit < MIN_LLM_TOKEN_LIMIT || limit > MAX_LLM_TOKEN_LIMIT) {
    throw badRequest(`llm_token_limit: Must be an integer from ${MIN_LLM_TOKEN_LIMIT} to ${MAX_LLM_TOKEN_LIMIT}`);
  }
  return {
    v: 1,
    workspace_id: input.workspaceId,
    agent_id: input.agentId,
    agent_version: input.agentVersion,
    call_id: input.callId,
    channel: input.channel,
    engine,
    dynamic_variables: { ...defaults, ...input.dynamicVariables },
    collected_dynamic_variables: {},
    ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
    ...(input.fromNumber ? { from_number: input.fromNumber } : {}),
    ...(input.toNumber ? { to_number: input.toNumber } : {}),
    token_limit: limit,
    history: [],
    ...(input.overrides && Object.keys(input.overrides).length ? { overrides: input.overrides } : {}),
    ...(input.canTransfer === false ? { can_transfer: false } : {}),
    ...(input.fallbackLlmModel ? { fallback_llm_model: input.fallbackLlmModel } : {}),
    ...(input.recordsUnder !== undefined ? { records_under: input.recordsUnder } : {}),
    ...(input.dataStorageSetting ? { data_storage_setting: input.dataStorageSetting } : {}),
  };
}

const agentOf = (input: OpenConversationInput) =>
  input.agentId.startsWith('chat_agent_')
    ? getChatAgent(input.workspaceId, input.agentId, input.agentVersion)
    : getAgent(input.workspaceId, input.agentId, input.agentVersion);

function engineRef(engine: ResponseEngine): EngineRef {
  if (engine.type === 'custom-llm') return { type: 'custom-llm', llm_websocket_url: engine.llm_websocket_url };
  if (typeof engine.version !== 'number') throw new Error('An agent version always pins its engine version');
  if (engine.type === 'conversation-flow') return { type: 'conversation-flow', conversation_flow_id: engine.conversation_flow_id, version: engine.version };
  return { type: 'retell-llm', llm_id: engine.llm_id, version: engine.version };
}

async function engineDefaults(workspaceId: string, engine: EngineRef, overrides: ConfigOverrides | undefined): Promise<Record<string, string>> {
  if (engine.type === 'retell-llm') {
    const llm = { ...(await getLlm(workspaceId, engine.llm_id, engine.version)), ...(overrides?.llm ?? {}) };
    return (llm.default_dynamic_variables as Record<string, string> | null | undefined) ?? {};
  }
  if (engine.type === 'conversation-flow') {
    const flow = { ...(await getFlow(workspaceId, engine.conversation_flow_id, engine.version)), ...(overrides?.flow ?? {}) };
    return (flow.default_dynamic_variables as Record<string, string> | null | undefined) ?? {};
  }
  return {};
}

/**
 * The agent's turn: its opening on `call_started`, its reply to the user's line on
 * `user_said`. The given state is not changed; the answer carries the next one.
 *
 * The streaming turn run to its end and committed as fully heard: one code path, so what
 * a chat, the sandbox and the voice worker record cannot drift apart. It asks the model for
 * whole answers (`complete`): nobody is waiting on its first words.
 */
export async function agentTurn(state: ConversationState, event: TurnEvent): Promise<TurnResult> {
  const turn = runTurn(state, event, {});
  for await (const _ of turn.events) {
    // Only the result matters here.
  }
  return turn.commit({ text: '', interrupted: false });
}

/**
 * The agent's turn as it happens (the voice worker): its words as the model writes them and
 * its tool calls and node moves as they run, then `commit` with what the caller heard. See
 * docs/conversation.md, "Streaming turns".
 */
export function streamAgentTurn(state: ConversationState, event: TurnEvent, options: StreamTurnOptions = {}): StreamingTurn {
  return runTurn(state, event, { ...options, stream: true });
}

/** Starts the turn at once (a preemptive reply gains the time); its events and outcome wait for the reader. */
function runTurn(state: ConversationState, event: TurnEvent, io: TurnIo): StreamingTurn {
  const stopped = new AbortController();
  const signal = io.signal ? AbortSignal.any([io.signal, stopped.signal]) : stopped.signal;
  const queue = new EventQueue<TurnStreamEvent>();
  let tokenMs: (ms: number | undefined) => void = () => undefined;
  const firstTokenMs = new Promise<number | undefined>((resolve) => (tokenMs = resolve));
  const out = new TurnOutput(structuredClone(state), {
    ...io,
    signal,
    emit: (item) => queue.push(item),
    onFirstToken: (ms) => tokenMs(Math.round(ms)),
  });
  let outcome: { kind: 'running' } | { kind: 'finished' } | { kind: 'discarded' } | { kind: 'failed'; error: unknown } = { kind: 'running' };
  const running = (async () => {
    try {
      if (!out.state.ended) {
        if (out.state.engine.type === 'retell-llm') await retellLlmTurn(out, event);
        else if (out.state.engine.type === 'conversation-flow') await flowTurn(out, event);
        else await customLlmTurn(out, event);
      }
      outcome = { kind: 'finished' };
    } catch (error) {
      // Aborted: the turn stops where it stands, and what it said so far is committed as heard.
      if (signal.aborted) outcome = { kind: 'finished' };
      else if (error instanceof TurnDiscarded) outcome = { kind: 'discarded' };
      else outcome = { kind: 'failed', error };
    }
    // An answer cut short by the abort keeps what was streamed of it: commit cuts it to what was heard.
    out.endText();
    tokenMs(undefined);
    if (outcome.kind === 'failed') queue.fail(outcome.error);
    else queue.end();
  })();
  let read = false;
  return {
    events: {
      async *[Symbol.asyncIterator]() {
        if (read) throw new Error("A turn's events can be read once");
        read = true;
        try {
          yield* queue;
        } finally {
          // The reader stopped early: the turn stops too (no further model words, no further tool).
          if (outcome.kind === 'running') stopped.abort(new Error('The reader stopped reading the turn'));
          await running;
        }
      },
    },
    commit(spoken) {
      if (outcome.kind === 'running') throw new Error('The turn is still running: commit it once its events have ended');
      if (outcome.kind === 'discarded') throw new TurnDiscarded();
      if (outcome.kind === 'failed') throw outcome.error;
      return spoken.interrupted ? out.heard(spoken.text) : out.result();
    },
    firstTokenMs,
  };
}

/**
 * A message composed by the agent's model from `instruction` and the conversation so far
 * (a warm transfer's prompt-type handoff): the Retell LLM's model, else the default one
 * (flows and custom LLMs). Not recorded on the state; the caller says it.
 */
export async function composeMessage(state: ConversationState, instruction: string): Promise<string> {
  const model = state.engine.type === 'retell-llm' ? ((await getLlm(state.workspace_id, state.engine.llm_id, state.engine.version)).model ?? DEFAULT_LLM_MODEL) : DEFAULT_LLM_MODEL;
  const messages = fitToTokenLimit([{ role: 'system', content: instruction }], historyMessages(state.history), state.token_limit);
  const answer = await completeWithFallback({ model, messages, maxTokens: REPLY_MAX_TOKENS }, state.fallback_llm_model);
  return answer.content.trim();
}

/** Releases what this process holds for the conversation (a custom LLM's socket); call it when the call or chat ends. */
export function closeConversation(state: Pick<ConversationState, 'call_id'>): void {
  closeCustomLlm(state.call_id);
}
