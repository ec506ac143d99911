import { estimateMessageTokens, type ChatMessage } from '../../vendors/llm/index.ts';
import { REPLY_MAX_TOKENS } from '../limits.ts';
import type { AgentNote, TranscriptEvent } from '../types.ts';

/*
 * What the model sees of the conversation, within the workspace LLM token limit (spec
 * Limits): the system prompt is always kept; the oldest turns are dropped first; a tool
 * call and its result go together (a result without its call, or a call without its
 * result, is refused by providers); room is kept for the reply, capped at 300 tokens.
 */

/**
 * The conversation as chat messages: utterances, and each run of tool calls as one assistant
 * message followed by its results; a note to the agent is a system message where it was
 * given (never between tool calls and their results: it waits for the results).
 */
export function historyMessages(history: readonly TranscriptEvent[], notes: readonly AgentNote[] = []): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const pending = [...notes].sort((a, b) => a.after - b.after);
  const noteUpTo = (index: number) => {
    while (pending.length > 0 && pending[0]!.after <= index) {
      // Not inside a run of tool calls: providers want the results right after their calls.
      if (history[index]?.role === 'tool_call_result') return;
      messages.push({ role: 'system', content: pending.shift()!.content });
    }
  };
  for (const [index, entry] of history.entries()) {
    noteUpTo(index);
    if (entry.role === 'agent') messages.push({ role: 'assistant', content: entry.content });
    else if (entry.role === 'user') messages.push({ role: 'user', content: entry.content });
    else if (entry.role === 'tool_call_invocation') {
      const call = { id: entry.tool_call_id, name: entry.name, arguments: entry.arguments };
      const last = messages.at(-1);
      if (last?.role === 'assistant' && last.toolCalls) last.toolCalls.push(call);
      else messages.push({ role: 'assistant', content: '', toolCalls: [call] });
    } else if (entry.role === 'tool_call_result') {
      messages.push({ role: 'tool', content: entry.content, toolCallId: entry.tool_call_id });
    }
  }
  noteUpTo(history.length);
  return messages;
}

/**
 * The system messages, then as many of the latest turns as fit in `limit` less the reply's
 * room. Turns are dropped whole from the oldest: an assistant message with tool calls
 * together with the results that follow it. The latest turn is always kept.
 */
export function fitToTokenLimit(system: ChatMessage[], turns: ChatMessage[], limit: number): ChatMessage[] {
  const units: ChatMessage[][] = [];
  for (const message of turns) {
    const open = units.at(-1);
    if (message.role === 'tool' && open?.[0]?.toolCalls) open.push(message);
    else units.push([message]);
  }
  const cost = (messages: ChatMessage[]) => messages.reduce((sum, message) => sum + estimateMessageTokens(message), 0);
  let budget = limit - REPLY_MAX_TOKENS - cost(system);
  const kept: ChatMessage[][] = [];
  for (let i = units.length - 1; i >= 0; i--) {
    const unitCost = cost(units[i]!);
    if (kept.length > 0 && unitCost > budget) break;
    kept.unshift(units[i]!);
    budget -= unitCost;
  }
  return [...system, ...kept.flat()];
}
