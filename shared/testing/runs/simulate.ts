import { workspaceReliability } from '../../account/index.ts';
import {
  agentTurn,
  closeConversation,
  completeWithFallback,
  openConversation,
  type ConversationState,
  type EngineRef,
  type TranscriptEvent,
} from '../../conversation/index.ts';
import { defineOfflineShape, type ChatMessage as ModelMessage } from '../../vendors/llm/index.ts';
import type { TestCaseDefinition } from '../definitions/index.ts';

/*
 * One test run's conversation: the response engine runs through the conversation runtime
 * exactly as in calls, chats and the playground (openConversation and agentTurn, tool
 * mocks in the state), against a simulated caller the definition's model plays. Nothing is
 * stored for the conversation itself (no call, no chat, no knowledge-base retrieval record):
 * the run keeps its transcript.
 */

/** The caller's turns one run may take, and the time after which it starts no new turn. */
const MAX_CALLER_TURNS = 10;
const RUN_BUDGET_MS = 60_000;

export interface Simulation {
  messages: TranscriptEvent[];
  caller_turns: number;
  ended_by: 'agent' | 'caller' | 'max_turns' | 'time_budget';
}

const CALLER_HINT = 'test_caller';
const CALLER_MARK = '\n\nThe caller you play:\n';

/** The phrases a prompt quotes ("…" or “…”), in order. */
export function quotedPhrases(text: string): string[] {
  return [...text.matchAll(/"([^"]+)"|“([^“”]+)”/g)].map((match) => (match[1] ?? match[2]!).trim()).filter(Boolean);
}

/**
 * The offline caller, by rule: it says the phrases its prompt quotes, one a turn, in order
 * (without any, the prompt's first sentence), then "Goodbye.", then hangs up.
 */
defineOfflineShape(CALLER_HINT, ({ request, system }) => {
  const prompt = system.includes(CALLER_MARK) ? system.slice(system.indexOf(CALLER_MARK) + CALLER_MARK.length) : system;
  const quoted = quotedPhrases(prompt);
  const lines = quoted.length ? quoted : [prompt.split(/(?<=[.!?])\s/)[0]!.trim()];
  const said = request.messages.filter((message) => message.role === 'assistant').length;
  if (said < lines.length) return { line: lines[said], hang_up: false };
  if (said === lines.length) return { line: 'Goodbye.', hang_up: false };
  return { line: '', hang_up: true };
});

/** The simulated caller's next line, or that it hangs up: the model plays the caller the prompt describes. */
async function callerTurn(definition: TestCaseDefinition, history: readonly TranscriptEvent[], fallbackModel: string | undefined): Promise<{ line: string; hang_up: boolean }> {
  const messages: ModelMessage[] = [
    {
      role: 'system',
      content:
        'You play a caller on a phone call with an AI agent, to test the agent. Stay in character. Answer with a JSON object ' +
        '{"line": the caller\'s next words, "hang_up": true once the caller would end the call (then "line" is empty)}.' +
        CALLER_MARK +
        definition.user_prompt,
    },
    ...history.flatMap((entry): ModelMessage[] =>
      entry.role === 'agent' ? [{ role: 'user', content: entry.content }] : entry.role === 'user' ? [{ role: 'assistant', content: entry.content }] : [],
    ),
  ];
  const answer = await completeWithFallback(
    { model: definition.llm_model, messages, maxTokens: 300, timeoutMs: 20_000, responseFormat: 'json', offlineHint: CALLER_HINT },
    fallbackModel,
  );
  const parsed = JSON.parse(answer.content) as { line?: unknown; hang_up?: unknown };
  const line = typeof parsed.line === 'string' ? parsed.line.trim() : '';
  return { line, hang_up: parsed.hang_up === true || line === '' };
}

/**
 * Runs the engine against the simulated caller: the agent opens (or waits, as its start
 * speaker says), then caller and agent take turns until the agent ends the conversation,
 * the caller hangs up, the caller's turns run out or the time budget does.
 */
export async function simulate(
  workspaceId: string,
  run: { test_case_batch_job_id: string; test_case_job_id: string },
  engine: Extract<EngineRef, { version: number }>,
  definition: TestCaseDefinition,
): Promise<Simulation> {
  const startedAt = Date.now();
  const reliability = await workspaceReliability(workspaceId);
  let state: ConversationState = await openConversation({
    workspaceId,
    agentId: run.test_case_batch_job_id,
    agentVersion: engine.version,
    engine,
    callId: run.test_case_job_id,
    channel: 'voice',
    dynamicVariables: definition.dynamic_variables,
    // Nothing is transferred in a simulation: transfer_call tells the agent so, unless mocked.
    canTransfer: false,
    recordsUnder: null,
    ...(reliability.llmTokenLimit !== undefined ? { llmTokenLimit: reliability.llmTokenLimit } : {}),
    ...(reliability.fallbackLlmModel ? { fallbackLlmModel: reliability.fallbackLlmModel } : {}),
  });
  // Mocked tools answer their output and never run (shared/conversation/tools/tool-mocks.ts).
  if (definition.tool_mocks.length) state = { ...state, tool_mocks: definition.tool_mocks };
  const messages: TranscriptEvent[] = [];
  let turns = 0;
  let endedBy: Simulation['ended_by'];
  try {
    let result = await agentTurn(state, { type: 'call_started' });
    for (;;) {
      state = result.state;
      messages.push(...result.events);
      if (result.end) {
        endedBy = 'agent';
        break;
      }
      if (turns >= MAX_CALLER_TURNS) {
        endedBy = 'max_turns';
        break;
      }
      if (Date.now() - startedAt > RUN_BUDGET_MS) {
        endedBy = 'time_budget';
        break;
      }
      const caller = await callerTurn(definition, state.history, state.fallback_llm_model);
      if (caller.hang_up) {
        endedBy = 'caller';
        break;
      }
      result = await agentTurn(state, { type: 'user_said', text: caller.line });
      turns++;
    }
  } finally {
    closeConversation(state);
  }
  return {
    messages: messages.map((event) => {
      const { words: _words, ...fields } = event as TranscriptEvent & { words?: unknown };
      return fields as TranscriptEvent;
    }),
    caller_turns: turns,
    ended_by: endedBy,
  };
}
