import { describe, expect, it } from 'vitest';
import { fitToTokenLimit, historyMessages } from '../../shared/conversation/engines/context-window.ts';
import { REPLY_MAX_TOKENS, type TranscriptEvent } from '../../shared/conversation/index.ts';
import type { ChatMessage } from '../../shared/vendors/llm/index.ts';

/*
 * The workspace LLM token limit (spec Limits): the system prompt is kept, the oldest turns
 * go first, a tool call and its result go together, and 300 tokens stay free for the reply.
 * Tokens are estimated at 4 characters each, so 400 characters are 100 tokens.
 */
const text = (tokens: number, letter: string) => letter.repeat(tokens * 4);

describe('fitting the conversation to the token limit', () => {
  const history: TranscriptEvent[] = [
    { role: 'user', content: text(100, 'a') },
    { role: 'tool_call_invocation', tool_call_id: 'c1', name: 'lookup', arguments: text(98, 'b') }, // 100 with the name's 2
    { role: 'tool_call_result', tool_call_id: 'c1', content: text(100, 'c') },
    { role: 'agent', content: text(100, 'd') },
    { role: 'user', content: text(100, 'e') },
  ];
  const system: ChatMessage[] = [{ role: 'system', content: text(200, 's') }];
  const turns = historyMessages(history);

  it('keeps everything when it fits', () => {
    expect(fitToTokenLimit(system, turns, 200 + 500 + REPLY_MAX_TOKENS)).toEqual([...system, ...turns]);
  });

  it('drops the oldest turn first and keeps the system prompt', () => {
    expect(fitToTokenLimit(system, turns, 200 + 499 + REPLY_MAX_TOKENS)).toEqual([...system, ...turns.slice(1)]);
  });

  it('drops a tool call and its result together, never one without the other', () => {
    // Room for 399 tokens: the call (100) and its result (100) cannot stay apart, so both go.
    const fitted = fitToTokenLimit(system, turns, 200 + 399 + REPLY_MAX_TOKENS);
    expect(fitted).toEqual([
      ...system,
      { role: 'assistant', content: text(100, 'd') },
      { role: 'user', content: text(100, 'e') },
    ]);
    expect(fitted.some((message) => message.role === 'tool')).toBe(false);
  });

  it('keeps the latest turn even when it alone is over the limit', () => {
    expect(fitToTokenLimit(system, turns, 1)).toEqual([...system, turns.at(-1)]);
  });

  it('puts consecutive calls in one assistant message, followed by their results', () => {
    expect(
      historyMessages([
        { role: 'tool_call_invocation', tool_call_id: 'x', name: 'a', arguments: '{}' },
        { role: 'tool_call_invocation', tool_call_id: 'y', name: 'b', arguments: '{}' },
        { role: 'tool_call_result', tool_call_id: 'x', content: '1' },
        { role: 'tool_call_result', tool_call_id: 'y', content: '2' },
        { role: 'node_transition', former_node_id: 'n1', former_node_name: 'n1', new_node_id: 'n2', new_node_name: 'n2' },
      ]),
    ).toEqual([
      { role: 'assistant', content: '', toolCalls: [{ id: 'x', name: 'a', arguments: '{}' }, { id: 'y', name: 'b', arguments: '{}' }] },
      { role: 'tool', content: '1', toolCallId: 'x' },
      { role: 'tool', content: '2', toolCallId: 'y' },
    ]);
  });
});
