import { randomBytes } from 'node:crypto';
import { workspaceReliability } from '../account/index.ts';
import { assertRunnable, DEFAULT_LLM_MODEL } from '../agents/lookups/index.ts';
import {
  agentTurn,
  closeConversation,
  completeWithFallback,
  openConversation,
  REPLY_MAX_TOKENS,
  type ConversationState,
  type LlmFallbackRecord,
  type TranscriptEvent,
  type TurnEvent,
  type TurnResult,
} from '../conversation/index.ts';
import { badRequest } from '../platform/errors.ts';
import type { ChatMessage as ModelMessage } from '../vendors/llm/index.ts';
import type { ChatMessage, PlaygroundCompletionInput, PlaygroundSimulationInput } from './schemas.ts';
import { transcriptText } from './view.ts';

/*
 * The agent playground: one turn of a voice or chat agent on a
 * conversation the caller holds (`agent-playground-completion`), and a whole conversation
 * against a simulated user (`agent-playground-simulation`). Both run the conversation
 * runtime exactly as calls and chats do, and store nothing: no call, no chat.
 */

const playgroundId = () => `playground_${randomBytes(12).toString('hex')}`;

async function openFor(workspaceId: string, agentId: string, version: string | undefined, variables: Record<string, string> | undefined) {
  const resolved = await assertRunnable(workspaceId, agentId, version ?? 'latest');
  // The workspace's LLM token limit and fallback model, as calls and chats run under them.
  const reliability = await workspaceReliability(workspaceId);
  const state = await openConversation({
    workspaceId,
    agentId,
    agentVersion: resolved.version,
    callId: playgroundId(),
    channel: agentId.startsWith('chat_agent_') ? 'chat' : 'voice',
    dynamicVariables: variables ?? {},
    // Nothing to transfer in a playground: transfer_call tells the agent so.
    canTransfer: false,
    // Nothing is stored for a playground conversation, its knowledge-base retrievals included.
    recordsUnder: null,
    ...(reliability.llmTokenLimit !== undefined ? { llmTokenLimit: reliability.llmTokenLimit } : {}),
    ...(reliability.fallbackLlmModel ? { fallbackLlmModel: reliability.fallbackLlmModel } : {}),
  });
  return { state, version: resolved.version };
}

/** The conversation the caller sends, as the runtime's history (transitions and other kinds are not what the model sees). */
function historyOf(messages: PlaygroundCompletionInput['messages']): TranscriptEvent[] {
  return messages.flatMap((m, i): TranscriptEvent[] => {
    const at = `messages.${i}`;
    if (m.role === 'agent' || m.role === 'user') {
      if (m.content === undefined) throw badRequest(`${at}.content: Required for a ${m.role} message`);
      return [{ role: m.role, content: m.content }];
    }
    if (m.role === 'tool_call_invocation') {
      if (!m.tool_call_id || !m.name || m.arguments === undefined) throw badRequest(`${at}: A tool_call_invocation needs tool_call_id, name and arguments`);
      return [{ role: m.role, tool_call_id: m.tool_call_id, name: m.name, arguments: m.arguments }];
    }
    if (m.role === 'tool_call_result') {
      if (!m.tool_call_id || m.content === undefined) throw badRequest(`${at}: A tool_call_result needs tool_call_id and content`);
      return [{ role: m.role, tool_call_id: m.tool_call_id, content: m.content, ...(m.successful !== undefined ? { successful: m.successful } : {}) }];
    }
    return [];
  });
}

/** A turn's events as messages (the runtime's word timings left out). */
function asMessages(events: readonly TranscriptEvent[]): ChatMessage[] {
  const now = Date.now();
  return events.map((event) => {
    const { words: _words, ...fields } = event as TranscriptEvent & { words?: unknown };
    return { ...(fields as ChatMessage), created_timestamp: now };
  });
}

export interface PlaygroundCompletionResult {
  messages: ChatMessage[];
  call_ended: boolean;
  current_node_id?: string;
  current_state?: string;
  dynamic_variables: Record<string, string>;
  /** Present when the workspace's fallback model answered in this turn. */
  llm_fallback?: LlmFallbackRecord;
}

/**
 * One agent turn on the given conversation: its opening when `messages` is empty, else its
 * reply to the last message, which must be the user's. `current_node_id` (flows) and
 * `current_state` (multi-state Retell LLMs) say where the conversation is; the answer says
 * where it went, the new messages (the user's left out) and the variables collected.
 */
export async function playgroundCompletion(
  workspaceId: string,
  agentId: string,
  version: string | undefined,
  input: PlaygroundCompletionInput,
): Promise<PlaygroundCompletionResult> {
  const last = input.messages.at(-1);
  let event: TurnEvent;
  let history: TranscriptEvent[];
  if (!last) {
    event = { type: 'call_started' };
    history = [];
  } else if (last.role === 'user') {
    history = historyOf(input.messages.slice(0, -1));
    event = { type: 'user_said', text: historyOf([last]).map((m) => (m as { content: string }).content)[0]! };
  } else {
    throw badRequest(`messages.${input.messages.length - 1}.role: The last message must be the user's (send no messages for the agent's opening)`);
  }
  const opened = await openFor(workspaceId, agentId, version, input.dynamic_variables);
  const state: ConversationState = {
    ...opened.state,
    history,
    ...(input.current_node_id ? { node_id: input.current_node_id } : {}),
    ...(input.current_state ? { llm_state: input.current_state } : {}),
    // Mocked tools answer their output instead of running (shared/conversation/tools/tool-mocks.ts).
    ...(input.tool_mocks?.length ? { tool_mocks: input.tool_mocks } : {}),
  };
  let result: TurnResult;
  try {
    result = await agentTurn(state, event);
  } finally {
    closeConversation(state);
  }
  const events = event.type === 'user_said' && result.events[0]?.role === 'user' ? result.events.slice(1) : result.events;
  return {
    messages: asMessages(events),
    call_ended: result.end !== undefined,
    ...(result.state.node_id ? { current_node_id: result.state.node_id } : {}),
    ...(result.state.llm_state ? { current_state: result.state.llm_state } : {}),
    dynamic_variables: result.state.collected_dynamic_variables,
    ...(result.state.llm_fallback ? { llm_fallback: result.state.llm_fallback } : {}),
  };
}

/** The completion as server-sent events: one `message` event per new message, then `done` with the whole answer. */
export function completionEvents(result: PlaygroundCompletionResult): string {
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  return [...result.messages.map((message) => event('message', message)), event('done', result)].join('');
}

/** Simulations stop starting new turns after this long, so the answer comes inside API Gateway's 30 s. */
const SIMULATION_BUDGET_MS = 20_000;

/** The simulated user's next line: the model plays the user the prompt describes, seeing the agent's lines as the other side. */
async function simulatedUserLine(userPrompt: string, history: readonly TranscriptEvent[], fallbackModel: string | undefined): Promise<string> {
  const messages: ModelMessage[] = [
    {
      role: 'system',
      content: `You are role-playing a user talking with an AI agent by chat. Stay in character and reply with the user's next message only.\n\nThe user: ${userPrompt}`,
    },
    ...history.flatMap((entry): ModelMessage[] =>
      entry.role === 'agent' ? [{ role: 'user', content: entry.content }] : entry.role === 'user' ? [{ role: 'assistant', content: entry.content }] : [],
    ),
  ];
  const answer = await completeWithFallback({ model: DEFAULT_LLM_MODEL, messages, maxTokens: REPLY_MAX_TOKENS, timeoutMs: 15_000 }, fallbackModel);
  return answer.content.trim() || '…';
}

/**
 * Runs the agent (voice or chat) against a simulated user for up to `max_turns` user turns,
 * without creating a call or a chat: the agent opens, then the simulated user and the
 * agent take turns until the agent ends the conversation, the turns run out, or the time
 * budget does. Answers the transcript.
 */
export async function playgroundSimulation(workspaceId: string, agentId: string, input: PlaygroundSimulationInput) {
  const startedAt = Date.now();
  const opened = await openFor(workspaceId, agentId, input.version, input.dynamic_variables);
  let state = opened.state;
  const events: TranscriptEvent[] = [];
  let turns = 0;
  let endedBy: 'agent' | 'max_turns' | 'time_budget';
  try {
    let result = await agentTurn(state, { type: 'call_started' });
    for (;;) {
      state = result.state;
      events.push(...result.events);
      if (result.end) {
        endedBy = 'agent';
        break;
      }
      if (turns >= input.max_turns) {
        endedBy = 'max_turns';
        break;
      }
      if (Date.now() - startedAt > SIMULATION_BUDGET_MS) {
        endedBy = 'time_budget';
        break;
      }
      const line = await simulatedUserLine(input.user_prompt, state.history, state.fallback_llm_model);
      result = await agentTurn(state, { type: 'user_said', text: line });
      turns++;
    }
  } finally {
    closeConversation(state);
  }
  const messages = asMessages(events);
  return {
    agent_id: agentId,
    version: opened.version,
    turns,
    ended_by: endedBy,
    messages,
    transcript: transcriptText(messages),
    ...(state.llm_fallback ? { llm_fallback: state.llm_fallback } : {}),
  };
}
